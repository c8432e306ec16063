//! GGUF tensors to host f32 weights: what both the CPU reference and (until the quantized
//! matmul kernels land) the device path start from.

use crate::error::{Error, Result};
use ferrocm::io::gguf::{GgmlType, GgufFile};
use ferrocm::quant::QuantFormat;

/// A weight on the host, in f32, row-major.
#[derive(Clone, Debug)]
pub(crate) struct HostTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// What the loader reads: the plain float types and GGML's block formats with an f64 reference
/// dequantization in `ferrocm::reference::quant`.
pub(crate) const LOADABLE_TYPES: &str = "F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K";

/// Tensor `name` of `file` as f32 (dequantized through the f64 reference for block formats;
/// every format's weights are exactly representable in f32 except for the k-quants' products,
/// which round once).
///
/// # Errors
/// [`Error::BadTensor`] when missing; [`Error::UnsupportedTensorType`] for other types.
pub(crate) fn load_f32(file: &GgufFile, name: &str) -> Result<HostTensor> {
    let info = file.header().tensor(name).ok_or_else(|| missing(file, name))?;
    let bytes = file.tensor_bytes(name)?;
    let shape = info.shape();
    let data: Vec<f32> = match info.ggml_type() {
        GgmlType::F32 => bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        GgmlType::F16 => bytes.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
        GgmlType::BF16 => bytes.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
        t => match QuantFormat::from_ggml_type(t.id()) {
            Some(format) => ferrocm::reference::quant::dequantize(format, bytes).into_iter().map(|v| v as f32).collect(),
            None => {
                return Err(Error::UnsupportedTensorType {
                    path: file.path().into(),
                    tensor: name.into(),
                    ty: t.name().into(),
                    supported: LOADABLE_TYPES,
                });
            }
        },
    };
    Ok(HostTensor { shape, data })
}

/// `name` as f32 with exactly `shape`.
///
/// # Errors
/// As [`load_f32`], and [`Error::BadTensor`] for another shape.
pub(crate) fn load_shaped(file: &GgufFile, name: &str, shape: &[usize]) -> Result<HostTensor> {
    let t = load_f32(file, name)?;
    if t.shape != shape {
        return Err(Error::BadTensor {
            path: file.path().into(),
            tensor: name.into(),
            message: format!("shape {:?}, expected {shape:?}", t.shape),
        });
    }
    Ok(t)
}

/// The GGML blocks of `parts` (each `(name, rows)`, all `k` columns wide and of one block
/// format), concatenated row-major: the blocks of the fused `[sum of rows, k]` matrix, since a
/// row of GGML blocks depends on that row alone. `None` when a part is not block-quantized in a
/// format ferrocm's quantized ops take, the formats differ, or `k` is not whole blocks.
///
/// # Errors
/// [`Error::BadTensor`] for a missing part or one of another shape.
pub(crate) fn quantized_rows(file: &GgufFile, parts: &[(&str, usize)], k: usize) -> Result<Option<(QuantFormat, Vec<u8>)>> {
    let mut format = None;
    let mut bytes = Vec::new();
    for &(name, rows) in parts {
        let info = file.header().tensor(name).ok_or_else(|| missing(file, name))?;
        if info.shape() != [rows, k] {
            return Err(Error::BadTensor {
                path: file.path().into(),
                tensor: name.into(),
                message: format!("shape {:?}, expected {:?}", info.shape(), [rows, k]),
            });
        }
        let Some(f) = QuantFormat::from_ggml_type(info.ggml_type().id()) else { return Ok(None) };
        if format.is_some_and(|g| g != f) || k % f.block_elems() != 0 {
            return Ok(None);
        }
        format = Some(f);
        bytes.extend_from_slice(file.tensor_bytes(name)?);
    }
    Ok(format.map(|f| (f, bytes)))
}

pub(crate) fn missing(file: &GgufFile, name: &str) -> Error {
    Error::BadTensor { path: file.path().into(), tensor: name.into(), message: "missing".into() }
}

/// The names of layer `i`'s tensors, as llama.cpp's converter writes them.
pub(crate) struct LayerNames {
    pub attn_norm: String,
    pub q: String,
    pub k: String,
    pub v: String,
    pub o: String,
    pub ffn_norm: String,
    pub gate: String,
    pub up: String,
    pub down: String,
}

impl LayerNames {
    pub(crate) fn new(i: usize) -> LayerNames {
        let n = |s: &str| format!("blk.{i}.{s}.weight");
        LayerNames {
            attn_norm: n("attn_norm"),
            q: n("attn_q"),
            k: n("attn_k"),
            v: n("attn_v"),
            o: n("attn_output"),
            ffn_norm: n("ffn_norm"),
            gate: n("ffn_gate"),
            up: n("ffn_up"),
            down: n("ffn_down"),
        }
    }
}

/// Checks every tensor a model needs is present with a loadable type before anything is
/// loaded, so a bad file fails at once and not after minutes of dequantizing.
///
/// # Errors
/// The first missing tensor or unsupported type.
pub(crate) fn check_loadable(file: &GgufFile, names: &[&str]) -> Result<()> {
    for &name in names {
        let info = file.header().tensor(name).ok_or_else(|| missing(file, name))?;
        let t = info.ggml_type();
        let ok = matches!(t, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) || QuantFormat::from_ggml_type(t.id()).is_some();
        if !ok {
            return Err(Error::UnsupportedTensorType {
                path: file.path().into(),
                tensor: name.into(),
                ty: t.name().into(),
                supported: LOADABLE_TYPES,
            });
        }
    }
    Ok(())
}
