//! GEMM: `C = alpha * A * B^T + beta * C` (+ bias, activation, residual), A `[M][K]`, B `[N][K]`,
//! on the tile layer (`crate::tile`).
//!
//! - [`plain`]: every input dtype, 128x128 blocks of 4 waves (16x16 or 32x32 MFMAs) and the 16x64
//!   one-wave block for tall-skinny shapes, one pass or split-K;
//! - [`stream_k`]: the 128x128 blocks' K-tiles (the plain kernel's, and the block-scaled one's
//!   in whole scale blocks) dealt evenly to one round of workgroups (no partly empty last round),
//!   split blocks finished by their last contributor;
//! - [`gemv`]: the decode GEMV (M <= 16 per workgroup), B streamed once, K split over waves;
//! - [`blockscaled`]: fp8 with DeepGEMM-style block scales, plain and grouped (mixture of experts);
//! - [`epilogue`]: accumulators -> C (alpha, beta, bias, activation, residual, conversion), shared
//!   by both and by the split-K second pass [`splitk`].

pub mod blockscaled;
mod entries;
pub mod epilogue;
pub mod gemv;
pub mod plain;
pub mod splitk;
pub mod stream_k;
