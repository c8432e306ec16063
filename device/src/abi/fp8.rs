//! The two 8-bit float formats of gfx942 (MI300): E4M3FNUZ and E5M2FNUZ.
//!
//! "FNUZ": finite only (no infinities), a single NaN encoding 0x80 (the bit pattern that would be
//! negative zero), no negative zero. Exponent biases are 8 and 16, one more than the OCP formats
//! (E4M3FN/E5M2) that NVIDIA and gfx950 use, so the same bits mean half the value: convert at the
//! boundary, never reinterpret. Source: ../shared/design/GFX942.md (fp8 on gfx942 is FNUZ).
//!
//! Conversions from f32 round to nearest, ties to even, like the hardware's `v_cvt_pk_fp8_f32`.

/// One fp8 format's shape.
struct Format {
    mant_bits: u32,
    bias: i32,
}

const E4M3: Format = Format { mant_bits: 3, bias: 8 };
const E5M2: Format = Format { mant_bits: 2, bias: 16 };

/// The NaN encoding shared by both FNUZ formats.
const NAN_BITS: u8 = 0x80;
/// The largest finite magnitude's encoding in both formats (all exponent and mantissa bits set).
const MAX_BITS: u8 = 0x7f;

/// Rounds `m >> shift` to nearest, ties to even.
const fn shift_rne(m: u32, shift: u32) -> u32 {
    if shift == 0 {
        return m;
    }
    if shift >= 32 {
        return 0;
    }
    let q = m >> shift;
    let rem = m & ((1u32 << shift) - 1);
    let half = 1u32 << (shift - 1);
    if rem > half || (rem == half && q & 1 == 1) { q + 1 } else { q }
}

/// f32 -> fp8 bits. `saturate`: finite overflow and infinities clamp to the largest finite value
/// of the right sign; otherwise they become NaN (there is no infinity to go to).
const fn encode(x: f32, f: &Format, saturate: bool) -> u8 {
    let bits = x.to_bits();
    let sign = ((bits >> 31) as u8) << 7;
    let exp = (bits >> 23) & 0xff;
    let mant = bits & 0x7f_ffff;
    if exp == 0xff {
        if mant != 0 {
            return NAN_BITS;
        }
        return if saturate { sign | MAX_BITS } else { NAN_BITS };
    }
    // x = m * 2^e with m an integer.
    let (m, e) = if exp == 0 { (mant, -149) } else { (mant | 0x80_0000, exp as i32 - 150) };
    if m == 0 {
        return 0;
    }
    let mb = f.mant_bits as i32;
    let msb = 31 - m.leading_zeros() as i32 + e; // floor(log2 |x|)
    // The quantum (value of one mantissa step) of the target at this magnitude; below the
    // smallest normal it stays at the subnormal quantum.
    let min_qe = 1 - f.bias - mb;
    let qe = if msb - mb > min_qe { msb - mb } else { min_qe };
    let shift = qe - e;
    let q = if shift >= 0 { shift_rne(m, shift as u32) } else { m << (-shift) as u32 };
    // code = biased exponent and mantissa bits; the formula covers subnormals (qe == min_qe) and
    // a rounding carry into the next binade alike.
    let code = (((qe - min_qe) as u32) << f.mant_bits) + q;
    if code > MAX_BITS as u32 {
        return if saturate { sign | MAX_BITS } else { NAN_BITS };
    }
    if code == 0 {
        return 0; // no negative zero in FNUZ
    }
    sign | code as u8
}

/// fp8 bits -> f32 (exact: every fp8 value is an f32).
const fn decode(b: u8, f: &Format) -> f32 {
    if b == NAN_BITS {
        return f32::NAN;
    }
    let sign = ((b >> 7) as u32) << 31;
    let mb = f.mant_bits;
    let e = ((b & 0x7f) >> mb) as i32;
    let m = (b & ((1 << mb) - 1)) as u32;
    if e == 0 && m == 0 {
        return 0.0;
    }
    let bits = if e == 0 {
        // Subnormal: m * 2^(1 - bias - mb); normalise so the leading one becomes implicit.
        let lz = 31 - m.leading_zeros() as i32; // position of the leading one
        let exp = 1 - f.bias - mb as i32 + lz;
        let frac = (m & !(1 << lz)) << (23 - lz as u32);
        (((exp + 127) as u32) << 23) | frac
    } else {
        (((e - f.bias + 127) as u32) << 23) | (m << (23 - mb))
    };
    f32::from_bits(sign | bits)
}

macro_rules! fp8_type {
    ($(#[$meta:meta])* $name:ident, $fmt:expr, $max:expr, $min_pos:expr, $min_sub:expr) => {
        $(#[$meta])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        #[cfg_attr(not(target_arch = "amdgpu"), derive(bytemuck::Pod, bytemuck::Zeroable))]
        pub struct $name(pub u8);

        impl $name {
            /// The only NaN (0x80).
            pub const NAN: Self = Self(NAN_BITS);
            /// Zero (there is no negative zero).
            pub const ZERO: Self = Self(0);
            /// The largest finite value.
            pub const MAX: Self = Self(MAX_BITS);
            /// The most negative finite value.
            pub const MIN: Self = Self(0x80 | MAX_BITS);
            /// The largest finite value as f32.
            pub const MAX_F32: f32 = $max;
            /// The smallest positive normal value as f32.
            pub const MIN_POSITIVE_F32: f32 = $min_pos;
            /// The smallest positive subnormal value as f32.
            pub const MIN_SUBNORMAL_F32: f32 = $min_sub;

            /// Rounds to nearest even; out-of-range values and infinities saturate to
            /// [`Self::MAX`]/[`Self::MIN`]; NaN becomes [`Self::NAN`].
            pub const fn from_f32(x: f32) -> Self {
                Self(encode(x, &$fmt, true))
            }

            /// Rounds to nearest even; out-of-range values and infinities become NaN (the
            /// format has no infinity).
            pub const fn from_f32_unsaturated(x: f32) -> Self {
                Self(encode(x, &$fmt, false))
            }

            /// The exact f32 value (NaN for [`Self::NAN`]).
            pub const fn to_f32(self) -> f32 {
                decode(self.0, &$fmt)
            }

            /// The raw encoding.
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            /// From a raw encoding (every byte is a valid value).
            pub const fn from_bits(bits: u8) -> Self {
                Self(bits)
            }

            /// True for the NaN encoding.
            pub const fn is_nan(self) -> bool {
                self.0 == NAN_BITS
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "{}({:#04x} = {})", stringify!($name), self.0, self.to_f32())
            }
        }
    };
}

fp8_type!(
    /// 8-bit float E4M3FNUZ (gfx942's "fp8"): bias 8, max 240, one NaN (0x80), no infinities.
    Fp8E4M3Fnuz, E4M3, 240.0, 0.0078125, 0.0009765625
);
fp8_type!(
    /// 8-bit float E5M2FNUZ (gfx942's "bf8"): bias 16, max 57344, one NaN (0x80), no infinities.
    Fp8E5M2Fnuz, E5M2, 57344.0, 0.000030517578125, 0.00000762939453125
);

impl Fp8E4M3Fnuz {
    /// The FNUZ value with the bits of an OCP E4M3FN value (NVIDIA's and gfx950's "fp8"): exactly
    /// **half** its value, so a tensor converted this way needs its scale doubled. OCP's NaNs
    /// (`0x7F`, `0xFF`) become the FNUZ NaN and OCP's -0 (`0x80`, FNUZ's NaN code) becomes 0;
    /// every other code keeps its bits (the two formats differ only in exponent bias), so nothing
    /// is rounded.
    pub const fn from_e4m3fn_bits(bits: u8) -> Fp8E4M3Fnuz {
        match bits {
            0x7f | 0xff => Fp8E4M3Fnuz(0x80),
            0x80 => Fp8E4M3Fnuz(0),
            b => Fp8E4M3Fnuz(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e4m3fn_bits_keep_their_meaning_at_half_the_value() {
        // OCP E4M3FN by its definition: bias 7, no infinities, S.1111.111 is NaN.
        fn ocp(b: u8) -> f64 {
            let s = if b & 0x80 != 0 { -1.0 } else { 1.0 };
            let (e, m) = (((b >> 3) & 0xf) as i32, (b & 7) as f64 / 8.0);
            if e == 0 { s * m * 2f64.powi(-6) } else { s * (1.0 + m) * 2f64.powi(e - 7) }
        }
        for b in 0..=255u8 {
            let f = Fp8E4M3Fnuz::from_e4m3fn_bits(b);
            if b & 0x7f == 0x7f {
                assert!(f.is_nan(), "{b:#x}");
            } else {
                assert_eq!(f.to_f32() as f64 * 2.0, ocp(b), "{b:#x}");
            }
        }
        assert_eq!(ocp(0x7e), 448.0);
    }

    /// Independent decoder: sign * 2^(E - bias) * (1 + M/2^mb), with the subnormal rule.
    fn decode_by_formula(b: u8, mb: u32, bias: i32) -> f64 {
        if b == 0x80 {
            return f64::NAN;
        }
        let s = if b & 0x80 != 0 { -1.0 } else { 1.0 };
        let e = ((b & 0x7f) >> mb) as i32;
        let m = (b & ((1 << mb) - 1)) as f64 / (1u32 << mb) as f64;
        if e == 0 { s * m * 2f64.powi(1 - bias) } else { s * (1.0 + m) * 2f64.powi(e - bias) }
    }

    #[test]
    fn decode_matches_the_formula_for_every_byte() {
        for b in 0..=255u8 {
            let e4 = Fp8E4M3Fnuz(b).to_f32() as f64;
            let e5 = Fp8E5M2Fnuz(b).to_f32() as f64;
            let r4 = decode_by_formula(b, 3, 8);
            let r5 = decode_by_formula(b, 2, 16);
            assert!(e4 == r4 || (e4.is_nan() && r4.is_nan()), "e4m3 {b:#x}: {e4} vs {r4}");
            assert!(e5 == r5 || (e5.is_nan() && r5.is_nan()), "e5m2 {b:#x}: {e5} vs {r5}");
        }
    }

    #[test]
    fn every_value_round_trips() {
        for b in 0..=255u8 {
            if b == 0x80 {
                continue;
            }
            assert_eq!(Fp8E4M3Fnuz::from_f32(Fp8E4M3Fnuz(b).to_f32()).0, b);
            assert_eq!(Fp8E5M2Fnuz::from_f32(Fp8E5M2Fnuz(b).to_f32()).0, b);
        }
    }

    #[test]
    fn limits_and_special_values() {
        assert_eq!(Fp8E4M3Fnuz::MAX.to_f32(), 240.0);
        assert_eq!(Fp8E5M2Fnuz::MAX.to_f32(), 57344.0);
        assert_eq!(Fp8E4M3Fnuz(1).to_f32(), Fp8E4M3Fnuz::MIN_SUBNORMAL_F32);
        assert_eq!(Fp8E5M2Fnuz(1).to_f32(), Fp8E5M2Fnuz::MIN_SUBNORMAL_F32);
        assert_eq!(Fp8E4M3Fnuz(0x08).to_f32(), Fp8E4M3Fnuz::MIN_POSITIVE_F32);
        assert_eq!(Fp8E5M2Fnuz(0x04).to_f32(), Fp8E5M2Fnuz::MIN_POSITIVE_F32);
        assert_eq!(Fp8E4M3Fnuz::from_f32(1e9), Fp8E4M3Fnuz::MAX);
        assert_eq!(Fp8E4M3Fnuz::from_f32(-1e9), Fp8E4M3Fnuz::MIN);
        assert_eq!(Fp8E4M3Fnuz::from_f32(f32::INFINITY), Fp8E4M3Fnuz::MAX);
        assert!(Fp8E4M3Fnuz::from_f32_unsaturated(1e9).is_nan());
        assert!(Fp8E5M2Fnuz::from_f32_unsaturated(f32::NEG_INFINITY).is_nan());
        assert!(Fp8E4M3Fnuz::from_f32(f32::NAN).is_nan());
        assert_eq!(Fp8E4M3Fnuz::from_f32(-0.0), Fp8E4M3Fnuz::ZERO);
        // Below half the smallest subnormal rounds to zero, never to a negative zero.
        assert_eq!(Fp8E4M3Fnuz::from_f32(-0.0004), Fp8E4M3Fnuz::ZERO);
        // 248 is the midpoint between 240 and the (non-existent) 256: overflows.
        assert!(Fp8E4M3Fnuz::from_f32_unsaturated(248.0).is_nan());
        assert_eq!(Fp8E4M3Fnuz::from_f32_unsaturated(247.9).to_f32(), 240.0);
    }

    #[test]
    fn rounding_is_nearest_even() {
        // 1.0625 is halfway between 1.0 and 1.125 (E4M3 step 1/8 at 1.0): ties to the even 1.0.
        assert_eq!(Fp8E4M3Fnuz::from_f32(1.0625).to_f32(), 1.0);
        // 1.1875 is halfway between 1.125 (odd mantissa) and 1.25: ties to 1.25.
        assert_eq!(Fp8E4M3Fnuz::from_f32(1.1875).to_f32(), 1.25);
        assert_eq!(Fp8E4M3Fnuz::from_f32(1.07).to_f32(), 1.125);
        // Subnormal midpoint: 1.5 * 2^-10 ties to the even 2 * 2^-10.
        assert_eq!(Fp8E4M3Fnuz::from_f32(1.5 * 0.0009765625).0, 2);
        // Exhaustive check against an f64 nearest search over all finite encodings.
        let mut x = -300.0f32;
        while x < 300.0 {
            let got = Fp8E4M3Fnuz::from_f32(x).to_f32() as f64;
            let best = (0..=255u8).filter(|&b| b != 0x80).map(|b| Fp8E4M3Fnuz(b).to_f32() as f64).fold(f64::NAN, |acc, v| {
                let (dv, da) = ((v - x as f64).abs(), (acc - x as f64).abs());
                if acc.is_nan() || dv < da { v } else { acc }
            });
            let (dg, db) = ((got - x as f64).abs(), (best - x as f64).abs());
            assert!(dg <= db || x.abs() > 240.0, "{x}: got {got}, nearest {best}");
            x += 0.0137;
        }
    }
}
