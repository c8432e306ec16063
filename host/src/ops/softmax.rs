//! Softmax and log-softmax over the last axis.
//!
//! ```no_run
//! use ferrocm::{Device, Tensor, ops::softmax};
//! let dev = Device::new()?;
//! let x = Tensor::from_slice(&dev, &[1.0f32, 2.0, 3.0, 0.0, 0.0, 0.0], &[2, 3])?;
//! let p = softmax::softmax(&x)?.to_vec::<f32>()?;
//! assert!((p[3] - 1.0 / 3.0).abs() < 1e-6);
//! # Ok::<(), ferrocm::Error>(())
//! ```
//!
//! Semantics (shared with [`reference::softmax`](crate::reference::softmax)): f32, f16, bf16
//! in and out (the input's dtype), f32 arithmetic; `softmax(x) = exp(x - m) / sum(exp(x - m))`
//! and `log_softmax(x) = (x - m) - log(sum(exp(x - m)))` with `m` the row maximum. A row with a
//! NaN or a +inf, or only -inf, is NaN throughout (that formula's value).
//!
//! How it runs: rows up to 32768 elements are read once and written once, one power-of-two
//! group of lanes per row holding it in registers, with a single `(max, sum)` reduction (see
//! `ferrocm_device::abi::softmax`). Longer rows take two launches over 32768-element
//! segments: per-segment `(max, sum)`, then each segment combines its row's statistics and
//! writes (three passes over the row instead of two).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::rows::plan_rows;
use crate::runtime::launch::LaunchConfig;
use crate::tensor::{Operands, Tensor};
use ferrocm_device::abi::rowwise::{ROW_LDS_BYTES, ROW_STAT_FLOATS, mode};
use ferrocm_device::abi::softmax::{self as abi, SOFTMAX_MAX_LANES, SoftmaxArgs, flags};
use ferrocm_device::abi::{DevPtr, Kernel};

/// Softmax over the last axis.
///
/// # Errors
/// As [`log_softmax`].
pub fn softmax(x: &Tensor) -> Result<Tensor> {
    run(x, false)
}

/// Log-softmax over the last axis.
///
/// # Errors
/// [`Error::DTypeMismatch`] for dtypes other than f32/f16/bf16, [`Error::Shape`] for a 0-d
/// tensor, [`Error::Unsupported`] for sizes of 2^32 or more; allocation and launch errors.
pub fn log_softmax(x: &Tensor) -> Result<Tensor> {
    run(x, true)
}

fn kernel(op: &'static str, d: DType) -> Result<Kernel<SoftmaxArgs>> {
    match d {
        DType::F32 => Ok(abi::SOFTMAX_F32),
        DType::F16 => Ok(abi::SOFTMAX_F16),
        DType::Bf16 => Ok(abi::SOFTMAX_BF16),
        d => Err(Error::DTypeMismatch { op, what: "input", got: d, expected: "f32, f16 or bf16".into() }),
    }
}

fn run(x: &Tensor, log: bool) -> Result<Tensor> {
    let op = if log { "log_softmax" } else { "softmax" };
    let k = kernel(op, x.dtype())?;
    if x.rank() == 0 {
        return Err(Error::Shape { op, message: "a 0-d tensor has no last axis".into() });
    }
    let dev = x.device();
    let len = x.shape()[x.rank() - 1];
    let out = Tensor::empty(dev, x.shape(), x.dtype())?;
    if x.numel() == 0 {
        return Ok(out);
    }
    let x = x.contiguous()?;
    let rows = x.numel() / len;
    let esize = x.dtype().size();
    let vector = x.addr() % 16 == 0 && out.addr() % 16 == 0 && (len * esize) % 16 == 0;
    let p = plan_rows(op, rows, len, esize, vector, SOFTMAX_MAX_LANES, false)?;
    let mut ops = Operands::new(op, dev);
    let mut args = SoftmaxArgs {
        x: ops.input_bytes("x", &x)?,
        out: ops.output_bytes("out", &out)?,
        stats: DevPtr::NULL,
        rows: rows as u32,
        len: len as u32,
        lanes: p.lanes,
        segs: p.segs,
        seg_len: p.seg_len,
        mode: mode::FUSED,
        flags: if log { flags::LOG } else { 0 } | if p.vector { flags::VECTOR_OK } else { 0 },
    };
    let cfg = LaunchConfig::linear(p.workgroups, p.block).with_lds(ROW_LDS_BYTES);
    if p.segs == 1 {
        // SAFETY: x and out are contiguous rows * len elements of the kernel's dtype.
        unsafe { ops.launch(k, cfg, &args)? };
        return Ok(out);
    }
    let stats = dev.alloc::<f32>(p.workgroups as usize * ROW_STAT_FLOATS as usize)?;
    args.stats = ops.buffer("statistics", &stats)?;
    args.mode = mode::STATS;
    // SAFETY: as above; stats holds one slot per (row, segment).
    unsafe { ops.launch(k, cfg, &args)? };
    args.mode = mode::APPLY;
    // SAFETY: as above; the STATS pass wrote every slot.
    unsafe { ops.launch(k, cfg, &args)? };
    Ok(out)
}
