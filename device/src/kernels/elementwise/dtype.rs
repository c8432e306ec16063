//! Element types as the elementwise kernels see them: a width and the conversions to and from
//! the f32 (or i32) the kernels compute in. Values travel as raw bits in the low bits of a `u32`,
//! so loading and storing depend only on the width, and one generic driver serves every dtype.

use crate::abi::Bf16 as Bf16Bits;
use crate::abi::elementwise::type_code;
use crate::dsl::convert::{bf16_to_f32, f16_bits_to_f32, f32_to_bf16, f32_to_f16_bits, f32_to_fp8, fp8_to_f32, i32_to_bf16};

/// An element type: its width and conversions of its raw bits (held in a `u32`).
pub trait Dt: Copy {
    /// Bytes per element (1, 2 or 4).
    const BYTES: usize;
    /// The [`type_code`] (raw-bit types have codes of their own above those).
    const CODE: u32;
    /// The i32 type: casts to and from it use integer conversions instead of f32.
    const IS_INT: bool = false;
    /// Raw bits -> f32 (exact for every float type here).
    fn to_f32(bits: u32) -> f32;
    /// f32 -> raw bits, nearest even (fp8: saturating, FNUZ; i32: truncating toward zero,
    /// saturating, NaN -> 0).
    fn from_f32(x: f32) -> u32;
    /// i32 -> raw bits, rounded once to nearest even.
    fn from_i32(v: i32) -> u32;
}

/// IEEE binary32.
#[derive(Clone, Copy)]
pub struct F32;
/// IEEE binary16.
#[derive(Clone, Copy)]
pub struct F16;
/// bfloat16.
#[derive(Clone, Copy)]
pub struct Bf16;
/// fp8 E4M3FNUZ.
#[derive(Clone, Copy)]
pub struct Fp8E4M3;
/// fp8 E5M2FNUZ.
#[derive(Clone, Copy)]
pub struct Fp8E5M2;
/// 32-bit signed integer.
#[derive(Clone, Copy)]
pub struct I32;
/// 8-bit integer (a `where` condition).
#[derive(Clone, Copy)]
pub struct I8;
/// Any 32-bit value moved as bits (`where` selects without converting).
#[derive(Clone, Copy)]
pub struct B32;
/// Any 16-bit value moved as bits.
#[derive(Clone, Copy)]
pub struct B16;

impl Dt for F32 {
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

impl Dt for F16 {
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

impl Dt for Bf16 {
    const BYTES: usize = 2;
    const CODE: u32 = type_code::BF16;
    #[inline(always)]
    fn to_f32(bits: u32) -> f32 {
        bf16_to_f32(Bf16Bits(bits as u16))
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

impl Dt for Fp8E4M3 {
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

impl Dt for Fp8E5M2 {
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

impl Dt for I32 {
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

/// Conditions are only tested for nonzero; the conversions are never used.
impl Dt for I8 {
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

/// Raw 32-bit values; the conversions reinterpret.
impl Dt for B32 {
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

/// Raw 16-bit values; the conversions go through f16.
impl Dt for B16 {
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
