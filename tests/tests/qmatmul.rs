//! Quantized matmul on the device against the f64 reference: `y = x W^T` for every GGML format,
//! f32/f16/bf16 activations and outputs, ragged N, M of decode (1..=16) and beyond (17..=300),
//! K of whole blocks (with and without a partial last chunk), the fused epilogue, non-finite
//! scales, and bad input.
//!
//! Tolerance per output element: `(K / 32 + 16) * 2^-22 * s` with `s = sum_k |x_k| T_k`, `T_k`
//! the magnitude of the terms the device sums for weight k (`ferrocm_tests::quant::
//! term_magnitudes`: `|w|`, or `|a u| + |b|` for formats with a minimum): products of
//! activations and codes are exact and every group's f32 sum, its scaling and the accumulation
//! over K/32 groups round at most a few times each; plus the output's rounding (half an ulp) and
//! the epilogue's activation approximation (`2e-6 (1 + |x|)`). The prefill GEMM (f16 or bf16
//! activations; the prefill suites force it and the GEMV in turn, and run the automatic choice)
//! multiplies the weights in the activations' type (bf16: rounded once; f16:
//! packed f16 arithmetic on the scale and minimum rounded to f16): half an ulp of that type
//! times `sum_k |x_k| (T_k + |w_k|)` more, and for f16 `2^-19` per term (subnormal spacing of
//! the scale, minimum and weight).

use ferrocm::ops::gemm::Activation;
use ferrocm::ops::qmatmul::{self, QKernel, QMatmulOptions, RmsNorm};
use ferrocm::quant::{QuantFormat, QuantTensor};
use ferrocm::{DType, Error, Tensor, reference};
use ferrocm_tests::quant::{random_blocks, term_magnitudes};
use ferrocm_tests::tensors::{random, read, rounding, tensor};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

/// One product to check.
struct Case {
    format: QuantFormat,
    m: usize,
    n: usize,
    k: usize,
    x_dtype: DType,
    out: Option<DType>,
    bias: bool,
    activation: Activation,
    residual: bool,
    kernel: QKernel,
    seed: u64,
    /// RMSNorm of x first: whether it has a weight, and eps.
    norm: Option<(bool, f32)>,
}

fn check(c: &Case) -> Result<(), TestCaseError> {
    let dev = device();
    let mut seed = c.seed;
    let blocks = random_blocks(c.format, c.n, c.k, 0.05, c.seed);
    let w = QuantTensor::from_blocks(dev, c.format, [c.n, c.k], &blocks).unwrap();
    let (x, xv) = random(&[c.m, c.k], c.x_dtype, 1.0, &mut seed);
    let out = c.out.unwrap_or(c.x_dtype);
    let bias_v: Vec<f32> = (0..c.n).map(|j| (j % 7) as f32 * 0.25 - 0.75).collect();
    let bias = Tensor::from_slice(dev, &bias_v, &[c.n]).unwrap();
    let (res, res_v) = random(&[c.m, c.n], out, 0.5, &mut seed);
    let (norm_w, norm_wv) = random(&[c.k], c.x_dtype, 1.5, &mut seed);
    let opts = QMatmulOptions {
        bias: c.bias.then_some(&bias),
        activation: c.activation,
        residual: c.residual.then_some(&res),
        out_dtype: c.out,
        kernel: c.kernel,
        rms_norm: c.norm.map(|(weighted, eps)| RmsNorm { weight: weighted.then_some(&norm_w), eps }),
        ..Default::default()
    };
    // With the norm, the product's activations are the f64 RMSNorm of x; the device rounds
    // them to x's dtype from an f32 statistic, so each may land on either neighbour of the
    // exact value: one ulp (three half ulps with the statistic's error), which `act_err`
    // carries into the tolerance.
    let (xv, act_err): (Vec<f64>, Vec<f64>) = match c.norm {
        None => (xv, vec![0.0; c.m * c.k]),
        Some((weighted, eps)) => {
            let hn = reference::norm::rms_norm(&xv, c.k, weighted.then_some(&norm_wv[..]), eps as f64);
            let err = hn.iter().map(|&v| 3.0 * rounding(c.x_dtype, v)).collect();
            (hn, err)
        }
    };
    let y = qmatmul::qmatmul(&x, &w, &opts).unwrap();
    prop_assert_eq!(y.shape(), &[c.m, c.n]);
    prop_assert_eq!(y.dtype(), out);
    let got = read(&y);
    let acc = reference::quant::matmul(c.format, &blocks, c.n, c.k, &xv, c.m);
    let terms = term_magnitudes(c.format, &blocks);
    let rel = (c.k as f64 / 32.0 + 16.0) * 2f64.powi(-22);
    // The prefill GEMM rounds the weights to the activations' type.
    let gemm = match c.kernel {
        QKernel::Auto => qmatmul::choose_kernel(c.m, c.n, c.k, c.x_dtype) == QKernel::Gemm,
        k => k == QKernel::Gemm,
    };
    let w_round = if gemm { ferrocm_tests::tensors::half_ulp(c.x_dtype) } else { 0.0 };
    let w_abs = if gemm && c.x_dtype == DType::F16 { 2f64.powi(-19) } else { 0.0 };
    let wv = reference::quant::dequantize(c.format, &blocks);
    for i in 0..c.m {
        for j in 0..c.n {
            let s: f64 = (0..c.k).map(|p| (xv[i * c.k + p].abs() + act_err[i * c.k + p]) * terms[j * c.k + p]).sum();
            let sa: f64 = (0..c.k).map(|p| act_err[i * c.k + p] * (terms[j * c.k + p] + wv[j * c.k + p].abs())).sum();
            let sw: f64 = (0..c.k).map(|p| xv[i * c.k + p].abs() * (w_round * (terms[j * c.k + p] + wv[j * c.k + p].abs()) + w_abs)).sum();
            let a = acc[i * c.n + j];
            let b = if c.bias { bias_v[j] as f64 } else { 0.0 };
            let r = if c.residual { res_v[i * c.n + j] } else { 0.0 };
            let want = reference::gemm::epilogue(a, 1.0, 0.0, 0.0, b, c.activation, r);
            let pre = a + b;
            let tol = rel * s + sw + sa + rounding(out, want) + 2e-6 * (1.0 + pre.abs()) + 1e-30;
            let g = got[i * c.n + j];
            prop_assert!(
                (g - want).abs() <= tol,
                "{} m={} n={} k={} x {} out {}: y[{}][{}] = {}, want {} (tol {:e})",
                c.format,
                c.m,
                c.n,
                c.k,
                c.x_dtype,
                out,
                i,
                j,
                g,
                want,
                tol
            );
        }
    }
    Ok(())
}

fn format() -> impl Strategy<Value = QuantFormat> {
    prop::sample::select(QuantFormat::ALL.to_vec())
}

fn x_dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(vec![DType::F16, DType::Bf16, DType::F32])
}

/// Either kernel forced, or the automatic choice (the GEMM only for f16/bf16 activations).
fn kernel_for(x: DType, pick: usize) -> QKernel {
    match (x, pick % 3) {
        (DType::F32, 0) => QKernel::Gemv,
        (DType::F32, _) => QKernel::Auto,
        (_, 0) => QKernel::Gemm,
        (_, 1) => QKernel::Gemv,
        _ => QKernel::Auto,
    }
}

/// K for `format`: whole blocks; for the 32-weight formats often not a multiple of 256 (a partial
/// last chunk).
fn k_for(format: QuantFormat, blocks: usize) -> usize {
    format.block_elems() * if format.block_elems() == 256 { 1 + blocks % 6 } else { blocks }
}

proptest! {
    #![proptest_config(proptest_config(24))]

    /// Decode shapes: M 1..=16, ragged N, every format and activation dtype.
    #[test]
    fn decode_shapes_match_the_reference(format in format(), m in 1usize..=16, n in 1usize..=90, blocks in 1usize..=40,
                                         x in x_dtype(), seed in any::<u64>()) {
        check(&Case { format, m, n, k: k_for(format, blocks), x_dtype: x, out: Some(DType::F32), bias: false,
                      activation: Activation::None, residual: false, kernel: QKernel::Auto, seed, norm: None })?;
    }

    /// Prefill shapes: M 17..=300, the GEMM (f16/bf16, ragged in its 128 x 64 blocks) and the
    /// GEMV in passes of 16 rows forced in turn, and the automatic choice.
    #[test]
    fn prefill_shapes_match_the_reference(format in format(), m in 17usize..=300, n in 1usize..=150, blocks in 1usize..=12,
                                          x in x_dtype(), pick in 0usize..3, seed in any::<u64>()) {
        check(&Case { format, m, n, k: k_for(format, blocks), x_dtype: x, out: Some(DType::F32), bias: false,
                      activation: Activation::None, residual: false, kernel: kernel_for(x, pick), seed, norm: None })?;
    }

    /// The prefill GEMM's epilogue and output dtypes.
    #[test]
    fn the_prefill_epilogue_matches_the_reference(format in format(), m in 17usize..=160, n in 1usize..=100,
                                                  blocks in 1usize..=10, x in prop::sample::select(vec![DType::F16, DType::Bf16]),
                                                  out in prop::sample::select(vec![None, Some(DType::F32), Some(DType::F16), Some(DType::Bf16)]),
                                                  act in prop::sample::select(vec![Activation::None, Activation::Relu, Activation::GeluErf, Activation::GeluTanh, Activation::Silu]),
                                                  bias in any::<bool>(), residual in any::<bool>(), seed in any::<u64>()) {
        check(&Case { format, m, n, k: k_for(format, blocks), x_dtype: x, out, bias, activation: act, residual,
                      kernel: QKernel::Gemm, seed, norm: None })?;
    }

    /// The fused epilogue and the output dtypes.
    #[test]
    fn the_epilogue_and_output_dtypes_match_the_reference(format in format(), m in 1usize..=20, n in 1usize..=50,
                                                          blocks in 1usize..=10, x in x_dtype(),
                                                          out in prop::sample::select(vec![None, Some(DType::F32), Some(DType::F16), Some(DType::Bf16)]),
                                                          act in prop::sample::select(vec![Activation::None, Activation::Relu, Activation::GeluErf, Activation::GeluTanh, Activation::Silu]),
                                                          bias in any::<bool>(), residual in any::<bool>(), seed in any::<u64>()) {
        check(&Case { format, m, n, k: k_for(format, blocks), x_dtype: x, out, bias, activation: act, residual,
                      kernel: QKernel::Auto, seed, norm: None })?;
    }
}

proptest! {
    #![proptest_config(proptest_config(24))]

    /// RMSNorm of the activations first: fused into the GEMV (f16/bf16, up to two blocks of 16
    /// rows), or `norm::rms_norm` before the GEMM or for f32 activations; with and without the
    /// norm's weight, with the epilogue.
    #[test]
    fn the_normalised_product_matches_the_reference(format in format(), m in prop_oneof![1usize..=16, 17usize..=40],
                                                    n in 1usize..=60, blocks in 1usize..=24, x in x_dtype(), pick in 0usize..3,
                                                    weighted in any::<bool>(), eps in prop::sample::select(vec![0.0f32, 1e-6, 1e-5, 0.5]),
                                                    residual in any::<bool>(), seed in any::<u64>()) {
        let kernel = if m <= 16 && pick == 0 { QKernel::Gemv } else { kernel_for(x, pick) };
        check(&Case { format, m, n, k: k_for(format, blocks), x_dtype: x, out: Some(DType::F32), bias: false,
                      activation: Activation::None, residual, kernel, seed, norm: Some((weighted, eps)) })?;
    }
}

/// SwiGLU fused into the GEMV: `silu(x Wg^T) * (x Wu^T)` from an interleaved gate/up weight.
/// Tolerance: the GEMV's bound for each product (`tg`, `tu`), carried through `silu(g) u`
/// (`|silu'| <= 1.1`), plus the f32 gate's evaluation (`2^-20` relative) and the output's
/// rounding.
fn check_swiglu(format: QuantFormat, m: usize, f: usize, k: usize, x_dtype: DType, out: DType, seed: u64) -> Result<(), TestCaseError> {
    let dev = device();
    let mut s = seed;
    let gate = random_blocks(format, f, k, 0.05, seed);
    let up = random_blocks(format, f, k, 0.05, seed ^ 0x5555);
    let both = QuantTensor::interleave_halves(format, k, &gate, &up).unwrap();
    let w = QuantTensor::from_blocks(dev, format, [2 * f, k], &both).unwrap();
    let (x, xv) = random(&[m, k], x_dtype, 1.0, &mut s);
    let opts = QMatmulOptions { swiglu: true, out_dtype: Some(out), ..Default::default() };
    let y = qmatmul::qmatmul(&x, &w, &opts).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(y.shape(), &[m, f]);
    let got = read(&y);
    let (ag, au) = (reference::quant::matmul(format, &gate, f, k, &xv, m), reference::quant::matmul(format, &up, f, k, &xv, m));
    let (tg_terms, tu_terms) = (term_magnitudes(format, &gate), term_magnitudes(format, &up));
    let rel = (k as f64 / 32.0 + 16.0) * 2f64.powi(-22);
    for i in 0..m {
        for j in 0..f {
            let sum = |t: &[f64]| (0..k).map(|p| xv[i * k + p].abs() * t[j * k + p]).sum::<f64>();
            let (tg, tu) = (rel * sum(&tg_terms), rel * sum(&tu_terms));
            let (g, u) = (ag[i * f + j], au[i * f + j]);
            let silu = g / (1.0 + (-g).exp());
            let want = silu * u;
            let tol = 1.1 * tg * (u.abs() + tu) + silu.abs() * tu + 2f64.powi(-20) * want.abs() + rounding(out, want) + 1e-30;
            let v = got[i * f + j];
            // Products of two projections can pass f16's range: rounding then gives infinity.
            let overflows = out == DType::F16 && want.abs() + tol >= 65520.0;
            prop_assert!(
                (v - want).abs() <= tol || (overflows && v.is_infinite() && v.signum() == want.signum()),
                "{} m={} f={} k={} x {}: y[{}][{}] = {}, want {} (tol {:e})",
                format,
                m,
                f,
                k,
                x_dtype,
                i,
                j,
                v,
                want,
                tol
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(proptest_config(16))]

    /// SwiGLU in the GEMV's epilogue: every format, M in one pass and several, ragged tiles.
    #[test]
    fn swiglu_matches_the_reference(format in format(), m in prop_oneof![1usize..=16, 17usize..=40], tiles in 1usize..=12,
                                    blocks in 1usize..=12, x in x_dtype(),
                                    out in prop::sample::select(vec![DType::F32, DType::F16, DType::Bf16]), seed in any::<u64>()) {
        check_swiglu(format, m, 8 * tiles, k_for(format, blocks), x, out, seed)?;
    }
}

#[test]
fn swiglu_at_smollm2_shapes_and_its_bad_input() {
    // SmolLM2-135M's MLP: 1536 gate and 1536 up rows of K = 576, one decode token.
    check_swiglu(QuantFormat::Q4_1, 1, 1536, 576, DType::F16, DType::F16, 3).unwrap();
    let dev = device();
    let blocks = random_blocks(QuantFormat::Q8_0, 24, 64, 0.1, 1);
    let x = Tensor::zeros(dev, &[2, 64], DType::F16).unwrap();
    let glu = QMatmulOptions { swiglu: true, ..Default::default() };
    // N not a multiple of 16.
    let w24 = QuantTensor::from_blocks(dev, QuantFormat::Q8_0, [24, 64], &blocks).unwrap();
    assert!(matches!(qmatmul::qmatmul(&x, &w24, &glu), Err(Error::Shape { .. })));
    let w16 = QuantTensor::from_blocks(dev, QuantFormat::Q8_0, [16, 64], &blocks[..16 * 68]).unwrap();
    assert_eq!(qmatmul::qmatmul(&x, &w16, &glu).unwrap().shape(), &[2, 8]);
    // With an epilogue, or on the GEMM.
    let bias = Tensor::zeros(dev, &[16], DType::F32).unwrap();
    assert!(matches!(qmatmul::qmatmul(&x, &w16, &QMatmulOptions { bias: Some(&bias), ..glu }), Err(Error::InvalidArgument { .. })));
    let act = QMatmulOptions { activation: Activation::Silu, ..glu };
    assert!(matches!(qmatmul::qmatmul(&x, &w16, &act), Err(Error::InvalidArgument { .. })));
    assert!(matches!(qmatmul::qmatmul(&x, &w16, &QMatmulOptions { kernel: QKernel::Gemm, ..glu }), Err(Error::Unsupported { .. })));
    // Halves that do not pair up.
    let g = &blocks[..8 * 68];
    assert!(QuantTensor::interleave_halves(QuantFormat::Q8_0, 64, g, &blocks[..16 * 68]).is_err());
    assert!(QuantTensor::interleave_halves(QuantFormat::Q8_0, 64, &g[..4 * 68], &g[..4 * 68]).is_err());
    assert!(QuantTensor::interleave_halves(QuantFormat::Q8_0, 48, g, g).is_err());
}

/// The shapes of SmolLM2-135M's projections (K = 576 is 18 blocks of 32, not a multiple of 256;
/// K = 1536) for its formats, one decode token and a small batch.
/// The plain product through the GEMV, f32 out: no bias, activation, residual or norm.
fn gemv_case(format: QuantFormat, m: usize, n: usize, k: usize, x_dtype: DType, seed: u64) -> Case {
    Case {
        format,
        m,
        n,
        k,
        x_dtype,
        out: Some(DType::F32),
        bias: false,
        activation: Activation::None,
        residual: false,
        kernel: QKernel::Gemv,
        seed,
        norm: None,
    }
}

/// A row's partial last chunk (K not a multiple of 256: 1 to 7 groups of 32) is the last wave's
/// whole share, computed beside the full chunks and added in the workgroup's reduction: every
/// length, behind 0, 1, 2, 5 and 14 full chunks (1, 2, 3, 4 and 8 waves in all), f16/bf16/f32
/// activations, the fused norm (whose staged rows fill the waves' tables of sums); and
/// workgroups of several tiles (N past 304 tiles), whose waves take their partial chunks tile
/// after tile.
#[test]
fn partial_last_chunks_of_every_length_match_the_reference() {
    let mut seed = 11;
    for format in QuantFormat::ALL.into_iter().filter(|f| f.block_elems() == 32) {
        for tail in 1..=7 {
            for full in [0, 1, 2, 5, 14] {
                let x_dtype = [DType::F16, DType::Bf16, DType::F32][(tail + full) % 3];
                let c = gemv_case(format, 1 + tail % 3, 37, 32 * (8 * full + tail), x_dtype, seed);
                check(&c).unwrap();
                if x_dtype != DType::F32 {
                    check(&Case { norm: Some((tail % 2 == 0, 1e-5)), ..c }).unwrap();
                    // The one-row kernel, its norm run first.
                    let one = Case { m: 1, kernel: QKernel::GemvOne, ..c };
                    check(&one).unwrap();
                    check(&Case { norm: Some((tail % 2 == 1, 1e-5)), out: Some(x_dtype), residual: true, ..one }).unwrap();
                }
                seed += 1;
            }
        }
        let c = Case { out: None, bias: true, residual: true, ..gemv_case(format, 2, 16 * 306 + 8, 32 * (8 * 2 + 3), DType::F16, seed) };
        check(&c).unwrap();
        // The one-row kernel forced past the GPU's units: a workgroup per tile all the same.
        check(&Case { m: 1, kernel: QKernel::GemvOne, activation: Activation::GeluTanh, ..c }).unwrap();
        check(&Case { norm: Some((true, 1e-5)), residual: false, ..c }).unwrap();
    }
    // Eight waves of two full chunks each (the k-quants' chunks are always full); the one-row
    // kernel's eight waves of two chunks, and of three with the partial chunk's ninth wave
    // folded in.
    for (format, x_dtype) in [(QuantFormat::Q4K, DType::F16), (QuantFormat::Q6K, DType::F32), (QuantFormat::Q5_1, DType::Bf16)] {
        check(&gemv_case(format, 3, 40, 4096, x_dtype, 99)).unwrap();
        if x_dtype != DType::F32 {
            check(&Case { m: 1, kernel: QKernel::GemvOne, ..gemv_case(format, 1, 40, 4096, x_dtype, 98) }).unwrap();
        }
    }
    for k in [32 * (8 * 16 + 5), 32 * (8 * 21 + 1)] {
        check(&Case { m: 1, kernel: QKernel::GemvOne, ..gemv_case(QuantFormat::Q4_0, 1, 24, k, DType::Bf16, 97) }).unwrap();
    }
}

#[test]
fn smollm2_projection_shapes() {
    for (format, n, k) in
        [(QuantFormat::Q4_1, 576, 576), (QuantFormat::Q4_1, 192, 576), (QuantFormat::Q4_1, 576, 1536), (QuantFormat::Q8_0, 300, 576)]
    {
        for (m, x_dtype) in [(1, DType::F16), (4, DType::Bf16), (1, DType::F32)] {
            let c = Case {
                format,
                m,
                n,
                k,
                x_dtype,
                out: None,
                bias: false,
                activation: Activation::None,
                residual: false,
                kernel: QKernel::Auto,
                seed: 5,
                norm: None,
            };
            check(&c).unwrap();
            // The block's RMSNorm first (fused into the GEMV for f16/bf16), as the model runs it.
            check(&Case { norm: Some((true, 1e-5)), ..c }).unwrap();
        }
    }
}

#[test]
fn leading_dimensions_are_rows_and_views_are_read_in_place_or_packed() {
    let dev = device();
    let (n, k) = (40, 96);
    let blocks = random_blocks(QuantFormat::Q4_0, n, k, 0.1, 3);
    let w = QuantTensor::from_blocks(dev, QuantFormat::Q4_0, [n, k], &blocks).unwrap();
    let mut seed = 1;
    let (x, _) = random(&[2, 3, k], DType::F16, 1.0, &mut seed);
    let y = qmatmul::qmatmul(&x, &w, &QMatmulOptions::default()).unwrap();
    assert_eq!(y.shape(), &[2, 3, n]);
    let flat = qmatmul::qmatmul(&x.reshape(&[6, k]).unwrap(), &w, &QMatmulOptions::default()).unwrap();
    assert_eq!(read(&y), read(&flat));
    // A strided view (every other row) gives the rows it selects.
    let (wide, _) = random(&[4, 2 * k], DType::F32, 1.0, &mut seed);
    let view = wide.narrow(1, k, k).unwrap();
    let got = read(&qmatmul::qmatmul(&view, &w, &QMatmulOptions::default()).unwrap());
    let packed = read(&qmatmul::qmatmul(&view.contiguous().unwrap(), &w, &QMatmulOptions::default()).unwrap());
    assert_eq!(got, packed);
    // A contiguous view at an offset of one element (2 bytes: not 16-byte aligned), and a norm
    // weight likewise: read as their packed copies are.
    let (long, _) = random(&[1, k + 1], DType::F16, 1.0, &mut seed);
    let odd = long.narrow(1, 1, k).unwrap();
    assert!(odd.is_contiguous() && odd.addr() % 16 != 0);
    let (wlong, _) = random(&[k + 1], DType::F16, 1.0, &mut seed);
    let wodd = wlong.narrow(0, 1, k).unwrap();
    let copy = |t: &Tensor| ferrocm::ops::elementwise::copy(t).unwrap();
    let (odd_packed, wodd_packed) = (copy(&odd), copy(&wodd));
    for kernel in [QKernel::Gemv, QKernel::Gemm] {
        let run = |x: &Tensor, g: &Tensor| {
            let opts = QMatmulOptions { kernel, rms_norm: Some(RmsNorm { weight: Some(g), eps: 1e-6 }), ..Default::default() };
            read(&qmatmul::qmatmul(x, &w, &opts).unwrap())
        };
        assert_eq!(run(&odd, &wodd), run(&odd_packed, &wodd_packed), "{kernel:?}");
    }
}

/// Every format's GEMM kernel on both activation types (the proptests draw formats at random).
#[test]
fn every_prefill_gemm_kernel_matches_the_reference() {
    for format in QuantFormat::ALL {
        for (i, x_dtype) in [DType::F16, DType::Bf16].into_iter().enumerate() {
            let k = 2 * format.block_elems() * if format.block_elems() == 32 { 5 } else { 1 };
            check(&Case {
                format,
                m: 130 + i,
                n: 70,
                k,
                x_dtype,
                out: Some(DType::F32),
                bias: false,
                activation: Activation::None,
                residual: false,
                kernel: QKernel::Gemm,
                seed: 9 + i as u64,
                norm: None,
            })
            .unwrap();
        }
    }
}

/// The prefill GEMM with K split over workgroups (`qmatmul::gemm_splits`: few blocks, long K),
/// summed by the second pass, which runs the epilogue: 4 splits of 3 chunks of a K with a
/// partial last chunk (the last split holds only that one: its first group of waves has no
/// K-tile), and 8 splits of 2 chunks of a k-quant, with bias, activation, residual and a half
/// output; the split counts are the ones the tests assert, so the shapes cover what they say.
#[test]
fn split_prefill_gemm_matches_the_reference() {
    let units = ferrocm::MI300X_CUS;
    for (format, m, n, k, splits) in
        [(QuantFormat::Q4_1, 40, 70, 32 * 75, 4), (QuantFormat::Q4K, 130, 64, 4096, 8), (QuantFormat::Q6K, 17, 33, 1024, 2)]
    {
        assert_eq!(qmatmul::gemm_splits(units, m, n, k), splits, "{format} {m}x{n}x{k}");
        for (i, x_dtype) in [DType::F16, DType::Bf16].into_iter().enumerate() {
            check(&Case {
                format,
                m,
                n,
                k,
                x_dtype,
                out: Some(x_dtype),
                bias: true,
                activation: Activation::Silu,
                residual: i == 0,
                kernel: QKernel::Gemm,
                seed: 21 + i as u64,
                norm: None,
            })
            .unwrap();
        }
    }
    // Blocks enough to fill the units (or a short K) keep one pass.
    assert_eq!(qmatmul::gemm_splits(units, 512, 4096, 4096), 1);
    assert_eq!(qmatmul::gemm_splits(units, 130, 64, 512), 1);
}

/// Every format's GEMV with the fused RMSNorm, on both activation types, with a partial last
/// chunk where the format has one; one row (both waves of the workgroup on it) and two (a
/// wave each: the most a 2-wave workgroup normalises itself), and 16 (the norm then runs as a
/// launch of its own first).
#[test]
fn every_fused_norm_kernel_matches_the_reference() {
    for format in QuantFormat::ALL {
        for (i, x_dtype) in [DType::F16, DType::Bf16].into_iter().enumerate() {
            let k = format.block_elems() * if format.block_elems() == 32 { 11 } else { 2 };
            for m in [1, 2, 16] {
                check(&Case {
                    format,
                    m,
                    n: 37,
                    k,
                    x_dtype,
                    out: Some(DType::F32),
                    bias: false,
                    activation: Activation::None,
                    residual: i == 1,
                    kernel: QKernel::Gemv,
                    seed: 21 + i as u64,
                    norm: Some((m == 1, 1e-6)),
                })
                .unwrap();
            }
        }
    }
}

/// The fused norm's edge rows (bf16, K = 64, one row each): values near bf16's maximum, whose
/// squares overflow f32 unless scaled (the result is that of the scaled statistic: finite and
/// matching the f64 reference); a zero row with eps > 0 (zeros); a row holding an infinity and
/// one holding a NaN (NaN throughout, as `norm::rms_norm` gives).
#[test]
fn the_fused_norm_scales_huge_rows_and_makes_non_finite_rows_nan() {
    let dev = device();
    let (n, k) = (16, 64);
    let format = QuantFormat::Q8_0;
    let blocks = random_blocks(format, n, k, 0.1, 4);
    let w = QuantTensor::from_blocks(dev, format, [n, k], &blocks).unwrap();
    let mut rows: Vec<f64> = Vec::new();
    rows.extend((0..k).map(|j| if j % 2 == 0 { 3.0e38 } else { -1.0e38 })); // huge
    rows.extend(std::iter::repeat_n(0.0, k)); // zero
    rows.extend((0..k).map(|j| if j == 5 { f64::INFINITY } else { 1.0 })); // an infinity
    rows.extend((0..k).map(|j| if j == 9 { f64::NAN } else { 1.0 })); // a NaN
    let (x, xv) = tensor(&rows, &[4, k], DType::Bf16);
    for kernel in [QKernel::Gemv, QKernel::Gemm] {
        let opts = QMatmulOptions {
            rms_norm: Some(RmsNorm { weight: None, eps: 1e-6 }),
            out_dtype: Some(DType::F32),
            kernel,
            ..Default::default()
        };
        let y = qmatmul::qmatmul(&x, &w, &opts).unwrap().to_vec::<f32>().unwrap();
        let hn = reference::norm::rms_norm(&xv[..2 * k], k, None, 1e-6);
        let want = reference::quant::matmul(format, &blocks, n, k, &ferrocm_tests::tensors::round_to(&hn, DType::Bf16), 2);
        for j in 0..n {
            let tol = 0.05 * (want[j].abs() + 1.0);
            assert!((y[j] as f64 - want[j]).abs() <= tol, "{kernel:?} huge row: y[{j}] = {}, want {}", y[j], want[j]);
            assert_eq!(y[n + j], 0.0, "{kernel:?} zero row");
            assert!(y[2 * n + j].is_nan(), "{kernel:?} a row with an infinity: y[{j}] = {}", y[2 * n + j]);
            assert!(y[3 * n + j].is_nan(), "{kernel:?} a row with a NaN: y[{j}] = {}", y[3 * n + j]);
        }
    }
}

/// The norm's weight and eps are checked as `norm::rms_norm` checks them.
#[test]
fn bad_norm_arguments_are_refused() {
    let dev = device();
    let blocks = random_blocks(QuantFormat::Q4_0, 16, 64, 0.1, 2);
    let w = QuantTensor::from_blocks(dev, QuantFormat::Q4_0, [16, 64], &blocks).unwrap();
    let x = Tensor::zeros(dev, &[1, 64], DType::Bf16).unwrap();
    let short = Tensor::zeros(dev, &[63], DType::Bf16).unwrap();
    let f32w = Tensor::zeros(dev, &[64], DType::F32).unwrap();
    let good = Tensor::zeros(dev, &[64], DType::Bf16).unwrap();
    let run = |weight: Option<&Tensor>, eps: f32| {
        qmatmul::qmatmul(&x, &w, &QMatmulOptions { rms_norm: Some(RmsNorm { weight, eps }), ..Default::default() })
    };
    assert!(matches!(run(Some(&short), 1e-6), Err(Error::Shape { .. })));
    assert!(matches!(run(Some(&f32w), 1e-6), Err(Error::DTypeMismatch { .. })));
    assert!(matches!(run(Some(&good), -1.0), Err(Error::InvalidArgument { .. })));
    assert!(matches!(run(Some(&good), f32::NAN), Err(Error::InvalidArgument { .. })));
    assert!(run(Some(&good), 0.0).is_ok());
    // A weight on another device is named, not read.
    let other = ferrocm::Device::new().unwrap();
    let foreign = Tensor::zeros(&other, &[64], DType::Bf16).unwrap();
    match run(Some(&foreign), 1e-6) {
        Err(Error::DeviceMismatch { operand, .. }) => assert_eq!(operand, "norm weight"),
        r => panic!("a foreign norm weight gave {r:?}"),
    }
}

/// NaN and infinite scales and a NaN activation through the decode GEMV (M = 2, f32) and the
/// prefill GEMM (M = 20 f16, M = 40 bf16).
#[test]
fn non_finite_scales_and_activations_make_their_outputs_non_finite() {
    for (rows, x_dtype) in [(2, DType::F32), (20, DType::F16), (40, DType::Bf16)] {
        non_finite_case(rows, x_dtype);
    }
}

fn non_finite_case(rows: usize, x_dtype: DType) {
    let dev = device();
    for format in QuantFormat::ALL {
        let (n, k) = (20, format.block_elems());
        let mut blocks = random_blocks(format, n, k, 0.1, 8);
        let bb = format.block_bytes();
        let at = ferrocm_tests::quant::scale_offsets(format)[0];
        // Row 3: scale NaN; row 5: scale +inf.
        blocks[3 * bb + at..3 * bb + at + 2].copy_from_slice(&half::f16::NAN.to_le_bytes());
        blocks[5 * bb + at..5 * bb + at + 2].copy_from_slice(&half::f16::INFINITY.to_le_bytes());
        let w = QuantTensor::from_blocks(dev, format, [n, k], &blocks).unwrap();
        // Exact in f16 and bf16 (multiples of 1/8 below 2).
        let mut xv: Vec<f32> = (0..rows * k).map(|i| ((i * 37) % 11) as f32 / 8.0 - 0.625).collect();
        xv[k + 7] = f32::NAN; // activation row 1 has a NaN
        let (x, xd) = tensor(&xv.iter().map(|&v| v as f64).collect::<Vec<_>>(), &[rows, k], x_dtype);
        let kernel = if x_dtype == DType::F32 { QKernel::Gemv } else { QKernel::Gemm };
        let opts = QMatmulOptions { out_dtype: Some(DType::F32), kernel, ..Default::default() };
        let y = qmatmul::qmatmul(&x, &w, &opts).unwrap().to_vec::<f32>().unwrap();
        let want = reference::quant::matmul(format, &blocks, n, k, &xd, rows);
        for (i, (g, w)) in y.iter().zip(&want).enumerate() {
            assert_eq!(g.is_finite(), w.is_finite(), "{format} {x_dtype}: y[{}][{}] = {g}, reference {w}", i / n, i % n);
            if w.is_nan() && i % n == 3 {
                assert!(g.is_nan(), "{format} {x_dtype}: a NaN scale gives NaN");
            }
        }
    }
}

#[test]
fn bad_input_is_refused_before_launch() {
    let dev = device();
    let blocks = random_blocks(QuantFormat::Q8_0, 8, 64, 0.1, 1);
    let w = QuantTensor::from_blocks(dev, QuantFormat::Q8_0, [8, 64], &blocks).unwrap();
    let x = Tensor::zeros(dev, &[2, 64], DType::F16).unwrap();
    // K mismatch.
    let x_bad = Tensor::zeros(dev, &[2, 96], DType::F16).unwrap();
    assert!(matches!(qmatmul::qmatmul(&x_bad, &w, &QMatmulOptions::default()), Err(Error::Shape { .. })));
    // Activation dtype.
    let xi = Tensor::zeros(dev, &[2, 64], DType::I32).unwrap();
    assert!(matches!(qmatmul::qmatmul(&xi, &w, &QMatmulOptions::default()), Err(Error::DTypeMismatch { .. })));
    // Output dtype, bias shape and dtype, residual dtype.
    let opts = QMatmulOptions { out_dtype: Some(DType::I8), ..Default::default() };
    assert!(matches!(qmatmul::qmatmul(&x, &w, &opts), Err(Error::DTypeMismatch { .. })));
    let bias = Tensor::zeros(dev, &[7], DType::F32).unwrap();
    let opts = QMatmulOptions { bias: Some(&bias), ..Default::default() };
    assert!(matches!(qmatmul::qmatmul(&x, &w, &opts), Err(Error::Shape { .. })));
    let bias16 = Tensor::zeros(dev, &[8], DType::F16).unwrap();
    let opts = QMatmulOptions { bias: Some(&bias16), ..Default::default() };
    assert!(matches!(qmatmul::qmatmul(&x, &w, &opts), Err(Error::Shape { .. })));
    // The GEMM forced on f32 activations: named, not run.
    let x32 = Tensor::zeros(dev, &[2, 64], DType::F32).unwrap();
    let opts = QMatmulOptions { kernel: QKernel::Gemm, ..Default::default() };
    assert!(matches!(qmatmul::qmatmul(&x32, &w, &opts), Err(Error::Unsupported { .. })));
    // The one-row GEMV forced on two rows or on an f32 row: named, not run.
    let one = QMatmulOptions { kernel: QKernel::GemvOne, ..Default::default() };
    assert!(matches!(qmatmul::qmatmul(&x, &w, &one), Err(Error::Unsupported { .. })));
    let x32_1 = Tensor::zeros(dev, &[1, 64], DType::F32).unwrap();
    assert!(matches!(qmatmul::qmatmul(&x32_1, &w, &one), Err(Error::Unsupported { .. })));
    let x1 = Tensor::zeros(dev, &[1, 64], DType::F16).unwrap();
    assert_eq!(qmatmul::qmatmul(&x1, &w, &one).unwrap().shape(), &[1, 8]);
    let w16 = QuantTensor::from_blocks(dev, QuantFormat::Q8_0, [16, 64], &random_blocks(QuantFormat::Q8_0, 16, 64, 0.1, 2)).unwrap();
    assert_eq!(qmatmul::qmatmul(&x1, &w16, &QMatmulOptions { swiglu: true, ..one }).unwrap().shape(), &[1, 8]);
    let res = Tensor::zeros(dev, &[2, 8], DType::F32).unwrap();
    let opts = QMatmulOptions { residual: Some(&res), ..Default::default() };
    assert!(matches!(qmatmul::qmatmul(&x, &w, &opts), Err(Error::DTypeMismatch { .. })));
    let res = Tensor::zeros(dev, &[3, 8], DType::F16).unwrap();
    let opts = QMatmulOptions { residual: Some(&res), ..Default::default() };
    assert!(qmatmul::qmatmul(&x, &w, &opts).is_err(), "a residual that does not broadcast");
    // Blocks of the wrong length and K not a multiple of the block.
    assert!(matches!(QuantTensor::from_blocks(dev, QuantFormat::Q8_0, [8, 64], &blocks[1..]), Err(Error::Shape { .. })));
    assert!(matches!(QuantTensor::from_blocks(dev, QuantFormat::Q4K, [1, 576], &vec![0; 324]), Err(Error::Shape { .. })));
}
