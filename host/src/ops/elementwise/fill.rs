//! Fill: every element of a contiguous tensor set to one value, any dtype.
//!
//! ```
//! use ferrocm::{Device, DType, ops::elementwise as ew};
//! let dev = Device::new()?;
//! let t = ew::full(&dev, &[2, 3], DType::Bf16, 0.5)?;
//! assert!(t.to_vec::<ferrocm::bf16>()?.iter().all(|v| v.to_f32() == 0.5));
//! ew::fill(&t, -1.0)?; // in place
//! # Ok::<(), ferrocm::Error>(())
//! ```

use crate::dtype::{DType, Element, Fp8E4M3Fnuz, Fp8E5M2Fnuz};
use crate::error::{Error, Result};
use crate::runtime::device::Device;
use crate::runtime::launch::LaunchConfig;
use crate::tensor::{Operands, Tensor};
use ferrocm_device::abi::elementwise::{ELT_BLOCK, FILL_B128, FillPatternArgs};
use half::{bf16, f16};

/// `value` as the little-endian bytes of one `dtype` element, converted like
/// [`Element::from_f64`]: nearest even for floats (fp8 saturating), toward zero and saturating
/// for integers (NaN -> 0).
pub fn element_bytes(dtype: DType, value: f64) -> Vec<u8> {
    fn bytes<T: Element>(value: f64) -> Vec<u8> {
        bytemuck::bytes_of(&T::from_f64(value)).to_vec()
    }
    match dtype {
        DType::F32 => bytes::<f32>(value),
        DType::F16 => bytes::<f16>(value),
        DType::Bf16 => bytes::<bf16>(value),
        DType::Fp8E4M3Fnuz => bytes::<Fp8E4M3Fnuz>(value),
        DType::Fp8E5M2Fnuz => bytes::<Fp8E5M2Fnuz>(value),
        DType::I8 => bytes::<i8>(value),
        DType::I32 => bytes::<i32>(value),
        DType::U32 => bytes::<u32>(value),
    }
}

/// Sets every element of `t` (a contiguous view: a whole tensor or a contiguous slice of one) to
/// `value` converted to its dtype (see [`element_bytes`]). Works for any dtype and any start
/// alignment: aligned 16-byte chunks with 128-bit stores, the ragged ends byte by byte.
///
/// # Errors
/// [`Error::Unsupported`] for a non-contiguous view; launch errors.
pub fn fill(t: &Tensor, value: f64) -> Result<()> {
    fill_bytes(t, &element_bytes(t.dtype(), value))
}

/// Like [`fill`], with the element given as its raw little-endian bytes (for bit patterns such as
/// NaN payloads).
///
/// # Errors
/// [`Error::InvalidArgument`] when `elem` is not one element of `t`'s dtype; as [`fill`].
pub fn fill_bytes(t: &Tensor, elem: &[u8]) -> Result<()> {
    let esize = t.dtype().size();
    if elem.len() != esize {
        return Err(Error::InvalidArgument {
            op: "fill",
            message: format!("{} bytes given for a {}-byte {}", elem.len(), esize, t.dtype()),
        });
    }
    if !t.is_contiguous() {
        return Err(Error::Unsupported {
            op: "fill",
            what: "a non-contiguous view (fill a contiguous tensor, or copy the view first)".into(),
        });
    }
    let bytes = (t.numel() * esize) as u64;
    if bytes == 0 {
        return Ok(());
    }
    let mut ops = Operands::new("fill", t.device());
    let dst = ops.output_bytes("t", t)?;
    let start = dst.addr();
    // Byte k of the pattern is the byte stored at addresses == k mod 16; since 16 is a multiple
    // of the element size, that is element byte (k - start) mod esize.
    let mut pattern = [0u8; 16];
    for (k, p) in pattern.iter_mut().enumerate() {
        *p = elem[(k + 16 - (start % 16) as usize) % esize];
    }
    let word = |i: usize| u32::from_le_bytes([pattern[4 * i], pattern[4 * i + 1], pattern[4 * i + 2], pattern[4 * i + 3]]);
    let chunks = (start + bytes).div_ceil(16) - start / 16;
    let groups = ops.u32("workgroups", chunks.div_ceil(ELT_BLOCK as u64) as usize)?;
    let args = FillPatternArgs { dst, bytes, pattern0: word(0), pattern1: word(1), pattern2: word(2), pattern3: word(3) };
    // SAFETY: the kernel writes exactly [start, start + bytes), the view's elements.
    unsafe { ops.launch(FILL_B128, LaunchConfig::linear(groups, ELT_BLOCK), &args) }
}

/// A new contiguous tensor of `shape` and `dtype` with every element `value` (see [`fill`]).
///
/// # Errors
/// Allocation and launch errors.
pub fn full(device: &Device, shape: &[usize], dtype: DType, value: f64) -> Result<Tensor> {
    let t = Tensor::empty(device, shape, dtype)?;
    fill(&t, value)?;
    Ok(t)
}
