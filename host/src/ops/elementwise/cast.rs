//! Casts between f32, f16, bf16, fp8 (E4M3FNUZ, E5M2FNUZ) and i32, and [`copy`] (any view into
//! a new contiguous tensor, vectorised).
//!
//! Rounding rules (each value is rounded exactly once):
//! - float -> float: to nearest, ties to even. f16 and bf16 overflow to ±infinity; fp8
//!   **saturates** to ±max (240 for E4M3FNUZ, 57344 for E5M2FNUZ), infinities included. NaN
//!   stays NaN; fp8 (FNUZ) has a single NaN, 0x80, and no negative zero: anything that rounds to
//!   zero becomes +0.
//! - float -> i32: toward zero, saturating to `i32::MIN..=i32::MAX`, NaN -> 0 (Rust's `as`).
//! - i32 -> float: to nearest even, rounded once from the integer (i32 -> bf16 does not round
//!   through f32 first); fp8 saturates.
//! - to the same dtype: a bit copy.
//!
//! ```
//! use ferrocm::{Device, DType, Tensor, ops::elementwise as ew};
//! let dev = Device::new()?;
//! let x = Tensor::from_slice(&dev, &[1.5f32, -300.0, 2.7], &[3])?;
//! let q = ew::cast(&x, DType::Fp8E4M3Fnuz)?; // 1.5, -240 (saturated), 2.75
//! let i = ew::cast(&x, DType::I32)?;          // 1, -300, 2
//! assert_eq!(i.to_vec::<i32>()?, vec![1, -300, 2]);
//! # Ok::<(), ferrocm::Error>(())
//! ```

use super::plan::{Nary, run};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use ferrocm_device::abi::Kernel;
use ferrocm_device::abi::elementwise::{self as abi, EltArgs, type_code};

/// The `type_code` of a cast type, or `None`.
pub(crate) fn code_of(d: DType) -> Option<u32> {
    Some(match d {
        DType::F32 => type_code::F32,
        DType::F16 => type_code::F16,
        DType::Bf16 => type_code::BF16,
        DType::Fp8E4M3Fnuz => type_code::FP8_E4M3,
        DType::Fp8E5M2Fnuz => type_code::FP8_E5M2,
        DType::I32 => type_code::I32,
        _ => return None,
    })
}

fn kernel_from(d: DType) -> Option<Kernel<EltArgs>> {
    Some(match d {
        DType::F32 => abi::CAST_FROM_F32,
        DType::F16 => abi::CAST_FROM_F16,
        DType::Bf16 => abi::CAST_FROM_BF16,
        DType::Fp8E4M3Fnuz => abi::CAST_FROM_FP8_E4M3,
        DType::Fp8E5M2Fnuz => abi::CAST_FROM_FP8_E5M2,
        DType::I32 => abi::CAST_FROM_I32,
        _ => return None,
    })
}

const CAST_TYPES: &str = "f32, f16, bf16, fp8e4m3fnuz, fp8e5m2fnuz or i32";

/// Launches `cast_from_<from>` with output code `to`, labelling the output `out_dtype` (the
/// same width as `to`).
fn launch(op: &'static str, x: &Tensor, from: DType, to: DType, out_dtype: DType) -> Result<Tensor> {
    let kernel = kernel_from(from).ok_or_else(|| Error::DTypeMismatch { op, what: "x", got: from, expected: CAST_TYPES.into() })?;
    let code = code_of(to).ok_or_else(|| Error::DTypeMismatch { op, what: "target", got: to, expected: CAST_TYPES.into() })?;
    let epl = 16 / from.size().min(to.size()) as u32;
    run(&Nary {
        op,
        kernel,
        epl,
        inputs: &[x],
        names: &["x"],
        out_shape: x.shape(),
        out_dtype,
        code: 0,
        type_code: code,
        alpha: 0.0,
        beta: 0.0,
    })
}

/// `x` converted to `dtype` (rules in the module docs) as a new contiguous tensor. `x` may be
/// any view.
///
/// # Errors
/// [`Error::DTypeMismatch`] when either type is not one of f32, f16, bf16, fp8e4m3fnuz,
/// fp8e5m2fnuz, i32; [`Error::Unsupported`] for more than 2^32 - 2^16 elements or more than 6
/// unmergeable dimensions; allocation and launch errors.
pub fn cast(x: &Tensor, dtype: DType) -> Result<Tensor> {
    launch("cast", x, x.dtype(), dtype, dtype)
}

/// A new contiguous tensor with `x`'s elements (bit copies; any dtype of 1, 2 or 4 bytes), always
/// a fresh allocation. Contiguous runs move with 128-bit loads and stores; strided and broadcast
/// views are gathered with the index math of the elementwise kernels.
///
/// ```
/// use ferrocm::{Device, Tensor, ops::elementwise as ew};
/// let dev = Device::new()?;
/// let x = Tensor::from_slice(&dev, &[1i32, 2, 3, 4, 5, 6], &[2, 3])?;
/// let xt = ew::copy(&x.transpose(0, 1)?)?; // [3, 2], contiguous
/// assert!(xt.is_contiguous());
/// assert_eq!(xt.to_vec::<i32>()?, vec![1, 4, 2, 5, 3, 6]);
/// # Ok::<(), ferrocm::Error>(())
/// ```
///
/// # Errors
/// [`Error::Unsupported`] for other element sizes, too many elements or dimensions; allocation
/// and launch errors.
pub fn copy(x: &Tensor) -> Result<Tensor> {
    // A same-type cast is a bit copy, so any dtype of a width rides on that width's cast kernel.
    let carrier = match x.dtype().size() {
        4 => DType::I32,
        2 => DType::F16,
        1 => DType::Fp8E4M3Fnuz,
        n => return Err(Error::Unsupported { op: "copy", what: format!("{n}-byte elements") }),
    };
    launch("copy", x, carrier, carrier, x.dtype())
}
