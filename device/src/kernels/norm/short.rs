//! Short rows, one wave each: a decode step normalises one token's hidden state (SmolLM2: 576
//! values) twice per layer, and BERT's rows are 384 long.
//!
//! The general kernel (`super::norm`) is built for long rows: 32 unrolled slots per lane and a
//! `(count, mean, M2)` statistic merged with a division in every cross-lane step. On a 576-value
//! f16 row that is ~880 VALU instructions per wave, modeled at 6.9 us a launch, most of it
//! waiting on that chain. Here a lane holds at most [`SHORT_CHUNKS`] 16-byte chunks of its row
//! (chunk `lane + 64 c`), the statistic is plain sums reduced across the wave by butterfly
//! shuffles (every lane gets the same bits), and there is no LDS and no barrier.
//!
//! Numerics are the general kernel's: f32 statistics; RMSNorm divides by the root of the mean
//! square, LayerNorm subtracts the mean first and takes the mean of squared deviations (two
//! passes over the registers, so no `E[x^2] - E[x]^2` cancellation); rows whose largest
//! magnitude is 2^32 or more are scaled by a power of two before squaring (`super::scale_of`),
//! which f16 rows cannot need.

use super::{max_bits, may_scale, recip, scale_of};
use crate::abi::norm::{NormArgs, SHORT_CHUNKS, flags};
use crate::dsl::dtype::Chunked;
use crate::dsl::group::reduce_lanes;
use crate::dsl::ids::{workgroup_id_x, workgroup_size_x, workitem_id_x};
use crate::dsl::math::{abs, fma, sqrt};
use crate::dsl::mem::{load_chunk, store_chunk};
use crate::dsl::wave::{lane_id, readfirstlane, reduce_sum_f32};

/// The `norm_short_*` kernel: row `workgroup * waves + wave`, whole in one wave's registers, at
/// most `CHUNKS` 16-byte chunks a lane (a compile-time count: the unrolled work is per chunk,
/// so rows that fit half of [`SHORT_CHUNKS`] take the half kernel).
#[inline(always)]
pub fn norm_short<E: Chunked, const CHUNKS: usize>(a: NormArgs) {
    const { assert!(CHUNKS <= SHORT_CHUNKS as usize) };
    let waves = workgroup_size_x() / 64;
    let row = workgroup_id_x() * waves + readfirstlane(workitem_id_x() / 64);
    if row >= a.rows {
        return; // a whole wave: the row count need not be a multiple of the waves
    }
    let lane = lane_id() as usize;
    let per = E::PER_CHUNK;
    // The host sends rows of whole chunks (VECTOR_OK), at most 64 * CHUNKS of them.
    let chunks = a.len as usize / per;
    let base = row as usize * a.len as usize * E::BYTES;
    let residual = a.flags & flags::RESIDUAL != 0;

    // Every load is unconditional, from a clamped chunk (and from x in place of an absent
    // operand), its value selected afterwards: a load under a branch gets its own wait before
    // the branches join, and the eight of them would run one after another (measured: 3.3 us
    // modeled for a one-row add_rms_norm instead of one memory latency).
    let (hw, hb) = (a.flags & flags::WEIGHT != 0, a.flags & flags::BIAS != 0);
    let (w_src, b_src) = (if hw { a.weight } else { a.x }, if hb { a.bias } else { a.x });
    let r_src = if residual { a.residual } else { a.x };
    let mut wt = [[0f32; 8]; CHUNKS];
    let mut bs = [[0f32; 8]; CHUNKS];
    let mut v = [[0f32; 8]; CHUNKS];
    let mut r = [[0f32; 8]; CHUNKS];
    crate::unroll!(c < CHUNKS => {
        let col = 16 * (lane + 64 * c).min(chunks - 1);
        // SAFETY: chunk `col / 16` (clamped into the row) of weight and bias (`len` elements
        // each when flagged; else x's first row stands in), and of row `row` of x and the
        // residual (host-checked sizes).
        unsafe {
            wt[c] = E::unpack(load_chunk(w_src, col));
            bs[c] = E::unpack(load_chunk(b_src, col));
            v[c] = E::unpack(load_chunk(a.x, base + col));
            r[c] = E::unpack(load_chunk(r_src, base + col));
        }
    });
    // The row (plus the residual, rounded to the type as stored), zeros past its end.
    crate::unroll!(c < CHUNKS => {
        let at = lane + 64 * c;
        let valid = at < chunks;
        crate::unroll!(e < 8 => {
            let x = if residual { E::round(v[c][e] + r[c][e]) } else { v[c][e] };
            v[c][e] = if valid { x } else { 0.0 };
            wt[c][e] = if hw { wt[c][e] } else { 1.0 };
            bs[c][e] = if hb { bs[c][e] } else { 0.0 };
        });
        if residual && valid {
            // SAFETY: chunk `at` of row `row` of h_out.
            unsafe { store_chunk(a.h_out, base + 16 * at, E::pack(&v[c])) };
        }
    });

    // Scaling (types whose squares can overflow f32): 1 / the power of two at or below the
    // row's largest magnitude, when that is 2^32 or more.
    let inv = if may_scale::<E>() {
        let mut m = 0f32;
        crate::unroll!(c < CHUNKS => { crate::unroll!(e < 8 => { if e < per { m = max_bits(m, abs(v[c][e])); } }); });
        recip(scale_of(reduce_lanes(m, 64, max_bits)))
    } else {
        1.0
    };

    let n = a.len as f32;
    let layer = a.flags & flags::LAYER != 0;
    let mean = if layer {
        let mut s = 0.0;
        crate::unroll!(c < CHUNKS => { crate::unroll!(e < 8 => { if e < per { s = fma(v[c][e], inv, s); } }); });
        reduce_sum_f32(s) / n
    } else {
        0.0
    };
    // Squared deviations from the mean (RMSNorm: from 0) of the row's own values only.
    let mut q = 0.0;
    crate::unroll!(c < CHUNKS => {
        if lane + 64 * c < chunks {
            crate::unroll!(e < 8 => {
                if e < per {
                    let d = fma(v[c][e], inv, -mean);
                    q = fma(d, d, q);
                }
            });
        }
    });
    let t = reduce_sum_f32(q) / n + a.eps * inv * inv;
    // As in the general kernel: t is 0 with eps > 0 only when eps / k^2 underflowed on a
    // constant row; a finite rstd gives the reference's 0. An infinite t comes only from an
    // infinite element (scaling keeps finite rows' squares in range): the row is NaN
    // throughout, as the general kernel's statistic makes it (NaN elements give NaN anyway).
    let rstd = if t == 0.0 && a.eps > 0.0 {
        f32::MAX
    } else if t == f32::INFINITY {
        f32::NAN
    } else {
        1.0 / sqrt(t)
    };

    crate::unroll!(c < CHUNKS => {
        let at = lane + 64 * c;
        if at < chunks {
            let mut y = [0f32; 8];
            crate::unroll!(e < 8 => {
                if e < per {
                    y[e] = fma(v[c][e], inv, -mean) * rstd * wt[c][e] + bs[c][e];
                }
            });
            // SAFETY: chunk `at` of row `row` of the output.
            unsafe { store_chunk(a.out, base + 16 * at, E::pack(&y)) };
        }
    });
}
