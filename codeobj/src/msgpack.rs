//! A MessagePack decoder for the code object metadata note (NT_AMDGPU_METADATA).
//!
//! Decodes the whole format into a [`Value`] tree; extension types are kept as raw bytes. Nesting
//! depth and lengths are checked against the input, so garbage is an error, not an allocation of
//! whatever size a corrupt length field claims.

use super::CodeObjectError;

/// A decoded MessagePack value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// nil.
    Nil,
    /// true/false.
    Bool(bool),
    /// Any integer that fits in i64 (all metadata integers do).
    Int(i64),
    /// An unsigned integer above i64::MAX.
    UInt(u64),
    /// float32 or float64.
    Float(f64),
    /// A UTF-8 string (invalid UTF-8 is replaced).
    Str(String),
    /// Binary data, or an extension value's payload.
    Bin(Vec<u8>),
    /// An array.
    Array(Vec<Value>),
    /// A map, in encoding order.
    Map(Vec<(Value, Value)>),
}

impl Value {
    /// The value under the string key `key` of a map.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries.iter().find(|(k, _)| matches!(k, Value::Str(s) if s == key)).map(|(_, v)| v),
            _ => None,
        }
    }
    /// The integer value, if this is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Int(i) if i >= 0 => Some(i as u64),
            Value::UInt(u) => Some(u),
            _ => None,
        }
    }
    /// The string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    /// The array's elements.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    /// The boolean value.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }
}

const MAX_DEPTH: usize = 64;
/// Elements reserved ahead for an array or map (more grow the vector as they are read).
const PREALLOC: usize = 256;

/// Decodes one value from the start of `data`; trailing bytes are an error.
pub fn decode(data: &[u8]) -> Result<Value, CodeObjectError> {
    let mut d = Decoder { data, pos: 0 };
    let v = d.value(0)?;
    if d.pos != data.len() {
        return Err(bad(format!("{} trailing bytes after the metadata map", data.len() - d.pos)));
    }
    Ok(v)
}

fn bad(what: String) -> CodeObjectError {
    CodeObjectError::BadMetadata(what)
}

struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CodeObjectError> {
        if self.data.len() - self.pos < n {
            return Err(bad(format!("needs {n} bytes at offset {}, {} left", self.pos, self.data.len() - self.pos)));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn be(&mut self, n: usize) -> Result<u64, CodeObjectError> {
        Ok(self.take(n)?.iter().fold(0u64, |acc, &b| (acc << 8) | b as u64))
    }
    /// A collection length, bounded by the bytes left (each element takes at least one byte).
    fn len(&mut self, n: usize) -> Result<usize, CodeObjectError> {
        let len = self.be(n)? as usize;
        if len > self.data.len() - self.pos {
            return Err(bad(format!("length {len} at offset {} exceeds the data", self.pos)));
        }
        Ok(len)
    }
    fn str(&mut self, len: usize) -> Result<Value, CodeObjectError> {
        Ok(Value::Str(String::from_utf8_lossy(self.take(len)?).into_owned()))
    }
    fn array(&mut self, len: usize, depth: usize) -> Result<Value, CodeObjectError> {
        // The declared length only bounds the elements (each takes a byte or more); reserve no
        // more than a small amount up front, so a one-byte element costs one Value, not 80
        // bytes of reservation per byte of input.
        let mut v = Vec::with_capacity(len.min(PREALLOC));
        for _ in 0..len {
            v.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(v))
    }
    fn map(&mut self, len: usize, depth: usize) -> Result<Value, CodeObjectError> {
        let mut v = Vec::with_capacity(len.min(PREALLOC));
        for _ in 0..len {
            let k = self.value(depth + 1)?;
            let val = self.value(depth + 1)?;
            v.push((k, val));
        }
        Ok(Value::Map(v))
    }
    fn value(&mut self, depth: usize) -> Result<Value, CodeObjectError> {
        if depth > MAX_DEPTH {
            return Err(bad("nesting deeper than 64".into()));
        }
        let at = self.pos;
        let tag = self.take(1)?[0];
        Ok(match tag {
            0x00..=0x7f => Value::Int(tag as i64),
            0x80..=0x8f => self.map((tag & 0x0f) as usize, depth)?,
            0x90..=0x9f => self.array((tag & 0x0f) as usize, depth)?,
            0xa0..=0xbf => self.str((tag & 0x1f) as usize)?,
            0xc0 => Value::Nil,
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4..=0xc6 => {
                let n = self.len(1 << (tag - 0xc4))?;
                Value::Bin(self.take(n)?.to_vec())
            }
            0xc7..=0xc9 => {
                let n = self.len(1 << (tag - 0xc7))?;
                self.take(1)?; // extension type
                Value::Bin(self.take(n)?.to_vec())
            }
            0xca => Value::Float(f32::from_bits(self.be(4)? as u32) as f64),
            0xcb => Value::Float(f64::from_bits(self.be(8)?)),
            0xcc..=0xcf => {
                let u = self.be(1 << (tag - 0xcc))?;
                if u > i64::MAX as u64 { Value::UInt(u) } else { Value::Int(u as i64) }
            }
            0xd0..=0xd3 => {
                let n = 1usize << (tag - 0xd0);
                let u = self.be(n)?;
                let shift = 64 - 8 * n as u32;
                Value::Int(((u << shift) as i64) >> shift)
            }
            0xd4..=0xd8 => {
                let n = 1usize << (tag - 0xd4);
                self.take(1)?;
                Value::Bin(self.take(n)?.to_vec())
            }
            0xd9..=0xdb => {
                let n = self.len(1 << (tag - 0xd9))?;
                self.str(n)?
            }
            0xdc | 0xdd => {
                let n = self.len(if tag == 0xdc { 2 } else { 4 })?;
                self.array(n, depth)?
            }
            0xde | 0xdf => {
                let n = self.len(if tag == 0xde { 2 } else { 4 })?;
                self.map(n, depth)?
            }
            0xe0..=0xff => Value::Int(tag as i8 as i64),
            0xc1 => return Err(bad(format!("reserved tag 0xc1 at offset {at}"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_every_format_family() {
        // {"a": [1, -1, 300, "x", true, nil, 1.5], "b": {}}
        let bytes = [
            0x82, 0xa1, b'a', 0x97, 0x01, 0xff, 0xcd, 0x01, 0x2c, 0xa1, b'x', 0xc3, 0xc0, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xa1, b'b',
            0x80,
        ];
        let v = decode(&bytes).unwrap();
        let a = v.get("a").unwrap().as_array().unwrap();
        assert_eq!(a[0], Value::Int(1));
        assert_eq!(a[1], Value::Int(-1));
        assert_eq!(a[2], Value::Int(300));
        assert_eq!(a[3], Value::Str("x".into()));
        assert_eq!(a[4], Value::Bool(true));
        assert_eq!(a[5], Value::Nil);
        assert_eq!(a[6], Value::Float(1.5));
        assert_eq!(v.get("b"), Some(&Value::Map(vec![])));
    }

    #[test]
    fn rejects_lengths_beyond_the_data() {
        assert!(matches!(decode(&[0xdd, 0xff, 0xff, 0xff, 0xff]), Err(CodeObjectError::BadMetadata(_))));
        assert!(matches!(decode(&[0xdb, 0x7f, 0, 0, 0, b'a']), Err(CodeObjectError::BadMetadata(_))));
        assert!(matches!(decode(&[0xc1]), Err(CodeObjectError::BadMetadata(_))));
        assert!(matches!(decode(&[0x91]), Err(CodeObjectError::BadMetadata(_))));
        assert!(matches!(decode(&[0x01, 0x02]), Err(CodeObjectError::BadMetadata(_))));
    }

    #[test]
    fn rejects_runaway_nesting() {
        let deep = vec![0x91u8; 200];
        assert!(matches!(decode(&deep), Err(CodeObjectError::BadMetadata(_))));
    }
}
