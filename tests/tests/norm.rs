//! RMSNorm and LayerNorm (and their fused residual-add forms) on the device against the f64
//! reference (`ferrocm::reference::norm`).
//!
//! Tolerances per element, `u = 2^-24`, `K = 128` (a lane's 32 elements, the merge tree, the
//! square root and division, with room for hardware `v_sqrt`/`v_rcp` at ~1 ulp):
//! - RMSNorm: relative `K u` of the exact result, then the output rounding (half an ulp; half
//!   the subnormal spacing below the normal range);
//! - LayerNorm: `|w| rstd (|x - mean| K u (1 + |mean| / std) + K u (|x| + |mean|)) + |b| u`,
//!   then the output rounding. The `|mean| / std` term is the conditioning of the variance:
//!   rows far from zero relative to their spread lose digits in any f32 computation;
//! - `h = x + residual`: within one output rounding of the f64 sum's rounding (the device adds
//!   in f32 then rounds, which can differ by an ulp from rounding the exact sum), and the norm
//!   is checked against the reference applied to the device's own `h`.
//!
//! Rows from 1 element through primes and non-multiples of the 16-byte chunk to past one
//! workgroup's capacity (8192 with 16-byte accesses, 4096 without), so the two-pass path runs;
//! optional weight and bias; rows shifted away from zero for LayerNorm's conditioning.

use ferrocm::ops::norm;
use ferrocm::{DType, Error, Tensor, reference};
use ferrocm_tests::tensors::{FLOAT_DTYPES, close, read, round_to, rounding, tensor, uniform};
use ferrocm_tests::{device, proptest_config};
use proptest::prelude::*;

const U: f64 = 1.0 / (1u64 << 24) as f64;
const K: f64 = 128.0;

#[derive(Clone, Copy, Debug)]
struct Case {
    rows: usize,
    len: usize,
    dtype: DType,
    layer: bool,
    residual: bool,
    weight: bool,
    bias: bool,
    shift: f64,
    eps: f32,
    seed: u64,
}

fn rand_vec(n: usize, lo: f64, hi: f64, seed: &mut u64) -> Vec<f64> {
    (0..n).map(|_| lo + (uniform(seed) + 1.0) / 2.0 * (hi - lo)).collect()
}

fn run(c: &Case) -> Result<(), TestCaseError> {
    let mut seed = c.seed;
    let n = c.rows * c.len;
    let shape = [c.rows, c.len];
    let (x, xv) = tensor(&rand_vec(n, c.shift - 2.0, c.shift + 2.0, &mut seed), &shape, c.dtype);
    let (r, rv) = tensor(&rand_vec(n, -1.0, 1.0, &mut seed), &shape, c.dtype);
    let (w, wv) = tensor(&rand_vec(c.len, 0.5, 1.5, &mut seed), &[c.len], c.dtype);
    let (b, bv) = tensor(&rand_vec(c.len, -0.5, 0.5, &mut seed), &[c.len], c.dtype);
    let (wt, bt) = (c.weight.then_some(&w), c.bias.then_some(&b));
    let fail = |e: Error| TestCaseError::fail(e.to_string());
    let (y, h) = match (c.layer, c.residual) {
        (false, false) => (norm::rms_norm(&x, wt, c.eps).map_err(fail)?, None),
        (true, false) => (norm::layer_norm(&x, wt, bt, c.eps).map_err(fail)?, None),
        (false, true) => norm::add_rms_norm(&x, &r, wt, c.eps).map(|(y, h)| (y, Some(h))).map_err(fail)?,
        (true, true) => norm::add_layer_norm(&x, &r, wt, bt, c.eps).map(|(y, h)| (y, Some(h))).map_err(fail)?,
    };
    prop_assert_eq!(y.shape(), &shape);
    // The normalised input: x, or the device's h (checked against x + r first).
    let input = match &h {
        Some(h) => {
            let got = read(h);
            let sums: Vec<f64> = xv.iter().zip(&rv).map(|(a, b)| a + b).collect();
            let want = round_to(&sums, c.dtype);
            for k in 0..n {
                prop_assert!(close(got[k], want[k], 2.0 * rounding(c.dtype, want[k])), "h[{}] = {}, want {} ({:?})", k, got[k], want[k], c);
            }
            got
        }
        None => xv.clone(),
    };
    let got = read(&y);
    let (wr, br) = (c.weight.then_some(&wv[..]), (c.bias && c.layer).then_some(&bv[..]));
    let want = if c.layer {
        reference::norm::layer_norm(&input, c.len, wr, br, c.eps as f64)
    } else {
        reference::norm::rms_norm(&input, c.len, wr, c.eps as f64)
    };
    for (ri, row) in input.chunks(c.len).enumerate() {
        let mean = row.iter().sum::<f64>() / c.len as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / c.len as f64;
        let std = (var + c.eps as f64).sqrt();
        // The f32 mean's own error scales with the row's magnitudes, not with |mean|: a row
        // whose mean is near 0 still sums values of about 1.
        let mean_abs = row.iter().map(|v| v.abs()).sum::<f64>() / c.len as f64;
        for (j, &xj) in row.iter().enumerate() {
            let k = ri * c.len + j;
            let wj = wr.map_or(1.0, |w| w[j]).abs();
            let bj = br.map_or(0.0, |b| b[j]).abs();
            let tol = if c.layer {
                wj / std * ((xj - mean).abs() * K * U * (1.0 + mean.abs() / std) + K * U * (xj.abs() + mean_abs)) + bj * U
            } else {
                K * U * want[k].abs()
            } + rounding(c.dtype, want[k]);
            prop_assert!(close(got[k], want[k], tol), "y[{}][{}] = {}, want {} (tol {:e}, {:?})", ri, j, got[k], want[k], tol, c);
        }
    }
    Ok(())
}

fn len() -> impl Strategy<Value = usize> {
    prop_oneof![
        3 => 1usize..=40,
        2 => prop::sample::select(vec![1usize, 2, 7, 61, 127, 1021, 4093, 4096, 4097]),
        2 => prop::sample::select(vec![64usize, 128, 1000, 2048, 4096, 8192]),
        1 => 41usize..=3000,
        1 => prop::sample::select(vec![8193usize, 8200, 12_288, 20_000]),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        len(),
        1usize..=9,
        prop::sample::select(FLOAT_DTYPES.to_vec()),
        any::<[bool; 4]>(),
        prop::sample::select(vec![0.0, 0.0, 5.0]),
        prop::sample::select(vec![1e-5f32, 1e-6, 0.1]),
        any::<u64>(),
    )
        .prop_filter("at most 150k elements", |(l, r, ..)| l * r <= 150_000)
        .prop_map(|(len, rows, dtype, [layer, residual, weight, bias], shift, eps, seed)| Case {
            rows,
            len,
            dtype,
            layer,
            residual,
            weight,
            bias,
            shift,
            eps,
            seed,
        })
}

proptest! {
    #![proptest_config(proptest_config(40))]

    #[test]
    fn norms_match_the_reference(c in case()) {
        run(&c)?;
    }
}

#[test]
fn long_rows_take_two_passes() {
    for (rows, len) in [(3, 20_000), (2, 30_001)] {
        for dtype in FLOAT_DTYPES {
            for (layer, residual) in [(false, true), (true, false), (true, true)] {
                let c = Case { rows, len, dtype, layer, residual, weight: true, bias: true, shift: 1.0, eps: 1e-6, seed: 7 };
                run(&c).unwrap();
            }
        }
    }
}

#[test]
fn many_rows_share_workgroups() {
    // More rows than the persistent grid: each workgroup walks several rows with its weights
    // (rows past the short-row kernel's 4096 bytes).
    for dtype in FLOAT_DTYPES {
        let c =
            Case { rows: 1300, len: 2560, dtype, layer: true, residual: true, weight: true, bias: true, shift: 0.0, eps: 1e-5, seed: 3 };
        run(&c).unwrap();
    }
}

#[test]
fn short_rows_take_a_wave_each() {
    // Up to 512 rows of at most 4096 bytes in 16-byte chunks: one wave per row, up to 4 per
    // workgroup; a row count that is not a multiple of 4, and the longest rows the kernel takes
    // (f32: 1024, f16/bf16: 2048 values, 4 chunks a lane), and either side of half of that
    // (the half kernel's limit).
    for dtype in FLOAT_DTYPES {
        let longest = 4096 / dtype.size();
        for (rows, len) in [(501, 64), (5, longest), (3, longest - 8), (1, 576), (2, longest / 2), (2, longest / 2 + 8)] {
            for (layer, residual) in [(false, true), (true, false)] {
                let c = Case { rows, len, dtype, layer, residual, weight: true, bias: layer, shift: 1.0, eps: 1e-5, seed: 11 };
                run(&c).unwrap();
            }
        }
    }
}

#[test]
fn bad_arguments_are_typed_errors() {
    let dev = device();
    let x = Tensor::from_slice(dev, &[1.0f32; 8], &[2, 4]).unwrap();
    let w3 = Tensor::from_slice(dev, &[1.0f32; 3], &[3]).unwrap();
    let wh = Tensor::from_slice(dev, &[ferrocm::f16::ONE; 4], &[4]).unwrap();
    let r = Tensor::from_slice(dev, &[1.0f32; 4], &[4]).unwrap();
    assert!(matches!(norm::rms_norm(&x, Some(&w3), 1e-6), Err(Error::Shape { .. })));
    assert!(matches!(norm::layer_norm(&x, Some(&wh), None, 1e-6), Err(Error::DTypeMismatch { .. })));
    assert!(matches!(norm::add_rms_norm(&x, &r, None, 1e-6), Err(Error::Shape { .. })));
    assert!(matches!(norm::rms_norm(&x, None, -1.0), Err(Error::InvalidArgument { .. })));
    assert!(matches!(norm::rms_norm(&x, None, f32::NAN), Err(Error::InvalidArgument { .. })));
    let xi = Tensor::from_slice(dev, &[1i32; 4], &[4]).unwrap();
    assert!(matches!(norm::rms_norm(&xi, None, 1e-6), Err(Error::DTypeMismatch { .. })));
    let s = Tensor::from_slice(dev, &[1.0f32], &[]).unwrap();
    assert!(matches!(norm::layer_norm(&s, None, None, 1e-6), Err(Error::Shape { .. })));
    let e = Tensor::zeros(dev, &[0, 4], DType::F32).unwrap();
    assert_eq!(norm::rms_norm(&e, None, 1e-6).unwrap().shape(), &[0, 4]);
}

#[test]
fn non_finite_rows_are_nan() {
    // Rows: NaN, +inf, -inf, then a finite row that must match the reference regardless of
    // its neighbours. The contract (ops::norm): a non-finite row is NaN throughout.
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    let vals = [1.0, nan, 2.0, 3.0, 1.0, inf, 2.0, 3.0, -inf, 1.0, 2.0, 3.0, 1.0, -2.0, 2.0, 3.0];
    for dtype in FLOAT_DTYPES {
        let (t, tv) = tensor(&vals, &[4, 4], dtype);
        for layer in [false, true] {
            let y = read(&if layer { norm::layer_norm(&t, None, None, 1e-6) } else { norm::rms_norm(&t, None, 1e-6) }.unwrap());
            assert!(y[..12].iter().all(|v| v.is_nan()), "{dtype} layer {layer}: {y:?}");
            let want = if layer {
                reference::norm::layer_norm(&tv[12..], 4, None, None, 1e-6)
            } else {
                reference::norm::rms_norm(&tv[12..], 4, None, 1e-6)
            };
            for (g, w) in y[12..].iter().zip(&want) {
                assert!(close(*g, *w, K * U * w.abs() + rounding(dtype, *w)), "{dtype} layer {layer}: {g} vs {w}");
            }
        }
    }
}

#[test]
fn rows_whose_squares_overflow_f32_are_normalised() {
    // The statistics squared f32 values: rows like these gave NaN where the reference is finite.
    let cases = |max: f64| -> Vec<Vec<f64>> {
        let mut c = vec![vec![1e38, -1e38, 0.0], vec![max; 3], vec![max, -max, max, 0.5]];
        // Longer rows: lanes and waves of different scales (a huge half and a unit half), and
        // past one workgroup, where the statistics pass carries the scale between segments.
        for len in [4096usize, 20_000] {
            c.push((0..len).map(|i| if i < len / 2 { (i % 7) as f64 * 1e37 - 3e37 } else { (i % 5) as f64 - 2.0 }).collect());
        }
        c
    };
    for (dtype, max) in [(DType::F32, f32::MAX as f64), (DType::Bf16, ferrocm::bf16::MAX.to_f64())] {
        for vals in cases(max) {
            let len = vals.len();
            let (t, tv) = tensor(&vals, &[1, len], dtype);
            let mean = tv.iter().sum::<f64>() / len as f64;
            let std = (tv.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / len as f64 + 1e-6).sqrt();
            for layer in [false, true] {
                let y = read(&if layer { norm::layer_norm(&t, None, None, 1e-6) } else { norm::rms_norm(&t, None, 1e-6) }.unwrap());
                let want = if layer {
                    reference::norm::layer_norm(&tv, len, None, None, 1e-6)
                } else {
                    reference::norm::rms_norm(&tv, len, None, 1e-6)
                };
                for (j, (g, w)) in y.iter().zip(&want).enumerate() {
                    // The suite's bounds (module docs) with weight 1 and no bias.
                    let tol = if layer {
                        ((tv[j] - mean).abs() * K * U * (1.0 + mean.abs() / std) + K * U * (tv[j].abs() + mean.abs())) / std
                    } else {
                        K * U * w.abs()
                    } + rounding(dtype, *w);
                    assert!(g.is_finite() && close(*g, *w, tol), "{dtype} layer {layer} len {len} [{j}]: {g} vs {w} (tol {tol:e})");
                }
            }
        }
    }
    // A constant row of huge values: LayerNorm is exactly 0 (its mean is kept exactly).
    let (t, _) = tensor(&[f32::MAX as f64; 3], &[1, 3], DType::F32);
    assert_eq!(read(&norm::layer_norm(&t, None, None, 1e-6).unwrap()), vec![0.0; 3]);
}

/// A row whose mean is near 0 with an element next to it (a random case that failed when the
/// tolerance took the mean's error from |mean| rather than from the row's magnitudes).
#[test]
fn an_element_next_to_a_near_zero_mean() {
    let c = Case {
        rows: 2,
        len: 2907,
        dtype: DType::F32,
        layer: true,
        residual: false,
        weight: false,
        bias: false,
        shift: 0.0,
        eps: 1e-5,
        seed: 634172705881703320,
    };
    run(&c).unwrap();
}
