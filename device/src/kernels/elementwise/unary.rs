//! `out = op(x)` for the [`unary_op`]s, computed in f32.

use super::nary::{EltFn, Inputs, run};
use crate::abi::elementwise::{EltArgs, unary_op};
use crate::dsl::dtype::Element;
use crate::dsl::math;
use core::marker::PhantomData;

/// The function of the unary kernel for dtype `D`.
struct Unary<D> {
    op: u32,
    alpha: f32,
    beta: f32,
    _d: PhantomData<D>,
}

impl<D: Element> EltFn for Unary<D> {
    /// Decodes, applies the op, encodes. The match is outside the per-element loops (the op is
    /// uniform), so each arm is a straight run of one operation.
    #[inline(always)]
    fn apply<const N: usize>(&self, x: &Inputs<N>) -> [u32; N] {
        let mut v = [0f32; N];
        crate::unroll!(k < N => {
            v[k] = D::to_f32(x[0][k]);
        });
        macro_rules! each {
            (|$x:ident| $e:expr) => {{
                crate::unroll!(k < N => {
                    let $x = v[k];
                    v[k] = $e;
                });
            }};
        }
        let (alpha, beta) = (self.alpha, self.beta);
        match self.op {
            unary_op::NEG => each!(|x| -x),
            unary_op::ABS => each!(|x| math::abs(x)),
            unary_op::EXP => each!(|x| math::exp(x)),
            unary_op::LOG => each!(|x| math::log(x)),
            unary_op::SQRT => each!(|x| math::sqrt(x)),
            unary_op::RSQRT => each!(|x| math::rsqrt(x)),
            unary_op::RECIP => each!(|x| 1.0 / x),
            unary_op::TANH => each!(|x| math::tanh(x)),
            unary_op::SIGMOID => each!(|x| math::sigmoid(x)),
            unary_op::RELU => each!(|x| math::relu(x)),
            unary_op::GELU_ERF => each!(|x| math::gelu_erf(x)),
            unary_op::GELU_TANH => each!(|x| math::gelu_tanh(x)),
            unary_op::SILU => each!(|x| math::silu(x)),
            // Product rounded before the sum, as the reference does (no FMA contraction in Rust).
            unary_op::AFFINE => each!(|x| alpha * x + beta),
            // The host only passes known codes.
            _ => {}
        }
        let mut y = [0u32; N];
        crate::unroll!(k < N => {
            y[k] = D::from_f32(v[k]);
        });
        y
    }
}

/// The unary kernel for dtype `D`, `EPL` elements per work-item (`16 / D::BYTES`).
#[inline(always)]
pub fn unary<D: Element, const EPL: usize>(args: EltArgs) {
    let f = Unary::<D> { op: args.op, alpha: args.alpha, beta: args.beta, _d: PhantomData };
    run::<EPL, EPL, 1, D, D, D, D, _>(&args, &f);
}
