//! RMSNorm and LayerNorm over the last axis, and their fused residual-add forms.
//!
//! ```no_run
//! use ferrocm::{Device, Tensor, bf16, ops::norm};
//! let dev = Device::new()?;
//! let x = Tensor::from_slice(&dev, &vec![bf16::from_f32(0.5); 4 * 4096], &[4, 4096])?;
//! let r = Tensor::from_slice(&dev, &vec![bf16::from_f32(0.25); 4 * 4096], &[4, 4096])?;
//! let w = Tensor::from_slice(&dev, &vec![bf16::ONE; 4096], &[4096])?;
//! // h = x + r for the next layer, y = RMSNorm(h) * w for this one.
//! let (y, h) = norm::add_rms_norm(&x, &r, Some(&w), 1e-6)?;
//! # Ok::<(), ferrocm::Error>(())
//! ```
//!
//! Semantics (shared with [`reference::norm`](crate::reference::norm)), over the last axis of
//! length `n`, f32 arithmetic, outputs in the input dtype:
//! - `rms_norm`: `y = x / sqrt(sum(x^2) / n + eps) * w`;
//! - `layer_norm`: `y = (x - mean) / sqrt(var + eps) * w + b`, `var` the biased variance;
//! - `add_*`: `h = x + residual` rounded to the dtype is returned too, and normalised instead
//!   of `x` (so the result equals normalising the stored `h`).
//!
//! Weight and bias are `[n]` tensors of the input dtype; `None` means 1 and 0.
//!
//! Non-finite inputs: a row holding a NaN or an infinity is NaN throughout, for both norms.
//! Its statistic (mean and variance, merged pairwise) is NaN; for RMSNorm this differs from
//! evaluating the formula naively, which would give 0 for the finite elements and NaN at the
//! infinities. Other rows are unaffected.
//!
//! How it runs: rows up to 8192 elements are read once, normalised in registers and written
//! once; a workgroup walks many rows keeping weight and bias in registers, loaded once per
//! workgroup (through LDS when it holds several rows at a time; see
//! `ferrocm_device::abi::norm`). Longer rows take a statistics pass and an apply pass.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::rows::ROW_WORKGROUPS;
use crate::ops::rows::plan_rows;
use crate::runtime::launch::LaunchConfig;
use crate::tensor::{Operands, Tensor};
use ferrocm_device::abi::norm::{self as abi, NORM_MAX_LANES, NormArgs, SHORT_ROW_BYTES, SHORT_WAVES, flags, norm_lds_bytes};
use ferrocm_device::abi::rowwise::{ROW_LDS_BYTES, ROW_STAT_FLOATS, mode};
use ferrocm_device::abi::{DevPtr, Kernel};

/// RMSNorm over the last axis.
///
/// # Errors
/// As [`add_layer_norm`].
pub fn rms_norm(x: &Tensor, weight: Option<&Tensor>, eps: f32) -> Result<Tensor> {
    run("rms_norm", x, None, weight, None, eps, false).map(|(y, _)| y)
}

/// LayerNorm over the last axis.
///
/// # Errors
/// As [`add_layer_norm`].
pub fn layer_norm(x: &Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f32) -> Result<Tensor> {
    run("layer_norm", x, None, weight, bias, eps, true).map(|(y, _)| y)
}

/// `h = x + residual`, then RMSNorm of `h`; returns `(norm, h)`.
///
/// # Errors
/// As [`add_layer_norm`].
pub fn add_rms_norm(x: &Tensor, residual: &Tensor, weight: Option<&Tensor>, eps: f32) -> Result<(Tensor, Tensor)> {
    run("add_rms_norm", x, Some(residual), weight, None, eps, false).map(|(y, h)| (y, h.expect("residual output")))
}

/// `h = x + residual`, then LayerNorm of `h`; returns `(norm, h)`.
///
/// # Errors
/// [`Error::DTypeMismatch`] for dtypes other than f32/f16/bf16 or operands of different dtypes;
/// [`Error::Shape`] for a 0-d input, a residual of another shape, weight or bias not `[n]`;
/// [`Error::InvalidArgument`] for a negative or NaN `eps`; [`Error::Unsupported`] for sizes of
/// 2^32 or more; allocation and launch errors.
pub fn add_layer_norm(x: &Tensor, residual: &Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f32) -> Result<(Tensor, Tensor)> {
    run("add_layer_norm", x, Some(residual), weight, bias, eps, true).map(|(y, h)| (y, h.expect("residual output")))
}

/// Rows up to which short rows take the short-row kernel (a wave per row, no LDS, no barrier).
/// Its waves each read the weight and bias, so past this many rows the general kernel, which
/// reads them once per workgroup, moves fewer bytes (and its per-row overhead is amortised):
/// at 512 rows the extra reads are at most 2 MiB, which the L2 serves.
const SHORT_MAX_ROWS: usize = 512;

/// The general kernel and the short-row ones (whole, half) for dtype `d`.
fn kernel(op: &'static str, d: DType) -> Result<(Kernel<NormArgs>, [Kernel<NormArgs>; 2])> {
    match d {
        DType::F32 => Ok((abi::NORM_F32, [abi::NORM_SHORT_F32, abi::NORM_SHORT_HALF_F32])),
        DType::F16 => Ok((abi::NORM_F16, [abi::NORM_SHORT_F16, abi::NORM_SHORT_HALF_F16])),
        DType::Bf16 => Ok((abi::NORM_BF16, [abi::NORM_SHORT_BF16, abi::NORM_SHORT_HALF_BF16])),
        d => Err(Error::DTypeMismatch { op, what: "input", got: d, expected: "f32, f16 or bf16".into() }),
    }
}

/// A norm's `eps`: finite and non-negative.
///
/// # Errors
/// [`Error::InvalidArgument`] otherwise.
pub(crate) fn check_eps(op: &'static str, eps: f32) -> Result<()> {
    if !(eps >= 0.0) || eps.is_infinite() {
        return Err(Error::InvalidArgument { op, message: format!("eps = {eps} (must be finite and >= 0)") });
    }
    Ok(())
}

/// A norm's parameter `what` (weight, bias, residual) of `dtype` and `shape` on `ops`' device.
///
/// # Errors
/// [`Error::DTypeMismatch`], [`Error::Shape`], [`Error::DeviceMismatch`].
pub(crate) fn check_param(ops: &Operands<'_>, what: &'static str, t: &Tensor, dtype: DType, shape: &[usize]) -> Result<()> {
    let op = ops.op();
    if t.dtype() != dtype {
        return Err(Error::DTypeMismatch { op, what, got: t.dtype(), expected: dtype.to_string() });
    }
    if t.shape() != shape {
        return Err(Error::Shape { op, message: format!("{what} is {:?}, expected {shape:?}", t.shape()) });
    }
    ops.check_device(what, t)
}

fn run(
    op: &'static str,
    x: &Tensor,
    residual: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f32,
    layer: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    let (k, k_short) = kernel(op, x.dtype())?;
    if x.rank() == 0 {
        return Err(Error::Shape { op, message: "a 0-d tensor has no last axis".into() });
    }
    check_eps(op, eps)?;
    let len = x.shape()[x.rank() - 1];
    let dev = x.device();
    let mut ops = Operands::new(op, dev);
    let check = |what: &'static str, t: &Tensor, shape: &[usize]| check_param(&ops, what, t, x.dtype(), shape);
    if let Some(r) = residual {
        check("residual", r, x.shape())?;
    }
    if let Some(w) = weight {
        check("weight", w, &[len])?;
    }
    if let Some(b) = bias {
        check("bias", b, &[len])?;
    }
    let out = Tensor::empty(dev, x.shape(), x.dtype())?;
    let h = residual.map(|_| Tensor::empty(dev, x.shape(), x.dtype())).transpose()?;
    if x.numel() == 0 {
        return Ok((out, h));
    }
    let x = x.contiguous()?;
    let residual = residual.map(Tensor::contiguous).transpose()?;
    let weight = weight.map(Tensor::contiguous).transpose()?;
    let bias = bias.map(Tensor::contiguous).transpose()?;
    let esize = x.dtype().size();
    let ptrs = [Some(&x), residual.as_ref(), weight.as_ref(), bias.as_ref(), Some(&out), h.as_ref()];
    let vector = (len * esize) % 16 == 0 && ptrs.iter().flatten().all(|t| t.addr() % 16 == 0);
    let rows = x.numel() / len;
    let fl_base = if layer { flags::LAYER } else { 0 }
        | if weight.is_some() { flags::WEIGHT } else { 0 }
        | if bias.is_some() { flags::BIAS } else { 0 }
        | if residual.is_some() { flags::RESIDUAL } else { 0 };
    let mut input = |what, t: Option<&Tensor>| t.map_or(Ok(DevPtr::NULL), |t| ops.input_bytes(what, t));
    let (x_ptr, res_ptr, w_ptr, b_ptr) =
        (input("x", Some(&x))?, input("residual", residual.as_ref())?, input("weight", weight.as_ref())?, input("bias", bias.as_ref())?);
    let out_ptr = ops.output_bytes("out", &out)?;
    let h_ptr = h.as_ref().map_or(Ok(DevPtr::NULL), |h| ops.output_bytes("h", h))?;
    // The operands and the row shape; each path sets how a row is split and the flags.
    let base = NormArgs {
        x: x_ptr,
        residual: res_ptr,
        weight: w_ptr,
        bias: b_ptr,
        out: out_ptr,
        h_out: h_ptr,
        stats: DevPtr::NULL,
        rows: ops.u32("rows", rows)?,
        len: len as u32,
        lanes: 64,
        segs: 1,
        seg_len: len as u32,
        mode: mode::FUSED,
        flags: fl_base,
        eps,
    };
    if vector && len * esize <= SHORT_ROW_BYTES as usize && rows <= SHORT_MAX_ROWS {
        // Short rows (a decode step's hidden state): one wave each, the row in registers.
        let waves = rows.min(SHORT_WAVES as usize);
        let args = NormArgs { flags: fl_base | flags::VECTOR_OK, ..base };
        let cfg = LaunchConfig::linear(ops.u32("workgroups", rows.div_ceil(waves))?, 64 * waves as u32);
        let k = if 2 * len * esize <= SHORT_ROW_BYTES as usize { k_short[1] } else { k_short[0] };
        // SAFETY: every operand was checked to be contiguous rows * len (weight, bias: len) of
        // the kernel's dtype, 16-byte aligned with rows of whole 16-byte chunks, at most
        // SHORT_ROW_BYTES long (half of it for the half kernel).
        unsafe { ops.launch(k, cfg, &args)? };
        return Ok((out, h));
    }
    // Without 16-byte accesses the kernel takes one row per group (no loop): no persistence.
    let mut p = plan_rows(op, rows, len, esize, vector, NORM_MAX_LANES, vector)?;
    // Weight and bias are read once per workgroup: keep that under 4% of the row traffic
    // (`tensors` rows read or written per row), but keep at least one workgroup per CU.
    let affine = weight.is_some() as usize + bias.is_some() as usize;
    if p.segs == 1 && affine > 0 && p.vector {
        let tensors = if residual.is_some() { 4 } else { 2 };
        let budget = (rows * tensors / (25 * affine)).clamp(ROW_WORKGROUPS / 2, ROW_WORKGROUPS);
        p.workgroups = p.workgroups.min(budget as u32).max(1);
    }
    let shared = p.segs == 1 && p.block / p.lanes > 1;
    let fl = fl_base | if p.vector { flags::VECTOR_OK } else { 0 };
    let mut args = NormArgs { lanes: p.lanes, segs: p.segs, seg_len: p.seg_len, flags: fl, ..base };
    let lds = if shared { norm_lds_bytes(len as u32, esize as u32, true) } else { ROW_LDS_BYTES };
    let cfg = LaunchConfig::linear(p.workgroups, p.block).with_lds(lds);
    if p.segs == 1 {
        // SAFETY: every operand was checked to be contiguous rows * len (weight, bias: len) of
        // the kernel's dtype.
        unsafe { ops.launch(k, cfg, &args)? };
        return Ok((out, h));
    }
    let stats = dev.alloc::<f32>(p.workgroups as usize * ROW_STAT_FLOATS as usize)?;
    args.stats = ops.buffer("statistics", &stats)?;
    args.mode = mode::STATS;
    // SAFETY: as above; stats holds one slot per (row, segment). This pass writes h.
    unsafe { ops.launch(k, cfg, &args)? };
    // The apply pass reads the stored h instead of re-adding x and the residual.
    if h.is_some() {
        args.x = h_ptr;
        args.flags &= !flags::RESIDUAL;
    }
    args.mode = mode::APPLY;
    // SAFETY: as above; every statistic slot was written.
    unsafe { ops.launch(k, cfg, &args)? };
    Ok((out, h))
}
