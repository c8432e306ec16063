//! RMSNorm and LayerNorm over rows held in registers (see `abi::norm`), optionally fused with
//! the residual add.
//!
//! One statistic serves both norms: per lane `(count, mean, M2)` over its elements (two passes
//! over its registers), merged across lanes with Chan's rule. LayerNorm uses `mean` and
//! `M2 / n`; RMSNorm the mean square `M2 / n + mean^2` (a sum of two non-negative terms, so as
//! accurate as summing squares). One code path for both keeps the kernel small.
//!
//! Scaled before squaring: squares of finite values past 2^64 overflow f32 (`[1e38, -1e38, 0]`
//! gave NaN). A group of lanes within a wave takes the largest magnitude it holds and, when
//! that is 2^32 or more, computes its statistic on the values times `1/k` (`k` the power of two
//! at or below it, so they lie in [1, 2)); the statistic carries `k` across waves and segments,
//! where [`merge_scaled`] brings two to the larger scale. The output is `(x/k - mean) * rstd`
//! with `rstd` and `eps` in the same units. Scaling by a power of two is exact, so a row below
//! 2^32 (k = 1) is computed as without scaling, and a scaled row as by an f32 with a wider
//! exponent (up to underflow of elements 2^150 times smaller than its largest). The cost: a
//! max over the lane's registers and a max-reduction within the wave per row, the scale folding
//! into FMAs the kernel makes anyway; modeled, the bf16 4096x4096 RMSNorm benchmark went from
//! 30.0 to 30.9 us. f16 values (at most 65504) cannot overflow the statistics, so `norm_f16`
//! compiles without the scaling ([`may_scale`]): the scaled code needed 16 more VGPRs there, a
//! wave per SIMD less.
//!
//! In FUSED mode a workgroup walks its rows with the weight and bias held in registers (the
//! same slots hold the same columns in every row); when it holds several rows at once it loads
//! them through LDS. Either way they are read from global memory once per workgroup.

mod entries;
mod short;

use crate::abi::norm::{NormArgs, flags};
use crate::abi::rowwise::{ROW_STAT_FLOATS, mode};
use crate::dsl::dtype::Chunked;
use crate::dsl::group::{Words, reduce_group, reduce_lanes, reduce_waves};
use crate::dsl::ids::{workgroup_size_x, workitem_id_x};
use crate::dsl::math::{fma, sqrt};
use crate::dsl::mem::store_b128;
use crate::dsl::mem::{load_chunk, store_chunk};
use crate::dsl::simd::U32x4;
use crate::dsl::sync::barrier;
use crate::kernels::rowwise::{RowLds, SLOTS, Slots, Spread, Work, row_statistic};

/// `(count, mean, M2)` of a set of values, all in the units of one scale (below).
type Stat = (f32, f32, f32);

/// A statistic and its scale `k`, a power of two from 1 to 2^126: the values' mean is
/// `mean * k` and their M2 `M2 * k^2`. What crosses waves (LDS) and segments (the 16-byte
/// STATS slots, `k` in the fourth word).
#[derive(Clone, Copy)]
struct Scaled {
    st: Stat,
    k: f32,
}

impl Words for Scaled {
    const N: usize = 4;
    #[inline(always)]
    fn to_words(self) -> [u32; 4] {
        [self.st.0.to_bits(), self.st.1.to_bits(), self.st.2.to_bits(), self.k.to_bits()]
    }
    #[inline(always)]
    fn from_words(w: [u32; 4]) -> Self {
        Scaled { st: (f32::from_bits(w[0]), f32::from_bits(w[1]), f32::from_bits(w[2])), k: f32::from_bits(w[3]) }
    }
}

/// The statistic of nothing (scale 1, so it never raises another's scale).
const EMPTY: Scaled = Scaled { st: (0.0, 0.0, 0.0), k: 1.0 };

/// Magnitudes from here on are scaled: their squares (2^64) summed over 2^32 elements stay
/// finite, with room to spare, below it.
const SCALE_FROM_EXP: u32 = 127 + 32;
/// 2^32, the same bound as a value.
const SCALE_FROM: f32 = 4_294_967_296.0;

/// Whether values of `E` can need scaling at all: an f16 is at most 65504, so `norm_f16` keeps
/// the unscaled code (and its registers: the scaled path needs 16 more VGPRs, which would cost
/// it a wave per SIMD).
#[inline(always)]
pub(crate) fn may_scale<E: Chunked>() -> bool {
    E::MAX >= SCALE_FROM
}
/// The largest scale, 2^126, so that `1/k` is a normal number (2^-127 would be denormal).
const MAX_SCALE_EXP: u32 = 127 + 126;

/// The scale for values whose largest magnitude is `m`: 1 below 2^32 and for infinities and NaN
/// (a non-finite row is NaN throughout either way), else the power of two at or below `m`.
#[inline(always)]
pub(crate) fn scale_of(m: f32) -> f32 {
    let e = m.to_bits() >> 23; // m >= 0: the biased exponent
    if e < SCALE_FROM_EXP || e == 255 { 1.0 } else { f32::from_bits(e.min(MAX_SCALE_EXP) << 23) }
}

/// `1/k` for a scale `k` (exact: a power of two, by its exponent bits).
#[inline(always)]
pub(crate) fn recip(k: f32) -> f32 {
    f32::from_bits((254 << 23) - k.to_bits())
}

/// `k_small / k_big` for scales `k_small <= k_big` (a normal power of two in [2^-125, 1]).
#[inline(always)]
pub(crate) fn ratio(k_small: f32, k_big: f32) -> f32 {
    f32::from_bits(k_small.to_bits().wrapping_sub(k_big.to_bits()).wrapping_add(1.0f32.to_bits()))
}

/// The largest magnitude among the lane's slots (empty slots hold 0), compared as bit
/// patterns: for non-negative floats their order is the values' (a NaN counts as the largest,
/// and gets scale 1). As integers, not floats, so that LLVM does not take the max of the f16
/// inputs in their packed form and keep those registers alive next to the unpacked ones (16
/// more VGPRs, a wave per SIMD less, for `norm_f16`).
#[inline(always)]
fn max_abs(x: &Slots) -> f32 {
    let mut m = 0u32;
    crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { m = m.max(x[h * 16 + j].to_bits() & 0x7fff_ffff); }); });
    f32::from_bits(m)
}

/// The larger of two magnitudes (non-negative floats or NaN) by their bits, as in [`max_abs`].
#[inline(always)]
pub(crate) fn max_bits(a: f32, b: f32) -> f32 {
    f32::from_bits(a.to_bits().max(b.to_bits()))
}

/// The lane's statistic over its valid slots, of the values times `inv` (a power of two:
/// exact, and folded into FMAs the loops make anyway).
#[inline(always)]
fn local<E: Chunked, const VEC: bool>(x: &Slots, sp: &Spread<VEC>, inv: f32) -> Stat {
    let c = sp.count::<E>() as f32;
    if c == 0.0 {
        return (0.0, 0.0, 0.0);
    }
    // Empty slots hold 0: they add nothing to the sum, but must be left out of M2.
    let mut s = 0.0;
    crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { s = fma(x[h * 16 + j], inv, s); }); });
    let mean = s / c;
    // Valid slots are the prefix 0 .. c: weight slot s by clamp(c - s, 0, 1), arithmetic
    // rather than 32 live comparison masks.
    let mut m2 = 0.0;
    crate::unroll!(h < 2 => {
        crate::unroll!(j < 16 => {
            let d = fma(x[h * 16 + j], inv, -mean);
            let keep = (c - (h * 16 + j) as f32).clamp(0.0, 1.0);
            m2 += d * d * keep;
        });
    });
    (c, mean, m2)
}

/// Chan et al.'s pairwise merge of two statistics in the same units, written symmetrically in
/// `a` and `b` (so every lane of a DPP step computes the same bits): the weighted mean, and
/// `M2 = M2_a + M2_b + d^2 n_a n_b / n`. Equal means (`d = 0`) merge to exactly that mean
/// (their sum halved, exact and sign-symmetric): a constant row keeps its value to the last
/// bit, so LayerNorm of it is 0, not its rounding error times `1/sqrt(eps)`. An empty side
/// passes the other through unrounded. One division shared by both terms (an f32 division is a
/// dozen instructions); selects, not branches: it runs in every DPP step. (A canonical-order
/// Welford form needed 4 more SGPRs than `norm_f32` has; a `(mean_a + mean_b)/2 + ...` form
/// lost ulps of the larger mean merging one element into thousands; the original form without
/// the equal-means case measured 32.0 us instead of 30.9 on the bf16 benchmark.)
#[inline(always)]
fn merge(a: Stat, b: Stat) -> Stat {
    let n = a.0 + b.0;
    let r = 1.0 / n;
    let d = b.1 - a.1;
    let mean = if d == 0.0 { (a.1 + b.1) * 0.5 } else { (a.0 * a.1 + b.0 * b.1) * r };
    let both = (n, mean, a.2 + b.2 + d * d * (a.0 * b.0 * r));
    let b_or_both = if b.0 == 0.0 { a } else { both };
    if a.0 == 0.0 { b } else { b_or_both }
}

/// [`merge`] of statistics of different scales: the smaller-scale side is brought to the larger
/// scale first (exactly, bar underflow of a side 2^126 times smaller, which then counts only
/// in the count). Used once per row across waves or segments, not per DPP step.
#[inline(always)]
fn merge_scaled(a: Scaled, b: Scaled) -> Scaled {
    let k = a.k.max(b.k);
    let (ra, rb) = (ratio(a.k, k), ratio(b.k, k));
    let a2 = (a.st.0, a.st.1 * ra, a.st.2 * ra * ra);
    let b2 = (b.st.0, b.st.1 * rb, b.st.2 * rb * rb);
    Scaled { st: merge(a2, b2), k }
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
    // APPLY: the row's statistic before the segment is loaded, so that the segments' scaled
    // merges do not run while its 32 values are live (it sets the kernel's VGPR count).
    // SAFETY: uniform mode and trip count: every wave calls this the same number of times.
    let applied = if M == mode::APPLY {
        let stats = unsafe { a.stats.add(row as usize * a.segs as usize * ROW_STAT_FLOATS as usize) };
        if may_scale::<E>() {
            unsafe { row_statistic(stats, a.segs, lds, EMPTY, merge_scaled) }
        } else {
            // Every scale is 1.
            let st = unsafe { row_statistic(stats, a.segs, lds, EMPTY.st, merge) };
            Scaled { st, k: 1.0 }
        }
    } else {
        EMPTY
    };
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
    let sc = if M == mode::APPLY {
        applied
    } else if !may_scale::<E>() {
        Scaled { st: unsafe { reduce_group(local::<E, VEC>(&x, &sp, 1.0), a.lanes, lds.slots, it & 1, merge) }, k: 1.0 }
    } else {
        // One scale per group within a wave (its lanes merge with the cheap `merge`), carried
        // across waves with the statistic.
        let in_wave = a.lanes.min(64);
        let k = scale_of(reduce_lanes(max_abs(&x), in_wave, max_bits));
        let v = Scaled { st: reduce_lanes(local::<E, VEC>(&x, &sp, recip(k)), in_wave, merge), k };
        if a.lanes > 64 { unsafe { reduce_waves(v, a.lanes / 64, lds.slots, it & 1, merge_scaled) } } else { v }
    };
    if M == mode::STATS {
        if w.lane == 0 {
            // SAFETY: stats holds rows * segs 16-byte slots.
            unsafe {
                let p = a.stats.add((row as usize * a.segs as usize + w.seg as usize) * ROW_STAT_FLOATS as usize);
                store_b128(p as *mut u32, U32x4::from_array(sc.to_words()));
            }
        }
        return;
    }
    // LayerNorm: (x - mean) / sqrt(var + eps); RMSNorm: x / sqrt(mean square + eps), the mean
    // square being var + mean^2; all in units of the scale (x / k, eps / k^2). Arithmetic
    // selects: the flag costs no branch.
    let (st, inv) = (sc.st, recip(sc.k));
    let layer = if a.flags & flags::LAYER != 0 { 1.0 } else { 0.0 };
    let var = st.2 / a.len as f32;
    let shift = st.1 * layer;
    let sq = var + st.1 * st.1 * (1.0 - layer);
    let t = sq + a.eps * inv * inv;
    // t is 0 with eps > 0 only when eps / k^2 underflowed and the variance is 0 (a constant
    // row of values past 2^32, whose mean `merge` keeps exact): a finite rstd gives the 0 the
    // reference's (x - mean) / sqrt(eps) does, where infinity would give NaN.
    let rstd = if t == 0.0 && a.eps > 0.0 { f32::MAX } else { 1.0 / sqrt(t) };
    let mut y = [0f32; SLOTS];
    crate::unroll!(h < 2 => {
        crate::unroll!(j < 16 => {
            let s = h * 16 + j;
            y[s] = fma(x[s], inv, -shift) * rstd * wt[s] + bs[s];
        });
    });
    // SAFETY: as for the loads.
    unsafe { sp.store::<E>(a.out.add(off), &y) };
}
