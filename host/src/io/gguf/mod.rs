//! GGUF (v2, v3): metadata of every value type, tensor infos, tensor data memory-mapped;
//! quantized tensors stay quantized (raw blocks + GGML type + logical shape).
//!
//! ```no_run
//! use ferrocm::{Device, io::gguf::GgufFile};
//! let f = GgufFile::open("SmolLM2-135M-Instruct.Q4_1.gguf")?;
//! let h = f.header();
//! assert_eq!(h.architecture()?, "llama");
//! let layers = h.arch_u64("block_count")?;               // llama.block_count
//! let template = h.tokenizer()?.chat_template;
//! let dev = Device::new()?;
//! let norm = f.load(&dev, &["output_norm.weight"], &Default::default())?; // an f32 tensor
//! let emb = f.quantized("token_embd.weight")?;            // Q8_0 blocks, not dequantized
//! let blocks = emb.to_device_bytes(&dev)?;                // raw blocks on the device
//! # Ok::<(), ferrocm::Error>(())
//! ```
//!
//! Shapes: GGUF lists dimensions fastest first; [`GgufTensorInfo::dims`] keeps that order and
//! [`GgufTensorInfo::shape`] gives the row-major shape device tensors use.

mod reader;
mod types;
mod value;
mod writer;

pub use reader::{DEFAULT_ALIGNMENT, GGUF_MAGIC, GgufHeader, GgufTensorInfo, MAX_DIMS, MAX_NESTING, Tokenizer};
pub use types::GgmlType;
pub use value::{Array, Value, ValueType};
pub use writer::GgufWriter;

use super::convert::Convert;
use super::loader::{Job, LoadOptions, Weights, run};
use super::{MappedFile, file_error};
use crate::dtype::DType;
use crate::error::{ModelFileError, Result};
use crate::runtime::device::Device;
use crate::tensor::Tensor;
use std::path::Path;
use std::sync::Arc;

/// What a quantized tensor is, besides its bytes: GGML type and logical dimensions.
///
/// Get it from [`QuantizedTensor::info`] or, after a load, [`Weights::quantized_info`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuantizedInfo {
    /// The block format.
    pub ggml_type: GgmlType,
    /// Logical dimensions, GGUF order (fastest first).
    pub dims: Vec<u64>,
}

impl QuantizedInfo {
    /// The logical row-major shape (dims reversed): `[rows, row length]` for a matrix.
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().map(|&d| d as usize).collect()
    }

    /// Blocks in all.
    pub fn blocks(&self) -> u64 {
        self.dims.iter().product::<u64>() / self.ggml_type.block_size() as u64
    }
}

/// A GGUF tensor's raw bytes (a view of the file's memory map) with its type and shape: how
/// quantized weights leave the file without being dequantized. The quantized-matmul ops take
/// the device copy ([`QuantizedTensor::to_device_bytes`]) plus [`QuantizedTensor::info`].
///
/// Get one with [`GgufFile::quantized`]. It keeps the file mapped while it lives.
#[derive(Clone, Debug)]
pub struct QuantizedTensor {
    file: Arc<MappedFile>,
    name: String,
    info: QuantizedInfo,
    range: std::ops::Range<u64>,
}

impl QuantizedTensor {
    /// The tensor's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Type and dimensions.
    pub fn info(&self) -> &QuantizedInfo {
        &self.info
    }

    /// The block format.
    pub fn ggml_type(&self) -> GgmlType {
        self.info.ggml_type
    }

    /// The raw blocks, as stored.
    pub fn bytes(&self) -> &[u8] {
        &self.file.bytes()[self.range.start as usize..self.range.end as usize]
    }

    /// The weight matrix as ferrocm's quantized-op operand: a GGUF `[K, N]` (fastest first) is
    /// the `[N, K]` [`QuantTensor`](crate::quant::QuantTensor) of N rows of K weights; a 1-D
    /// `[K]` is one row. The blocks are copied from the file's mapping as they are.
    ///
    /// ```no_run
    /// # let dev = ferrocm::Device::new()?;
    /// let f = ferrocm::io::gguf::GgufFile::open("SmolLM2-135M-Instruct.Q4_1.gguf")?;
    /// let wq = f.quantized("blk.0.attn_q.weight")?.to_quant_tensor(&dev)?;
    /// assert_eq!(wq.shape(), [576, 576]);
    /// # Ok::<(), ferrocm::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ModelFileError::UnsupportedDType`] for a type the quantized ops do not implement (see
    /// [`GgmlType::quant_format`]) or more than 2 dimensions; allocation errors.
    pub fn to_quant_tensor(&self, device: &Device) -> Result<crate::quant::QuantTensor> {
        let t = self.ggml_type();
        let unsupported =
            |hint: String| file_error(&self.file.path, Some(&self.name), ModelFileError::UnsupportedDType { dtype: t.name().into(), hint });
        let format = t.quant_format().ok_or_else(|| {
            let list: Vec<&str> = crate::quant::QuantFormat::ALL.iter().map(|f| f.name()).collect();
            unsupported(format!("ferrocm's quantized ops take {}", list.join(", ")))
        })?;
        let (k, n) = match self.info.dims[..] {
            [k] => (k, 1),
            [k, n] => (k, n),
            _ => return Err(unsupported(format!("a quantized matrix has 1 or 2 dimensions, this has {:?}", self.info.dims))),
        };
        crate::quant::QuantTensor::from_blocks(device, format, [n as usize, k as usize], self.bytes())
    }

    /// Uploads the raw blocks as a 1-D tensor of bytes (dtype i8: ferrocm has no u8; the bits
    /// are the file's), through the bounded loader path with default options.
    ///
    /// # Errors
    /// Device allocation and read errors.
    pub fn to_device_bytes(&self, device: &Device) -> Result<Tensor> {
        let len = self.range.end - self.range.start;
        let dst = Tensor::empty(device, &[len as usize], DType::I8)?;
        let job = Job {
            file: self.file.clone(),
            name: self.name.clone(),
            offset: self.range.start,
            len,
            convert: Convert::Copy,
            dst: dst.clone(),
        };
        run(device, &[job], &LoadOptions::default())?;
        Ok(dst)
    }
}

/// A GGUF file, memory-mapped, its header validated.
///
/// Get one with [`GgufFile::open`]. Load dense tensors (and quantized ones as raw blocks) with
/// [`GgufFile::load_all`], [`GgufFile::load`] or [`GgufFile::load_prefix`]; take single quantized
/// tensors with [`GgufFile::quantized`].
#[derive(Clone, Debug)]
pub struct GgufFile {
    file: Arc<MappedFile>,
    header: Arc<GgufHeader>,
}

impl GgufFile {
    /// Opens, maps and validates `path`.
    ///
    /// # Errors
    /// [`ModelFileError::Io`]; every error of [`GgufHeader::parse`].
    pub fn open(path: impl AsRef<Path>) -> Result<GgufFile> {
        let file = MappedFile::open(path.as_ref())?;
        let header = Arc::new(GgufHeader::parse(&file.path, file.bytes())?);
        Ok(GgufFile { file, header })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// The validated header: metadata and tensor infos.
    pub fn header(&self) -> &GgufHeader {
        &self.header
    }

    fn info(&self, name: &str) -> Result<&GgufTensorInfo> {
        self.header.tensor(name).ok_or_else(|| file_error(&self.file.path, Some(name), ModelFileError::NotFound))
    }

    /// The bytes of tensor `name`, a view of the memory map.
    ///
    /// # Errors
    /// [`ModelFileError::NotFound`].
    pub fn tensor_bytes(&self, name: &str) -> Result<&[u8]> {
        let t = self.info(name)?;
        Ok(&self.file.bytes()[t.range_usize()])
    }

    /// Tensor `name` as raw blocks with its type and shape (any GGML type; meant for the
    /// quantized ones).
    ///
    /// # Errors
    /// [`ModelFileError::NotFound`].
    pub fn quantized(&self, name: &str) -> Result<QuantizedTensor> {
        let t = self.info(name)?;
        Ok(QuantizedTensor {
            file: self.file.clone(),
            name: t.name().to_string(),
            info: QuantizedInfo { ggml_type: t.ggml_type(), dims: t.dims().to_vec() },
            range: t.file_range(),
        })
    }

    /// Every tensor onto `device`.
    ///
    /// # Errors
    /// As [`GgufFile::load`].
    pub fn load_all(&self, device: &Device, opts: &LoadOptions) -> Result<Weights> {
        let names: Vec<&str> = self.header.tensors().iter().map(GgufTensorInfo::name).collect();
        self.load(device, &names, opts)
    }

    /// The tensors whose names start with `prefix` (`blk.0.` ...) onto `device`.
    ///
    /// # Errors
    /// As [`GgufFile::load`].
    pub fn load_prefix(&self, device: &Device, prefix: &str, opts: &LoadOptions) -> Result<Weights> {
        let names: Vec<&str> = self.header.tensors().iter().map(GgufTensorInfo::name).filter(|n| n.starts_with(prefix)).collect();
        self.load(device, &names, opts)
    }

    /// The tensors called `names` onto `device`: unquantized types as tensors of their
    /// row-major shape (F64, I64, I16 through [`LoadOptions::convert`]); quantized types as their
    /// raw blocks, a 1-D i8 tensor of bytes, described by [`Weights::quantized_info`].
    ///
    /// # Errors
    /// [`ModelFileError::NotFound`]; [`ModelFileError::UnsupportedDType`] for F64/I64/I16 that
    /// the options do not convert (checked before anything is allocated); read, conversion and
    /// allocation errors.
    pub fn load(&self, device: &Device, names: &[&str], opts: &LoadOptions) -> Result<Weights> {
        let mut planned = Vec::with_capacity(names.len());
        for &name in names {
            let t = self.info(name)?;
            let plan = match t.ggml_type().file_type() {
                Some(ft) => {
                    let (dtype, convert) =
                        ft.plan(t.ggml_type().name(), &opts.convert).map_err(|kind| file_error(&self.file.path, Some(name), kind))?;
                    (t.shape(), dtype, convert)
                }
                None => (vec![t.byte_len() as usize], DType::I8, Convert::Copy),
            };
            planned.push((t, plan));
        }
        let mut weights = Weights::default();
        let mut jobs = Vec::with_capacity(planned.len());
        for (t, (shape, dtype, convert)) in planned {
            let dst = Tensor::empty(device, &shape, dtype)?;
            if t.ggml_type().is_quantized() {
                weights.quantized.insert(t.name().to_string(), QuantizedInfo { ggml_type: t.ggml_type(), dims: t.dims().to_vec() });
            }
            weights.tensors.insert(t.name().to_string(), dst.clone());
            jobs.push(Job {
                file: self.file.clone(),
                name: t.name().to_string(),
                offset: t.file_range().start,
                len: t.byte_len(),
                convert,
                dst,
            });
        }
        run(device, &jobs, opts)?;
        Ok(weights)
    }
}

impl GgufTensorInfo {
    fn range_usize(&self) -> std::ops::Range<usize> {
        let r = self.file_range();
        r.start as usize..r.end as usize
    }
}
