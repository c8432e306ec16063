//! How the row-resident kernels (softmax, RMSNorm, LayerNorm) spread rows over lanes and
//! workgroups; shared by [`softmax`](super::softmax) and [`norm`](super::norm).

use crate::error::{Error, Result};
use crate::tensor::u32_of;
use ferrocm_device::abi::rowwise::{ROW_MIN_BLOCK, ROW_SLOTS, ROW_SLOTS_SCALAR};

/// Workgroups a fused row kernel launches at most; each walks its share of the rows. 2 per
/// compute unit of an MI300X (304 CUs): with 4+ waves each holding 8 KB of loads in flight that
/// is several times the ~11 KB a CU needs to cover HBM latency, and per-column data (norm
/// weights) is read once per workgroup, under 4% of the bytes of an 8192 x 8192 bf16 norm.
pub const ROW_WORKGROUPS: usize = 2 * 304;

/// A row kernel launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowPlan {
    /// Lanes per row (FUSED) or per segment.
    pub lanes: u32,
    /// Work-items per workgroup.
    pub block: u32,
    /// Workgroups (FUSED); rows * segs for the two-pass path.
    pub workgroups: u32,
    /// Segments per row: 1 = one fused pass; more = STATS then APPLY passes.
    pub segs: u32,
    /// Elements per segment.
    pub seg_len: u32,
    /// 16-byte accesses.
    pub vector: bool,
}

/// The plan for `rows` rows of `len` elements of `esize` bytes, for a kernel taking up to
/// `max_lanes` lanes per row, walking several rows per group when `persistent` (else one
/// group per row); `vector` when every operand allows 16-byte accesses (aligned
/// bases, `len * esize` a multiple of 16). Rows longer than `max_lanes` times the slots per lane
/// (`ROW_SLOTS`, or `ROW_SLOTS_SCALAR` without 16-byte accesses) are cut in segments of that
/// size (two passes).
///
/// # Errors
/// [`Error::Unsupported`] for sizes of 2^32 or more.
pub fn plan_rows(
    op: &'static str,
    rows: usize,
    len: usize,
    esize: usize,
    vector: bool,
    max_lanes: u32,
    persistent: bool,
) -> Result<RowPlan> {
    let too_big = |what: &str, v: usize| Error::Unsupported { op, what: format!("{what} = {v} (more than 2^32 - 1)") };
    let (rows_u, len_u) = (u32_of(op, "rows", rows)?, u32_of(op, "row length", len)?);
    let slots = if vector { ROW_SLOTS } else { ROW_SLOTS_SCALAR };
    let max_fused = max_lanes * slots;
    if len_u > max_fused {
        let segs = len_u.div_ceil(max_fused);
        let wgs = rows_u.checked_mul(segs).ok_or_else(|| too_big("rows x segments", rows * segs as usize))?;
        return Ok(RowPlan { lanes: max_lanes, block: max_lanes, workgroups: wgs, segs, seg_len: max_fused, vector });
    }
    // Each lane holds at most `slots` elements; a group reads at least 64 contiguous bytes per
    // instruction (4 lanes of 16 bytes, or 64 / esize lanes of one element).
    let min_lanes = if vector { 4 } else { (64 / esize) as u32 };
    let lanes = len_u.div_ceil(slots).next_power_of_two().max(min_lanes);
    let block = lanes.max(ROW_MIN_BLOCK);
    let groups = rows_u.div_ceil(block / lanes);
    let workgroups = if persistent { groups.min(ROW_WORKGROUPS as u32) } else { groups };
    Ok(RowPlan { lanes, block, workgroups: workgroups.max(1), segs: 1, seg_len: len_u, vector })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_plans() {
        let p = plan_rows("t", 8192, 8192, 4, true, 1024, true).unwrap();
        assert_eq!((p.lanes, p.block, p.segs, p.workgroups), (256, 256, 1, ROW_WORKGROUPS as u32));
        let p = plan_rows("t", 3, 10, 2, false, 1024, true).unwrap();
        assert_eq!((p.lanes, p.block, p.workgroups), (32, 256, 1));
        let p = plan_rows("t", 2, 100_000, 2, true, 1024, true).unwrap();
        assert_eq!((p.lanes, p.segs, p.workgroups, p.seg_len), (1024, 4, 8, 32768));
        let p = plan_rows("t", 2, 4097, 2, false, 256, false).unwrap();
        assert_eq!((p.lanes, p.block, p.segs, p.seg_len), (256, 256, 2, 4096));
        let p = plan_rows("t", 8192, 8192, 4, true, 1024, false).unwrap();
        assert_eq!(p.workgroups, 8192);
    }
}
