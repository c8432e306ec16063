//! The division helpers LLVM's f32/f64 `fdiv` expansion uses (`v_div_scale`, `v_div_fmas`,
//! `v_div_fixup`) and `v_trig_preop_f64` (Payne-Hanek argument reduction for f64 sin/cos).
//!
//! Semantics follow the ISA pseudo-code (AMD RDNA3 guide, shared with CDNA3 for these ops), with
//! two corrections that tinygrad's hardware-checked emulator applies: `v_div_fmas` scales by
//! 2^+64 (f64: 2^+128) when the quotient estimate S2 is >= 2.0 and by 2^-64 (2^-128) otherwise,
//! and `v_div_fixup` of a NaN quotient with finite operands gives a signed infinity. One case of
//! the `v_div_scale` pseudo-code is inconsistent (a huge denominator with a subnormal quotient
//! would scale the denominator to infinity); we scale both operands down instead, like the
//! "huge denominator" case, so that the whole expansion stays correctly rounded.

use super::super::error::FaultKind;
use super::super::step::{Exec, Flow};
use super::super::wave::{LANES, Ty, Wave};
use super::float::{ldexp32, ldexp64};
use super::round::{fma32_scaled, round_to_quantum, two_sum};
use super::{fetch32, flush_in32, flush_in64, fmod32, fmod64, out32, out64, require_rne, sdst_of, write32};
use crate::isa::{Ext, Inst, Op};

fn exp32(x: f32) -> i32 {
    ((x.to_bits() >> 23) & 0xff) as i32
}

fn exp64(x: f64) -> i32 {
    ((x.to_bits() >> 52) & 0x7ff) as i32
}

/// `v_div_scale_f32`: S0 is the value to scale (S1 or S2), S1 the denominator, S2 the numerator.
/// Returns the scaled value and the VCC bit.
pub(crate) fn div_scale32(s0: f32, d: f32, n: f32) -> (f32, bool) {
    let tiny = 2f64.powi(-126);
    let q = (n as f64 / d as f64).abs();
    let recip_denorm = (1.0 / d as f64).abs() < tiny;
    let quot_denorm = q < tiny && q != 0.0;
    if n == 0.0 || d == 0.0 {
        (f32::NAN, false)
    } else if exp32(n) - exp32(d) >= 96 {
        // N/D near the f32 maximum: scale only the denominator; div_fmas scales back.
        (if s0 == d { ldexp32(s0, 64) } else { s0 }, true)
    } else if d.is_subnormal() {
        (ldexp32(s0, 64), false)
    } else if recip_denorm {
        (ldexp32(s0, -64), false)
    } else if quot_denorm {
        // Scale only the numerator; div_fmas scales the (small) quotient back down.
        (if s0 == n { ldexp32(s0, 64) } else { s0 }, true)
    } else if exp32(n) <= 23 {
        // Tiny numerator: scale both.
        (ldexp32(s0, 64), false)
    } else {
        (s0, false)
    }
}

/// `v_div_scale_f64` (thresholds 768 and 53, scale 2^128).
pub(crate) fn div_scale64(s0: f64, d: f64, n: f64) -> (f64, bool) {
    let tiny = 2f64.powi(-1022);
    let q = (n / d).abs();
    let recip_denorm = (1.0 / d).abs() < tiny;
    // The f64 quotient itself may be rounded into the subnormal range; that is what is asked.
    let quot_denorm = q < tiny && n != 0.0;
    if n == 0.0 || d == 0.0 {
        (f64::NAN, false)
    } else if exp64(n) - exp64(d) >= 768 {
        (if s0 == d { ldexp64(s0, 128) } else { s0 }, true)
    } else if d.is_subnormal() {
        (ldexp64(s0, 128), false)
    } else if recip_denorm {
        (ldexp64(s0, -128), false)
    } else if quot_denorm {
        (if s0 == n { ldexp64(s0, 128) } else { s0 }, true)
    } else if exp64(n) <= 53 {
        (ldexp64(s0, 128), false)
    } else {
        (s0, false)
    }
}

/// `v_div_fmas_f32`: fma, scaled once before rounding when the lane's VCC bit is set.
pub(crate) fn div_fmas32(a: f32, b: f32, c: f32, vcc: bool) -> f32 {
    let k = if !vcc {
        0
    } else if exp32(c) > 127 {
        64
    } else {
        -64
    };
    fma32_scaled(a, b, c, k)
}

/// `v_div_fmas_f64`.
pub(crate) fn div_fmas64(a: f64, b: f64, c: f64, vcc: bool) -> f64 {
    let k = if !vcc {
        0
    } else if exp64(c) > 1023 {
        128
    } else {
        -128
    };
    let p = a * b;
    if k == 0 || !p.is_finite() || !c.is_finite() {
        return a.mul_add(b, c) * 2f64.powi(k);
    }
    // Exact product error (TwoProduct) and exact sum error (TwoSum); the remainder only decides
    // ties, so summing the two errors in f64 is accurate enough.
    let pe = a.mul_add(b, -p);
    let (s, se) = two_sum(p, c);
    let lo = pe + se;
    // Round on the grid shifted by -k (so the scaled result's subnormal grid is respected),
    // then scale exactly.
    let r = round_to_quantum(s, lo, -1022 - k, 52);
    let r = if s.is_sign_negative() { -r } else { r };
    r * 2f64.powi(k)
}

/// `v_div_fixup_f32`: S0 quotient, S1 denominator, S2 numerator.
pub(crate) fn div_fixup32(q: f32, d: f32, n: f32) -> f32 {
    let neg = d.is_sign_negative() != n.is_sign_negative();
    let sgn = |x: f32| if neg { -x } else { x };
    if n.is_nan() {
        f32::from_bits(n.to_bits() | 0x0040_0000)
    } else if d.is_nan() {
        f32::from_bits(d.to_bits() | 0x0040_0000)
    } else if (d == 0.0 && n == 0.0) || (d.is_infinite() && n.is_infinite()) {
        f32::from_bits(0xffc0_0000)
    } else if d == 0.0 || n.is_infinite() {
        sgn(f32::INFINITY)
    } else if d.is_infinite() || n == 0.0 {
        sgn(0.0)
    } else if exp32(n) - exp32(d) < -150 {
        sgn(0.0)
    } else if q.is_nan() {
        sgn(f32::INFINITY)
    } else {
        sgn(q.abs())
    }
}

/// `v_div_fixup_f64`.
pub(crate) fn div_fixup64(q: f64, d: f64, n: f64) -> f64 {
    let neg = d.is_sign_negative() != n.is_sign_negative();
    let sgn = |x: f64| if neg { -x } else { x };
    if n.is_nan() {
        f64::from_bits(n.to_bits() | 1 << 51)
    } else if d.is_nan() {
        f64::from_bits(d.to_bits() | 1 << 51)
    } else if (d == 0.0 && n == 0.0) || (d.is_infinite() && n.is_infinite()) {
        f64::from_bits(0xfff8_0000_0000_0000)
    } else if d == 0.0 || n.is_infinite() {
        sgn(f64::INFINITY)
    } else if d.is_infinite() || n == 0.0 {
        sgn(0.0)
    } else if exp64(n) - exp64(d) < -1075 {
        sgn(0.0)
    } else if q.is_nan() {
        sgn(f64::INFINITY)
    } else {
        sgn(q.abs())
    }
}

/// The first 1201 fraction bits of 2/pi (computed with Python's integers by Machin's formula),
/// left-aligned in 64-bit words; the last 15 bits are padding.
const TWO_OVER_PI: [u64; 19] = [
    0xA2F9836E4E441529,
    0xFC2757D1F534DDC0,
    0xDB6295993C439041,
    0xFE5163ABDEBBC561,
    0xB7246E3A424DD2E0,
    0x06492EEA09D1921C,
    0xFE1DEB1CB129A73E,
    0xE88235F52EBB4484,
    0xE99C7026B45F7E41,
    0x3991D639835339F4,
    0x9C845F8BBDF9283B,
    0x1FF897FFDE05980F,
    0xEF2F118B5A0A6D1F,
    0x6D367ECF27CB09B7,
    0x4F463F669E5FEA2D,
    0x7527BAC7EBE5F17B,
    0x3D0739F78A5292EA,
    0x6BFB5FB11F8D5D08,
    0x56033046FC7B0000,
];

/// 53 bits of 2/pi starting at fraction bit `start` (bit 0 has weight 2^-1); zeros past the
/// 1201 bits the hardware holds.
fn two_over_pi_bits(start: u32) -> u64 {
    let mut r = 0u64;
    for k in 0..53 {
        let bit = start + k;
        let b = if bit >= 1201 { 0 } else { TWO_OVER_PI[(bit / 64) as usize] >> (63 - bit % 64) & 1 };
        r = r << 1 | b;
    }
    r
}

/// `v_trig_preop_f64`: the segment of 2/pi selected by S1[4:0] (53 bits each), skipping the
/// leading bits that cannot matter for a large S0, scaled to its weight.
pub(crate) fn trig_preop(x: f64, seg: u32) -> f64 {
    let mut shift = (seg & 31) * 53;
    let e = exp64(x);
    if e > 1077 {
        shift += (e - 1077) as u32;
    }
    let mut scale = -53 - shift as i32;
    if e >= 1968 {
        scale += 128;
    }
    ldexp64(two_over_pi_bits(shift) as f64, scale)
}

fn f64_only(inst: &Inst) -> Result<(), FaultKind> {
    if inst.ext != Ext::None {
        return Err(FaultKind::NotImplemented(format!("{} with SDWA/DPP", inst.op.name())));
    }
    Ok(())
}

/// Executes a division helper, or returns None.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Option<Exec> {
    use Op::*;
    Some(match inst.op {
        VDivScaleF32 => scale32(w, inst),
        VDivScaleF64 => scale64(w, inst),
        VDivFmasF32 => fmas32(w, inst),
        VDivFmasF64 | VDivFixupF64 | VTrigPreopF64 => f64_3(w, inst),
        VDivFixupF32 => fixup32(w, inst),
        _ => return None,
    })
}

fn scale32(w: &mut Wave, inst: &Inst) -> Exec {
    require_rne(w, inst)?;
    let s = fetch32(w, inst, 3, Ty::F32)?;
    let mut out = [0u32; LANES];
    let mut vcc = 0u64;
    for l in 0..LANES {
        let v = |i: usize| flush_in32(w, fmod32(inst, i, s.v[i][l]));
        let (r, c) = div_scale32(v(0), v(1), v(2));
        out[l] = out32(w, inst, r);
        if c && s.mask >> l & 1 == 1 {
            vcc |= 1 << l;
        }
    }
    write32(w, inst, s.mask, &out)?;
    w.set_s64(sdst_of(inst), vcc)?;
    Ok(Flow::Next)
}

fn scale64(w: &mut Wave, inst: &Inst) -> Exec {
    require_rne(w, inst)?;
    f64_only(inst)?;
    let exec = w.exec();
    let mut out = [0u64; LANES];
    let mut vcc = 0u64;
    {
        let src: Vec<_> = (0..3).map(|i| w.src64_of(inst, i, Ty::F64)).collect::<Result<_, _>>()?;
        for l in 0..LANES {
            let v = |i: usize| flush_in64(w, fmod64(inst, i, src[i].get(l)));
            let (r, c) = div_scale64(v(0), v(1), v(2));
            out[l] = out64(w, inst, r);
            if c && exec >> l & 1 == 1 {
                vcc |= 1 << l;
            }
        }
    }
    w.write_v64(inst.dst, exec, &out)?;
    w.set_s64(sdst_of(inst), vcc)?;
    Ok(Flow::Next)
}

fn fmas32(w: &mut Wave, inst: &Inst) -> Exec {
    require_rne(w, inst)?;
    let s = fetch32(w, inst, 3, Ty::F32)?;
    let vcc = w.vcc();
    let mut out = [0u32; LANES];
    for l in 0..LANES {
        // "Input denormals are not flushed, but output flushing is allowed."
        let v = |i: usize| fmod32(inst, i, s.v[i][l]);
        out[l] = out32(w, inst, div_fmas32(v(0), v(1), v(2), vcc >> l & 1 == 1));
    }
    write32(w, inst, s.mask, &out)
}

fn fixup32(w: &mut Wave, inst: &Inst) -> Exec {
    require_rne(w, inst)?;
    let s = fetch32(w, inst, 3, Ty::F32)?;
    let mut out = [0u32; LANES];
    for l in 0..LANES {
        let v = |i: usize| flush_in32(w, fmod32(inst, i, s.v[i][l]));
        out[l] = out32(w, inst, div_fixup32(v(0), v(1), v(2)));
    }
    write32(w, inst, s.mask, &out)
}

/// The f64 three-operand helpers (div_fmas, div_fixup) and trig_preop (src1 is an integer).
fn f64_3(w: &mut Wave, inst: &Inst) -> Exec {
    require_rne(w, inst)?;
    f64_only(inst)?;
    let exec = w.exec();
    let vcc = w.vcc();
    let mut out = [0u64; LANES];
    {
        let a = w.src64_of(inst, 0, Ty::F64)?;
        if inst.op == Op::VTrigPreopF64 {
            let seg = w.src32_of(inst, 1, Ty::B32)?;
            for l in 0..LANES {
                out[l] = out64(w, inst, trig_preop(fmod64(inst, 0, a.get(l)), seg.get(l)));
            }
        } else {
            let b = w.src64_of(inst, 1, Ty::F64)?;
            let c = w.src64_of(inst, 2, Ty::F64)?;
            for l in 0..LANES {
                let (x, y, z) = (fmod64(inst, 0, a.get(l)), fmod64(inst, 1, b.get(l)), fmod64(inst, 2, c.get(l)));
                let r = if inst.op == Op::VDivFmasF64 {
                    div_fmas64(x, y, z, vcc >> l & 1 == 1)
                } else {
                    div_fixup64(x, flush_in64(w, y), flush_in64(w, z))
                };
                out[l] = out64(w, inst, r);
            }
        }
    }
    w.write_v64(inst.dst, exec, &out)?;
    Ok(Flow::Next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trig_preop_segments_rebuild_two_over_pi() {
        let s0 = trig_preop(1.0, 0);
        // The top 53 bits, truncated: one ulp below the nearest f64 to 2/pi.
        assert_eq!(s0.to_bits(), (2.0 / std::f64::consts::PI).to_bits() - 1);
        let s1 = trig_preop(1.0, 1);
        assert!(s1 > 0.0 && s1 < s0 * 2f64.powi(-52));
        // Large arguments skip leading bits: exponent 1078 shifts the window by one bit.
        let big = f64::from_bits(1078u64 << 52);
        assert_eq!(trig_preop(big, 0), ldexp64(two_over_pi_bits(1) as f64, -54));
    }

    #[test]
    fn fixup_special_cases() {
        assert!(div_fixup32(1.0, 0.0, 0.0).is_nan());
        assert_eq!(div_fixup32(1.0, -0.0, 3.0), f32::NEG_INFINITY);
        assert_eq!(div_fixup32(1.0, f32::INFINITY, -3.0), -0.0);
        assert_eq!(div_fixup32(0.5, -2.0, 1.0), -0.5);
        assert_eq!(div_fixup64(f64::NAN, 3.0, 1e300), f64::INFINITY);
    }
}
