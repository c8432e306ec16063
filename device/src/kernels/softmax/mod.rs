//! Softmax and log-softmax over rows held in registers (see `abi::softmax`).
//!
//! Special values follow the plain formula `exp(x - max) / sum(exp(x - max))` (the reference's):
//! a NaN in the row, or a +inf (inf - inf), makes the whole row NaN; a row of only -inf is NaN.
//! A lane whose elements are all -inf (or which has none) contributes `(-inf, 0)`, which the
//! merge rule scales by 0 rather than by `exp(-inf - -inf)`.

use crate::abi::rows::{ROW_STAT_FLOATS, mode};
use crate::abi::softmax::{SoftmaxArgs, flags};
use crate::dsl::chunk::Elem;
use crate::dsl::group::{reduce_group, reduce_lanes};
use crate::dsl::lds::LdsArena;
use crate::dsl::math::{exp2, log};
use crate::dsl::mem::store_b64;
use crate::dsl::simd::{U32x2, U32x4};
use crate::dsl::wave::lane_id;
use crate::kernels::rows::{SLOTS, Slots, Spread, Work};
use core::f32::consts::LOG2_E;
use core::intrinsics::maximumf32;

/// `e^(m - big)`, with 0 for a lane that saw only -inf (or nothing).
#[inline(always)]
fn scale(m: f32, big: f32) -> f32 {
    if m == f32::NEG_INFINITY { 0.0 } else { exp2((m - big) * LOG2_E) }
}

/// The online-softmax merge of two `(max, sum)` pairs (commutative).
#[inline(always)]
fn merge(a: (f32, f32), b: (f32, f32)) -> (f32, f32) {
    let m = maximumf32(a.0, b.0);
    (m, a.1 * scale(a.0, m) + b.1 * scale(b.0, m))
}

/// The lane's maximum, `exp(x - max)` per slot and their sum.
#[inline(always)]
fn local(x: &Slots) -> (f32, f32, Slots) {
    let mut m = f32::NEG_INFINITY;
    crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { m = maximumf32(m, x[h * 16 + j]); }); });
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

/// The kernel.
#[inline(always)]
pub fn softmax<E: Elem>(a: SoftmaxArgs) {
    let w = Work::new(a.lanes, a.rows, a.segs, a.mode);
    let vector = a.flags & flags::VECTOR_OK != 0;
    let log_mode = a.flags & flags::LOG != 0;
    let slots = LdsArena::new().take::<U32x4>(32);
    let len = a.len as usize;
    let lanes = a.lanes as usize;

    if a.mode == mode::FUSED {
        let mut it = 0;
        while it < w.iters {
            let row = w.row + it * w.row_step;
            let live = row < a.rows;
            let sp = Spread { lane: w.lane, lanes, n: if live { len } else { 0 }, vector };
            let off = if live { row as usize * len * E::BYTES } else { 0 };
            // SAFETY: live rows lie inside x (rows * len elements); dead groups load nothing.
            let x = unsafe { sp.load::<E>(a.x.add(off), f32::NEG_INFINITY) };
            let (m, s, e) = local(&x);
            // SAFETY: every wave runs the same iterations (uniform trip count).
            let (big, sum) = unsafe { reduce_group((m, s), a.lanes, slots, it & 1, merge) };
            let y = finish(log_mode, &x, &e, m, big, sum);
            // SAFETY: as for the load; out has x's shape.
            unsafe { sp.store::<E>(a.out.add(off), &y) };
            it += 1;
        }
        return;
    }

    // Long rows: one segment per workgroup.
    let begin = w.seg as usize * a.seg_len as usize;
    let sp = Spread { lane: w.lane, lanes, n: (len - begin).min(a.seg_len as usize), vector };
    let off = (w.row as usize * len + begin) * E::BYTES;
    // SAFETY: the segment lies inside row `row` of x.
    let x = unsafe { sp.load::<E>(a.x.add(off), f32::NEG_INFINITY) };
    let stat = w.row as usize * a.segs as usize;
    if a.mode == mode::STATS {
        let (m, s, _) = local(&x);
        // SAFETY: one call, every wave.
        let (big, sum) = unsafe { reduce_group((m, s), a.lanes, slots, 0, merge) };
        if w.lane == 0 {
            // SAFETY: stats holds rows * segs slots of ROW_STAT_FLOATS floats (16-byte aligned).
            unsafe {
                let p = a.stats.add((stat + w.seg as usize) * ROW_STAT_FLOATS as usize) as *mut u32;
                store_b64(p, U32x2::from_array([big.to_bits(), sum.to_bits()]));
            }
        }
        return;
    }
    // APPLY: each wave combines the row's segment statistics (lane p reads segments p, p + 64, ...).
    let mut st = (f32::NEG_INFINITY, 0.0);
    let mut p = lane_id() as usize;
    while p < a.segs as usize {
        // SAFETY: p < segs; written by the STATS pass.
        let q = unsafe { a.stats.add((stat + p) * ROW_STAT_FLOATS as usize) };
        st = merge(st, unsafe { (q.read(), q.add(1).read()) });
        p += 64;
    }
    let (big, sum) = reduce_lanes(st, 64, merge);
    let y = if log_mode {
        let lg = log(sum);
        let mut y = [0f32; SLOTS];
        crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { y[h * 16 + j] = (x[h * 16 + j] - big) - lg; }); });
        y
    } else {
        let r = 1.0 / sum;
        let mut y = [0f32; SLOTS];
        crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { y[h * 16 + j] = exp2((x[h * 16 + j] - big) * LOG2_E) * r; }); });
        y
    };
    // SAFETY: the segment lies inside row `row` of out.
    unsafe { sp.store::<E>(a.out.add(off), &y) };
}

/// The outputs of a fused row from the lane's `x`, `e = exp(x - m)` and the row's `(big, sum)`.
#[inline(always)]
fn finish(log_mode: bool, x: &Slots, e: &Slots, m: f32, big: f32, sum: f32) -> Slots {
    let mut y = [0f32; SLOTS];
    if log_mode {
        let lg = log(sum);
        crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { y[h * 16 + j] = (x[h * 16 + j] - big) - lg; }); });
    } else {
        // e * e^(m - big) / sum: one multiply per element.
        let c = scale(m, big) / sum;
        crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { y[h * 16 + j] = e[h * 16 + j] * c; }); });
    }
    y
}
