//! Softmax and log-softmax on the device against the f64 reference
//! (`ferrocm::reference::softmax`).
//!
//! Tolerances, per element, with `M` the row maximum, `n` the row length and
//! `u = 2^-24` (f32 arithmetic):
//! - softmax: relative `(4 |x - M| + 2 log2(n) + 64) u` (the rounding of `x - M` amplified by
//!   the exponential, `v_exp_f32` at about 1 ulp, the f32 sum of positive terms, one scale and
//!   one product), then the output rounding (half an ulp; half the subnormal spacing below the
//!   normal range), plus `1e-37` absolute (results below 2^-126 flush to zero);
//! - log-softmax: absolute `(2 |x - M| + 2 |log S| + 2 log2(n) + 64) u` (`S` the sum of
//!   exponentials), then the output rounding.
//! Specials follow the reference exactly: rows with NaN or +inf, or only -inf, are all NaN;
//! -inf elements (masks) give 0 (softmax) or -inf (log-softmax).
//!
//! Shapes: 1-3 dimensions, last axis from 1 through primes and non-multiples of the 16-byte
//! chunk up to 70 000 elements (past one workgroup's capacity, so the two-pass path runs too).

use ferrocm::ops::softmax;
use ferrocm::{DType, Error, Tensor, reference};
use ferrocm_tests::tensors::{FLOAT_DTYPES, close, read, rounding, tensor, uniform};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

const U: f64 = 1.0 / (1u64 << 24) as f64;

/// Row contents: uniform in [-scale, scale), optionally with -inf masks, or a NaN/+inf.
fn values(n: usize, scale: f64, special: u8, seed: &mut u64) -> Vec<f64> {
    let mut v: Vec<f64> = (0..n).map(|_| uniform(seed) * scale).collect();
    let pick = |seed: &mut u64| ((uniform(seed) + 1.0) / 2.0 * n as f64) as usize % n;
    match special {
        1 => (0..(n / 4).max(1)).for_each(|_| v[pick(seed)] = f64::NEG_INFINITY),
        2 => {
            let i = pick(seed);
            v[i] = if uniform(seed) < 0.0 { f64::NAN } else { f64::INFINITY };
        }
        _ => {}
    }
    v
}

fn check(shape: &[usize], dtype: DType, vals: &[f64], log: bool) -> Result<(), TestCaseError> {
    let (x, xv) = tensor(vals, shape, dtype);
    let y = if log { softmax::log_softmax(&x) } else { softmax::softmax(&x) }.map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(y.shape(), shape);
    prop_assert_eq!(y.dtype(), dtype);
    let n = shape[shape.len() - 1];
    let got = read(&y);
    let want = if log { reference::softmax::log_softmax(&xv, n) } else { reference::softmax::softmax(&xv, n) };
    let lg = (n as f64).log2();
    for (r, row) in xv.chunks(n).enumerate() {
        let m = row.iter().fold(f64::NEG_INFINITY, |m, &v| if v.is_nan() || m.is_nan() { f64::NAN } else { m.max(v) });
        let s: f64 = row.iter().map(|&v| (v - m).exp()).sum();
        for (j, &x) in row.iter().enumerate() {
            let k = r * n + j;
            // |x - M|; 0 where the element is masked (-inf gives exactly 0 or -inf).
            let d = if (x - m).is_finite() { (x - m).abs() } else { 0.0 };
            let tol = if log {
                (2.0 * d + 2.0 * if s.ln().is_finite() { s.ln().abs() } else { 0.0 } + 2.0 * lg + 64.0) * U + rounding(dtype, want[k])
            } else {
                (4.0 * d + 2.0 * lg + 64.0) * U * want[k].abs() + rounding(dtype, want[k]) + 1e-37
            };
            prop_assert!(
                close(got[k], want[k], tol),
                "{} of {:?} ({}): [{}][{}] = {}, want {} (tol {:e}, x = {})",
                if log { "log_softmax" } else { "softmax" },
                shape,
                dtype,
                r,
                j,
                got[k],
                want[k],
                tol,
                x
            );
        }
    }
    Ok(())
}

fn last_dim() -> impl Strategy<Value = usize> {
    prop_oneof![
        3 => 1usize..=40,
        2 => prop::sample::select(vec![1usize, 2, 7, 31, 127, 257, 1021, 4093, 8191]),
        2 => prop::sample::select(vec![64usize, 128, 1000, 1024, 4096, 8192]),
        1 => 41usize..=3000,
        1 => prop::sample::select(vec![16_385usize, 32_768, 32_776, 40_000, 70_001]),
    ]
}

fn case() -> impl Strategy<Value = (Vec<usize>, DType, f64, u8, bool, u64)> {
    (prop::collection::vec(1usize..=6, 0..=2), last_dim())
        .prop_map(|(mut lead, last)| {
            lead.push(last);
            lead
        })
        .prop_filter("at most 150k elements", |s| s.iter().product::<usize>() <= 150_000)
        .prop_flat_map(|shape| {
            (
                Just(shape),
                prop::sample::select(FLOAT_DTYPES.to_vec()),
                prop::sample::select(vec![1.0, 8.0, 60.0]),
                prop_oneof![6 => Just(0u8), 2 => Just(1u8), 1 => Just(2u8)],
                any::<bool>(),
                any::<u64>(),
            )
        })
}

proptest! {
    #![proptest_config(proptest_config(40))]

    #[test]
    fn softmax_matches_the_reference((shape, dtype, scale, special, log, seed) in case()) {
        let mut seed = seed;
        let n = shape.iter().product();
        check(&shape, dtype, &values(n, scale, special, &mut seed), log)?;
    }
}

#[test]
fn long_rows_take_two_passes() {
    // 2 rows of 100 003 (odd: element accesses) and 3 of 65 536 (16-byte accesses).
    for (shape, seed) in [(vec![2usize, 100_003], 1u64), (vec![3, 65_536], 2)] {
        for dtype in FLOAT_DTYPES {
            let mut s = seed;
            let v = values(shape.iter().product(), 8.0, 1, &mut s);
            check(&shape, dtype, &v, false).unwrap();
            check(&shape, dtype, &v, true).unwrap();
        }
    }
}

#[test]
fn special_rows() {
    let inf = f64::INFINITY;
    let rows = [
        vec![1.0, 2.0, 3.0, f64::NAN],
        vec![inf, 1.0, 2.0, 3.0],
        vec![-inf, -inf, -inf, -inf],
        vec![-inf, 0.0, -inf, 0.0],
        vec![1e4, -1e4, 0.0, 1e4],
    ];
    let vals: Vec<f64> = rows.concat();
    for dtype in FLOAT_DTYPES {
        for log in [false, true] {
            check(&[5, 4], dtype, &vals, log).unwrap();
        }
    }
}

#[test]
fn errors_and_empty_tensors() {
    let dev = device();
    let x = Tensor::from_slice(dev, &[1i32, 2], &[2]).unwrap();
    assert!(matches!(softmax::softmax(&x), Err(Error::DTypeMismatch { .. })));
    let x = Tensor::from_slice(dev, &[1.0f32], &[]).unwrap();
    assert!(matches!(softmax::log_softmax(&x), Err(Error::Shape { .. })));
    let x = Tensor::zeros(dev, &[0, 5], DType::Bf16).unwrap();
    assert_eq!(softmax::softmax(&x).unwrap().shape(), &[0, 5]);
}

#[test]
fn strided_input_is_made_contiguous() {
    let mut seed = 3;
    let (x, xv) = tensor(&values(12 * 5, 2.0, 0, &mut seed), &[12, 5], DType::F32);
    let t = x.transpose(0, 1).unwrap(); // [5, 12]
    let got = read(&softmax::softmax(&t).unwrap());
    let tv: Vec<f64> = (0..5).flat_map(|i| (0..12).map(move |j| (i, j))).map(|(i, j)| xv[j * 5 + i]).collect();
    let want = reference::softmax::softmax(&tv, 12);
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-6, "{g} vs {w}");
    }
}
