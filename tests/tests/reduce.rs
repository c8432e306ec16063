//! Reductions on the device against the f64 reference (`ferrocm::reference::reduce`).
//!
//! Inputs are rounded to the dtype on the host first, so the reference sees exactly what the
//! device reads. Tolerances per op (`out` the output dtype, `s = sum |x|` over the run):
//! - sum: `|got - want| <= chain * 2^-24 * s + half_ulp(out) * |want|`, where `chain` is the
//!   longest sequence of f32 additions an output passes through (`ReducePlan::max_chain`: a
//!   lane's own elements, the combining tree, the partials);
//! - mean: the sum's bound divided by the length, plus one f32 division (2^-24 relative);
//! - max, min: exact (the result is one of the inputs, representable in the dtype); NaN where
//!   the reference is NaN;
//! - argmax, argmin: the exact index (first extreme value; first NaN when there is one).
//!
//! Shapes mix sizes 1, primes and non-multiples of the block and of the 16-byte chunk, every
//! axis and "everything", with optional NaN/inf injection and heavy ties (values on a coarse
//! grid). Targeted tests cover the split paths (long rows, long strided axes), empty axes,
//! argument errors and strided views. The emulator's counters on large inputs are checked in
//! `membound_counters.rs`.

use ferrocm::ops::reduce::{self, ReduceOp, ReduceOptions};
use ferrocm::{DType, Error, Tensor, reference};
use ferrocm_tests::tensors::{FLOAT_DTYPES, close, half_ulp, read, tensor, uniform};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

const OPS: [ReduceOp; 6] = [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax, ReduceOp::ArgMin];

/// How test values are drawn.
#[derive(Clone, Copy, Debug)]
enum Values {
    /// Uniform in [-scale, scale).
    Uniform,
    /// Multiples of 1/4 in [-2, 2]: many exact ties.
    Ties,
    /// Uniform, with a few NaN, +inf and -inf.
    Special,
}

fn values(n: usize, kind: Values, seed: &mut u64) -> Vec<f64> {
    let mut v: Vec<f64> = (0..n).map(|_| uniform(seed) * 3.0).collect();
    match kind {
        Values::Uniform => {}
        Values::Ties => v.iter_mut().for_each(|x| *x = (*x * 4.0 / 3.0 * 2.0).round() / 4.0),
        Values::Special => {
            for _ in 0..(n / 50).max(1) {
                let i = ((uniform(seed) + 1.0) / 2.0 * n as f64) as usize % n;
                let pick = uniform(seed);
                v[i] = if pick < -0.3 {
                    f64::NAN
                } else if pick < 0.3 {
                    f64::INFINITY
                } else {
                    f64::NEG_INFINITY
                };
            }
        }
    }
    v
}

/// Runs `op` and checks every output against the reference.
fn check(shape: &[usize], axis: Option<usize>, op: ReduceOp, dtype: DType, vals: &[f64]) -> Result<(), TestCaseError> {
    let (x, xv) = tensor(vals, shape, dtype);
    let got_t = reduce::reduce(&x, op, axis, &ReduceOptions::default()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let (outer, len, inner) = match axis {
        None => (1, xv.len(), 1),
        Some(a) => (shape[..a].iter().product::<usize>(), shape[a], shape[a + 1..].iter().product()),
    };
    if op.is_arg() {
        prop_assert_eq!(got_t.dtype(), DType::I32);
        let got: Vec<usize> = got_t.to_vec::<i32>().unwrap().iter().map(|&i| i as usize).collect();
        let want = reference::reduce::arg_reduce(&xv, shape, op, axis);
        prop_assert_eq!(got, want, "{:?} of {:?} over {:?} ({})", op, shape, axis, dtype);
        return Ok(());
    }
    prop_assert_eq!(got_t.dtype(), dtype);
    let got = read(&got_t);
    let want = reference::reduce::reduce(&xv, shape, op, axis);
    let plan = reduce::plan(shape, dtype, axis, x.storage().addr(), dtype.size()).unwrap();
    let chain = plan.max_chain() as f64;
    for o in 0..outer {
        for i in 0..inner {
            let k = o * inner + i;
            let s: f64 = (0..len).map(|l| xv[(o * len + l) * inner + i].abs()).sum();
            let tol = match op {
                ReduceOp::Sum => chain * 2f64.powi(-24) * s + half_ulp(dtype) * want[k].abs(),
                ReduceOp::Mean => (chain * 2f64.powi(-24) * s) / len as f64 + (2f64.powi(-24) + half_ulp(dtype)) * want[k].abs(),
                _ => 0.0,
            } + 1e-300;
            prop_assert!(
                close(got[k], want[k], tol),
                "{:?} of {:?} over {:?} ({}): output {} = {}, want {} (tol {:e}, plan {:?})",
                op,
                shape,
                axis,
                dtype,
                k,
                got[k],
                want[k],
                tol,
                plan
            );
        }
    }
    Ok(())
}

fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![
        2 => 1usize..=9,
        2 => prop::sample::select(vec![1usize, 2, 3, 7, 13, 31, 61, 127, 257, 509, 1021]),
        1 => 10usize..=300,
        1 => prop::sample::select(vec![64usize, 256, 1000, 2048, 4099]),
    ]
}

fn case() -> impl Strategy<Value = (Vec<usize>, Option<usize>, ReduceOp, DType, u8, u64)> {
    prop::collection::vec(dim(), 1..=3).prop_filter("at most 100k elements", |s| s.iter().product::<usize>() <= 100_000).prop_flat_map(
        |shape| {
            let rank = shape.len();
            (
                Just(shape),
                prop_oneof![1 => Just(None), 3 => (0..rank).prop_map(Some)],
                prop::sample::select(OPS.to_vec()),
                prop::sample::select(FLOAT_DTYPES.to_vec()),
                0u8..3,
                any::<u64>(),
            )
        },
    )
}

proptest! {
    #![proptest_config(proptest_config(48))]

    #[test]
    fn reductions_match_the_reference((shape, axis, op, dtype, kind, seed) in case()) {
        let mut seed = seed;
        let kind = [Values::Uniform, Values::Ties, Values::Special][kind as usize];
        let n = shape.iter().product();
        check(&shape, axis, op, dtype, &values(n, kind, &mut seed))?;
    }
}

fn run_all(shape: &[usize], axis: Option<usize>, dtypes: &[DType], kind: Values, seed: u64) {
    let n = shape.iter().product();
    for &dtype in dtypes {
        let mut seed = seed;
        let vals = values(n, kind, &mut seed);
        for op in OPS {
            check(shape, axis, op, dtype, &vals).unwrap();
        }
    }
}

#[test]
fn long_rows_are_split_and_combined() {
    let shape = [3 * 100_003];
    let p = reduce::plan(&shape, DType::F32, None, 0, 4).unwrap();
    assert!(p.splits > 1 && p.inner == 1, "{p:?}");
    run_all(&shape, None, &FLOAT_DTYPES, Values::Uniform, 1);
    run_all(&shape, None, &[DType::Bf16], Values::Special, 2);
    // A few long rows: split per row, partials combined per row.
    run_all(&[3, 40_000], Some(1), &[DType::F16], Values::Ties, 3);
}

#[test]
fn long_strided_axes_are_split_and_combined() {
    let p = reduce::plan(&[5000, 37], DType::F32, Some(0), 0, 4).unwrap();
    assert!(p.splits > 1 && p.inner == 37 && !p.vector, "{p:?}");
    run_all(&[5000, 37], Some(0), &FLOAT_DTYPES, Values::Uniform, 4);
    let p = reduce::plan(&[2, 3000, 64], DType::Bf16, Some(1), 0, 2).unwrap();
    assert!(p.splits > 1 && p.vector, "{p:?}");
    run_all(&[2, 3000, 64], Some(1), &FLOAT_DTYPES, Values::Special, 5);
}

#[test]
fn nan_and_ties_pick_the_first_index() {
    let dev = device();
    let x = Tensor::from_slice(dev, &[1.0f32, 3.0, f32::NAN, 3.0, f32::NAN, -1.0], &[6]).unwrap();
    assert_eq!(reduce::argmax(&x, None).unwrap().to_vec::<i32>().unwrap(), vec![2]);
    assert_eq!(reduce::argmin(&x, None).unwrap().to_vec::<i32>().unwrap(), vec![2]);
    assert!(reduce::max(&x, None).unwrap().to_vec::<f32>().unwrap()[0].is_nan());
    let x = Tensor::from_slice(dev, &[2.0f32, 5.0, 5.0, -0.0, 0.0, 2.0], &[2, 3]).unwrap();
    assert_eq!(reduce::argmax(&x, Some(1)).unwrap().to_vec::<i32>().unwrap(), vec![1, 2]);
    assert_eq!(reduce::argmin(&x, Some(1)).unwrap().to_vec::<i32>().unwrap(), vec![0, 0]);
    assert_eq!(reduce::argmax(&x, Some(0)).unwrap().to_vec::<i32>().unwrap(), vec![0, 0, 0]);
    let x = Tensor::from_slice(dev, &[f32::NEG_INFINITY; 4], &[4]).unwrap();
    assert_eq!(reduce::argmax(&x, None).unwrap().to_vec::<i32>().unwrap(), vec![0]);
}

#[test]
fn keepdim_out_dtype_and_empty_axes() {
    let dev = device();
    let x = Tensor::from_slice(dev, &vec![ferrocm::f16::from_f32(1000.0); 4 * 100], &[4, 100]).unwrap();
    // 100 * 1000 overflows f16 but not an f32 output.
    let s = reduce::reduce(&x, ReduceOp::Sum, Some(1), &ReduceOptions { keepdim: true, out_dtype: Some(DType::F32) }).unwrap();
    assert_eq!(s.shape(), &[4, 1]);
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![100_000.0; 4]);
    assert!(read(&reduce::sum(&x, Some(1)).unwrap()).iter().all(|v| v.is_infinite()));
    assert_eq!(reduce::reduce(&x, ReduceOp::Max, None, &ReduceOptions { keepdim: true, out_dtype: None }).unwrap().shape(), &[1, 1]);

    let e = Tensor::zeros(dev, &[3, 0], DType::F32).unwrap();
    assert_eq!(reduce::sum(&e, Some(1)).unwrap().to_vec::<f32>().unwrap(), vec![0.0; 3]);
    assert!(reduce::mean(&e, Some(1)).unwrap().to_vec::<f32>().unwrap().iter().all(|v| v.is_nan()));
    assert_eq!(reduce::max(&e, Some(0)).unwrap().shape(), &[0]);
    assert!(matches!(reduce::max(&e, Some(1)), Err(Error::InvalidArgument { .. })));
    assert!(matches!(reduce::argmin(&e, None), Err(Error::InvalidArgument { .. })));
}

#[test]
fn bad_arguments_are_typed_errors() {
    let dev = device();
    let x = Tensor::from_slice(dev, &[1i32, 2, 3], &[3]).unwrap();
    assert!(matches!(reduce::sum(&x, None), Err(Error::DTypeMismatch { .. })));
    let x = Tensor::from_slice(dev, &[1.0f32, 2.0, 3.0], &[3]).unwrap();
    assert!(matches!(reduce::sum(&x, Some(1)), Err(Error::InvalidArgument { .. })));
    let opts = ReduceOptions { keepdim: false, out_dtype: Some(DType::F32) };
    assert!(matches!(reduce::reduce(&x, ReduceOp::ArgMax, None, &opts), Err(Error::DTypeMismatch { .. })));
    let opts = ReduceOptions { keepdim: false, out_dtype: Some(DType::I32) };
    assert!(matches!(reduce::reduce(&x, ReduceOp::Sum, None, &opts), Err(Error::DTypeMismatch { .. })));
}

#[test]
fn strided_views_are_reduced() {
    let mut seed = 9;
    let (x, xv) = tensor(&values(6 * 10, Values::Uniform, &mut seed), &[6, 10], DType::F32);
    let t = x.transpose(0, 1).unwrap(); // [10, 6]
    let got = read(&reduce::sum(&t, Some(1)).unwrap());
    for (j, g) in got.iter().enumerate() {
        let want: f64 = (0..6).map(|i| xv[i * 10 + j]).sum();
        assert!((g - want).abs() < 1e-5, "{j}: {g} vs {want}");
    }
}
