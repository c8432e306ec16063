//! Launching `copy_rows`, the kernel behind gather, index_select and concat.

use crate::error::{Error, Result};
use crate::runtime::launch::LaunchConfig;
use ferrocm_device::abi::DevPtr;
use ferrocm_device::abi::elementwise::FastDivisor;
use ferrocm_device::abi::movement::{COPY_ROWS, CopyRowsArgs, MOVE_BLOCK};

/// A batch of row copies, in bytes (see [`CopyRowsArgs`]).
pub(crate) struct Rows {
    pub op: &'static str,
    pub src: u64,
    pub dst: u64,
    /// Device address of the i32 indices, or 0.
    pub index: u64,
    /// Device address of the u32 error flag (with `index`), or 0.
    pub error: u64,
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

fn too_big(op: &'static str, what: String) -> Error {
    Error::Unsupported { op, what }
}

pub(crate) fn launch(dev: &crate::Device, r: &Rows) -> Result<()> {
    let rows = r.outer * r.inner_rows;
    if rows == 0 || r.row_bytes == 0 {
        return Ok(());
    }
    let unit = unit_for(&[
        r.src,
        r.dst,
        r.row_bytes as u64,
        r.src_outer_pitch as u64,
        r.src_row_pitch as u64,
        r.dst_outer_pitch as u64,
        r.dst_row_pitch as u64,
    ]);
    let cpr = r.row_bytes / unit as usize;
    let chunks = rows.checked_mul(cpr).filter(|&c| c <= u32::MAX as usize - MOVE_BLOCK as usize);
    let chunks = chunks.ok_or_else(|| too_big(r.op, format!("{rows} rows of {} bytes (more than 2^32 chunks)", r.row_bytes)))?;
    let u32_of = |v: usize, what: &str| u32::try_from(v).map_err(|_| too_big(r.op, format!("{what} = {v} (more than 2^32)")));
    let (cpr32, inner32, limit32) = (u32_of(cpr, "chunks per row")?, u32_of(r.inner_rows, "rows")?, u32_of(r.index_limit, "axis size")?);
    let (fc, fi) = (FastDivisor::new(cpr32), FastDivisor::new(inner32));
    let args = CopyRowsArgs {
        src: DevPtr::from_addr(r.src),
        dst: DevPtr::from_addr(r.dst),
        index: DevPtr::from_addr(r.index),
        error: DevPtr::from_addr(r.error),
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
    unsafe { dev.launch(COPY_ROWS, LaunchConfig::linear(groups, MOVE_BLOCK), &args) }
}
