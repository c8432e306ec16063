//! Safe tensor operations: validate, pick a kernel, launch. Each op has its CPU definition in
//! [`reference`](crate::reference) and a proptest suite comparing the two on a device.
//!
//! - [`basic`]: fill, copy, saxpy, the 32x32 MFMA tile (the first kernels);
//! - [`layout`]: strided views made contiguous;
//! - [`gemm`]: matrix products on the matrix cores, with fused epilogues;
//! - [`gemm_fp8`]: fp8 products with block scales, plain and grouped (mixture of experts);
//! - [`elementwise`]: fill, cast, copy, unary and binary math with broadcasting, where;
//! - [`movement`]: gather (embedding, index_select), transpose of the last two axes, concat.

pub mod basic;
pub mod elementwise;
pub mod gemm;
pub mod gemm_fp8;
pub mod layout;
pub mod movement;
