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
///
/// On the bits of `hi`: its 53-bit significand shifted right to the f16 quantum (2^(e - 10),
/// or 2^-24 for f16 denormals), rounded to nearest even with `lo` deciding exact ties (it is
/// below the significand's last bit, so it matters only there). Every f16 VALU result goes
/// through here; the float formulation (`round_to_quantum`) is the test's reference.
pub(crate) fn f16_sticky(hi: f64, lo: f64) -> u16 {
    // The common case, a value f32 holds exactly (f16 products and most sums): one correct
    // rounding from f32 (`half`, F16C where the CPU has it). NaN fails the comparison.
    if lo == 0.0 {
        let f = hi as f32;
        if f as f64 == hi {
            return half::f16::from_f32(f).to_bits();
        }
    }
    let bits = hi.to_bits();
    let sign = ((bits >> 48) & 0x8000) as u16;
    let exp_field = ((bits >> 52) & 0x7ff) as i32;
    if exp_field == 0x7ff {
        // Infinity, or NaN with its payload's top bits kept and quieted.
        return if bits & 0xf_ffff_ffff_ffff == 0 { sign | 0x7c00 } else { sign | 0x7e00 | ((bits >> 42) & 0x1ff) as u16 };
    }
    if exp_field == 0 {
        // Zero or an f64 denormal: far below f16's smallest denormal half (2^-25).
        return sign;
    }
    let e = exp_field - 1023;
    if e > 15 {
        return sign | 0x7c00; // at least 2^16: past the largest f16 even after rounding down
    }
    let m = (bits & 0xf_ffff_ffff_ffff) | (1 << 52);
    // Quantum exponent, and how many low bits of m lie below it.
    let qexp = if e >= -14 { e - 10 } else { -24 };
    let drop = (qexp - (e - 52)) as u32; // 42 for normal f16 results, more for denormals
    if drop >= 54 {
        return sign; // below half of the smallest f16 denormal (m < 2^53 <= half)
    }
    let n = m >> drop;
    let rem = m & ((1u64 << drop) - 1);
    let half = 1u64 << (drop - 1);
    // lo's sign relative to the magnitude decides ties (it cannot move rem across half).
    let lo = if hi.is_sign_negative() { -lo } else { lo };
    let up = rem > half || (rem == half && (lo > 0.0 || (lo == 0.0 && n & 1 == 1)));
    let n = n + up as u64;
    // Normal results: n in [1024, 2048] (2048 carries into the exponent); denormals: n <= 1024.
    let out = if e >= -14 { (((e + 15) as u64) << 10) + (n - 1024) } else { n };
    if out >= 0x7c00 { sign | 0x7c00 } else { sign | out as u16 }
}

/// 2^e as an f64 (rounded as IEEE says outside the normal range: a denormal, 0 or infinity),
/// from exponent bits. Not `powi`: LLVM treats it as pure and evaluates it ahead of the branch
/// that needs it, and `__powidf2` was 7% of a model decode step through the f16 rounding below.
#[inline(always)]
pub(crate) fn pow2(e: i32) -> f64 {
    let bits = |e: i32| f64::from_bits(((e.clamp(-1022, 1023) + 1023) as u64) << 52);
    if (-1022..=1023).contains(&e) {
        bits(e)
    } else {
        // Two normal halves: their product is 2^e, rounded once (exact down to 2^-1074).
        let h = e / 2;
        bits(h) * bits(e - h)
    }
}

/// f64 -> f32, round to nearest even (Rust's `as` already does this; kept for symmetry).
pub(crate) fn f32_sticky(hi: f64, lo: f64) -> f32 {
    if hi.is_nan() || hi.is_infinite() || lo == 0.0 {
        return hi as f32;
    }
    let q = round_to_quantum(hi, lo, -126, 23);
    let r = if q >= pow2(128) { f32::INFINITY } else { q as f32 };
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
    let e = if a >= pow2(emin) { ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023 } else { emin };
    let qexp = e - mant;
    // Scaling by a power of two is exact here: a >= 2^-1074 and the quantum is far above it.
    // s < 2^(mant + 2): its integer part fits a u64 exactly (no libm floor).
    let s = a * pow2(-qexp);
    let fl = (s as u64) as f64;
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
        (s as u64) % 2 == 1
    };
    let n = if up { fl + 1.0 } else { fl };
    n * pow2(qexp)
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
        return ((p + c as f64) * pow2(k)) as f32;
    }
    let (s, e) = two_sum(p, c as f64);
    let sc = pow2(k);
    f32_sticky(s * sc, e * sc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    /// The float formulation of [`f16_sticky`]: the magnitude rounded on the f16 grid.
    fn f16_sticky_by_floats(hi: f64, lo: f64) -> u16 {
        let sign = if hi.is_sign_negative() { 0x8000u16 } else { 0 };
        if hi.is_nan() {
            return sign | 0x7e00 | ((hi.to_bits() >> 42) & 0x1ff) as u16;
        }
        let q = round_to_quantum(hi, lo, -14, 10);
        if q.is_infinite() || q >= 65536.0 {
            return sign | 0x7c00;
        }
        sign | half::f16::from_f32(q as f32).to_bits()
    }

    #[test]
    fn f16_rounding_on_bits_matches_the_float_formulation() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..3_000_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Around and past the f16 range, with many exact ties (low significand bits zero).
            let e = (x >> 52) % 70;
            let mant = if i % 3 == 0 { (x & 0xfffff) << 32 } else { x & 0xf_ffff_ffff_ffff };
            let hi = f64::from_bits(((1023 - 40 + e) << 52) | mant) * if x & 1 == 1 { -1.0 } else { 1.0 };
            // lo: none, or a quarter ulp of hi either way (it can only break ties).
            let ulp = f64::from_bits(hi.abs().to_bits() + 1) - hi.abs();
            let lo = match i % 4 {
                0 | 1 => 0.0,
                2 => ulp / 4.0,
                _ => -ulp / 4.0,
            };
            assert_eq!(f16_sticky(hi, lo), f16_sticky_by_floats(hi, lo), "{hi:e} + {lo:e}");
        }
        for v in [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 65504.0, 65519.99, 65520.0, 1e-300, -5e-324, 2f64.powi(-25)] {
            assert_eq!(f16_sticky(v, 0.0), f16_sticky_by_floats(v, 0.0), "{v:e}");
        }
    }

    #[test]
    fn powers_of_two_are_exact_then_round_as_ieee_says() {
        for e in -1200..=1200 {
            let want = match e {
                -1074..=-1023 => f64::from_bits(1 << (e + 1074)), // denormals (powi gives 0 there)
                ..-1074 => 0.0,
                _ => 2f64.powi(e),
            };
            assert_eq!(pow2(e).to_bits(), want.to_bits(), "2^{e}");
        }
    }

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
