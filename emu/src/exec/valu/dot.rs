//! Dot products: `v_dot2_f32_f16`, the integer `v_dot2/4/8` (VOP3P) and the accumulating VOP2
//! forms `v_dot2c_f32_f16`, `v_dot2c_i32_i16`, `v_dot4c_i32_i8`, `v_dot8c_i32_i4` (D += ...).
//!
//! Integer forms sum the element products exactly and add the 32-bit accumulator; without clamp
//! the result wraps to 32 bits, with clamp it saturates (signed or unsigned). The f16 form
//! evaluates `a.lo*b.lo + a.hi*b.hi + c` in f64 (the products are exact) and rounds once to f32;
//! the hardware's internal precision is not documented, so tests compare against IEEE values of
//! well-conditioned inputs.

use super::super::error::FaultKind;
use super::super::step::Exec;
use super::super::wave::{LANES, Ty, Wave};
use super::{f16_flush_in, fetch32, flush_in32, out32, require_rne, write32};
use crate::isa::{Enc, Inst, Op};

/// The element kind of a dot product.
#[derive(Clone, Copy)]
enum Elem {
    F16,
    I16,
    U16,
    I8,
    U8,
    I4,
    U4,
}

impl Elem {
    fn of(op: Op) -> Option<Elem> {
        use Op::*;
        Some(match op {
            VDot2F32F16 | VDot2cF32F16 => Elem::F16,
            VDot2I32I16 | VDot2cI32I16 => Elem::I16,
            VDot2U32U16 => Elem::U16,
            VDot4I32I8 | VDot4cI32I8 => Elem::I8,
            VDot4U32U8 => Elem::U8,
            VDot8I32I4 | VDot8cI32I4 => Elem::I4,
            VDot8U32U4 => Elem::U4,
            _ => return None,
        })
    }

    fn signed(self) -> bool {
        matches!(self, Elem::I16 | Elem::I8 | Elem::I4)
    }
}

/// Integer dot product of the packed elements of `a` and `b` plus `c`.
pub(crate) fn dot_int(kind_signed: bool, width: u32, a: u32, b: u32, c: u32, clamp: bool) -> u32 {
    let n = 32 / width;
    let mask = (1u64 << width) - 1;
    let el = |x: u32, i: u32| -> i64 {
        let v = (x as u64 >> (i * width)) & mask;
        if kind_signed && v >> (width - 1) & 1 == 1 { v as i64 - (1i64 << width) } else { v as i64 }
    };
    let mut sum: i64 = if kind_signed { c as i32 as i64 } else { c as i64 };
    for i in 0..n {
        sum += el(a, i) * el(b, i);
    }
    if !clamp {
        sum as u32
    } else if kind_signed {
        sum.clamp(i32::MIN as i64, i32::MAX as i64) as i32 as u32
    } else {
        sum.clamp(0, u32::MAX as i64) as u32
    }
}

/// Executes a dot product, or returns None.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Option<Exec> {
    let kind = Elem::of(inst.op)?;
    Some(run(w, inst, kind))
}

fn run(w: &mut Wave, inst: &Inst, kind: Elem) -> Exec {
    let accumulate = inst.enc != Enc::Vop3p;
    // The VOP2 "c" forms accumulate into the destination.
    let (a, b, c, mask) = if accumulate {
        let s = fetch32(w, inst, 2, if matches!(kind, Elem::F16) { Ty::F16 } else { Ty::B32 })?;
        (s.v[0], s.v[1], *w.vreg(inst.dst)?, s.mask)
    } else {
        let ty = if matches!(kind, Elem::F16) { Ty::F16 } else { Ty::B32 };
        let c_ty = if matches!(kind, Elem::F16) { Ty::F32 } else { Ty::B32 };
        (w.src32_of(inst, 0, ty)?.lanes(), w.src32_of(inst, 1, ty)?.lanes(), w.src32_of(inst, 2, c_ty)?.lanes(), w.exec())
    };
    let mut out = [0u32; LANES];
    match kind {
        Elem::F16 => {
            require_rne(w, inst)?;
            if inst.mods.omod != 0 {
                return Err(FaultKind::NotImplemented(format!("{} with omod", inst.op.name())).into());
            }
            for l in 0..LANES {
                let mut acc = flush_in32(w, f32_mod(inst, c[l])) as f64;
                for h in 0..2 {
                    acc += half(w, inst, 0, h, a[l]) * half(w, inst, 1, h, b[l]);
                }
                out[l] = out32(w, inst, acc as f32);
            }
        }
        _ => {
            for l in 0..LANES {
                out[l] = match kind {
                    Elem::I16 | Elem::U16 => {
                        let (x, y) = (sel16(inst, 0, a[l]), sel16(inst, 1, b[l]));
                        dot_int(kind.signed(), 16, x, y, c[l], inst.mods.clamp)
                    }
                    Elem::I8 | Elem::U8 => dot_int(kind.signed(), 8, a[l], b[l], c[l], inst.mods.clamp),
                    _ => dot_int(kind.signed(), 4, a[l], b[l], c[l], inst.mods.clamp),
                };
            }
        }
    }
    write32(w, inst, mask, &out)
}

/// The accumulator of `v_dot2_f32_f16` (VOP3P neg_lo[2] negates it; abs is not encodable).
fn f32_mod(inst: &Inst, x: u32) -> f32 {
    if inst.enc == Enc::Vop3p && inst.mods.neg & 4 != 0 { f32::from_bits(x ^ 0x8000_0000) } else { f32::from_bits(x) }
}

/// Half `h` of f16 source `j`: VOP3P op_sel (h = 0) / op_sel_hi (h = 1) pick the register half,
/// neg_lo / neg_hi negate; the VOP2/DPP/SDWA forms use neg/abs of the whole operand.
fn half(w: &Wave, inst: &Inst, j: usize, h: usize, x: u32) -> f64 {
    let b = if inst.enc == Enc::Vop3p {
        let hi = if h == 0 { inst.mods.op_sel >> j & 1 } else { inst.mods.op_sel_hi >> j & 1 };
        let neg = if h == 0 { inst.mods.neg } else { inst.mods.neg_hi };
        let b = if hi == 1 { (x >> 16) as u16 } else { x as u16 };
        if neg >> j & 1 == 1 { b ^ 0x8000 } else { b }
    } else {
        let mut b = (x >> (16 * h)) as u16;
        if inst.mods.abs >> j & 1 == 1 {
            b &= 0x7fff;
        }
        if inst.mods.neg >> j & 1 == 1 {
            b ^= 0x8000;
        }
        b
    };
    f16_flush_in(w, b)
}

/// A packed 16-bit integer operand rearranged by VOP3P op_sel/op_sel_hi (low, high).
fn sel16(inst: &Inst, j: usize, x: u32) -> u32 {
    if inst.enc != Enc::Vop3p {
        return x;
    }
    let pick = |hi: u8| if hi >> j & 1 == 1 { x >> 16 } else { x & 0xffff };
    pick(inst.mods.op_sel) | pick(inst.mods.op_sel_hi) << 16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_dots_wrap_or_saturate() {
        // 4 x (-128 * -128) = 65536
        assert_eq!(dot_int(true, 8, 0x8080_8080, 0x8080_8080, 0, false), 65536);
        assert_eq!(dot_int(false, 8, 0xffff_ffff, 0xffff_ffff, 1, false), 4 * 255 * 255 + 1);
        assert_eq!(dot_int(true, 16, 0x7fff_7fff, 0x7fff_7fff, 0x7fff_ffff, true), i32::MAX as u32);
        assert_eq!(dot_int(true, 16, 0x7fff_7fff, 0x7fff_7fff, 0x7fff_ffff, false), 0x7fff_ffffu32.wrapping_add(2 * 0x3fff_0001));
        assert_eq!(dot_int(false, 4, 0xffff_ffff, 0x1111_1111, u32::MAX, true), u32::MAX);
        assert_eq!(dot_int(true, 4, 0x0000_0008, 0x0000_0008, 0, false), 64); // -8 * -8
    }
}
