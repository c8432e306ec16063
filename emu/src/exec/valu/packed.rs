//! VOP3P packed math (two 16-bit or two 32-bit halves per operation) and the AGPR moves.
//!
//! For each result half h (0 = low, 1 = high), source j contributes its half selected by
//! `op_sel` bit j (for h = 0) or `op_sel_hi` bit j (for h = 1); `neg_lo`/`neg_hi` negate per half.

use super::super::step::{Exec, Flow, not_implemented};
use super::super::wave::{LANES, Ty, Wave};
use crate::isa::{Inst, Op};

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

fn pk_f32(w: &mut Wave, inst: &Inst, n: usize, f: impl Fn(f32, f32, f32) -> f32) -> Exec {
    super::require_rne(w, inst)?;
    let exec = w.exec();
    let mut out = [0u64; LANES];
    {
        let srcs: Vec<_> = (0..n).map(|j| w.src64_of(inst, j, Ty::F32)).collect::<Result<_, _>>()?;
        for l in 0..LANES {
            let mut r = [0u32; 2];
            for (h, rh) in r.iter_mut().enumerate() {
                let a = sel32(inst, 0, h, srcs[0].get(l));
                let b = if n > 1 { sel32(inst, 1, h, srcs[1].get(l)) } else { 0.0 };
                let c = if n > 2 { sel32(inst, 2, h, srcs[2].get(l)) } else { 0.0 };
                let mut x = f(a, b, c);
                if inst.mods.clamp {
                    x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
                }
                *rh = super::flush_out32(w, x).to_bits();
            }
            out[l] = r[0] as u64 | (r[1] as u64) << 32;
        }
    }
    w.write_v64(inst.dst, exec, &out)?;
    Ok(Flow::Next)
}

/// Executes one non-matrix VOP3P instruction.
pub(crate) fn exec_vop3p(w: &mut Wave, inst: &Inst) -> Exec {
    use Op::*;
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
        VPkAddF32 => pk_f32(w, inst, 2, |a, b, _| a + b),
        VPkMulF32 => pk_f32(w, inst, 2, |a, b, _| a * b),
        VPkFmaF32 => pk_f32(w, inst, 3, |a, b, c| a.mul_add(b, c)),
        _ => Err(not_implemented(inst)),
    }
}
