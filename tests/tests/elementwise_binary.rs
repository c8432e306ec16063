//! Binary ops with numpy broadcasting and `where` on the device against the f64 reference.
//!
//! Both operands are f32, f16 or bf16 values (exact in f64); the reference is the exact result of
//! the op on those values; the device computes in f32 and rounds once to the dtype. Tolerances,
//! as `ulps` of the output dtype at the reference value plus a relative and an absolute term:
//!
//! | op | ulps | relative | absolute | why |
//! |---|---|---|---|---|
//! | add, sub, mul | 0.5 | 0 | 2^-149 | exact in f32 for f16/bf16 operands (or rounded where the small operand cannot reach a midpoint): correctly rounded; the absolute term covers f32 subnormal products of bf16 |
//! | div | 0.5 | 2^-24 | 2^-149 | correctly rounded in f32, then rounded to the dtype (double rounding: half an f32 ulp more) |
//! | max, min | 0 | 0 | 0 | exact, with the NaN and signed-zero rules |
//! | pow | 2 | 2^-22 (1 + abs(b log2 a)) | 2^-147 | `2^(b log2 abs(a))` in f32: the product's rounding is amplified by its size |
//! | where | bit-exact | | | values are selected as bits |
//!
//! NaN must give NaN; infinities must match (a result past the dtype's largest finite value
//! matches infinity). Each case draws an output shape (rank 0-4 with sizes 1, primes and
//! non-multiples of the vector runs), per operand a broadcast form of it (leading axes dropped,
//! axes set to 1) and a layout (contiguous, misaligned, transposed, padded rows), and values from
//! the op's domain mixed with the dtype's specials (±0, ±inf, NaN, subnormals, ±max).

use ferrocm::ops::elementwise::{self as ew, BinaryOp};
use ferrocm::{DType, Error, Tensor, reference};
use ferrocm_tests::values::{Layout, Rng, close, read_bits, read_f64, round_to, specials, tensor_of, view_of};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::Bf16];

/// (ulps, relative, absolute) tolerance of `op` at inputs `a`, `b` (see the module table).
fn tolerance(op: BinaryOp, a: f64, b: f64) -> (f64, f64, f64) {
    let p = |e: i32| 2f64.powi(e);
    match op {
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul => (0.5, 0.0, p(-149)),
        BinaryOp::Div => (0.5, p(-24), p(-149)),
        BinaryOp::Max | BinaryOp::Min => (0.0, 0.0, 0.0),
        // silu's tolerance (the unary suite's) carried through one more rounded product; far
        // below 0, e^a is a denormal whose absolute error 2^-149 scales by |a| and |b|.
        BinaryOp::SiluMul => (1.5, p(-20), p(-148) * (1.0 + a.abs()) * (1.0 + b.abs())),
        BinaryOp::Pow => {
            let m = (b * a.abs().log2()).abs();
            let m = if m.is_finite() { m } else { 0.0 };
            (2.0, p(-22) * (1.0 + m), p(-147))
        }
    }
}

/// `n` values for operand `which` (0 = a, 1 = b) of `op`: its domain, with about one in eight
/// drawn from the dtype's specials.
/// SiluMul with an infinite `b` where `silu(a)` is within its error bound (`2^-148 (1 + |a|)`,
/// the tolerance's absolute term) of 0: the gate may round to 0 or to a denormal, so the
/// product is NaN or an infinity of `a`'s sign.
fn gate_within_error_of_zero(op: BinaryOp, a: f64, b: f64, got: f64) -> bool {
    let gate = reference::elementwise::binary(BinaryOp::SiluMul, a, 1.0);
    op == BinaryOp::SiluMul
        && b.is_infinite()
        && gate.abs() <= 2f64.powi(-148) * (1.0 + a.abs())
        && (got.is_nan() || (got.is_infinite() && got.signum() == a.signum() * b.signum()))
}

fn values(op: BinaryOp, which: usize, dtype: DType, n: usize, rng: &mut Rng) -> Vec<f64> {
    let sp = specials(dtype);
    (0..n)
        .map(|_| {
            if rng.below(8) == 0 {
                return sp[rng.below(sp.len())];
            }
            let v = match (op, which) {
                // Bases of both signs; exponents half integers (so negative bases meet both odd
                // and even powers and non-integers), half reals.
                (BinaryOp::Pow, 0) => rng.range(-8.0, 8.0),
                (BinaryOp::Pow, _) if rng.below(2) == 0 => rng.below(13) as f64 - 6.0,
                (BinaryOp::Pow, _) => rng.range(-4.0, 4.0),
                // Many exact ties for max/min.
                (BinaryOp::Max | BinaryOp::Min, _) => rng.below(9) as f64 - 4.0,
                _ => rng.range(-100.0, 100.0) * 2f64.powi(rng.below(9) as i32 - 4),
            };
            round_to(dtype, v)
        })
        .collect()
}

/// A shape `out` broadcasts from: `drop` leading axes removed, axes in `ones` (bit mask) set to 1.
fn broadcast_form(out: &[usize], drop: usize, ones: u32) -> Vec<usize> {
    let drop = drop.min(out.len());
    out[drop..].iter().enumerate().map(|(i, &d)| if ones >> i & 1 == 1 { 1 } else { d }).collect()
}

/// Output shapes of rank 0-4 (sizes 1, primes, non-multiples of the 4/8-element runs), at most
/// about 4000 elements (the emulator runs every lane).
fn shape() -> impl Strategy<Value = Vec<usize>> {
    let dim = prop_oneof![Just(1usize), Just(2), Just(3), Just(7), Just(8), Just(13), Just(16), Just(31), Just(64), 1usize..100];
    prop::collection::vec(dim, 0..=4).prop_filter("small enough", |s| s.iter().product::<usize>() <= 4000)
}

/// One operand: broadcast form (drop, ones) and layout.
fn operand() -> impl Strategy<Value = (usize, u32, Layout)> {
    (
        prop_oneof![3 => Just(0usize), 1 => 0usize..4],
        prop_oneof![3 => Just(0u32), 1 => 0u32..16],
        prop::sample::select(Layout::ALL.to_vec()),
    )
}

fn run_binary(
    op: BinaryOp,
    dtype: DType,
    out: &[usize],
    a: (usize, u32, Layout),
    b: (usize, u32, Layout),
    seed: u64,
) -> Result<(), TestCaseError> {
    let dev = device();
    let mut rng = Rng(seed);
    let (sa, sb) = (broadcast_form(out, a.0, a.1), broadcast_form(out, b.0, b.1));
    let va = values(op, 0, dtype, sa.iter().product(), &mut rng);
    let vb = values(op, 1, dtype, sb.iter().product(), &mut rng);
    let (ta, xa) = view_of(dev, dtype, &sa, &va, a.2);
    let (tb, xb) = view_of(dev, dtype, &sb, &vb, b.2);
    let y = ew::binary(op, &ta, &tb).map_err(|e| TestCaseError::fail(e.to_string()))?;
    // The output shape is the broadcast of the two forms (which may be smaller than `out` when
    // both dropped axes or set them to 1).
    let want_shape = reference_shape(&sa, &sb);
    prop_assert_eq!(y.shape(), &want_shape[..]);
    prop_assert_eq!(y.dtype(), dtype);
    prop_assert!(y.is_contiguous());
    let fa = reference::elementwise::broadcast(&xa, &sa, &want_shape);
    let fb = reference::elementwise::broadcast(&xb, &sb, &want_shape);
    let got = read_f64(&y);
    for (i, ((&x, &z), &g)) in fa.iter().zip(&fb).zip(&got).enumerate() {
        let w = reference::elementwise::binary(op, x, z);
        let (u, r, ab) = tolerance(op, x, z);
        prop_assert!(
            close(dtype, g, w, u, r, ab) || gate_within_error_of_zero(op, x, z, g),
            "{op:?} {dtype} {sa:?} op {sb:?} element {i}: f({x:e}, {z:e}) = {g:e}, want {w:e}"
        );
        if matches!(op, BinaryOp::Max | BinaryOp::Min) && w == 0.0 {
            prop_assert_eq!(g.is_sign_negative(), w.is_sign_negative(), "{:?} of zeros {:e}, {:e}", op, x, z);
        }
    }
    Ok(())
}

/// numpy's broadcast of two shapes that are known to broadcast.
fn reference_shape(a: &[usize], b: &[usize]) -> Vec<usize> {
    let r = a.len().max(b.len());
    (0..r)
        .map(|i| {
            let da = if i + a.len() >= r { a[i + a.len() - r] } else { 1 };
            let db = if i + b.len() >= r { b[i + b.len() - r] } else { 1 };
            if da == 1 { db } else { da }
        })
        .collect()
}

proptest! {
    #![proptest_config(proptest_config(160))]

    #[test]
    fn binary_ops_match_the_reference(
        op in prop::sample::select(BinaryOp::ALL.to_vec()),
        dtype in prop::sample::select(FLOATS.to_vec()),
        out in shape(),
        a in operand(),
        b in operand(),
        seed in any::<u64>(),
    ) {
        run_binary(op, dtype, &out, a, b, seed)?;
    }

    #[test]
    fn where_selects_bits_with_broadcasting(
        cond_i32 in any::<bool>(),
        dtype in prop::sample::select(vec![DType::F32, DType::F16, DType::Bf16, DType::I32, DType::Fp8E4M3Fnuz, DType::Fp8E5M2Fnuz, DType::I8]),
        out in shape(),
        c in operand(),
        a in operand(),
        b in operand(),
        seed in any::<u64>(),
    ) {
        let dev = device();
        let mut rng = Rng(seed);
        let (sc, sa, sb) = (broadcast_form(&out, c.0, c.1), broadcast_form(&out, a.0, a.1), broadcast_form(&out, b.0, b.1));
        let cdt = if cond_i32 { DType::I32 } else { DType::I8 };
        // Conditions: zeros and assorted nonzero values (negative ones too: nonzero is true).
        let vc: Vec<f64> = (0..sc.iter().product()).map(|_| [0.0, 0.0, 1.0, -1.0, 7.0, -128.0][rng.below(6)]).collect();
        let vals = |n: usize, rng: &mut Rng| -> Vec<f64> {
            let sp = match dtype {
                DType::I32 => vec![0.0, -1.0, 2147483647.0],
                DType::I8 => vec![0.0, -1.0, 127.0, -128.0],
                _ => specials(dtype),
            };
            (0..n).map(|_| if rng.below(4) == 0 { sp[rng.below(sp.len())] } else { round_to(dtype, rng.range(-1e4, 1e4)) }).collect()
        };
        let (va, vb) = (vals(sa.iter().product(), &mut rng), vals(sb.iter().product(), &mut rng));
        let (tc, xc) = view_of(dev, cdt, &sc, &vc, c.2);
        let (ta, _) = view_of(dev, dtype, &sa, &va, a.2);
        let (tb, _) = view_of(dev, dtype, &sb, &vb, b.2);
        let y = ew::where_(&tc, &ta, &tb).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let want_shape = reference_shape(&reference_shape(&sc, &sa), &sb);
        prop_assert_eq!(y.shape(), &want_shape[..]);
        prop_assert_eq!(y.dtype(), dtype);
        let fc = reference::elementwise::broadcast(&xc, &sc, &want_shape);
        let fa = reference::elementwise::broadcast(&read_bits(&ta), &sa, &want_shape);
        let fb = reference::elementwise::broadcast(&read_bits(&tb), &sb, &want_shape);
        let fc: Vec<i64> = fc.iter().map(|&v| v as i64).collect();
        prop_assert_eq!(read_bits(&y), reference::elementwise::where_(&fc, &fa, &fb));
    }
}

/// Every op on every pair of a dtype's special values (one launch per op and dtype: `a` is a
/// column, `b` a row, broadcast to the full table).
#[test]
fn special_value_tables_of_every_op_and_dtype() {
    let dev = device();
    for dtype in FLOATS {
        let sp = specials(dtype);
        let n = sp.len();
        let a = tensor_of(dev, dtype, &[n, 1], &sp);
        let b = tensor_of(dev, dtype, &[n], &sp);
        let xs = read_f64(&b);
        for op in BinaryOp::ALL {
            let got = read_f64(&ew::binary(op, &a, &b).unwrap());
            for i in 0..n {
                for j in 0..n {
                    let (x, z, g) = (xs[i], xs[j], got[i * n + j]);
                    let w = reference::elementwise::binary(op, x, z);
                    let (u, r, ab) = tolerance(op, x, z);
                    assert!(
                        close(dtype, g, w, u, r, ab) || gate_within_error_of_zero(op, x, z, g),
                        "{op:?} {dtype}: f({x:e}, {z:e}) = {g:e}, want {w:e}"
                    );
                }
            }
        }
    }
}

/// silu(a) * b where silu(a) is an f32 denormal that e^a alone cannot reach (a below -103.3):
/// times an infinite b it is an infinity of silu's sign, not 0 * inf = NaN; the smallest values
/// still times a finite b within the suite's tolerance.
#[test]
fn silu_mul_far_below_zero_keeps_its_denormal_gate() {
    let dev = device();
    // silu of these is 4.4e6, 2655, 83, 19 and 2.6 times the smallest denormal.
    let xs = [-92.5f32, -100.0, -103.5, -105.0, -107.0];
    let a = Tensor::from_slice(dev, &xs, &[5]).unwrap();
    let inf = Tensor::from_slice(dev, &[f32::INFINITY; 5], &[5]).unwrap();
    let got = ew::silu_mul(&a, &inf).unwrap().to_vec::<f32>().unwrap();
    for (x, g) in xs.iter().zip(&got) {
        let want = reference::elementwise::binary(BinaryOp::SiluMul, *x as f64, f64::INFINITY);
        assert_eq!(want, f64::NEG_INFINITY, "the reference's gate of {x} is a nonzero denormal");
        assert_eq!(*g, f32::NEG_INFINITY, "silu_mul({x}, inf)");
    }
    let ones = Tensor::from_slice(dev, &[1.0f32; 5], &[5]).unwrap();
    let got = ew::silu_mul(&a, &ones).unwrap().to_vec::<f32>().unwrap();
    for (x, g) in xs.iter().zip(&got) {
        let want = reference::elementwise::binary(BinaryOp::SiluMul, *x as f64, 1.0);
        let (u, r, ab) = tolerance(BinaryOp::SiluMul, *x as f64, 1.0);
        assert!(close(DType::F32, *g as f64, want, u, r, ab), "silu_mul({x}, 1) = {g:e}, want {want:e}");
        assert!(*g < 0.0, "silu_mul({x}, 1) = {g:e} is a negative denormal");
    }
}

#[test]
fn pow_follows_the_c99_special_cases() {
    let dev = device();
    let a = Tensor::from_slice(dev, &[-2.0f32, -2.0, -2.0, -0.0, 0.0, 1.0, -1.0, f32::NAN, -8.0, 4.0], &[10]).unwrap();
    let b = Tensor::from_slice(dev, &[3.0f32, 2.0, 0.5, -1.0, -2.0, f32::NAN, f32::INFINITY, 0.0, 1.0 / 3.0, 0.5], &[10]).unwrap();
    let y = ew::pow(&a, &b).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(y[0], -8.0);
    assert_eq!(y[1], 4.0);
    assert!(y[2].is_nan());
    assert_eq!(y[3], f32::NEG_INFINITY); // -0 to an odd negative integer
    assert_eq!(y[4], f32::INFINITY);
    assert_eq!(y[5], 1.0); // 1^NaN
    assert_eq!(y[6], 1.0); // (-1)^inf
    assert_eq!(y[7], 1.0); // NaN^0
    assert!(y[8].is_nan()); // negative base, non-integer exponent
    assert!((y[9] - 2.0).abs() <= 2.0 * f32::EPSILON);
}

#[test]
fn bias_broadcast_over_rows_matches_numpy() {
    let dev = device();
    let x = Tensor::from_slice(dev, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let bias = Tensor::from_slice(dev, &[10.0f32, 20.0, 30.0], &[3]).unwrap();
    assert_eq!(ew::add(&x, &bias).unwrap().to_vec::<f32>().unwrap(), vec![11.0, 22.0, 33.0, 14.0, 25.0, 36.0]);
    let col = Tensor::from_slice(dev, &[1.0f32, -1.0], &[2, 1]).unwrap();
    assert_eq!(ew::mul(&x, &col).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, -4.0, -5.0, -6.0]);
    // Both broadcast: [2, 1] x [3] -> [2, 3].
    assert_eq!(ew::sub(&col, &bias).unwrap().shape(), &[2, 3]);
}

#[test]
fn bad_operands_are_refused_before_launch() {
    let dev = device();
    let a = Tensor::zeros(dev, &[2, 3], DType::F32).unwrap();
    let b = Tensor::zeros(dev, &[4], DType::F32).unwrap();
    assert!(matches!(ew::add(&a, &b), Err(Error::Shape { op: "binary", .. })));
    let h = Tensor::zeros(dev, &[3], DType::F16).unwrap();
    assert!(matches!(ew::add(&a, &h), Err(Error::DTypeMismatch { what: "b", .. })));
    let i = Tensor::zeros(dev, &[3], DType::I32).unwrap();
    assert!(matches!(ew::mul(&i, &i), Err(Error::DTypeMismatch { what: "a", .. })));
    // where: a float condition, mismatched values, 1-byte values, unbroadcastable shapes.
    let c8 = Tensor::zeros(dev, &[3], DType::I8).unwrap();
    assert!(matches!(ew::where_(&a, &a, &a), Err(Error::DTypeMismatch { what: "cond", .. })));
    assert!(matches!(ew::where_(&c8, &a, &h), Err(Error::DTypeMismatch { what: "b", .. })));
    // 1-byte values select too (i8 here; fp8 in the property test).
    assert_eq!(read_bits(&ew::where_(&c8, &c8, &c8).unwrap()), read_bits(&c8));
    assert!(matches!(ew::where_(&c8, &b, &b), Err(Error::Shape { .. })));
}

#[test]
fn empty_and_zero_rank_operands() {
    let dev = device();
    let e = Tensor::zeros(dev, &[0, 4], DType::Bf16).unwrap();
    let s = Tensor::from_slice(dev, &[ferrocm::bf16::ONE], &[]).unwrap();
    assert_eq!(ew::add(&e, &s).unwrap().shape(), &[0, 4]);
    let two = ew::add(&s, &s).unwrap();
    assert_eq!(two.shape(), &[] as &[usize]);
    assert_eq!(two.to_vec::<ferrocm::bf16>().unwrap()[0].to_f32(), 2.0);
}
