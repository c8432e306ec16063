//! Quantized weights (GGML block formats in the device layout of `abi::quant`):
//!
//! - [`format`]: each format's scales and codes as a lane reads them from a chunk;
//! - [`dequant`]: weights to f32/f16/bf16;
//! - [`gemv`]: the decode GEMV / skinny GEMM (M <= 16) on the codes, scales applied per group;
//! - [`gemm`]: the prefill GEMM, weight tiles dequantized into LDS for the tile layer's pipeline.

pub mod dequant;
mod entries;
pub mod format;
pub mod gemm;
pub mod gemv;
