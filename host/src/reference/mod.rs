//! Plain CPU implementations of every device op: the definition each kernel is tested against.
//!
//! Written for clarity, not speed: straightforward loops, f64 accumulation where a sum is
//! involved, the same rounding rules the device op documents. Public, so users can check results
//! and tests can share them.

pub mod basic;
pub mod elementwise;
pub mod gemm;
pub mod math;
pub mod movement;
pub mod norm;
pub mod quant;
pub mod reduce;
pub mod rope;
pub mod softmax;
