//! The GEMM epilogue: from the f32 accumulators to C.
//!
//! Order per element: `alpha * acc`, `+ beta * C_old` (BETA), `+ bias[col]` (BIAS), activation,
//! `+ residual` (RESIDUAL), conversion to the output type (nearest even). With PARTIAL the raw
//! accumulators are written as f32 for a split-K reduction instead.
//!
//! Accumulator layout of a 16x16 tile (GFX942.md): register e of lane l holds
//! C[4 * (l / 16) + e][l % 16].

use crate::abi::gemm::{GemmArgs, activation, flags, out_type};
use crate::dsl::convert::{bf16_to_f32, f16_bits_to_f32, f32_to_bf16, f32_to_f16_bits};
use crate::dsl::math;
use crate::dsl::simd::F32x4;
use crate::abi::Bf16;

/// Reads element `idx` of an output-typed tensor as f32.
///
/// # Safety
/// `idx` is inside the tensor.
#[inline(always)]
unsafe fn load_out(p: *const u8, ty: u32, idx: usize) -> f32 {
    unsafe {
        match ty {
            out_type::F32 => (p as *const f32).add(idx).read(),
            out_type::F16 => f16_bits_to_f32((p as *const u16).add(idx).read()),
            _ => bf16_to_f32(Bf16((p as *const u16).add(idx).read())),
        }
    }
}

/// Writes element `idx` of an output-typed tensor.
///
/// # Safety
/// `idx` is inside the tensor.
#[inline(always)]
unsafe fn store_out(p: *mut u8, ty: u32, idx: usize, v: f32) {
    unsafe {
        match ty {
            out_type::F32 => (p as *mut f32).add(idx).write(v),
            out_type::F16 => (p as *mut u16).add(idx).write(f32_to_f16_bits(v)),
            _ => (p as *mut u16).add(idx).write(f32_to_bf16(v).0),
        }
    }
}

#[inline(always)]
fn activate(kind: u32, x: f32) -> f32 {
    match kind {
        activation::RELU => {
            if x > 0.0 { x } else if x.is_nan() { x } else { 0.0 }
        }
        activation::GELU_ERF => math::gelu_erf(x),
        activation::GELU_TANH => math::gelu_tanh(x),
        activation::SILU => math::silu(x),
        _ => x,
    }
}

/// Writes this wave's `TM x TN` tiles starting at (`row0`, `col0`).
#[inline(always)]
pub fn store<const TM: usize, const TN: usize>(
    args: &GemmArgs,
    acc: &[[F32x4; TN]; TM],
    batch: usize,
    split: usize,
    row0: usize,
    col0: usize,
    lane: usize,
) {
    let (m, n) = (args.m as usize, args.n as usize);
    let ty = args.out_type;
    let partial = args.flags & flags::PARTIAL != 0;
    let c_elem = if partial { 4 } else if ty == out_type::F32 { 4 } else { 2 };
    let c_off = if partial {
        split * args.split_stride_c as usize + batch * args.batch_stride_c as usize
    } else {
        batch * args.batch_stride_c as usize
    };
    // SAFETY: offsets of this batch/split inside the buffers the host sized.
    let c = unsafe { args.c.add(c_off * c_elem) };
    let r_base = batch * args.batch_stride_r as usize;
    crate::unroll!(i < TM => {
        crate::unroll!(j < TN => {
            let v = acc[i][j].to_array();
            let col = col0 + 16 * j + lane % 16;
            crate::unroll!(e < 4 => {
                let row = row0 + 16 * i + 4 * (lane / 16) + e;
                if row < m && col < n {
                    let idx = row * args.ldc as usize + col;
                    // SAFETY: row < m, col < n: inside C (and the residual, bias) by the host's checks.
                    unsafe {
                        if partial {
                            (c as *mut f32).add(idx).write(v[e]);
                        } else {
                            let mut x = args.alpha * v[e];
                            if args.flags & flags::BETA != 0 {
                                x += args.beta * load_out(c, ty, idx);
                            }
                            if args.flags & flags::BIAS != 0 {
                                x += args.bias.add(col).read();
                            }
                            x = activate(args.activation, x);
                            if args.flags & flags::RESIDUAL != 0 {
                                x += load_out(args.residual, ty, r_base + row * args.ldr as usize + col);
                            }
                            store_out(c, ty, idx, x);
                        }
                    }
                }
            });
        });
    });
}
