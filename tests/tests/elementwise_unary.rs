//! Unary ops and affine on the device against the f64 reference.
//!
//! Inputs are f32, f16 or bf16 values (exact in f64); the reference is the exact function of
//! those values; the device computes in f32 and rounds once to the dtype. Per-op tolerance,
//! as `ulps` of the output dtype at the reference value, plus a relative and an absolute term
//! covering the f32 computation (f32 ulp = 2^-23 relative):
//!
//! | op | ulps | relative | absolute | why |
//! |---|---|---|---|---|
//! | neg, abs, relu | 0 | 0 | 0 | exact |
//! | sqrt, recip | 1 | 0 | 0 | correctly rounded in f32, then rounded to the dtype |
//! | rsqrt | 2 | 0 | 0 | `1 / sqrt x`: two correctly rounded steps |
//! | exp | 1 | 2^-21 | 0 | LLVM's `v_exp_f32`-based expansion, a few f32 ulp |
//! | log | 1 | 2^-21 | 2^-24 | absolute near x = 1, where log crosses 0 |
//! | sigmoid, silu | 1 | 2^-20 | 0 | through `exp` and a division |
//! | tanh | 1 | 2^-21 | 2^-24 | `1 - 2/(e^2x + 1)` loses bits to cancellation for small x |
//! | gelu_erf | 1 | 2^-21 | 2e-7 (1 + abs x) | erf approximation error 1.5e-7 (absolute) |
//! | gelu_tanh | 1 | 2^-21 | 2^-22 (1 + abs x) | `1 + tanh` cancels for negative x |
//! | affine | 0 | 0 | 0 | reference computes the same f32 expression |
//!
//! NaN must give NaN; infinities must match. Each case draws a shape (rank 0-4 with sizes 1,
//! primes and non-multiples of the 4/8-element runs), a layout (contiguous, misaligned offset,
//! transposed, padded rows) and values from the op's domain mixed with the dtype's specials
//! (±0, ±inf, NaN, subnormals, ±max).

use ferrocm::ops::elementwise::{self as ew, UnaryOp};
use ferrocm::{DType, Tensor, reference};
use ferrocm_tests::values::{Layout, Rng, close, round_to, specials, view_of};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::Bf16];

/// (ulps, relative, absolute) tolerance of `op` at input `x` (see the module table).
fn tolerance(op: UnaryOp, x: f64) -> (f64, f64, f64) {
    let p = |e: i32| 2f64.powi(e);
    match op {
        UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu => (0.0, 0.0, 0.0),
        UnaryOp::Sqrt | UnaryOp::Recip => (1.0, 0.0, 0.0),
        UnaryOp::Rsqrt => (2.0, 0.0, 0.0),
        UnaryOp::Exp => (1.0, p(-21), 0.0),
        UnaryOp::Log => (1.0, p(-21), p(-24)),
        UnaryOp::Sigmoid | UnaryOp::Silu => (1.0, p(-20), 0.0),
        UnaryOp::Tanh => (1.0, p(-21), p(-24)),
        UnaryOp::GeluErf => (1.0, p(-21), 2e-7 * (1.0 + x.abs())),
        UnaryOp::GeluTanh => (1.0, p(-21), p(-22) * (1.0 + x.abs())),
    }
}

/// The input range an op is exercised on (beyond the specials).
fn domain(op: UnaryOp) -> (f64, f64) {
    match op {
        UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt => (-1.0, 100.0),
        UnaryOp::Exp => (-30.0, 30.0),
        UnaryOp::Recip => (-50.0, 50.0),
        _ => (-12.0, 12.0),
    }
}

/// `n` values: the op's domain, with about one in eight drawn from the dtype's specials.
fn values(op: UnaryOp, dtype: DType, n: usize, rng: &mut Rng) -> Vec<f64> {
    let sp = specials(dtype);
    let (lo, hi) = domain(op);
    (0..n).map(|_| if rng.below(8) == 0 { sp[rng.below(sp.len())] } else { round_to(dtype, rng.range(lo, hi)) }).collect()
}

fn compare(
    op: &str,
    dtype: DType,
    inputs: &[f64],
    got: &[f64],
    want: impl Fn(f64) -> f64,
    tol: impl Fn(f64) -> (f64, f64, f64),
) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), inputs.len());
    for (i, (&x, &g)) in inputs.iter().zip(got).enumerate() {
        let w = want(x);
        let (u, r, a) = tol(x);
        prop_assert!(close(dtype, g, w, u, r, a), "{op} {dtype} element {i}: f({x:e}) = {g:e}, want {w:e}");
    }
    Ok(())
}

fn check(op: UnaryOp, dtype: DType, shape: &[usize], layout: Layout, seed: u64) -> Result<(), TestCaseError> {
    let dev = device();
    let n: usize = shape.iter().product();
    let mut rng = Rng(seed);
    let vals = values(op, dtype, n, &mut rng);
    let (x, xs) = view_of(dev, dtype, shape, &vals, layout);
    let y = ew::unary(op, &x).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(y.shape(), shape);
    prop_assert_eq!(y.dtype(), dtype);
    prop_assert!(y.is_contiguous());
    let got = ferrocm_tests::values::read_f64(&y);
    compare(&format!("{op:?}"), dtype, &xs, &got, |x| reference::elementwise::unary(op, x), |x| tolerance(op, x))
}

/// Shapes of rank 0-4 with sizes 1, primes and non-multiples of the vector runs, up to about
/// 6000 elements (the emulator runs every lane).
fn shape() -> impl Strategy<Value = Vec<usize>> {
    let dim = prop_oneof![Just(1usize), Just(2), Just(3), Just(7), Just(8), Just(13), Just(16), Just(31), Just(64), 1usize..100];
    prop::collection::vec(dim, 0..=4).prop_filter("small enough", |s| s.iter().product::<usize>() <= 6000)
}

proptest! {
    #![proptest_config(proptest_config(160))]

    #[test]
    fn unary_ops_match_the_reference(
        op in prop::sample::select(UnaryOp::ALL.to_vec()),
        dtype in prop::sample::select(FLOATS.to_vec()),
        shape in shape(),
        layout in prop::sample::select(Layout::ALL.to_vec()),
        seed in any::<u64>(),
    ) {
        check(op, dtype, &shape, layout, seed)?;
    }

    #[test]
    fn affine_matches_the_f32_expression(
        dtype in prop::sample::select(FLOATS.to_vec()),
        shape in shape(),
        layout in prop::sample::select(Layout::ALL.to_vec()),
        alpha in -4.0f32..4.0,
        beta in -4.0f32..4.0,
        seed in any::<u64>(),
    ) {
        let dev = device();
        let n: usize = shape.iter().product();
        let mut rng = Rng(seed);
        let vals: Vec<f64> = (0..n).map(|_| round_to(dtype, rng.range(-100.0, 100.0))).collect();
        let (x, xs) = view_of(dev, dtype, &shape, &vals, layout);
        let y = ew::affine(&x, alpha, beta).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got = ferrocm_tests::values::read_f64(&y);
        // The device's f32 result rounded once to the dtype: bit-exact.
        compare("affine", dtype, &xs, &got, |x| round_to(dtype, reference::elementwise::affine(x as f32, alpha, beta) as f64), |_| (0.0, 0.0, 0.0))?;
    }
}

/// tanh and the tanh GELU across the small arguments where tanh's closed form cancels (steps
/// of 2^-16 over [-0.375, 0.375], and 0.06573412, which a random case once caught): within
/// the tolerances of the random suite.
#[test]
fn tanh_is_accurate_near_zero() {
    let dev = device();
    let mut xs: Vec<f64> = (-24576..=24576).map(|i| i as f64 / 65536.0).collect();
    xs.push(6.573411822319031e-2);
    let x = ferrocm::Tensor::from_slice(dev, &xs.iter().map(|&v| v as f32).collect::<Vec<_>>(), &[xs.len()]).unwrap();
    for op in [UnaryOp::Tanh, UnaryOp::GeluTanh] {
        let got = ferrocm_tests::values::read_f64(&ew::unary(op, &x).unwrap());
        compare(&format!("{op:?}"), DType::F32, &xs, &got, |v| reference::elementwise::unary(op, v), |v| tolerance(op, v)).unwrap();
    }
}

/// Every op on every dtype's special values, one launch each (contiguous, so the vector path).
#[test]
fn special_values_of_every_op_and_dtype() {
    let dev = device();
    for dtype in FLOATS {
        let sp = specials(dtype);
        let x = ferrocm_tests::values::tensor_of(dev, dtype, &[sp.len()], &sp);
        let xs = ferrocm_tests::values::read_f64(&x);
        for op in UnaryOp::ALL {
            let got = ferrocm_tests::values::read_f64(&ew::unary(op, &x).unwrap());
            compare(&format!("{op:?}"), dtype, &xs, &got, |v| reference::elementwise::unary(op, v), |v| tolerance(op, v)).unwrap();
        }
    }
}

#[test]
fn relu_of_negative_zero_is_positive_zero() {
    let x = Tensor::from_slice(device(), &[-0.0f32, 0.0, f32::NAN], &[3]).unwrap();
    let y = ew::relu(&x).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(y[0].to_bits(), 0);
    assert_eq!(y[1].to_bits(), 0);
    assert!(y[2].is_nan());
}

#[test]
fn non_float_inputs_are_refused_before_launch() {
    let x = Tensor::from_slice(device(), &[1i32, 2], &[2]).unwrap();
    assert!(matches!(ew::exp(&x), Err(ferrocm::Error::DTypeMismatch { what: "x", .. })));
    let q = Tensor::zeros(device(), &[2], DType::Fp8E4M3Fnuz).unwrap();
    assert!(matches!(ew::affine(&q, 1.0, 0.0), Err(ferrocm::Error::DTypeMismatch { .. })));
}

#[test]
fn empty_tensors_give_empty_results() {
    let x = Tensor::zeros(device(), &[0, 5], DType::F16).unwrap();
    let y = ew::tanh(&x).unwrap();
    assert_eq!(y.shape(), &[0, 5]);
}
