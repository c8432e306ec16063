//! Transpose of the last two axes into a new contiguous tensor, through LDS tiles so both the
//! reads and the writes are coalesced 128-bit accesses.
//!
//! ```
//! use ferrocm::{Device, Tensor, ops::movement};
//! let dev = Device::new()?;
//! let x = Tensor::from_slice(&dev, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
//! let t = movement::transpose_last2(&x)?; // [3, 2], contiguous
//! assert_eq!(t.to_vec::<f32>()?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
//! # Ok::<(), ferrocm::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::ops::elementwise::copy;
use crate::runtime::launch::LaunchConfig;
use crate::tensor::{Operands, Tensor};
use ferrocm_device::abi::movement::{
    MOVE_BLOCK, TRANSPOSE_B8, TRANSPOSE_B16, TRANSPOSE_B32, TRANSPOSE_LDS_BYTES, TRANSPOSE_TILE_ROW_BYTES, TRANSPOSE_TILE_ROWS,
    TransposeArgs, transpose_flags,
};

/// `[.., R, C] -> [.., C, R]`, contiguous (unlike [`Tensor::transpose`], which is a view).
/// Any dtype of 1, 2 or 4 bytes; `x` may be any view whose batch dimensions merge into one
/// stride (others are first copied to a contiguous tensor, one extra pass). Inputs of rank < 2
/// are copied unchanged.
///
/// # Errors
/// [`Error::Unsupported`] for other element sizes or sizes beyond 32-bit grids; allocation and
/// launch errors.
pub fn transpose_last2(x: &Tensor) -> Result<Tensor> {
    let op = "transpose_last2";
    let esize = x.dtype().size();
    let kernel = match esize {
        4 => TRANSPOSE_B32,
        2 => TRANSPOSE_B16,
        1 => TRANSPOSE_B8,
        n => return Err(Error::Unsupported { op, what: format!("{n}-byte elements") }),
    };
    let r = x.rank();
    if r < 2 {
        return copy(x);
    }
    let (rows, cols) = (x.shape()[r - 2], x.shape()[r - 1]);
    let mut shape = x.shape().to_vec();
    shape.swap(r - 2, r - 1);
    let out = Tensor::empty(x.device(), &shape, x.dtype())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let (bshape, _) = crate::ops::layout::simplify(&x.shape()[..r - 2], &x.strides()[..r - 2]);
    let x = if bshape.len() <= 1 { x.clone() } else { copy(x)? };
    let (_, bstrides) = crate::ops::layout::simplify(&x.shape()[..r - 2], &x.strides()[..r - 2]);
    let batch: usize = x.shape()[..r - 2].iter().product();
    let (rs, cs) = (x.strides()[r - 2], x.strides()[r - 1]);
    let mut ops = Operands::new(op, x.device());
    let src = ops.input_bytes("x", &x)?;
    let addr = src.addr();

    let mut flags = 0;
    if (cs == 1 || cols == 1) && addr.is_multiple_of(16) && (rs * esize).is_multiple_of(16) {
        flags |= transpose_flags::SRC_VEC;
    }
    if (rows * esize).is_multiple_of(16) {
        flags |= transpose_flags::DST_VEC;
    }
    let tile_cols = TRANSPOSE_TILE_ROW_BYTES as usize / esize;
    let dst = ops.output_bytes("out", &out)?;
    let u32_of = |v: usize, what: &str| ops.u32(what, v);
    let args = TransposeArgs {
        src,
        dst,
        src_batch_stride: bstrides.first().copied().unwrap_or(0) as u64,
        src_row_stride: rs as u64,
        src_col_stride: cs as u64,
        rows: u32_of(rows, "rows")?,
        cols: u32_of(cols, "columns")?,
        flags,
    };
    let grid = [
        u32_of(cols.div_ceil(tile_cols), "column tiles")?,
        u32_of(rows.div_ceil(TRANSPOSE_TILE_ROWS as usize), "row tiles")?,
        u32_of(batch, "batch")?,
    ];
    let cfg = LaunchConfig { grid, block: [MOVE_BLOCK, 1, 1], dynamic_lds_bytes: TRANSPOSE_LDS_BYTES };
    // SAFETY: the kernel reads elements (b, r, c) with r < rows, c < cols of a view inside its
    // storage (batch strides merged above) and writes the contiguous output sized above.
    unsafe { ops.launch(kernel, cfg, &args)? };
    Ok(out)
}
