//! The matrix-core step per input type: one 16-byte chunk of A and of B per lane feeds 2 or 4
//! MFMAs (16x16 or 32x32) accumulating into the same tile.
//!
//! K order inside a 64-byte K-tile: each lane group (lane / 16 for 16x16, lane / 32 with two
//! chunks each for 32x32, see `wave`) holds some 16-byte chunks of every row, and the i-th MFMA
//! of a chunk takes the i-th slice of it. Each MFMA therefore sums a permutation of the tile's k
//! values; A and B use the same permutation, so the dot products are the same (up to f32
//! summation order).

use crate::dsl::mfma;
use crate::dsl::simd::{Bf16x4, F16x4, F32x2, F32x4, F32x16, U32x4};

/// An MFMA input type.
pub trait MmaIn {
    /// Bytes per element.
    const BYTES: usize;
    /// `c + A_chunk * B_chunk` over the chunk's k values, 16x16 tile.
    fn mma(a: U32x4, b: U32x4, c: F32x4) -> F32x4;
    /// The same for a 32x32 tile.
    fn mma32(a: U32x4, b: U32x4, c: F32x16) -> F32x16;
}

/// bf16 inputs (v_mfma_f32_16x16x16_bf16, 2 per chunk).
pub struct Bf16In;
/// f16 inputs (v_mfma_f32_16x16x16_f16, 2 per chunk).
pub struct F16In;
/// f32 inputs (v_mfma_f32_16x16x4_f32, 4 per chunk).
pub struct F32In;
/// f32 inputs truncated to tf32 by the hardware (v_mfma_f32_16x16x8_xf32, 2 per chunk).
pub struct Xf32In;
/// E4M3FNUZ inputs (v_mfma_f32_16x16x32_fp8_fp8, 2 per chunk).
pub struct Fp8In;
/// E5M2FNUZ inputs (v_mfma_f32_16x16x32_bf8_bf8, 2 per chunk).
pub struct Bf8In;

#[inline(always)]
fn halves(v: U32x4) -> ([u32; 2], [u32; 2]) {
    let w = v.to_array();
    ([w[0], w[1]], [w[2], w[3]])
}

#[inline(always)]
fn as_u64(h: [u32; 2]) -> u64 {
    h[0] as u64 | (h[1] as u64) << 32
}

impl MmaIn for Bf16In {
    const BYTES: usize = 2;
    #[inline(always)]
    fn mma(a: U32x4, b: U32x4, c: F32x4) -> F32x4 {
        let (a0, a1) = halves(a);
        let (b0, b1) = halves(b);
        // SAFETY (transmute): [u32; 2] and Bf16x4 are both 8 bytes of raw bits.
        let cv = |h: [u32; 2]| unsafe { core::mem::transmute::<[u32; 2], Bf16x4>(h) };
        let c = mfma::mfma_16x16x16_bf16(cv(a0), cv(b0), c);
        mfma::mfma_16x16x16_bf16(cv(a1), cv(b1), c)
    }
    #[inline(always)]
    fn mma32(a: U32x4, b: U32x4, c: F32x16) -> F32x16 {
        let (a0, a1) = halves(a);
        let (b0, b1) = halves(b);
        // SAFETY (transmute): 8 bytes of raw bits either way.
        let cv = |h: [u32; 2]| unsafe { core::mem::transmute::<[u32; 2], Bf16x4>(h) };
        let c = mfma::mfma_32x32x8_bf16(cv(a0), cv(b0), c);
        mfma::mfma_32x32x8_bf16(cv(a1), cv(b1), c)
    }
}

impl MmaIn for F16In {
    const BYTES: usize = 2;
    #[inline(always)]
    fn mma(a: U32x4, b: U32x4, c: F32x4) -> F32x4 {
        let (a0, a1) = halves(a);
        let (b0, b1) = halves(b);
        // SAFETY: 8 bytes of f16 bits either way.
        let cv = |h: [u32; 2]| unsafe { core::mem::transmute::<[u32; 2], F16x4>(h) };
        let c = mfma::mfma_16x16x16_f16(cv(a0), cv(b0), c);
        mfma::mfma_16x16x16_f16(cv(a1), cv(b1), c)
    }
    #[inline(always)]
    fn mma32(a: U32x4, b: U32x4, c: F32x16) -> F32x16 {
        let (a0, a1) = halves(a);
        let (b0, b1) = halves(b);
        // SAFETY: 8 bytes of f16 bits either way.
        let cv = |h: [u32; 2]| unsafe { core::mem::transmute::<[u32; 2], F16x4>(h) };
        let c = mfma::mfma_32x32x8_f16(cv(a0), cv(b0), c);
        mfma::mfma_32x32x8_f16(cv(a1), cv(b1), c)
    }
}

impl MmaIn for F32In {
    const BYTES: usize = 4;
    #[inline(always)]
    fn mma(a: U32x4, b: U32x4, c: F32x4) -> F32x4 {
        let (a, b) = (a.to_array(), b.to_array());
        let mut c = c;
        let mut i = 0;
        while i < 4 {
            c = mfma::mfma_16x16x4_f32(f32::from_bits(a[i]), f32::from_bits(b[i]), c);
            i += 1;
        }
        c
    }
    #[inline(always)]
    fn mma32(a: U32x4, b: U32x4, c: F32x16) -> F32x16 {
        let (a, b) = (a.to_array(), b.to_array());
        let mut c = c;
        let mut i = 0;
        while i < 4 {
            c = mfma::mfma_32x32x2_f32(f32::from_bits(a[i]), f32::from_bits(b[i]), c);
            i += 1;
        }
        c
    }
}

impl MmaIn for Xf32In {
    const BYTES: usize = 4;
    #[inline(always)]
    fn mma(a: U32x4, b: U32x4, c: F32x4) -> F32x4 {
        let (a0, a1) = halves(a);
        let (b0, b1) = halves(b);
        let cv = |h: [u32; 2]| F32x2::from_array([f32::from_bits(h[0]), f32::from_bits(h[1])]);
        let c = mfma::mfma_16x16x8_xf32(cv(a0), cv(b0), c);
        mfma::mfma_16x16x8_xf32(cv(a1), cv(b1), c)
    }
    #[inline(always)]
    fn mma32(a: U32x4, b: U32x4, c: F32x16) -> F32x16 {
        let (a0, a1) = halves(a);
        let (b0, b1) = halves(b);
        let cv = |h: [u32; 2]| F32x2::from_array([f32::from_bits(h[0]), f32::from_bits(h[1])]);
        let c = mfma::mfma_32x32x4_xf32(cv(a0), cv(b0), c);
        mfma::mfma_32x32x4_xf32(cv(a1), cv(b1), c)
    }
}

impl MmaIn for Fp8In {
    const BYTES: usize = 1;
    #[inline(always)]
    fn mma(a: U32x4, b: U32x4, c: F32x4) -> F32x4 {
        let (a0, a1) = halves(a);
        let (b0, b1) = halves(b);
        let c = mfma::mfma_16x16x32_fp8_fp8(as_u64(a0), as_u64(b0), c);
        mfma::mfma_16x16x32_fp8_fp8(as_u64(a1), as_u64(b1), c)
    }
    #[inline(always)]
    fn mma32(a: U32x4, b: U32x4, c: F32x16) -> F32x16 {
        let (a0, a1) = halves(a);
        let (b0, b1) = halves(b);
        let c = mfma::mfma_32x32x16_fp8_fp8(as_u64(a0), as_u64(b0), c);
        mfma::mfma_32x32x16_fp8_fp8(as_u64(a1), as_u64(b1), c)
    }
}

impl MmaIn for Bf8In {
    const BYTES: usize = 1;
    #[inline(always)]
    fn mma(a: U32x4, b: U32x4, c: F32x4) -> F32x4 {
        let (a0, a1) = halves(a);
        let (b0, b1) = halves(b);
        let c = mfma::mfma_16x16x32_bf8_bf8(as_u64(a0), as_u64(b0), c);
        mfma::mfma_16x16x32_bf8_bf8(as_u64(a1), as_u64(b1), c)
    }
    #[inline(always)]
    fn mma32(a: U32x4, b: U32x4, c: F32x16) -> F32x16 {
        let (a0, a1) = halves(a);
        let (b0, b1) = halves(b);
        let c = mfma::mfma_32x32x16_bf8_bf8(as_u64(a0), as_u64(b0), c);
        mfma::mfma_32x32x16_bf8_bf8(as_u64(a1), as_u64(b1), c)
    }
}
