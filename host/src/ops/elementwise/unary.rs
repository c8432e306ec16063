//! Unary math on f32, f16 and bf16 tensors: `y = op(x)`, computed in f32 and rounded once to
//! the tensor's dtype (nearest even).
//!
//! ```
//! use ferrocm::{Device, Tensor, ops::elementwise::{self as ew, UnaryOp}};
//! let dev = Device::new()?;
//! let x = Tensor::from_slice(&dev, &[-1.0f32, 0.0, 2.0], &[3])?;
//! let y = ew::unary(UnaryOp::Relu, &x)?;
//! assert_eq!(y.to_vec::<f32>()?, vec![0.0, 0.0, 2.0]);
//! let z = ew::affine(&x, 2.0, 1.0)?; // 2x + 1
//! assert_eq!(z.to_vec::<f32>()?, vec![-1.0, 1.0, 5.0]);
//! # Ok::<(), ferrocm::Error>(())
//! ```

use super::plan::{Nary, run};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use ferrocm_device::abi::Kernel;
use ferrocm_device::abi::elementwise::{self as abi, EltArgs, unary_op};

/// The unary operations. Accuracy against the exact function (f32 outputs): NEG, ABS, RELU,
/// SQRT, RECIP exact or correctly rounded; the rest within a few ulp, see the test suite's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`.
    Neg,
    /// `|x|`.
    Abs,
    /// `e^x`.
    Exp,
    /// Natural logarithm (NaN below 0, -inf at 0).
    Log,
    /// Square root (NaN below 0; `sqrt(-0) = -0`).
    Sqrt,
    /// `1 / sqrt(x)` (two correctly rounded steps).
    Rsqrt,
    /// `1 / x` (correctly rounded).
    Recip,
    /// Hyperbolic tangent.
    Tanh,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `max(x, 0)`; NaN stays NaN, `relu(-0) = +0`.
    Relu,
    /// GELU with the exact normal CDF: `x * (1 + erf(x / sqrt 2)) / 2`.
    GeluErf,
    /// GELU, tanh approximation: `x * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2`.
    GeluTanh,
    /// `x * sigmoid(x)`.
    Silu,
}

impl UnaryOp {
    /// Every op, for tests and tools.
    pub const ALL: [UnaryOp; 13] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Recip,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Relu,
        UnaryOp::GeluErf,
        UnaryOp::GeluTanh,
        UnaryOp::Silu,
    ];

    /// The kernel's op code.
    pub const fn code(self) -> u32 {
        match self {
            UnaryOp::Neg => unary_op::NEG,
            UnaryOp::Abs => unary_op::ABS,
            UnaryOp::Exp => unary_op::EXP,
            UnaryOp::Log => unary_op::LOG,
            UnaryOp::Sqrt => unary_op::SQRT,
            UnaryOp::Rsqrt => unary_op::RSQRT,
            UnaryOp::Recip => unary_op::RECIP,
            UnaryOp::Tanh => unary_op::TANH,
            UnaryOp::Sigmoid => unary_op::SIGMOID,
            UnaryOp::Relu => unary_op::RELU,
            UnaryOp::GeluErf => unary_op::GELU_ERF,
            UnaryOp::GeluTanh => unary_op::GELU_TANH,
            UnaryOp::Silu => unary_op::SILU,
        }
    }
}

/// The unary kernel of a float dtype and its elements per work-item.
pub(crate) fn float_kernel(op: &'static str, what: &'static str, d: DType) -> Result<(Kernel<EltArgs>, u32)> {
    match d {
        DType::F32 => Ok((abi::UNARY_F32, 4)),
        DType::F16 => Ok((abi::UNARY_F16, 8)),
        DType::Bf16 => Ok((abi::UNARY_BF16, 8)),
        d => Err(Error::DTypeMismatch { op, what, got: d, expected: "f32, f16 or bf16".into() }),
    }
}

fn launch(name: &'static str, x: &Tensor, code: u32, alpha: f32, beta: f32) -> Result<Tensor> {
    let (kernel, epl) = float_kernel(name, "x", x.dtype())?;
    run(&Nary {
        op: name,
        kernel,
        epl,
        inputs: &[x],
        names: &["x"],
        out_shape: x.shape(),
        out_dtype: x.dtype(),
        code,
        type_code: 0,
        alpha,
        beta,
    })
}

/// `op(x)` elementwise into a new contiguous tensor of `x`'s shape and dtype. `x` may be any
/// view (strided, broadcast); contiguous 16-byte aligned inputs are read with 128-bit loads.
///
/// # Errors
/// [`Error::DTypeMismatch`] unless `x` is f32, f16 or bf16; [`Error::Unsupported`] for more than
/// [`ELT_MAX_ELEMENTS`](ferrocm_device::abi::elementwise::ELT_MAX_ELEMENTS) elements or views of
/// more than 6 unmergeable dimensions; allocation and launch errors.
pub fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    launch("unary", x, op.code(), 0.0, 0.0)
}

/// `alpha * x + beta` elementwise (the product rounded to f32 before the sum, no FMA).
///
/// # Errors
/// As [`unary`].
pub fn affine(x: &Tensor, alpha: f32, beta: f32) -> Result<Tensor> {
    launch("affine", x, unary_op::AFFINE, alpha, beta)
}

macro_rules! unary_fns {
    ($($(#[$m:meta])* $name:ident => $op:ident),* $(,)?) => {$(
        $(#[$m])*
        ///
        /// # Errors
        /// As [`unary`].
        pub fn $name(x: &Tensor) -> Result<Tensor> {
            unary(UnaryOp::$op, x)
        }
    )*};
}

unary_fns! {
    /// `-x` (see [`UnaryOp::Neg`]).
    neg => Neg,
    /// `|x|` (see [`UnaryOp::Abs`]).
    abs => Abs,
    /// `e^x` (see [`UnaryOp::Exp`]).
    exp => Exp,
    /// `ln x` (see [`UnaryOp::Log`]).
    log => Log,
    /// `sqrt x` (see [`UnaryOp::Sqrt`]).
    sqrt => Sqrt,
    /// `1 / sqrt x` (see [`UnaryOp::Rsqrt`]).
    rsqrt => Rsqrt,
    /// `1 / x` (see [`UnaryOp::Recip`]).
    recip => Recip,
    /// `tanh x` (see [`UnaryOp::Tanh`]).
    tanh => Tanh,
    /// `1 / (1 + e^-x)` (see [`UnaryOp::Sigmoid`]).
    sigmoid => Sigmoid,
    /// `max(x, 0)` (see [`UnaryOp::Relu`]).
    relu => Relu,
    /// GELU, erf form (see [`UnaryOp::GeluErf`]).
    gelu_erf => GeluErf,
    /// GELU, tanh form (see [`UnaryOp::GeluTanh`]).
    gelu_tanh => GeluTanh,
    /// `x * sigmoid(x)` (see [`UnaryOp::Silu`]).
    silu => Silu,
}
