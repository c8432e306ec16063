//! AITER's flash-attention forward v3 (`fmha_v3_fwd`, hd128 bf16) on the emulator against an f64
//! CPU reference: the smallest case, KV lengths that end inside a 32-row step and inside a
//! 256-row tile, GQA, causal masks, and the log-sum-exp output.

#[path = "aiter/common.rs"]
mod common;

use common::*;
use ferrocm_emu::aiter::fmha::{Attention, Chip, HEAD_DIM, Rounding};

/// softmax(Q K^T * scale) V per head, in f64, with each query row's natural-log log-sum-exp of
/// the scaled scores. Causal: query i sees keys j <= i + (sk - sq) (bottom-right aligned).
fn reference(a: &Attention, q: &[f64], k: &[f64], v: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let d = HEAD_DIM as usize;
    let (b, hq, hk, sq, sk) = (a.batch as usize, a.heads_q as usize, a.heads_kv as usize, a.seq_q as usize, a.seq_kv as usize);
    let mut o = vec![0.0; b * sq * hq * d];
    let mut lse = vec![0.0; b * hq * sq];
    for bi in 0..b {
        for h in 0..hq {
            let kh = h / (hq / hk);
            for i in 0..sq {
                let qrow = &q[((bi * sq + i) * hq + h) * d..][..d];
                let last = if a.causal { (i + sk).saturating_sub(sq) } else { sk - 1 };
                let scores: Vec<f64> = (0..=last.min(sk - 1))
                    .map(|j| {
                        let krow = &k[((bi * sk + j) * hk + kh) * d..][..d];
                        qrow.iter().zip(krow).map(|(x, y)| x * y).sum::<f64>() * a.scale as f64
                    })
                    .collect();
                let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = scores.iter().map(|s| (s - m).exp()).sum();
                lse[(bi * hq + h) * sq + i] = m + sum.ln();
                let out = &mut o[((bi * sq + i) * hq + h) * d..][..d];
                for (j, s) in scores.iter().enumerate() {
                    let p = (s - m).exp() / sum;
                    let vrow = &v[((bi * sk + j) * hk + kh) * d..][..d];
                    for (x, y) in out.iter_mut().zip(vrow) {
                        *x += p * y;
                    }
                }
            }
        }
    }
    (o, lse)
}

fn check(a: Attention, rounding: Rounding, seed: u64) {
    let Some(wheel) = wheel() else { return };
    let (rel, _) = a.kernel(Chip::Mi300, rounding);
    let gpu = Gpu::new(&wheel, &rel);
    let d = HEAD_DIM as usize;
    let (b, hq, hk, sq, sk) = (a.batch as usize, a.heads_q as usize, a.heads_kv as usize, a.seq_q as usize, a.seq_kv as usize);
    let mut rng = Rng(seed);
    let (qb, qv) = bf16_normal(&mut rng, b * sq * hq * d, 1.0);
    let (kb, kv) = bf16_normal(&mut rng, b * sk * hk * d, 1.0);
    let (vb, vv) = bf16_normal(&mut rng, b * sk * hk * d, 1.0);
    let (qa, ka, va) = (gpu.upload_u16(&qb), gpu.upload_u16(&kb), gpu.upload_u16(&vb));
    let oa = gpu.zeros(2 * qb.len());
    let la = if a.lse { gpu.zeros(4 * b * hq * sq) } else { 0 };
    gpu.run(&a.launch(Chip::Mi300, rounding, oa, qa, ka, va, la));
    let (want_o, want_lse) = reference(&a, &qv, &kv, &vv);
    let got_o: Vec<f64> = gpu.u16s(oa, qb.len()).into_iter().map(from_bf16).collect();
    // P is rounded to bf16 before P V (the kernel's MFMAs take bf16), O to bf16 at the end:
    // a few bf16 ulps of values of size ~1.
    assert_close(&format!("{rel} {a:?}: O"), &got_o, &want_o, 3e-2);
    if a.lse {
        let got = gpu.f32s(la, b * hq * sq).into_iter().map(|x| x as f64).collect::<Vec<_>>();
        assert_close(&format!("{rel} {a:?}: LSE"), &got, &want_lse, 1e-3 * want_lse.iter().fold(1.0f64, |m, x| m.max(x.abs())));
    }
}

fn att(batch: u32, heads_q: u32, heads_kv: u32, seq_q: u32, seq_kv: u32, causal: bool, lse: bool) -> Attention {
    Attention { batch, heads_q, heads_kv, seq_q, seq_kv, causal, lse, scale: 1.0 / (HEAD_DIM as f32).sqrt() }
}

#[test]
fn smallest_case_one_tile_one_head() {
    check(att(1, 1, 1, 256, 256, false, true), Rounding::Plain, 1);
}

#[test]
fn kv_tails_inside_a_step_and_a_tile() {
    // 300 keys: a 256-row tile plus 44 (a partial 32-row step); 200 query rows: a partial tile.
    check(att(1, 2, 2, 200, 300, false, true), Rounding::Rtne, 2);
}

#[test]
fn gqa_and_batches() {
    check(att(2, 4, 2, 256, 96, false, true), Rounding::Rtne, 3);
}

#[test]
fn causal_with_lse() {
    check(att(1, 8, 8, 512, 512, true, true), Rounding::Rtne, 4);
}
