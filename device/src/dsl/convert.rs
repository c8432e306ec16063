//! Conversions between f32 and the 16-bit and 8-bit float formats, as bit patterns.
//!
//! f32 -> bf16/f16 round to nearest even (the hardware's and `half`'s rule); NaN stays NaN.

use crate::abi::Bf16;

/// f32 -> bf16, nearest even.
#[inline(always)]
pub fn f32_to_bf16(x: f32) -> Bf16 {
    let b = x.to_bits();
    if x.is_nan() {
        return Bf16(((b >> 16) | 0x40) as u16);
    }
    Bf16(((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16)
}

/// bf16 -> f32 (exact).
#[inline(always)]
pub fn bf16_to_f32(x: Bf16) -> f32 {
    f32::from_bits((x.0 as u32) << 16)
}

/// f32 -> f16 bits, nearest even (the hardware conversion).
#[inline(always)]
pub fn f32_to_f16_bits(x: f32) -> u16 {
    (x as f16).to_bits()
}

/// f16 bits -> f32 (exact).
#[inline(always)]
pub fn f16_bits_to_f32(x: u16) -> f32 {
    f16::from_bits(x) as f32
}
