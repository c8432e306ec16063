//! A small GGUF writer, for tests and tools: builds tiny model files (and, byte-patched,
//! broken ones). Not a converter: it writes what it is given, in memory.

use super::reader::{DEFAULT_ALIGNMENT, GGUF_MAGIC};
use super::types::GgmlType;
use super::value::{Array, Value};
use crate::error::{Error, Result};
use std::path::Path;

/// Builds a GGUF file: metadata in insertion order, then tensors in insertion order, each
/// aligned. For tests and tools (tiny model files, round trips, fuzz seeds); it holds
/// everything in memory.
///
/// Get one with [`GgufWriter::new`] (version 3, alignment 32).
///
/// ```
/// use ferrocm::io::gguf::{GgmlType, GgufHeader, GgufWriter, Value};
/// let bytes = GgufWriter::new()
///     .metadata("general.architecture", "llama")
///     .metadata("llama.block_count", 2u32)
///     .metadata("tokenizer.ggml.tokens", vec!["<s>".to_string(), "hi".to_string()])
///     .tensor("blk.0.attn_norm.weight", &[8], GgmlType::F32, vec![0u8; 32])
///     .tensor("blk.0.ffn_down.weight", &[32, 2], GgmlType::Q8_0, vec![0u8; 2 * 34])
///     .to_bytes()?;
/// let h = GgufHeader::parse("tiny.gguf".as_ref(), &bytes)?;
/// assert_eq!(h.arch_u64("block_count")?, 2);
/// assert_eq!(h.tensor("blk.0.ffn_down.weight").unwrap().shape(), vec![2, 32]);
/// # Ok::<(), ferrocm::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct GgufWriter {
    version: u32,
    alignment: u64,
    metadata: Vec<(String, Value)>,
    tensors: Vec<(String, Vec<u64>, GgmlType, Vec<u8>)>,
}

impl Default for GgufWriter {
    fn default() -> GgufWriter {
        GgufWriter::new()
    }
}

impl GgufWriter {
    /// An empty v3 file with the default alignment (32).
    pub fn new() -> GgufWriter {
        GgufWriter { version: 3, alignment: DEFAULT_ALIGNMENT, metadata: Vec::new(), tensors: Vec::new() }
    }

    /// The version field (2 and 3 have the same layout; other values make files a reader must
    /// refuse).
    pub fn version(mut self, v: u32) -> GgufWriter {
        self.version = v;
        self
    }

    /// Aligns tensor data to `a` bytes and records it as `general.alignment` (u32).
    pub fn alignment(mut self, a: u32) -> GgufWriter {
        self.alignment = a as u64;
        self.metadata.retain(|(k, _)| k != "general.alignment");
        self.metadata.push(("general.alignment".into(), Value::U32(a)));
        self
    }

    /// Adds a metadata key (duplicates are written as given).
    pub fn metadata(mut self, key: &str, value: impl Into<Value>) -> GgufWriter {
        self.metadata.push((key.to_string(), value.into()));
        self
    }

    /// Adds a tensor: dimensions GGUF order (fastest first), type, and its raw bytes.
    pub fn tensor(mut self, name: &str, dims: &[u64], ggml_type: GgmlType, data: Vec<u8>) -> GgufWriter {
        self.tensors.push((name.to_string(), dims.to_vec(), ggml_type, data));
        self
    }

    /// The file's bytes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a tensor's bytes do not match its dims and type, or the
    /// alignment is not a power of two.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let bad = |message: String| Error::InvalidArgument { op: "GgufWriter", message };
        if !self.alignment.is_power_of_two() {
            return Err(bad(format!("alignment {} is not a power of two", self.alignment)));
        }
        let mut out = Vec::new();
        out.extend_from_slice(GGUF_MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.metadata.len() as u64).to_le_bytes());
        for (k, v) in &self.metadata {
            put_str(&mut out, k);
            out.extend_from_slice(&v.value_type().id().to_le_bytes());
            put_value(&mut out, v);
        }
        let mut offset = 0u64;
        let mut offsets = Vec::with_capacity(self.tensors.len());
        for (name, dims, t, data) in &self.tensors {
            let numel = dims.iter().product::<u64>();
            if t.byte_size(numel) != Some(data.len() as u64) {
                return Err(bad(format!("tensor {name}: {dims:?} {t} needs {:?} bytes, got {}", t.byte_size(numel), data.len())));
            }
            put_str(&mut out, name);
            out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
            for d in dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&t.id().to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
            offsets.push(offset);
            offset = (offset + data.len() as u64).next_multiple_of(self.alignment);
        }
        let data_start = (out.len() as u64).next_multiple_of(self.alignment);
        for ((_, _, _, data), off) in self.tensors.iter().zip(offsets) {
            out.resize((data_start + off) as usize, 0);
            out.extend_from_slice(data);
        }
        Ok(out)
    }

    /// Writes the file to `path`.
    ///
    /// # Errors
    /// As [`GgufWriter::to_bytes`]; the I/O error as [`Error::ModelFile`].
    pub fn write(&self, path: impl AsRef<Path>) -> Result<()> {
        let bytes = self.to_bytes()?;
        std::fs::write(path.as_ref(), bytes)
            .map_err(|source| crate::io::file_error(path.as_ref(), None, crate::error::ModelFileError::Io { op: "write", source }))
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::U8(x) => out.push(*x),
        Value::I8(x) => out.push(*x as u8),
        Value::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Bool(x) => out.push(*x as u8),
        Value::String(s) => put_str(out, s),
        Value::Array(a) => put_array(out, a),
        Value::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
    }
}

fn put_array(out: &mut Vec<u8>, a: &Array) {
    out.extend_from_slice(&a.element_type().id().to_le_bytes());
    out.extend_from_slice(&(a.len() as u64).to_le_bytes());
    macro_rules! each {
        ($v:expr, $f:expr) => {
            for x in $v {
                $f(out, x)
            }
        };
    }
    match a {
        Array::U8(v) => out.extend_from_slice(v),
        Array::I8(v) => each!(v, |o: &mut Vec<u8>, x: &i8| o.push(*x as u8)),
        Array::U16(v) => each!(v, |o: &mut Vec<u8>, x: &u16| o.extend_from_slice(&x.to_le_bytes())),
        Array::I16(v) => each!(v, |o: &mut Vec<u8>, x: &i16| o.extend_from_slice(&x.to_le_bytes())),
        Array::U32(v) => each!(v, |o: &mut Vec<u8>, x: &u32| o.extend_from_slice(&x.to_le_bytes())),
        Array::I32(v) => each!(v, |o: &mut Vec<u8>, x: &i32| o.extend_from_slice(&x.to_le_bytes())),
        Array::F32(v) => each!(v, |o: &mut Vec<u8>, x: &f32| o.extend_from_slice(&x.to_le_bytes())),
        Array::Bool(v) => each!(v, |o: &mut Vec<u8>, x: &bool| o.push(*x as u8)),
        Array::String(v) => each!(v, |o: &mut Vec<u8>, x: &String| put_str(o, x)),
        Array::Array(v) => each!(v, put_array),
        Array::U64(v) => each!(v, |o: &mut Vec<u8>, x: &u64| o.extend_from_slice(&x.to_le_bytes())),
        Array::I64(v) => each!(v, |o: &mut Vec<u8>, x: &i64| o.extend_from_slice(&x.to_le_bytes())),
        Array::F64(v) => each!(v, |o: &mut Vec<u8>, x: &f64| o.extend_from_slice(&x.to_le_bytes())),
    }
}
