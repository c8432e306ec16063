//! Binary math with numpy broadcasting on f32, f16 and bf16 tensors: `y = op(a, b)`, computed in
//! f32 and rounded once to the dtype. Both operands have the same dtype (no implicit promotion:
//! [`cast`](fn@super::cast) first).
//!
//! ```
//! use ferrocm::{Device, Tensor, ops::elementwise::{self as ew, BinaryOp}};
//! let dev = Device::new()?;
//! let x = Tensor::from_slice(&dev, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
//! let bias = Tensor::from_slice(&dev, &[10.0f32, 20.0, 30.0], &[3])?;
//! let y = ew::add(&x, &bias)?; // [2, 3]: the bias broadcast over rows
//! assert_eq!(y.to_vec::<f32>()?, vec![11.0, 22.0, 33.0, 14.0, 25.0, 36.0]);
//! let p = ew::binary(BinaryOp::Pow, &x, &Tensor::from_slice(&dev, &[2.0f32], &[1])?)?;
//! assert_eq!(p.to_vec::<f32>()?[2], 9.0);
//! # Ok::<(), ferrocm::Error>(())
//! ```

use super::plan::{Nary, broadcast_shapes, run};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use ferrocm_device::abi::elementwise::{self as abi, binary_op};

/// The binary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b` (correctly rounded in f32).
    Div,
    /// The larger; NaN if either is NaN; `max(-0, +0) = +0`.
    Max,
    /// The smaller; NaN if either is NaN; `min(-0, +0) = -0`.
    Min,
    /// `a^b` with C99 `powf` special cases (`x^0 = 1`, `1^y = 1`, negative finite base with a
    /// non-integer exponent is NaN, odd integer powers keep the sign). Computed as
    /// `2^(b log2 |a|)` in f32: relative error about `2^-23 |b log2 a|` plus a few ulp.
    Pow,
    /// `silu(a) * b = a * sigmoid(a) * b`: the gating of SwiGLU feed-forward blocks in one
    /// launch. `silu(a)` is computed in f32 as [`UnaryOp::Silu`](super::UnaryOp::Silu) does
    /// (so it underflows to 0 below about -104 and the product with an infinite `b` is then
    /// NaN), then multiplied by `b` in f32: the composed ops' result without their rounding
    /// to the storage type in between.
    SiluMul,
}

impl BinaryOp {
    /// Every op, for tests and tools.
    pub const ALL: [BinaryOp; 8] =
        [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Max, BinaryOp::Min, BinaryOp::Pow, BinaryOp::SiluMul];

    /// The kernel's op code.
    pub const fn code(self) -> u32 {
        match self {
            BinaryOp::Add => binary_op::ADD,
            BinaryOp::Sub => binary_op::SUB,
            BinaryOp::Mul => binary_op::MUL,
            BinaryOp::Div => binary_op::DIV,
            BinaryOp::Max => binary_op::MAX,
            BinaryOp::Min => binary_op::MIN,
            BinaryOp::Pow => binary_op::POW,
            BinaryOp::SiluMul => binary_op::SILU_MUL,
        }
    }
}

/// `op(a, b)` elementwise with numpy broadcasting into a new contiguous tensor. Either operand
/// may be any view; broadcast operands are read once per output run (stride 0), not copied.
///
/// # Errors
/// [`Error::Shape`] when the shapes do not broadcast; [`Error::DTypeMismatch`] unless both are
/// the same of f32, f16, bf16; [`Error::DeviceMismatch`]; [`Error::Unsupported`] for more than
/// 2^32 - 2^16 elements or more than 6 unmergeable dimensions; allocation and launch errors.
pub fn binary(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let name = "binary";
    if a.dtype() != b.dtype() {
        return Err(Error::DTypeMismatch { op: name, what: "b", got: b.dtype(), expected: a.dtype().to_string() });
    }
    let (kernel, epl) = match a.dtype() {
        DType::F32 => (abi::BINARY_F32, 4),
        DType::F16 => (abi::BINARY_F16, 8),
        DType::Bf16 => (abi::BINARY_BF16, 8),
        d => return Err(Error::DTypeMismatch { op: name, what: "a", got: d, expected: "f32, f16 or bf16".into() }),
    };
    let shape = broadcast_shapes(name, &[a.shape(), b.shape()])?;
    run(&Nary {
        op: name,
        kernel,
        epl,
        inputs: &[a, b],
        names: &["a", "b"],
        out_shape: &shape,
        out_dtype: a.dtype(),
        code: op.code(),
        type_code: 0,
        alpha: 0.0,
        beta: 0.0,
    })
}

macro_rules! binary_fns {
    ($($(#[$m:meta])* $name:ident => $op:ident),* $(,)?) => {$(
        $(#[$m])*
        ///
        /// # Errors
        /// As [`binary`].
        pub fn $name(a: &Tensor, b: &Tensor) -> Result<Tensor> {
            binary(BinaryOp::$op, a, b)
        }
    )*};
}

binary_fns! {
    /// `a + b` with broadcasting.
    add => Add,
    /// `a - b` with broadcasting.
    sub => Sub,
    /// `a * b` with broadcasting.
    mul => Mul,
    /// `a / b` with broadcasting.
    div => Div,
    /// Elementwise maximum with broadcasting (see [`BinaryOp::Max`]).
    maximum => Max,
    /// Elementwise minimum with broadcasting (see [`BinaryOp::Min`]).
    minimum => Min,
    /// `a^b` with broadcasting (see [`BinaryOp::Pow`]).
    pow => Pow,
    /// `silu(a) * b` with broadcasting (see [`BinaryOp::SiluMul`]).
    silu_mul => SiluMul,
}
