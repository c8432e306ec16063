//! Correctly rounded narrowing: f64 (plus an optional exact remainder) to f16 and f32.
//!
//! The hardware computes each f16 op as if with infinite precision and rounds once. An f16 sum
//! or product is exact in f64, so rounding the f64 result once is correct; a fused multiply-add
//! is not, so its callers pass the exact error of the f64 sum (from [`two_sum`]) as a sticky
//! remainder. We round ourselves rather than through `half`: its f64 -> f16 conversion goes
//! through f32 on x86 (double rounding) and truncates in its portable fallback.

/// f64 -> f16 bits, round to nearest even, overflow to infinity; NaNs stay NaN (quieted, the top
/// payload bits kept).
pub(crate) fn f16_from_f64(x: f64) -> u16 {
    f16_sticky(x, 0.0)
}

/// Rounds the exact value `hi + lo` (with `|lo|` at most half an f64 ulp of `hi`) to f16.
pub(crate) fn f16_sticky(hi: f64, lo: f64) -> u16 {
    let sign = if hi.is_sign_negative() { 0x8000u16 } else { 0 };
    if hi.is_nan() {
        return sign | 0x7e00 | ((hi.to_bits() >> 42) & 0x1ff) as u16;
    }
    let q = round_to_quantum(hi, lo, -14, 10);
    if q.is_infinite() || q >= 65536.0 {
        return sign | 0x7c00;
    }
    // q is exactly representable as an f16 now, so the f32 -> f16 conversion is exact.
    sign | half::f16::from_f32(q as f32).to_bits()
}

/// f64 -> f32, round to nearest even (Rust's `as` already does this; kept for symmetry).
pub(crate) fn f32_sticky(hi: f64, lo: f64) -> f32 {
    if hi.is_nan() || hi.is_infinite() || lo == 0.0 {
        return hi as f32;
    }
    let q = round_to_quantum(hi, lo, -126, 23);
    let r = if q >= 2f64.powi(128) { f32::INFINITY } else { q as f32 };
    if hi.is_sign_negative() { -r } else { r }
}

/// |hi + lo| rounded to nearest even on the grid of a binary format with minimum normal exponent
/// `emin` and `mant` fraction bits, without an upper exponent bound (callers check overflow).
/// Returns a magnitude.
pub(crate) fn round_to_quantum(hi: f64, lo: f64, emin: i32, mant: i32) -> f64 {
    let a = hi.abs();
    if a == 0.0 || a.is_infinite() {
        return a;
    }
    // Sign of the remainder relative to the magnitude.
    let lo = if hi.is_sign_negative() { -lo } else { lo };
    let e = if a >= 2f64.powi(emin) { ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023 } else { emin };
    let qexp = e - mant;
    // Scaling by a power of two is exact here: a >= 2^-1074 and the quantum is far above it.
    let s = a * 2f64.powi(-qexp);
    let fl = s.floor();
    let frac = s - fl;
    let up = if frac > 0.5 {
        true
    } else if frac < 0.5 {
        false
    } else if lo > 0.0 {
        true
    } else if lo < 0.0 {
        false
    } else {
        fl % 2.0 == 1.0
    };
    let n = if up { fl + 1.0 } else { fl };
    n * 2f64.powi(qexp)
}

/// Knuth's TwoSum: `s + e == a + b` exactly, with `s = fl(a + b)`.
pub(crate) fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

/// Fused multiply-add of f16 values, rounded once to f16 (`a * b` is exact in f64).
pub(crate) fn fma16(a: f64, b: f64, c: f64) -> u16 {
    let p = a * b;
    if !p.is_finite() || !c.is_finite() {
        return f16_from_f64(p + c);
    }
    let (s, e) = two_sum(p, c);
    f16_sticky(s, e)
}

/// Fused multiply-add of f32 values scaled by `2^k` before the single rounding (div_fmas).
pub(crate) fn fma32_scaled(a: f32, b: f32, c: f32, k: i32) -> f32 {
    let p = a as f64 * b as f64; // exact: 48 significant bits
    if !p.is_finite() || !c.is_finite() {
        return ((p + c as f64) * 2f64.powi(k)) as f32;
    }
    let (s, e) = two_sum(p, c as f64);
    let sc = 2f64.powi(k);
    f32_sticky(s * sc, e * sc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    #[test]
    fn every_f16_round_trips_through_f64() {
        for b in 0..=u16::MAX {
            let x = f16::from_bits(b);
            if x.is_nan() {
                assert!(f16::from_bits(f16_from_f64(x.to_f64())).is_nan());
            } else {
                assert_eq!(f16_from_f64(x.to_f64()), b, "{b:#x}");
            }
        }
    }

    #[test]
    fn f64_to_f16_rounds_ties_to_even_everywhere() {
        // Every midpoint between adjacent positive f16 values (incl. subnormals and the overflow
        // threshold) must round to the even neighbour; a hair above must round up.
        for b in 0u16..0x7c00 {
            let lo = f16::from_bits(b).to_f64();
            let hi = if b == 0x7bff { 65536.0 } else { f16::from_bits(b + 1).to_f64() };
            let mid = (lo + hi) / 2.0;
            let even = if b % 2 == 0 { b } else { b + 1 };
            assert_eq!(f16_from_f64(mid), even, "tie above {b:#x}");
            assert_eq!(f16_from_f64(-mid), even | 0x8000);
            let above = f64::from_bits(mid.to_bits() + 1);
            assert_eq!(f16_from_f64(above), b + 1, "above tie of {b:#x}");
            // The same tie decided by a sticky remainder.
            assert_eq!(f16_sticky(mid, 1e-30), b + 1);
            assert_eq!(f16_sticky(mid, -1e-30), b);
        }
        assert_eq!(f16_from_f64(1e300), 0x7c00);
        assert_eq!(f16_from_f64(2f64.powi(-26)), 0);
        assert_eq!(f16_from_f64(-2f64.powi(-25)), 0x8000); // tie between 0 and 2^-24: even (0)
    }

    #[test]
    fn fused_f16_rounds_once() {
        // 256.25 * 127.9375 = 32784 - 1/64: just below the tie between 32768 and 32800.
        let (a, b) = (256.25, 127.9375);
        assert_eq!(fma16(a, b, 0.0), f16::from_f64(32768.0).to_bits());
        // + 2^-6 lands exactly on the tie (even: 32768); a hair more rounds up.
        assert_eq!(fma16(a, b, 2f64.powi(-6)), f16::from_f64(32768.0).to_bits());
        assert_eq!(fma16(a, b, 2f64.powi(-6) * (1.0 + 2f64.powi(-10))), f16::from_f64(32800.0).to_bits());
        // Unfused, the product alone would already round to 32768 and the addend vanish.
        assert_eq!(f16_from_f64(f16::from_f64(a * b).to_f64() + 2f64.powi(-5)), f16::from_f64(32768.0).to_bits());
        assert_eq!(fma16(a, b, 2f64.powi(-5)), f16::from_f64(32800.0).to_bits());
    }

    #[test]
    fn scaled_f32_fma_rounds_once_into_subnormals() {
        let r = fma32_scaled(1.5, 1.0, 0.0, -149);
        assert_eq!(r.to_bits(), 2); // 1.5 * 2^-149 ties to even (2 * 2^-149)
        let r = fma32_scaled(1.5, 1.0, 2f32.powi(-60), -149);
        assert_eq!(r.to_bits(), 2);
        assert_eq!(fma32_scaled(3.0, 2f32.powi(100), 0.0, 64), f32::INFINITY);
    }
}
