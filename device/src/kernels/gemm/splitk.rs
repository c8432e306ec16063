//! Second pass of a split-K GEMM: `C = epilogue(sum over splits of the f32 partials)`.
//!
//! Split-K turns a GEMM with too few output blocks to fill the GPU (tall-skinny decode shapes,
//! small M x N with a long K) into `splits` times as many workgroups, each reducing a slice of K
//! into an f32 partial. This pass adds the partials in split order, so the result does not depend
//! on scheduling, and runs the same per-element epilogue as the one-pass kernel.
//!
//! A work-item owns `REDUCE_COLS` = 4 consecutive columns of one row: one 16-byte load per split
//! and one store of 16 (f32) or 8 (half) bytes, so each load or store instruction of a wave
//! covers consecutive bytes and uses every 64-byte line it touches whole. (8 columns per
//! work-item would give 128-bit half stores, but each of its two loads per split would then
//! use only half of every line it touches.)

use super::epilogue::{self, Params, Target};
use crate::abi::gemm::{GemmReduceArgs, REDUCE_COLS, REDUCE_THREADS, flags, out_type};
use crate::dsl::ids::{workgroup_id_x, workitem_id_x};
use crate::dsl::mem::load_b128;
use crate::dsl::simd::F32x4;

/// Partials loaded before the first of them is added (the vector path).
const LOADS_IN_FLIGHT: usize = 8;

/// The `gemm_splitk_reduce` kernel.
#[inline(always)]
pub fn splitk_reduce(a: GemmReduceArgs) {
    let per_row = a.n.div_ceil(REDUCE_COLS);
    let item = workgroup_id_x() * REDUCE_THREADS + workitem_id_x();
    // u32 arithmetic: the host keeps rows * per_row under 2^32.
    if per_row == 0 || item >= a.rows * per_row {
        return;
    }
    let (row_all, col) = ((item / per_row) as usize, ((item % per_row) * REDUCE_COLS) as usize);
    let (m, n) = (a.m.max(1) as usize, a.n as usize);
    let (batch, row) = (row_all / m, row_all % m);
    let vector = a.flags & flags::VECTOR_OK != 0;
    let full = col + REDUCE_COLS as usize <= n;

    let mut v = [0f32; 8];
    let (splits, stride) = (a.splits as usize, a.split_stride as usize);
    // SAFETY: this element's partial of split 0, inside the buffer.
    let src = unsafe { a.partial.add(row_all * n + col) };
    if vector && full {
        // Groups of `LOADS_IN_FLIGHT` splits: all their loads are issued before the first add,
        // so a group costs one memory latency, not one per split (a decode GEMV's reduction has
        // few work-items and 16 splits: it is latency-bound). The adds stay in split order.
        let mut s0 = 0;
        while s0 < splits {
            let mut x = [F32x4::splat(0.0); LOADS_IN_FLIGHT];
            crate::unroll_max!(j < LOADS_IN_FLIGHT, 8 => {
                // A uniform branch: no load past the last split.
                if s0 + j < splits {
                    // SAFETY: 4 columns inside the row of split s0 + j; 16-byte aligned (N % 4 == 0,
                    // aligned base and stride).
                    x[j] = unsafe { core::mem::transmute::<_, F32x4>(load_b128(src.wrapping_add((s0 + j) * stride) as *const u32)) };
                }
            });
            crate::unroll_max!(j < LOADS_IN_FLIGHT, 8 => {
                if s0 + j < splits {
                    let x = x[j].to_array();
                    crate::unroll_max!(e < 4, 4 => {
                        v[e] += x[e];
                    });
                }
            });
            s0 += LOADS_IN_FLIGHT;
        }
    } else {
        let mut p = src;
        for _ in 0..splits {
            crate::unroll_max!(e < 4, 4 => {
                if col + e < n {
                    // SAFETY: column inside the row.
                    v[e] += unsafe { p.add(e).read() };
                }
            });
            // The next split's partial of the same element (inside the buffer while splits
            // remain; the pointer is not read after the last).
            p = p.wrapping_add(stride);
        }
    }

    let params = Params {
        alpha: a.alpha,
        beta: a.beta,
        bias: a.bias,
        out_type: a.out_type,
        activation: a.activation,
        flags: a.flags & (flags::BIAS | flags::RESIDUAL | flags::BETA),
    };
    let c_elem = if a.out_type == out_type::F32 { 4 } else { 2 };
    // SAFETY: this batch's C and residual, sized by the host.
    let target = unsafe {
        Target {
            c: a.c.add(batch * m * n * c_elem),
            residual: a.residual.add(batch * a.batch_stride_r as usize * c_elem),
            m,
            n,
            ldc: n,
            ldr: a.ldr as usize,
            vector_ok: vector,
        }
    };
    epilogue::finish::<4>(&params, &target, v, row, col);
}
