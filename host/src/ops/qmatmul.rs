//! Matrix products with GGML block-quantized weights ([`QuantTensor`]), the weights staying
//! quantized on the device: `y = x W^T` (the convention of a `Linear` layer), and their
//! dequantization.
//!
//! ```no_run
//! use ferrocm::{Device, Tensor, f16, ops::qmatmul, quant::{QuantFormat, QuantTensor, quantize}};
//! let dev = Device::new()?;
//! let w: Vec<f32> = (0..256 * 576).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
//! let wq = QuantTensor::from_blocks(&dev, QuantFormat::Q4_1, [256, 576], &quantize(QuantFormat::Q4_1, &w)?)?;
//! let dense = qmatmul::dequantize(&wq, ferrocm::DType::F32)?; // [256, 576] f32
//! # Ok::<(), ferrocm::Error>(())
//! ```
//!
//! Dequantization is exact: each weight is the f64 definition of
//! [`reference::quant`](crate::reference::quant) rounded to f32 (the f32 operations the kernels
//! do are exact or round once, see `kernels/quant/format.rs`); f16 and bf16 outputs are that f32
//! rounded to nearest even. NaN and infinite scales propagate as IEEE arithmetic says, as in the
//! reference (`inf * 0` is NaN).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::quant::QuantTensor;
use crate::runtime::launch::LaunchConfig;
use crate::tensor::{Operands, Tensor};
use ferrocm_device::abi::quant::{
    self as abi, CHUNK_GROUPS, DEQUANT_KERNELS, DEQUANT_LDS_BYTES, DEQUANT_THREADS, DequantArgs, GROUP, TILE_ROWS,
};

/// The kernels' code for an output (or activation) dtype.
fn dtype_code(op: &'static str, what: &'static str, d: DType) -> Result<u32> {
    match d {
        DType::F32 => Ok(abi::dtype::F32),
        DType::F16 => Ok(abi::dtype::F16),
        DType::Bf16 => Ok(abi::dtype::BF16),
        d => Err(Error::DTypeMismatch { op, what, got: d, expected: "f32, f16 or bf16".into() }),
    }
}

/// `W` as a dense row-major `[N, K]` tensor of `dtype` (f32, f16 or bf16), on `w`'s device.
///
/// # Errors
/// [`Error::DTypeMismatch`] for another dtype; allocation and launch errors.
pub fn dequantize(w: &QuantTensor, dtype: DType) -> Result<Tensor> {
    let out_type = dtype_code("dequantize", "output", dtype)?;
    let [n, k] = w.shape();
    let dev = w.device();
    let y = Tensor::empty(dev, &[n, k], dtype)?;
    if n == 0 || k == 0 {
        return Ok(y);
    }
    let mut ops = Operands::new("dequantize", dev);
    let args = DequantArgs {
        w: ops.buffer("W", w.device_bytes())?,
        y: ops.output_bytes("y", &y)?,
        n: ops.u32("N", n)?,
        k: ops.u32("K", k)?,
        out_type,
    };
    let grid = [ops.u32("chunks", (k / GROUP).div_ceil(CHUNK_GROUPS))?, ops.u32("tiles", n.div_ceil(TILE_ROWS))?, 1];
    let cfg = LaunchConfig { grid, block: [DEQUANT_THREADS, 1, 1], dynamic_lds_bytes: DEQUANT_LDS_BYTES };
    // SAFETY: the kernel reads the device layout of [n, k] (the buffer holds all of its tiles)
    // and writes the n * k elements of y, a fresh contiguous (16-byte aligned) tensor.
    unsafe { ops.launch(DEQUANT_KERNELS[w.format().abi_code() as usize], cfg, &args)? };
    Ok(y)
}
