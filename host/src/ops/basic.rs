//! The first ops: fill, copy, saxpy, and the 32x32 MFMA tile product.

use crate::buffer::Buffer;
use crate::error::{Error, Result};
use crate::launch::LaunchConfig;
use ferrocm_device::abi::smoke::{
    COPY_U32, COPY_WORDS_PER_ITEM, CopyArgs, FILL_U32, FillArgs, MFMA_TILE, MFMA_TILE_32X32_F16, MFMA_TILE_K_STEP, MFMA_TILE_LDS_BYTES,
    MfmaTileArgs, SAXPY_F32, STREAM_BLOCK, SaxpyArgs,
};
use half::f16;

fn len_u32(op: &'static str, n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::Unsupported { op, what: format!("{n} elements (the kernel indexes with 32 bits)") })
}

/// Sets every element of `dst` to `value`.
///
/// # Errors
/// Buffers over 2^32 elements; launch errors.
pub fn fill_u32(dst: &mut Buffer<u32>, value: u32) -> Result<()> {
    let n = len_u32("fill_u32", dst.len())?;
    if n == 0 {
        return Ok(());
    }
    let args = FillArgs { dst: dst.as_ptr(), value, n };
    // SAFETY: the kernel writes dst[0..n], n = dst.len().
    unsafe { dst.device().launch(FILL_U32, LaunchConfig::for_items(n, STREAM_BLOCK), &args) }
}

/// Copies `src` into `dst` on the device (128-bit accesses).
///
/// # Errors
/// [`Error::LengthMismatch`], [`Error::DeviceMismatch`]; launch errors.
pub fn copy_u32(src: &Buffer<u32>, dst: &mut Buffer<u32>) -> Result<()> {
    if src.len() != dst.len() {
        return Err(Error::LengthMismatch { expected: dst.len(), actual: src.len() });
    }
    if !src.device().same_device(dst.device()) {
        return Err(Error::DeviceMismatch);
    }
    let n = len_u32("copy_u32", src.len())?;
    if n == 0 {
        return Ok(());
    }
    let args = CopyArgs { src: src.as_ptr(), dst: dst.as_ptr(), n };
    let items = n.div_ceil(COPY_WORDS_PER_ITEM);
    // SAFETY: reads src[0..n], writes dst[0..n]; allocations are 256-byte aligned (16 needed).
    unsafe { dst.device().launch(COPY_U32, LaunchConfig::for_items(items, STREAM_BLOCK), &args) }
}

/// `y = a * x + y` elementwise (the product rounded before the add).
///
/// # Errors
/// [`Error::LengthMismatch`], [`Error::DeviceMismatch`]; launch errors.
pub fn saxpy(a: f32, x: &Buffer<f32>, y: &mut Buffer<f32>) -> Result<()> {
    if x.len() != y.len() {
        return Err(Error::LengthMismatch { expected: y.len(), actual: x.len() });
    }
    if !x.device().same_device(y.device()) {
        return Err(Error::DeviceMismatch);
    }
    let n = len_u32("saxpy", x.len())?;
    if n == 0 {
        return Ok(());
    }
    let args = SaxpyArgs { x: x.as_ptr(), y: y.as_ptr(), a, n };
    // SAFETY: reads x[0..n], updates y[0..n].
    unsafe { y.device().launch(SAXPY_F32, LaunchConfig::for_items(n, STREAM_BLOCK), &args) }
}

/// One 32x32 tile `C = A * B` on the matrix cores: A is 32 x k, B is k x 32, both row-major f16;
/// returns C (32 x 32, row-major f32).
///
/// # Errors
/// [`Error::Shape`] unless k is a positive multiple of 8 and the buffers hold 32*k elements;
/// [`Error::DeviceMismatch`]; launch errors.
pub fn mfma_tile_32x32_f16(a: &Buffer<f16>, b: &Buffer<f16>, k: usize) -> Result<Buffer<f32>> {
    let (m, ks) = (MFMA_TILE as usize, MFMA_TILE_K_STEP as usize);
    if k == 0 || k % ks != 0 {
        return Err(Error::Shape { op: "mfma_tile_32x32_f16", message: format!("k = {k} is not a positive multiple of {ks}") });
    }
    if a.len() != m * k || b.len() != m * k {
        return Err(Error::Shape {
            op: "mfma_tile_32x32_f16",
            message: format!("A has {} and B {} elements, both must be 32 x {k} = {}", a.len(), b.len(), m * k),
        });
    }
    if !a.device().same_device(b.device()) {
        return Err(Error::DeviceMismatch);
    }
    let k32 = len_u32("mfma_tile_32x32_f16", k)?;
    let c = a.device().alloc::<f32>(m * m)?;
    let args = MfmaTileArgs { a: a.as_ptr(), b: b.as_ptr(), c: c.as_ptr(), k: k32 };
    let cfg = LaunchConfig::linear(1, 64).with_lds(MFMA_TILE_LDS_BYTES);
    // SAFETY: reads A (32 x k) and B (k x 32), writes C (32 x 32), all sized above.
    unsafe { a.device().launch(MFMA_TILE_32X32_F16, cfg, &args)? };
    Ok(c)
}
