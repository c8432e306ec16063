//! GEMM on the device against the f64 reference.
//!
//! Tolerances (per output element, `s = sum_k |a_ik * b_kj|`):
//! - f32 accumulation of exactly representable inputs (f16, bf16, fp8, f32): `|err| <= 2^-21 * s`
//!   (the matrix cores round once per fused group of 8/16 products or per FMA; the bound allows
//!   for a few hundred roundings at most at these sizes, f32 unit roundoff 2^-24);
//! - xf32: inputs truncated to 10 fraction bits by the hardware: `|err| <= 2^-9 * s`;
//! - then the output rounding: half an ulp of the output type, and the epilogue's activation
//!   approximation (erf/tanh/exp in f32: `1e-6 * |x| + 1e-6`).

use ferrocm::ops::gemm::{self, Activation, F32Precision, GemmConfig, GemmOptions, Mfma};
use ferrocm::{DType, Element, Fp8E4M3Fnuz, Fp8E5M2Fnuz, Tensor, bf16, f16, reference};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

/// Host data of one operand: values already rounded to the dtype, as f64 for the reference.
struct Host {
    vals: Vec<f64>,
}

/// A deterministic pseudo-random stream.
fn lcg(seed: &mut u64) -> f64 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

/// A `rows x cols` row-major tensor of `dtype` with values in about [-scale, scale], and the
/// exact values it holds.
fn random(rows: usize, cols: usize, dtype: DType, scale: f64, seed: &mut u64) -> (Tensor, Host) {
    let raw: Vec<f64> = (0..rows * cols).map(|_| lcg(seed) * scale).collect();
    upload(&raw, &[rows, cols], dtype)
}

/// `vals` rounded to `dtype`, as a tensor, and the values it holds.
fn upload(vals: &[f64], shape: &[usize], dtype: DType) -> (Tensor, Host) {
    macro_rules! make {
        ($t:ty) => {{
            let v: Vec<$t> = vals.iter().map(|&x| <$t as Element>::from_f64(x)).collect();
            let vals = v.iter().map(|x| x.to_f64()).collect();
            (Tensor::from_slice(device(), &v, shape).unwrap(), Host { vals })
        }};
    }
    match dtype {
        DType::F32 => make!(f32),
        DType::F16 => make!(f16),
        DType::Bf16 => make!(bf16),
        DType::Fp8E4M3Fnuz => make!(Fp8E4M3Fnuz),
        DType::Fp8E5M2Fnuz => make!(Fp8E5M2Fnuz),
        _ => unreachable!("not a GEMM input type"),
    }
}

/// `vals` (each exactly representable in `dtype`) as a tensor of `dtype`.
fn exact(vals: &[f64], shape: &[usize], dtype: DType) -> Tensor {
    let (t, held) = upload(vals, shape, dtype);
    assert!(held.vals.iter().zip(vals).all(|(&x, &y)| x == y || y.is_nan()), "a value is not exact in {dtype}");
    t
}

fn read_f64(t: &Tensor) -> Vec<f64> {
    match t.dtype() {
        DType::F32 => t.to_vec::<f32>().unwrap().iter().map(|x| *x as f64).collect(),
        DType::F16 => t.to_vec::<f16>().unwrap().iter().map(|x| x.to_f64()).collect(),
        DType::Bf16 => t.to_vec::<bf16>().unwrap().iter().map(|x| x.to_f64()).collect(),
        d => panic!("unexpected output {d}"),
    }
}

/// Half an ulp of `x` in `dtype` (relative bound of the output rounding).
fn out_ulp(dtype: DType, x: f64) -> f64 {
    let mant_bits = match dtype {
        DType::F32 => 24,
        DType::F16 => 11,
        _ => 8,
    };
    x.abs() * 2f64.powi(-mant_bits) + if dtype == DType::F16 { 6e-8 } else { 1e-38 }
}

/// How an operand is laid out in memory.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// Stored as the logical matrix, row-major.
    RowMajor,
    /// Stored transposed (the logical matrix is a transposed view).
    Transposed,
}

/// A `rows x cols` logical operand stored per `layout`.
fn operand(rows: usize, cols: usize, dtype: DType, layout: Layout, seed: &mut u64) -> (Tensor, Vec<f64>) {
    match layout {
        Layout::RowMajor => {
            let (t, h) = random(rows, cols, dtype, 1.5, seed);
            (t, h.vals)
        }
        Layout::Transposed => {
            let (t, h) = random(cols, rows, dtype, 1.5, seed);
            let mut vals = vec![0.0; rows * cols];
            for r in 0..rows {
                for c in 0..cols {
                    vals[r * cols + c] = h.vals[c * rows + r];
                }
            }
            (t.transpose(0, 1).unwrap(), vals)
        }
    }
}

struct Case {
    m: usize,
    n: usize,
    k: usize,
    dtype: DType,
    la: Layout,
    lb: Layout,
    out: Option<DType>,
    precision: F32Precision,
    seed: u64,
    /// Forced configuration (else the chooser's).
    config: Option<GemmConfig>,
}

fn check(case: &Case) -> Result<(), TestCaseError> {
    let mut seed = case.seed;
    let (a, av) = operand(case.m, case.k, case.dtype, case.la, &mut seed);
    let (b, bv) = operand(case.k, case.n, case.dtype, case.lb, &mut seed);
    let opts = GemmOptions { out_dtype: case.out, f32_precision: case.precision, config: case.config, ..Default::default() };
    let c = gemm::gemm(&a, &b, &opts).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let out_dtype = c.dtype();
    prop_assert_eq!(c.shape(), &[case.m, case.n]);
    let got = read_f64(&c);
    let acc_rel = if case.precision == F32Precision::Xf32 && case.dtype == DType::F32 { 2f64.powi(-9) } else { 2f64.powi(-21) };
    for i in 0..case.m {
        for j in 0..case.n {
            let (mut want, mut s) = (0.0, 0.0);
            for p in 0..case.k {
                let prod = av[i * case.k + p] * bv[p * case.n + j];
                want += prod;
                s += prod.abs();
            }
            let g = got[i * case.n + j];
            let tol = acc_rel * s + out_ulp(out_dtype, want) + 1e-30;
            prop_assert!(
                (g - want).abs() <= tol,
                "C[{i}][{j}] = {g}, want {want} (tol {tol:e}) for {}x{}x{} {} {:?}x{:?} -> {} with {:?}",
                case.m,
                case.n,
                case.k,
                case.dtype,
                case.la,
                case.lb,
                out_dtype,
                case.config
            );
        }
    }
    Ok(())
}

fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![4 => 1usize..=300, 1 => prop::sample::select(vec![128usize, 256])]
}

fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![Just(Layout::RowMajor), Just(Layout::Transposed)]
}

proptest! {
    #![proptest_config(proptest_config(10))]

    #[test]
    fn bf16_and_f16_match_the_reference(m in dim(), n in dim(), k in dim(), la in layout(), lb in layout(),
                                        half in any::<bool>(), out in 0u8..3, seed in any::<u64>()) {
        let dtype = if half { DType::F16 } else { DType::Bf16 };
        let out = [None, Some(DType::F32), Some(if half { DType::Bf16 } else { DType::F16 })][out as usize];
        check(&Case { m, n, k, dtype, la, lb, out, precision: F32Precision::Exact, seed, config: None })?;
    }

    #[test]
    fn f32_and_xf32_match_the_reference(m in dim(), n in dim(), k in dim(), la in layout(), lb in layout(),
                                        xf32 in any::<bool>(), seed in any::<u64>()) {
        let precision = if xf32 { F32Precision::Xf32 } else { F32Precision::Exact };
        check(&Case { m, n, k, dtype: DType::F32, la, lb, out: None, precision, seed, config: None })?;
    }

    #[test]
    fn fp8_matches_the_reference(m in dim(), n in dim(), k in dim(), bf8 in any::<bool>(), seed in any::<u64>()) {
        let dtype = if bf8 { DType::Fp8E5M2Fnuz } else { DType::Fp8E4M3Fnuz };
        check(&Case { m, n, k, dtype, la: Layout::RowMajor, lb: Layout::Transposed, out: Some(DType::F32),
                      precision: F32Precision::Exact, seed, config: None })?;
    }
}

/// An input dtype and one of its configurations.
fn dtype_and_config() -> impl Strategy<Value = (DType, GemmConfig)> {
    prop::sample::select(vec![DType::Bf16, DType::F16, DType::F32, DType::Fp8E4M3Fnuz, DType::Fp8E5M2Fnuz])
        .prop_flat_map(|d| (Just(d), prop::sample::select(gemm::configs(d))))
}

proptest! {
    #![proptest_config(proptest_config(10))]

    /// Every configuration (both tiles, every split count) on ragged shapes, K long enough for
    /// the splits to matter.
    #[test]
    fn every_configuration_matches_the_reference(m in prop_oneof![1usize..=16, 1usize..=200], n in 1usize..=200,
                                                 k in 1usize..=1200, (dtype, config) in dtype_and_config(),
                                                 seed in any::<u64>()) {
        check(&Case { m, n, k, dtype, la: Layout::RowMajor, lb: Layout::Transposed, out: None,
                      precision: F32Precision::Exact, seed, config: Some(config) })?;
    }

    /// Decode-time shapes through the chooser (which picks the skinny tile and splits K).
    #[test]
    fn tall_skinny_shapes_match_the_reference(m in 1usize..=16, n in 1usize..=300, k in 256usize..=2048,
                                              half in any::<bool>(), seed in any::<u64>()) {
        let dtype = if half { DType::F16 } else { DType::Bf16 };
        check(&Case { m, n, k, dtype, la: Layout::RowMajor, lb: Layout::Transposed, out: Some(DType::F32),
                      precision: F32Precision::Exact, seed, config: None })?;
    }
}

#[test]
fn the_chooser_follows_its_documented_rule() {
    // Decode: the GEMV, the most waves (of 1, 2, 4, 8) that keep 8 K-tiles each.
    let c = gemm::choose_config(DType::Bf16, 1, 1, 4096, 4096);
    assert_eq!((c.block_m, c.block_n, c.waves, c.splits), (16, 16, 8, 1));
    assert!(c.is_gemv());
    assert_eq!(gemm::choose_config(DType::Bf16, 1, 16, 576, 576).waves, 2);
    assert_eq!(gemm::choose_config(DType::F32, 1, 1, 64, 100).waves, 1);
    // The tiled rule for the same shape (the fallback where the GEMV's 16-byte loads do not
    // fit): skinny tile, K split until the GPU is full (64 N-blocks x 16 = 1024 <= 304 x 8).
    let c = gemm::tiled_config(DType::Bf16, 1, 1, 4096, 4096);
    assert_eq!((c.block_m, c.block_n, c.splits), (16, 64, 16));
    assert_eq!(gemm::choose_config(DType::Bf16, 1, 17, 4096, 4096), gemm::tiled_config(DType::Bf16, 1, 17, 4096, 4096));
    // A big square GEMM fills the GPU on its own: 1024 blocks would take two rounds of 608
    // slots, the second 68% full (84% of the launch's slots), so stream-K.
    let c = gemm::choose_config(DType::Bf16, 1, 4096, 4096, 4096);
    assert_eq!((c.block_m, c.block_n, c.mfma, c.splits, c.stream_k), (128, 128, Mfma::Tile32, 1, true));
    // Exactly two full rounds (38 x 32 blocks = 1216): whole blocks.
    let c = gemm::choose_config(DType::Bf16, 1, 38 * 128, 4096, 4096);
    assert_eq!((c.mfma, c.splits, c.stream_k), (Mfma::Tile32, 1, false));
    // One partly empty round: stream-K rather than split-K (256 blocks, runs of 54 K-tiles).
    let c = gemm::choose_config(DType::Bf16, 1, 2048, 2048, 4096);
    assert_eq!((c.splits, c.stream_k), (1, true));
    assert_eq!(gemm::stream_k_run(256, 128), 54);
    // Short K never splits below 8 K-tiles per split, and stream-K's runs would be whole blocks
    // (4 blocks of 8 K-tiles): one pass.
    let c = gemm::choose_config(DType::Bf16, 1, 256, 256, 256);
    assert_eq!((c.splits, c.stream_k), (1, false));
    assert!(gemm::configs(DType::Bf16).contains(&c));
    // The op plans for its device's compute units (`choose_config_for`; the plain forms are
    // MI300X's 304). On 80 CUs (MI308X) 4096^3 takes seven rounds of 160 slots, the last 40%
    // full (91% of the launch's slots): whole blocks; its stream-K runs are longer.
    assert_eq!(
        gemm::choose_config_for(ferrocm::MI300X_CUS, DType::Bf16, 1, 4096, 4096, 4096),
        gemm::choose_config(DType::Bf16, 1, 4096, 4096, 4096)
    );
    let c = gemm::choose_config_for(80, DType::Bf16, 1, 4096, 4096, 4096);
    assert_eq!((c.splits, c.stream_k), (1, false));
    assert_eq!(gemm::stream_k_run_for(80, 256, 128), 205);
    // Every configuration is enumerable, once.
    let all = gemm::configs(DType::F32);
    assert_eq!(all.len(), 23);
    assert!(all.iter().all(|c| all.iter().filter(|d| *d == c).count() == 1));
}

/// Stream-K at the two extremes of its dealing: every block split between many workgroups (a
/// run of one K-tile each), and runs longer than a block, which cross block boundaries so that a
/// workgroup finishes blocks whole, starts one and ends another. Each block is summed once, in
/// contributor order, and the result does not depend on the run (bit-identical twice).
#[test]
fn stream_k_deals_k_tiles_across_blocks_and_sums_each_block_once() {
    let sk = gemm::configs(DType::Bf16).into_iter().find(|c| c.stream_k).unwrap();
    // 2 x 3 blocks of 128 K-tiles in runs of 16: 8 contributors per block (the most the host
    // lets share one), so a finisher adds up to 7 others' partials in order.
    assert_eq!(gemm::stream_k_run(6, 128), 16);
    let case = Case {
        m: 200,
        n: 300,
        k: 4096,
        dtype: DType::Bf16,
        la: Layout::RowMajor,
        lb: Layout::Transposed,
        out: Some(DType::F32),
        precision: F32Precision::Exact,
        seed: 3,
        config: Some(sk),
    };
    check(&case).unwrap();
    // 28 x 25 ragged blocks of 3 K-tiles (f16, K = 96): 2100 K-tiles in runs of 8 (at least 8
    // per run), each run ending inside a block.
    assert_eq!(gemm::stream_k_run(700, 3), 8);
    check(&Case { m: 3580, n: 3190, k: 96, dtype: DType::F16, out: None, seed: 4, ..case }).unwrap();
    // fp8 (64 per K-tile) with batches and the whole epilogue, against the one-pass kernel.
    let mut seed = 9;
    let (bsz, m, n, k) = (3, 150, 260, 700);
    let (a, _) = random(bsz * m, k, DType::Fp8E4M3Fnuz, 1.0, &mut seed);
    let (b, _) = random(bsz * k, n, DType::Fp8E4M3Fnuz, 1.0, &mut seed);
    let (a, b) = (a.reshape(&[bsz, m, k]).unwrap(), b.reshape(&[bsz, k, n]).unwrap());
    let (res, _) = random(bsz * m, n, DType::F32, 1.0, &mut seed);
    let res = res.reshape(&[bsz, m, n]).unwrap();
    let bias = Tensor::from_slice(device(), &(0..n).map(|j| j as f32 / 64.0 - 2.0).collect::<Vec<_>>(), &[n]).unwrap();
    let run = |config: GemmConfig| {
        let opts = GemmOptions {
            alpha: 0.5,
            bias: Some(&bias),
            activation: Activation::GeluTanh,
            residual: Some(&res),
            out_dtype: Some(DType::F32),
            config: Some(config),
            ..Default::default()
        };
        gemm::gemm(&a, &b, &opts).unwrap().to_vec::<f32>().unwrap()
    };
    let sk8 = gemm::configs(DType::Fp8E4M3Fnuz).into_iter().find(|c| c.stream_k).unwrap();
    let one_pass = GemmConfig { stream_k: false, ..sk8 };
    let (got, again, want) = (run(sk8), run(sk8), run(one_pass));
    assert_eq!(got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), again.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "element {i}: stream-K {g}, one pass {w}");
    }
}

#[test]
fn every_layout_and_dtype_at_a_ragged_size() {
    for dtype in [DType::Bf16, DType::F16, DType::F32, DType::Fp8E4M3Fnuz, DType::Fp8E5M2Fnuz] {
        for la in [Layout::RowMajor, Layout::Transposed] {
            for lb in [Layout::RowMajor, Layout::Transposed] {
                check(&Case {
                    m: 37,
                    n: 133,
                    k: 71,
                    dtype,
                    la,
                    lb,
                    out: Some(DType::F32),
                    precision: F32Precision::Exact,
                    seed: 7,
                    config: None,
                })
                .unwrap();
            }
        }
    }
}

#[test]
fn the_epilogue_applies_alpha_beta_bias_activation_and_residual_in_order() {
    let dev = device();
    let (m, n, k) = (70, 45, 33);
    let mut seed = 11;
    let split = GemmConfig { splits: 2, ..gemm::configs(DType::Bf16)[0] };
    let skinny_split = GemmConfig { splits: 4, ..gemm::tiled_config(DType::Bf16, 1, 1, 64, 64) };
    for (act, config) in [
        (Activation::None, None),
        (Activation::Relu, None),
        (Activation::GeluErf, None),
        (Activation::GeluTanh, None),
        (Activation::Silu, None),
        (Activation::GeluErf, Some(split)),
        (Activation::Silu, Some(skinny_split)),
    ] {
        let (a, av) = operand(m, k, DType::Bf16, Layout::RowMajor, &mut seed);
        let (b, bv) = operand(k, n, DType::Bf16, Layout::Transposed, &mut seed);
        let bias_v: Vec<f32> = (0..n).map(|j| (j as f32 - 20.0) / 16.0).collect();
        let bias = Tensor::from_slice(dev, &bias_v, &[n]).unwrap();
        let (res, res_h) = random(m, n, DType::F32, 0.5, &mut seed);
        let (c, c_h) = random(m, n, DType::F32, 1.0, &mut seed);
        let (alpha, beta) = (0.75f32, -0.5f32);
        let opts = GemmOptions {
            alpha,
            beta,
            bias: Some(&bias),
            activation: act,
            residual: Some(&res),
            out_dtype: Some(DType::F32),
            config,
            ..Default::default()
        };
        gemm::gemm_into(&a, &b, &c, &opts).unwrap();
        let got = c.to_vec::<f32>().unwrap();
        for i in 0..m {
            for j in 0..n {
                let (mut acc, mut s) = (0.0, 0.0);
                for p in 0..k {
                    acc += av[i * k + p] * bv[p * n + j];
                    s += (av[i * k + p] * bv[p * n + j]).abs();
                }
                let want = reference::gemm::epilogue(
                    acc,
                    alpha as f64,
                    beta as f64,
                    c_h.vals[i * n + j],
                    bias_v[j] as f64,
                    act,
                    res_h.vals[i * n + j],
                );
                let x = alpha as f64 * acc + beta as f64 * c_h.vals[i * n + j];
                let tol = 2f64.powi(-20) * (s + x.abs()) + 2e-6 * (1.0 + x.abs()) + out_ulp(DType::F32, want);
                let g = got[i * n + j] as f64;
                assert!((g - want).abs() <= tol, "{act:?} {config:?} C[{i}][{j}] = {g}, want {want}");
            }
        }
    }
}

#[test]
fn batches_broadcast_like_numpy_matmul() {
    let (bsz, m, n, k) = (3, 20, 17, 40);
    let mut seed = 5;
    let (a_flat, ah) = random(bsz * m, k, DType::F16, 1.0, &mut seed);
    let a = a_flat.reshape(&[bsz, m, k]).unwrap();
    let (b, bv) = operand(k, n, DType::F16, Layout::Transposed, &mut seed); // one B for all
    let c = gemm::gemm(&a, &b, &GemmOptions { out_dtype: Some(DType::F32), ..Default::default() }).unwrap();
    assert_eq!(c.shape(), &[bsz, m, n]);
    let got = c.to_vec::<f32>().unwrap();
    for z in 0..bsz {
        let want = reference::gemm::matmul(
            &ah.vals[z * m * k..(z + 1) * m * k].iter().map(|&x| x as f32).collect::<Vec<_>>(),
            &bv.iter().map(|&x| x as f32).collect::<Vec<_>>(),
            m,
            n,
            k,
        );
        for (g, w) in got[z * m * n..(z + 1) * m * n].iter().zip(&want) {
            assert!((*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()), "batch {z}: {g} vs {w}");
        }
    }
    // The same through split-K (batch-major partials, one reduction over all batches).
    let cfg = GemmConfig { splits: 2, ..gemm::configs(DType::F16)[0] };
    let c2 = gemm::gemm(&a, &b, &GemmOptions { out_dtype: Some(DType::F32), config: Some(cfg), ..Default::default() }).unwrap();
    for (x, y) in got.iter().zip(c2.to_vec::<f32>().unwrap()) {
        assert!((x - y).abs() <= 1e-5 * (1.0 + x.abs()), "split-K batch: {x} vs {y}");
    }
    // A 2-D A broadcast over a batch of B.
    let (b3, _) = random(bsz * k, n, DType::F16, 1.0, &mut seed);
    let b3 = b3.reshape(&[bsz, k, n]).unwrap();
    let a2 = a.narrow(0, 0, 1).unwrap().reshape(&[m, k]).unwrap();
    assert_eq!(gemm::matmul(&a2, &b3).unwrap().shape(), &[bsz, m, n]);
}

#[test]
fn nan_and_inf_propagate_and_fp8_extremes_are_exact() {
    let dev = device();
    let (m, n, k) = (16, 16, 32);
    // A NaN in row 3 of A poisons row 3 of C; an infinity in row 5 makes row 5 infinite.
    let mut a = vec![bf16::from_f32(0.5); m * k];
    a[3 * k + 7] = bf16::NAN;
    a[5 * k + 2] = bf16::INFINITY;
    let b = vec![bf16::from_f32(0.25); n * k];
    let ta = Tensor::from_slice(dev, &a, &[m, k]).unwrap();
    let tb = Tensor::from_slice(dev, &b, &[n, k]).unwrap().transpose(0, 1).unwrap();
    let c = gemm::gemm(&ta, &tb, &GemmOptions { out_dtype: Some(DType::F32), ..Default::default() }).unwrap();
    let got = c.to_vec::<f32>().unwrap();
    for j in 0..n {
        assert!(got[3 * n + j].is_nan());
        assert_eq!(got[5 * n + j], f32::INFINITY);
        assert_eq!(got[j], 0.5 * 0.25 * k as f32); // row 0
    }
    // fp8 at the format's limits: 240 * 240 * 32 is exact in f32.
    let a8 = vec![Fp8E4M3Fnuz::MAX; m * k];
    let b8 = vec![Fp8E4M3Fnuz::MIN; n * k];
    let ta = Tensor::from_slice(dev, &a8, &[m, k]).unwrap();
    let tb = Tensor::from_slice(dev, &b8, &[n, k]).unwrap().transpose(0, 1).unwrap();
    let c = gemm::gemm(&ta, &tb, &GemmOptions { out_dtype: Some(DType::F32), ..Default::default() }).unwrap();
    assert!(c.to_vec::<f32>().unwrap().iter().all(|&x| x == -240.0 * 240.0 * k as f32));
}

/// Every configuration on a C of whole wave tiles and edge ones (256 x 192), with special values
/// and sums that need rounding in every output type: each element is `alpha` times the exact
/// f32 sum rounded once to the output type (nearest even, ties included), NaN stays NaN,
/// infinities stay infinite, and an f16 result past 65504 becomes infinite.
#[test]
fn whole_tiles_round_once_and_keep_special_values() {
    let (m, n, k) = (256, 192, 40);
    // A[i][0] = 1 (special rows aside), A[i][1] = (i % 8) 2^-11, the rest 0; B[0][j] =
    // 1 + (j % 4) / 8, B[1][j] = j % 16 + 1, the rest 1. Every product and sum is exact in f32.
    let mut a = vec![0.0f64; m * k];
    for i in 0..m {
        a[i * k] = 1.0;
        a[i * k + 1] = (i % 8) as f64 * 2f64.powi(-11);
    }
    a[3 * k + 5] = f64::NAN; // row 3: NaN
    a[70 * k + 1] = f64::INFINITY; // row 70: +inf
    a[130 * k] = f64::NEG_INFINITY; // row 130: -inf
    a[200 * k] = 57344.0; // row 200: past f16's range once scaled by B[0][j] > 1.14
    let b: Vec<f64> = (0..k * n)
        .map(|x| {
            let (p, j) = (x / n, x % n);
            match p {
                0 => 1.0 + (j % 4) as f64 / 8.0,
                1 => (j % 16 + 1) as f64,
                _ => 1.0,
            }
        })
        .collect();
    let want: Vec<f64> = (0..m * n).map(|x| (0..k).map(|p| a[x / n * k + p] * b[p * n + x % n]).sum()).collect();
    for dtype in [DType::Bf16, DType::F16, DType::F32] {
        let bt: Vec<f64> = (0..n * k).map(|x| b[(x % k) * n + x / k]).collect();
        let (ta, tb) = (exact(&a, &[m, k], dtype), exact(&bt, &[n, k], dtype));
        let tb = tb.transpose(0, 1).unwrap();
        for (out, alpha) in [(DType::F32, 1.0), (DType::F16, 1.0), (DType::Bf16, 1.0), (DType::Bf16, -0.5), (DType::F32, -0.5)] {
            for config in gemm::configs(dtype) {
                let opts = GemmOptions { alpha, out_dtype: Some(out), config: Some(config), ..Default::default() };
                let got = read_f64(&gemm::gemm(&ta, &tb, &opts).unwrap());
                for (x, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    let w = alpha as f64 * w;
                    let w = match out {
                        DType::F16 => f16::from_f64(w).to_f64(),
                        DType::Bf16 => bf16::from_f64(w).to_f64(),
                        _ => w,
                    };
                    assert!(
                        g == w || (g.is_nan() && w.is_nan()),
                        "C[{}][{}] = {g}, want {w}: {dtype} -> {out}, alpha {alpha}, with {config:?}",
                        x / n,
                        x % n
                    );
                }
            }
        }
    }
}

/// The decode GEMV (M <= 16): its epilogue (alpha, beta * C, bias, activation, residual) in
/// order; B's row padding past K holding NaN never reaches C (the GEMV loads the last K-tile's
/// 16-byte pieces whole and must mask what lies past K); batches over one shared B; and the
/// same product at an odd offset (no 16-byte loads: the chooser falls back to the tiled GEMM,
/// a requested GEMV gets padded copies) agrees.
#[test]
fn the_gemv_runs_the_epilogue_masks_past_k_and_takes_any_operand() {
    let dev = device();
    let (m, n, k, ld) = (5, 40, 70, 80);
    let mut seed = 91;
    let (a, av) = operand(m, k, DType::Bf16, Layout::RowMajor, &mut seed);
    // B^T stored [n][ld]: K values, then NaN (the last 16-byte piece of K holds 2 of them).
    let (bt_full, bt_h) = random(n, ld, DType::Bf16, 1.5, &mut seed);
    let mut bt_vals = bt_full.to_vec::<bf16>().unwrap();
    for r in 0..n {
        for c in k..ld {
            bt_vals[r * ld + c] = bf16::NAN;
        }
    }
    let bt = Tensor::from_slice(dev, &bt_vals, &[n, ld]).unwrap().narrow(1, 0, k).unwrap();
    let b = bt.transpose(0, 1).unwrap();
    let bv = |p: usize, j: usize| bt_h.vals[j * ld + p];
    assert!(gemm::choose_config(DType::Bf16, 1, m, n, k).is_gemv());
    let bias_v: Vec<f32> = (0..n).map(|j| (j as f32 - 20.0) / 16.0).collect();
    let bias = Tensor::from_slice(dev, &bias_v, &[n]).unwrap();
    let (res, res_h) = random(m, n, DType::F32, 0.5, &mut seed);
    let (alpha, beta) = (0.75f32, -0.5f32);
    // The last case (no beta, bias or activation) is the kernel's linear epilogue.
    for (act, full) in [(Activation::None, true), (Activation::Silu, true), (Activation::GeluTanh, true), (Activation::None, false)] {
        let (c, c_h) = random(m, n, DType::F32, 1.0, &mut seed);
        let (bias, beta) = if full { (Some(&bias), beta) } else { (None, 0.0) };
        let opts = GemmOptions { alpha, beta, bias, activation: act, residual: Some(&res), ..Default::default() };
        gemm::gemm_into(&a, &b, &c, &opts).unwrap();
        let got = read_f64(&c);
        for i in 0..m {
            for j in 0..n {
                let (mut acc, mut s) = (0.0, 0.0);
                for p in 0..k {
                    acc += av[i * k + p] * bv(p, j);
                    s += (av[i * k + p] * bv(p, j)).abs();
                }
                let x = alpha as f64 * acc + beta as f64 * c_h.vals[i * n + j] + if full { bias_v[j] as f64 } else { 0.0 };
                let x = match act {
                    Activation::Silu => x / (1.0 + (-x).exp()),
                    Activation::GeluTanh => 0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh()),
                    _ => x,
                };
                let want = x + res_h.vals[i * n + j];
                let g = got[i * n + j];
                assert!((g - want).abs() <= 2f64.powi(-20) * (s + 1.0) + 1e-5 * want.abs(), "{act:?}: C[{i}][{j}] = {g}, want {want}");
            }
        }
    }
    // Batches over one B, through the GEMV, against the same rows one at a time.
    let (a3, _) = random(3 * m, k, DType::Bf16, 1.0, &mut seed);
    let batched = gemm::matmul(&a3.reshape(&[3, m, k]).unwrap(), &b).unwrap().to_vec::<bf16>().unwrap();
    let flat = gemm::matmul(&a3, &b).unwrap().to_vec::<bf16>().unwrap();
    assert_eq!(batched, flat, "a batch of 3 against 3m rows");
    // A at an odd offset (2 bytes in): no 16-byte loads. Chooser and requested GEMV agree with
    // the aligned product.
    let (a_wide, _) = random(m, k + 1, DType::Bf16, 1.0, &mut seed);
    let a_odd = a_wide.narrow(1, 1, k).unwrap();
    let aligned = gemm::matmul(&ferrocm::ops::elementwise::copy(&a_odd).unwrap(), &b).unwrap().to_vec::<bf16>().unwrap();
    let chosen = gemm::matmul(&a_odd, &b).unwrap().to_vec::<bf16>().unwrap();
    let forced = GemmOptions { config: Some(gemm::gemv_config(DType::Bf16, k)), ..Default::default() };
    let requested = gemm::gemm(&a_odd, &b, &forced).unwrap().to_vec::<bf16>().unwrap();
    assert_eq!(requested, aligned, "a requested GEMV on padded copies");
    for (x, y) in chosen.iter().zip(&aligned) {
        // (The tiled GEMM sums in another order.)
        assert!((x.to_f64() - y.to_f64()).abs() <= 1e-2 * (1.0 + y.to_f64().abs()), "{x} vs {y}");
    }
}

/// K = 0 through the GEMV: the product is zero, so C is the epilogue of zero (bias, activation,
/// residual) for every M <= 16 row.
#[test]
fn the_gemv_of_an_empty_k_is_the_epilogue_of_zero() {
    let dev = device();
    let (m, n) = (3, 20);
    let a = Tensor::zeros(dev, &[m, 0], DType::Bf16).unwrap();
    let b = Tensor::zeros(dev, &[0, n], DType::Bf16).unwrap();
    assert!(gemm::choose_config(DType::Bf16, 1, m, n, 0).is_gemv());
    let bias_v: Vec<f32> = (0..n).map(|j| j as f32 - 7.5).collect();
    let bias = Tensor::from_slice(dev, &bias_v, &[n]).unwrap();
    let opts = GemmOptions { bias: Some(&bias), activation: Activation::Relu, out_dtype: Some(DType::F32), ..Default::default() };
    let c = gemm::gemm(&a, &b, &opts).unwrap().to_vec::<f32>().unwrap();
    for i in 0..m {
        for j in 0..n {
            assert_eq!(c[i * n + j], bias_v[j].max(0.0), "C[{i}][{j}]");
        }
    }
}

#[test]
fn bad_input_is_refused_before_launch() {
    let dev = device();
    let a = Tensor::zeros(dev, &[4, 8], DType::Bf16).unwrap();
    let b = Tensor::zeros(dev, &[9, 3], DType::Bf16).unwrap();
    assert!(matches!(gemm::matmul(&a, &b), Err(ferrocm::Error::Shape { .. })));
    let b16 = Tensor::zeros(dev, &[8, 3], DType::F16).unwrap();
    assert!(matches!(gemm::matmul(&a, &b16), Err(ferrocm::Error::DTypeMismatch { .. })));
    let bi = Tensor::zeros(dev, &[8, 3], DType::I32).unwrap();
    let ai = Tensor::zeros(dev, &[4, 8], DType::I32).unwrap();
    assert!(matches!(gemm::matmul(&ai, &bi), Err(ferrocm::Error::DTypeMismatch { .. })));
    let b = Tensor::zeros(dev, &[8, 3], DType::Bf16).unwrap();
    let bad_bias = Tensor::zeros(dev, &[4], DType::F32).unwrap();
    let opts = GemmOptions { bias: Some(&bad_bias), ..Default::default() };
    assert!(matches!(gemm::gemm(&a, &b, &opts), Err(ferrocm::Error::Shape { .. })));
    let opts = GemmOptions { beta: 1.0, ..Default::default() };
    assert!(matches!(gemm::gemm(&a, &b, &opts), Err(ferrocm::Error::InvalidArgument { .. })));
    let bogus = GemmConfig { splits: 3, ..gemm::configs(DType::Bf16)[0] };
    let opts = GemmOptions { config: Some(bogus), ..Default::default() };
    assert!(matches!(gemm::gemm(&a, &b, &opts), Err(ferrocm::Error::InvalidArgument { .. })));
    let b3 = Tensor::zeros(dev, &[2, 8, 3], DType::Bf16).unwrap();
    let a3 = Tensor::zeros(dev, &[3, 4, 8], DType::Bf16).unwrap();
    assert!(matches!(gemm::matmul(&a3, &b3), Err(ferrocm::Error::Shape { .. })));
}

/// A bias or residual given as a view (broadcast, strided, transposed) is read correctly: the
/// contiguous copy the op makes of it stays alive until the kernel has read it, for every input
/// dtype and on the split-K path too.
#[test]
fn strided_and_broadcast_bias_and_residual_for_every_dtype() {
    let dev = device();
    let (m, n, k) = (37, 45, 40);
    let mut seed = 2024;
    let inputs = [
        (DType::F32, F32Precision::Exact, DType::F32),
        (DType::F32, F32Precision::Xf32, DType::F32),
        (DType::F16, F32Precision::Exact, DType::F16),
        (DType::Bf16, F32Precision::Exact, DType::Bf16),
        (DType::Fp8E4M3Fnuz, F32Precision::Exact, DType::Bf16),
        (DType::Fp8E5M2Fnuz, F32Precision::Exact, DType::Bf16),
    ];
    for (dtype, precision, out) in inputs {
        for splits in [1, 2] {
            let (a, av) = operand(m, k, dtype, Layout::RowMajor, &mut seed);
            let (b, bv) = operand(k, n, dtype, Layout::Transposed, &mut seed);
            // Bias 1: one value broadcast to [n] (stride 0). Bias 2: every other element of a
            // [n, 2] tensor (stride 2).
            let one = Tensor::from_slice(dev, &[0.5f32], &[1]).unwrap();
            let pairs: Vec<f32> = (0..2 * n).map(|i| (i as f32 - 40.0) / 32.0).collect();
            let wide = Tensor::from_slice(dev, &pairs, &[n, 2]).unwrap();
            let biases = [
                (one.broadcast_to(&[n]).unwrap(), vec![0.5; n]),
                (wide.narrow(1, 1, 1).unwrap().squeeze(1).unwrap(), (0..n).map(|j| pairs[2 * j + 1] as f64).collect()),
            ];
            // Residual 1: stored [n, m], used transposed. Residual 2: one row broadcast to [m, n].
            let (rt, rt_h) = random(n, m, out, 0.5, &mut seed);
            let (row, row_h) = random(1, n, out, 0.5, &mut seed);
            let residuals = [
                (rt.transpose(0, 1).unwrap(), (0..m * n).map(|x| rt_h.vals[(x % n) * m + x / n]).collect::<Vec<_>>()),
                (row.broadcast_to(&[m, n]).unwrap(), (0..m * n).map(|x| row_h.vals[x % n]).collect()),
            ];
            let config = GemmConfig { splits, ..gemm::choose_config(dtype, 1, m, n, k) };
            for ((bias, bias_v), (res, res_v)) in biases.iter().zip(&residuals) {
                let opts = GemmOptions {
                    bias: Some(bias),
                    residual: Some(res),
                    out_dtype: Some(out),
                    f32_precision: precision,
                    config: Some(config),
                    ..Default::default()
                };
                let c = gemm::gemm(&a, &b, &opts).unwrap_or_else(|e| panic!("{dtype} {precision:?} splits {splits}: {e}"));
                let got = read_f64(&c);
                let acc_rel = if precision == F32Precision::Xf32 { 2f64.powi(-9) } else { 2f64.powi(-21) };
                for i in 0..m {
                    for j in 0..n {
                        let (mut acc, mut s) = (0.0, 0.0);
                        for p in 0..k {
                            acc += av[i * k + p] * bv[p * n + j];
                            s += (av[i * k + p] * bv[p * n + j]).abs();
                        }
                        let want = acc + bias_v[j] + res_v[i * n + j];
                        let tol = acc_rel * s + out_ulp(out, want) + 1e-30;
                        let g = got[i * n + j];
                        assert!((g - want).abs() <= tol, "{dtype} {precision:?} splits {splits}: C[{i}][{j}] = {g}, want {want}");
                    }
                }
            }
        }
    }
}
