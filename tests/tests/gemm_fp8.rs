//! fp8 block-scaled GEMM (plain, grouped contiguous, grouped masked) against the f64 reference.
//!
//! Tolerance per output element, with `s = sum_kb |sa * sb| * sum_{k in kb} |a_k * b_k|`:
//! `|err| <= 2^-20 * s + 2^-8 * |ref|`. The first term covers the f32 arithmetic (each 128-wide
//! block summed in f32 on the matrix cores, then one f32 scale product and one FMA per block:
//! a few dozen roundings of unit 2^-24 at most); the second the final rounding to bf16 (half an
//! ulp is at most 2^-8 relative).

use ferrocm::ops::gemm_fp8::{self, scale_blocks};
use ferrocm::{DType, Error, Fp8E4M3Fnuz, Tensor, bf16, reference};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

const BLOCK: usize = 128;

/// A deterministic pseudo-random stream in [-1, 1).
fn lcg(seed: &mut u64) -> f64 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

/// `n` fp8 values in about [-range, range] and their exact values.
fn fp8s(n: usize, range: f64, seed: &mut u64) -> (Vec<Fp8E4M3Fnuz>, Vec<f64>) {
    let v: Vec<Fp8E4M3Fnuz> = (0..n).map(|_| Fp8E4M3Fnuz::from_f32((lcg(seed) * range) as f32)).collect();
    let f = v.iter().map(|x| x.to_f32() as f64).collect();
    (v, f)
}

/// `n` positive power-of-two-ish scales in [2^-6, 2^6] (not exact powers, to exercise rounding).
fn scales(n: usize, seed: &mut u64) -> Vec<f32> {
    (0..n).map(|_| (2f64.powf(lcg(seed) * 6.0)) as f32).collect()
}

fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

/// One problem's host data (A `m x k`, B `groups x n x k`, scales), all row-major.
struct Data {
    a: Vec<Fp8E4M3Fnuz>,
    af: Vec<f64>,
    sa: Vec<f32>,
    b: Vec<Fp8E4M3Fnuz>,
    bf: Vec<f64>,
    sb: Vec<f32>,
}

fn data(a_rows: usize, groups: usize, n: usize, k: usize, seed: &mut u64) -> Data {
    let (a, af) = fp8s(a_rows * k, 240.0, seed);
    let (b, bf) = fp8s(groups * n * k, 240.0, seed);
    let sa = scales(a_rows * scale_blocks(k), seed);
    let sb = scales(groups * scale_blocks(n) * scale_blocks(k), seed);
    Data { a, af, sa, b, bf, sb }
}

/// The reference for rows `rows` of A against group `g` of B: (values, error bounds).
fn expected(d: &Data, rows: std::ops::Range<usize>, g: usize, n: usize, k: usize) -> (Vec<f64>, Vec<f64>) {
    let (kb, nb) = (scale_blocks(k), scale_blocks(n));
    let m = rows.len();
    let a = &d.af[rows.start * k..rows.end * k];
    let sa = f64s(&d.sa[rows.start * kb..rows.end * kb]);
    let b = &d.bf[g * n * k..(g + 1) * n * k];
    let sb = f64s(&d.sb[g * nb * kb..(g + 1) * nb * kb]);
    let want = reference::gemm::blockscaled(a, &sa, b, &sb, m, n, k);
    let abs = |v: &[f64]| v.iter().map(|x| x.abs()).collect::<Vec<_>>();
    let mag = reference::gemm::blockscaled(&abs(a), &sa, &abs(b), &sb, m, n, k);
    let bound = want.iter().zip(&mag).map(|(w, s)| 2f64.powi(-20) * s + 2f64.powi(-8) * w.abs() + 1e-30).collect();
    (want, bound)
}

fn check(got: &[bf16], want: &[f64], bound: &[f64], what: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len());
    for (i, ((g, w), b)) in got.iter().zip(want).zip(bound).enumerate() {
        let g = g.to_f64();
        prop_assert!((g - w).abs() <= *b, "{}: element {}: got {}, want {} (bound {})", what, i, g, w, b);
    }
    Ok(())
}

fn upload(d: &Data, a_shape: &[usize], b_shape: &[usize], sa_shape: &[usize], sb_shape: &[usize]) -> [Tensor; 4] {
    let dev = device();
    [
        Tensor::from_slice(dev, &d.a, a_shape).unwrap(),
        Tensor::from_slice(dev, &d.sa, sa_shape).unwrap(),
        Tensor::from_slice(dev, &d.b, b_shape).unwrap(),
        Tensor::from_slice(dev, &d.sb, sb_shape).unwrap(),
    ]
}

proptest! {
    #![proptest_config(proptest_config(12))]

    /// Ragged M, N, K (not multiples of the 128 tiles or scale blocks), full fp8 range.
    #[test]
    fn plain_matches_the_reference(m in 1usize..300, n in 1usize..300, k in 1usize..400, seed in any::<u64>()) {
        let mut seed = seed;
        let d = data(m, 1, n, k, &mut seed);
        let (kb, nb) = (scale_blocks(k), scale_blocks(n));
        let [a, sa, b, sb] = upload(&d, &[m, k], &[n, k], &[m, kb], &[nb, kb]);
        let c = gemm_fp8::gemm_fp8_blockscaled(&a, &sa, &b, &sb).unwrap();
        prop_assert_eq!(c.shape(), &[m, n]);
        prop_assert_eq!(c.dtype(), DType::Bf16);
        let (want, bound) = expected(&d, 0..m, 0, n, k);
        check(&c.to_vec::<bf16>().unwrap(), &want, &bound, "plain")?;
    }

    /// Experts with 0..300 rows each (empty experts included), segments padded to 128 rows.
    #[test]
    fn grouped_contiguous_matches_the_reference(
        sizes in prop::collection::vec(0usize..300, 1..5), n in 1usize..200, k in 1usize..300, seed in any::<u64>()
    ) {
        let mut seed = seed;
        let groups = sizes.len();
        let mut ids = Vec::new();
        let mut segments = Vec::new();
        for (g, &s) in sizes.iter().enumerate() {
            segments.push((ids.len(), s, g));
            ids.extend(std::iter::repeat_n(g as i32, s));
            ids.extend(std::iter::repeat_n(-1, s.next_multiple_of(BLOCK) - s));
        }
        let m = ids.len();
        let d = data(m, groups, n, k, &mut seed);
        let (kb, nb) = (scale_blocks(k), scale_blocks(n));
        let [a, sa, b, sb] = upload(&d, &[m, k], &[groups, n, k], &[m, kb], &[groups, nb, kb]);
        let ids_t = Tensor::from_slice(device(), &ids, &[m]).unwrap();
        let c = gemm_fp8::gemm_fp8_grouped_contiguous(&a, &sa, &b, &sb, &ids_t).unwrap();
        prop_assert_eq!(c.shape(), &[m, n]);
        let got = c.to_vec::<bf16>().unwrap();
        for (start, rows, g) in segments {
            let (want, bound) = expected(&d, start..start + rows, g, n, k);
            check(&got[start * n..(start + rows) * n], &want, &bound, &format!("expert {g}"))?;
        }
    }

    /// Masked slabs with valid counts from 0 to the capacity.
    #[test]
    fn grouped_masked_matches_the_reference(
        counts in prop::collection::vec(0usize..=200, 1..5), n in 1usize..200, k in 1usize..300, seed in any::<u64>()
    ) {
        let mut seed = seed;
        let groups = counts.len();
        let m = 200;
        let d = data(groups * m, groups, n, k, &mut seed);
        let (kb, nb) = (scale_blocks(k), scale_blocks(n));
        let [a, sa, b, sb] = upload(&d, &[groups, m, k], &[groups, n, k], &[groups, m, kb], &[groups, nb, kb]);
        let counts_i: Vec<i32> = counts.iter().map(|&c| c as i32).collect();
        let counts_t = Tensor::from_slice(device(), &counts_i, &[groups]).unwrap();
        let c = gemm_fp8::gemm_fp8_grouped_masked(&a, &sa, &b, &sb, &counts_t).unwrap();
        prop_assert_eq!(c.shape(), &[groups, m, n]);
        let got = c.to_vec::<bf16>().unwrap();
        for (g, &valid) in counts.iter().enumerate() {
            let slab = &got[g * m * n..(g + 1) * m * n];
            let (want, bound) = expected(&d, g * m..g * m + valid, g, n, k);
            check(&slab[..valid * n], &want, &bound, &format!("group {g}"))?;
            prop_assert!(slab[valid * n..].iter().all(|x| x.to_f64() == 0.0), "group {}: rows past {} must stay 0", g, valid);
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(8))]

    /// Every configuration (both blocks, every split count; K long enough for the splits to
    /// matter) in the three layouts: the split-K partials of skipped blocks (padding, rows past a
    /// masked count) must add up to C's zeros.
    #[test]
    fn every_configuration_matches_the_reference(
        config in prop::sample::select(gemm_fp8::configs()), m in 1usize..150, n in 1usize..150, k in 1usize..1400,
        layout in 0u8..3, seed in any::<u64>()
    ) {
        let mut seed = seed;
        let opts = gemm_fp8::BlockScaledOptions { config: Some(config) };
        let (kb, nb) = (scale_blocks(k), scale_blocks(n));
        match layout {
            0 => {
                let d = data(m, 1, n, k, &mut seed);
                let [a, sa, b, sb] = upload(&d, &[m, k], &[n, k], &[m, kb], &[nb, kb]);
                let c = gemm_fp8::gemm_fp8_blockscaled_with(&a, &sa, &b, &sb, &opts).unwrap();
                let (want, bound) = expected(&d, 0..m, 0, n, k);
                check(&c.to_vec::<bf16>().unwrap(), &want, &bound, &format!("plain {config:?}"))?;
            }
            _ if config.stream_k => {
                // Stream-K runs the plain form only: the grouped ones refuse it.
                let d = data(m, 1, n, k, &mut seed);
                let [a, sa, b, sb] = upload(&d, &[1, m, k], &[1, n, k], &[1, m, kb], &[1, nb, kb]);
                let counts_t = Tensor::from_slice(device(), &[m as i32], &[1]).unwrap();
                let e = gemm_fp8::gemm_fp8_grouped_masked_with(&a, &sa, &b, &sb, &counts_t, &opts);
                prop_assert!(matches!(&e, Err(Error::InvalidArgument { message, .. }) if message.contains("stream-K")), "masked {:?}: {:?}", config, e.map(|_| ()));
                // (One valid block of expert 0, so that only the config is wrong.)
                let d = data(BLOCK, 1, n, k, &mut seed);
                let [a, sa, b, sb] = upload(&d, &[BLOCK, k], &[1, n, k], &[BLOCK, kb], &[1, nb, kb]);
                let ids_t = Tensor::from_slice(device(), &[0i32; BLOCK], &[BLOCK]).unwrap();
                let e = gemm_fp8::gemm_fp8_grouped_contiguous_with(&a, &sa, &b, &sb, &ids_t, &opts);
                prop_assert!(matches!(&e, Err(Error::InvalidArgument { message, .. }) if message.contains("stream-K")), "contiguous {:?}: {:?}", config, e.map(|_| ()));
            }
            1 => {
                // Two experts: m rows of expert 1 after a block of padding.
                let ids: Vec<i32> = std::iter::repeat_n(-1, BLOCK).chain(std::iter::repeat_n(1, m)).collect();
                let rows = ids.len();
                let d = data(rows, 2, n, k, &mut seed);
                let [a, sa, b, sb] = upload(&d, &[rows, k], &[2, n, k], &[rows, kb], &[2, nb, kb]);
                let ids_t = Tensor::from_slice(device(), &ids, &[rows]).unwrap();
                let c = gemm_fp8::gemm_fp8_grouped_contiguous_with(&a, &sa, &b, &sb, &ids_t, &opts).unwrap();
                let got = c.to_vec::<bf16>().unwrap();
                prop_assert!(got[..BLOCK * n].iter().all(|x| x.to_f64() == 0.0), "{:?}: padding rows must stay 0", config);
                let (want, bound) = expected(&d, BLOCK..rows, 1, n, k);
                check(&got[BLOCK * n..], &want, &bound, &format!("contiguous {config:?}"))?;
            }
            _ => {
                let counts = [m / 2, m];
                let d = data(2 * m, 2, n, k, &mut seed);
                let [a, sa, b, sb] = upload(&d, &[2, m, k], &[2, n, k], &[2, m, kb], &[2, nb, kb]);
                let counts_t = Tensor::from_slice(device(), &[counts[0] as i32, counts[1] as i32], &[2]).unwrap();
                let c = gemm_fp8::gemm_fp8_grouped_masked_with(&a, &sa, &b, &sb, &counts_t, &opts).unwrap();
                let got = c.to_vec::<bf16>().unwrap();
                for (g, &valid) in counts.iter().enumerate() {
                    let slab = &got[g * m * n..(g + 1) * m * n];
                    let (want, bound) = expected(&d, g * m..g * m + valid, g, n, k);
                    check(&slab[..valid * n], &want, &bound, &format!("masked {config:?} group {g}"))?;
                    prop_assert!(slab[valid * n..].iter().all(|x| x.to_f64() == 0.0), "{:?} group {}: rows past {} must stay 0", config, g, valid);
                }
            }
        }
    }
}

#[test]
fn the_chooser_follows_its_documented_rule() {
    // Decode-time expert GEMM: the small block, K split until the GPU is full.
    let c = gemm_fp8::choose_config(1, 8, 4096, 7168);
    assert_eq!((c.block, c.splits), (64, 8));
    // DeepSeek-V3 prefill shapes fill the GPU with 128x128 blocks alone.
    assert_eq!(gemm_fp8::choose_config(1, 4096, 7168, 2048), gemm_fp8::BlockScaledConfig { block: 128, splits: 1, stream_k: false });
    // ... unless whole blocks leave CUs idle: 544 blocks of 56 scale blocks on 304 CUs x 2 are
    // dealt out in runs of 51 (the busiest CU 102 scale blocks instead of 112).
    assert_eq!(gemm_fp8::choose_config(1, 4096, 2112, 7168), gemm_fp8::BlockScaledConfig { block: 128, splits: 1, stream_k: true });
    assert_eq!(gemm_fp8::stream_k_run(544, 56), 51);
    assert!(gemm_fp8::stream_k_pays(304, 4096, 2112, 7168) && !gemm_fp8::stream_k_pays(304, 4096, 7168, 2048));
    // Two full rounds of whole blocks stay whole (1216 blocks: 4 a CU either way).
    assert!(!gemm_fp8::stream_k_pays(304, 4096, 4864, 7168));
    // Grouped forms never stream: the masked one takes the split rule.
    assert!(!gemm_fp8::choose_config(2, 4096, 2112, 7168).stream_k);
    // Short K is never split below 4 scale blocks per split.
    assert_eq!(gemm_fp8::choose_config(1, 8, 256, 512).splits, 1);
    // The ops plan for their device's compute units (`choose_config_for`; the plain form is
    // MI300X's 304): 256 small blocks split in 8 fill 304 CUs x 8, in 2 already 80 CUs x 8.
    assert_eq!(gemm_fp8::choose_config(1, 8, 16384, 7168).splits, 8);
    assert_eq!(gemm_fp8::choose_config_for(80, 1, 8, 16384, 7168).splits, 2);
    assert!(gemm_fp8::configs().iter().all(|c| gemm_fp8::configs().iter().filter(|d| *d == c).count() == 1));
}

/// Stream-K with every kind of run: 6 blocks (200 x 300) of 29 scale blocks (K = 3700, the
/// last block partial) in runs of 4, so every block is shared by 8 workgroups, runs start and
/// end inside blocks and cross from one block into the next; and with K = 300 (3 scale blocks,
/// the last 44 wide) a run of 4 holds the end of one block, or a whole one and the start of
/// the next.
#[test]
fn stream_k_runs_share_blocks() {
    let stream = gemm_fp8::BlockScaledConfig { block: 128, splits: 1, stream_k: true };
    let opts = gemm_fp8::BlockScaledOptions { config: Some(stream) };
    assert_eq!(gemm_fp8::stream_k_run(6, 29), 4);
    assert_eq!(gemm_fp8::stream_k_run(12, 3), 4);
    for (m, n, k) in [(200, 300, 3700), (300, 500, 300)] {
        let mut seed = (m * n + k) as u64;
        let d = data(m, 1, n, k, &mut seed);
        let (kb, nb) = (scale_blocks(k), scale_blocks(n));
        let [a, sa, b, sb] = upload(&d, &[m, k], &[n, k], &[m, kb], &[nb, kb]);
        let c = gemm_fp8::gemm_fp8_blockscaled_with(&a, &sa, &b, &sb, &opts).unwrap();
        let (want, bound) = expected(&d, 0..m, 0, n, k);
        check(&c.to_vec::<bf16>().unwrap(), &want, &bound, &format!("stream-K {m}x{n}x{k}")).unwrap();
    }
}

/// Scales in DeepGEMM's layout (column-major: `[ceil(K/128), M]` in memory, passed as the
/// transposed view) and a strided A (rows padded) give the same result as row-major inputs.
#[test]
fn strided_scales_and_rows_are_read_in_place() {
    let (m, n, k) = (130, 70, 300);
    let mut seed = 7;
    let d = data(m, 1, n, k, &mut seed);
    let (kb, nb) = (scale_blocks(k), scale_blocks(n));
    let dev = device();
    // A with 320-element rows, of which the first 300 are used.
    let mut padded = vec![Fp8E4M3Fnuz::from_f32(0.0); m * 320];
    for r in 0..m {
        padded[r * 320..r * 320 + k].copy_from_slice(&d.a[r * k..(r + 1) * k]);
    }
    let a = Tensor::from_slice(dev, &padded, &[m, 320]).unwrap().narrow(1, 0, k).unwrap();
    let mut sa_cm = vec![0f32; m * kb];
    for r in 0..m {
        for c in 0..kb {
            sa_cm[c * m + r] = d.sa[r * kb + c];
        }
    }
    let sa = Tensor::from_slice(dev, &sa_cm, &[kb, m]).unwrap().transpose(0, 1).unwrap();
    let b = Tensor::from_slice(dev, &d.b, &[n, k]).unwrap();
    let sb = Tensor::from_slice(dev, &d.sb, &[nb, kb]).unwrap();
    let c = gemm_fp8::gemm_fp8_blockscaled(&a, &sa, &b, &sb).unwrap();
    let (want, bound) = expected(&d, 0..m, 0, n, k);
    check(&c.to_vec::<bf16>().unwrap(), &want, &bound, "strided").unwrap();
}

/// NaN in A poisons exactly its row; fp8's extremes (±240, the smallest subnormal) with large
/// and small scales come out exact where bf16 can hold the result. On a few rows and on 256 x
/// 192 (whole wave tiles and edge ones), row `r` repeating row `r % 4`'s pattern.
#[test]
fn nan_propagates_and_extremes_are_exact() {
    let dev = device();
    for (m, n) in [(4, 3), (256, 192)] {
        let k = 256;
        let max = Fp8E4M3Fnuz::MAX;
        let tiny = Fp8E4M3Fnuz::from_bits(1); // 2^-10
        let mut a = vec![max; m * k];
        let mut sa = Vec::with_capacity(m * 2);
        for r in 0..m {
            match r % 4 {
                1 => a[r * k + 200] = Fp8E4M3Fnuz::from_bits(0x80), // NaN, second scale block
                2 => a[r * k..(r + 1) * k].fill(tiny),
                3 => a[r * k..(r + 1) * k].fill(Fp8E4M3Fnuz::MIN),
                _ => {}
            }
            sa.extend_from_slice(&[[2.0f32, 1.0], [1.0, 2.0], [1024.0, 1024.0], [0.5, 0.25]][r % 4]);
        }
        let b = vec![max; n * k];
        let sb = vec![0.5f32, 1.0, 0.5, 1.0][..2 * n.div_ceil(128)].to_vec();
        let c = gemm_fp8::gemm_fp8_blockscaled(
            &Tensor::from_slice(dev, &a, &[m, k]).unwrap(),
            &Tensor::from_slice(dev, &sa, &[m, 2]).unwrap(),
            &Tensor::from_slice(dev, &b, &[n, k]).unwrap(),
            &Tensor::from_slice(dev, &sb, &[n.div_ceil(128), 2]).unwrap(),
        )
        .unwrap()
        .to_vec::<bf16>()
        .unwrap();
        let block = 128.0 * 240.0 * 240.0; // 7372800 = 2^15 * 225, exact in bf16 up to scaling by 2^k
        for r in 0..m {
            for j in 0..n {
                let got = c[r * n + j];
                match r % 4 {
                    0 => assert_eq!(got.to_f64(), block * (2.0 * 0.5 + 1.0 * 1.0), "row {r}"),
                    1 => assert!(got.is_nan(), "row {r} holds a NaN input"),
                    2 => assert_eq!(got.to_f64(), 128.0 * 240.0 / 1024.0 * (1024.0 * 0.5 + 1024.0 * 1.0), "row {r}"),
                    _ => assert_eq!(got.to_f64(), -block * (0.5 * 0.5 + 0.25 * 1.0), "row {r}"),
                }
            }
        }
    }
}

/// Many small experts (16, sizes 0..40) and a single expert: the same answers as the plain
/// kernel on each expert's rows.
#[test]
fn many_groups_and_one_group_agree_with_the_plain_kernel() {
    let (n, k) = (96, 200);
    let mut seed = 11;
    for sizes in [vec![5, 0, 37, 1, 12, 0, 0, 40, 3, 9, 17, 2, 0, 25, 31, 8], vec![200]] {
        let groups = sizes.len();
        let mut ids = Vec::new();
        let mut segments = Vec::new();
        for (g, &s) in sizes.iter().enumerate() {
            segments.push((ids.len(), s, g));
            ids.extend(std::iter::repeat_n(g as i32, s));
            ids.extend(std::iter::repeat_n(-1, s.next_multiple_of(BLOCK) - s));
        }
        let m = ids.len();
        let d = data(m, groups, n, k, &mut seed);
        let (kb, nb) = (scale_blocks(k), scale_blocks(n));
        let [a, sa, b, sb] = upload(&d, &[m, k], &[groups, n, k], &[m, kb], &[groups, nb, kb]);
        let ids_t = Tensor::from_slice(device(), &ids, &[m]).unwrap();
        let got = gemm_fp8::gemm_fp8_grouped_contiguous(&a, &sa, &b, &sb, &ids_t).unwrap().to_vec::<bf16>().unwrap();
        for (start, rows, g) in segments {
            if rows == 0 {
                continue;
            }
            let plain = gemm_fp8::gemm_fp8_blockscaled(
                &a.narrow(0, start, rows).unwrap(),
                &sa.narrow(0, start, rows).unwrap(),
                &b.narrow(0, g, 1).unwrap().reshape(&[n, k]).unwrap(),
                &sb.narrow(0, g, 1).unwrap().reshape(&[nb, kb]).unwrap(),
            )
            .unwrap()
            .to_vec::<bf16>()
            .unwrap();
            assert_eq!(&got[start * n..(start + rows) * n], plain.as_slice(), "expert {g}");
        }
        // Padding-only blocks stay zero.
        for (blk, rows) in ids.chunks(BLOCK).enumerate() {
            if rows[0] < 0 {
                assert!(got[blk * BLOCK * n..(blk * BLOCK + rows.len()) * n].iter().all(|x| x.to_f64() == 0.0));
            }
        }
    }
}

/// Bad shapes, dtypes and indices are refused before anything runs.
#[test]
fn bad_input_is_refused() {
    let dev = device();
    let fp8 = |shape: &[usize]| Tensor::zeros(dev, shape, DType::Fp8E4M3Fnuz).unwrap();
    let f32s = |shape: &[usize]| Tensor::zeros(dev, shape, DType::F32).unwrap();
    let i32s = |v: &[i32]| Tensor::from_slice(dev, v, &[v.len()]).unwrap();
    let (a, sa, b, sb) = (fp8(&[8, 256]), f32s(&[8, 2]), fp8(&[16, 256]), f32s(&[1, 2]));
    assert!(gemm_fp8::gemm_fp8_blockscaled(&a, &sa, &b, &sb).is_ok());
    // Wrong scale shapes.
    assert!(matches!(gemm_fp8::gemm_fp8_blockscaled(&a, &f32s(&[8, 3]), &b, &sb), Err(Error::Shape { .. })));
    assert!(matches!(gemm_fp8::gemm_fp8_blockscaled(&a, &sa, &b, &f32s(&[2, 2])), Err(Error::Shape { .. })));
    // K mismatch.
    assert!(matches!(gemm_fp8::gemm_fp8_blockscaled(&a, &sa, &fp8(&[16, 128]), &f32s(&[1, 1])), Err(Error::Shape { .. })));
    // Wrong dtypes.
    let bf = Tensor::zeros(dev, &[8, 256], DType::Bf16).unwrap();
    assert!(matches!(gemm_fp8::gemm_fp8_blockscaled(&bf, &sa, &b, &sb), Err(Error::DTypeMismatch { .. })));
    let e5 = Tensor::zeros(dev, &[16, 256], DType::Fp8E5M2Fnuz).unwrap();
    assert!(matches!(gemm_fp8::gemm_fp8_blockscaled(&a, &sa, &e5, &sb), Err(Error::DTypeMismatch { .. })));
    assert!(matches!(gemm_fp8::gemm_fp8_blockscaled(&a, &bf.narrow(1, 0, 2).unwrap(), &b, &sb), Err(Error::DTypeMismatch { .. })));

    // Contiguous grouping: 2 experts, A of 256 rows.
    let (a, sa) = (fp8(&[256, 256]), f32s(&[256, 2]));
    let (b, sb) = (fp8(&[2, 16, 256]), f32s(&[2, 1, 2]));
    let mut ids = vec![0i32; 128];
    ids.extend(vec![1; 100]);
    ids.extend(vec![-1; 28]);
    assert!(gemm_fp8::gemm_fp8_grouped_contiguous(&a, &sa, &b, &sb, &i32s(&ids)).is_ok());
    let mut bad = ids.clone();
    bad[5] = 2; // no expert 2
    let err = gemm_fp8::gemm_fp8_grouped_contiguous(&a, &sa, &b, &sb, &i32s(&bad)).unwrap_err();
    assert!(matches!(&err, Error::InvalidArgument { message, .. } if message.contains("expert_ids[5] = 2")), "{err}");
    let mut mixed = ids.clone();
    mixed[130] = 0; // two experts in the second block
    assert!(matches!(gemm_fp8::gemm_fp8_grouped_contiguous(&a, &sa, &b, &sb, &i32s(&mixed)), Err(Error::InvalidArgument { .. })));
    let mut late = ids.clone();
    late[128] = -1; // padding before the expert's rows
    assert!(matches!(gemm_fp8::gemm_fp8_grouped_contiguous(&a, &sa, &b, &sb, &i32s(&late)), Err(Error::InvalidArgument { .. })));
    assert!(matches!(gemm_fp8::gemm_fp8_grouped_contiguous(&a, &sa, &b, &sb, &i32s(&ids[..200])), Err(Error::Shape { .. })));
    let as_u32 = Tensor::from_slice(dev, &vec![0u32; 256], &[256]).unwrap();
    assert!(matches!(gemm_fp8::gemm_fp8_grouped_contiguous(&a, &sa, &b, &sb, &as_u32), Err(Error::DTypeMismatch { .. })));

    // Masked grouping: counts must lie in 0..=M.
    let (a, sa) = (fp8(&[2, 64, 256]), f32s(&[2, 64, 2]));
    assert!(gemm_fp8::gemm_fp8_grouped_masked(&a, &sa, &b, &sb, &i32s(&[64, 0])).is_ok());
    assert!(matches!(gemm_fp8::gemm_fp8_grouped_masked(&a, &sa, &b, &sb, &i32s(&[65, 0])), Err(Error::InvalidArgument { .. })));
    assert!(matches!(gemm_fp8::gemm_fp8_grouped_masked(&a, &sa, &b, &sb, &i32s(&[-1, 0])), Err(Error::InvalidArgument { .. })));
    assert!(matches!(gemm_fp8::gemm_fp8_grouped_masked(&a, &sa, &b, &sb, &i32s(&[1])), Err(Error::Shape { .. })));
}

/// An E4M3FN (OCP) weight converted bit-for-bit with doubled scales gives the product of the
/// original values.
#[test]
fn ocp_weights_convert_with_doubled_scales() {
    let dev = device();
    let (m, n, k) = (2, 2, 128);
    // OCP E4M3FN 0x7E = 448 and 0x38 = 1.0 (bias 7).
    let ocp = [0x7eu8, 0x38];
    let w: Vec<Fp8E4M3Fnuz> = (0..n * k).map(|i| Fp8E4M3Fnuz::from_e4m3fn_bits(ocp[i / k])).collect();
    let a = vec![Fp8E4M3Fnuz::from_f32(1.0); m * k];
    let c = gemm_fp8::gemm_fp8_blockscaled(
        &Tensor::from_slice(dev, &a, &[m, k]).unwrap(),
        &Tensor::from_slice(dev, &[1.0f32; 2], &[m, 1]).unwrap(),
        &Tensor::from_slice(dev, &w, &[n, k]).unwrap(),
        &Tensor::from_slice(dev, &[2.0f32], &[1, 1]).unwrap(),
    )
    .unwrap()
    .to_vec::<bf16>()
    .unwrap();
    assert_eq!(c.iter().map(|x| x.to_f64()).collect::<Vec<_>>(), vec![448.0 * 128.0, 128.0, 448.0 * 128.0, 128.0]);
}
