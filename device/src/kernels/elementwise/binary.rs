//! `out = op(a, b)` for the [`binary_op`]s with numpy broadcasting, computed in f32.

use super::nary::{EltFn, Inputs, run};
use crate::abi::elementwise::{EltArgs, binary_op};
use crate::dsl::dtype::Element;
use crate::dsl::math;
use core::marker::PhantomData;

/// The function of the binary kernel for dtype `D`.
struct Binary<D> {
    op: u32,
    _d: PhantomData<D>,
}

impl<D: Element> EltFn for Binary<D> {
    /// Decodes both inputs, applies the op (matched outside the element loops), encodes.
    #[inline(always)]
    fn apply<const N: usize>(&self, x: &Inputs<N>) -> [u32; N] {
        let mut a = [0f32; N];
        let mut b = [0f32; N];
        crate::unroll!(k < N => {
            a[k] = D::to_f32(x[0][k]);
            b[k] = D::to_f32(x[1][k]);
        });
        macro_rules! each {
            (|$x:ident, $y:ident| $e:expr) => {{
                crate::unroll!(k < N => {
                    let ($x, $y) = (a[k], b[k]);
                    a[k] = $e;
                });
            }};
        }
        match self.op {
            binary_op::ADD => each!(|x, y| x + y),
            binary_op::SUB => each!(|x, y| x - y),
            binary_op::MUL => each!(|x, y| x * y),
            binary_op::DIV => each!(|x, y| x / y),
            binary_op::MAX => each!(|x, y| math::maximum(x, y)),
            binary_op::MIN => each!(|x, y| math::minimum(x, y)),
            binary_op::POW => each!(|x, y| math::pow(x, y)),
            binary_op::SILU_MUL => each!(|x, y| math::silu(x) * y),
            // The host only passes known codes.
            _ => {}
        }
        let mut y = [0u32; N];
        crate::unroll!(k < N => {
            y[k] = D::from_f32(a[k]);
        });
        y
    }
}

/// The binary kernel for dtype `D`, `EPL` elements per work-item (`16 / D::BYTES`).
#[inline(always)]
pub fn binary<D: Element, const EPL: usize>(args: EltArgs) {
    let f = Binary::<D> { op: args.op, _d: PhantomData };
    run::<EPL, EPL, 2, D, D, D, D, _>(&args, &f);
}
