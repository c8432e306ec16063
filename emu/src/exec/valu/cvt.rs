//! Conversions between f64, f32, f16 and integers.
//!
//! Float -> integer conversions truncate toward zero, saturate at the integer's range and turn NaN
//! into 0 (the ISA's rules). f32 -> f16 rounds to nearest even; `v_cvt_pkrtz_f16_f32` rounds
//! toward zero, as its name says.

use super::super::step::{Exec, Flow};
use super::super::wave::{LANES, Ty, Wave};
use super::{fetch32, flush_in32, flush_in64, fmod16, fmod32, fmod64, out32, out64, plain32, write_plain32, write32};
use crate::isa::{Inst, Op};
use half::f16;

/// f32/f64 -> i32 with the ISA's saturation and NaN rule.
pub(crate) fn to_i32(x: f64) -> u32 {
    if x.is_nan() { 0 } else { x.trunc().clamp(i32::MIN as f64, i32::MAX as f64) as i32 as u32 }
}

/// f32/f64 -> u32 with saturation; NaN and negatives become 0.
pub(crate) fn to_u32(x: f64) -> u32 {
    if x.is_nan() { 0 } else { x.trunc().clamp(0.0, u32::MAX as f64) as u32 }
}

/// f32 -> u8 for `v_cvt_pk_u8_f32`: round to nearest even, saturate to [0, 255], NaN -> 0.
pub(crate) fn to_u8(x: f32) -> u32 {
    if x.is_nan() { 0 } else { x.round_ties_even().clamp(0.0, 255.0) as u32 }
}

/// f32 -> f16 rounding toward zero (finite overflow saturates to the largest finite value).
pub(crate) fn f16_rtz(x: f32) -> u16 {
    let r = f16::from_f32(x);
    if r.is_nan() || x.is_infinite() {
        return r.to_bits();
    }
    // Round to nearest, then step one ulp toward zero if that overshot |x|.
    let mut b = r.to_bits();
    if r.to_f32().abs() > x.abs() {
        b -= 1; // same sign, one ulp smaller magnitude (0x7c00 -> 0x7bff for overflow)
    }
    b
}

/// Output of a 16-bit result into a 32-bit register: op_sel bit 3 writes the high half and keeps
/// the low half; otherwise the low half is written and the high half zeroed.
pub(crate) fn place16(inst: &Inst, old: u32, r: u16) -> u32 {
    if inst.mods.op_sel & 8 != 0 { (old & 0xffff) | (r as u32) << 16 } else { r as u32 }
}

/// 16-bit source `i` honouring VOP3 op_sel (bit i selects the high half).
#[inline]
pub(crate) fn half_of(inst: &Inst, i: usize, x: u32) -> u32 {
    if inst.mods.op_sel >> i & 1 == 1 { x >> 16 } else { x & 0xffff }
}

fn from32(w: &mut Wave, inst: &Inst, ty: Ty, f: impl Fn(&Wave, u32) -> u32) -> Exec {
    let mut out = [0u32; LANES];
    let plain = {
        let wr: &Wave = w;
        plain32::<1>(wr, inst, ty, |l, [a]| out[l] = f(wr, a))
    };
    if let Some(r) = plain {
        r?;
        return write_plain32(w, inst, &out);
    }
    let s = fetch32(w, inst, 1, ty)?;
    for l in 0..LANES {
        out[l] = f(w, s.v[0][l]);
    }
    write32(w, inst, s.mask, &out)
}

fn to16(w: &mut Wave, inst: &Inst, ty: Ty, f: impl Fn(&Wave, u32) -> u16) -> Exec {
    let s = fetch32(w, inst, 1, ty)?;
    let old = *w.vreg(inst.dst)?;
    let mut out = [0u32; LANES];
    for l in 0..LANES {
        out[l] = place16(inst, old[l], f(w, s.v[0][l]));
    }
    write32(w, inst, s.mask, &out)
}

fn from64(w: &mut Wave, inst: &Inst, f: impl Fn(&Wave, f64) -> u32) -> Exec {
    let exec = w.exec();
    let mut out = [0u32; LANES];
    {
        let a = w.src64_of(inst, 0, Ty::F64)?;
        for l in 0..LANES {
            out[l] = f(w, flush_in64(w, fmod64(inst, 0, a.get(l))));
        }
    }
    write32(w, inst, exec, &out)
}

fn to64(w: &mut Wave, inst: &Inst, ty: Ty, f: impl Fn(&Wave, u32) -> f64) -> Exec {
    let s = fetch32(w, inst, 1, ty)?;
    let mut out = [0u64; LANES];
    for l in 0..LANES {
        out[l] = out64(w, inst, f(w, s.v[0][l]));
    }
    w.write_v64(inst.dst, s.mask, &out)?;
    Ok(Flow::Next)
}

/// Executes a conversion, or returns None.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Option<Exec> {
    use Op::*;
    Some(match inst.op {
        VCvtF32I32 => from32(w, inst, Ty::B32, |w, a| out32(w, inst, a as i32 as f32)),
        VCvtF32U32 => from32(w, inst, Ty::B32, |w, a| out32(w, inst, a as f32)),
        VCvtI32F32 => from32(w, inst, Ty::F32, |w, a| to_i32(flush_in32(w, fmod32(inst, 0, a)) as f64)),
        VCvtU32F32 => from32(w, inst, Ty::F32, |w, a| to_u32(flush_in32(w, fmod32(inst, 0, a)) as f64)),
        VCvtRpiI32F32 => from32(w, inst, Ty::F32, |w, a| to_i32((flush_in32(w, fmod32(inst, 0, a)) as f64 + 0.5).floor())),
        VCvtFlrI32F32 => from32(w, inst, Ty::F32, |w, a| to_i32((flush_in32(w, fmod32(inst, 0, a)) as f64).floor())),
        VCvtF32Ubyte0 => from32(w, inst, Ty::B32, |w, a| out32(w, inst, (a & 0xff) as f32)),
        VCvtF32Ubyte1 => from32(w, inst, Ty::B32, |w, a| out32(w, inst, ((a >> 8) & 0xff) as f32)),
        VCvtF32Ubyte2 => from32(w, inst, Ty::B32, |w, a| out32(w, inst, ((a >> 16) & 0xff) as f32)),
        VCvtF32Ubyte3 => from32(w, inst, Ty::B32, |w, a| out32(w, inst, (a >> 24) as f32)),
        // f32 -> f16 rounds to nearest even; the f16 result gets omod/clamp and the f16 output
        // denormal flushing of MODE.
        VCvtF16F32 => to16(w, inst, Ty::F32, |w, a| super::out16_bits(w, inst, f16::from_f32(flush_in32(w, fmod32(inst, 0, a))).to_bits())),
        VCvtF32F16 => from32(w, inst, Ty::F16, |w, a| out32(w, inst, super::f16_flush_in(w, fmod16(inst, 0, half_of(inst, 0, a))) as f32)),
        VCvtPkrtzF16F32 => {
            let s = match fetch32(w, inst, 2, Ty::F32) {
                Ok(s) => s,
                Err(e) => return Some(Err(e.into())),
            };
            let mut out = [0u32; LANES];
            for l in 0..LANES {
                let lo = f16_rtz(flush_in32(w, fmod32(inst, 0, s.v[0][l])));
                let hi = f16_rtz(flush_in32(w, fmod32(inst, 1, s.v[1][l])));
                out[l] = lo as u32 | (hi as u32) << 16;
            }
            write32(w, inst, s.mask, &out)
        }
        // A signed 4-bit integer (bits 3:0) scaled by 1/16: 0..7 -> 0..0.4375, 8..15 -> -0.5..-0.0625.
        VCvtOffF32I4 => from32(w, inst, Ty::B32, |w, a| out32(w, inst, (((a & 15) as i32) << 28 >> 28) as f32 / 16.0)),
        // f32 -> u8 into byte S1[1:0] of S2 (pk) or of the destination (pkaccum).
        VCvtPkU8F32 | VCvtPkaccumU8F32 => {
            let s = match fetch32(w, inst, 3, Ty::F32) {
                Ok(s) => s,
                Err(e) => return Some(Err(e.into())),
            };
            let d = match w.vreg(inst.dst) {
                Ok(d) => *d,
                Err(e) => return Some(Err(e.into())),
            };
            let mut out = [0u32; LANES];
            for l in 0..LANES {
                let sh = 8 * (s.v[1][l] & 3);
                let base = if inst.op == VCvtPkU8F32 { s.v[2][l] } else { d[l] };
                let b = to_u8(flush_in32(w, fmod32(inst, 0, s.v[0][l])));
                out[l] = (base & !(0xff << sh)) | b << sh;
            }
            write32(w, inst, s.mask, &out)
        }
        VCvtPknormI16F32 | VCvtPknormU16F32 => {
            let s = match fetch32(w, inst, 2, Ty::F32) {
                Ok(s) => s,
                Err(e) => return Some(Err(e.into())),
            };
            let signed = inst.op == VCvtPknormI16F32;
            let mut out = [0u32; LANES];
            for l in 0..LANES {
                let h = |i: usize| super::f16::to_norm16(flush_in32(w, fmod32(inst, i, s.v[i][l])) as f64, signed) as u32;
                out[l] = h(0) | h(1) << 16;
            }
            write32(w, inst, s.mask, &out)
        }
        VCvtF64F32 => to64(w, inst, Ty::F32, |w, a| flush_in32(w, fmod32(inst, 0, a)) as f64),
        VCvtF64I32 => to64(w, inst, Ty::B32, |_, a| a as i32 as f64),
        VCvtF64U32 => to64(w, inst, Ty::B32, |_, a| a as f64),
        VCvtF32F64 => from64(w, inst, |w, a| out32(w, inst, a as f32)),
        VCvtI32F64 => from64(w, inst, |_, a| to_i32(a)),
        VCvtU32F64 => from64(w, inst, |_, a| to_u32(a)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_to_int_saturates_and_zeroes_nan() {
        assert_eq!(to_i32(3e9), i32::MAX as u32);
        assert_eq!(to_i32(-3e9), i32::MIN as u32);
        assert_eq!(to_i32(f64::NAN), 0);
        assert_eq!(to_i32(-2.7), (-2i32) as u32);
        assert_eq!(to_u32(-1.5), 0);
        assert_eq!(to_u32(5e10), u32::MAX);
    }

    #[test]
    fn round_toward_zero_to_f16() {
        assert_eq!(f16_rtz(1.0), 0x3c00);
        assert_eq!(f16::from_bits(f16_rtz(1.0009)).to_f32(), 1.0); // below 1 + 1 ulp: truncates to 1
        assert_eq!(f16_rtz(65520.0), 0x7bff); // would round to inf, RTZ keeps 65504
        assert_eq!(f16_rtz(-65520.0), 0xfbff);
        assert_eq!(f16_rtz(f32::INFINITY), 0x7c00);
    }
}
