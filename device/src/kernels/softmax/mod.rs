//! Softmax and log-softmax over rows held in registers (see `abi::softmax`).
//!
//! Special values follow the plain formula `exp(x - max) / sum(exp(x - max))` (the reference's):
//! a NaN in the row, or a +inf (inf - inf), makes the whole row NaN; a row of only -inf is NaN.
//! A lane whose elements are all -inf (or which has none) contributes `(-inf, 0)`, which the
//! merge rule scales by 0 rather than by `exp(-inf - -inf)`.

mod entries;

use crate::abi::rowwise::{ROW_STAT_FLOATS, mode};
use crate::abi::softmax::{SoftmaxArgs, flags};
use crate::dsl::dtype::Chunked;
use crate::dsl::group::reduce_group;
use crate::dsl::math::max_nan;
use crate::dsl::math::{exp2_fast as exp2, log};
use crate::dsl::mem::store_b64;
use crate::dsl::simd::U32x2;
use crate::kernels::rowwise::{RowLds, SLOTS, Slots, Spread, Work, row_statistic};
use core::f32::consts::LOG2_E;

/// `e^(m - big)`, with 0 for a lane that saw only -inf (or nothing).
#[inline(always)]
fn scale(m: f32, big: f32) -> f32 {
    if m == f32::NEG_INFINITY { 0.0 } else { exp2((m - big) * LOG2_E) }
}

/// The online-softmax merge of two `(max, sum)` pairs (commutative).
#[inline(always)]
fn merge(a: (f32, f32), b: (f32, f32)) -> (f32, f32) {
    let m = max_nan(a.0, b.0);
    (m, a.1 * scale(a.0, m) + b.1 * scale(b.0, m))
}

/// The lane's maximum, `exp(x - max)` per slot and their sum.
#[inline(always)]
fn local(x: &Slots) -> (f32, f32, Slots) {
    let mut m = f32::NEG_INFINITY;
    crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { m = max_nan(m, x[h * 16 + j]); }); });
    let mut e = [0f32; SLOTS];
    let mut s = 0.0;
    if m != f32::NEG_INFINITY {
        crate::unroll!(h < 2 => {
            crate::unroll!(j < 16 => {
                e[h * 16 + j] = exp2((x[h * 16 + j] - m) * LOG2_E);
                s += e[h * 16 + j];
            });
        });
    }
    (m, s, e)
}

/// The kernel. Softmax and log-softmax, 16-byte and element accesses, and the three modes are
/// separate code (const parameters), so no loop branches on a flag (LLVM would unswitch it into
/// a copy per combination) and each path keeps only the registers it needs: `exp(x - m)` for
/// softmax, `x` for log-softmax.
#[inline(always)]
pub fn softmax<E: Chunked>(a: SoftmaxArgs) {
    match (a.flags & flags::LOG != 0, a.flags & flags::VECTOR_OK != 0) {
        (false, true) => run::<E, false, true>(&a),
        (false, false) => run::<E, false, false>(&a),
        (true, true) => run::<E, true, true>(&a),
        (true, false) => run::<E, true, false>(&a),
    }
}

#[inline(always)]
fn run<E: Chunked, const LOG: bool, const VEC: bool>(a: &SoftmaxArgs) {
    let w = Work::new(a.lanes, a.rows, a.segs, a.mode);
    let lds = RowLds::new();
    // FUSED: one row per group (the host launches a group per row; no loop, so LLVM has nothing
    // to hoist per-slot offsets out of, and keeps them out of registers).
    match a.mode {
        mode::FUSED => segment::<E, LOG, VEC, { mode::FUSED }>(a, &w, 0, &lds),
        mode::STATS => segment::<E, LOG, VEC, { mode::STATS }>(a, &w, 0, &lds),
        _ => segment::<E, LOG, VEC, { mode::APPLY }>(a, &w, 0, &lds),
    }
}

/// One row (FUSED, iteration `it`) or segment (STATS, APPLY) of the group.
#[inline(always)]
fn segment<E: Chunked, const LOG: bool, const VEC: bool, const M: u32>(a: &SoftmaxArgs, w: &Work, it: u32, lds: &RowLds) {
    let (row, begin, n) = w.at(it, a.rows, a.len, a.seg_len);
    let sp = Spread::<VEC> { lane: w.lane, lanes: a.lanes, n };
    let off = if n > 0 { (row as usize * a.len as usize + begin as usize) * E::BYTES } else { 0 };
    // SAFETY: the segment lies inside row `row` of x; groups past the last row load nothing.
    let x = unsafe { sp.load::<E>(a.x.add(off), f32::NEG_INFINITY) };
    let (m, s, e) = local(&x);
    // SAFETY: uniform mode and trip count: every wave calls these the same number of times.
    let (big, sum) = if M == mode::APPLY {
        let stats = unsafe { a.stats.add(row as usize * a.segs as usize * ROW_STAT_FLOATS as usize) };
        unsafe { row_statistic(stats, a.segs, lds, (f32::NEG_INFINITY, 0.0), merge) }
    } else {
        unsafe { reduce_group((m, s), a.lanes, lds.slots, it & 1, merge) }
    };
    if M == mode::STATS {
        if w.lane == 0 {
            // SAFETY: stats holds rows * segs slots of ROW_STAT_FLOATS floats (16-byte aligned).
            unsafe {
                let p = a.stats.add((row as usize * a.segs as usize + w.seg as usize) * ROW_STAT_FLOATS as usize);
                store_b64(p as *mut u32, U32x2::from_array([big.to_bits(), sum.to_bits()]));
            }
        }
    } else {
        let y = finish::<LOG>(&x, &e, m, big, sum);
        // SAFETY: as for the load; out has x's shape.
        unsafe { sp.store::<E>(a.out.add(off), &y) };
    }
}

/// The outputs of a fused row from the lane's `x`, `e = exp(x - m)` and the row's `(big, sum)`.
#[inline(always)]
fn finish<const LOG: bool>(x: &Slots, e: &Slots, m: f32, big: f32, sum: f32) -> Slots {
    let mut y = [0f32; SLOTS];
    if LOG {
        let lg = log(sum);
        crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { y[h * 16 + j] = (x[h * 16 + j] - big) - lg; }); });
    } else {
        // e * e^(m - big) / sum: one multiply per element.
        let c = scale(m, big) / sum;
        crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { y[h * 16 + j] = e[h * 16 + j] * c; }); });
    }
    y
}
