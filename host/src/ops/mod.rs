//! Safe tensor operations: validate, pick a kernel, launch. Each op has its CPU definition in
//! [`reference`](crate::reference) and a proptest suite comparing the two on a device.
//!
//! - [`basic`]: fill, copy, saxpy, the 32x32 MFMA tile (the first kernels);
//! - [`layout`]: strided views made contiguous;
//! - [`gemm`]: matrix products on the matrix cores, with fused epilogues.

pub mod basic;
pub mod gemm;
pub mod layout;
