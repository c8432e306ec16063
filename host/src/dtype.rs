//! Element types of tensors.

pub use ferrocm_device::abi::{Fp8E4M3Fnuz, Fp8E5M2Fnuz};
use half::{bf16, f16};

/// A tensor's element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
    /// 8-bit float E4M3FNUZ (gfx942's fp8).
    Fp8E4M3Fnuz,
    /// 8-bit float E5M2FNUZ (gfx942's bf8).
    Fp8E5M2Fnuz,
    /// Signed 8-bit integer.
    I8,
    /// Signed 32-bit integer.
    I32,
    /// Unsigned 32-bit integer.
    U32,
}

impl DType {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::Bf16 => 2,
            DType::Fp8E4M3Fnuz | DType::Fp8E5M2Fnuz | DType::I8 => 1,
        }
    }

    /// True for the floating-point types.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::Bf16 | DType::Fp8E4M3Fnuz | DType::Fp8E5M2Fnuz)
    }

    /// The lowercase name used in kernel names and messages (`f32`, `bf16`, `fp8e4m3fnuz` ...).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
            DType::Fp8E4M3Fnuz => "fp8e4m3fnuz",
            DType::Fp8E5M2Fnuz => "fp8e5m2fnuz",
            DType::I8 => "i8",
            DType::I32 => "i32",
            DType::U32 => "u32",
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that is a tensor element: ties `f32`, `half::f16`, ... to their [`DType`].
pub trait Element: bytemuck::Pod + Send + Sync + std::fmt::Debug + 'static {
    /// The dtype tag.
    const DTYPE: DType;
    /// The value as f64 (exact for every type here; NaN for fp8 NaN).
    fn to_f64(self) -> f64;
    /// The nearest representable value (round to nearest even; fp8 saturating; integers
    /// truncate toward zero and saturate).
    fn from_f64(v: f64) -> Self;
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}
impl Element for f16 {
    const DTYPE: DType = DType::F16;
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn from_f64(v: f64) -> Self {
        f16::from_f32(f64_to_f32_round_odd(v))
    }
}
impl Element for bf16 {
    const DTYPE: DType = DType::Bf16;
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    fn from_f64(v: f64) -> Self {
        bf16::from_f32(f64_to_f32_round_odd(v))
    }
}

/// `v` rounded to f32 toward zero with the last bit forced to 1 when inexact ("round to odd").
///
/// Why: `half`'s f64 -> f16/bf16 conversions drop the low 32 bits of the f64 significand before
/// rounding, so a value a hair above a halfway point rounds like the halfway point. Rounding to
/// odd in f32 keeps that information in a sticky bit (f32 has 13 and 16 more significand bits
/// than f16 and bf16, at least the 2 needed), after which `half`'s correct f32 conversion
/// rounds to nearest even exactly once.
fn f64_to_f32_round_odd(v: f64) -> f32 {
    let f = v as f32;
    if !f.is_finite() || f as f64 == v {
        return f;
    }
    // Nearest rounding went away from zero: step back to the truncation.
    let mut bits = f.to_bits();
    if (f as f64).abs() > v.abs() {
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}
impl Element for Fp8E4M3Fnuz {
    const DTYPE: DType = DType::Fp8E4M3Fnuz;
    fn to_f64(self) -> f64 {
        self.to_f32() as f64
    }
    fn from_f64(v: f64) -> Self {
        Fp8E4M3Fnuz(fp8_nearest(v, Fp8E4M3Fnuz::from_f32(v as f32).0, |b| Fp8E4M3Fnuz(b).to_f32()))
    }
}
impl Element for Fp8E5M2Fnuz {
    const DTYPE: DType = DType::Fp8E5M2Fnuz;
    fn to_f64(self) -> f64 {
        self.to_f32() as f64
    }
    fn from_f64(v: f64) -> Self {
        Fp8E5M2Fnuz(fp8_nearest(v, Fp8E5M2Fnuz::from_f32(v as f32).0, |b| Fp8E5M2Fnuz(b).to_f32()))
    }
}
/// The fp8 code nearest to `v` (ties to even), given the conversion of `v as f32`.
///
/// Rounding f64 to f32 first can land exactly on an fp8 midpoint (they are f32 values) and then
/// tie the wrong way; the true answer is that code or a magnitude neighbour, so compare in f64.
fn fp8_nearest(v: f64, via_f32: u8, decode: impl Fn(u8) -> f32) -> u8 {
    if v.is_nan() || via_f32 == 0x80 || v.abs() > decode(0x7f) as f64 {
        return via_f32; // NaN, or saturated: nothing closer exists
    }
    let sign = if v < 0.0 { 0x80 } else { 0 };
    let mag = via_f32 & 0x7f;
    let code = |m: u8| if m == 0 { 0 } else { sign | m };
    let mut best = mag;
    for m in [mag.saturating_sub(1), mag.saturating_add(1).min(0x7f)] {
        let (d, db) = ((decode(code(m)) as f64 - v).abs(), (decode(code(best)) as f64 - v).abs());
        if d < db || (d == db && m & 1 == 0 && best & 1 == 1) {
            best = m;
        }
    }
    code(best)
}

impl Element for i8 {
    const DTYPE: DType = DType::I8;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as i8
    }
}
impl Element for i32 {
    const DTYPE: DType = DType::I32;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as i32
    }
}
impl Element for u32 {
    const DTYPE: DType = DType::U32;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_and_bf16_from_f64_round_once() {
        // Just above the f16 midpoint between 1 and 1 + 2^-10: must round up.
        let v = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(<f16 as Element>::from_f64(v).to_f64(), 1.0 + 2f64.powi(-10));
        assert_eq!(<f16 as Element>::from_f64(1.0 + 2f64.powi(-11)).to_f64(), 1.0);
        // The bf16 case behind i32 casts: 2^25 + 2^17 + 1 is just above a midpoint.
        let v = (1u64 << 25) as f64 + (1u64 << 17) as f64 + 1.0;
        assert_eq!(<bf16 as Element>::from_f64(v).to_f64(), ((1u64 << 25) + (1u64 << 18)) as f64);
        assert_eq!(<bf16 as Element>::from_f64(-v).to_f64(), -(((1u64 << 25) + (1u64 << 18)) as f64));
        // Overflow, NaN and tiny values keep their meaning.
        assert!(<f16 as Element>::from_f64(1e10).to_f64().is_infinite());
        assert!(<bf16 as Element>::from_f64(f64::NAN).is_nan());
        assert_eq!(<bf16 as Element>::from_f64(1e-300).to_f64(), 0.0);
    }

    #[test]
    fn fp8_from_f64_does_not_double_round() {
        // 1.0625 is the midpoint of 1.0 and 1.125 in E4M3; a hair above it must round up even
        // though `as f32` lands exactly on the midpoint (which ties down to the even 1.0).
        let v = 1.0625 + 1e-12;
        assert_eq!(v as f32, 1.0625f32);
        assert_eq!(Fp8E4M3Fnuz::from_f64(v).to_f32(), 1.125);
        assert_eq!(Fp8E4M3Fnuz::from_f64(-v).to_f32(), -1.125);
        assert_eq!(Fp8E4M3Fnuz::from_f64(1.0625).to_f32(), 1.0);
        assert_eq!(Fp8E5M2Fnuz::from_f64(1e9).to_f32(), 57344.0);
        assert!(Fp8E5M2Fnuz::from_f64(f64::NAN).is_nan());
    }
}
