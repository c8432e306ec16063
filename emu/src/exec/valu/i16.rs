//! 16-bit integer VOP2/VOP3 ops and the 16-bit packing conversions.
//!
//! Sources are the low halves of their registers, or the half VOP3 op_sel picks; results follow
//! the gfx9 destination rule in [`Hi16`] (zero bits 31:16 unless op_sel[3] writes them). The
//! clamp bit saturates in the op's own domain (the ISA's "supports saturation" notes).

use super::super::step::Exec;
use super::super::wave::{LANES, Ty, Wave};
use super::{Hi16, fetch32, half_sel, write16, write32};
use crate::isa::{Inst, Op};

fn op16(w: &mut Wave, inst: &Inst, n: usize, f: impl Fn([u16; 3]) -> u16) -> Exec {
    let s = fetch32(w, inst, n, Ty::B16)?;
    let mut out = [0u16; LANES];
    for l in 0..LANES {
        let v = [half_sel(inst, 0, s.v[0][l]), half_sel(inst, 1, s.v[1][l]), half_sel(inst, 2, s.v[2][l])];
        out[l] = f(v);
    }
    write16(w, inst, s.mask, &out, Hi16::Zero)
}

fn op32(w: &mut Wave, inst: &Inst, n: usize, ty: Ty, f: impl Fn([u32; 3]) -> u32) -> Exec {
    let s = fetch32(w, inst, n, ty)?;
    let mut out = [0u32; LANES];
    for l in 0..LANES {
        out[l] = f([s.v[0][l], s.v[1][l], s.v[2][l]]);
    }
    write32(w, inst, s.mask, &out)
}

fn sat_u16(x: i64) -> u16 {
    x.clamp(0, u16::MAX as i64) as u16
}

fn sat_i16(x: i64) -> u16 {
    x.clamp(i16::MIN as i64, i16::MAX as i64) as i16 as u16
}

fn med3<T: Ord + Copy>(a: T, b: T, c: T) -> T {
    a.max(b).min(a.min(b).max(c))
}

/// Executes a 16-bit integer op, or returns None.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Option<Exec> {
    use Op::*;
    let c = inst.mods.clamp;
    // Unsigned/signed wide result, wrapped to 16 bits or saturated under clamp.
    let u = move |x: i64| if c { sat_u16(x) } else { x as u16 };
    let i = move |x: i64| if c { sat_i16(x) } else { x as u16 };
    let s = |x: u16| x as i16 as i64;
    let z = |x: u16| x as i64;
    Some(match inst.op {
        VAddU16 => op16(w, inst, 2, |v| u(z(v[0]) + z(v[1]))),
        VSubU16 => op16(w, inst, 2, |v| u(z(v[0]) - z(v[1]))),
        VSubrevU16 => op16(w, inst, 2, |v| u(z(v[1]) - z(v[0]))),
        VMulLoU16 => op16(w, inst, 2, |v| u(z(v[0]) * z(v[1]))),
        VAddI16 => op16(w, inst, 2, |v| i(s(v[0]) + s(v[1]))),
        VSubI16 => op16(w, inst, 2, |v| i(s(v[0]) - s(v[1]))),
        // Shift counts are the low 4 bits of src0 (the "rev" forms shift src1).
        VLshlrevB16 => op16(w, inst, 2, |v| v[1] << (v[0] & 15)),
        VLshrrevB16 => op16(w, inst, 2, |v| v[1] >> (v[0] & 15)),
        VAshrrevI16 => op16(w, inst, 2, |v| ((v[1] as i16) >> (v[0] & 15)) as u16),
        VMaxU16 => op16(w, inst, 2, |v| v[0].max(v[1])),
        VMinU16 => op16(w, inst, 2, |v| v[0].min(v[1])),
        VMaxI16 => op16(w, inst, 2, |v| (v[0] as i16).max(v[1] as i16) as u16),
        VMinI16 => op16(w, inst, 2, |v| (v[0] as i16).min(v[1] as i16) as u16),
        VMax3U16 => op16(w, inst, 3, |v| v[0].max(v[1]).max(v[2])),
        VMin3U16 => op16(w, inst, 3, |v| v[0].min(v[1]).min(v[2])),
        VMed3U16 => op16(w, inst, 3, |v| med3(v[0], v[1], v[2])),
        VMax3I16 => op16(w, inst, 3, |v| (v[0] as i16).max(v[1] as i16).max(v[2] as i16) as u16),
        VMin3I16 => op16(w, inst, 3, |v| (v[0] as i16).min(v[1] as i16).min(v[2] as i16) as u16),
        VMed3I16 => op16(w, inst, 3, |v| med3(v[0] as i16, v[1] as i16, v[2] as i16) as u16),
        VMadU16 | VMadLegacyU16 => op16(w, inst, 3, |v| u(z(v[0]) * z(v[1]) + z(v[2]))),
        VMadI16 | VMadLegacyI16 => op16(w, inst, 3, |v| i(s(v[0]) * s(v[1]) + s(v[2]))),
        // 16 x 16 -> 32-bit multiply-add; src2 is a full 32-bit operand.
        VMadU32U16 => op32(w, inst, 3, Ty::B16, |v| {
            let r = half_sel(inst, 0, v[0]) as u64 * half_sel(inst, 1, v[1]) as u64 + v[2] as u64;
            if c { r.min(u32::MAX as u64) as u32 } else { r as u32 }
        }),
        VMadI32I16 => op32(w, inst, 3, Ty::B16, |v| {
            let r = s(half_sel(inst, 0, v[0])) * s(half_sel(inst, 1, v[1])) + v[2] as i32 as i64;
            if c { r.clamp(i32::MIN as i64, i32::MAX as i64) as i32 as u32 } else { r as u32 }
        }),
        // Two signed halves saturated to unsigned bytes, packed into bits 15:0.
        VSatPkU8I16 => op32(w, inst, 1, Ty::B16, |v| {
            let b = |h: u32| (h as u16 as i16).clamp(0, 255) as u32;
            b(v[0]) | b(v[0] >> 16) << 8
        }),
        VCvtPkU16U32 => op32(w, inst, 2, Ty::B32, |v| v[0].min(0xffff) | v[1].min(0xffff) << 16),
        VCvtPkI16I32 => op32(w, inst, 2, Ty::B32, |v| {
            let h = |x: u32| sat_i16(x as i32 as i64) as u32;
            h(v[0]) | h(v[1]) << 16
        }),
        _ => return None,
    })
}
