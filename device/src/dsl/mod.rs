//! The layer kernels are written in: thin, safe-where-possible wrappers over the amdgpu intrinsics.
//!
//! - [`ids`]: work-item, workgroup and wave indices; workgroup and grid sizes from the dispatch packet.
//! - [`sync`]: workgroup barrier and scheduling fences.
//! - [`lds`]: the launch-sized (dynamic) LDS block as typed views.
//! - [`wave`]: lane id, readfirstlane, ballot, cross-lane permutes and wave reductions.
//! - [`simd`]: the vector types MFMA and 128-bit memory accesses take.
//! - [`mfma`]: the gfx942 matrix instructions as plain functions.
//! - [`mem`]: vector loads and stores of global memory.
//! - [`math`]: exp, log, erf, tanh, GELU forms (no libm on the device).
//! - [`convert`]: f32 <-> bf16/f16 bit conversions.
//! - [`unroll`]: the `unroll!` macro (constant-indexed register arrays).
//! - [`dtype`]: the element types, one family: widths, conversions, 16-byte chunks as f32 values.
//! - [`group`]: reductions over groups of lanes (DPP) and over a workgroup's waves (LDS).

pub mod convert;
pub mod dtype;
pub mod group;
pub mod ids;
pub mod lds;
pub mod math;
pub mod mem;
pub mod mfma;
pub mod simd;
pub mod sync;
pub mod unroll;
pub mod wave;
