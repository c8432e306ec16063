//! Element types: one family for every kernel.
//!
//! The types are the ABI's storage types, the same the host packs: `f32`, [`F16`] (the native
//! `f16` here), [`Bf16`], [`Fp8E4M3Fnuz`], [`Fp8E5M2Fnuz`], `i32`, `i8`, and `u32`/`u16` for values
//! moved as raw bits. What a kernel can do with a type is a trait on it:
//! - [`Element`] (every type): its width, its elementwise type code, and conversions of its raw
//!   bits (held in a `u32`) to and from the f32 or i32 that kernels compute in;
//! - [`Chunked`] (f32, f16, bf16): 16-byte chunks unpacked to f32 and packed back, and single
//!   elements read and written as f32, for the memory-bound kernels that compute in f32 whatever
//!   they store;
//! - [`MmaInput`](crate::tile::mma::MmaInput) (f32 and its tf32 reading [`Xf32`](crate::tile::mma::Xf32),
//!   f16, bf16, both fp8 formats, i8): what the matrix cores multiply.
//!
//! Conversions round to nearest even, NaN stays NaN (fp8: 0x80, its only NaN), fp8 saturates.

use super::convert::{bf16_to_f32, f16_bits_to_f32, f32_to_bf16, f32_to_f16_bits, f32_to_fp8, fp8_to_f32, i32_to_bf16};
use crate::abi::elementwise::type_code;
use crate::abi::{Bf16, F16, Fp8E4M3Fnuz, Fp8E5M2Fnuz};

/// An element type: its width and conversions of its raw bits (held in the low bits of a `u32`).
pub trait Element: Copy {
    /// Bytes per element (1, 2 or 4).
    const BYTES: usize;
    /// The elementwise [`type_code`] (raw-bit types have codes of their own above those).
    const CODE: u32;
    /// An integer type: casts to and from it use integer conversions instead of f32.
    const IS_INT: bool = false;
    /// Raw bits -> f32 (exact for every float type here).
    fn to_f32(bits: u32) -> f32;
    /// f32 -> raw bits, nearest even (fp8: saturating, FNUZ; i32: truncating toward zero,
    /// saturating, NaN -> 0).
    fn from_f32(x: f32) -> u32;
    /// i32 -> raw bits, rounded once to nearest even.
    fn from_i32(v: i32) -> u32;
}

/// A 16-byte chunk as its four words (lowest address in the low bits of word 0).
pub type Chunk = [u32; 4];

/// A float type memory-bound kernels load and store, computing in f32: 4 (f32) or 8 (f16, bf16)
/// per 16-byte chunk. Arrays are `[f32; 8]` whatever the type; only the first
/// [`Chunked::PER_CHUNK`] are meaningful, so generic code indexes them with constants and LLVM
/// keeps them in registers.
pub trait Chunked: Element {
    /// Elements per 16-byte chunk.
    const PER_CHUNK: usize;
    /// The largest finite value (kernels whose f32 arithmetic cannot overflow for a narrow type
    /// skip their guards for it at compile time).
    const MAX: f32;

    /// The chunk's elements as f32 (the first [`Chunked::PER_CHUNK`] entries).
    fn unpack(c: Chunk) -> [f32; 8];

    /// The first [`Chunked::PER_CHUNK`] values rounded to the type and packed into a chunk.
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
    fn round(v: f32) -> f32 {
        Self::to_f32(Self::from_f32(v))
    }
}

impl Element for f32 {
    const BYTES: usize = 4;
    const CODE: u32 = type_code::F32;
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

impl Element for F16 {
    const BYTES: usize = 2;
    const CODE: u32 = type_code::F16;
    #[inline(always)]
    fn to_f32(bits: u32) -> f32 {
        f16_bits_to_f32(bits as u16)
    }
    #[inline(always)]
    fn from_f32(x: f32) -> u32 {
        f32_to_f16_bits(x) as u32
    }
    /// Through f32: exact below 2^24, and anything larger overflows f16 to infinity either way.
    #[inline(always)]
    fn from_i32(v: i32) -> u32 {
        f32_to_f16_bits(v as f32) as u32
    }
}

impl Element for Bf16 {
    const BYTES: usize = 2;
    const CODE: u32 = type_code::BF16;
    #[inline(always)]
    fn to_f32(bits: u32) -> f32 {
        bf16_to_f32(Bf16(bits as u16))
    }
    #[inline(always)]
    fn from_f32(x: f32) -> u32 {
        f32_to_bf16(x).0 as u32
    }
    #[inline(always)]
    fn from_i32(v: i32) -> u32 {
        i32_to_bf16(v).0 as u32
    }
}

impl Element for Fp8E4M3Fnuz {
    const BYTES: usize = 1;
    const CODE: u32 = type_code::FP8_E4M3;
    #[inline(always)]
    fn to_f32(bits: u32) -> f32 {
        fp8_to_f32::<3, 8>(bits)
    }
    #[inline(always)]
    fn from_f32(x: f32) -> u32 {
        f32_to_fp8::<3, 8>(x)
    }
    /// Through f32: exact below 2^24, and anything larger saturates either way.
    #[inline(always)]
    fn from_i32(v: i32) -> u32 {
        f32_to_fp8::<3, 8>(v as f32)
    }
}

impl Element for Fp8E5M2Fnuz {
    const BYTES: usize = 1;
    const CODE: u32 = type_code::FP8_E5M2;
    #[inline(always)]
    fn to_f32(bits: u32) -> f32 {
        fp8_to_f32::<2, 16>(bits)
    }
    #[inline(always)]
    fn from_f32(x: f32) -> u32 {
        f32_to_fp8::<2, 16>(x)
    }
    #[inline(always)]
    fn from_i32(v: i32) -> u32 {
        f32_to_fp8::<2, 16>(v as f32)
    }
}

impl Element for i32 {
    const BYTES: usize = 4;
    const CODE: u32 = type_code::I32;
    const IS_INT: bool = true;
    /// Nearest even (only used when an i32 is cast to a float through f32).
    #[inline(always)]
    fn to_f32(bits: u32) -> f32 {
        bits as i32 as f32
    }
    /// Rust's `as` is the rule we document: toward zero, saturating, NaN -> 0
    /// (one `v_cvt_i32_f32`, whose hardware semantics are the same).
    #[inline(always)]
    fn from_f32(x: f32) -> u32 {
        x as i32 as u32
    }
    #[inline(always)]
    fn from_i32(v: i32) -> u32 {
        v as u32
    }
}

/// 8-bit integers: `where` conditions (only tested for nonzero) and int8 MFMA operands.
impl Element for i8 {
    const BYTES: usize = 1;
    const CODE: u32 = type_code::I8;
    const IS_INT: bool = true;
    #[inline(always)]
    fn to_f32(bits: u32) -> f32 {
        bits as u8 as i8 as f32
    }
    #[inline(always)]
    fn from_f32(x: f32) -> u32 {
        x as i8 as u8 as u32
    }
    #[inline(always)]
    fn from_i32(v: i32) -> u32 {
        v as u8 as u32
    }
}

/// Any 32-bit value moved as bits (`where` selects without converting); the conversions
/// reinterpret.
impl Element for u32 {
    const BYTES: usize = 4;
    const CODE: u32 = 100;
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
        v as u32
    }
}

/// Any 16-bit value moved as bits; the conversions go through f16.
impl Element for u16 {
    const BYTES: usize = 2;
    const CODE: u32 = 101;
    #[inline(always)]
    fn to_f32(bits: u32) -> f32 {
        f16_bits_to_f32(bits as u16)
    }
    #[inline(always)]
    fn from_f32(x: f32) -> u32 {
        f32_to_f16_bits(x) as u32
    }
    #[inline(always)]
    fn from_i32(v: i32) -> u32 {
        v as u16 as u32
    }
}

impl Chunked for f32 {
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

impl Chunked for F16 {
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
}

impl Chunked for Bf16 {
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
}
