//! References of the elementwise ops: the exact functions in f64, the documented cast rules,
//! numpy broadcasting, where.
//!
//! Float ops are defined as "the exact result of the op on the input values, rounded once to
//! the output dtype"; the device computes in f32, so the suites compare with per-op tolerances.

use super::math::{gelu_erf, gelu_tanh, sigmoid, silu};
use crate::dtype::Element;
use crate::ops::elementwise::{BinaryOp, UnaryOp};

/// The exact unary function (in f64).
pub fn unary(op: UnaryOp, x: f64) -> f64 {
    match op {
        UnaryOp::Neg => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Rsqrt => 1.0 / x.sqrt(),
        UnaryOp::Recip => 1.0 / x,
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Sigmoid => sigmoid(x),
        UnaryOp::Relu => {
            if x > 0.0 || x.is_nan() {
                x
            } else {
                0.0
            }
        }
        UnaryOp::GeluErf => gelu_erf(x),
        UnaryOp::GeluTanh => gelu_tanh(x),
        UnaryOp::Silu => silu(x),
    }
}

/// `alpha * x + beta` as the device defines it: in f32, the product rounded before the sum.
pub fn affine(x: f32, alpha: f32, beta: f32) -> f32 {
    alpha * x + beta
}

/// The exact binary function (in f64), with the documented NaN, signed-zero and `pow` rules.
pub fn binary(op: BinaryOp, a: f64, b: f64) -> f64 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Max => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else if a == b {
                f64::from_bits(a.to_bits() & b.to_bits())
            } else {
                a.max(b)
            }
        }
        BinaryOp::Min => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else if a == b {
                f64::from_bits(a.to_bits() | b.to_bits())
            } else {
                a.min(b)
            }
        }
        // Rust's powf is C's pow, special cases included.
        BinaryOp::Pow => a.powf(b),
        // silu in f32 (its underflow and overflow included), then the product: the kernel's
        // definition, which the composed `silu` and `mul` ops share but for rounding to the
        // storage type in between.
        BinaryOp::SiluMul => (silu(a) as f32 as f64) * b,
    }
}

/// `x` cast to `U` by the documented rules: floats round once to nearest even (fp8 saturating),
/// float -> i32 truncates toward zero and saturates with NaN -> 0, i32 -> float rounds the
/// integer once. Same-type casts are bit copies.
pub fn cast<T: Element, U: Element>(x: &[T]) -> Vec<U> {
    x.iter()
        .map(|&v| {
            if T::DTYPE == U::DTYPE {
                bytemuck::cast::<T, U>(v)
            } else {
                // Every source value is exact in f64, and from_f64 rounds once.
                U::from_f64(v.to_f64())
            }
        })
        .collect()
}

/// Row-major index -> multi-index of `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = i % shape[d].max(1);
        i /= shape[d].max(1);
    }
    idx
}

/// The row-major elements of `data` (of `shape`) broadcast to `to` (numpy rules).
///
/// # Panics
/// If `data` does not hold `shape`'s elements, or `shape` does not broadcast to `to`.
pub fn broadcast<T: Copy>(data: &[T], shape: &[usize], to: &[usize]) -> Vec<T> {
    super::assert_holds("broadcast: data", data.len(), shape);
    let lead = to.len().checked_sub(shape.len());
    let fits = lead.is_some_and(|lead| shape.iter().zip(&to[lead..]).all(|(&s, &t)| s == t || s == 1));
    assert!(fits, "broadcast: {shape:?} does not broadcast to {to:?}");
    let lead = to.len() - shape.len();
    let n = super::elements(to).unwrap_or_else(|| panic!("broadcast: {to:?} has more elements than fit in usize"));
    (0..n)
        .map(|i| {
            let idx = unravel(i, to);
            let mut off = 0;
            for (d, &s) in shape.iter().enumerate() {
                let c = if s == 1 { 0 } else { idx[lead + d] };
                off = off * s + c;
            }
            data[off]
        })
        .collect()
}

/// `cond[i] != 0 ? a[i] : b[i]` over equal-length slices.
///
/// # Panics
/// If the lengths differ.
pub fn where_<C: Copy + PartialEq + Default, T: Copy>(cond: &[C], a: &[T], b: &[T]) -> Vec<T> {
    assert!(cond.len() == a.len() && a.len() == b.len(), "where: lengths differ");
    cond.iter().zip(a.iter().zip(b)).map(|(c, (&x, &y))| if *c != C::default() { x } else { y }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Fp8E4M3Fnuz;
    use half::bf16;

    #[test]
    fn broadcast_matches_numpy() {
        // [2,1] to [2,3]
        assert_eq!(broadcast(&[1, 2], &[2, 1], &[2, 3]), vec![1, 1, 1, 2, 2, 2]);
        // [3] to [2,3]
        assert_eq!(broadcast(&[1, 2, 3], &[3], &[2, 3]), vec![1, 2, 3, 1, 2, 3]);
        assert_eq!(broadcast(&[7], &[], &[2]), vec![7, 7]);
    }

    #[test]
    fn cast_rules() {
        assert_eq!(cast::<f32, i32>(&[2.9, -2.9, f32::NAN, 1e20, -1e20]), vec![2, -2, 0, i32::MAX, i32::MIN]);
        assert_eq!(cast::<f32, Fp8E4M3Fnuz>(&[1e9])[0], Fp8E4M3Fnuz::MAX);
        // 2^25 + 2^17 + 1 is just above a bf16 midpoint; through f32 it would tie down.
        let v = (1 << 25) + (1 << 17) + 1;
        assert_eq!(cast::<i32, bf16>(&[v])[0].to_f64(), ((1 << 25) + (1 << 18)) as f64);
    }

    #[test]
    fn max_min_signed_zero_and_nan() {
        assert!(binary(BinaryOp::Max, -0.0, 0.0).is_sign_positive());
        assert!(binary(BinaryOp::Min, -0.0, 0.0).is_sign_negative());
        assert!(binary(BinaryOp::Max, f64::NAN, 1.0).is_nan());
    }
}
