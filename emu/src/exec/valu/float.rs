//! f32 and f64 arithmetic.
//!
//! Basic arithmetic is IEEE with round-to-nearest-even (other rounding modes are refused), input
//! and output denormals flushed per MODE. min/max follow the hardware: a NaN operand yields the
//! other operand, and -0 orders below +0. Transcendentals are computed in f64 and rounded once,
//! which is at least as accurate as the hardware's ~1 ulp approximations; tests compare them
//! with tolerances.

use super::super::cpu::multiversion;
use super::super::step::Exec;
use super::super::wave::{LANES, Ty, Wave};
use super::{fetch32, flush_in32, flush_in64, fmod32, fmod64, out32, out64, plain32, require_rne, write_plain32, write32};
use crate::isa::{Inst, Op};

/// IEEE maxNum with -0 < +0.
pub(crate) fn fmax32(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a > b || (a == b && b.is_sign_negative()) {
        a
    } else {
        b
    }
}

/// IEEE minNum with -0 < +0.
pub(crate) fn fmin32(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a < b || (a == b && a.is_sign_negative()) {
        a
    } else {
        b
    }
}

pub(crate) fn fmax64(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a > b || (a == b && b.is_sign_negative()) {
        a
    } else {
        b
    }
}

pub(crate) fn fmin64(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a < b || (a == b && a.is_sign_negative()) {
        a
    } else {
        b
    }
}

/// Median of three (NaNs follow the min/max rules).
pub(crate) fn fmed3_32(a: f32, b: f32, c: f32) -> f32 {
    fmin32(fmax32(a, b), fmax32(fmin32(a, b), c))
}

#[inline(always)]
fn f32_n(w: &mut Wave, inst: &Inst, n: usize, f: impl Fn(f32, f32, f32) -> f32) -> Exec {
    require_rne(w, inst)?;
    let mut out = [0u32; LANES];
    // The lanes to write after DPP/SDWA selection (`None`: in place, EXEC).
    let fetched_mask = {
        let w: &Wave = w;
        let lane = |x: [u32; 3]| {
            let a = flush_in32(w, fmod32(inst, 0, x[0]));
            let b = flush_in32(w, fmod32(inst, 1, x[1]));
            let c = flush_in32(w, fmod32(inst, 2, x[2]));
            out32(w, inst, f(a, b, c))
        };
        let plain = match n {
            1 => plain32::<1>(w, inst, Ty::F32, |l, [a]| out[l] = lane([a, 0, 0])),
            2 => plain32::<2>(w, inst, Ty::F32, |l, [a, b]| out[l] = lane([a, b, 0])),
            _ => plain32::<3>(w, inst, Ty::F32, |l, [a, b, c]| out[l] = lane([a, b, c])),
        };
        match plain {
            Some(r) => {
                r?;
                None
            }
            None => {
                let s = fetch32(w, inst, n, Ty::F32)?;
                for l in 0..LANES {
                    out[l] = lane([s.v[0][l], s.v[1][l], s.v[2][l]]);
                }
                Some(s.mask)
            }
        }
    };
    match fetched_mask {
        None => write_plain32(w, inst, &out),
        Some(mask) => write32(w, inst, mask, &out),
    }
}

// The FMAs compiled with FMA instructions where the CPU has them (`cpu::multiversion`), not a
// library call per lane.
multiversion! {
    fn fma_f32(w: &mut Wave, inst: &Inst) -> Exec {
        f32_n(w, inst, 3, |a, b, c| a.mul_add(b, c))
    }
}
multiversion! {
    fn fmac_f32(w: &mut Wave, inst: &Inst) -> Exec {
        f32_acc(w, inst, |a, b, c| a.mul_add(b, c))
    }
}

/// `v_mac/fmac`: the destination is also the addend.
#[inline(always)]
fn f32_acc(w: &mut Wave, inst: &Inst, f: impl Fn(f32, f32, f32) -> f32) -> Exec {
    require_rne(w, inst)?;
    let s = fetch32(w, inst, 2, Ty::F32)?;
    let d = *w.vreg(inst.dst)?;
    let mut out = [0u32; LANES];
    for l in 0..LANES {
        let a = flush_in32(w, fmod32(inst, 0, s.v[0][l]));
        let b = flush_in32(w, fmod32(inst, 1, s.v[1][l]));
        let c = flush_in32(w, fmod32(inst, 2, d[l]));
        out[l] = out32(w, inst, f(a, b, c));
    }
    write32(w, inst, s.mask, &out)
}

/// f32 -> i32 result (frexp_exp).
fn f32_to_u32(w: &mut Wave, inst: &Inst, f: impl Fn(f32) -> u32) -> Exec {
    let s = fetch32(w, inst, 1, Ty::F32)?;
    let mut out = [0u32; LANES];
    for l in 0..LANES {
        out[l] = f(flush_in32(w, fmod32(inst, 0, s.v[0][l])));
    }
    write32(w, inst, s.mask, &out)
}

/// `a * 2^e`, rounded once.
pub(crate) fn ldexp32(a: f32, e: i32) -> f32 {
    let e = e.clamp(-400, 400);
    // Two exact steps of at most 2^200 (a normal power of two each): the same single rounding.
    let h = e / 2;
    (a as f64 * super::round::pow2(h) * super::round::pow2(e - h)) as f32
}

pub(crate) fn ldexp64(a: f64, e: i32) -> f64 {
    // Two steps keep every intermediate exact or correctly saturated.
    let e = e.clamp(-2200, 2200);
    let h = e / 2;
    a * super::round::pow2(h) * super::round::pow2(e - h)
}

fn fract32(x: f32) -> f32 {
    if x.is_infinite() {
        return f32::NAN;
    }
    let r = x - x.floor();
    // The largest f32 below 1.0: a tiny negative x would otherwise round up to 1.0.
    r.min(f32::from_bits(0x3f7f_ffff))
}

fn fract64(x: f64) -> f64 {
    if x.is_infinite() {
        return f64::NAN;
    }
    (x - x.floor()).min(f64::from_bits(0x3fef_ffff_ffff_ffff))
}

/// frexp mantissa in [0.5, 1) with the sign of x; NaN/inf pass through.
pub(crate) fn frexp_mant32(x: f32) -> f32 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let (m, _) = frexp64(x as f64);
    m as f32
}

/// frexp exponent (x = m * 2^e); 0 for 0, inf and NaN.
pub(crate) fn frexp_exp32(x: f32) -> i32 {
    if x == 0.0 || !x.is_finite() {
        return 0;
    }
    frexp64(x as f64).1
}

pub(crate) fn frexp64(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        let (m, e) = frexp64(x * 2f64.powi(64));
        return (m, e - 64);
    }
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022u64 << 52));
    (m, exp - 1022)
}

/// The cubemap ops (ISA pseudo-code): face id, S and T coordinates, and twice the major axis of
/// the direction (x, y, z); z wins ties over y, y over x.
fn cube(op: Op, x: f32, y: f32, z: f32) -> f32 {
    let face = if z.abs() >= x.abs() && z.abs() >= y.abs() {
        2
    } else if y.abs() >= x.abs() {
        1
    } else {
        0
    };
    match (op, face) {
        (Op::VCubeidF32, 2) => {
            if z < 0.0 {
                5.0
            } else {
                4.0
            }
        }
        (Op::VCubeidF32, 1) => {
            if y < 0.0 {
                3.0
            } else {
                2.0
            }
        }
        (Op::VCubeidF32, _) => {
            if x < 0.0 {
                1.0
            } else {
                0.0
            }
        }
        (Op::VCubescF32, 2) => {
            if z < 0.0 {
                -x
            } else {
                x
            }
        }
        (Op::VCubescF32, 1) => x,
        (Op::VCubescF32, _) => {
            if x < 0.0 {
                z
            } else {
                -z
            }
        }
        (Op::VCubetcF32, 1) => {
            if y < 0.0 {
                -z
            } else {
                z
            }
        }
        (Op::VCubetcF32, _) => -y,
        (_, 2) => z * 2.0,
        (_, 1) => y * 2.0,
        _ => x * 2.0,
    }
}

fn f64_n(w: &mut Wave, inst: &Inst, n: usize, f: impl Fn(f64, f64, f64) -> f64) -> Exec {
    require_rne(w, inst)?;
    // src0 may carry DPP (row_newbcast on gfx942); the mask then drops DPP-disabled lanes.
    let (a, exec) = super::fetch64(w, inst, 0, Ty::F64)?;
    let mut out = [0u64; LANES];
    {
        let b = if n > 1 { Some(w.src64_of(inst, 1, Ty::F64)?) } else { None };
        let c = if n > 2 { Some(w.src64_of(inst, 2, Ty::F64)?) } else { None };
        for l in 0..LANES {
            let x = flush_in64(w, fmod64(inst, 0, a[l]));
            let y = b.map_or(0.0, |b| flush_in64(w, fmod64(inst, 1, b.get(l))));
            let z = c.map_or(0.0, |c| flush_in64(w, fmod64(inst, 2, c.get(l))));
            out[l] = out64(w, inst, f(x, y, z));
        }
    }
    w.write_v64(inst.dst, exec, &out)?;
    Ok(super::super::step::Flow::Next)
}

/// `v_fmac_f64`: `D = S0 * S1 + D` (the destination pair is also the addend).
fn f64_acc(w: &mut Wave, inst: &Inst) -> Exec {
    require_rne(w, inst)?;
    let exec = w.exec();
    let mut out = [0u64; LANES];
    {
        let a = w.src64_of(inst, 0, Ty::F64)?;
        let b = w.src64_of(inst, 1, Ty::F64)?;
        let d = w.src64(inst.dst, 0, Ty::F64)?;
        for l in 0..LANES {
            let x = flush_in64(w, fmod64(inst, 0, a.get(l)));
            let y = flush_in64(w, fmod64(inst, 1, b.get(l)));
            out[l] = out64(w, inst, x.mul_add(y, flush_in64(w, f64::from_bits(d.get(l)))));
        }
    }
    w.write_v64(inst.dst, exec, &out)?;
    Ok(super::super::step::Flow::Next)
}

/// `f(f64, i32) -> f64` (ldexp_f64: src1 is a 32-bit integer).
fn f64_i32(w: &mut Wave, inst: &Inst, f: impl Fn(f64, i32) -> f64) -> Exec {
    require_rne(w, inst)?;
    let exec = w.exec();
    let mut out = [0u64; LANES];
    {
        let a = w.src64_of(inst, 0, Ty::F64)?;
        let b = w.src32_of(inst, 1, Ty::B32)?;
        for l in 0..LANES {
            out[l] = out64(w, inst, f(flush_in64(w, fmod64(inst, 0, a.get(l))), b.get(l) as i32));
        }
    }
    w.write_v64(inst.dst, exec, &out)?;
    Ok(super::super::step::Flow::Next)
}

/// f64 source, 32-bit result (frexp_exp_i32_f64).
fn f64_to_u32(w: &mut Wave, inst: &Inst, f: impl Fn(f64) -> u32) -> Exec {
    let exec = w.exec();
    let mut out = [0u32; LANES];
    {
        let a = w.src64_of(inst, 0, Ty::F64)?;
        for l in 0..LANES {
            out[l] = f(flush_in64(w, fmod64(inst, 0, a.get(l))));
        }
    }
    write32(w, inst, exec, &out)
}

/// Executes an f32/f64 arithmetic op, or returns None.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Option<Exec> {
    use Op::*;
    Some(match inst.op {
        VAddF32 => f32_n(w, inst, 2, |a, b, _| a + b),
        VSubF32 => f32_n(w, inst, 2, |a, b, _| a - b),
        VSubrevF32 => f32_n(w, inst, 2, |a, b, _| b - a),
        VMulF32 => f32_n(w, inst, 2, |a, b, _| a * b),
        // Legacy multiply: 0 * anything (even inf/NaN) is 0.
        VMulLegacyF32 => f32_n(w, inst, 2, |a, b, _| if a == 0.0 || b == 0.0 { 0.0 } else { a * b }),
        VMinF32 => f32_n(w, inst, 2, |a, b, _| fmin32(a, b)),
        VMaxF32 => f32_n(w, inst, 2, |a, b, _| fmax32(a, b)),
        VMin3F32 => f32_n(w, inst, 3, |a, b, c| fmin32(fmin32(a, b), c)),
        VMax3F32 => f32_n(w, inst, 3, |a, b, c| fmax32(fmax32(a, b), c)),
        VMed3F32 => f32_n(w, inst, 3, fmed3_32),
        VFmaF32 => fma_f32(w, inst),
        // fmamk: src0 * K + src1; fmaak: src0 * src1 + K (the decoder puts K in its slot).
        VFmamkF32 | VFmaakF32 => fma_f32(w, inst),
        VFmacF32 => fmac_f32(w, inst),
        VLdexpF32 => {
            let s = match fetch32(w, inst, 2, Ty::F32) {
                Ok(s) => s,
                Err(e) => return Some(Err(e.into())),
            };
            let mut out = [0u32; LANES];
            for l in 0..LANES {
                out[l] = out32(w, inst, ldexp32(flush_in32(w, fmod32(inst, 0, s.v[0][l])), s.v[1][l] as i32));
            }
            write32(w, inst, s.mask, &out)
        }
        VFractF32 => f32_n(w, inst, 1, |a, _, _| fract32(a)),
        VTruncF32 => f32_n(w, inst, 1, |a, _, _| a.trunc()),
        VCeilF32 => f32_n(w, inst, 1, |a, _, _| a.ceil()),
        VFloorF32 => f32_n(w, inst, 1, |a, _, _| a.floor()),
        VRndneF32 => f32_n(w, inst, 1, |a, _, _| a.round_ties_even()),
        VExpF32 => f32_n(w, inst, 1, |a, _, _| (a as f64).exp2() as f32),
        VLogF32 => f32_n(w, inst, 1, |a, _, _| (a as f64).log2() as f32),
        VRcpF32 | VRcpIflagF32 => f32_n(w, inst, 1, |a, _, _| (1.0 / a as f64) as f32),
        VRsqF32 => f32_n(w, inst, 1, |a, _, _| (1.0 / (a as f64).sqrt()) as f32),
        VSqrtF32 => f32_n(w, inst, 1, |a, _, _| a.sqrt()),
        VSinF32 => {
            f32_n(w, inst, 1, |a, _, _| if a.is_finite() { ((a as f64).fract() * std::f64::consts::TAU).sin() as f32 } else { f32::NAN })
        }
        VCosF32 => {
            f32_n(w, inst, 1, |a, _, _| if a.is_finite() { ((a as f64).fract() * std::f64::consts::TAU).cos() as f32 } else { f32::NAN })
        }
        VFrexpMantF32 => f32_n(w, inst, 1, |a, _, _| frexp_mant32(a)),
        VFrexpExpI32F32 => f32_to_u32(w, inst, |a| frexp_exp32(a) as u32),

        VCubeidF32 | VCubescF32 | VCubetcF32 | VCubemaF32 => {
            let op = inst.op;
            f32_n(w, inst, 3, move |x, y, z| cube(op, x, y, z))
        }

        VAddF64 => f64_n(w, inst, 2, |a, b, _| a + b),
        VMulF64 => f64_n(w, inst, 2, |a, b, _| a * b),
        VFmaF64 => f64_n(w, inst, 3, |a, b, c| a.mul_add(b, c)),
        VFmacF64 => f64_acc(w, inst),
        VMinF64 => f64_n(w, inst, 2, |a, b, _| fmin64(a, b)),
        VMaxF64 => f64_n(w, inst, 2, |a, b, _| fmax64(a, b)),
        VLdexpF64 => f64_i32(w, inst, ldexp64),
        VRcpF64 => f64_n(w, inst, 1, |a, _, _| 1.0 / a),
        VRsqF64 => f64_n(w, inst, 1, |a, _, _| 1.0 / a.sqrt()),
        VSqrtF64 => f64_n(w, inst, 1, |a, _, _| a.sqrt()),
        VFractF64 => f64_n(w, inst, 1, |a, _, _| fract64(a)),
        VTruncF64 => f64_n(w, inst, 1, |a, _, _| a.trunc()),
        VCeilF64 => f64_n(w, inst, 1, |a, _, _| a.ceil()),
        VFloorF64 => f64_n(w, inst, 1, |a, _, _| a.floor()),
        VRndneF64 => f64_n(w, inst, 1, |a, _, _| a.round_ties_even()),
        VFrexpMantF64 => f64_n(w, inst, 1, |a, _, _| frexp64(a).0),
        VFrexpExpI32F64 => f64_to_u32(w, inst, |a| frexp64(a).1 as u32),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_max_prefer_numbers_and_positive_zero() {
        assert_eq!(fmax32(f32::NAN, 1.0), 1.0);
        assert_eq!(fmin32(2.0, f32::NAN), 2.0);
        assert!(fmax32(-0.0, 0.0).is_sign_positive());
        assert!(fmin32(0.0, -0.0).is_sign_negative());
        assert_eq!(fmed3_32(3.0, 1.0, 2.0), 2.0);
    }

    #[test]
    fn fract_frexp_ldexp() {
        assert_eq!(fract32(-1e-10), f32::from_bits(0x3f7f_ffff));
        assert_eq!(fract32(2.75), 0.75);
        assert!(fract32(f32::INFINITY).is_nan());
        assert_eq!(frexp_mant32(8.0), 0.5);
        assert_eq!(frexp_exp32(8.0), 4);
        assert_eq!(frexp_exp32(f32::from_bits(1)), -148);
        assert_eq!(ldexp32(1.0, -149), f32::from_bits(1));
        assert_eq!(ldexp32(1.5, -149), f32::from_bits(2)); // ties to even at the denormal edge
        assert_eq!(ldexp32(1.0, 200), f32::INFINITY);
        assert_eq!(ldexp64(1.0, -1074), f64::from_bits(1));
    }
}
