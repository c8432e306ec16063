//! Quantized weights (GGML block formats in the device layout of `abi::quant`):
//!
//! - [`format`]: each format's scales and codes as a lane reads them from a chunk;
//! - [`dequant`]: weights to f32/f16/bf16;
//! - [`gemv`]: the decode GEMV / skinny GEMM (M <= 16) on the codes, scales applied per group;
//!   `activations`: where it reads its activation rows (global memory, or their RMSNorm in LDS);
//!   `rope_kv`: its epilogue for a fused QKV projection (rotary embedding, KV-cache write);
//! - `gemv_one`: the decode GEMV of one activation row, without the general one's row blocks,
//!   tile loop and tables (a decode step's plain projections);
//! - [`gemm`]: the prefill GEMM, weight tiles dequantized into LDS for the tile layer's pipeline.

mod activations;
pub mod dequant;
mod entries;
pub mod format;
pub mod gemm;
pub mod gemv;
mod gemv_one;
mod rope_kv;

/// GEMM's epilogue parameters for a quantized product `y = x W^T`: no scaling or `beta * C`;
/// the bias, activation, residual and output type the kernel's arguments name (`flags` in
/// `abi::quant::flags`, whose BIAS and RESIDUAL bits are GEMM's).
#[inline(always)]
fn epilogue_params(bias: crate::abi::Ptr<f32>, out_type: u32, activation: u32, flags: u32) -> crate::kernels::gemm::epilogue::Params {
    use crate::abi::gemm::flags as g;
    crate::kernels::gemm::epilogue::Params { alpha: 1.0, beta: 0.0, bias, out_type, activation, flags: flags & (g::BIAS | g::RESIDUAL) }
}
