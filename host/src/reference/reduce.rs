//! Reductions over one axis, in f64 (see [`ops::reduce`](crate::ops::reduce) for the rules).

use crate::ops::reduce::ReduceOp;

/// `[outer][len][inner]` of `shape` over `axis` (everything for `None`).
fn canonical(shape: &[usize], axis: Option<usize>) -> (usize, usize, usize) {
    match axis {
        None => (1, shape.iter().product(), 1),
        Some(a) => (shape[..a].iter().product(), shape[a], shape[a + 1..].iter().product()),
    }
}

/// The reduced run of output `(o, i)` as an iterator of (index along the axis, value).
fn run<'a>(x: &'a [f64], len: usize, inner: usize, o: usize, i: usize) -> impl Iterator<Item = (usize, f64)> + 'a {
    (0..len).map(move |l| (l, x[(o * len + l) * inner + i]))
}

/// Sum, mean, max or min of the row-major `x` of `shape` over `axis`, one value per output in
/// row-major order. Empty runs give 0 (sum), NaN (mean), -inf (max) and +inf (min).
///
/// # Panics
/// If `x` does not hold the shape's elements, the axis is out of range, or `op` is an arg op.
pub fn reduce(x: &[f64], shape: &[usize], op: ReduceOp, axis: Option<usize>) -> Vec<f64> {
    super::assert_holds("reduce: x", x.len(), shape);
    assert!(axis.is_none_or(|a| a < shape.len()), "reduce: axis {axis:?} out of range for rank {}", shape.len());
    assert!(!op.is_arg(), "reduce: use arg_reduce for {op:?}");
    let (outer, len, inner) = canonical(shape, axis);
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let vals = run(x, len, inner, o, i).map(|(_, v)| v);
            out.push(match op {
                ReduceOp::Sum => vals.sum(),
                ReduceOp::Mean => vals.sum::<f64>() / len as f64,
                ReduceOp::Max => vals.fold(f64::NEG_INFINITY, |m, v| if v.is_nan() || m.is_nan() { f64::NAN } else { m.max(v) }),
                _ => vals.fold(f64::INFINITY, |m, v| if v.is_nan() || m.is_nan() { f64::NAN } else { m.min(v) }),
            });
        }
    }
    out
}

/// Argmax or argmin of the row-major `x` of `shape` over `axis`: the first index of a NaN if the
/// run has one, else the first index of the extreme value.
///
/// # Panics
/// If `x` does not hold the shape's elements, the axis is out of range, a run is empty, or `op`
/// is not an arg op.
pub fn arg_reduce(x: &[f64], shape: &[usize], op: ReduceOp, axis: Option<usize>) -> Vec<usize> {
    super::assert_holds("arg_reduce: x", x.len(), shape);
    assert!(axis.is_none_or(|a| a < shape.len()), "arg_reduce: axis {axis:?} out of range for rank {}", shape.len());
    assert!(op.is_arg(), "arg_reduce: {op:?} is not an arg op");
    let (outer, len, inner) = canonical(shape, axis);
    assert!(len > 0, "arg_reduce: empty axis");
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let mut best = (0, x[o * len * inner + i]);
            for (l, v) in run(x, len, inner, o, i) {
                if best.1.is_nan() {
                    break;
                }
                let better = v.is_nan() || if op == ReduceOp::ArgMax { v > best.1 } else { v < best.1 };
                if better {
                    best = (l, v);
                }
            }
            out.push(best.0);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_nan_and_ties() {
        let x = [1.0, 5.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(reduce(&x, &[2, 3], ReduceOp::Sum, Some(1)), vec![9.0, 15.0]);
        assert_eq!(reduce(&x, &[2, 3], ReduceOp::Max, Some(0)), vec![4.0, 5.0, 6.0]);
        assert_eq!(arg_reduce(&x, &[2, 3], ReduceOp::ArgMax, Some(0)), vec![1, 0, 1]); // tie -> first
        assert_eq!(arg_reduce(&x, &[6], ReduceOp::ArgMax, None), vec![5]);
        let n = [1.0, f64::NAN, 7.0, f64::NAN];
        assert!(reduce(&n, &[4], ReduceOp::Min, None)[0].is_nan());
        assert_eq!(arg_reduce(&n, &[4], ReduceOp::ArgMin, None), vec![1]);
        assert!(reduce(&[], &[0], ReduceOp::Mean, None)[0].is_nan());
    }
}
