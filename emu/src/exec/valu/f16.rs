//! Half-precision (f16) VOP1/VOP2/VOP3 ops.
//!
//! Every op computes in f64 and rounds once to f16 (round to nearest even; other MODE rounding
//! is refused): sums and products of f16 values are exact in f64, so the basic arithmetic is
//! correctly rounded, and `v_fma_f16` carries the exact remainder of its f64 sum into the one
//! rounding. The transcendentals (rcp, rsq, sqrt, log, exp, sin, cos) are the f64 function
//! rounded once, which is within the hardware's stated accuracy (the ISA allows about 1 ulp).
//! Denormals follow MODE's f16/f64 field; the upper half of the destination follows [`Hi16`].

use super::super::step::Exec;
use super::super::wave::{LANES, Ty, Wave};
use super::round::{f16_from_f64, fma16};
use super::{Hi16, f16_in, fetch32, fmod16, half_sel, out16, out16_bits, require_rne, write16, write32};
use crate::isa::{Inst, Op};

fn is_nan16(b: u16) -> bool {
    b & 0x7c00 == 0x7c00 && b & 0x3ff != 0
}

fn is_snan16(b: u16) -> bool {
    is_nan16(b) && b & 0x200 == 0
}

fn val(b: u16) -> f64 {
    super::f16_to_f64(b)
}

/// Source `i` as f16 bits with op_sel, abs/neg and input denormal flushing applied.
fn src_bits(w: &Wave, inst: &Inst, i: usize, x: u32) -> u16 {
    let b = fmod16(inst, i, half_sel(inst, i, x) as u32);
    if w.mode.denorm16_64 & 1 == 0 && b & 0x7c00 == 0 { b & 0x8000 } else { b }
}

/// `v_min_f16`/`v_max_f16`: with MODE.IEEE a signalling NaN operand gives that NaN quieted;
/// otherwise a NaN operand yields the other operand; -0 orders below +0 (ISA pseudo-code).
pub(crate) fn minmax16(ieee: bool, a: u16, b: u16, max: bool) -> u16 {
    if ieee {
        if is_snan16(a) {
            return a | 0x200;
        }
        if is_snan16(b) {
            return b | 0x200;
        }
    }
    if is_nan16(b) {
        return a;
    }
    if is_nan16(a) {
        return b;
    }
    let (x, y) = (val(a), val(b));
    let a_wins = if max {
        x > y || (x == 0.0 && y == 0.0 && a & 0x8000 == 0 && b & 0x8000 != 0)
    } else {
        x < y || (x == 0.0 && y == 0.0 && a & 0x8000 != 0 && b & 0x8000 == 0)
    };
    if a_wins { a } else { b }
}

/// `v_med3_f16` as the ISA defines it (min3 if any NaN, else the max of the two non-maximal).
pub(crate) fn med3_16(ieee: bool, a: u16, b: u16, c: u16) -> u16 {
    let max = |x, y| minmax16(ieee, x, y, true);
    let min = |x, y| minmax16(ieee, x, y, false);
    if is_nan16(a) || is_nan16(b) || is_nan16(c) {
        return min(min(a, b), c);
    }
    let m = val(max(max(a, b), c));
    if m == val(a) {
        max(b, c)
    } else if m == val(b) {
        max(a, c)
    } else {
        max(a, b)
    }
}

/// `v_div_fixup_f16`: special cases of a quotient (S0) of numerator S2 by denominator S1.
pub(crate) fn div_fixup16(q: u16, d: u16, n: u16) -> u16 {
    let sign = (d ^ n) & 0x8000;
    let (dv, nv) = (val(d), val(n));
    if is_nan16(n) {
        n | 0x200
    } else if is_nan16(d) {
        d | 0x200
    } else if dv == 0.0 && nv == 0.0 {
        0xfe00
    } else if dv.is_infinite() && nv.is_infinite() {
        0xfe00
    } else if dv == 0.0 || nv.is_infinite() {
        sign | 0x7c00
    } else if dv.is_infinite() || nv == 0.0 {
        sign
    } else if is_nan16(q) {
        // A NaN quotient of finite operands means the reciprocal overflowed (tinygrad's
        // hardware-checked correction of the ISA pseudo-code): the result is infinite.
        sign | 0x7c00
    } else {
        sign | (q & 0x7fff)
    }
}

/// frexp mantissa of an f16 in [0.5, 1) with the sign of x; NaN and infinity pass through.
fn frexp_mant16(b: u16) -> u16 {
    let x = val(b);
    if x == 0.0 || !x.is_finite() {
        return b;
    }
    let (m, _) = super::float::frexp64(x);
    f16_from_f64(m)
}

fn frexp_exp16(b: u16) -> u16 {
    let x = val(b);
    if x == 0.0 || !x.is_finite() {
        return 0;
    }
    super::float::frexp64(x).1 as i16 as u16
}

/// f16 -> i16/u16 as the ISA converts floats to integers: truncate, saturate, NaN -> 0.
fn to_int16(x: f64, signed: bool) -> u16 {
    if x.is_nan() {
        0
    } else if signed {
        x.trunc().clamp(i16::MIN as f64, i16::MAX as f64) as i16 as u16
    } else {
        x.trunc().clamp(0.0, u16::MAX as f64) as u16
    }
}

/// Float -> signed/unsigned normalized 16-bit (clamp to [-1, 1] or [0, 1], scale by 32767 or
/// 65535, round to nearest even; NaN -> 0).
pub(crate) fn to_norm16(x: f64, signed: bool) -> u16 {
    if x.is_nan() {
        0
    } else if signed {
        (x.clamp(-1.0, 1.0) * 32767.0).round_ties_even() as i16 as u16
    } else {
        (x.clamp(0.0, 1.0) * 65535.0).round_ties_even() as u16
    }
}

fn fract(x: f64) -> f64 {
    if x.is_infinite() {
        return f64::NAN;
    }
    // The largest f16 below 1.0: a tiny negative x would otherwise round up to 1.0.
    (x - x.floor()).min(val(0x3bff))
}

/// Runs a 16-bit-result op over the lanes: `f` gets the fetched 32-bit sources.
fn f16_op(w: &mut Wave, inst: &Inst, n: usize, ty: Ty, hi: Hi16, f: impl Fn(&Wave, [u32; 3]) -> u16) -> Exec {
    require_rne(w, inst)?;
    let s = fetch32(w, inst, n, ty)?;
    let mut out = [0u16; LANES];
    for l in 0..LANES {
        if s.mask >> l & 1 == 1 {
            out[l] = f(w, [s.v[0][l], s.v[1][l], s.v[2][l]]);
        }
    }
    write16(w, inst, s.mask, &out, hi)
}

/// A 32-bit-result op over f16 sources (pack, pknorm).
fn f16_op32(w: &mut Wave, inst: &Inst, f: impl Fn(&Wave, [u32; 3]) -> u32) -> Exec {
    let s = fetch32(w, inst, 2, Ty::F16)?;
    let mut out = [0u32; LANES];
    for l in 0..LANES {
        out[l] = f(w, [s.v[0][l], s.v[1][l], s.v[2][l]]);
    }
    write32(w, inst, s.mask, &out)
}

/// Executes an f16 op, or returns None.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Option<Exec> {
    use Hi16::{Keep, Zero};
    use Op::*;
    let i = inst;
    let unary = |w: &mut Wave, f: fn(f64) -> f64| f16_op(w, i, 1, Ty::F16, Zero, |w, v| out16(w, i, f(f16_in(w, i, 0, v[0]))));
    let binary = |w: &mut Wave, f: fn(f64, f64) -> f64| {
        f16_op(w, i, 2, Ty::F16, Zero, |w, v| out16(w, i, f(f16_in(w, i, 0, v[0]), f16_in(w, i, 1, v[1]))))
    };
    // Unfused multiply-add: the product is rounded to f16 before the add.
    let mad = |w: &mut Wave, hi: Hi16| {
        f16_op(w, i, 3, Ty::F16, hi, |w, v| {
            let p = val(f16_from_f64(f16_in(w, i, 0, v[0]) * f16_in(w, i, 1, v[1])));
            out16(w, i, p + f16_in(w, i, 2, v[2]))
        })
    };
    let fma = |w: &mut Wave| {
        f16_op(w, i, 3, Ty::F16, Zero, |w, v| out16_bits(w, i, fma16(f16_in(w, i, 0, v[0]), f16_in(w, i, 1, v[1]), f16_in(w, i, 2, v[2]))))
    };
    Some(match inst.op {
        VAddF16 => binary(w, |a, b| a + b),
        VSubF16 => binary(w, |a, b| a - b),
        VSubrevF16 => binary(w, |a, b| b - a),
        VMulF16 => binary(w, |a, b| a * b),
        VLdexpF16 => f16_op(w, i, 2, Ty::F16, Zero, |w, v| {
            // The exponent is the low 16 bits of src1 as a signed integer.
            let e = (v[1] as u16 as i16) as i32;
            out16(w, i, super::float::ldexp64(f16_in(w, i, 0, v[0]), e))
        }),
        VMaxF16 | VMinF16 => f16_op(w, i, 2, Ty::F16, Zero, |w, v| {
            let r = minmax16(w.mode.ieee, src_bits(w, i, 0, v[0]), src_bits(w, i, 1, v[1]), i.op == VMaxF16);
            out16_bits(w, i, r)
        }),
        VMax3F16 | VMin3F16 => f16_op(w, i, 3, Ty::F16, Zero, |w, v| {
            let m = |a, b| minmax16(w.mode.ieee, a, b, i.op == VMax3F16);
            let r = m(m(src_bits(w, i, 0, v[0]), src_bits(w, i, 1, v[1])), src_bits(w, i, 2, v[2]));
            out16_bits(w, i, r)
        }),
        VMed3F16 => f16_op(w, i, 3, Ty::F16, Zero, |w, v| {
            let r = med3_16(w.mode.ieee, src_bits(w, i, 0, v[0]), src_bits(w, i, 1, v[1]), src_bits(w, i, 2, v[2]));
            out16_bits(w, i, r)
        }),
        VMadF16 | VMadLegacyF16 => mad(w, Zero),
        // The 32-bit-encoded accumulators keep the destination's other half (gfx9 change).
        VMacF16 | VMadmkF16 | VMadakF16 => mad(w, Keep),
        VFmaF16 | VFmaLegacyF16 => fma(w),
        VDivFixupF16 | VDivFixupLegacyF16 => f16_op(w, i, 3, Ty::F16, Zero, |w, v| {
            let r = div_fixup16(src_bits(w, i, 0, v[0]), src_bits(w, i, 1, v[1]), src_bits(w, i, 2, v[2]));
            out16_bits(w, i, r)
        }),
        VRcpF16 => unary(w, |a| 1.0 / a),
        VRsqF16 => unary(w, |a| 1.0 / a.sqrt()),
        VSqrtF16 => unary(w, f64::sqrt),
        VLogF16 => unary(w, f64::log2),
        VExpF16 => unary(w, f64::exp2),
        // The argument is in revolutions: sin(2 pi x).
        VSinF16 => unary(w, |a| if a.is_finite() { (a.fract() * std::f64::consts::TAU).sin() } else { f64::NAN }),
        VCosF16 => unary(w, |a| if a.is_finite() { (a.fract() * std::f64::consts::TAU).cos() } else { f64::NAN }),
        VFloorF16 => unary(w, f64::floor),
        VCeilF16 => unary(w, f64::ceil),
        VTruncF16 => unary(w, f64::trunc),
        VRndneF16 => unary(w, f64::round_ties_even),
        VFractF16 => unary(w, fract),
        VFrexpMantF16 => f16_op(w, i, 1, Ty::F16, Zero, |w, v| out16_bits(w, i, frexp_mant16(src_bits(w, i, 0, v[0])))),
        VFrexpExpI16F16 => f16_op(w, i, 1, Ty::F16, Zero, |w, v| frexp_exp16(src_bits(w, i, 0, v[0]))),
        VCvtF16U16 => f16_op(w, i, 1, Ty::B16, Zero, |w, v| out16(w, i, half_sel(i, 0, v[0]) as f64)),
        VCvtF16I16 => f16_op(w, i, 1, Ty::B16, Zero, |w, v| out16(w, i, half_sel(i, 0, v[0]) as i16 as f64)),
        VCvtU16F16 => f16_op(w, i, 1, Ty::F16, Zero, |w, v| to_int16(f16_in(w, i, 0, v[0]), false)),
        VCvtI16F16 => f16_op(w, i, 1, Ty::F16, Zero, |w, v| to_int16(f16_in(w, i, 0, v[0]), true)),
        VCvtNormI16F16 => f16_op(w, i, 1, Ty::F16, Zero, |w, v| to_norm16(f16_in(w, i, 0, v[0]), true)),
        VCvtNormU16F16 => f16_op(w, i, 1, Ty::F16, Zero, |w, v| to_norm16(f16_in(w, i, 0, v[0]), false)),
        // D = {S1.f16, S0.f16}: a move with source modifiers, no rounding or flushing.
        VPackB32F16 => f16_op32(w, i, |_, v| {
            fmod16(i, 0, half_sel(i, 0, v[0]) as u32) as u32 | (fmod16(i, 1, half_sel(i, 1, v[1]) as u32) as u32) << 16
        }),
        VCvtPknormI16F16 | VCvtPknormU16F16 => f16_op32(w, i, |w, v| {
            let s = i.op == VCvtPknormI16F16;
            to_norm16(f16_in(w, i, 0, v[0]), s) as u32 | (to_norm16(f16_in(w, i, 1, v[1]), s) as u32) << 16
        }),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_max_order_zeros_and_handle_nans() {
        assert_eq!(minmax16(true, 0x8000, 0x0000, true), 0x0000);
        assert_eq!(minmax16(true, 0x8000, 0x0000, false), 0x8000);
        assert_eq!(minmax16(true, 0x7e00, 0x3c00, true), 0x3c00); // quiet NaN: the number
        assert_eq!(minmax16(true, 0x7d00, 0x3c00, true), 0x7f00); // signalling NaN: quieted
        assert_eq!(minmax16(false, 0x7d00, 0x3c00, true), 0x3c00);
        assert_eq!(med3_16(true, 0x4000, 0x3c00, 0x4200), 0x4000);
        assert_eq!(med3_16(true, 0x7e00, 0x3c00, 0x4200), 0x3c00); // NaN: min3
    }

    #[test]
    fn div_fixup_special_cases() {
        assert_eq!(div_fixup16(0x3c00, 0x0000, 0x0000), 0xfe00); // 0/0
        assert_eq!(div_fixup16(0x3c00, 0x8000, 0x3c00), 0xfc00); // 1/-0
        assert_eq!(div_fixup16(0x3c00, 0x7c00, 0x3c00), 0x0000); // 1/inf
        assert_eq!(div_fixup16(0x3800, 0xc000, 0x3c00), 0xb800); // sign from the operands
        assert_eq!(div_fixup16(0x3c00, 0x3c00, 0x7e01), 0x7e01);
    }

    #[test]
    fn conversions_saturate() {
        assert_eq!(to_int16(-1.5, false), 0);
        assert_eq!(to_int16(65504.0, true), 0x7fff);
        assert_eq!(to_int16(-65504.0, true), 0x8000);
        assert_eq!(to_norm16(1.5, true), 32767);
        assert_eq!(to_norm16(-1.0, true), (-32767i16) as u16);
        assert_eq!(to_norm16(0.5, false), 32768); // 32767.5 ties to even
        assert_eq!(frexp_exp16(0x4800), 4); // 8 = 0.5 * 2^4
        assert_eq!(frexp_mant16(0x0001), 0x3800); // smallest subnormal: 0.5 * 2^-23
    }
}
