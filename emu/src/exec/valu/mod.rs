//! Vector ALU (VOP1, VOP2, VOPC, VOP3, and VOP3P packed math).
//!
//! Every encoding of an op runs the same code: sources are fetched for all 64 lanes with the
//! encoding's extras applied (DPP lane permutation and bound control, SDWA sub-dword selects),
//! the op computes per lane, and the result is written with the output modifiers (omod, clamp,
//! SDWA dst_sel/dst_unused, DPP row/bank masks) to the lanes EXEC enables. Float abs/neg source
//! modifiers are applied by the typed helpers, since the sign bit depends on the width.

mod cmp;
mod cvt;
mod div;
mod dot;
mod dpp;
mod f16;
mod fast;
mod float;
mod fp8;
mod i16;
mod int;
mod lane;
mod packed;
mod round;
mod sad;
mod sdwa;
#[cfg(test)]
mod tests;

use super::error::FaultKind;
use super::step::{Ctx, Exec, Flow, not_implemented};
use super::wave::{LANES, Src32, Ty, VReg, Wave, ZERO_VREG};
use crate::isa::{Enc, Ext, Inst, Op, Opnd};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

pub(crate) use packed::exec_vop3p;

/// The lanes an instruction writes: EXEC, minus DPP-disabled lanes.
pub(crate) struct Fetched {
    /// Raw 32-bit sources (src0..src2) per lane, after DPP/SDWA selection.
    pub v: [VReg; 3],
    /// Lanes that will be written.
    pub mask: u64,
}

/// Fetches the first `n` sources as 32-bit values of type `ty` for every lane.
pub(crate) fn fetch32(w: &Wave, inst: &Inst, n: usize, ty: Ty) -> Result<Fetched, FaultKind> {
    let mut f = Fetched { v: [[0; LANES]; 3], mask: w.exec() };
    for i in 0..n {
        f.v[i] = w.src32(inst.src[i], inst.literal, ty)?.lanes();
    }
    match inst.ext {
        Ext::None => {}
        Ext::Dpp(d) => {
            let (vals, valid) = dpp::permute(&f.v[0], d.ctrl, f.mask)?;
            f.v[0] = vals;
            for l in 0..LANES {
                if valid >> l & 1 == 0 {
                    if d.bound_ctrl {
                        f.v[0][l] = 0;
                    } else {
                        f.mask &= !(1 << l);
                    }
                }
            }
            f.mask &= dpp::row_bank_mask(d.row_mask, d.bank_mask);
        }
        Ext::Sdwa(s) => {
            sdwa::select(&mut f.v[0], s.src0_sel, s.src0_sext);
            if n > 1 {
                sdwa::select(&mut f.v[1], s.src1_sel, s.src1_sext);
            }
        }
    }
    Ok(f)
}

/// Runs `f(lane, sources)` for every lane on the first `N` 32-bit sources read in place (no
/// per-instruction copies of the registers), for instructions without DPP or SDWA; `None` for
/// those with an extension, which take [`fetch32`]'s path. The caller writes the results to the
/// lanes EXEC enables.
#[inline(always)]
pub(crate) fn plain32<const N: usize>(w: &Wave, inst: &Inst, ty: Ty, mut f: impl FnMut(usize, [u32; N])) -> Option<Result<(), FaultKind>> {
    if inst.ext != Ext::None {
        return None;
    }
    let mut s = [super::wave::Src32::Uni(0); N];
    for (i, si) in s.iter_mut().enumerate() {
        *si = match w.src32_of(inst, i, ty) {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
    }
    for l in 0..LANES {
        f(l, core::array::from_fn(|i| s[i].get(l)));
    }
    Some(Ok(()))
}

/// `out[l] = f(sources)` for every lane on the first `N` (1 to 3) 32-bit sources read in place
/// (a constant or scalar source filled into a register's worth, only then), for instructions
/// without DPP or SDWA, through [`cpu::map_lanes`](super::cpu::map_lanes); `None` for those
/// with an extension, which take [`fetch32`]'s path. The caller writes `out` to the lanes EXEC
/// enables.
#[inline(always)]
pub(crate) fn map32<const N: usize>(
    w: &Wave,
    inst: &Inst,
    ty: Ty,
    out: &mut VReg,
    f: impl Fn([u32; N]) -> u32,
) -> Option<Result<(), FaultKind>> {
    if inst.ext != Ext::None {
        return None;
    }
    // (Sources past N: a register of zeros, never read.)
    let src = |i: usize| if i < N { w.src32_of(inst, i, ty) } else { Ok(Src32::Vec(&ZERO_VREG)) };
    let (s0, s1, s2) = match (src(0), src(1), src(2)) {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        (Err(e), ..) | (_, Err(e), _) | (.., Err(e)) => return Some(Err(e)),
    };
    in_place(s0, move |a| {
        in_place(s1, move |b| {
            in_place(s2, move |c| {
                let all = [a, b, c];
                super::cpu::map_lanes::<N, _>(out, core::array::from_fn(|i| all[i]), f)
            })
        })
    });
    Some(Ok(()))
}

/// `k` of the lanes of `s`: its register, or a register's worth of its value. For lane maps
/// handed on as closures (`map32`, the packed f32 ops, `v_dot2c_f32_f16`); where the lanes
/// feed straight into a loop, [`lanes_or_fill`] measured faster (compares, `v_cndmask_b32`).
#[inline(always)]
pub(crate) fn in_place<R>(s: Src32<'_>, k: impl FnOnce(&VReg) -> R) -> R {
    match s {
        Src32::Vec(r) => k(r),
        Src32::Uni(v) => k(&[v; LANES]),
    }
}

/// The lanes of `s`: its register, or `fill` filled with its value.
#[inline(always)]
pub(crate) fn lanes_or_fill<'a>(s: Src32<'a>, fill: &'a mut VReg) -> &'a VReg {
    match s {
        Src32::Vec(r) => r,
        Src32::Uni(v) => {
            *fill = [v; LANES];
            fill
        }
    }
}

/// Writes per-lane results of an instruction without DPP/SDWA to the lanes EXEC enables.
#[inline(always)]
pub(crate) fn write_plain32(w: &mut Wave, inst: &Inst, vals: &VReg) -> Exec {
    let mask = w.exec();
    w.write_v32(inst.dst, mask, vals)?;
    Ok(Flow::Next)
}

/// Source `i` as 64-bit values per lane, with DPP applied to src0 (gfx942 allows only
/// row_newbcast on 64-bit operands; the same lane permutation moves both halves). Returns the
/// values and the lanes to write.
pub(crate) fn fetch64(w: &Wave, inst: &Inst, i: usize, ty: Ty) -> Result<([u64; LANES], u64), FaultKind> {
    let mut mask = w.exec();
    let s = w.src64_of(inst, i, ty)?;
    let mut v = [0u64; LANES];
    for l in 0..LANES {
        v[l] = s.get(l);
    }
    match inst.ext {
        Ext::None => {}
        Ext::Dpp(d) if i == 0 => {
            let mut lo = [0u32; LANES];
            let mut hi = [0u32; LANES];
            for l in 0..LANES {
                lo[l] = v[l] as u32;
                hi[l] = (v[l] >> 32) as u32;
            }
            let (lo, valid) = dpp::permute(&lo, d.ctrl, mask)?;
            let (hi, _) = dpp::permute(&hi, d.ctrl, mask)?;
            for l in 0..LANES {
                v[l] = lo[l] as u64 | (hi[l] as u64) << 32;
                if valid >> l & 1 == 0 {
                    if d.bound_ctrl {
                        v[l] = 0;
                    } else {
                        mask &= !(1 << l);
                    }
                }
            }
            mask &= dpp::row_bank_mask(d.row_mask, d.bank_mask);
        }
        Ext::Dpp(d) => mask &= dpp::row_bank_mask(d.row_mask, d.bank_mask),
        Ext::Sdwa(_) => return Err(FaultKind::NotImplemented(format!("{} with SDWA on a 64-bit operand", inst.op.name()))),
    }
    Ok((v, mask))
}

/// Writes 32-bit results per lane (SDWA dst_sel/dst_unused applied) to `dst`.
pub(crate) fn write32(w: &mut Wave, inst: &Inst, mask: u64, vals: &VReg) -> Exec {
    if let Ext::Sdwa(s) = inst.ext {
        if inst.enc == Enc::Vopc {
            // VOPC-SDWA writes a mask, not a vector register.
            unreachable_vopc(inst)?;
        }
        let old = *w.vreg(inst.dst)?;
        let mut out = *vals;
        for l in 0..LANES {
            out[l] = sdwa::place(vals[l], old[l], s.dst_sel, s.dst_unused);
        }
        w.write_v32(inst.dst, mask, &out)?;
    } else {
        w.write_v32(inst.dst, mask, vals)?;
    }
    Ok(Flow::Next)
}

fn unreachable_vopc(inst: &Inst) -> Result<(), FaultKind> {
    Err(FaultKind::Invalid(format!("{}: a compare has no vector destination", inst.op.name())))
}

/// Applies VOP3/SDWA/DPP abs and neg of source `i` to an f32.
#[inline(always)]
pub(crate) fn fmod32(inst: &Inst, i: usize, x: u32) -> f32 {
    let mut b = x;
    if inst.mods.abs >> i & 1 == 1 {
        b &= 0x7fff_ffff;
    }
    if inst.mods.neg >> i & 1 == 1 {
        b ^= 0x8000_0000;
    }
    f32::from_bits(b)
}

/// Applies abs and neg of source `i` to an f64.
#[inline(always)]
pub(crate) fn fmod64(inst: &Inst, i: usize, x: u64) -> f64 {
    let mut b = x;
    if inst.mods.abs >> i & 1 == 1 {
        b &= !(1 << 63);
    }
    if inst.mods.neg >> i & 1 == 1 {
        b ^= 1 << 63;
    }
    f64::from_bits(b)
}

/// Applies abs and neg of source `i` to f16 bits (low 16 bits of `x`).
#[inline(always)]
pub(crate) fn fmod16(inst: &Inst, i: usize, x: u32) -> u16 {
    let mut b = x as u16;
    if inst.mods.abs >> i & 1 == 1 {
        b &= 0x7fff;
    }
    if inst.mods.neg >> i & 1 == 1 {
        b ^= 0x8000;
    }
    b
}

/// The output modifier and clamp of an f32 result (omod first, then clamp to [0, 1]; with DX10
/// clamp a NaN clamps to 0).
#[inline(always)]
pub(crate) fn out32(w: &Wave, inst: &Inst, r: f32) -> u32 {
    let mut r = match inst.mods.omod {
        1 => r * 2.0,
        2 => r * 4.0,
        3 => r * 0.5,
        _ => r,
    };
    if inst.mods.clamp {
        r = if r.is_nan() { if w.mode.dx10_clamp { 0.0 } else { r } } else { r.clamp(0.0, 1.0) };
    }
    flush_out32(w, r).to_bits()
}

/// As [`out32`] for f64.
#[inline(always)]
pub(crate) fn out64(w: &Wave, inst: &Inst, r: f64) -> u64 {
    let mut r = match inst.mods.omod {
        1 => r * 2.0,
        2 => r * 4.0,
        3 => r * 0.5,
        _ => r,
    };
    if inst.mods.clamp {
        r = if r.is_nan() { if w.mode.dx10_clamp { 0.0 } else { r } } else { r.clamp(0.0, 1.0) };
    }
    if w.mode.denorm16_64 & 2 == 0 && r.is_subnormal() {
        r = 0.0f64.copysign(r);
    }
    r.to_bits()
}

/// Input denormal flushing of an f32 per the MODE register (bit 0 of the denorm field: keep
/// input denormals).
#[inline(always)]
pub(crate) fn flush_in32(w: &Wave, x: f32) -> f32 {
    if w.mode.denorm32 & 1 == 0 && x.is_subnormal() { 0.0f32.copysign(x) } else { x }
}

/// Output denormal flushing of an f32 (bit 1 of the denorm field: keep output denormals).
#[inline(always)]
pub(crate) fn flush_out32(w: &Wave, x: f32) -> f32 {
    if w.mode.denorm32 & 2 == 0 && x.is_subnormal() { 0.0f32.copysign(x) } else { x }
}

/// Input flushing of f64 (and f16) per the 16/64 denorm field.
#[inline(always)]
pub(crate) fn flush_in64(w: &Wave, x: f64) -> f64 {
    if w.mode.denorm16_64 & 1 == 0 && x.is_subnormal() { 0.0f64.copysign(x) } else { x }
}

/// Refuses rounding modes other than round-to-nearest-even rather than computing wrongly.
#[inline(always)]
pub(crate) fn require_rne(w: &Wave, inst: &Inst) -> Result<(), FaultKind> {
    if w.mode.round32 != 0 || w.mode.round16_64 != 0 {
        return Err(FaultKind::NotImplemented(format!(
            "{} under a rounding mode other than nearest-even (MODE {:#x})",
            inst.op.name(),
            w.mode.to_bits()
        )));
    }
    Ok(())
}

/// The destination of a compare or carry-out: VCC for `_e32`, the SGPR pair otherwise.
#[inline]
pub(crate) fn sdst_of(inst: &Inst) -> Opnd {
    if inst.sdst.is_none() { Opnd::VCC } else { inst.sdst }
}

/// Writes a lane mask to a scalar pair: lanes outside `exec` read as 0 in the result.
pub(crate) fn write_mask(w: &mut Wave, dst: Opnd, bits: u64) -> Exec {
    w.set_s64(dst, bits)?;
    Ok(Flow::Next)
}

/// How a 16-bit result treats the other half of its 32-bit destination register.
///
/// gfx9 rule (LLVM `GCNSubtarget::zeroesHigh16BitsOfDest`, "derived from experimentation"): the
/// VOP1/VOP2 16-bit ops carried over from gfx8 and `v_mad/fma/div_fixup_f16`, `v_mad_u16/i16`
/// zero bits 31:16; `v_mac_f16`, `v_madak_f16`, `v_madmk_f16` (and the mix-lo/hi ops) preserve
/// them. A VOP3 op_sel destination bit (op_sel[3]) writes bits 31:16 instead and preserves 15:0.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hi16 {
    /// Bits 31:16 become zero.
    Zero,
    /// Bits 31:16 keep their old value.
    Keep,
}

/// Writes 16-bit results per lane into the destination by the [`Hi16`] rule and op_sel[3]; SDWA
/// dst_sel/dst_unused then apply as for any 32-bit result.
pub(crate) fn write16(w: &mut Wave, inst: &Inst, mask: u64, vals: &[u16; LANES], hi: Hi16) -> Exec {
    let old = *w.vreg(inst.dst)?;
    let mut out = [0u32; LANES];
    for l in 0..LANES {
        let v = vals[l] as u32;
        out[l] = if inst.mods.op_sel & 8 != 0 {
            (old[l] & 0xffff) | v << 16
        } else if hi == Hi16::Keep {
            (old[l] & 0xffff_0000) | v
        } else {
            v
        };
    }
    write32(w, inst, mask, &out)
}

/// Source `i` as 16 bits: the half VOP3 op_sel bit `i` selects (SDWA/DPP selection already
/// happened in [`fetch32`]).
#[inline(always)]
pub(crate) fn half_sel(inst: &Inst, i: usize, x: u32) -> u16 {
    if inst.mods.op_sel >> i & 1 == 1 { (x >> 16) as u16 } else { x as u16 }
}

/// Source `i` as an f16 value (in f64): half selected, abs/neg applied, input denormals
/// flushed when MODE's f16/f64 denorm field says so.
#[inline(always)]
pub(crate) fn f16_in(w: &Wave, inst: &Inst, i: usize, x: u32) -> f64 {
    let b = fmod16(inst, i, half_sel(inst, i, x) as u32);
    f16_flush_in(w, b)
}

/// IEEE binary16 bits -> f64, exactly, from the bits (NaN payloads kept and quieted, as
/// `half`'s conversion does): branch-light and inlined, where `half` tests for F16C and calls
/// out on every value (the VALU decodes two per packed lane, the MFMAs every A and B value).
#[inline(always)]
pub(crate) fn f16_to_f64(h: u16) -> f64 {
    // f32 holds every f16, NaN payloads included; widening to f64 keeps them.
    f32::from_bits(f16_to_f32_bits(h as u32)) as f64
}

/// IEEE binary16 bits (low 16 bits of `h`) -> f32 bits, exactly (NaNs quieted, payload kept, as
/// [`f16_to_f64`]); the three cases are computed side by side and combined with masks.
#[inline(always)]
pub(crate) fn f16_to_f32_bits(h: u32) -> u32 {
    let sign = (h & 0x8000) << 16;
    let exp = (h >> 10) & 0x1f;
    let man = h & 0x3ff;
    // Zero or a denormal: man * 2^-24 = (1 + man / 2^10) * 2^-14 - 2^-14, exact in f32.
    let small = (f32::from_bits((127 - 14) << 23 | man << 13) - f32::from_bits((127 - 14) << 23)).to_bits();
    let special = 0x7f80_0000 | man << 13 | ((man != 0) as u32) << 22;
    let normal = (exp + 112) << 23 | man << 13;
    let is_small = ((exp == 0) as u32).wrapping_neg();
    let is_special = ((exp == 31) as u32).wrapping_neg();
    sign | (small & is_small) | (special & is_special) | (normal & !(is_small | is_special))
}

/// An f16 bit pattern as f64 with input denormal flushing.
#[inline(always)]
pub(crate) fn f16_flush_in(w: &Wave, b: u16) -> f64 {
    if w.mode.denorm16_64 & 1 == 0 && b & 0x7c00 == 0 { if b & 0x8000 != 0 { -0.0 } else { 0.0 } } else { f16_to_f64(b) }
}

/// Rounds a result to f16 and applies omod, clamp (DX10 clamp maps NaN to 0) and output
/// denormal flushing.
#[inline(always)]
pub(crate) fn out16(w: &Wave, inst: &Inst, r: f64) -> u16 {
    out16_bits(w, inst, round::f16_from_f64(r))
}

/// As [`out16`] for an already rounded f16.
pub(crate) fn out16_bits(w: &Wave, inst: &Inst, b: u16) -> u16 {
    let mut b = b;
    let m = inst.mods.omod;
    if m != 0 {
        let x = half::f16::from_bits(b).to_f64();
        b = round::f16_from_f64(match m {
            1 => x * 2.0,
            2 => x * 4.0,
            _ => x * 0.5,
        });
    }
    if inst.mods.clamp {
        let x = half::f16::from_bits(b);
        b = if x.is_nan() {
            if w.mode.dx10_clamp { 0 } else { b }
        } else if x.to_f32() < 0.0 || b == 0x8000 {
            0
        } else if x.to_f32() > 1.0 {
            0x3c00
        } else {
            b
        };
    }
    if w.mode.denorm16_64 & 2 == 0 && b & 0x7c00 == 0 && b & 0x3ff != 0 {
        b &= 0x8000;
    }
    b
}

/// Executes one VOP1/VOP2/VOPC/VOP3 instruction.
pub(crate) fn exec(w: &mut Wave, inst: &Inst, _cx: &mut Ctx<'_, '_>) -> Exec {
    exec_alu(w, inst)
}

/// The VOP1/VOP2/VOPC/VOP3 families, in the order they are asked. Which of them executes an
/// op depends on the op alone (each matches on `inst.op`), so [`exec_alu`] remembers it.
const FAMILIES: [fn(&mut Wave, &Inst) -> Option<Exec>; 12] = [
    int::exec,
    f16::exec,
    i16::exec,
    fp8::exec,
    div::exec,
    dot::exec,
    sad::exec,
    packed::exec_alu,
    float::exec,
    cmp::exec,
    cvt::exec,
    lane::exec,
];

/// Per op, 1 + the index in [`FAMILIES`] of the first family that executed it (0: not run yet).
/// Asking the families in turn cost up to eleven `match`es per instruction; `v_mov_b32` is in
/// the last family.
fn family_of(op: Op) -> &'static AtomicU8 {
    static TABLE: OnceLock<Box<[AtomicU8]>> = OnceLock::new();
    &TABLE.get_or_init(|| Op::all().iter().map(|_| AtomicU8::new(0)).collect())[op as usize]
}

/// Executes one VOP1/VOP2/VOPC/VOP3 instruction (none of them touches memory).
pub(crate) fn exec_alu(w: &mut Wave, inst: &Inst) -> Exec {
    if let Some(r) = fast::exec(w, inst) {
        return r;
    }
    let known = family_of(inst.op);
    if let Some(f) = (known.load(Relaxed) as usize).checked_sub(1).map(|i| FAMILIES[i])
        && let Some(r) = f(w, inst)
    {
        return r;
    }
    for (i, f) in FAMILIES.iter().enumerate() {
        if let Some(r) = f(w, inst) {
            known.store(i as u8 + 1, Relaxed);
            return r;
        }
    }
    match inst.op {
        // v_clrexcp clears the exception status bits, which the emulator does not keep.
        Op::VNop | Op::VClrexcp => Ok(Flow::Next),
        // gfx940 encodes the AGPR-to-AGPR move as VOP1 (the read and write are VOP3P); one
        // implementation moves 32 bits for all three.
        Op::VAccvgprMovB32 => exec_vop3p(w, inst),
        _ => Err(not_implemented(inst)),
    }
}
