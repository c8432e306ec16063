//! Flash attention on the device against the f64 reference (`ferrocm::reference::attention`).
//!
//! Tolerances, per output element of query row `i` (with `u = 2^-24`, `S_i` the largest
//! `|scale * s_ij|` and `Q_i` the largest `scale * sum_d |q_id k_jd|` over its allowed keys,
//! `lk` the keys of its sequence, `W_i = sum_j p_ij |v_j|` from the reference):
//! - `|err| <= rel_i W_i + half an ulp of the output` with
//!   `rel_i = u_P + u (64 + lk + 4 S_i + (d / 4 + 8) Q_i)`, where `u_P` is the rounding of the
//!   probabilities to the input type before `P V` (bf16: `2^-8`, f16: `2^-11`, relative), the
//!   `Q_i` term the f32 accumulation of the scores by the matrix cores (shifting `p` by as much,
//!   relatively), `S_i` the rounding of `scale * s - max` before `exp2` and `lk` the f32 sums;
//! - log-sum-exp: `|err| <= u (64 + lk + 4 |lse_i| + 4 S_i + (d / 4 + 8) Q_i)`;
//! - rows without an allowed key: exactly 0 and `-inf`.
//!
//! Shapes are ragged (no multiple of any tile), over every head dimension, causal or not, with
//! sliding windows, key padding, GQA ratios 1, 2, 3, 4 and 8, BSHD and BHSD layouts, and packed
//! variable-length batches.

use ferrocm::ops::attention::{self, FlashOptions};
use ferrocm::reference::attention::{self as reference, Mask, Shape};
use ferrocm::{DType, Error, Tensor};
use ferrocm_tests::attention::{bounds, compare};
use ferrocm_tests::tensors::{read, tensor, uniform};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

/// How a `[batch, seq, heads, d]` operand is stored.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// As the logical shape.
    Bshd,
    /// `[batch, heads, seq, d]`, viewed with `transpose(1, 2)`.
    Bhsd,
}

/// A logical `[b, s, h, d]` tensor with values uniform in `[-scale, scale)`, stored per
/// `layout`, and its values (row-major in the logical order, rounded to the dtype).
fn operand(shape: [usize; 4], dtype: DType, scale: f64, layout: Layout, seed: &mut u64) -> (Tensor, Vec<f64>) {
    let [b, s, h, d] = shape;
    let n = b * s * h * d;
    let raw: Vec<f64> = (0..n).map(|_| uniform(seed) * scale).collect();
    match layout {
        Layout::Bshd => tensor(&raw, &shape, dtype),
        Layout::Bhsd => {
            // raw is in [b, h, s, d] storage order.
            let (t, vals) = tensor(&raw, &[b, h, s, d], dtype);
            let mut logical = vec![0.0; n];
            for bi in 0..b {
                for hi in 0..h {
                    for si in 0..s {
                        for di in 0..d {
                            logical[((bi * s + si) * h + hi) * d + di] = vals[((bi * h + hi) * s + si) * d + di];
                        }
                    }
                }
            }
            (t.transpose(1, 2).unwrap(), logical)
        }
    }
}

#[derive(Clone, Debug)]
struct Case {
    dtype: DType,
    d: usize,
    batch: usize,
    seq_q: usize,
    seq_k: usize,
    hk: usize,
    group: usize,
    causal: bool,
    left: Option<usize>,
    right: Option<usize>,
    key_lens: Option<Vec<usize>>,
    layout: Layout,
    seed: u64,
}

impl Case {
    /// Attention over every key (no mask, no key padding), in BHSD layout when `bhsd`; at head
    /// dimension 256 groups of at most 2 query heads, as the suite has always drawn them.
    #[allow(clippy::too_many_arguments)]
    fn plain(dtype: DType, d: usize, batch: usize, seq_q: usize, seq_k: usize, hk: usize, group: usize, bhsd: bool, seed: u64) -> Case {
        Case {
            dtype,
            d,
            batch,
            seq_q,
            seq_k,
            hk,
            group: if d == 256 { group.min(2) } else { group },
            causal: false,
            left: None,
            right: None,
            key_lens: None,
            layout: if bhsd { Layout::Bhsd } else { Layout::Bshd },
            seed,
        }
    }
}

fn check(c: &Case) -> Result<(), TestCaseError> {
    let mut seed = c.seed;
    let hq = c.hk * c.group;
    let (q, qv) = operand([c.batch, c.seq_q, hq, c.d], c.dtype, 1.0, c.layout, &mut seed);
    let (k, kv) = operand([c.batch, c.seq_k, c.hk, c.d], c.dtype, 1.0, c.layout, &mut seed);
    let (v, vv) = operand([c.batch, c.seq_k, c.hk, c.d], c.dtype, 1.0, c.layout, &mut seed);
    let opts = FlashOptions {
        causal: c.causal,
        window_left: c.left,
        window_right: c.right,
        key_lengths: c.key_lens.as_deref(),
        ..Default::default()
    };
    let (o, lse) = attention::flash_with_lse(&q, &k, &v, &opts).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(o.shape(), &[c.batch, c.seq_q, hq, c.d]);
    prop_assert_eq!(lse.shape(), &[c.batch, hq, c.seq_q]);
    let scale = 1.0 / (c.d as f64).sqrt();
    let right = if c.causal { Some(0) } else { c.right };
    let mask = Mask { left: c.left, right, key_lens: c.key_lens.clone() };
    let shape = Shape { batch: c.batch, seq_q: c.seq_q, seq_k: c.seq_k, heads_q: hq, heads_kv: c.hk, head_dim: c.d };
    let (want, want_lse) = reference::flash(&qv, &kv, &vv, shape, scale, &mask);
    // The bounds and LSE in the packed layout: batch b is rows b * seq ...
    let cu_q: Vec<usize> = (0..=c.batch).map(|b| b * c.seq_q).collect();
    let cu_k: Vec<usize> = (0..=c.batch).map(|b| b * c.seq_k).collect();
    let bd = bounds(&qv, &kv, &vv, &cu_q, &cu_k, hq, c.hk, c.d, scale, &mask, c.dtype);
    let to_packed = |l: &[f64]| {
        let mut p = vec![0.0; l.len()];
        for b in 0..c.batch {
            for h in 0..hq {
                for i in 0..c.seq_q {
                    p[h * c.batch * c.seq_q + b * c.seq_q + i] = l[(b * hq + h) * c.seq_q + i];
                }
            }
        }
        p
    };
    compare(&read(&o), &want, &to_packed(&read(&lse)), &to_packed(&want_lse), &bd, hq, c.d, c.dtype, &format!("{c:?}"))
}

fn dims() -> impl Strategy<Value = usize> {
    prop::sample::select(vec![32usize, 64, 96, 128, 256])
}

fn lens() -> impl Strategy<Value = usize> {
    prop_oneof![1usize..40, 40usize..200, Just(64), Just(128), Just(129)]
}

fn case() -> impl Strategy<Value = Case> {
    (
        (prop::sample::select(vec![DType::Bf16, DType::F16]), dims(), 1usize..3, lens(), lens(), 1usize..3),
        (
            prop::sample::select(vec![1usize, 2, 3, 4, 8]),
            any::<bool>(),
            prop::option::weighted(0.25, 0usize..80),
            prop::option::weighted(0.15, 0usize..40),
            any::<bool>(),
            any::<bool>(),
            any::<u64>(),
        ),
    )
        .prop_map(|((dtype, d, batch, seq_q, seq_k, hk), (group, causal, left, right, pad, bhsd, seed))| {
            let mut s = seed;
            let key_lens =
                pad.then(|| (0..batch).map(|_| ((uniform(&mut s) + 1.0) / 2.0 * (seq_k + 1) as f64) as usize % (seq_k + 1)).collect());
            Case { causal, left, right, key_lens, ..Case::plain(dtype, d, batch, seq_q, seq_k, hk, group, bhsd, seed) }
        })
}

proptest! {
    #![proptest_config(proptest_config(24))]

    #[test]
    fn flash_matches_the_reference(c in case()) {
        check(&c)?;
    }

    #[test]
    fn packed_varlen_batches_match_the_reference(
        dtype in prop::sample::select(vec![DType::Bf16, DType::F16]),
        d in dims(),
        lens in prop::collection::vec((0usize..150, 0usize..150), 1..4),
        group in prop::sample::select(vec![1usize, 3, 4]),
        causal in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let mut s = seed;
        let hk = 1;
        let hq = group;
        let mut cu_q = vec![0];
        let mut cu_k = vec![0];
        for &(lq, lk) in &lens {
            cu_q.push(cu_q.last().unwrap() + lq);
            cu_k.push(cu_k.last().unwrap() + lk);
        }
        let (tq, tk) = (*cu_q.last().unwrap(), *cu_k.last().unwrap());
        let mk = |rows: usize, heads: usize, s: &mut u64| {
            let raw: Vec<f64> = (0..rows * heads * d).map(|_| uniform(s)).collect();
            tensor(&raw, &[rows, heads, d], dtype)
        };
        let (q, qv) = mk(tq, hq, &mut s);
        let (k, kv) = mk(tk, hk, &mut s);
        let (v, vv) = mk(tk, hk, &mut s);
        let opts = FlashOptions { causal, cu_seqlens_q: Some(&cu_q), cu_seqlens_k: Some(&cu_k), ..Default::default() };
        let (o, lse) = attention::flash_with_lse(&q, &k, &v, &opts).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(o.shape(), &[tq, hq, d]);
        prop_assert_eq!(lse.shape(), &[hq, tq]);
        let scale = 1.0 / (d as f64).sqrt();
        let mask = Mask { right: causal.then_some(0), ..Default::default() };
        let (want, want_lse) = reference::flash_varlen(&qv, &kv, &vv, &cu_q, &cu_k, hq, hk, d, scale, &mask);
        let bd = bounds(&qv, &kv, &vv, &cu_q, &cu_k, hq, hk, d, scale, &mask, dtype);
        compare(&read(&o), &want, &read(&lse), &want_lse, &bd, hq, d, dtype, &format!("varlen {lens:?} d {d} group {group} causal {causal}"))?;
    }
}

/// Batched cases without key padding, causal or not, some with a left window, long enough in
/// keys that the launch is dealt out as runs of key blocks (`flash_stream_*`): query blocks
/// split between 2 to 4 workgroups, runs that end inside one query block and start inside the
/// next, masked blocks inside runs.
fn stream_case() -> impl Strategy<Value = Case> {
    (
        (prop::sample::select(vec![DType::Bf16, DType::F16]), dims(), 1usize..3, 1usize..200, 513usize..1400),
        (
            1usize..3,
            prop::sample::select(vec![1usize, 2, 4]),
            any::<bool>(),
            prop::option::weighted(0.3, 600usize..1000),
            any::<bool>(),
            any::<u64>(),
        ),
    )
        .prop_map(|((dtype, d, batch, seq_q, seq_k), (hk, group, causal, left, bhsd, seed))| Case {
            causal,
            left,
            ..Case::plain(dtype, d, batch, seq_q, seq_k, hk, group, bhsd, seed)
        })
}

/// The key blocks (of 64 keys) each query block (of 128 rows) of `c` attends, from the mask's
/// definition: the union of its rows' key ranges.
fn key_block_ranges(c: &Case) -> Vec<(usize, usize)> {
    let off = c.seq_k as i64 - c.seq_q as i64;
    let right = if c.causal { Some(0) } else { c.right };
    (0..c.seq_q.div_ceil(128))
        .map(|x| {
            let (first, last) = (128 * x as i64, (128 * x as i64 + 127).min(c.seq_q as i64 - 1));
            let lo = c.left.map_or(0, |l| (first + off - l as i64).max(0));
            let hi = right.map_or(c.seq_k as i64 - 1, |r| (last + off + r as i64).min(c.seq_k as i64 - 1));
            if hi < lo { (0, 0) } else { ((lo / 64) as usize, (hi / 64 + 1) as usize) }
        })
        .collect()
}

/// The stream plan for `c` on the emulator's MI300X: `Some(key blocks per workgroup)`.
fn stream_plan(c: &Case) -> Option<usize> {
    let ranges = key_block_ranges(c);
    let heads = c.batch * c.hk * c.group;
    let total = heads * ranges.iter().map(|&(a, b)| b - a).sum::<usize>();
    let longest = ranges.iter().map(|&(a, b)| b - a).max().unwrap();
    let paired = c.causal || c.left.is_some() || c.right.is_some();
    let workgroups = heads * if paired { ranges.len().div_ceil(2) } else { ranges.len() };
    attention::stream_run_for(304, workgroups, total, longest, c.d)
}

proptest! {
    #![proptest_config(proptest_config(12))]

    #[test]
    fn stream_runs_match_the_reference(c in stream_case()) {
        // Runs of 8 key blocks: every query block (9 to 22 key blocks) is split.
        prop_assert_eq!(stream_plan(&c), Some(8), "{:?}", c);
        check(&c)?;
    }
}

/// Causal attention over 1000 tokens (8 query blocks attending 2, 4, .., 16 key blocks): runs
/// of 8 key blocks take whole short query blocks, the end of one and the start of the next, so
/// workgroups finish some blocks alone, leave partials of others and merge others' partials.
#[test]
fn stream_runs_cross_query_blocks() {
    let c = Case { causal: true, ..Case::plain(DType::Bf16, 32, 1, 1000, 1000, 4, 2, false, 11) };
    assert_eq!(key_block_ranges(&c).iter().map(|&(a, b)| b - a).collect::<Vec<_>>(), [2, 4, 6, 8, 10, 12, 14, 16]);
    assert_eq!(stream_plan(&c), Some(8));
    check(&c).unwrap();
}

/// When streaming pays: whole query blocks that leave a round partly empty (batch 1, 32 heads,
/// 4096 queries: 1024 blocks, or 512 causal pairs, for 608 slots) take runs of an even share
/// (four runs per slot, fewer where the workspace would pass 256 MiB); a full round, query
/// blocks too short to split into runs of at least 8 key blocks, or many short ones that runs
/// of 8 would gather onto fewer CUs, do not stream.
#[test]
fn stream_plan_streams_only_when_it_evens_the_rounds() {
    // d 64: 2432 runs of 27 key blocks (73,728 bytes of partials a workgroup).
    assert_eq!(attention::stream_run_for(304, 1024, 1024 * 64, 64, 64), Some(27));
    // d 128: 256 MiB hold 3 runs a slot of partials (139,264 bytes a workgroup): runs of 36.
    assert_eq!(attention::stream_run_for(304, 1024, 1024 * 64, 64, 128), Some(36));
    // d 256: one run a slot (270,336 bytes each): runs of 108.
    assert_eq!(attention::stream_run_for(304, 1024, 1024 * 64, 64, 256), Some(108));
    // Causal: 512 pairs of blocks over 32 heads x (2 + 4 + .. + 64) key blocks.
    assert_eq!(attention::stream_run_for(304, 512, 32 * 1056, 64, 128), Some(19));
    assert_eq!(attention::stream_run_for(304, 608, 608 * 64, 64, 128), None);
    assert_eq!(attention::stream_run_for(304, 1216, 1216 * 64, 64, 128), None);
    assert_eq!(attention::stream_run_for(304, 32, 32 * 4, 4, 128), None);
    // One round a quarter full: runs of the minimum, 8 key blocks, split each block in eight.
    assert_eq!(attention::stream_run_for(304, 150, 150 * 64, 64, 128), Some(8));
    // A long sequence alone: at most 8 contributors per query block.
    assert_eq!(attention::stream_run_for(304, 1, 1000, 1000, 128), Some(125));
    // 700 blocks of 3 key blocks: two rounds of whole blocks (3 a CU at most, 4.5 counted two
    // at a time) beat 263 runs of 8 (one a CU, counted as 8).
    assert_eq!(attention::stream_run_for(304, 700, 2100, 3, 32), None);
    // 1000 blocks of 10: 1250 runs of 8 give the busiest CU as many key blocks (20) as whole
    // blocks do.
    assert_eq!(attention::stream_run_for(304, 1000, 10_000, 10, 64), None);
}

/// Scores far from 0 (bf16 inputs of magnitude 30: scaled scores in the thousands) stay
/// accurate: the online maximum keeps `exp2` in range.
#[test]
fn very_large_scores_are_stable() {
    let mut seed = 7;
    for d in [64, 128] {
        let c = Case {
            dtype: DType::Bf16,
            d,
            batch: 1,
            seq_q: 70,
            seq_k: 300,
            hk: 1,
            group: 2,
            causal: false,
            left: None,
            right: None,
            key_lens: None,
            layout: Layout::Bshd,
            seed,
        };
        let hq = 2;
        let (q, qv) = operand([1, 70, hq, d], DType::Bf16, 30.0, Layout::Bshd, &mut seed);
        let (k, kv) = operand([1, 300, 1, d], DType::Bf16, 30.0, Layout::Bshd, &mut seed);
        let (v, vv) = operand([1, 300, 1, d], DType::Bf16, 1.0, Layout::Bshd, &mut seed);
        let (o, lse) = attention::flash_with_lse(&q, &k, &v, &FlashOptions::default()).unwrap();
        let scale = 1.0 / (d as f64).sqrt();
        let shape = Shape { batch: 1, seq_q: 70, seq_k: 300, heads_q: hq, heads_kv: 1, head_dim: d };
        let (want, want_lse) = reference::flash(&qv, &kv, &vv, shape, scale, &Mask::default());
        let bd = bounds(&qv, &kv, &vv, &[0, 70], &[0, 300], hq, 1, d, scale, &Mask::default(), DType::Bf16);
        let max = want_lse.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        assert!(max > 1000.0, "scores should be large, max |lse| {max}");
        compare(&read(&o), &want, &read(&lse), &want_lse, &bd, hq, d, DType::Bf16, &format!("{c:?}")).unwrap();
    }
}

/// Q, K and V as contiguous views two bytes into their storage (not 16-byte aligned): packed
/// on the way in, the same result as from aligned copies (they were refused as Unsupported).
#[test]
fn contiguous_views_at_odd_offsets_are_read() {
    let mut seed = 11;
    let (s, h, d) = (37, 2, 64);
    let n = s * h * d;
    let view = |seed: &mut u64| -> (Tensor, Tensor) {
        let vals: Vec<f64> = (0..n + 1).map(|_| uniform(seed)).collect();
        let (t, _) = tensor(&vals, &[n + 1], DType::F16);
        let odd = t.narrow(0, 1, n).unwrap().reshape(&[1, s, h, d]).unwrap();
        assert!(odd.is_contiguous() && odd.addr() % 16 != 0);
        let aligned = ferrocm::ops::elementwise::copy(&odd).unwrap();
        (odd, aligned)
    };
    let ((q, qa), (k, ka), (v, va)) = (view(&mut seed), view(&mut seed), view(&mut seed));
    let opts = FlashOptions { causal: true, ..Default::default() };
    let got = read(&attention::flash(&q, &k, &v, &opts).unwrap());
    let want = read(&attention::flash(&qa, &ka, &va, &opts).unwrap());
    assert_eq!(got, want);
}

/// Rows that attend no key are zeros with LSE -inf, not NaN: a sequence of zero keys, key
/// padding of 0, and causal rows above the diagonal when there are more queries than keys.
#[test]
fn rows_without_keys_are_zero() {
    let dev = device();
    let mut seed = 3;
    let (q, _) = operand([2, 40, 2, 64], DType::Bf16, 1.0, Layout::Bshd, &mut seed);
    let (k, _) = operand([2, 10, 1, 64], DType::Bf16, 1.0, Layout::Bshd, &mut seed);
    let (v, _) = operand([2, 10, 1, 64], DType::Bf16, 1.0, Layout::Bshd, &mut seed);
    // Causal, 40 queries over 10 keys: rows 0..30 see nothing; batch 1 has no valid key at all.
    let opts = FlashOptions { causal: true, key_lengths: Some(&[10, 0]), ..Default::default() };
    let (o, lse) = attention::flash_with_lse(&q, &k, &v, &opts).unwrap();
    let (o, lse) = (read(&o), read(&lse));
    for b in 0..2 {
        for i in 0..40 {
            let empty = b == 1 || i < 30;
            for h in 0..2 {
                let row = &o[((b * 40 + i) * 2 + h) * 64..][..64];
                let l = lse[(b * 2 + h) * 40 + i];
                if empty {
                    assert!(row.iter().all(|&x| x == 0.0), "b {b} row {i}: {:?}", &row[..4]);
                    assert_eq!(l, f64::NEG_INFINITY, "b {b} row {i}");
                } else {
                    assert!(row.iter().all(|x| x.is_finite()) && l.is_finite(), "b {b} row {i}");
                }
            }
        }
    }
    // Zero keys per sequence and zero query rows.
    let k0 = Tensor::zeros(dev, &[2, 0, 1, 64], DType::Bf16).unwrap();
    let (o, lse) = attention::flash_with_lse(&q, &k0, &k0, &FlashOptions::default()).unwrap();
    assert!(read(&o).iter().all(|&x| x == 0.0));
    assert!(read(&lse).iter().all(|&x| x == f64::NEG_INFINITY));
    let q0 = Tensor::zeros(dev, &[2, 0, 2, 64], DType::Bf16).unwrap();
    assert_eq!(attention::flash(&q0, &k, &v, &FlashOptions::default()).unwrap().shape(), &[2, 0, 2, 64]);
}

/// Bad input is a typed error before anything runs.
#[test]
fn bad_input_is_a_typed_error() {
    let dev = device();
    let t = |shape: &[usize], dtype| Tensor::zeros(dev, shape, dtype).unwrap();
    let (q, k) = (t(&[1, 8, 4, 64], DType::Bf16), t(&[1, 8, 2, 64], DType::Bf16));
    let none = FlashOptions::default();
    let err = |r: Result<Tensor, Error>| r.unwrap_err();
    assert!(matches!(
        err(attention::flash(&q, &t(&[1, 8, 2, 32], DType::Bf16), &t(&[1, 8, 2, 32], DType::Bf16), &none)),
        Error::Shape { .. }
    ));
    assert!(matches!(
        err(attention::flash(&q, &t(&[1, 8, 3, 64], DType::Bf16), &t(&[1, 8, 3, 64], DType::Bf16), &none)),
        Error::Shape { .. }
    ));
    assert!(matches!(err(attention::flash(&q, &k, &t(&[1, 8, 2, 64], DType::F16), &none)), Error::DTypeMismatch { .. }));
    assert!(matches!(err(attention::flash(&t(&[1, 8, 4, 64], DType::F32), &k, &k, &none)), Error::DTypeMismatch { .. }));
    assert!(matches!(
        err(attention::flash(&t(&[1, 8, 4, 48], DType::Bf16), &t(&[1, 8, 2, 48], DType::Bf16), &t(&[1, 8, 2, 48], DType::Bf16), &none)),
        Error::Unsupported { .. }
    ));
    assert!(matches!(
        err(attention::flash(&t(&[0, 8, 4, 64], DType::Bf16), &t(&[0, 8, 2, 64], DType::Bf16), &t(&[0, 8, 2, 64], DType::Bf16), &none)),
        Error::InvalidArgument { .. }
    ));
    let bad_scale = FlashOptions { scale: Some(f32::NAN), ..Default::default() };
    assert!(matches!(err(attention::flash(&q, &k, &k, &bad_scale)), Error::InvalidArgument { .. }));
    let long_key = FlashOptions { key_lengths: Some(&[9]), ..Default::default() };
    assert!(matches!(err(attention::flash(&q, &k, &k, &long_key)), Error::InvalidArgument { .. }));
    let wrong_count = FlashOptions { key_lengths: Some(&[1, 2]), ..Default::default() };
    assert!(matches!(err(attention::flash(&q, &k, &k, &wrong_count)), Error::Shape { .. }));
    // Packed: offsets that decrease, run past the tensor, or come alone.
    let (pq, pk) = (t(&[10, 4, 64], DType::Bf16), t(&[12, 2, 64], DType::Bf16));
    let varlen =
        |cq: &'static [usize], ck: &'static [usize]| FlashOptions { cu_seqlens_q: Some(cq), cu_seqlens_k: Some(ck), ..Default::default() };
    assert!(matches!(err(attention::flash(&pq, &pk, &pk, &varlen(&[0, 6, 4], &[0, 6, 12]))), Error::InvalidArgument { .. }));
    assert!(matches!(err(attention::flash(&pq, &pk, &pk, &varlen(&[0, 6, 10], &[0, 6, 13]))), Error::InvalidArgument { .. }));
    assert!(matches!(err(attention::flash(&pq, &pk, &pk, &varlen(&[0, 10], &[0, 6, 12]))), Error::Shape { .. }));
    assert!(matches!(err(attention::flash(&pq, &pk, &pk, &varlen(&[0], &[0]))), Error::InvalidArgument { .. }));
    let alone = FlashOptions { cu_seqlens_q: Some(&[0, 10]), ..Default::default() };
    assert!(matches!(err(attention::flash(&pq, &pk, &pk, &alone)), Error::InvalidArgument { .. }));
    // Another device.
    let other = ferrocm::Device::new().unwrap();
    let ko = Tensor::zeros(&other, &[1, 8, 2, 64], DType::Bf16).unwrap();
    assert!(matches!(err(attention::flash(&q, &ko, &ko, &none)), Error::DeviceMismatch { .. }));
}
