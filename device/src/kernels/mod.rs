//! Kernel bodies and their entry points (amdgpu only). Each body is an `#[inline(always)]`
//! function taking its `abi` argument struct; each family's `entries` binds the symbols its
//! `abi` module declares to the bodies (see `kernel_abi!`).

pub mod attention;
pub mod contiguous;
pub mod elementwise;
pub mod gemm;
pub mod movement;
pub mod norm;
pub mod quant;
pub mod reduce;
pub mod rope;
pub mod rowwise;
pub mod smoke;
pub mod softmax;
