//! What the row-resident kernels (softmax, RMSNorm, LayerNorm) share: how a row is spread over
//! lanes, the launch shapes, and the multi-block modes for rows too long for one workgroup.
//!
//! A row (or a segment of a long row) is held in registers by a group of `lanes` lanes, at most
//! [`ROW_SLOTS`] elements per lane: lane `j` holds 16-byte chunks `j, j + lanes, ...` (VECTOR_OK)
//! or elements `j, j + lanes, ...`. It is read once, reduced (DPP inside a wave, LDS across
//! waves), transformed and written once.

/// Elements one lane holds (f32 registers) with 16-byte accesses.
pub const ROW_SLOTS: u32 = 32;
/// Elements one lane holds with element accesses (rows whose length breaks 16-byte alignment):
/// each slot then needs its own bounds mask, and 32 of them live at once exhaust the SGPRs.
pub const ROW_SLOTS_SCALAR: u32 = 16;
/// Work-items per workgroup when a row takes fewer lanes than this (several rows per workgroup).
pub const ROW_MIN_BLOCK: u32 = 256;
/// Dynamic LDS every row kernel needs: the cross-wave slots of `dsl::group::reduce_waves`
/// (512 bytes) and one 16-byte slot to broadcast a row statistic. Norms add their weights
/// after it (see `norm::norm_lds_bytes`).
pub const ROW_LDS_BYTES: u32 = 512 + 16;
/// Floats per partial statistic of the multi-block modes (one 16-byte slot).
pub const ROW_STAT_FLOATS: u32 = 4;

/// The `mode` field.
pub mod mode {
    /// Whole rows, `lanes` per row, block `max(lanes, ROW_MIN_BLOCK)`, grid x = workgroups.
    /// Softmax, and norms without VECTOR_OK: one row per group (launch a group per row). Norms
    /// with VECTOR_OK: each group walks rows `group, group + groups, ...` with the weights in
    /// registers.
    pub const FUSED: u32 = 0;
    /// Long rows, first pass: workgroup `w` (block = `lanes`) reads segment `w % segs` of row
    /// `w / segs` and writes its statistic to `stats[w]`.
    pub const STATS: u32 = 1;
    /// Long rows, second pass: as STATS, but combines the row's `segs` statistics and writes
    /// the segment's outputs.
    pub const APPLY: u32 = 2;
}
