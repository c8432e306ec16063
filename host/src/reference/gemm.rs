//! GEMM reference: f64 accumulation, then the epilogue in f64, in the kernel's order.

use super::math::{gelu_erf, gelu_tanh, silu};
use crate::dtype::Element;
use crate::ops::gemm::Activation;

/// Row-major `A` (m x k) times row-major `B` (k x n), accumulated in f64.
///
/// # Panics
/// If the slices do not hold m*k and k*n elements.
pub fn matmul<T: Element>(a: &[T], b: &[T], m: usize, n: usize, k: usize) -> Vec<f64> {
    super::basic::matmul(a, b, m, n, k)
}

/// The activation in f64.
pub fn activate(act: Activation, x: f64) -> f64 {
    match act {
        Activation::None => x,
        Activation::Relu => {
            if x.is_nan() {
                x
            } else {
                x.max(0.0)
            }
        }
        Activation::GeluErf => gelu_erf(x),
        Activation::GeluTanh => gelu_tanh(x),
        Activation::Silu => silu(x),
    }
}

/// `activate(alpha * acc + beta * c + bias) + residual`, the epilogue's order.
pub fn epilogue(acc: f64, alpha: f64, beta: f64, c: f64, bias: f64, act: Activation, residual: f64) -> f64 {
    activate(act, alpha * acc + beta * c + bias) + residual
}

/// Block-scaled product (see [`ops::gemm_fp8`](crate::ops::gemm_fp8)), accumulated in f64:
/// `C[i][j] = sum_kb sa[i][kb] * sb[j / 128][kb] * sum_{k in kb} a[i][k] * b[j][k]`, with `a`
/// `m x k`, `b` `n x k`, `sa` `m x ceil(k/128)`, `sb` `ceil(n/128) x ceil(k/128)`, all row-major.
///
/// # Panics
/// If a slice does not hold the elements its shape above says.
pub fn blockscaled(a: &[f64], sa: &[f64], b: &[f64], sb: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    const BLOCK: usize = 128;
    let kb = k.div_ceil(BLOCK);
    super::assert_holds("blockscaled: a", a.len(), &[m, k]);
    super::assert_holds("blockscaled: b", b.len(), &[n, k]);
    super::assert_holds("blockscaled: sa", sa.len(), &[m, kb]);
    super::assert_holds("blockscaled: sb", sb.len(), &[n.div_ceil(BLOCK), kb]);
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0;
            for blk in 0..kb {
                let part: f64 = (blk * BLOCK..((blk + 1) * BLOCK).min(k)).map(|x| a[i * k + x] * b[j * k + x]).sum();
                acc += sa[i * kb + blk] * sb[(j / BLOCK) * kb + blk] * part;
            }
            c[i * n + j] = acc;
        }
    }
    c
}
