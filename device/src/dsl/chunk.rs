//! Element types as f32 values: 16-byte chunks (one 128-bit access) unpacked to f32 and packed
//! back, and single elements read and written as f32.
//!
//! Memory-bound kernels compute in f32 whatever they store: [`Elem`] is the one place that
//! knows how f32, f16 and bf16 sit in a 16-byte chunk (4 or 8 per chunk, lowest address in the
//! low bits of word 0) and how f32 rounds back to them (nearest even, NaN kept NaN).
//! Arrays are `[f32; 8]` whatever the type; only the first [`Elem::PER_CHUNK`] are meaningful, so
//! generic code indexes them with constants and LLVM keeps them in registers.

use super::convert::{bf16_to_f32, f16_bits_to_f32, f32_to_bf16, f32_to_f16_bits};
use super::simd::U32x4;
use crate::abi::Bf16;

/// A 16-byte chunk as its four words.
pub type Chunk = [u32; 4];

/// An element type memory-bound kernels load and store, computing in f32.
pub trait Elem: Copy {
    /// Bytes per element.
    const BYTES: usize;
    /// Elements per 16-byte chunk (4 for f32, 8 for the 16-bit types).
    const PER_CHUNK: usize;
    /// The largest finite value (kernels whose f32 arithmetic cannot overflow for a narrow type
    /// skip their guards for it at compile time).
    const MAX: f32;

    /// The chunk's elements as f32 (the first [`Elem::PER_CHUNK`] entries).
    fn unpack(c: Chunk) -> [f32; 8];

    /// The first [`Elem::PER_CHUNK`] values rounded to the type and packed into a chunk.
    fn pack(v: &[f32; 8]) -> Chunk;

    /// Reads element `i` of the array at `p` as f32.
    ///
    /// # Safety
    /// Element `i` is readable device memory.
    unsafe fn load(p: *const u8, i: usize) -> f32;

    /// Writes `v`, rounded to the type, as element `i` of the array at `p`.
    ///
    /// # Safety
    /// Element `i` is writable device memory.
    unsafe fn store(p: *mut u8, i: usize, v: f32);

    /// `v` rounded to the type and back (what storing and reloading it gives).
    fn round(v: f32) -> f32;
}

impl Elem for f32 {
    const BYTES: usize = 4;
    const PER_CHUNK: usize = 4;
    const MAX: f32 = f32::MAX;

    #[inline(always)]
    fn unpack(c: Chunk) -> [f32; 8] {
        [f32::from_bits(c[0]), f32::from_bits(c[1]), f32::from_bits(c[2]), f32::from_bits(c[3]), 0.0, 0.0, 0.0, 0.0]
    }
    #[inline(always)]
    fn pack(v: &[f32; 8]) -> Chunk {
        [v[0].to_bits(), v[1].to_bits(), v[2].to_bits(), v[3].to_bits()]
    }
    #[inline(always)]
    unsafe fn load(p: *const u8, i: usize) -> f32 {
        unsafe { (p as *const f32).add(i).read() }
    }
    #[inline(always)]
    unsafe fn store(p: *mut u8, i: usize, v: f32) {
        unsafe { (p as *mut f32).add(i).write(v) }
    }
    #[inline(always)]
    fn round(v: f32) -> f32 {
        v
    }
}

/// Two 16-bit patterns in one word, `lo` at the lower address.
#[inline(always)]
fn pair(lo: u16, hi: u16) -> u32 {
    lo as u32 | (hi as u32) << 16
}

impl Elem for f16 {
    const BYTES: usize = 2;
    const PER_CHUNK: usize = 8;
    const MAX: f32 = 65504.0;

    #[inline(always)]
    fn unpack(c: Chunk) -> [f32; 8] {
        let h = |w: u32, s: u32| f16_bits_to_f32((w >> s) as u16);
        [h(c[0], 0), h(c[0], 16), h(c[1], 0), h(c[1], 16), h(c[2], 0), h(c[2], 16), h(c[3], 0), h(c[3], 16)]
    }
    #[inline(always)]
    fn pack(v: &[f32; 8]) -> Chunk {
        let b = |x: f32| f32_to_f16_bits(x);
        [pair(b(v[0]), b(v[1])), pair(b(v[2]), b(v[3])), pair(b(v[4]), b(v[5])), pair(b(v[6]), b(v[7]))]
    }
    #[inline(always)]
    unsafe fn load(p: *const u8, i: usize) -> f32 {
        unsafe { f16_bits_to_f32((p as *const u16).add(i).read()) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut u8, i: usize, v: f32) {
        unsafe { (p as *mut u16).add(i).write(f32_to_f16_bits(v)) }
    }
    #[inline(always)]
    fn round(v: f32) -> f32 {
        f16_bits_to_f32(f32_to_f16_bits(v))
    }
}

impl Elem for Bf16 {
    const BYTES: usize = 2;
    const PER_CHUNK: usize = 8;
    const MAX: f32 = f32::from_bits(0x7f7f_0000);

    #[inline(always)]
    fn unpack(c: Chunk) -> [f32; 8] {
        // bf16 is the high half of an f32: shift the low element up, mask the high one.
        let lo = |w: u32| f32::from_bits(w << 16);
        let hi = |w: u32| f32::from_bits(w & 0xffff_0000);
        [lo(c[0]), hi(c[0]), lo(c[1]), hi(c[1]), lo(c[2]), hi(c[2]), lo(c[3]), hi(c[3])]
    }
    #[inline(always)]
    fn pack(v: &[f32; 8]) -> Chunk {
        let b = |x: f32| f32_to_bf16(x).0;
        [pair(b(v[0]), b(v[1])), pair(b(v[2]), b(v[3])), pair(b(v[4]), b(v[5])), pair(b(v[6]), b(v[7]))]
    }
    #[inline(always)]
    unsafe fn load(p: *const u8, i: usize) -> f32 {
        unsafe { bf16_to_f32(Bf16((p as *const u16).add(i).read())) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut u8, i: usize, v: f32) {
        unsafe { (p as *mut u16).add(i).write(f32_to_bf16(v).0) }
    }
    #[inline(always)]
    fn round(v: f32) -> f32 {
        bf16_to_f32(f32_to_bf16(v))
    }
}

/// Loads the 16-byte chunk at byte offset `off` from `p` as words.
///
/// # Safety
/// `p + off` is 16-byte aligned and the 16 bytes are readable.
#[inline(always)]
pub unsafe fn load_chunk(p: *const u8, off: usize) -> Chunk {
    unsafe { super::mem::load_b128(p.add(off) as *const u32).to_array() }
}

/// Stores a chunk at byte offset `off` from `p`.
///
/// # Safety
/// `p + off` is 16-byte aligned and the 16 bytes are writable.
#[inline(always)]
pub unsafe fn store_chunk(p: *mut u8, off: usize, c: Chunk) {
    unsafe { super::mem::store_b128(p.add(off) as *mut u32, U32x4::from_array(c)) }
}
