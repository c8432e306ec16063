//! Which output block a workgroup computes: an order that keeps each of MI300X's 8 XCDs on a
//! compact block of C.
//!
//! Why: MI300X's 8 XCDs (accelerator dies) each have their own 4 MiB L2 (GFX942.md; ROCm's "HIP
//! device properties and topology on CDNA"), and the dispatcher hands consecutive workgroups to
//! consecutive XCDs, round robin: workgroup i runs on XCD i % 8. In the plain row-major order the 8 workgroups of a row of blocks
//! land on 8 different dies, so every die reads every A row and B column: each L2 serves little
//! reuse. Here the workgroups that share an XCD get consecutive block numbers, and block numbers
//! walk C in groups of [`GROUP_ROWS`] block rows, column by column within a group, so the blocks
//! one XCD computes at a time form a compact rectangle (at 4096x4096 in 128x128 blocks: each XCD
//! takes 128 blocks, an 8 x 16 rectangle) whose A rows and B columns its L2 serves to several
//! workgroups.
//!
//! The cycle model does not model L2 (it takes every non-compulsory byte as an L2 hit), so this
//! order changes no modeled figure; it is for the hardware. It is a permutation of the blocks, so
//! every block is still computed once.

use crate::dsl::math::SmallDiv;

/// XCDs of an MI300X, the dispatcher's round-robin width.
pub const XCDS: u32 = 8;
/// Block rows per group of the within-die order.
pub const GROUP_ROWS: u32 = 8;

/// The block (column, row) of C that workgroup (`wx`, `wy`) of a `gx x gy` grid of blocks
/// computes.
#[inline(always)]
pub fn block(wx: u32, wy: u32, gx: u32, gy: u32) -> (u32, u32) {
    // Dispatch order: x fastest.
    walk(dispatch_rank(wy * gx + wx, gx * gy), gx, gy)
}

/// The rank of workgroup `i` of `total` in an order where the workgroups that share an XCD are
/// consecutive: workgroup i runs on XCD i % 8, the (i / 8)-th there, and XCD x takes a
/// contiguous run of ranks (the first `total % 8` XCDs one more). A permutation of `0..total`.
#[inline(always)]
pub fn dispatch_rank(i: u32, total: u32) -> u32 {
    let (xcd, nth) = (i % XCDS, i / XCDS);
    let (per, extra) = (total / XCDS, total % XCDS);
    xcd * per + xcd.min(extra) + nth
}

/// Block number `t < gx * gy` of a `gx x gy` grid as (column, row): groups of [`GROUP_ROWS`]
/// block rows, column-major inside a group, so that consecutive numbers form compact rectangles.
#[inline(always)]
pub fn walk(t: u32, gx: u32, gy: u32) -> (u32, u32) {
    let group = t / (GROUP_ROWS * gx);
    let first_row = group * GROUP_ROWS;
    let rows = (gy - first_row).min(GROUP_ROWS);
    let within = t - group * GROUP_ROWS * gx;
    (within / rows, first_row + within % rows)
}

/// [`walk`] for grids of fewer than 2^20 blocks (`gx * gy`), its two divisions through f32
/// ([`SmallDiv`]: four instructions each, where an integer division by a run-time value is
/// about twenty); the same blocks.
#[inline(always)]
pub fn walk_small(t: u32, gx: u32, gy: u32) -> (u32, u32) {
    let (group, within) = SmallDiv::new(GROUP_ROWS * gx).div_rem(t);
    let first_row = group * GROUP_ROWS;
    let rows = (gy - first_row).min(GROUP_ROWS);
    let (col, row) = SmallDiv::new(rows).div_rem(within);
    (col, first_row + row)
}
