//! AITER's fused-MoE stage 1 (`fmoe_2stages`) on the emulator against an f64 CPU reference: fp8
//! and int8 tokens and weights with per-token and per-row scales, the routing weight applied
//! or not, every sorted-row block size, small and larger shapes.

#[path = "aiter/common.rs"]
mod common;

use common::*;
use ferrocm_emu::aiter::moe::{self, Activation, OneStageBuffers, Stage1, Stage1Buffers, Stage1Family, Stage1Kernel};

/// E4M3FNUZ bits -> value (bias 8, 0x80 NaN, no infinities; GFX942.md).
fn fp8(b: u8) -> f64 {
    let s = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (((b >> 3) & 0xf) as i32, (b & 7) as f64 / 8.0);
    if e == 0 { s * m * 2f64.powi(1 - 8) } else { s * (1.0 + m) * 2f64.powi(e - 8) }
}

/// A random 1-byte value of the family's type (fp8 of moderate size, never NaN; int8), with
/// its value.
fn byte(rng: &mut Rng, int8: bool) -> (u8, f64) {
    if int8 {
        let v = rng.below(255) as i32 - 127;
        (v as i8 as u8, v as f64)
    } else {
        // Exponents 4..=10 (2^-4..2^2), any mantissa, either sign.
        let b = ((4 + rng.below(7)) << 3 | rng.below(8) | rng.below(2) << 7) as u8;
        (b, fp8(b))
    }
}

fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

fn stage1(family: Stage1Family, pick: impl Fn(&Stage1Kernel) -> bool, s: Stage1, seed: u64) {
    let Some(wheel) = wheel() else { return };
    let kernels = moe::stage1_kernels(&wheel, family).unwrap();
    let k = kernels.iter().find(|k| pick(k)).unwrap_or_else(|| panic!("no {} kernel picked", family.name()));
    let gpu = Gpu::new(&wheel, &k.file);
    let int8 = family == Stage1Family::PerTokenInt8;
    let doweight = family == Stage1Family::PerTokenFp8DoWeight;
    let (t, d, n, e, topk) = (s.tokens as usize, s.model_dim as usize, s.inter_dim as usize, s.experts as usize, s.topk as usize);
    let mut rng = Rng(seed);
    let (xb, xv): (Vec<u8>, Vec<f64>) = (0..t * d).map(|_| byte(&mut rng, int8)).unzip();
    let (wb, wv): (Vec<u8>, Vec<f64>) = (0..e * 2 * n * d).map(|_| byte(&mut rng, int8)).unzip();
    let xs: Vec<f32> = (0..t).map(|_| (0.5 + rng.uniform()) as f32 / if int8 { 512.0 } else { 8.0 }).collect();
    let ws: Vec<f32> = (0..e * 2 * n).map(|_| (0.5 + rng.uniform()) as f32 / if int8 { 512.0 } else { 8.0 }).collect();
    let (ids, weights) = moe::random_routing(s.tokens, s.topk, s.experts, seed + 1);
    let sorted = moe::sort(&ids, &weights, s.tokens, s.topk, s.experts, k.tile_m);
    let out = gpu.zeros(2 * t * topk * n);
    let b = Stage1Buffers {
        out,
        x: gpu.upload(&xb),
        w: gpu.upload(&moe::shuffle_16x16(&wb, 2 * n, d)),
        valid: gpu.upload_u32(&sorted.valid),
        x_scale: gpu.upload_f32(&xs),
        w_scale: gpu.upload_f32(&ws),
        sorted_ids: gpu.upload_u32(&sorted.ids),
        sorted_experts: gpu.upload_u32(&sorted.experts),
        sorted_weights: if doweight { gpu.upload_f32(&sorted.weights) } else { 0 },
    };
    gpu.run(&s.launch(k, &b).unwrap());
    let mut want = vec![0.0; t * topk * n];
    for tok in 0..t {
        for kk in 0..topk {
            let ex = ids[tok * topk + kk] as usize;
            for j in 0..n {
                let dot = |row: usize| -> f64 {
                    let w = &wv[(ex * 2 * n + row) * d..][..d];
                    xv[tok * d..][..d].iter().zip(w).map(|(a, b)| a * b).sum::<f64>() * xs[tok] as f64 * ws[ex * 2 * n + row] as f64
                };
                // The do-weight kernels scale gate and up by the routing weight before the
                // activation (`torch_moe_stage1(doweight=True)`).
                let w = if doweight { weights[tok * topk + kk] as f64 } else { 1.0 };
                let act = match s.activation {
                    Activation::Silu => silu(dot(j) * w),
                    Activation::Gelu => unreachable!("the suite checks silu"),
                };
                want[(tok * topk + kk) * n + j] = act * dot(n + j) * w;
            }
        }
    }
    let got: Vec<f64> = gpu.u16s(out, t * topk * n).into_iter().map(from_bf16).collect();
    let scale = want.iter().fold(1e-3f64, |m, x| m.max(x.abs()));
    // f32 sums of exact products, f32 scaling and activation, one bf16 rounding.
    assert_close(&format!("{} {s:?}", k.symbol), &got, &want, scale * 2f64.powi(-7));
}

fn shape(tokens: u32, model_dim: u32, inter_dim: u32, experts: u32, topk: u32) -> Stage1 {
    Stage1 { tokens, model_dim, inter_dim, experts, topk, activation: Activation::Silu }
}

#[test]
fn fp8_smallest_case() {
    stage1(Stage1Family::PerTokenFp8, |k| k.tile_m == 32 && k.tile_n == 64 && k.symbol.contains("pf3"), shape(4, 256, 128, 4, 2), 1);
}

#[test]
fn fp8_do_weight() {
    stage1(
        Stage1Family::PerTokenFp8DoWeight,
        |k| k.tile_m == 32 && k.tile_n == 128 && k.symbol.contains("pf3"),
        shape(16, 256, 256, 8, 2),
        2,
    );
}

#[test]
fn int8() {
    stage1(Stage1Family::PerTokenInt8, |k| k.tile_m == 64 && k.tile_n == 128, shape(16, 512, 128, 4, 2), 3);
}

#[test]
fn fp8_two_stage_prefetch_needs_waves_in_step() {
    // The pf2 kernels read the output staging area right after a barrier and refill it ~70
    // instructions later without another: right only when the waves advance together (the
    // emulator's round-robin turns, `exec/workgroup.rs`).
    stage1(Stage1Family::PerTokenFp8, |k| k.tile_m == 32 && k.tile_n == 256 && k.symbol.contains("pf2"), shape(16, 384, 512, 4, 2), 5);
}

#[test]
fn fp8_larger_case() {
    stage1(Stage1Family::PerTokenFp8, |k| k.tile_m == 32 && k.tile_n == 256, shape(64, 1024, 512, 8, 2), 4);
}

/// The one-stage fused MoE (`fmoe`, per-token fp8, silu): gate/up, activation, down projection
/// and the routing-weighted sum over each token's experts, into a zeroed bf16 output.
fn one_stage(symbol: &str, s: Stage1, cu_num: u32, seed: u64) -> f64 {
    let Some(wheel) = wheel() else { return 0.0 };
    let k = moe::one_stage_kernel(&wheel, symbol).unwrap().unwrap_or_else(|| panic!("no table lists {symbol}"));
    let gpu = Gpu::new(&wheel, &k.file);
    let (t, d, n, e, topk) = (s.tokens as usize, s.model_dim as usize, s.inter_dim as usize, s.experts as usize, s.topk as usize);
    let mut rng = Rng(seed);
    let (xb, xv): (Vec<u8>, Vec<f64>) = (0..t * d).map(|_| byte(&mut rng, false)).unzip();
    let (w1b, w1v): (Vec<u8>, Vec<f64>) = (0..e * 2 * n * d).map(|_| byte(&mut rng, false)).unzip();
    let (w2b, w2v): (Vec<u8>, Vec<f64>) = (0..e * d * n).map(|_| byte(&mut rng, false)).unzip();
    let xs: Vec<f32> = (0..t).map(|_| (0.5 + rng.uniform()) as f32 / 64.0).collect();
    let w1s: Vec<f32> = (0..e * 2 * n).map(|_| (0.5 + rng.uniform()) as f32 / 64.0).collect();
    let w2s: Vec<f32> = (0..e * d).map(|_| (0.5 + rng.uniform()) as f32 / 64.0).collect();
    let (ids, weights) = moe::random_routing(s.tokens, s.topk, s.experts, seed + 1);
    let sorted = moe::sort(&ids, &weights, s.tokens, s.topk, s.experts, 32);
    let out = gpu.zeros(2 * t * d);
    let b = OneStageBuffers {
        out,
        x: gpu.upload(&xb),
        w1: gpu.upload(&moe::shuffle_16x16(&w1b, 2 * n, d)),
        w2: gpu.upload(&moe::shuffle_16x16(&w2b, d, n)),
        valid: gpu.upload_u32(&sorted.valid),
        x_scale: gpu.upload_f32(&xs),
        w1_scale: gpu.upload_f32(&w1s),
        w2_scale: gpu.upload_f32(&w2s),
        sorted_ids: gpu.upload_u32(&sorted.ids),
        sorted_weights: gpu.upload_f32(&sorted.weights),
        sorted_experts: gpu.upload_u32(&sorted.experts),
    };
    gpu.run(&s.one_stage_launch(&k, &b, cu_num).unwrap());
    let mut want = vec![0.0; t * d];
    for tok in 0..t {
        for kk in 0..topk {
            let ex = ids[tok * topk + kk] as usize;
            let dot1 = |row: usize| -> f64 {
                let w = &w1v[(ex * 2 * n + row) * d..][..d];
                xv[tok * d..][..d].iter().zip(w).map(|(a, b)| a * b).sum::<f64>() * xs[tok] as f64 * w1s[ex * 2 * n + row] as f64
            };
            let act: Vec<f64> = (0..n).map(|j| silu(dot1(j)) * dot1(n + j)).collect();
            for o in 0..d {
                let w = &w2v[(ex * d + o) * n..][..n];
                let v: f64 = act.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() * w2s[ex * d + o] as f64;
                want[tok * d + o] += weights[tok * topk + kk] as f64 * v;
            }
        }
    }
    let got: Vec<f64> = gpu.u16s(out, t * d).into_iter().map(from_bf16).collect();
    let scale = want.iter().fold(1e-3f64, |m, x| m.max(x.abs()));
    // The kernel quantizes the activations to fp8 (3 mantissa bits) before the down
    // projection: about 2^-4 relative per term, partly averaging out over inter_dim terms.
    let worst = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0.0, f64::max) / scale;
    assert_close(&format!("{symbol} {s:?}"), &got, &want, scale * 0.05);
    worst
}

#[test]
fn one_stage_fp8_blocks_and_persistent() {
    let s = shape(8, 512, 256, 4, 2);
    let a = one_stage("_ZN5aiter45fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_32x256E", s, 304, 6);
    let b = one_stage("_ZN5aiter48fmoe_bf16_pertokenFp8_g1u1_vs_silu_1tg_ps_32x256E", s, 80, 6);
    eprintln!("worst relative errors {a:.4} {b:.4}");
}
