//! Error bounds of attention outputs against the f64 reference (the suites' tolerances; see
//! `tests/tests/attention.rs` for their derivation).

use crate::tensors::{close, rounding, uniform};
use ferrocm::reference::attention::Mask;
use ferrocm::{DType, Device, Tensor};
use proptest::prelude::*;

const U: f64 = 1.0 / (1u64 << 24) as f64;

/// The relative rounding of probabilities to the input type before `P V` (round to nearest).
pub fn u_p(dtype: DType) -> f64 {
    if dtype == DType::Bf16 { 2f64.powi(-8) } else { 2f64.powi(-11) }
}

/// Per query row of the packed layout `[rows, heads, d]`: the error scale of the module notes.
pub struct Bounds {
    /// `W`, `rel` per (row, head).
    pub w: Vec<f64>,
    /// See `w`.
    pub rel: Vec<f64>,
    /// The LSE bound per (head, row) in the LSE layout `[heads, rows]`.
    pub lse_tol: Vec<f64>,
}

/// The bounds of packed sequences (`cu_q`, `cu_k` offsets) under `mask`.
#[allow(clippy::too_many_arguments)]
pub fn bounds(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    cu_q: &[usize],
    cu_k: &[usize],
    hq: usize,
    hk: usize,
    d: usize,
    scale: f64,
    mask: &Mask,
    dtype: DType,
) -> Bounds {
    let tq = q.len() / (hq * d);
    let (mut w, mut rel, mut lse_tol) = (vec![0.0; tq * hq], vec![0.0; tq * hq], vec![0.0; tq * hq]);
    for b in 0..cu_q.len() - 1 {
        let (q0, lq, k0, lk) = (cu_q[b], cu_q[b + 1] - cu_q[b], cu_k[b], cu_k[b + 1] - cu_k[b]);
        let key_len = mask.key_lens.as_ref().map_or(lk, |kl| kl[b].min(lk));
        for h in 0..hq {
            let kh = h / (hq / hk);
            for i in 0..lq {
                let qi = &q[((q0 + i) * hq + h) * d..][..d];
                let keys: Vec<usize> = (0..lk).filter(|&j| mask.allows(i, j, lq, lk, key_len)).collect();
                if keys.is_empty() {
                    continue;
                }
                let row = |j: usize| ((k0 + j) * hk + kh) * d;
                let s: Vec<f64> =
                    keys.iter().map(|&j| scale * qi.iter().zip(&k[row(j)..row(j) + d]).map(|(a, b)| a * b).sum::<f64>()).collect();
                let qa = keys
                    .iter()
                    .map(|&j| scale * qi.iter().zip(&k[row(j)..row(j) + d]).map(|(a, b)| (a * b).abs()).sum::<f64>())
                    .fold(0.0, f64::max);
                let sm = s.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
                let sa = s.iter().fold(0.0f64, |m, &x| m.max(x.abs()));
                let total: f64 = s.iter().map(|&x| (x - sm).exp()).sum();
                let wi: f64 = keys
                    .iter()
                    .zip(&s)
                    .map(|(&j, &x)| (x - sm).exp() / total * v[row(j)..row(j) + d].iter().fold(0.0f64, |m, x| m.max(x.abs())))
                    .sum();
                let at = (q0 + i) * hq + h;
                let common = 64.0 + lk as f64 + 4.0 * sa + (d as f64 / 4.0 + 8.0) * qa;
                w[at] = wi;
                rel[at] = u_p(dtype) + U * common;
                let lse = sm + total.ln();
                lse_tol[h * tq + q0 + i] = U * (common + 4.0 * lse.abs());
            }
        }
    }
    Bounds { w, rel, lse_tol }
}

/// Compares the packed output and LSE with the reference's.
#[allow(clippy::too_many_arguments)]
pub fn compare(
    got: &[f64],
    want: &[f64],
    got_lse: &[f64],
    want_lse: &[f64],
    bounds: &Bounds,
    hq: usize,
    d: usize,
    dtype: DType,
    what: &str,
) -> Result<(), TestCaseError> {
    let tq = got.len() / (hq * d);
    for r in 0..tq {
        for h in 0..hq {
            let at = r * hq + h;
            for e in 0..d {
                let (g, x) = (got[at * d + e], want[at * d + e]);
                let tol = bounds.rel[at] * bounds.w[at] + rounding(dtype, x);
                prop_assert!(close(g, x, tol), "{what}: row {r} head {h} [{e}] = {g}, want {x} (tol {tol:e})");
            }
            let (g, x) = (got_lse[h * tq + r], want_lse[h * tq + r]);
            prop_assert!(
                close(g, x, bounds.lse_tol[h * tq + r]),
                "{what}: lse of row {r} head {h} = {g}, want {x} (tol {:e})",
                bounds.lse_tol[h * tq + r]
            );
        }
    }
    Ok(())
}

/// cos/sin tables (`[rows, half]` f32) of real rotary angles, `p * 10^(-i / half)` for
/// position `p` and pair `i`: the rotary suites' tables.
pub fn rope_tables(rows: usize, half: usize) -> (Tensor, Tensor) {
    rope_tables_on(crate::device(), rows, half)
}

/// [`rope_tables`] on device `dev`.
pub fn rope_tables_on(dev: &Device, rows: usize, half: usize) -> (Tensor, Tensor) {
    let angles: Vec<f64> = (0..rows * half).map(|i| (i / half) as f64 * 10f64.powf(-((i % half) as f64) / half as f64)).collect();
    let cos = Tensor::from_slice(dev, &angles.iter().map(|a| a.cos() as f32).collect::<Vec<_>>(), &[rows, half]).unwrap();
    let sin = Tensor::from_slice(dev, &angles.iter().map(|a| a.sin() as f32).collect::<Vec<_>>(), &[rows, half]).unwrap();
    (cos, sin)
}

/// i32 slots `[tokens]` for a paged cache of `pages` pages of 16: the slots dealt in a shuffled
/// order (Fisher-Yates on `seed`).
pub fn shuffled_slots(tokens: usize, pages: usize, seed: &mut u64) -> Tensor {
    let mut order: Vec<usize> = (0..pages * 16).collect();
    for i in (1..order.len()).rev() {
        let j = ((uniform(seed) + 1.0) / 2.0 * (i + 1) as f64) as usize % (i + 1);
        order.swap(i, j);
    }
    let slots: Vec<i32> = order[..tokens].iter().map(|&s| s as i32).collect();
    Tensor::from_slice(crate::device(), &slots, &[tokens]).unwrap()
}
