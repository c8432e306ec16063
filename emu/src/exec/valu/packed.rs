//! VOP3P packed math (two 16-bit or two 32-bit halves per operation), the mixed-precision FMAs,
//! `v_pk_fmac_f16`, and the AGPR moves.
//!
//! For each result half h (0 = low, 1 = high), source j contributes its half selected by
//! `op_sel` bit j (for h = 0) or `op_sel_hi` bit j (for h = 1); `neg_lo`/`neg_hi` negate per half.
//!
//! Constants: gfx942 VOP3P takes no literal (llvm-mc-19: "literal operands are not supported").
//! An inline constant is a 32-bit value: a float constant is the f16 (f32 for packed f32 ops)
//! pattern in the low half with zeros above, an integer constant is sign-extended. So with the
//! default op_sel_hi the high half of `1.0` reads 0.0; LLVM's operand folding (SIFoldOperands,
//! `tryFoldImmWithOpSel`) relies on exactly this, clearing op_sel_hi to splat a constant.

use super::super::cpu::map_lanes;
use super::super::step::{Exec, Flow, not_implemented};
use super::super::wave::{LANES, Src32, Src64, Ty, Wave, ZERO_VREG};
use super::f16::minmax16;
use super::round::{f16_sticky, fma16, two_sum};
use super::{f16_flush_in, flush_in32, flush_out32, in_place, out16_bits, require_rne};
use crate::isa::{Inst, Op, Opnd};

/// The selected 32-bit half of a 64-bit packed f32 operand for result half `h`.
fn sel32(inst: &Inst, j: usize, h: usize, v: u64) -> f32 {
    let hi = if h == 0 { inst.mods.op_sel >> j & 1 } else { inst.mods.op_sel_hi >> j & 1 };
    let mut b = if hi == 1 { (v >> 32) as u32 } else { v as u32 };
    let neg = if h == 0 { inst.mods.neg } else { inst.mods.neg_hi };
    if neg >> j & 1 == 1 {
        b ^= 0x8000_0000;
    }
    f32::from_bits(b)
}

/// `v_pk_add/mul/fma_f32`: per result half, `f` of the sources' selected halves (op_sel for the
/// low result, op_sel_hi for the high; neg / neg_hi flip signs), clamped if asked, denormal
/// results flushed per MODE. A source is a register pair or a 64-bit constant, so the half a
/// result reads is a whole register (or a constant): each result half is a 32-bit lane map
/// over three registers read in place ([`map_lanes`]), without a branch per lane, in the
/// widest vectors and with the CPU's FMA (per lane through 64-bit values, `v_pk_fma_f32` cost
/// 78 ns).
fn pk_f32(w: &mut Wave, inst: &Inst, n: usize, f: impl Fn(f32, f32, f32) -> f32 + Copy) -> Exec {
    super::require_rne(w, inst)?;
    let exec = w.exec();
    let (clamp, flush) = (inst.mods.clamp, w.mode.denorm32 & 2 == 0);
    let mut out = [[0u32; LANES]; 2];
    {
        // Unused sources: a register pair of zeros, never read (as `map32`'s: no fill).
        let mut srcs = [Src64::Vec(&ZERO_VREG, &ZERO_VREG); 3];
        for (j, s) in srcs.iter_mut().enumerate().take(n) {
            *s = w.src64_of(inst, j, Ty::F32)?;
        }
        for (h, out) in out.iter_mut().enumerate() {
            // Source j's half for result half h (`sel32`'s choice, probed once), and its flip.
            let half = |j: usize| {
                let probe = sel32(inst, j, h, 1 << 32).to_bits();
                let hi = probe & 1 == 1;
                let s = match srcs[j] {
                    Src64::Vec(lo, hi_reg) => Src32::Vec(if hi { hi_reg } else { lo }),
                    Src64::Uni(v) => Src32::Uni(if hi { (v >> 32) as u32 } else { v as u32 }),
                };
                (s, probe & 0x8000_0000)
            };
            let ((a, fa), (b, fb), (c, fc)) = (half(0), half(1), half(2));
            let lane = move |[x, y, z]: [u32; 3]| {
                let mut r = f(f32::from_bits(x ^ fa), f32::from_bits(y ^ fb), f32::from_bits(z ^ fc));
                if clamp {
                    r = if r.is_nan() { 0.0 } else { r.clamp(0.0, 1.0) };
                }
                // (`flush_out32` with the mode read once.)
                if flush && r.is_subnormal() {
                    r = 0.0f32.copysign(r);
                }
                r.to_bits()
            };
            in_place(a, |a| in_place(b, |b| in_place(c, |c| map_lanes(out, [a, b, c], lane))));
        }
    }
    w.write_v32(inst.dst, exec, &out[0])?;
    w.write_v32(Opnd(inst.dst.0 + 1), exec, &out[1])?;
    Ok(Flow::Next)
}

fn pk_add_f32(w: &mut Wave, inst: &Inst) -> Exec {
    pk_f32(w, inst, 2, |a, b, _| a + b)
}

fn pk_mul_f32(w: &mut Wave, inst: &Inst) -> Exec {
    pk_f32(w, inst, 2, |a, b, _| a * b)
}

fn pk_fma_f32(w: &mut Wave, inst: &Inst) -> Exec {
    pk_f32(w, inst, 3, |a, b, c| a.mul_add(b, c))
}

/// Executes one non-matrix VOP3P instruction.
pub(crate) fn exec_vop3p(w: &mut Wave, inst: &Inst) -> Exec {
    use Op::*;
    if let Some(r) = super::fast::exec(w, inst) {
        return r;
    }
    match inst.op {
        VAccvgprReadB32 | VAccvgprWriteB32 | VAccvgprMovB32 => {
            let exec = w.exec();
            let v = w.src32_of(inst, 0, Ty::B32)?.lanes();
            w.write_v32(inst.dst, exec, &v)?;
            Ok(Flow::Next)
        }
        VPkMovB32 => {
            // D.lo = op_sel[0] ? src0.hi : src0.lo; D.hi = op_sel[1] ? src1.hi : src1.lo.
            let exec = w.exec();
            let mut out = [0u64; LANES];
            {
                let a = w.src64_of(inst, 0, Ty::U64)?;
                let b = w.src64_of(inst, 1, Ty::U64)?;
                for l in 0..LANES {
                    let lo = if inst.mods.op_sel & 1 == 1 { a.get(l) >> 32 } else { a.get(l) & 0xffff_ffff };
                    let hi = if inst.mods.op_sel & 2 == 2 { b.get(l) >> 32 } else { b.get(l) & 0xffff_ffff };
                    out[l] = lo | hi << 32;
                }
            }
            w.write_v64(inst.dst, exec, &out)?;
            Ok(Flow::Next)
        }
        VPkAddF32 => pk_add_f32(w, inst),
        VPkMulF32 => pk_mul_f32(w, inst),
        VPkFmaF32 => pk_fma_f32(w, inst),
        VPkFmaF16 => pk_f16(w, inst, 3, |w, a, b, c| fma16(f16_flush_in(w, a), f16_flush_in(w, b), f16_flush_in(w, c))),
        VPkAddF16 => pk_f16(w, inst, 2, |w, a, b, _| super::round::f16_from_f64(f16_flush_in(w, a) + f16_flush_in(w, b))),
        VPkMulF16 => pk_f16(w, inst, 2, |w, a, b, _| super::round::f16_from_f64(f16_flush_in(w, a) * f16_flush_in(w, b))),
        VPkMaxF16 | VPkMinF16 => {
            let max = inst.op == VPkMaxF16;
            pk_f16(w, inst, 2, move |w, a, b, _| minmax16(w.mode.ieee, flush16(w, a), flush16(w, b), max))
        }
        VPkAddU16 => pk_i16(w, inst, 2, |c, a, b, _| sat_u(c, a as i64 + b as i64)),
        VPkSubU16 => pk_i16(w, inst, 2, |c, a, b, _| sat_u(c, a as i64 - b as i64)),
        VPkAddI16 => pk_i16(w, inst, 2, |c, a, b, _| sat_i(c, a as i16 as i64 + b as i16 as i64)),
        VPkSubI16 => pk_i16(w, inst, 2, |c, a, b, _| sat_i(c, a as i16 as i64 - b as i16 as i64)),
        VPkMulLoU16 => pk_i16(w, inst, 2, |c, a, b, _| sat_u(c, a as i64 * b as i64)),
        VPkMadU16 => pk_i16(w, inst, 3, |c, a, b, d| sat_u(c, a as i64 * b as i64 + d as i64)),
        VPkMadI16 => pk_i16(w, inst, 3, |c, a, b, d| sat_i(c, a as i16 as i64 * b as i16 as i64 + d as i16 as i64)),
        VPkLshlrevB16 => pk_i16(w, inst, 2, |_, a, b, _| b << (a & 15)),
        VPkLshrrevB16 => pk_i16(w, inst, 2, |_, a, b, _| b >> (a & 15)),
        VPkAshrrevI16 => pk_i16(w, inst, 2, |_, a, b, _| ((b as i16) >> (a & 15)) as u16),
        VPkMaxU16 => pk_i16(w, inst, 2, |_, a, b, _| a.max(b)),
        VPkMinU16 => pk_i16(w, inst, 2, |_, a, b, _| a.min(b)),
        VPkMaxI16 => pk_i16(w, inst, 2, |_, a, b, _| (a as i16).max(b as i16) as u16),
        VPkMinI16 => pk_i16(w, inst, 2, |_, a, b, _| (a as i16).min(b as i16) as u16),
        VFmaMixF32 | VFmaMixloF16 | VFmaMixhiF16 => fma_mix(w, inst),
        VDot2F32F16 | VDot2I32I16 | VDot2U32U16 | VDot4I32I8 | VDot4U32U8 | VDot8I32I4 | VDot8U32U4 => {
            super::dot::exec(w, inst).unwrap_or_else(|| Err(not_implemented(inst)))
        }
        _ => Err(not_implemented(inst)),
    }
}

/// `v_pk_fmac_f16` (VOP2): per half `D = S0 * S1 + D`, fused.
pub(crate) fn exec_alu(w: &mut Wave, inst: &Inst) -> Option<Exec> {
    if inst.op != Op::VPkFmacF16 {
        return None;
    }
    Some((|| {
        require_rne(w, inst)?;
        let s = super::fetch32(w, inst, 2, Ty::F16)?;
        let d = *w.vreg(inst.dst)?;
        let mut out = [0u32; LANES];
        for l in 0..LANES {
            let mut r = 0u32;
            for h in 0..2 {
                let part = |x: u32| {
                    let b = (x >> (16 * h)) as u16;
                    f16_flush_in(w, super::fmod16(inst, 0, b as u32))
                };
                let a = part(s.v[0][l]);
                let b = {
                    let x = (s.v[1][l] >> (16 * h)) as u16;
                    f16_flush_in(w, super::fmod16(inst, 1, x as u32))
                };
                let c = f16_flush_in(w, (d[l] >> (16 * h)) as u16);
                r |= (out16_bits(w, inst, fma16(a, b, c)) as u32) << (16 * h);
            }
            out[l] = r;
        }
        super::write32(w, inst, s.mask, &out)
    })())
}

fn flush16(w: &Wave, b: u16) -> u16 {
    if w.mode.denorm16_64 & 1 == 0 && b & 0x7c00 == 0 { b & 0x8000 } else { b }
}

fn sat_u(clamp: bool, x: i64) -> u16 {
    if clamp { x.clamp(0, u16::MAX as i64) as u16 } else { x as u16 }
}

fn sat_i(clamp: bool, x: i64) -> u16 {
    if clamp { x.clamp(i16::MIN as i64, i16::MAX as i64) as i16 as u16 } else { x as u16 }
}

/// The 16-bit half of packed source `j` feeding result half `h`, before negation.
fn sel16(inst: &Inst, j: usize, h: usize, v: u32) -> u16 {
    let hi = if h == 0 { inst.mods.op_sel >> j & 1 } else { inst.mods.op_sel_hi >> j & 1 };
    if hi == 1 { (v >> 16) as u16 } else { v as u16 }
}

/// Packed f16 op: `f` returns the rounded f16 of one half; clamp and output flushing follow.
fn pk_f16(w: &mut Wave, inst: &Inst, n: usize, f: impl Fn(&Wave, u16, u16, u16) -> u16) -> Exec {
    require_rne(w, inst)?;
    let exec = w.exec();
    let mut srcs = [Src32::Uni(0); 3];
    for (j, s) in srcs.iter_mut().enumerate().take(n) {
        *s = w.src32_of(inst, j, Ty::F16)?;
    }
    // Per result half and source: the shift that selects the source's half (`sel16`) and the
    // sign flip, worked out once instead of per lane.
    let mut shift = [[0u32; 3]; 2];
    let mut flip = [[0u16; 3]; 2];
    for h in 0..2 {
        let neg = if h == 0 { inst.mods.neg } else { inst.mods.neg_hi };
        for j in 0..n {
            shift[h][j] = if sel16(inst, j, h, 0x0001_0000) == 1 { 16 } else { 0 };
            flip[h][j] = if neg >> j & 1 == 1 { 0x8000 } else { 0 };
        }
    }
    let mut out = [0u32; LANES];
    for l in 0..LANES {
        let mut r = 0u32;
        for h in 0..2 {
            let x = |j: usize| if j < n { (srcs[j].get(l) >> shift[h][j]) as u16 ^ flip[h][j] } else { 0 };
            r |= (out16_bits(w, inst, f(w, x(0), x(1), x(2))) as u32) << (16 * h);
        }
        out[l] = r;
    }
    w.write_v32(inst.dst, exec, &out)?;
    Ok(Flow::Next)
}

/// Packed 16-bit integer op: `f(clamp, a, b, c)` per half.
fn pk_i16(w: &mut Wave, inst: &Inst, n: usize, f: impl Fn(bool, u16, u16, u16) -> u16) -> Exec {
    let exec = w.exec();
    let mut srcs = [Src32::Uni(0); 3];
    for (j, s) in srcs.iter_mut().enumerate().take(n) {
        *s = w.src32_of(inst, j, Ty::B16)?;
    }
    let mut out = [0u32; LANES];
    for l in 0..LANES {
        let mut r = 0u32;
        for h in 0..2 {
            let x = |j: usize| if j < n { sel16(inst, j, h, srcs[j].get(l)) } else { 0 };
            r |= (f(inst.mods.clamp, x(0), x(1), x(2)) as u32) << (16 * h);
        }
        out[l] = r;
    }
    w.write_v32(inst.dst, exec, &out)?;
    Ok(Flow::Next)
}

/// `v_fma_mix_f32`, `v_fma_mixlo_f16`, `v_fma_mixhi_f16`: op_sel_hi[j] says source j is f16
/// (op_sel[j] then picks its half) or f32; neg_lo negates and neg_hi takes the absolute value
/// (the decoder stores the latter as abs). mixlo/mixhi write one half and keep the other.
fn fma_mix(w: &mut Wave, inst: &Inst) -> Exec {
    require_rne(w, inst)?;
    let exec = w.exec();
    let mut vals = [[0f64; LANES]; 3];
    for (j, vj) in vals.iter_mut().enumerate() {
        let is16 = inst.mods.op_sel_hi >> j & 1 == 1;
        let s = w.src32_of(inst, j, if is16 { Ty::F16 } else { Ty::F32 })?.lanes();
        for l in 0..LANES {
            let mut x = if is16 {
                let b = if inst.mods.op_sel >> j & 1 == 1 { (s[l] >> 16) as u16 } else { s[l] as u16 };
                f16_flush_in(w, b)
            } else {
                flush_in32(w, f32::from_bits(s[l])) as f64
            };
            if inst.mods.abs >> j & 1 == 1 {
                x = x.abs();
            }
            if inst.mods.neg >> j & 1 == 1 {
                x = -x;
            }
            vj[l] = x;
        }
    }
    let old = *w.vreg(inst.dst)?;
    let mut out = [0u32; LANES];
    for l in 0..LANES {
        let (a, b, c) = (vals[0][l], vals[1][l], vals[2][l]);
        out[l] = if inst.op == Op::VFmaMixF32 {
            // f16/f32 inputs are exact in f32, so the f32 fma rounds once.
            let mut r = (a as f32).mul_add(b as f32, c as f32);
            if inst.mods.clamp {
                r = if r.is_nan() { if w.mode.dx10_clamp { 0.0 } else { r } } else { r.clamp(0.0, 1.0) };
            }
            flush_out32(w, r).to_bits()
        } else {
            let p = a * b; // exact: at most 48 significant bits
            let h = if p.is_finite() && c.is_finite() {
                let (s, e) = two_sum(p, c);
                f16_sticky(s, e)
            } else {
                super::round::f16_from_f64(p + c)
            };
            let h = out16_bits(w, inst, h) as u32;
            if inst.op == Op::VFmaMixloF16 { (old[l] & 0xffff_0000) | h } else { (old[l] & 0xffff) | h << 16 }
        };
    }
    w.write_v32(inst.dst, exec, &out)?;
    Ok(Flow::Next)
}
