//! Launching `copy_rows`, the kernel behind gather, index_select and concat.

use crate::error::{Error, Result};
use crate::runtime::launch::LaunchConfig;
use crate::tensor::Operands;
use ferrocm_device::abi::DevPtr;
use ferrocm_device::abi::elementwise::FastDivisor;
use ferrocm_device::abi::movement::{COPY_ROWS, CopyRowsArgs, MOVE_BLOCK};

/// A batch of row copies, in bytes (see [`CopyRowsArgs`]).
pub(crate) struct Rows {
    pub src: DevPtr<u8>,
    pub dst: DevPtr<u8>,
    /// The i32 indices, or null.
    pub index: DevPtr<i32>,
    /// The u32 error flag (with `index`), or null.
    pub error: DevPtr<u32>,
    pub outer: usize,
    pub inner_rows: usize,
    pub row_bytes: usize,
    pub index_limit: usize,
    pub src_outer_pitch: usize,
    pub src_row_pitch: usize,
    pub dst_outer_pitch: usize,
    pub dst_row_pitch: usize,
}

/// The widest power-of-two chunk (up to 16 bytes) every address, pitch and the row length are
/// multiples of: 16 makes each work-item one 128-bit load and store.
fn unit_for(values: &[u64]) -> u32 {
    let mut unit = 16u64;
    while unit > 1 && values.iter().any(|v| v % unit != 0) {
        unit /= 2;
    }
    unit as u32
}

/// Launches the row copies of `r`, whose pointers come from `ops`.
pub(crate) fn launch(ops: &Operands<'_>, r: &Rows) -> Result<()> {
    let op = ops.op();
    let rows = r.outer * r.inner_rows;
    if rows == 0 || r.row_bytes == 0 {
        return Ok(());
    }
    let unit = unit_for(&[
        r.src.addr(),
        r.dst.addr(),
        r.row_bytes as u64,
        r.src_outer_pitch as u64,
        r.src_row_pitch as u64,
        r.dst_outer_pitch as u64,
        r.dst_row_pitch as u64,
    ]);
    let cpr = r.row_bytes / unit as usize;
    let chunks = rows.checked_mul(cpr).filter(|&c| c <= u32::MAX as usize - MOVE_BLOCK as usize);
    let chunks =
        chunks.ok_or_else(|| Error::Unsupported { op, what: format!("{rows} rows of {} bytes (more than 2^32 chunks)", r.row_bytes) })?;
    let (cpr32, inner32, limit32) = (ops.u32("chunks per row", cpr)?, ops.u32("rows", r.inner_rows)?, ops.u32("axis size", r.index_limit)?);
    let (fc, fi) = (FastDivisor::new(cpr32), FastDivisor::new(inner32));
    let args = CopyRowsArgs {
        src: r.src,
        dst: r.dst,
        index: r.index,
        error: r.error,
        chunks: chunks as u32,
        chunks_per_row: cpr32,
        cpr_magic: fc.magic,
        cpr_shift: fc.shift,
        inner_rows: inner32,
        inner_magic: fi.magic,
        inner_shift: fi.shift,
        index_limit: limit32,
        unit,
        src_outer_pitch: r.src_outer_pitch as u64,
        src_row_pitch: r.src_row_pitch as u64,
        dst_outer_pitch: r.dst_outer_pitch as u64,
        dst_row_pitch: r.dst_row_pitch as u64,
    };
    let groups = (chunks as u32).div_ceil(MOVE_BLOCK);
    // SAFETY: the callers derived every pitch and count from tensors whose views lie inside their
    // storage; gather indices are checked by the kernel against index_limit before any read.
    unsafe { ops.launch(COPY_ROWS, LaunchConfig::linear(groups, MOVE_BLOCK), &args) }
}
