//! RMSNorm and LayerNorm over rows held in registers (see `abi::norm`), optionally fused with
//! the residual add.
//!
//! In FUSED mode a workgroup walks its rows with the weight and bias held in registers (the
//! same slots hold the same columns in every row), so they are read once per workgroup, not
//! once per row.

mod stat;

use crate::abi::norm::{NormArgs, flags};
use crate::abi::rows::{ROW_STAT_FLOATS, mode};
use crate::dsl::chunk::Elem;
use crate::dsl::group::{reduce_group, reduce_lanes};
use crate::dsl::lds::LdsArena;
use crate::dsl::math::sqrt;
use crate::dsl::mem::store_b128;
use crate::dsl::simd::U32x4;
use crate::dsl::wave::lane_id;
use crate::kernels::rows::{SLOTS, Slots, Spread, Work};
use stat::{Layer, Rms, Stat};

/// The kernel: RMSNorm or LayerNorm.
#[inline(always)]
pub fn norm<E: Elem>(a: NormArgs) {
    if a.flags & flags::LAYER != 0 { run::<E, Layer>(&a) } else { run::<E, Rms>(&a) }
}

/// `x` (rows of `len`) plus, with RESIDUAL, the residual, rounded to `E` and written to `h_out`.
///
/// # Safety
/// The segment at element offset `off` lies inside x (and residual, h_out).
#[inline(always)]
unsafe fn load_input<E: Elem>(a: &NormArgs, sp: &Spread, off: usize, residual: bool) -> Slots {
    let b = off * E::BYTES;
    unsafe {
        let mut x = sp.load::<E>(a.x.add(b), 0.0);
        if residual {
            let r = sp.load::<E>(a.residual.add(b), 0.0);
            crate::unroll!(h < 2 => { crate::unroll!(j < 16 => { x[h * 16 + j] = E::round(x[h * 16 + j] + r[h * 16 + j]); }); });
            sp.store::<E>(a.h_out.add(b), &x);
        }
        x
    }
}

/// Weight and bias slots for a segment starting at column `col` (1 and 0 when absent).
///
/// # Safety
/// Columns `col .. col + sp.n` of weight and bias are readable when their flags are set.
#[inline(always)]
unsafe fn load_affine<E: Elem>(a: &NormArgs, sp: &Spread, col: usize) -> (Slots, Slots) {
    unsafe {
        let w = if a.flags & flags::WEIGHT != 0 { sp.load::<E>(a.weight.add(col * E::BYTES), 0.0) } else { [1.0; SLOTS] };
        let b = if a.flags & flags::BIAS != 0 { sp.load::<E>(a.bias.add(col * E::BYTES), 0.0) } else { [0.0; SLOTS] };
        (w, b)
    }
}

#[inline(always)]
fn run<E: Elem, S: Stat>(a: &NormArgs) {
    let w = Work::new(a.lanes, a.rows, a.segs, a.mode);
    let vector = a.flags & flags::VECTOR_OK != 0;
    let residual = a.flags & flags::RESIDUAL != 0;
    let slots = LdsArena::new().take::<U32x4>(32);
    let len = a.len as usize;
    let lanes = a.lanes as usize;
    let n = len as f32;

    if a.mode == mode::FUSED {
        let full = Spread { lane: w.lane, lanes, n: len, vector };
        // SAFETY: weight and bias hold len elements when present.
        let (wt, bs) = unsafe { load_affine::<E>(a, &full, 0) };
        let mut it = 0;
        while it < w.iters {
            let row = w.row + it * w.row_step;
            let live = row < a.rows;
            let sp = Spread { n: if live { len } else { 0 }, ..full };
            let off = if live { row as usize * len } else { 0 };
            // SAFETY: live rows lie inside the tensors; dead groups touch nothing.
            let x = unsafe { load_input::<E>(a, &sp, off, residual) };
            let st = S::local::<E>(&x, &sp);
            // SAFETY: uniform trip count: every wave calls the same number of times.
            let st = unsafe { reduce_group(st, a.lanes, slots, it & 1, S::merge) };
            let y = apply::<S>(&x, st, n, a.eps, &wt, &bs);
            // SAFETY: as for the load.
            unsafe { sp.store::<E>(a.out.add(off * E::BYTES), &y) };
            it += 1;
        }
        return;
    }

    // Long rows: one segment per workgroup.
    let begin = w.seg as usize * a.seg_len as usize;
    let sp = Spread { lane: w.lane, lanes, n: (len - begin).min(a.seg_len as usize), vector };
    let off = w.row as usize * len + begin;
    // SAFETY: the segment lies inside its row.
    let x = unsafe { load_input::<E>(a, &sp, off, residual) };
    let stat = w.row as usize * a.segs as usize;
    if a.mode == mode::STATS {
        // SAFETY: one call, every wave.
        let st = unsafe { reduce_group(S::local::<E>(&x, &sp), a.lanes, slots, 0, S::merge) };
        if w.lane == 0 {
            let words = S::to_stat(st);
            // SAFETY: stats holds rows * segs 16-byte slots.
            unsafe { store_b128(a.stats.add((stat + w.seg as usize) * ROW_STAT_FLOATS as usize) as *mut u32, U32x4::from_array(words)) };
        }
        return;
    }
    // APPLY: every wave combines the row's statistics (lane p reads segments p, p + 64, ...).
    let mut st = S::empty();
    let mut p = lane_id() as usize;
    while p < a.segs as usize {
        // SAFETY: p < segs, written by the STATS pass.
        let q = unsafe { a.stats.add((stat + p) * ROW_STAT_FLOATS as usize) };
        st = S::merge(st, S::from_stat(unsafe { [q.read().to_bits(), q.add(1).read().to_bits(), q.add(2).read().to_bits(), 0] }));
        p += 64;
    }
    let st = reduce_lanes(st, 64, S::merge);
    // SAFETY: the segment's columns of weight and bias.
    let (wt, bs) = unsafe { load_affine::<E>(a, &sp, begin) };
    let y = apply::<S>(&x, st, n, a.eps, &wt, &bs);
    // SAFETY: the segment lies inside its row of out.
    unsafe { sp.store::<E>(a.out.add(off * E::BYTES), &y) };
}

/// The normalised, scaled and shifted slots.
#[inline(always)]
fn apply<S: Stat>(x: &Slots, st: S::T, n: f32, eps: f32, w: &Slots, b: &Slots) -> Slots {
    let (shift, var) = S::shift_and_square(st, n);
    let rstd = 1.0 / sqrt(var + eps);
    let mut y = [0f32; SLOTS];
    crate::unroll!(h < 2 => {
        crate::unroll!(j < 16 => {
            let s = h * 16 + j;
            y[s] = (x[s] - shift) * rstd * w[s] + b[s];
        });
    });
    y
}
