//! The first ops: fill, copy, saxpy, and the 32x32 MFMA tile product.

use crate::error::{Error, Result};
use crate::runtime::buffer::Buffer;
use crate::runtime::launch::LaunchConfig;
use crate::tensor::Operands;
use ferrocm_device::abi::smoke::{
    COPY_U32, COPY_WORDS_PER_ITEM, CopyArgs, FILL_U32, FillArgs, MFMA_TILE, MFMA_TILE_32X32_F16, MFMA_TILE_K_STEP, MFMA_TILE_LDS_BYTES,
    MfmaTileArgs, SAXPY_F32, STREAM_BLOCK, SaxpyArgs,
};
use half::f16;

/// Sets every element of `dst` to `value`.
///
/// # Errors
/// Buffers over 2^32 elements; launch errors.
pub fn fill_u32(dst: &mut Buffer<u32>, value: u32) -> Result<()> {
    let mut ops = Operands::new("fill_u32", dst.device());
    let n = ops.u32("elements", dst.len())?;
    if n == 0 {
        return Ok(());
    }
    let args = FillArgs { dst: ops.buffer("dst", dst)?, value, n };
    // SAFETY: the kernel writes dst[0..n], n = dst.len().
    unsafe { ops.launch(FILL_U32, LaunchConfig::for_items(n, STREAM_BLOCK), &args) }
}

/// Copies `src` into `dst` on the device (128-bit accesses).
///
/// # Errors
/// [`Error::LengthMismatch`], [`Error::DeviceMismatch`]; launch errors.
pub fn copy_u32(src: &Buffer<u32>, dst: &mut Buffer<u32>) -> Result<()> {
    if src.len() != dst.len() {
        return Err(Error::LengthMismatch { expected: dst.len(), actual: src.len() });
    }
    let mut ops = Operands::new("copy_u32", dst.device());
    let args = CopyArgs { src: ops.buffer("src", src)?, dst: ops.buffer("dst", dst)?, n: ops.u32("elements", src.len())? };
    if args.n == 0 {
        return Ok(());
    }
    let items = args.n.div_ceil(COPY_WORDS_PER_ITEM);
    // SAFETY: reads src[0..n], writes dst[0..n]; allocations are 256-byte aligned (16 needed).
    unsafe { ops.launch(COPY_U32, LaunchConfig::for_items(items, STREAM_BLOCK), &args) }
}

/// `y = a * x + y` elementwise (the product rounded before the add).
///
/// # Errors
/// [`Error::LengthMismatch`], [`Error::DeviceMismatch`]; launch errors.
pub fn saxpy(a: f32, x: &Buffer<f32>, y: &mut Buffer<f32>) -> Result<()> {
    if x.len() != y.len() {
        return Err(Error::LengthMismatch { expected: y.len(), actual: x.len() });
    }
    let mut ops = Operands::new("saxpy", y.device());
    let args = SaxpyArgs { x: ops.buffer("x", x)?, y: ops.buffer("y", y)?, a, n: ops.u32("elements", x.len())? };
    if args.n == 0 {
        return Ok(());
    }
    // SAFETY: reads x[0..n], updates y[0..n].
    unsafe { ops.launch(SAXPY_F32, LaunchConfig::for_items(args.n, STREAM_BLOCK), &args) }
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
    let mut ops = Operands::new("mfma_tile_32x32_f16", a.device());
    let c = a.device().alloc::<f32>(m * m)?;
    let args = MfmaTileArgs { a: ops.buffer("A", a)?, b: ops.buffer("B", b)?, c: ops.buffer("C", &c)?, k: ops.u32("k", k)? };
    let cfg = LaunchConfig::linear(1, 64).with_lds(MFMA_TILE_LDS_BYTES);
    // SAFETY: reads A (32 x k) and B (k x 32), writes C (32 x 32), all sized above.
    unsafe { ops.launch(MFMA_TILE_32X32_F16, cfg, &args)? };
    Ok(c)
}
