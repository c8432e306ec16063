//! Safe tensor operations: validate, pick a kernel, launch. Each op has its CPU definition in
//! [`reference`](crate::reference) and a proptest suite comparing the two on a device.
//!
//! - [`attention`]: flash attention (prefill, encoders) and decode over a paged KV cache;
//! - [`basic`]: fill, copy, saxpy, the 32x32 MFMA tile (the first kernels);
//! - [`layout`]: strided views made contiguous;
//! - [`gemm`]: matrix products on the matrix cores, with fused epilogues;
//! - [`gemm_fp8`]: fp8 products with block scales, plain and grouped (mixture of experts);
//! - [`qmatmul`]: products with GGML block-quantized weights (decode GEMV, prefill GEMM) and
//!   their dequantization;
//! - [`elementwise`]: fill, cast, copy, unary and binary math with broadcasting, where;
//! - [`movement`]: gather (embedding, index_select), transpose of the last two axes, concat.
//! - [`reduce`]: sum, mean, max, min, argmax, argmin over an axis or everything;
//! - [`softmax`]: softmax and log-softmax over the last axis;
//! - [`norm`]: RMSNorm and LayerNorm (and their fused residual-add forms);
//! - [`rope`]: rotary position embedding;
//! - [`rows`]: how the row-resident kernels spread rows over lanes.

pub mod attention;
pub mod basic;
pub mod elementwise;
pub mod gemm;
pub mod gemm_fp8;
pub mod layout;
pub mod movement;
pub mod norm;
pub mod qmatmul;
pub mod reduce;
pub mod rope;
pub mod rows;
pub mod softmax;
