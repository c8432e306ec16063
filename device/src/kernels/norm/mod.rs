//! RMSNorm and LayerNorm over rows held in registers (see `abi::norm`), optionally fused with
//! the residual add.
//!
//! One statistic serves both norms: per lane `(count, mean, M2)` over its elements (two passes
//! over its registers), merged across lanes with Chan's rule. LayerNorm uses `mean` and
//! `M2 / n`; RMSNorm the mean square `M2 / n + mean^2` (a sum of two non-negative terms, so as
//! accurate as summing squares). One code path for both keeps the kernel small.
//!
//! In FUSED mode a workgroup walks its rows with the weight and bias held in registers (the
//! same slots hold the same columns in every row); when it holds several rows at once it loads
//! them through LDS. Either way they are read from global memory once per workgroup.

mod entries;

use crate::abi::norm::{NormArgs, flags};
use crate::abi::rowwise::{ROW_STAT_FLOATS, mode};
use crate::dsl::dtype::Chunked;
use crate::dsl::group::reduce_group;
use crate::dsl::ids::{workgroup_size_x, workitem_id_x};
use crate::dsl::math::sqrt;
use crate::dsl::mem::store_b128;
use crate::dsl::mem::{load_chunk, store_chunk};
use crate::dsl::simd::U32x4;
use crate::dsl::sync::barrier;
use crate::kernels::rowwise::{RowLds, SLOTS, Slots, Spread, Work, row_statistic};

/// `(count, mean, M2)` of a set of values.
type Stat = (f32, f32, f32);

/// The lane's statistic over its valid slots.
#[inline(always)]
fn local<E: Chunked, const VEC: bool>(x: &Slots, sp: &Spread<VEC>) -> Stat {
    let c = sp.count::<E>() as f32;
    if c == 0.0 {
        return (0.0, 0.0, 0.0);
    }
    // Empty slots hold 0: they add nothing to the sum, but must be left out of M2.
    let mut s = 0.0;
    crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { s += x[h * 16 + j]; }); });
    let mean = s / c;
    // Valid slots are the prefix 0 .. c: weight slot s by clamp(c - s, 0, 1), arithmetic
    // rather than 32 live comparison masks.
    let mut m2 = 0.0;
    crate::unroll!(h < 2 => {
        crate::unroll!(j < 16 => {
            let d = x[h * 16 + j] - mean;
            let keep = (c - (h * 16 + j) as f32).clamp(0.0, 1.0);
            m2 += d * d * keep;
        });
    });
    (c, mean, m2)
}

/// Chan et al.'s pairwise merge, written symmetrically in `a` and `b` (so every lane of a group
/// computes the same bits); an empty side passes the other through unrounded. Selects, not
/// branches: it runs in every DPP step.
#[inline(always)]
fn merge(a: Stat, b: Stat) -> Stat {
    let n = a.0 + b.0;
    let mean = (a.0 * a.1 + b.0 * b.1) / n;
    let d = b.1 - a.1;
    let both = (n, mean, a.2 + b.2 + d * d * (a.0 * b.0 / n));
    let b_or_both = if b.0 == 0.0 { a } else { both };
    if a.0 == 0.0 { b } else { b_or_both }
}

/// The kernel. 16-byte and element accesses and the three modes are separate code (const
/// parameters) so no loop branches on them (LLVM would unswitch it into a copy per combination).
#[inline(always)]
pub fn norm<E: Chunked>(a: NormArgs) {
    if a.flags & flags::VECTOR_OK != 0 { run::<E, true>(&a) } else { run::<E, false>(&a) }
}

/// Copies `n` elements from global memory to LDS with the whole workgroup (16-byte chunks with
/// `VEC`, else elements), each work-item taking every `block`-th one: the loads are coalesced and
/// the LDS writes contiguous.
///
/// # Safety
/// `n` elements are readable at `src` and writable at `dst`; the caller barriers before reading.
#[inline(always)]
unsafe fn copy_to_lds<E: Chunked, const VEC: bool>(src: *const u8, dst: *mut u8, n: usize) {
    let (t, block) = (workitem_id_x() as usize, workgroup_size_x().max(1) as usize);
    let mut i = t;
    if VEC {
        while i < n * E::BYTES / 16 {
            // SAFETY: chunk i lies inside both (n * BYTES is a multiple of 16 under VECTOR_OK).
            unsafe { store_chunk(dst, i * 16, load_chunk(src, i * 16)) };
            i += block;
        }
    } else {
        while i < n {
            // SAFETY: i < n.
            unsafe { E::store(dst, i, E::load(src, i)) };
            i += block;
        }
    }
}

/// Weight and bias of the lane's columns (1 and 0 when absent), read for all the group's rows.
/// With several groups per workgroup they go through LDS, so the workgroup reads them from
/// global memory once, not once per group.
///
/// # Safety
/// Every wave calls this (it may barrier); weight and bias hold `len` elements when flagged.
#[inline(always)]
unsafe fn load_affine<E: Chunked, const VEC: bool>(a: &NormArgs, cols: &Spread<VEC>, col0: usize, lds: &RowLds) -> (Slots, Slots) {
    let (hw, hb) = (a.flags & flags::WEIGHT != 0, a.flags & flags::BIAS != 0);
    let shared = workgroup_size_x() / a.lanes.max(1) > 1;
    let bytes = (cols.n as usize * E::BYTES).next_multiple_of(16);
    let (mut w_src, mut b_src) = unsafe { (a.weight.add(col0 * E::BYTES), a.bias.add(col0 * E::BYTES)) };
    if shared {
        // SAFETY: the host sized the LDS for two such arrays after RowLds's slots.
        unsafe {
            let (w_lds, b_lds) = (lds.rest, lds.rest.add(bytes));
            if hw {
                copy_to_lds::<E, VEC>(w_src, w_lds, cols.n as usize);
            }
            if hb {
                copy_to_lds::<E, VEC>(b_src, b_lds, cols.n as usize);
            }
            (w_src, b_src) = (w_lds, b_lds);
        }
        barrier();
    }
    // SAFETY: the columns lie inside weight and bias (or their LDS copies).
    unsafe { (if hw { cols.load::<E>(w_src, 0.0) } else { [1.0; SLOTS] }, if hb { cols.load::<E>(b_src, 0.0) } else { [0.0; SLOTS] }) }
}

#[inline(always)]
fn run<E: Chunked, const VEC: bool>(a: &NormArgs) {
    let w = Work::new(a.lanes, a.rows, a.segs, a.mode);
    let lds = RowLds::new();
    // Weight and bias of this lane's columns, for all its rows (STATS needs neither).
    let cols = Spread::<VEC> { lane: w.lane, lanes: a.lanes, n: (a.len - w.seg * a.seg_len).min(a.seg_len) };
    let col0 = (w.seg * a.seg_len) as usize;
    let (wt, bs) = if a.mode != mode::STATS {
        // SAFETY: uniform branch: every wave calls it.
        unsafe { load_affine::<E, VEC>(a, &cols, col0, &lds) }
    } else {
        ([1.0; SLOTS], [0.0; SLOTS])
    };
    match a.mode {
        // With 16-byte accesses a group walks rows, reusing weight and bias from registers. Element
        // accesses (odd lengths) take one row per group: in a loop LLVM would keep all 32 slot
        // offsets and masks live across rows, more registers than the kernel has.
        mode::FUSED if VEC => {
            let mut it = 0;
            while it < w.iters {
                segment::<E, VEC, { mode::FUSED }>(a, &w, it, &lds, &wt, &bs);
                it += 1;
            }
        }
        mode::FUSED => segment::<E, VEC, { mode::FUSED }>(a, &w, 0, &lds, &wt, &bs),
        mode::STATS => segment::<E, VEC, { mode::STATS }>(a, &w, 0, &lds, &wt, &bs),
        _ => segment::<E, VEC, { mode::APPLY }>(a, &w, 0, &lds, &wt, &bs),
    }
}

/// One row (FUSED, iteration `it`) or segment (STATS, APPLY) of the group.
#[inline(always)]
fn segment<E: Chunked, const VEC: bool, const M: u32>(a: &NormArgs, w: &Work, it: u32, lds: &RowLds, wt: &Slots, bs: &Slots) {
    let (row, begin, n) = w.at(it, a.rows, a.len, a.seg_len);
    let sp = Spread::<VEC> { lane: w.lane, lanes: a.lanes, n };
    let off = if n > 0 { (row as usize * a.len as usize + begin as usize) * E::BYTES } else { 0 };
    // SAFETY: the segment lies inside row `row` of every row tensor; groups past the last row
    // touch nothing.
    let mut x = unsafe { sp.load::<E>(a.x.add(off), 0.0) };
    if a.flags & flags::RESIDUAL != 0 {
        // SAFETY: as above.
        let r = unsafe { sp.load::<E>(a.residual.add(off), 0.0) };
        crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { x[h * 16 + j] = E::round(x[h * 16 + j] + r[h * 16 + j]); }); });
        // SAFETY: as above.
        unsafe { sp.store::<E>(a.h_out.add(off), &x) };
    }
    // SAFETY: uniform mode and trip count: every wave calls these the same number of times.
    let st = if M == mode::APPLY {
        let stats = unsafe { a.stats.add(row as usize * a.segs as usize * ROW_STAT_FLOATS as usize) };
        unsafe { row_statistic(stats, a.segs, lds, (0.0, 0.0, 0.0), merge) }
    } else {
        unsafe { reduce_group(local::<E, VEC>(&x, &sp), a.lanes, lds.slots, it & 1, merge) }
    };
    if M == mode::STATS {
        if w.lane == 0 {
            // SAFETY: stats holds rows * segs 16-byte slots.
            unsafe {
                let p = a.stats.add((row as usize * a.segs as usize + w.seg as usize) * ROW_STAT_FLOATS as usize);
                store_b128(p as *mut u32, U32x4::from_array([st.0.to_bits(), st.1.to_bits(), st.2.to_bits(), 0]));
            }
        }
        return;
    }
    // LayerNorm: (x - mean) / sqrt(var + eps); RMSNorm: x / sqrt(mean square + eps), the mean
    // square being var + mean^2. Arithmetic selects: the flag costs no branch.
    let layer = if a.flags & flags::LAYER != 0 { 1.0 } else { 0.0 };
    let var = st.2 / a.len as f32;
    let shift = st.1 * layer;
    let sq = var + st.1 * st.1 * (1.0 - layer);
    let rstd = 1.0 / sqrt(sq + a.eps);
    let mut y = [0f32; SLOTS];
    crate::unroll!(h < 2 => {
        crate::unroll!(j < 16 => {
            let s = h * 16 + j;
            y[s] = (x[s] - shift) * rstd * wt[s] + bs[s];
        });
    });
    // SAFETY: as for the loads.
    unsafe { sp.store::<E>(a.out.add(off), &y) };
}
