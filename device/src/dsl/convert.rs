//! Conversions between f32 and the 16-bit and 8-bit float formats, as bit patterns.
//!
//! f32 -> bf16/f16 round to nearest even (the hardware's and `half`'s rule); NaN stays NaN.

use crate::abi::Bf16;

/// f32 -> bf16, nearest even.
#[inline(always)]
pub fn f32_to_bf16(x: f32) -> Bf16 {
    let b = x.to_bits();
    // Both results, then a select: written as an early return for NaN, LLVM emits a divergent
    // branch (exec mask save/restore, 9 instructions) per converted value.
    let rounded = b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16;
    let quiet = (b >> 16) | 0x40;
    Bf16((if x.is_nan() { quiet } else { rounded }) as u16)
}

/// Two f32 -> bf16 (nearest even, as [`f32_to_bf16`]), `a` in the low 16 bits: each rounded in
/// the high half of its bits (a quiet NaN as `bits | 0x40_0000`, whose high half is
/// `f32_to_bf16`'s), then one merge; converted one by one, each was shifted down and back.
#[inline(always)]
pub fn bf16_pair(a: f32, b: f32) -> u32 {
    // Both values, then a select (see `f32_to_bf16`).
    let high = |x: f32| {
        let bits = x.to_bits();
        let rounded = bits.wrapping_add(0x7fff + ((bits >> 16) & 1));
        let quiet = bits | 0x0040_0000;
        if x.is_nan() { quiet } else { rounded }
    };
    (high(a) >> 16) | (high(b) & 0xFFFF_0000)
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

/// The bits of the largest finite value of an fp8 FNUZ format (`mb` mantissa bits, exponent bias
/// `bias`) as an f32: all exponent and mantissa bits set (FNUZ has no infinities to reserve).
const fn fp8_max_f32_bits(mb: u32, bias: i32) -> u32 {
    let eb = 7 - mb;
    ((((1i32 << eb) - 1 - bias + 127) as u32) << 23) | (((1u32 << mb) - 1) << (23 - mb))
}

/// f32 -> fp8 FNUZ bits (`MB` mantissa bits, exponent bias `BIAS`; E4M3FNUZ is `<3, 8>`,
/// E5M2FNUZ `<2, 16>`): round to nearest even, saturating (finite overflow and infinities clamp
/// to the largest finite value of the sign), NaN -> 0x80, and no negative zero (a result that
/// rounds to zero is 0x00 whatever the sign).
///
/// Branch-free so a wave converts all lanes in one pass: clamp the magnitude first (the maximum
/// is representable, so clamping then rounding equals rounding then saturating), round normal
/// magnitudes in the f32 bit pattern, and subnormal ones by scaling to units of the smallest
/// subnormal and rounding with the `+2^23` trick (exact for values below 2^22).
#[inline(always)]
pub fn f32_to_fp8<const MB: u32, const BIAS: i32>(x: f32) -> u32 {
    let bits = x.to_bits();
    let sign = (bits >> 24) & 0x80;
    let mag = bits & 0x7fff_ffff;
    let nan = mag > 0x7f80_0000;
    let a = if mag > fp8_max_f32_bits(MB, BIAS) { fp8_max_f32_bits(MB, BIAS) } else { mag };
    let min_normal = ((1 - BIAS + 127) as u32) << 23;
    let shift = 23 - MB;
    // Normal: nearest-even on the dropped bits, then rebias the exponent. A carry out of the
    // mantissa lands in the exponent, which is the right next binade.
    let rounded = (a + ((1u32 << (shift - 1)) - 1) + ((a >> shift) & 1)) >> shift;
    let normal = rounded.wrapping_sub(((127 - BIAS) as u32) << MB);
    // Subnormal: |x| / 2^(1 - BIAS - MB) rounded to an integer in 0..=2^MB (2^MB is the smallest
    // normal's code, so the formula is continuous across the boundary).
    let scaled = f32::from_bits(a) * f32::from_bits(((BIAS - 1 + MB as i32 + 127) as u32) << 23);
    let sub = ((scaled + 8_388_608.0) - 8_388_608.0) as u32;
    let code = if a >= min_normal { normal } else { sub };
    if nan {
        0x80
    } else if code == 0 {
        0
    } else {
        sign | code
    }
}

/// fp8 FNUZ bits -> f32 (exact; 0x80 is NaN). Parameters as for [`f32_to_fp8`].
#[inline(always)]
pub fn fp8_to_f32<const MB: u32, const BIAS: i32>(b: u32) -> f32 {
    let b = b & 0xff;
    let sign = (b & 0x80) << 24;
    let e = (b & 0x7f) >> MB;
    let m = b & ((1 << MB) - 1);
    let normal = f32::from_bits(sign | ((e as i32 - BIAS + 127) as u32) << 23 | m << (23 - MB));
    // Subnormal: m * 2^(1 - BIAS - MB), exact in f32.
    let sub = f32::from_bits((m as f32 * f32::from_bits(((1 - BIAS - MB as i32 + 127) as u32) << 23)).to_bits() | sign);
    if b == 0x80 {
        f32::NAN
    } else if e == 0 {
        sub
    } else {
        normal
    }
}

/// i32 -> bf16, nearest even, rounding the integer directly: going through f32 would round
/// twice for |v| > 2^24 (to 24 bits, then to 8), which can break ties the wrong way.
#[inline(always)]
pub fn i32_to_bf16(v: i32) -> Bf16 {
    let a = v.unsigned_abs();
    let msb = 31 - (a | 1).leading_zeros();
    // Keep the top 8 significant bits; round the rest to nearest even.
    let shift = if msb > 7 { msb - 7 } else { 0 };
    let q = a >> shift;
    let rem = a & ((1u32 << shift) - 1);
    let half = (1u32 << shift) >> 1;
    let up = shift > 0 && (rem > half || (rem == half && q & 1 == 1));
    // At most 9 significant bits (q + 1 may carry to 2^8), so the f32 below is exact.
    let r = (q + up as u32) << shift;
    let f = r as f32;
    let f = if v < 0 { -f } else { f };
    Bf16((f.to_bits() >> 16) as u16)
}
