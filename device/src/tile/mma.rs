//! The matrix cores on tiles: which element types they multiply, and one 16-byte chunk of A and
//! of B per lane multiplied into a 16x16 or 32x32 accumulator tile.
//!
//! A chunk holds 16 bytes of one row's K values; an MFMA takes 8 bytes of them per lane (4 bytes
//! for the f32 forms), so a chunk feeds [`MmaInput::SLICES`] MFMAs in a row, the i-th taking the
//! i-th slice. Every lane group of a fragment holds some chunks of each row (see `reg`), so each
//! MFMA sums a permutation of the K-tile's k values; A and B use the same permutation, so the dot
//! products are the same (up to the order of f32 sums).

use crate::abi::{Bf16, F16, Fp8E4M3Fnuz, Fp8E5M2Fnuz};
use crate::dsl::dtype::Element;
use crate::dsl::mfma;
use crate::dsl::simd::{Bf16x4, F16x4, F32x2, F32x4, F32x16, I32x4, I32x16, U32x4};

/// f32 data the matrix cores read as tf32 (`v_mfma_*_xf32`: inputs truncated to 10 fraction
/// bits, twice the f32 rate). An opt-in reading of f32 memory, not a storage type.
#[derive(Clone, Copy)]
pub struct Xf32(pub f32);

impl Element for Xf32 {
    const BYTES: usize = 4;
    const CODE: u32 = <f32 as Element>::CODE;
    #[inline(always)]
    fn to_f32(bits: u32) -> f32 {
        f32::from_bits(bits)
    }
    #[inline(always)]
    fn from_f32(x: f32) -> u32 {
        x.to_bits()
    }
    #[inline(always)]
    fn from_i32(v: i32) -> u32 {
        (v as f32).to_bits()
    }
}

/// One MFMA operand of a lane: 8 bytes (two words), or one word for the f32 forms (`[w, 0]`).
pub type Slice = [u32; 2];

/// An element type the matrix cores multiply, with its two MFMA shapes. Accumulators are f32
/// registers; int8's are i32, carried as their bits.
pub trait MmaInput: Element {
    /// MFMA operands in a 16-byte chunk (2, or 4 for the one-word f32 operand).
    const SLICES: usize;
    /// `c + A * B` on a 16x16 tile for one operand slice per lane.
    fn mfma16(a: Slice, b: Slice, c: F32x4) -> F32x4;
    /// `c + A * B` on a 32x32 tile.
    fn mfma32(a: Slice, b: Slice, c: F32x16) -> F32x16;
}

/// Slice `s` of a chunk.
#[inline(always)]
fn slice<E: MmaInput>(c: U32x4, s: usize) -> Slice {
    let w = c.to_array();
    if E::SLICES == 4 { [w[s], 0] } else { [w[2 * s], w[2 * s + 1]] }
}

/// `c + A_chunk * B_chunk` over the chunk's k values, 16x16 tile.
#[inline(always)]
pub fn mma16<E: MmaInput>(a: U32x4, b: U32x4, mut c: F32x4) -> F32x4 {
    crate::unroll_max!(s < E::SLICES, 4 => {
        c = E::mfma16(slice::<E>(a, s), slice::<E>(b, s), c);
    });
    c
}

/// `c + A_chunk * B_chunk` over the chunk's k values, 32x32 tile.
#[inline(always)]
pub fn mma32<E: MmaInput>(a: U32x4, b: U32x4, mut c: F32x16) -> F32x16 {
    crate::unroll_max!(s < E::SLICES, 4 => {
        c = E::mfma32(slice::<E>(a, s), slice::<E>(b, s), c);
    });
    c
}

/// Raw bits as another 8-byte operand type.
#[inline(always)]
fn bits<T>(s: Slice) -> T {
    const { assert!(core::mem::size_of::<T>() == 8) };
    // SAFETY: 8 bytes of raw bits either way (checked above); every bit pattern is a value.
    unsafe { core::mem::transmute_copy(&s) }
}

#[inline(always)]
fn word64(s: Slice) -> u64 {
    s[0] as u64 | (s[1] as u64) << 32
}

impl MmaInput for f32 {
    const SLICES: usize = 4;
    #[inline(always)]
    fn mfma16(a: Slice, b: Slice, c: F32x4) -> F32x4 {
        mfma::mfma_16x16x4_f32(f32::from_bits(a[0]), f32::from_bits(b[0]), c)
    }
    #[inline(always)]
    fn mfma32(a: Slice, b: Slice, c: F32x16) -> F32x16 {
        mfma::mfma_32x32x2_f32(f32::from_bits(a[0]), f32::from_bits(b[0]), c)
    }
}

impl MmaInput for Xf32 {
    const SLICES: usize = 2;
    #[inline(always)]
    fn mfma16(a: Slice, b: Slice, c: F32x4) -> F32x4 {
        mfma::mfma_16x16x8_xf32(bits::<F32x2>(a), bits::<F32x2>(b), c)
    }
    #[inline(always)]
    fn mfma32(a: Slice, b: Slice, c: F32x16) -> F32x16 {
        mfma::mfma_32x32x4_xf32(bits::<F32x2>(a), bits::<F32x2>(b), c)
    }
}

impl MmaInput for F16 {
    const SLICES: usize = 2;
    #[inline(always)]
    fn mfma16(a: Slice, b: Slice, c: F32x4) -> F32x4 {
        mfma::mfma_16x16x16_f16(bits::<F16x4>(a), bits::<F16x4>(b), c)
    }
    #[inline(always)]
    fn mfma32(a: Slice, b: Slice, c: F32x16) -> F32x16 {
        mfma::mfma_32x32x8_f16(bits::<F16x4>(a), bits::<F16x4>(b), c)
    }
}

impl MmaInput for Bf16 {
    const SLICES: usize = 2;
    #[inline(always)]
    fn mfma16(a: Slice, b: Slice, c: F32x4) -> F32x4 {
        mfma::mfma_16x16x16_bf16(bits::<Bf16x4>(a), bits::<Bf16x4>(b), c)
    }
    #[inline(always)]
    fn mfma32(a: Slice, b: Slice, c: F32x16) -> F32x16 {
        mfma::mfma_32x32x8_bf16(bits::<Bf16x4>(a), bits::<Bf16x4>(b), c)
    }
}

impl MmaInput for Fp8E4M3Fnuz {
    const SLICES: usize = 2;
    #[inline(always)]
    fn mfma16(a: Slice, b: Slice, c: F32x4) -> F32x4 {
        mfma::mfma_16x16x32_fp8_fp8(word64(a), word64(b), c)
    }
    #[inline(always)]
    fn mfma32(a: Slice, b: Slice, c: F32x16) -> F32x16 {
        mfma::mfma_32x32x16_fp8_fp8(word64(a), word64(b), c)
    }
}

impl MmaInput for Fp8E5M2Fnuz {
    const SLICES: usize = 2;
    #[inline(always)]
    fn mfma16(a: Slice, b: Slice, c: F32x4) -> F32x4 {
        mfma::mfma_16x16x32_bf8_bf8(word64(a), word64(b), c)
    }
    #[inline(always)]
    fn mfma32(a: Slice, b: Slice, c: F32x16) -> F32x16 {
        mfma::mfma_32x32x16_bf8_bf8(word64(a), word64(b), c)
    }
}

/// int8 products summed exactly in i32 (wrapping); the accumulator registers hold i32 bits.
impl MmaInput for i8 {
    const SLICES: usize = 2;
    #[inline(always)]
    fn mfma16(a: Slice, b: Slice, c: F32x4) -> F32x4 {
        // SAFETY (both transmutes): 16 bytes of register bits either way.
        let c = unsafe { core::mem::transmute::<F32x4, I32x4>(c) };
        unsafe { core::mem::transmute::<I32x4, F32x4>(mfma::mfma_16x16x32_i8(word64(a), word64(b), c)) }
    }
    #[inline(always)]
    fn mfma32(a: Slice, b: Slice, c: F32x16) -> F32x16 {
        // SAFETY (both transmutes): 64 bytes of register bits either way.
        let c = unsafe { core::mem::transmute::<F32x16, I32x16>(c) };
        unsafe { core::mem::transmute::<I32x16, F32x16>(mfma::mfma_32x32x16_i8(word64(a), word64(b), c)) }
    }
}
