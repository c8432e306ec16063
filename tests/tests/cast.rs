//! Cast, copy and fill on the device against the reference, bit for bit.
//!
//! Casts are exact by definition (each value rounded once by the documented rule), so the device
//! must produce the reference's bits: tolerance zero for every pair of f32, f16, bf16,
//! fp8e4m3fnuz, fp8e5m2fnuz and i32. The one freedom is a NaN's payload when a NaN crosses
//! between two different float types (any NaN of the target is accepted; fp8 has only one).
//! Sources mix the specials of their dtype (±0, ±inf, NaN, subnormals, ±max), values over a wide
//! range of magnitudes (so fp8 saturates and narrow types underflow), and exact midpoints between
//! two target values (ties to even). Copy and fill are bit copies.

use ferrocm::ops::elementwise as ew;
use ferrocm::{DType, Element, Error, Fp8E4M3Fnuz, Fp8E5M2Fnuz, Tensor, bf16, f16, reference};
use ferrocm_tests::values::{Layout, Rng, read_bits, round_to, specials, tensor_of, ulp, view_of};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

const CAST_TYPES: [DType; 6] = [DType::F32, DType::F16, DType::Bf16, DType::Fp8E4M3Fnuz, DType::Fp8E5M2Fnuz, DType::I32];

/// The raw little-endian bits of an element (low bytes of a u32).
fn bits_of<U: Element>(u: &U) -> u32 {
    bytemuck::bytes_of(u).iter().rev().fold(0u32, |acc, &b| acc << 8 | b as u32)
}

/// The reference cast of `x`'s elements to `to`, as raw bits.
fn reference_bits(x: &Tensor, to: DType) -> Vec<u32> {
    fn to_type<T: Element>(x: &[T], to: DType) -> Vec<u32> {
        fn go<T: Element, U: Element>(x: &[T]) -> Vec<u32> {
            reference::elementwise::cast::<T, U>(x).iter().map(bits_of).collect()
        }
        match to {
            DType::F32 => go::<T, f32>(x),
            DType::F16 => go::<T, f16>(x),
            DType::Bf16 => go::<T, bf16>(x),
            DType::Fp8E4M3Fnuz => go::<T, Fp8E4M3Fnuz>(x),
            DType::Fp8E5M2Fnuz => go::<T, Fp8E5M2Fnuz>(x),
            DType::I32 => go::<T, i32>(x),
            d => panic!("{d} is not a cast type"),
        }
    }
    match x.dtype() {
        DType::F32 => to_type(&x.to_vec::<f32>().unwrap(), to),
        DType::F16 => to_type(&x.to_vec::<f16>().unwrap(), to),
        DType::Bf16 => to_type(&x.to_vec::<bf16>().unwrap(), to),
        DType::Fp8E4M3Fnuz => to_type(&x.to_vec::<Fp8E4M3Fnuz>().unwrap(), to),
        DType::Fp8E5M2Fnuz => to_type(&x.to_vec::<Fp8E5M2Fnuz>().unwrap(), to),
        DType::I32 => to_type(&x.to_vec::<i32>().unwrap(), to),
        d => panic!("{d} is not a cast type"),
    }
}

/// Whether raw bits of `dtype` encode a NaN.
fn is_nan_bits(dtype: DType, b: u32) -> bool {
    match dtype {
        DType::F32 => f32::from_bits(b).is_nan(),
        DType::F16 => f16::from_bits(b as u16).is_nan(),
        DType::Bf16 => bf16::from_bits(b as u16).is_nan(),
        DType::Fp8E4M3Fnuz | DType::Fp8E5M2Fnuz => b == 0x80,
        _ => false,
    }
}

/// `n` source values of `from` for a cast to `to`.
fn values(from: DType, to: DType, n: usize, rng: &mut Rng) -> Vec<f64> {
    if from == DType::I32 {
        let sp = [0.0, 1.0, -1.0, i32::MAX as f64, i32::MIN as f64, 16777217.0, -16777219.0, 33685505.0, 241.0, 57345.0];
        return (0..n)
            .map(|_| match rng.below(4) {
                0 => sp[rng.below(sp.len())],
                1 => (rng.range(-1.0, 1.0) * 2f64.powi(rng.below(32) as i32)).trunc(),
                _ => rng.range(-300.0, 300.0).trunc(),
            })
            .collect();
    }
    let sp = specials(from);
    (0..n)
        .map(|_| match rng.below(8) {
            0 => sp[rng.below(sp.len())],
            // Exact midpoints between two neighbouring values of the target (when the source
            // holds them): ties must go to even.
            1 | 2 if to.is_float() => {
                let v = round_to(to, rng.range(-1.0, 1.0) * 2f64.powi(rng.below(24) as i32 - 12));
                let mid = v + ulp(to, v) / 2.0;
                if round_to(from, mid) == mid { mid } else { v }
            }
            // Float -> i32 near the integers and the saturation limits.
            1 | 2 => round_to(from, rng.range(-1.0, 1.0) * 2f64.powi(rng.below(34) as i32)),
            // Any magnitude from deep underflow to far past fp8's and f16's ranges.
            _ => round_to(from, rng.range(-1.0, 1.0) * 2f64.powi(rng.below(80) as i32 - 40)),
        })
        .collect()
}

fn shape() -> impl Strategy<Value = Vec<usize>> {
    let dim = prop_oneof![Just(1usize), Just(3), Just(7), Just(16), Just(17), Just(31), Just(64), 1usize..80];
    prop::collection::vec(dim, 0..=3).prop_filter("small enough", |s| s.iter().product::<usize>() <= 4000)
}

fn check_cast(from: DType, to: DType, shape: &[usize], layout: Layout, seed: u64) -> Result<(), TestCaseError> {
    let dev = device();
    let mut rng = Rng(seed);
    let vals = values(from, to, shape.iter().product(), &mut rng);
    let (x, _) = view_of(dev, from, shape, &vals, layout);
    let y = ew::cast(&x, to).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(y.shape(), shape);
    prop_assert_eq!(y.dtype(), to);
    prop_assert!(y.is_contiguous());
    let (got, want, src) = (read_bits(&y), reference_bits(&x, to), read_bits(&x));
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        let ok = g == w || (from != to && is_nan_bits(to, w) && is_nan_bits(to, g));
        prop_assert!(ok, "{from} -> {to} element {i}: source bits {:#x} gave {g:#x}, want {w:#x}", src[i]);
    }
    Ok(())
}

proptest! {
    #![proptest_config(proptest_config(160))]

    #[test]
    fn casts_match_the_reference_bit_for_bit(
        from in prop::sample::select(CAST_TYPES.to_vec()),
        to in prop::sample::select(CAST_TYPES.to_vec()),
        shape in shape(),
        layout in prop::sample::select(Layout::ALL.to_vec()),
        seed in any::<u64>(),
    ) {
        check_cast(from, to, &shape, layout, seed)?;
    }

    #[test]
    fn copy_makes_any_view_contiguous(
        dtype in prop::sample::select(vec![DType::F32, DType::F16, DType::Bf16, DType::Fp8E4M3Fnuz, DType::I8, DType::I32, DType::U32]),
        shape in shape(),
        layout in prop::sample::select(Layout::ALL.to_vec()),
        broadcast_lead in 0usize..3,
        seed in any::<u64>(),
    ) {
        let dev = device();
        let mut rng = Rng(seed);
        let vals: Vec<f64> = (0..shape.iter().product()).map(|_| round_to(dtype, rng.range(-100.0, 100.0))).collect();
        let (x, _) = view_of(dev, dtype, &shape, &vals, layout);
        // A broadcast view too: new leading axes with stride 0.
        let mut big = vec![2usize; broadcast_lead];
        big.extend_from_slice(&shape);
        let x = x.broadcast_to(&big).unwrap();
        let y = ew::copy(&x).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(y.is_contiguous());
        prop_assert_eq!(y.shape(), &big[..]);
        prop_assert_eq!(y.dtype(), dtype);
        prop_assert_eq!(read_bits(&y), read_bits(&x));
    }

    #[test]
    fn fill_sets_exactly_the_view(
        dtype in prop::sample::select(vec![DType::F32, DType::F16, DType::Bf16, DType::Fp8E5M2Fnuz, DType::I8, DType::I32]),
        start in 0usize..40,
        len in 0usize..3000,
        value in -1000.0f64..1000.0,
    ) {
        let dev = device();
        let total = start + len + 23;
        // A sentinel everywhere, then fill the middle view.
        let t = tensor_of(dev, dtype, &[total], &vec![3.0; total]);
        let view = t.narrow(0, start, len).unwrap();
        ew::fill(&view, value).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let want_elem = round_to(dtype, value);
        let sentinel = round_to(dtype, 3.0);
        let got = ferrocm_tests::values::read_f64(&t);
        for (i, &g) in got.iter().enumerate() {
            let w = if (start..start + len).contains(&i) { want_elem } else { sentinel };
            prop_assert_eq!(g, w, "element {} of {} (view {}..{})", i, total, start, start + len);
        }
    }
}

#[test]
fn fp8_saturates_and_keeps_fnuz_nan_and_zero_rules() {
    let dev = device();
    let x =
        Tensor::from_slice(dev, &[1e9f32, -1e9, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -1e-30, -0.0, 248.0, 1.0625], &[9]).unwrap();
    let e4 = ew::cast(&x, DType::Fp8E4M3Fnuz).unwrap().to_vec::<Fp8E4M3Fnuz>().unwrap();
    let v: Vec<u8> = e4.iter().map(|q| q.0).collect();
    assert_eq!(&v[..4], &[Fp8E4M3Fnuz::MAX.0, Fp8E4M3Fnuz::MIN.0, Fp8E4M3Fnuz::MAX.0, Fp8E4M3Fnuz::MIN.0]);
    assert_eq!(v[4], 0x80, "NaN is 0x80");
    assert_eq!(v[5], 0, "a negative value rounding to zero is +0 (no -0 in FNUZ)");
    assert_eq!(v[6], 0, "-0 is +0");
    assert_eq!(e4[7].to_f32(), 240.0, "past the largest finite value saturates");
    assert_eq!(e4[8].to_f32(), 1.0, "1.0625 ties to the even 1.0");
    let e5 = ew::cast(&x, DType::Fp8E5M2Fnuz).unwrap().to_vec::<Fp8E5M2Fnuz>().unwrap();
    assert_eq!(e5[0].to_f32(), 57344.0);
    assert_eq!(e5[3].to_f32(), -57344.0);
    // And back: fp8 NaN becomes a float NaN, the extremes are exact.
    let back = ew::cast(&ew::cast(&x, DType::Fp8E4M3Fnuz).unwrap(), DType::F32).unwrap().to_vec::<f32>().unwrap();
    assert!(back[4].is_nan());
    assert_eq!(back[0], 240.0);
}

#[test]
fn integer_casts_truncate_saturate_and_round_once() {
    let dev = device();
    let x = Tensor::from_slice(dev, &[2.9f32, -2.9, f32::NAN, 1e20, -1e20, f32::INFINITY, -0.5], &[7]).unwrap();
    assert_eq!(ew::cast(&x, DType::I32).unwrap().to_vec::<i32>().unwrap(), vec![2, -2, 0, i32::MAX, i32::MIN, i32::MAX, 0]);
    // 2^25 + 2^17 + 1 is just above a bf16 midpoint; rounding through f32 would tie down.
    let v = (1 << 25) + (1 << 17) + 1;
    let i = Tensor::from_slice(dev, &[v, -v, 16_777_217, i32::MAX], &[4]).unwrap();
    let b = ew::cast(&i, DType::Bf16).unwrap().to_vec::<bf16>().unwrap();
    assert_eq!(b[0].to_f64(), ((1 << 25) + (1 << 18)) as f64);
    assert_eq!(b[1].to_f64(), -(((1 << 25) + (1 << 18)) as f64));
    let f = ew::cast(&i, DType::F32).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(f[2], 16_777_216.0); // tie to even
    assert_eq!(f[3], 2147483648.0);
    let h = ew::cast(&i, DType::F16).unwrap().to_vec::<f16>().unwrap();
    assert!(h[0].is_infinite());
}

#[test]
fn same_type_casts_and_copies_keep_nan_payloads() {
    let dev = device();
    let x = Tensor::from_slice(dev, &[f32::from_bits(0x7fc0_1234), f32::from_bits(0xffa0_0001)], &[2]).unwrap();
    let bits = |t: &Tensor| t.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&ew::cast(&x, DType::F32).unwrap()), vec![0x7fc0_1234, 0xffa0_0001]);
    assert_eq!(bits(&ew::copy(&x).unwrap()), vec![0x7fc0_1234, 0xffa0_0001]);
}

#[test]
fn fill_and_full_cover_every_dtype() {
    let dev = device();
    for dtype in [DType::F32, DType::F16, DType::Bf16, DType::Fp8E4M3Fnuz, DType::Fp8E5M2Fnuz, DType::I8, DType::I32, DType::U32] {
        let t = ew::full(dev, &[3, 37], dtype, 2.5).unwrap();
        let want = round_to(dtype, 2.5);
        assert!(ferrocm_tests::values::read_f64(&t).iter().all(|&v| v == want), "{dtype}");
    }
    // A raw pattern: a NaN payload survives.
    let t = Tensor::zeros(dev, &[5], DType::F32).unwrap();
    ew::fill_bytes(&t, &0x7fc0_0042u32.to_le_bytes()).unwrap();
    assert!(t.to_vec::<f32>().unwrap().iter().all(|v| v.to_bits() == 0x7fc0_0042));
}

#[test]
fn bad_casts_fills_and_copies_are_refused_before_launch() {
    let dev = device();
    let x = Tensor::zeros(dev, &[4], DType::F32).unwrap();
    assert!(matches!(ew::cast(&x, DType::U32), Err(Error::DTypeMismatch { what: "target", .. })));
    let i8s = Tensor::zeros(dev, &[4], DType::I8).unwrap();
    assert!(matches!(ew::cast(&i8s, DType::F32), Err(Error::DTypeMismatch { what: "x", .. })));
    let m = Tensor::zeros(dev, &[4, 4], DType::F32).unwrap();
    assert!(matches!(ew::fill(&m.transpose(0, 1).unwrap(), 1.0), Err(Error::Unsupported { op: "fill", .. })));
    assert!(matches!(ew::fill_bytes(&m, &[0u8; 2]), Err(Error::InvalidArgument { .. })));
    // Empty tensors are fine and launch nothing.
    let e = Tensor::zeros(dev, &[0], DType::F16).unwrap();
    assert_eq!(ew::cast(&e, DType::Fp8E4M3Fnuz).unwrap().numel(), 0);
    ew::fill(&e, 1.0).unwrap();
}
