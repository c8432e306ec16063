//! The GGUF parser: header, metadata, tensor infos; every count bounded by the bytes left.
//!
//! Layout (v2 and v3, little-endian): magic `GGUF`, version u32, tensor count u64, metadata
//! count u64; the metadata (key string, value type u32, value); the tensor infos (name string,
//! dimension count u32, dimensions u64 each, GGML type u32, offset u64 relative to the data
//! section); padding to `general.alignment` (32 by default); the data section. Strings are a u64
//! length and UTF-8 bytes. v1 (u32 counts and lengths) predates every file in use and is refused.

use super::types::{GgmlType, describe_unknown};
use super::value::{Array, Value, ValueType};
use crate::error::{Error, ModelFileError, Result};
use crate::io::file_error;
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The magic bytes at the start of every GGUF file.
pub const GGUF_MAGIC: &[u8; 4] = b"GGUF";
/// Tensor data alignment when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Dimensions a tensor can have (`GGML_MAX_DIMS`).
pub const MAX_DIMS: u32 = 4;
/// How deep arrays may nest. GGUF writers produce at most arrays of arrays; the bound keeps a
/// hostile file from recursing the reader off its stack.
pub const MAX_NESTING: u32 = 8;
/// Largest accepted `general.alignment` (1 GiB: anything more is a corrupt value).
const MAX_ALIGNMENT: u64 = 1 << 30;
/// Vectors of entries (keys, tensor infos, strings, nested arrays) reserve at most this many
/// slots from a count the file declares; beyond it they grow as entries actually parse. A count
/// is bounded by the bytes left, but an entry's in-memory size (a `String` is 24 bytes) can be
/// a few times its smallest encoding, so reserving the full count up front would let a file
/// make the reader allocate several times its own size before the first entry fails.
const MAX_RESERVE: usize = 4096;

/// One tensor of a GGUF file: name, dimensions, GGML type, where its bytes are.
///
/// Get them from [`GgufHeader::tensors`] or [`GgufHeader::tensor`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GgufTensorInfo {
    name: String,
    dims: Vec<u64>,
    ggml_type: GgmlType,
    offset: u64,
    range: Range<u64>,
}

impl GgufTensorInfo {
    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The dimensions as GGUF lists them: **fastest first** (`ne[0]` is the row length).
    /// `attn_q.weight [576, 576]`, `ffn_down [1536, 576]` = 576 rows of 1536.
    pub fn dims(&self) -> &[u64] {
        &self.dims
    }

    /// The row-major shape (slowest first): [`GgufTensorInfo::dims`] reversed, as device
    /// [`Tensor`](crate::Tensor)s take it (`ffn_down` -> `[576, 1536]`).
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().map(|&d| d as usize).collect()
    }

    /// The element or block type.
    pub fn ggml_type(&self) -> GgmlType {
        self.ggml_type
    }

    /// Offset of the data from the start of the data section.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Where the bytes are, as absolute file offsets.
    pub fn file_range(&self) -> Range<u64> {
        self.range.clone()
    }

    /// Size in bytes.
    pub fn byte_len(&self) -> u64 {
        self.range.end - self.range.start
    }

    /// Logical element count.
    pub fn numel(&self) -> u64 {
        self.dims.iter().product()
    }
}

/// A parsed and validated GGUF header: version, metadata (in file order, by key), tensor infos,
/// alignment and data section.
///
/// Get one with [`GgufHeader::parse`] (any bytes: the fuzzed entry point) or
/// [`GgufFile::header`](crate::io::gguf::GgufFile::header).
#[derive(Clone, Debug)]
pub struct GgufHeader {
    path: PathBuf,
    version: u32,
    metadata: Vec<(String, Value)>,
    keys: HashMap<String, usize>,
    tensors: Vec<GgufTensorInfo>,
    by_name: HashMap<String, usize>,
    alignment: u64,
    data_start: u64,
}

/// A bounds-checked little-endian reader over the file's bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    path: &'a Path,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    fn err(&self, tensor: Option<&str>, kind: ModelFileError) -> Error {
        file_error(self.path, tensor, kind)
    }

    fn take(&mut self, n: u64, what: &dyn Fn() -> String) -> Result<&'a [u8]> {
        if n > self.left() {
            let needed = (self.pos as u64).saturating_add(n);
            return Err(self.err(None, ModelFileError::Truncated { what: what(), needed, available: self.bytes.len() as u64 }));
        }
        let s = &self.bytes[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &dyn Fn() -> String) -> Result<[u8; N]> {
        Ok(self.take(N as u64, what)?.try_into().expect("N bytes"))
    }

    fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &dyn Fn() -> String) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A string; its length is checked against the bytes left before anything is allocated.
    fn string(&mut self, what: &dyn Fn() -> String) -> Result<String> {
        let n = self.u64(what)?;
        let bytes = self.take(n, what)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => Err(self.err(None, ModelFileError::NotUtf8 { what: what() })),
        }
    }

    /// A count of elements of at least `min_bytes` each: more than the bytes left can hold is
    /// refused before any allocation.
    fn count(&mut self, min_bytes: u64, what: &dyn Fn() -> String) -> Result<usize> {
        let n = self.u64(what)?;
        let limit = self.left() / min_bytes.max(1);
        if n > limit {
            return Err(self.err(None, ModelFileError::TooLarge { what: what(), value: n, limit }));
        }
        Ok(n as usize)
    }

    fn value_type(&mut self, key: &str, what: &dyn Fn() -> String) -> Result<ValueType> {
        let id = self.u32(what)?;
        ValueType::from_id(id).ok_or_else(|| {
            self.err(Some(&format!("key {key}")), ModelFileError::UnknownType { what: "GGUF value type", found: id.to_string() })
        })
    }

    fn value(&mut self, t: ValueType, key: &str, depth: u32) -> Result<Value> {
        let what = || format!("the value of key {key}");
        Ok(match t {
            ValueType::U8 => Value::U8(self.array::<1>(&what)?[0]),
            ValueType::I8 => Value::I8(self.array::<1>(&what)?[0] as i8),
            ValueType::U16 => Value::U16(u16::from_le_bytes(self.array(&what)?)),
            ValueType::I16 => Value::I16(i16::from_le_bytes(self.array(&what)?)),
            ValueType::U32 => Value::U32(self.u32(&what)?),
            ValueType::I32 => Value::I32(i32::from_le_bytes(self.array(&what)?)),
            ValueType::F32 => Value::F32(f32::from_le_bytes(self.array(&what)?)),
            // Any non-zero byte is true, as ggml reads it.
            ValueType::Bool => Value::Bool(self.array::<1>(&what)?[0] != 0),
            ValueType::String => Value::String(self.string(&what)?),
            ValueType::Array => Value::Array(self.array_value(key, depth)?),
            ValueType::U64 => Value::U64(self.u64(&what)?),
            ValueType::I64 => Value::I64(i64::from_le_bytes(self.array(&what)?)),
            ValueType::F64 => Value::F64(f64::from_le_bytes(self.array(&what)?)),
        })
    }

    fn array_value(&mut self, key: &str, depth: u32) -> Result<Array> {
        let what = || format!("the array of key {key}");
        if depth >= MAX_NESTING {
            return Err(self.err(
                Some(&format!("key {key}")),
                ModelFileError::TooLarge { what: "array nesting".into(), value: depth as u64 + 1, limit: MAX_NESTING as u64 },
            ));
        }
        let t = self.value_type(key, &what)?;
        let n = self.count(t.min_bytes(), &what)?;
        // Fixed-size elements: the count check above bounds the bytes, so slice once.
        macro_rules! fixed {
            ($v:ident, $ty:ty) => {{
                let size = std::mem::size_of::<$ty>();
                let raw = self.take((n * size) as u64, &what)?;
                Array::$v(raw.chunks_exact(size).map(|c| <$ty>::from_le_bytes(c.try_into().expect("size"))).collect())
            }};
        }
        Ok(match t {
            ValueType::U8 => Array::U8(self.take(n as u64, &what)?.to_vec()),
            ValueType::I8 => Array::I8(self.take(n as u64, &what)?.iter().map(|&b| b as i8).collect()),
            ValueType::Bool => Array::Bool(self.take(n as u64, &what)?.iter().map(|&b| b != 0).collect()),
            ValueType::U16 => fixed!(U16, u16),
            ValueType::I16 => fixed!(I16, i16),
            ValueType::U32 => fixed!(U32, u32),
            ValueType::I32 => fixed!(I32, i32),
            ValueType::F32 => fixed!(F32, f32),
            ValueType::U64 => fixed!(U64, u64),
            ValueType::I64 => fixed!(I64, i64),
            ValueType::F64 => fixed!(F64, f64),
            ValueType::String => {
                let mut v = Vec::with_capacity(n.min(MAX_RESERVE));
                for i in 0..n {
                    v.push(self.string(&|| format!("element {i} of the array of key {key}"))?);
                }
                Array::String(v)
            }
            ValueType::Array => {
                let mut v = Vec::with_capacity(n.min(MAX_RESERVE));
                for _ in 0..n {
                    v.push(self.array_value(key, depth + 1)?);
                }
                Array::Array(v)
            }
        })
    }
}

impl GgufHeader {
    /// Parses and validates the GGUF file whose complete bytes are `file` (tensor data is not
    /// read, only located and checked against the file's length). `path` is used in messages.
    ///
    /// ```
    /// use ferrocm::io::gguf::{GgmlType, GgufHeader, GgufWriter};
    /// let bytes = GgufWriter::new()
    ///     .metadata("general.architecture", "llama")
    ///     .tensor("w", &[4, 2], GgmlType::F32, vec![0u8; 32])
    ///     .to_bytes()?;
    /// let h = GgufHeader::parse("mem".as_ref(), &bytes)?;
    /// assert_eq!(h.architecture()?, "llama");
    /// assert_eq!(h.tensor("w").unwrap().shape(), vec![2, 4]); // rows of 4
    /// assert!(GgufHeader::parse("mem".as_ref(), &bytes[..bytes.len() - 1]).is_err());
    /// # Ok::<(), ferrocm::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ModelFile`] naming `path` and the tensor or key: wrong magic, a version other
    /// than 2 or 3 (or a big-endian file), truncation anywhere, counts larger than the bytes
    /// left can hold, non-UTF-8 keys or strings, unknown value or GGML types, duplicate keys or
    /// tensor names, a bad `general.alignment`, more than 4 dimensions, a row that is not a
    /// whole number of blocks, a size that overflows, misaligned offsets, data out of the file
    /// or overlapping.
    pub fn parse(path: &Path, file: &[u8]) -> Result<GgufHeader> {
        let mut c = Cursor { bytes: file, pos: 0, path };
        let magic = c.take(4, &|| "the magic bytes".into())?;
        if magic != GGUF_MAGIC {
            return Err(c.err(None, ModelFileError::BadMagic { format: "GGUF", found: magic.to_vec() }));
        }
        let version = c.u32(&|| "the version".into())?;
        if version != 2 && version != 3 {
            let supported = if version.swap_bytes() == 2 || version.swap_bytes() == 3 {
                "this is a big-endian GGUF; ferrocm reads little-endian v2 and v3"
            } else {
                "ferrocm reads v2 and v3"
            };
            return Err(c.err(None, ModelFileError::UnsupportedVersion { format: "GGUF", version, supported }));
        }
        let n_tensors = c.u64(&|| "the tensor count".into())?;
        let n_kv = c.u64(&|| "the metadata count".into())?;
        // Bound both counts by the smallest possible entry: key (8 + 0) + type (4) + 1 byte of
        // value; name (8) + dims count (4) + type (4) + offset (8).
        let kv_limit = c.left() / 13;
        if n_kv > kv_limit {
            return Err(c.err(None, ModelFileError::TooLarge { what: "metadata count".into(), value: n_kv, limit: kv_limit }));
        }
        let t_limit = c.left().saturating_sub(n_kv * 13) / 24;
        if n_tensors > t_limit {
            return Err(c.err(None, ModelFileError::TooLarge { what: "tensor count".into(), value: n_tensors, limit: t_limit }));
        }

        let reserve = |n: u64| (n as usize).min(MAX_RESERVE);
        let mut metadata = Vec::with_capacity(reserve(n_kv));
        let mut keys = HashMap::with_capacity(reserve(n_kv));
        for i in 0..n_kv {
            let key = c.string(&|| format!("metadata key {i}"))?;
            let t = c.value_type(&key, &|| format!("the type of key {key}"))?;
            let v = c.value(t, &key, 0)?;
            if keys.insert(key.clone(), metadata.len()).is_some() {
                return Err(c.err(Some(&format!("key {key}")), ModelFileError::Duplicate));
            }
            metadata.push((key, v));
        }
        let alignment = match keys.get("general.alignment").map(|&i| &metadata[i].1) {
            None => DEFAULT_ALIGNMENT,
            Some(v) => match v.as_u64() {
                Some(a) if a.is_power_of_two() && a <= MAX_ALIGNMENT => a,
                _ => {
                    return Err(c.err(
                        Some("key general.alignment"),
                        ModelFileError::Header(format!("{v:?} is not a power of two up to {MAX_ALIGNMENT}")),
                    ));
                }
            },
        };

        struct Raw {
            name: String,
            dims: Vec<u64>,
            type_id: u32,
            offset: u64,
        }
        let mut raws = Vec::with_capacity(reserve(n_tensors));
        for i in 0..n_tensors {
            let name = c.string(&|| format!("the name of tensor {i}"))?;
            let what = || format!("the info of tensor {name}");
            let n_dims = c.u32(&what)?;
            if n_dims > MAX_DIMS {
                return Err(c.err(
                    Some(&name),
                    ModelFileError::TooLarge { what: "dimension count".into(), value: n_dims as u64, limit: MAX_DIMS as u64 },
                ));
            }
            let mut dims = Vec::with_capacity(n_dims as usize);
            for _ in 0..n_dims {
                dims.push(c.u64(&what)?);
            }
            let type_id = c.u32(&what)?;
            let offset = c.u64(&what)?;
            raws.push(Raw { name, dims, type_id, offset });
        }
        let data_start = (c.pos as u64).next_multiple_of(alignment);
        let len = file.len() as u64;
        if !raws.is_empty() && data_start > len {
            return Err(
                c.err(None, ModelFileError::Truncated { what: "the padding before the data".into(), needed: data_start, available: len })
            );
        }
        let data_len = len.saturating_sub(data_start);

        let mut tensors = Vec::with_capacity(raws.len());
        let mut by_name = HashMap::with_capacity(raws.len());
        for r in raws {
            let err = |kind| file_error(path, Some(&r.name), kind);
            let ggml_type = GgmlType::from_id(r.type_id)
                .ok_or_else(|| err(ModelFileError::UnknownType { what: "GGML type", found: describe_unknown(r.type_id) }))?;
            let numel = r.dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
            let Some(numel) = numel else {
                return Err(err(ModelFileError::TooLarge {
                    what: format!("element count of {:?}", r.dims),
                    value: u64::MAX,
                    limit: data_len,
                }));
            };
            let row = r.dims.first().copied().unwrap_or(1);
            if row % ggml_type.block_size() as u64 != 0 {
                return Err(err(ModelFileError::Layout(format!(
                    "rows of {row} elements are not whole {ggml_type} blocks of {}",
                    ggml_type.block_size()
                ))));
            }
            let Some(bytes) = ggml_type.byte_size(numel) else {
                return Err(err(ModelFileError::TooLarge {
                    what: format!("byte size of {:?} {ggml_type}", r.dims),
                    value: u64::MAX,
                    limit: data_len,
                }));
            };
            if r.offset % alignment != 0 {
                return Err(err(ModelFileError::Layout(format!("offset {} is not a multiple of the alignment {alignment}", r.offset))));
            }
            let end = r.offset.checked_add(bytes).filter(|&e| e <= data_len);
            let Some(end) = end else {
                return Err(err(ModelFileError::OutOfRange { start: r.offset, end: r.offset.saturating_add(bytes), limit: data_len }));
            };
            if by_name.insert(r.name.clone(), tensors.len()).is_some() {
                return Err(err(ModelFileError::Duplicate));
            }
            tensors.push(GgufTensorInfo {
                range: data_start + r.offset..data_start + end,
                name: r.name,
                dims: r.dims,
                ggml_type,
                offset: r.offset,
            });
        }
        // No two tensors may share bytes (empty tensors share none).
        let mut order: Vec<usize> = (0..tensors.len()).filter(|&i| tensors[i].byte_len() > 0).collect();
        order.sort_by_key(|&i| tensors[i].range.start);
        for w in order.windows(2) {
            let (a, b) = (&tensors[w[0]], &tensors[w[1]]);
            if b.range.start < a.range.end {
                return Err(file_error(path, Some(&b.name), ModelFileError::Overlap { other: a.name.clone() }));
            }
        }
        Ok(GgufHeader { path: path.to_path_buf(), version, metadata, keys, tensors, by_name, alignment, data_start })
    }

    /// The format version (2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The tensor data alignment (`general.alignment`, 32 when absent).
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// File offset of the data section.
    pub fn data_start(&self) -> u64 {
        self.data_start
    }

    /// The tensors in file order.
    pub fn tensors(&self) -> &[GgufTensorInfo] {
        &self.tensors
    }

    /// The tensor called `name`.
    pub fn tensor(&self, name: &str) -> Option<&GgufTensorInfo> {
        self.by_name.get(name).map(|&i| &self.tensors[i])
    }

    /// Every metadata key and value, in file order.
    pub fn metadata(&self) -> &[(String, Value)] {
        &self.metadata
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.keys.get(key).map(|&i| &self.metadata[i].1)
    }

    fn key_error(&self, key: &str, kind: ModelFileError) -> Error {
        file_error(&self.path, Some(&format!("key {key}")), kind)
    }

    /// The value of `key`, required, converted by `f` (`expected` names the type for errors).
    fn typed<'s, T>(&'s self, key: &str, expected: &'static str, f: impl FnOnce(&'s Value) -> Option<T>) -> Result<T> {
        let v = self.get(key).ok_or_else(|| self.key_error(key, ModelFileError::NotFound))?;
        f(v).ok_or_else(|| self.key_error(key, ModelFileError::WrongType { expected, found: v.type_description() }))
    }

    /// The string at `key`.
    ///
    /// # Errors
    /// [`ModelFileError::NotFound`], [`ModelFileError::WrongType`] (both naming the key).
    pub fn get_str(&self, key: &str) -> Result<&str> {
        self.typed(key, "string", Value::as_str)
    }

    /// The non-negative integer at `key`, of any integer type.
    ///
    /// # Errors
    /// As [`GgufHeader::get_str`].
    pub fn get_u64(&self, key: &str) -> Result<u64> {
        self.typed(key, "non-negative integer", Value::as_u64)
    }

    /// The f32 (or f64) at `key`.
    ///
    /// # Errors
    /// As [`GgufHeader::get_str`].
    pub fn get_f32(&self, key: &str) -> Result<f32> {
        self.typed(key, "float", Value::as_f32)
    }

    /// The bool at `key`.
    ///
    /// # Errors
    /// As [`GgufHeader::get_str`].
    pub fn get_bool(&self, key: &str) -> Result<bool> {
        self.typed(key, "bool", Value::as_bool)
    }

    /// The array at `key`.
    ///
    /// # Errors
    /// As [`GgufHeader::get_str`].
    pub fn get_array(&self, key: &str) -> Result<&Array> {
        self.typed(key, "array", Value::as_array)
    }

    /// The string array at `key`.
    ///
    /// # Errors
    /// As [`GgufHeader::get_str`].
    pub fn get_strings(&self, key: &str) -> Result<&[String]> {
        self.typed(key, "array of string", |v| v.as_array()?.as_strings())
    }

    /// `general.architecture` (`llama` ...).
    ///
    /// # Errors
    /// As [`GgufHeader::get_str`].
    pub fn architecture(&self) -> Result<&str> {
        self.get_str("general.architecture")
    }

    /// `<architecture>.<suffix>` as an integer, e.g. `arch_u64("block_count")` reads
    /// `llama.block_count`.
    ///
    /// # Errors
    /// As [`GgufHeader::get_str`], for either key.
    pub fn arch_u64(&self, suffix: &str) -> Result<u64> {
        self.get_u64(&format!("{}.{suffix}", self.architecture()?))
    }

    /// `<architecture>.<suffix>` as a float, e.g. `arch_f32("rope.freq_base")`.
    ///
    /// # Errors
    /// As [`GgufHeader::get_str`], for either key.
    pub fn arch_f32(&self, suffix: &str) -> Result<f32> {
        self.get_f32(&format!("{}.{suffix}", self.architecture()?))
    }

    /// The tokenizer's metadata (`tokenizer.ggml.*`, `tokenizer.chat_template`).
    ///
    /// # Errors
    /// As [`GgufHeader::get_str`] for the required `tokenizer.ggml.model` and
    /// `tokenizer.ggml.tokens`, and for an optional key present with the wrong type.
    pub fn tokenizer(&self) -> Result<Tokenizer<'_>> {
        let opt = |key: &str| -> Option<&Value> { self.get(key) };
        let opt_u32 =
            |key: &str| -> Result<Option<u32>> {
                match opt(key) {
                    None => Ok(None),
                    Some(v) => v.as_u64().and_then(|x| u32::try_from(x).ok()).map(Some).ok_or_else(|| {
                        self.key_error(key, ModelFileError::WrongType { expected: "token id", found: v.type_description() })
                    }),
                }
            };
        let opt_with = |key: &str, expected: &'static str, f: &dyn for<'v> Fn(&'v Value) -> bool| -> Result<()> {
            match opt(key) {
                Some(v) if !f(v) => Err(self.key_error(key, ModelFileError::WrongType { expected, found: v.type_description() })),
                _ => Ok(()),
            }
        };
        opt_with("tokenizer.ggml.merges", "array of string", &|v| v.as_array().and_then(Array::as_strings).is_some())?;
        opt_with("tokenizer.ggml.token_type", "array of i32", &|v| v.as_array().and_then(Array::as_i32s).is_some())?;
        opt_with("tokenizer.ggml.scores", "array of f32", &|v| v.as_array().and_then(Array::as_f32s).is_some())?;
        opt_with("tokenizer.ggml.pre", "string", &|v| v.as_str().is_some())?;
        opt_with("tokenizer.chat_template", "string", &|v| v.as_str().is_some())?;
        opt_with("tokenizer.ggml.add_bos_token", "bool", &|v| v.as_bool().is_some())?;
        opt_with("tokenizer.ggml.add_eos_token", "bool", &|v| v.as_bool().is_some())?;
        Ok(Tokenizer {
            model: self.get_str("tokenizer.ggml.model")?,
            pre: opt("tokenizer.ggml.pre").and_then(Value::as_str),
            tokens: self.get_strings("tokenizer.ggml.tokens")?,
            merges: opt("tokenizer.ggml.merges").and_then(Value::as_array).and_then(Array::as_strings),
            token_types: opt("tokenizer.ggml.token_type").and_then(Value::as_array).and_then(Array::as_i32s),
            scores: opt("tokenizer.ggml.scores").and_then(Value::as_array).and_then(Array::as_f32s),
            bos_token_id: opt_u32("tokenizer.ggml.bos_token_id")?,
            eos_token_id: opt_u32("tokenizer.ggml.eos_token_id")?,
            unknown_token_id: opt_u32("tokenizer.ggml.unknown_token_id")?,
            padding_token_id: opt_u32("tokenizer.ggml.padding_token_id")?,
            add_bos_token: opt("tokenizer.ggml.add_bos_token").and_then(Value::as_bool),
            add_eos_token: opt("tokenizer.ggml.add_eos_token").and_then(Value::as_bool),
            chat_template: opt("tokenizer.chat_template").and_then(Value::as_str),
        })
    }
}

/// A GGUF file's tokenizer metadata, borrowed from its header.
///
/// Get one with [`GgufHeader::tokenizer`].
///
/// ```no_run
/// let f = ferrocm::io::gguf::GgufFile::open("SmolLM2-135M-Instruct.Q4_1.gguf")?;
/// let tok = f.header().tokenizer()?;
/// assert_eq!(tok.model, "gpt2");
/// println!("{} tokens, bos {:?}", tok.tokens.len(), tok.bos_token_id);
/// # Ok::<(), ferrocm::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Tokenizer<'a> {
    /// `tokenizer.ggml.model`: `gpt2` (byte-level BPE), `llama` (SentencePiece), `bert` ...
    pub model: &'a str,
    /// `tokenizer.ggml.pre`: the pre-tokenizer (`smollm`, `llama-bpe` ...).
    pub pre: Option<&'a str>,
    /// `tokenizer.ggml.tokens`: the vocabulary, by id.
    pub tokens: &'a [String],
    /// `tokenizer.ggml.merges`: BPE merges, `"a b"`, highest priority first.
    pub merges: Option<&'a [String]>,
    /// `tokenizer.ggml.token_type`: per token, 1 normal, 2 unknown, 3 control, 4 user-defined,
    /// 5 unused, 6 byte.
    pub token_types: Option<&'a [i32]>,
    /// `tokenizer.ggml.scores`: per-token scores (SentencePiece).
    pub scores: Option<&'a [f32]>,
    /// `tokenizer.ggml.bos_token_id`.
    pub bos_token_id: Option<u32>,
    /// `tokenizer.ggml.eos_token_id`.
    pub eos_token_id: Option<u32>,
    /// `tokenizer.ggml.unknown_token_id`.
    pub unknown_token_id: Option<u32>,
    /// `tokenizer.ggml.padding_token_id`.
    pub padding_token_id: Option<u32>,
    /// `tokenizer.ggml.add_bos_token`.
    pub add_bos_token: Option<bool>,
    /// `tokenizer.ggml.add_eos_token`.
    pub add_eos_token: Option<bool>,
    /// `tokenizer.chat_template`: a Jinja template.
    pub chat_template: Option<&'a str>,
}
