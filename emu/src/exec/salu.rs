//! Scalar ALU: SOP1, SOP2, SOPK, SOPC.
//!
//! SCC rules follow the ISA: integer add/sub set the carry (unsigned) or overflow (signed);
//! bitwise ops, shifts and BFE set SCC = result != 0; min/max set SCC when src0 was chosen;
//! compares set SCC to the result; moves and s_mul_i32 leave it alone.

use super::error::FaultKind;
use super::step::{Exec, Flow, Trouble, not_implemented};
use super::wave::{Ty, Wave};
use crate::isa::{Inst, Op, Opnd};

/// Hardware register ids of `s_getreg`/`s_setreg` (gfx9).
mod hwreg {
    pub const MODE: u32 = 1;
    pub const STATUS: u32 = 2;
    pub const TRAPSTS: u32 = 3;
    pub const HW_ID: u32 = 4;
    pub const GPR_ALLOC: u32 = 5;
    pub const LDS_ALLOC: u32 = 6;
    pub const IB_STS: u32 = 7;
}

#[inline]
fn s32(w: &Wave, inst: &Inst, i: usize) -> Result<u32, FaultKind> {
    w.sval32(inst.src[i], inst.literal, Ty::B32)
}
#[inline]
fn s64(w: &Wave, inst: &Inst, i: usize) -> Result<u64, FaultKind> {
    w.sval64(inst.src[i], inst.literal, Ty::U64)
}

/// Writes a 32-bit result and sets SCC = result != 0.
fn bit32(w: &mut Wave, inst: &Inst, r: u32) -> Exec {
    w.set_s32(inst.dst, r)?;
    w.scc = r != 0;
    Ok(Flow::Next)
}
fn bit64(w: &mut Wave, inst: &Inst, r: u64) -> Exec {
    w.set_s64(inst.dst, r)?;
    w.scc = r != 0;
    Ok(Flow::Next)
}
fn mov32(w: &mut Wave, inst: &Inst, r: u32) -> Exec {
    w.set_s32(inst.dst, r)?;
    Ok(Flow::Next)
}
fn mov64(w: &mut Wave, inst: &Inst, r: u64) -> Exec {
    w.set_s64(inst.dst, r)?;
    Ok(Flow::Next)
}

/// `s_*_saveexec_b64`: dst = EXEC; EXEC = f(src, EXEC); SCC = EXEC != 0.
fn saveexec(w: &mut Wave, inst: &Inst, f: impl Fn(u64, u64) -> u64) -> Exec {
    let s = s64(w, inst, 0)?;
    let old = w.exec();
    w.set_s64(inst.dst, old)?;
    let new = f(s, old);
    w.set_exec(new);
    w.scc = new != 0;
    Ok(Flow::Next)
}

/// `s_*_wrexec_b64`: EXEC = dst = f(src, EXEC); SCC = result != 0.
fn wrexec(w: &mut Wave, inst: &Inst, f: impl Fn(u64, u64) -> u64) -> Exec {
    let s = s64(w, inst, 0)?;
    let new = f(s, w.exec());
    w.set_exec(new);
    w.set_s64(inst.dst, new)?;
    w.scc = new != 0;
    Ok(Flow::Next)
}

fn bfe32(v: u32, ctl: u32, signed: bool) -> u32 {
    let off = ctl & 31;
    let width = (ctl >> 16) & 0x7f;
    if width == 0 {
        return 0;
    }
    let x = v >> off;
    if width >= 32 {
        return x;
    }
    let mask = (1u32 << width) - 1;
    let r = x & mask;
    if signed && r >> (width - 1) & 1 == 1 { r | !mask } else { r }
}

fn bfe64(v: u64, ctl: u32, signed: bool) -> u64 {
    let off = ctl & 63;
    let width = (ctl >> 16) & 0x7f;
    if width == 0 {
        return 0;
    }
    let x = v >> off;
    if width >= 64 {
        return x;
    }
    let mask = (1u64 << width) - 1;
    let r = x & mask;
    if signed && r >> (width - 1) & 1 == 1 { r | !mask } else { r }
}

/// s_flbit_i32_b32: index of the first one from the MSB, or -1.
fn flbit(v: u64, bits: u32) -> u32 {
    if v == 0 { u32::MAX } else { v.leading_zeros() - (64 - bits) }
}

/// s_flbit_i32: count of leading bits equal to the sign bit, or -1 if all are the same.
fn flbit_signed(v: u64, bits: u32) -> u32 {
    let sign = v >> (bits - 1) & 1;
    let x = if sign == 1 { !v } else { v } & if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    if x == 0 { u32::MAX } else { x.leading_zeros() - (64 - bits) }
}

fn cmp(w: &mut Wave, r: bool) -> Exec {
    w.scc = r;
    Ok(Flow::Next)
}

/// Quadmask: bit i of the result = any of bits 4i..4i+3 of the source.
fn quadmask(v: u64, n: u32) -> u64 {
    (0..n).filter(|i| v >> (4 * i) & 0xf != 0).fold(0, |acc, i| acc | 1 << i)
}

/// Whole-quad mode: each result nibble is 0xf when any bit of the source nibble is set.
fn wqm(v: u64) -> u64 {
    (0..16).filter(|i| v >> (4 * i) & 0xf != 0).fold(0, |acc, i| acc | 0xf << (4 * i))
}

fn hwreg_read(w: &Wave, id: u32) -> Result<u32, FaultKind> {
    Ok(match id {
        hwreg::MODE => w.mode.to_bits(),
        hwreg::STATUS => (w.scc as u32) | ((w.exec() == 0) as u32) << 9 | ((w.vcc() == 0) as u32) << 10,
        hwreg::TRAPSTS => w.trapsts,
        hwreg::HW_ID => w.index & 0xf,
        hwreg::GPR_ALLOC | hwreg::LDS_ALLOC | hwreg::IB_STS => 0,
        _ => return Err(FaultKind::NotImplemented(format!("s_getreg of hardware register {id}"))),
    })
}

fn hwreg_write(w: &mut Wave, id: u32, offset: u32, size: u32, v: u32) -> Result<(), FaultKind> {
    let mask = if size >= 32 { u32::MAX } else { ((1u32 << size) - 1) << offset };
    let merge = |old: u32| (old & !mask) | ((v << offset) & mask);
    match id {
        hwreg::MODE => w.mode = super::wave::FloatMode::from_bits(merge(w.mode.to_bits())),
        hwreg::TRAPSTS => w.trapsts = merge(w.trapsts),
        _ => return Err(FaultKind::NotImplemented(format!("s_setreg of hardware register {id}"))),
    }
    Ok(())
}

/// hwreg(id, offset, size) fields of the SOPK immediate.
fn hwreg_fields(imm: i32) -> (u32, u32, u32) {
    let v = imm as u32 & 0xffff;
    (v & 0x3f, (v >> 6) & 0x1f, ((v >> 11) & 0x1f) + 1)
}

/// Executes one SOP1/SOP2/SOPK/SOPC instruction.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Exec {
    use Op::*;
    let k = inst.imm;
    match inst.op {
        // ---- SOP2 ----
        SAddU32 => {
            let (a, b) = (s32(w, inst, 0)?, s32(w, inst, 1)?);
            let (r, c) = a.overflowing_add(b);
            w.scc = c;
            mov32(w, inst, r)
        }
        SSubU32 => {
            let (a, b) = (s32(w, inst, 0)?, s32(w, inst, 1)?);
            let (r, c) = a.overflowing_sub(b);
            w.scc = c;
            mov32(w, inst, r)
        }
        SAddI32 => {
            let (a, b) = (s32(w, inst, 0)? as i32, s32(w, inst, 1)? as i32);
            let (r, o) = a.overflowing_add(b);
            w.scc = o;
            mov32(w, inst, r as u32)
        }
        SSubI32 => {
            let (a, b) = (s32(w, inst, 0)? as i32, s32(w, inst, 1)? as i32);
            let (r, o) = a.overflowing_sub(b);
            w.scc = o;
            mov32(w, inst, r as u32)
        }
        SAddcU32 => {
            let (a, b) = (s32(w, inst, 0)? as u64, s32(w, inst, 1)? as u64);
            let r = a + b + w.scc as u64;
            w.scc = r >> 32 != 0;
            mov32(w, inst, r as u32)
        }
        SSubbU32 => {
            let (a, b) = (s32(w, inst, 0)? as u64, s32(w, inst, 1)? as u64);
            let sub = b + w.scc as u64;
            w.scc = sub > a;
            mov32(w, inst, a.wrapping_sub(sub) as u32)
        }
        SMinI32 | SMaxI32 => {
            let (a, b) = (s32(w, inst, 0)? as i32, s32(w, inst, 1)? as i32);
            let pick_a = if inst.op == SMinI32 { a < b } else { a > b };
            w.scc = pick_a;
            mov32(w, inst, if pick_a { a } else { b } as u32)
        }
        SMinU32 | SMaxU32 => {
            let (a, b) = (s32(w, inst, 0)?, s32(w, inst, 1)?);
            let pick_a = if inst.op == SMinU32 { a < b } else { a > b };
            w.scc = pick_a;
            mov32(w, inst, if pick_a { a } else { b })
        }
        SCselectB32 => {
            let r = if w.scc { s32(w, inst, 0)? } else { s32(w, inst, 1)? };
            mov32(w, inst, r)
        }
        SCselectB64 => {
            let r = if w.scc { s64(w, inst, 0)? } else { s64(w, inst, 1)? };
            mov64(w, inst, r)
        }
        SAndB32 => bit32(w, inst, s32(w, inst, 0)? & s32(w, inst, 1)?),
        SAndB64 => bit64(w, inst, s64(w, inst, 0)? & s64(w, inst, 1)?),
        SOrB32 => bit32(w, inst, s32(w, inst, 0)? | s32(w, inst, 1)?),
        SOrB64 => bit64(w, inst, s64(w, inst, 0)? | s64(w, inst, 1)?),
        SXorB32 => bit32(w, inst, s32(w, inst, 0)? ^ s32(w, inst, 1)?),
        SXorB64 => bit64(w, inst, s64(w, inst, 0)? ^ s64(w, inst, 1)?),
        SAndn2B32 => bit32(w, inst, s32(w, inst, 0)? & !s32(w, inst, 1)?),
        SAndn2B64 => bit64(w, inst, s64(w, inst, 0)? & !s64(w, inst, 1)?),
        SOrn2B32 => bit32(w, inst, s32(w, inst, 0)? | !s32(w, inst, 1)?),
        SOrn2B64 => bit64(w, inst, s64(w, inst, 0)? | !s64(w, inst, 1)?),
        SNandB32 => bit32(w, inst, !(s32(w, inst, 0)? & s32(w, inst, 1)?)),
        SNandB64 => bit64(w, inst, !(s64(w, inst, 0)? & s64(w, inst, 1)?)),
        SNorB32 => bit32(w, inst, !(s32(w, inst, 0)? | s32(w, inst, 1)?)),
        SNorB64 => bit64(w, inst, !(s64(w, inst, 0)? | s64(w, inst, 1)?)),
        SXnorB32 => bit32(w, inst, !(s32(w, inst, 0)? ^ s32(w, inst, 1)?)),
        SXnorB64 => bit64(w, inst, !(s64(w, inst, 0)? ^ s64(w, inst, 1)?)),
        SLshlB32 => bit32(w, inst, s32(w, inst, 0)? << (s32(w, inst, 1)? & 31)),
        SLshlB64 => bit64(w, inst, s64(w, inst, 0)? << (s32(w, inst, 1)? & 63)),
        SLshrB32 => bit32(w, inst, s32(w, inst, 0)? >> (s32(w, inst, 1)? & 31)),
        SLshrB64 => bit64(w, inst, s64(w, inst, 0)? >> (s32(w, inst, 1)? & 63)),
        SAshrI32 => bit32(w, inst, ((s32(w, inst, 0)? as i32) >> (s32(w, inst, 1)? & 31)) as u32),
        SAshrI64 => bit64(w, inst, ((s64(w, inst, 0)? as i64) >> (s32(w, inst, 1)? & 63)) as u64),
        SBfmB32 => {
            let (a, b) = (s32(w, inst, 0)?, s32(w, inst, 1)?);
            mov32(w, inst, ((1u64 << (a & 31)) as u32).wrapping_sub(1) << (b & 31))
        }
        SBfmB64 => {
            let (a, b) = (s32(w, inst, 0)?, s32(w, inst, 1)?);
            let m = if a & 63 == 0 { 0 } else { u64::MAX >> (64 - (a & 63)) };
            mov64(w, inst, m << (b & 63))
        }
        SMulI32 => mov32(w, inst, (s32(w, inst, 0)? as i32).wrapping_mul(s32(w, inst, 1)? as i32) as u32),
        SMulHiU32 => mov32(w, inst, ((s32(w, inst, 0)? as u64 * s32(w, inst, 1)? as u64) >> 32) as u32),
        SMulHiI32 => mov32(w, inst, ((s32(w, inst, 0)? as i32 as i64 * s32(w, inst, 1)? as i32 as i64) >> 32) as u32),
        SBfeU32 => bit32(w, inst, bfe32(s32(w, inst, 0)?, s32(w, inst, 1)?, false)),
        SBfeI32 => bit32(w, inst, bfe32(s32(w, inst, 0)?, s32(w, inst, 1)?, true)),
        SBfeU64 => bit64(w, inst, bfe64(s64(w, inst, 0)?, s32(w, inst, 1)?, false)),
        SBfeI64 => bit64(w, inst, bfe64(w.sval64(inst.src[0], inst.literal, Ty::I64)?, s32(w, inst, 1)?, true)),
        SAbsdiffI32 => {
            let (a, b) = (s32(w, inst, 0)? as i32, s32(w, inst, 1)? as i32);
            bit32(w, inst, (a as i64 - b as i64).unsigned_abs() as u32)
        }
        SLshl1AddU32 | SLshl2AddU32 | SLshl3AddU32 | SLshl4AddU32 => {
            let sh = match inst.op {
                SLshl1AddU32 => 1,
                SLshl2AddU32 => 2,
                SLshl3AddU32 => 3,
                _ => 4,
            };
            let r = ((s32(w, inst, 0)? as u64) << sh) + s32(w, inst, 1)? as u64;
            w.scc = r >> 32 != 0;
            mov32(w, inst, r as u32)
        }
        SPackLlB32B16 => mov32(w, inst, (s32(w, inst, 0)? & 0xffff) | s32(w, inst, 1)? << 16),
        SPackLhB32B16 => mov32(w, inst, (s32(w, inst, 0)? & 0xffff) | (s32(w, inst, 1)? & 0xffff_0000)),
        SPackHhB32B16 => mov32(w, inst, (s32(w, inst, 0)? >> 16) | (s32(w, inst, 1)? & 0xffff_0000)),

        // ---- SOP1 ----
        SMovB32 => mov32(w, inst, s32(w, inst, 0)?),
        SMovB64 => mov64(w, inst, s64(w, inst, 0)?),
        SCmovB32 => {
            if w.scc {
                let v = s32(w, inst, 0)?;
                mov32(w, inst, v)
            } else {
                Ok(Flow::Next)
            }
        }
        SCmovB64 => {
            if w.scc {
                let v = s64(w, inst, 0)?;
                mov64(w, inst, v)
            } else {
                Ok(Flow::Next)
            }
        }
        SNotB32 => bit32(w, inst, !s32(w, inst, 0)?),
        SNotB64 => bit64(w, inst, !s64(w, inst, 0)?),
        SWqmB32 => bit32(w, inst, wqm(s32(w, inst, 0)? as u64) as u32),
        SWqmB64 => bit64(w, inst, wqm(s64(w, inst, 0)?)),
        SBrevB32 => mov32(w, inst, s32(w, inst, 0)?.reverse_bits()),
        SBrevB64 => mov64(w, inst, s64(w, inst, 0)?.reverse_bits()),
        SBcnt0I32B32 => bit32(w, inst, s32(w, inst, 0)?.count_zeros()),
        SBcnt0I32B64 => bit32(w, inst, s64(w, inst, 0)?.count_zeros()),
        SBcnt1I32B32 => bit32(w, inst, s32(w, inst, 0)?.count_ones()),
        SBcnt1I32B64 => bit32(w, inst, s64(w, inst, 0)?.count_ones()),
        SFf0I32B32 => {
            let v = !s32(w, inst, 0)?;
            mov32(w, inst, if v == 0 { u32::MAX } else { v.trailing_zeros() })
        }
        SFf0I32B64 => {
            let v = !s64(w, inst, 0)?;
            mov32(w, inst, if v == 0 { u32::MAX } else { v.trailing_zeros() })
        }
        SFf1I32B32 => {
            let v = s32(w, inst, 0)?;
            mov32(w, inst, if v == 0 { u32::MAX } else { v.trailing_zeros() })
        }
        SFf1I32B64 => {
            let v = s64(w, inst, 0)?;
            mov32(w, inst, if v == 0 { u32::MAX } else { v.trailing_zeros() })
        }
        SFlbitI32B32 => mov32(w, inst, flbit(s32(w, inst, 0)? as u64, 32)),
        SFlbitI32B64 => mov32(w, inst, flbit(s64(w, inst, 0)?, 64)),
        SFlbitI32 => mov32(w, inst, flbit_signed(s32(w, inst, 0)? as u64, 32)),
        SFlbitI32I64 => mov32(w, inst, flbit_signed(s64(w, inst, 0)?, 64)),
        SSextI32I8 => mov32(w, inst, s32(w, inst, 0)? as u8 as i8 as i32 as u32),
        SSextI32I16 => mov32(w, inst, s32(w, inst, 0)? as u16 as i16 as i32 as u32),
        SBitset0B32 | SBitset1B32 => {
            let bit = s32(w, inst, 0)? & 31;
            let old = w.sval32(inst.dst, 0, Ty::B32)?;
            let r = if inst.op == SBitset0B32 { old & !(1 << bit) } else { old | 1 << bit };
            mov32(w, inst, r)
        }
        SBitset0B64 | SBitset1B64 => {
            let bit = s32(w, inst, 0)? & 63;
            let old = w.sval64(inst.dst, 0, Ty::U64)?;
            let r = if inst.op == SBitset0B64 { old & !(1 << bit) } else { old | 1 << bit };
            mov64(w, inst, r)
        }
        SGetpcB64 => mov64(w, inst, w.pc + inst.size as u64),
        SSetpcB64 => Ok(Flow::Jump(s64(w, inst, 0)?)),
        SSwappcB64 => {
            let target = s64(w, inst, 0)?;
            w.set_s64(inst.dst, w.pc + inst.size as u64)?;
            Ok(Flow::Jump(target))
        }
        SAndSaveexecB64 => saveexec(w, inst, |s, e| s & e),
        SOrSaveexecB64 => saveexec(w, inst, |s, e| s | e),
        SXorSaveexecB64 => saveexec(w, inst, |s, e| s ^ e),
        SAndn2SaveexecB64 => saveexec(w, inst, |s, e| s & !e),
        SOrn2SaveexecB64 => saveexec(w, inst, |s, e| s | !e),
        SNandSaveexecB64 => saveexec(w, inst, |s, e| !(s & e)),
        SNorSaveexecB64 => saveexec(w, inst, |s, e| !(s | e)),
        SXnorSaveexecB64 => saveexec(w, inst, |s, e| !(s ^ e)),
        SAndn1SaveexecB64 => saveexec(w, inst, |s, e| !s & e),
        SOrn1SaveexecB64 => saveexec(w, inst, |s, e| !s | e),
        SAndn1WrexecB64 => wrexec(w, inst, |s, e| !s & e),
        SAndn2WrexecB64 => wrexec(w, inst, |s, e| s & !e),
        SQuadmaskB32 => bit32(w, inst, quadmask(s32(w, inst, 0)? as u64, 8) as u32),
        SQuadmaskB64 => bit64(w, inst, quadmask(s64(w, inst, 0)?, 16)),
        SAbsI32 => bit32(w, inst, (s32(w, inst, 0)? as i32).unsigned_abs()),
        SMovrelsB32 => {
            let idx = w.m0() as u16;
            let v = w.sval32(Opnd(inst.src[0].0 + idx), 0, Ty::B32)?;
            mov32(w, inst, v)
        }
        SMovreldB32 => {
            let idx = w.m0() as u16;
            let v = s32(w, inst, 0)?;
            w.set_s32(Opnd(inst.dst.0 + idx), v)?;
            Ok(Flow::Next)
        }
        SBitreplicateB64B32 => {
            let v = s32(w, inst, 0)?;
            mov64(w, inst, (0..32).filter(|i| v >> i & 1 == 1).fold(0u64, |acc, i| acc | 3 << (2 * i)))
        }

        // ---- SOPK ----
        SMovkI32 => mov32(w, inst, k as i16 as i32 as u32),
        SCmovkI32 => {
            if w.scc {
                mov32(w, inst, k as i16 as i32 as u32)
            } else {
                Ok(Flow::Next)
            }
        }
        SCmpkEqI32 | SCmpkLgI32 | SCmpkGtI32 | SCmpkGeI32 | SCmpkLtI32 | SCmpkLeI32 => {
            let a = w.sval32(inst.dst, 0, Ty::B32)? as i32;
            let b = k as i16 as i32;
            let r = match inst.op {
                SCmpkEqI32 => a == b,
                SCmpkLgI32 => a != b,
                SCmpkGtI32 => a > b,
                SCmpkGeI32 => a >= b,
                SCmpkLtI32 => a < b,
                _ => a <= b,
            };
            cmp(w, r)
        }
        SCmpkEqU32 | SCmpkLgU32 | SCmpkGtU32 | SCmpkGeU32 | SCmpkLtU32 | SCmpkLeU32 => {
            let a = w.sval32(inst.dst, 0, Ty::B32)?;
            let b = k as u32 & 0xffff;
            let r = match inst.op {
                SCmpkEqU32 => a == b,
                SCmpkLgU32 => a != b,
                SCmpkGtU32 => a > b,
                SCmpkGeU32 => a >= b,
                SCmpkLtU32 => a < b,
                _ => a <= b,
            };
            cmp(w, r)
        }
        SAddkI32 => {
            let a = w.sval32(inst.dst, 0, Ty::B32)? as i32;
            let (r, o) = a.overflowing_add(k as i16 as i32);
            w.scc = o;
            mov32(w, inst, r as u32)
        }
        SMulkI32 => {
            let a = w.sval32(inst.dst, 0, Ty::B32)? as i32;
            mov32(w, inst, a.wrapping_mul(k as i16 as i32) as u32)
        }
        SGetregB32 => {
            let (id, off, size) = hwreg_fields(k);
            let v = hwreg_read(w, id)?;
            let mask = if size >= 32 { u32::MAX } else { (1u32 << size) - 1 };
            mov32(w, inst, (v >> off) & mask)
        }
        SSetregB32 => {
            let (id, off, size) = hwreg_fields(k);
            let v = w.sval32(inst.dst, 0, Ty::B32)?;
            hwreg_write(w, id, off, size, v)?;
            Ok(Flow::Next)
        }
        SSetregImm32B32 => {
            let (id, off, size) = hwreg_fields(k);
            hwreg_write(w, id, off, size, inst.literal)?;
            Ok(Flow::Next)
        }
        SCallB64 => {
            w.set_s64(inst.dst, w.pc + inst.size as u64)?;
            Ok(Flow::Jump((w.pc as i64 + 4 + 4 * k as i16 as i64) as u64))
        }

        // ---- SOPC ----
        SCmpEqI32 | SCmpEqU32 => cmp(w, s32(w, inst, 0)? == s32(w, inst, 1)?),
        SCmpLgI32 | SCmpLgU32 => cmp(w, s32(w, inst, 0)? != s32(w, inst, 1)?),
        SCmpGtI32 => cmp(w, (s32(w, inst, 0)? as i32) > s32(w, inst, 1)? as i32),
        SCmpGeI32 => cmp(w, (s32(w, inst, 0)? as i32) >= s32(w, inst, 1)? as i32),
        SCmpLtI32 => cmp(w, (s32(w, inst, 0)? as i32) < s32(w, inst, 1)? as i32),
        SCmpLeI32 => cmp(w, (s32(w, inst, 0)? as i32) <= s32(w, inst, 1)? as i32),
        SCmpGtU32 => cmp(w, s32(w, inst, 0)? > s32(w, inst, 1)?),
        SCmpGeU32 => cmp(w, s32(w, inst, 0)? >= s32(w, inst, 1)?),
        SCmpLtU32 => cmp(w, s32(w, inst, 0)? < s32(w, inst, 1)?),
        SCmpLeU32 => cmp(w, s32(w, inst, 0)? <= s32(w, inst, 1)?),
        SCmpEqU64 => cmp(w, s64(w, inst, 0)? == s64(w, inst, 1)?),
        SCmpLgU64 => cmp(w, s64(w, inst, 0)? != s64(w, inst, 1)?),
        SBitcmp0B32 => cmp(w, s32(w, inst, 0)? >> (s32(w, inst, 1)? & 31) & 1 == 0),
        SBitcmp1B32 => cmp(w, s32(w, inst, 0)? >> (s32(w, inst, 1)? & 31) & 1 == 1),
        // CDNA3 ISA, S_SETVSKIP: VSKIP = S0[S1[4:0]] (MODE bit 28); while set, vector
        // instructions are not issued (`workgroup::run_wave` skips them).
        SSetvskip => {
            w.mode.vskip = s32(w, inst, 0)? >> (s32(w, inst, 1)? & 31) & 1 == 1;
            Ok(Flow::Next)
        }
        SBitcmp0B64 => cmp(w, s64(w, inst, 0)? >> (s32(w, inst, 1)? & 63) & 1 == 0),
        SBitcmp1B64 => cmp(w, s64(w, inst, 0)? >> (s32(w, inst, 1)? & 63) & 1 == 1),

        _ => Err(not_implemented(inst)),
    }
    .map_err(|t: Trouble| t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{Enc, Ext, Mods};

    fn inst(op: Op, enc: Enc, dst: Opnd, src: [Opnd; 2]) -> Inst {
        Inst {
            op,
            enc,
            size: 4,
            dst,
            sdst: Opnd::NONE,
            src: [src[0], src[1], Opnd::NONE, Opnd::NONE],
            literal: 0,
            imm: 0,
            mods: Mods::default(),
            ext: Ext::None,
            flags: 0,
        }
    }

    #[test]
    fn add_with_carry_chain_computes_64_bit_sums() {
        let mut w = Wave::new(1, 0);
        w.s[0] = 0xFFFF_FFFF;
        w.s[1] = 1;
        w.s[2] = 1;
        w.s[3] = 2;
        exec(&mut w, &inst(Op::SAddU32, Enc::Sop2, Opnd(4), [Opnd(0), Opnd(2)])).unwrap();
        assert!(w.scc);
        exec(&mut w, &inst(Op::SAddcU32, Enc::Sop2, Opnd(5), [Opnd(1), Opnd(3)])).unwrap();
        assert_eq!((w.s[4], w.s[5]), (0, 4)); // 0x1_FFFFFFFF + 0x2_00000001 = 0x4_00000000
        assert!(!w.scc);
    }

    #[test]
    fn saveexec_saves_and_masks() {
        let mut w = Wave::new(1, 0);
        w.set_exec(0xF0F0);
        w.set_vcc(0xFF00);
        exec(&mut w, &inst(Op::SAndSaveexecB64, Enc::Sop1, Opnd(10), [Opnd::VCC, Opnd::NONE])).unwrap();
        assert_eq!(w.exec(), 0xF000);
        assert_eq!(w.s[10], 0xF0F0);
        assert!(w.scc);
    }

    #[test]
    fn bitfield_extract_signed_and_unsigned() {
        assert_eq!(bfe32(0xABCD_1234, 8 | 8 << 16, false), 0x12);
        assert_eq!(bfe32(0x0000_F000, 12 | 4 << 16, true), u32::MAX);
        assert_eq!(bfe64(0x8000_0000_0000_0000, 60 | 4 << 16, true), u64::MAX - 7);
    }

    #[test]
    fn find_first_and_leading_bits() {
        assert_eq!(flbit(1, 32), 31);
        assert_eq!(flbit(0, 32), u32::MAX);
        assert_eq!(flbit_signed(0xFFFF_FFFF, 32), u32::MAX);
        assert_eq!(flbit_signed(0x4000_0000, 32), 1);
        assert_eq!(flbit_signed(0xC000_0000, 32), 2);
    }

    #[test]
    fn min_max_set_scc_when_src0_wins() {
        let mut w = Wave::new(1, 0);
        w.s[0] = (-5i32) as u32;
        w.s[1] = 3;
        exec(&mut w, &inst(Op::SMinI32, Enc::Sop2, Opnd(2), [Opnd(0), Opnd(1)])).unwrap();
        assert_eq!(w.s[2] as i32, -5);
        assert!(w.scc);
        exec(&mut w, &inst(Op::SMinU32, Enc::Sop2, Opnd(2), [Opnd(0), Opnd(1)])).unwrap();
        assert_eq!(w.s[2], 3);
        assert!(!w.scc);
    }
}
