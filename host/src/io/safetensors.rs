//! safetensors: single files ([`SafetensorsFile`]) and checkpoints, sharded or not
//! ([`Checkpoint`]), loaded onto a device whole, by name or by prefix.
//!
//! The format: an 8-byte little-endian header length N, N bytes of JSON
//! (`{"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//! "__metadata__": {"k": "v"}}`), then the data section; offsets are relative to it, tensors
//! are row-major. The header is checked here field by field, so each problem names its tensor,
//! and then through the `safetensors` crate's own [`Metadata`](::safetensors::tensor::Metadata)
//! validation: data contiguous from offset 0 to the end of the file, shape x dtype = byte length.
//!
//! dtypes on the device: F32, F16, BF16, I32, U32, I8 and the FNUZ fp8s as they are; F64, I64,
//! I16, U8, BOOL and OCP fp8 (F8_E4M3 = E4M3FN, F8_E5M2) through
//! [`Conversions`](crate::io::Conversions); the rest
//! (F4, F6, F8_E8M0, U16, U64, C64) are an error naming the tensor.

use super::convert::FileType;
use super::loader::{Job, LoadOptions, Weights, run};
use super::{MappedFile, file_error};
use crate::error::{ModelFileError, Result};
use crate::runtime::device::Device;
use crate::tensor::Tensor;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use ::safetensors::Dtype;

/// The largest header the `safetensors` crate accepts (its `MAX_HEADER_SIZE`).
pub const MAX_HEADER_BYTES: u64 = 100_000_000;
/// The largest `model.safetensors.index.json` read (real ones are well under 1 MiB).
pub const MAX_INDEX_BYTES: u64 = 64 << 20;
/// The index file of a sharded checkpoint, as the Hugging Face tools name it.
pub const INDEX_FILE: &str = "model.safetensors.index.json";
/// The single file of an unsharded checkpoint, as the Hugging Face tools name it.
pub const SINGLE_FILE: &str = "model.safetensors";

/// One tensor of a safetensors header.
///
/// Get them from [`SafetensorsHeader::tensors`] or [`SafetensorsFile::header`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorEntry {
    name: String,
    dtype: Dtype,
    shape: Vec<usize>,
    /// Absolute file offsets.
    range: Range<u64>,
}

impl TensorEntry {
    /// The tensor's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Its element type in the file.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }
    /// Its shape (row-major).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// Where its bytes are, as absolute file offsets.
    pub fn file_range(&self) -> Range<u64> {
        self.range.clone()
    }
    /// Its size in bytes.
    pub fn byte_len(&self) -> u64 {
        self.range.end - self.range.start
    }
}

/// A parsed and validated safetensors header: tensors in file order, the `__metadata__` map,
/// and where the data section starts.
///
/// Get one with [`SafetensorsHeader::parse`] (any bytes: the fuzzed entry point) or from an
/// open file ([`SafetensorsFile::header`]).
#[derive(Clone, Debug)]
pub struct SafetensorsHeader {
    data_start: u64,
    tensors: Vec<TensorEntry>,
    by_name: HashMap<String, usize>,
    metadata: BTreeMap<String, String>,
}

/// A JSON entry before validation.
#[derive(Deserialize)]
struct RawEntry {
    dtype: String,
    shape: Vec<u64>,
    data_offsets: (u64, u64),
}

/// The header's entries, each converted as soon as it is parsed (so no JSON tree of the whole
/// header is ever held), with the error of a bad entry kept beside its name.
struct Entries {
    tensors: Vec<(String, Result<RawEntry, String>)>,
    metadata: Option<Result<BTreeMap<String, String>, String>>,
    duplicate: Option<String>,
}

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Entries, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object of tensors")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Entries, A::Error> {
                let mut out = Entries { tensors: Vec::new(), metadata: None, duplicate: None };
                let mut seen = HashSet::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value: serde_json::Value = map.next_value()?;
                    if !seen.insert(key.clone()) && out.duplicate.is_none() {
                        out.duplicate = Some(key.clone());
                    }
                    if key == "__metadata__" {
                        out.metadata = Some(BTreeMap::<String, String>::deserialize(value).map_err(|e| e.to_string()));
                    } else {
                        out.tensors.push((key, RawEntry::deserialize(value).map_err(|e| e.to_string())));
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// A dtype by its safetensors name, through the crate's own names.
fn parse_dtype(s: &str) -> Option<Dtype> {
    Dtype::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(s)).ok()
}

impl SafetensorsHeader {
    /// Parses and validates the header of the safetensors file whose complete bytes are `file`
    /// (only the header is read; the length of `file` is checked against the data offsets).
    /// `path` is used in messages only.
    ///
    /// ```
    /// use ferrocm::io::safetensors::SafetensorsHeader;
    /// let json = br#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
    /// let mut file = (json.len() as u64).to_le_bytes().to_vec();
    /// file.extend_from_slice(json);
    /// file.extend_from_slice(&[0; 8]);
    /// let h = SafetensorsHeader::parse("mem".as_ref(), &file)?;
    /// assert_eq!(h.tensor("w").unwrap().shape(), &[2]);
    /// // One byte short: the offsets run past the file.
    /// assert!(SafetensorsHeader::parse("mem".as_ref(), &file[..file.len() - 1]).is_err());
    /// # Ok::<(), ferrocm::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ModelFile`](crate::Error::ModelFile) naming `path` and the tensor: a file shorter than 8 bytes or than its
    /// header, a header above [`MAX_HEADER_BYTES`], not UTF-8, not JSON, a duplicate name, an
    /// unknown dtype, a shape whose byte size overflows or differs from the offsets, offsets out
    /// of the file, overlapping, with gaps, or not reaching the end of the file.
    pub fn parse(path: &Path, file: &[u8]) -> Result<SafetensorsHeader> {
        let err = |tensor: Option<&str>, kind| file_error(path, tensor, kind);
        let len = file.len() as u64;
        let Some(n) = file.get(..8) else {
            return Err(err(None, ModelFileError::Truncated { what: "the 8-byte header length".into(), needed: 8, available: len }));
        };
        let n = u64::from_le_bytes(n.try_into().expect("8 bytes"));
        if n > len - 8 {
            let needed = n.saturating_add(8);
            return Err(err(None, ModelFileError::Truncated { what: "the JSON header".into(), needed, available: len }));
        }
        if n > MAX_HEADER_BYTES {
            return Err(err(None, ModelFileError::TooLarge { what: "header length".into(), value: n, limit: MAX_HEADER_BYTES }));
        }
        let data_start = 8 + n;
        let json = std::str::from_utf8(&file[8..data_start as usize])
            .map_err(|_| err(None, ModelFileError::NotUtf8 { what: "the JSON header".into() }))?;
        let entries: Entries = serde_json::from_str(json).map_err(|e| err(None, ModelFileError::Header(e.to_string())))?;
        if let Some(d) = &entries.duplicate {
            return Err(err(Some(d), ModelFileError::Duplicate));
        }
        let metadata = match entries.metadata {
            Some(Ok(m)) => m,
            Some(Err(e)) => return Err(err(Some("__metadata__"), ModelFileError::Header(e))),
            None => BTreeMap::new(),
        };
        let data_len = len - data_start;
        let mut tensors = Vec::with_capacity(entries.tensors.len());
        for (name, raw) in entries.tensors {
            let raw = raw.map_err(|e| err(Some(&name), ModelFileError::Header(e)))?;
            let dtype = parse_dtype(&raw.dtype)
                .ok_or_else(|| err(Some(&name), ModelFileError::UnknownType { what: "dtype", found: raw.dtype.clone() }))?;
            let numel = raw.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
            let bits = numel.and_then(|n| n.checked_mul(dtype.bitsize() as u64));
            let Some(bits) = bits else {
                return Err(err(
                    Some(&name),
                    ModelFileError::TooLarge { what: format!("byte size of shape {:?}", raw.shape), value: u64::MAX, limit: data_len },
                ));
            };
            let (start, end) = raw.data_offsets;
            if start > end {
                return Err(err(Some(&name), ModelFileError::Layout(format!("data_offsets [{start}, {end}] end before they begin"))));
            }
            if end > data_len {
                return Err(err(Some(&name), ModelFileError::OutOfRange { start, end, limit: data_len }));
            }
            let actual = end - start;
            if bits % 8 != 0 || bits / 8 != actual {
                return Err(err(
                    Some(&name),
                    ModelFileError::SizeMismatch { shape: raw.shape, dtype: dtype.to_string(), expected: bits.div_ceil(8), actual },
                ));
            }
            // Every dimension is at most the byte count (or the tensor is empty), so this fits.
            let shape = raw.shape.iter().map(|&d| usize::try_from(d)).collect::<std::result::Result<Vec<_>, _>>().map_err(|_| {
                err(Some(&name), ModelFileError::TooLarge { what: "a dimension".into(), value: u64::MAX, limit: usize::MAX as u64 })
            })?;
            tensors.push(TensorEntry { name, dtype, shape, range: data_start + start..data_start + end });
        }
        tensors.sort_by_key(|t| (t.range.start, t.range.end));
        let mut at = data_start;
        for (i, t) in tensors.iter().enumerate() {
            if t.range.start < at {
                let other = tensors[..i].iter().rev().find(|o| o.range.end > t.range.start).map_or("?", |o| o.name.as_str());
                return Err(err(Some(&t.name), ModelFileError::Overlap { other: other.to_string() }));
            }
            if t.range.start > at {
                let gap = t.range.start - at;
                return Err(err(Some(&t.name), ModelFileError::Layout(format!("{gap} unused bytes before it (data must be contiguous)"))));
            }
            at = t.range.end;
        }
        if at != len {
            let tail = len - at;
            return Err(err(None, ModelFileError::Layout(format!("{tail} bytes after the last tensor's data"))));
        }
        // The crate's own validation, on what was checked above: it must agree.
        let infos = tensors
            .iter()
            .map(|t| {
                let info = ::safetensors::tensor::TensorInfo {
                    dtype: t.dtype,
                    shape: t.shape.clone(),
                    data_offsets: ((t.range.start - data_start) as usize, (t.range.end - data_start) as usize),
                };
                (t.name.clone(), info)
            })
            .collect();
        let meta = (!metadata.is_empty()).then(|| metadata.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
        ::safetensors::tensor::Metadata::new(meta, infos).map_err(|e| err(None, ModelFileError::Header(e.to_string())))?;
        let by_name = tensors.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect();
        Ok(SafetensorsHeader { data_start, tensors, by_name, metadata })
    }

    /// The tensors in file order.
    pub fn tensors(&self) -> &[TensorEntry] {
        &self.tensors
    }

    /// The tensor called `name`.
    pub fn tensor(&self, name: &str) -> Option<&TensorEntry> {
        self.by_name.get(name).map(|&i| &self.tensors[i])
    }

    /// The `__metadata__` strings (e.g. `format: pt`).
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// File offset of the data section.
    pub fn data_start(&self) -> u64 {
        self.data_start
    }
}

/// One safetensors file, memory-mapped, its header validated.
///
/// Get one with [`SafetensorsFile::open`]; load its tensors through [`Checkpoint::from_file`]
/// (or [`Checkpoint::open`] on the path directly).
///
/// ```no_run
/// use ferrocm::io::safetensors::SafetensorsFile;
/// let f = SafetensorsFile::open("model.safetensors")?;
/// for t in f.header().tensors() {
///     println!("{} {} {:?}", t.name(), t.dtype(), t.shape());
/// }
/// let raw: &[u8] = f.tensor_bytes("embeddings.position_ids")?; // a view of the mapping
/// # Ok::<(), ferrocm::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct SafetensorsFile {
    file: Arc<MappedFile>,
    header: Arc<SafetensorsHeader>,
}

impl SafetensorsFile {
    /// Opens, maps and validates `path`.
    ///
    /// # Errors
    /// [`ModelFileError::Io`] when it cannot be opened or mapped; the header errors of
    /// [`SafetensorsHeader::parse`].
    pub fn open(path: impl AsRef<Path>) -> Result<SafetensorsFile> {
        let file = MappedFile::open(path.as_ref())?;
        let header = Arc::new(SafetensorsHeader::parse(&file.path, file.bytes())?);
        Ok(SafetensorsFile { file, header })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// The validated header.
    pub fn header(&self) -> &SafetensorsHeader {
        &self.header
    }

    /// The bytes of tensor `name`, a view of the memory map (for small or host-side reads; the
    /// device path reads with `pread` instead).
    ///
    /// # Errors
    /// [`ModelFileError::NotFound`].
    pub fn tensor_bytes(&self, name: &str) -> Result<&[u8]> {
        let t = self.header.tensor(name).ok_or_else(|| file_error(&self.file.path, Some(name), ModelFileError::NotFound))?;
        Ok(&self.file.bytes()[t.range.start as usize..t.range.end as usize])
    }
}

/// The on-disk shape of a sharded checkpoint's index.
#[derive(Deserialize)]
struct IndexJson {
    weight_map: BTreeMap<String, String>,
}

/// A checkpoint: one safetensors file, or several shards listed by a
/// `model.safetensors.index.json`; its tensors by name, loaded onto a device whole
/// ([`Checkpoint::load_all`]), by name ([`Checkpoint::load`]) or by prefix
/// ([`Checkpoint::load_prefix`]).
///
/// Get one with [`Checkpoint::open`] or [`Checkpoint::from_file`].
///
/// ```no_run
/// use ferrocm::{Device, io::{Conversions, LoadOptions, safetensors::Checkpoint}};
/// let dev = Device::new()?;
/// let ckpt = Checkpoint::open("checkpoints/llama/")?; // finds the index or model.safetensors
/// let opts = LoadOptions::default().convert(Conversions { i64_to_i32: true, ..Conversions::none() });
/// let layer0 = ckpt.load_prefix(&dev, "model.layers.0.", &opts)?;
/// let emb = ckpt.load(&dev, &["model.embed_tokens.weight"], &opts)?;
/// # Ok::<(), ferrocm::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// Where it was opened from (the index, or the single file).
    path: PathBuf,
    files: Vec<SafetensorsFile>,
    /// Tensor name -> index into `files`.
    map: BTreeMap<String, usize>,
}

impl Checkpoint {
    /// Opens `path`: a `.safetensors` file; a `*.index.json` (shards beside it); or a directory
    /// holding `model.safetensors.index.json` or `model.safetensors`.
    ///
    /// # Errors
    /// [`ModelFileError::Io`], [`ModelFileError::Index`] (malformed index, a shard name that is
    /// not a plain file name), [`ModelFileError::NotFound`] for a tensor the index places in a
    /// shard that lacks it; every error of [`SafetensorsFile::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Checkpoint> {
        let path = path.as_ref();
        if path.is_dir() {
            let index = path.join(INDEX_FILE);
            if index.exists() {
                return Checkpoint::open_index(&index);
            }
            let single = path.join(SINGLE_FILE);
            if single.exists() {
                return Ok(Checkpoint::from_file(SafetensorsFile::open(single)?));
            }
            return Err(file_error(path, None, ModelFileError::Index(format!("the directory has neither {INDEX_FILE} nor {SINGLE_FILE}"))));
        }
        if path.extension().is_some_and(|e| e == "json") {
            return Checkpoint::open_index(path);
        }
        Ok(Checkpoint::from_file(SafetensorsFile::open(path)?))
    }

    /// A checkpoint of one file: every tensor in it.
    pub fn from_file(file: SafetensorsFile) -> Checkpoint {
        let map = file.header.tensors.iter().map(|t| (t.name.clone(), 0)).collect();
        Checkpoint { path: file.file.path.clone(), files: vec![file], map }
    }

    fn open_index(index: &Path) -> Result<Checkpoint> {
        let io = |op, source| file_error(index, None, ModelFileError::Io { op, source });
        let len = std::fs::metadata(index).map_err(|e| io("stat", e))?.len();
        if len > MAX_INDEX_BYTES {
            return Err(file_error(
                index,
                None,
                ModelFileError::TooLarge { what: "index size".into(), value: len, limit: MAX_INDEX_BYTES },
            ));
        }
        let text = std::fs::read(index).map_err(|e| io("read", e))?;
        let parsed: IndexJson = serde_json::from_slice(&text).map_err(|e| file_error(index, None, ModelFileError::Index(e.to_string())))?;
        let dir = index.parent().unwrap_or(Path::new("."));
        let mut shards: Vec<String> = parsed.weight_map.values().cloned().collect();
        shards.sort();
        shards.dedup();
        let mut files = Vec::with_capacity(shards.len());
        for s in &shards {
            // Shards live beside the index: a path elsewhere is refused, not followed.
            let plain = Path::new(s).file_name().is_some_and(|f| f == s.as_str()) && s != ".." && s != ".";
            if !plain {
                return Err(file_error(index, None, ModelFileError::Index(format!("shard {s:?} is not a plain file name"))));
            }
            files.push(SafetensorsFile::open(dir.join(s))?);
        }
        let mut map = BTreeMap::new();
        for (name, shard) in parsed.weight_map {
            let i = shards.binary_search(&shard).expect("every shard was collected");
            if files[i].header.tensor(&name).is_none() {
                return Err(file_error(files[i].path(), Some(&name), ModelFileError::NotFound));
            }
            map.insert(name, i);
        }
        Ok(Checkpoint { path: index.to_path_buf(), files, map })
    }

    /// Where the checkpoint was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The files (one, or the shards in name order).
    pub fn files(&self) -> &[SafetensorsFile] {
        &self.files
    }

    /// Every tensor name, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }

    /// The number of tensors.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True for a checkpoint without tensors.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The tensor `name` and the file holding it.
    pub fn entry(&self, name: &str) -> Option<(&SafetensorsFile, &TensorEntry)> {
        let f = &self.files[*self.map.get(name)?];
        Some((f, f.header.tensor(name)?))
    }

    /// Every tensor onto `device`.
    ///
    /// # Errors
    /// As [`Checkpoint::load`].
    pub fn load_all(&self, device: &Device, opts: &LoadOptions) -> Result<Weights> {
        self.load_selected(device, self.map.keys().map(String::as_str).collect(), opts)
    }

    /// The tensors whose names start with `prefix` onto `device` (none is not an error).
    ///
    /// # Errors
    /// As [`Checkpoint::load`].
    pub fn load_prefix(&self, device: &Device, prefix: &str, opts: &LoadOptions) -> Result<Weights> {
        let names = self.map.range(prefix.to_string()..).map(|(k, _)| k.as_str()).take_while(|k| k.starts_with(prefix)).collect();
        self.load_selected(device, names, opts)
    }

    /// The tensors called `names` onto `device`, each a contiguous tensor of the file's shape.
    /// Returns when they are all on the device.
    ///
    /// # Errors
    /// [`ModelFileError::NotFound`] for a name not in the checkpoint;
    /// [`ModelFileError::UnsupportedDType`] for a type ferrocm cannot hold that `opts` does not
    /// convert (checked for all before anything is allocated); [`ModelFileError::Conversion`]
    /// for a value a conversion cannot represent; read errors; device allocation errors.
    pub fn load(&self, device: &Device, names: &[&str], opts: &LoadOptions) -> Result<Weights> {
        self.load_selected(device, names.to_vec(), opts)
    }

    fn load_selected(&self, device: &Device, names: Vec<&str>, opts: &LoadOptions) -> Result<Weights> {
        let mut planned = Vec::with_capacity(names.len());
        for name in names {
            let (file, t) = self.entry(name).ok_or_else(|| file_error(&self.path, Some(name), ModelFileError::NotFound))?;
            let (dtype, convert) = file_type(t.dtype)
                .and_then(|ft| ft.plan(&t.dtype.to_string(), &opts.convert))
                .map_err(|kind| file_error(file.path(), Some(name), kind))?;
            planned.push((file, t, dtype, convert));
        }
        let mut jobs = Vec::with_capacity(planned.len());
        let mut weights = Weights::default();
        for (file, t, dtype, convert) in planned {
            let dst = Tensor::empty(device, &t.shape, dtype)?;
            if convert.value_scale() != 1.0 {
                weights.scales.insert(t.name.clone(), convert.value_scale());
            }
            weights.tensors.insert(t.name.clone(), dst.clone());
            jobs.push(Job { file: file.file.clone(), name: t.name.clone(), offset: t.range.start, len: t.byte_len(), convert, dst });
        }
        run(device, &jobs, opts)?;
        Ok(weights)
    }
}

/// The loader's view of a safetensors dtype.
fn file_type(d: Dtype) -> std::result::Result<FileType, ModelFileError> {
    Ok(match d {
        Dtype::F64 => FileType::F64,
        Dtype::F32 => FileType::F32,
        Dtype::F16 => FileType::F16,
        Dtype::BF16 => FileType::Bf16,
        Dtype::I64 => FileType::I64,
        Dtype::I32 => FileType::I32,
        Dtype::U32 => FileType::U32,
        Dtype::I16 => FileType::I16,
        Dtype::I8 => FileType::I8,
        Dtype::U8 => FileType::U8,
        Dtype::BOOL => FileType::Bool,
        Dtype::F8_E4M3 => FileType::F8E4M3,
        Dtype::F8_E5M2 => FileType::F8E5M2,
        Dtype::F8_E4M3FNUZ => FileType::F8E4M3Fnuz,
        Dtype::F8_E5M2FNUZ => FileType::F8E5M2Fnuz,
        other => {
            return Err(ModelFileError::UnsupportedDType {
                dtype: other.to_string(),
                hint: "ferrocm has no device type or conversion for it".into(),
            });
        }
    })
}
