//! Elementwise ops: memory-bound, one pass over the data, 128-bit accesses per lane wherever
//! the layout allows.
//!
//! - [`fill()`] / [`full`]: one value everywhere, any dtype;
//! - [`cast()`] between f32, f16, bf16, fp8 (FNUZ) and i32 (rounding rules in
//!   [`cast`](mod@cast)), and [`copy`] (any view -> contiguous);
//! - [`unary()`] math ([`UnaryOp`]) and [`affine`] `a*x+b`;
//! - [`binary()`] math ([`BinaryOp`]) with numpy broadcasting;
//! - [`where_`]: `cond ? a : b` with broadcasting.
//!
//! Float math runs in f32 on f32, f16 and bf16 tensors and rounds once to the output dtype.
//! Every op returns a new contiguous tensor; inputs may be any view (strided, broadcast,
//! offset). Shape, dtype and broadcast problems are typed errors raised before any launch.
//!
//! How they run (see `device/src/kernels/elementwise`): one kernel per (op class, dtype) with the
//! op as a uniform code. After merging dimensions, a launch takes the vector path when the
//! innermost size allows whole 16-byte runs (each work-item moves 16 bytes of the narrowest
//! operand with 128-bit accesses; broadcast inputs are read once per run), else the scalar path
//! (one element per lane per step, still coalesced across the wave).

mod plan;

pub mod binary;
pub mod cast;
pub mod fill;
pub mod select;
pub mod unary;

pub use binary::{BinaryOp, add, binary, div, maximum, minimum, mul, pow, silu_mul, sub};
pub use cast::{cast, copy};
pub use fill::{fill, fill_bytes, full};
pub use select::where_;
pub use unary::{UnaryOp, abs, affine, exp, gelu_erf, gelu_tanh, log, neg, recip, relu, rsqrt, sigmoid, silu, sqrt, tanh, unary};
