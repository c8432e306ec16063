//! GEMM reference: f64 accumulation, then the epilogue in f64, in the kernel's order.

use super::math::{gelu_erf, gelu_tanh, silu};
use crate::dtype::Element;
use crate::ops::gemm::Activation;

/// Row-major `A` (m x k) times row-major `B` (k x n), accumulated in f64.
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
