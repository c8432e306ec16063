//! Tiles for matrix-core kernels: the anatomy every MFMA kernel shares, built once.
//!
//! A matrix-core kernel moves K-tiles (`rows x 64 bytes` of each operand) from global memory into
//! LDS, reads MFMA fragments out of LDS, and multiplies them into accumulators a wave keeps in
//! registers; an epilogue turns the accumulators into outputs. The layers, bottom up:
//!
//! - [`mma`]: the element types the matrix cores multiply ([`mma::MmaInput`]: f32, xf32, f16,
//!   bf16, both fp8 formats, int8) and one 16-byte chunk of A and B multiplied into a 16x16 or
//!   32x32 accumulator tile;
//! - [`global`]: a block's rows of an operand over a buffer resource, one K-tile at a time into
//!   registers, clamped at the matrix edges, zero-filled past K; [`direct`]: the same loaded
//!   straight into LDS (gfx942's loads to LDS, M0 the LDS base);
//! - [`lds`]: K-tiles in LDS, swizzled so that neither the stores nor the fragment reads have
//!   bank conflicts, in as many stages as the pipeline asks;
//! - [`reg`]: register tiles ([`reg::Tiles16`], [`reg::Tiles32`]): a wave's accumulators, its
//!   fragment reads and MFMAs in two groups per K-tile, and the accumulator layout;
//! - [`pipeline`]: the K loop, one schedule for every kernel, with any number of LDS stages and
//!   either producer (through registers, or straight into LDS): loads, stores, barrier and
//!   fragment reads overlapped with MFMAs; kernels plug their per-K-tile work in as a
//!   [`pipeline::Consumer`], of which [`accumulate::Accumulate`] (MFMAs into one register tile)
//!   is the plain one;
//! - [`order`]: which output block each workgroup computes (compact blocks of C per XCD);
//! - [`transposed`]: operands reduced along their slow axis (attention's V) stored transposed in
//!   LDS through a register regrouping, read as 16x16 MFMA fragments.

pub mod accumulate;
pub mod direct;
pub mod global;
pub mod lds;
pub mod mma;
pub mod order;
pub mod pipeline;
pub mod reg;
pub mod transposed;
