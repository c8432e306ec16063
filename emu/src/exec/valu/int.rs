//! Integer and bitwise VALU ops (32- and 64-bit; 16-bit ones live with the f16 ops).

use super::super::cpu::multiversion;
use super::super::step::{Exec, Flow};
use super::super::wave::{LANES, Ty, VReg, Wave};
use super::{fetch32, lanes_or_fill, map32, plain32, sdst_of, write_mask, write_plain32, write32};
use crate::isa::{Ext, Inst, Op};

fn map1(w: &mut Wave, inst: &Inst, f: impl Fn(u32) -> u32) -> Exec {
    let mut out = [0u32; LANES];
    if let Some(r) = plain32::<1>(w, inst, Ty::B32, |l, [a]| out[l] = f(a)) {
        r?;
        return write_plain32(w, inst, &out);
    }
    let s = fetch32(w, inst, 1, Ty::B32)?;
    for l in 0..LANES {
        out[l] = f(s.v[0][l]);
    }
    write32(w, inst, s.mask, &out)
}

fn map2(w: &mut Wave, inst: &Inst, f: impl Fn(u32, u32) -> u32) -> Exec {
    let mut out = [0u32; LANES];
    if let Some(r) = plain32::<2>(w, inst, Ty::B32, |l, [a, b]| out[l] = f(a, b)) {
        r?;
        return write_plain32(w, inst, &out);
    }
    let s = fetch32(w, inst, 2, Ty::B32)?;
    for l in 0..LANES {
        out[l] = f(s.v[0][l], s.v[1][l]);
    }
    write32(w, inst, s.mask, &out)
}

fn map3(w: &mut Wave, inst: &Inst, f: impl Fn(u32, u32, u32) -> u32) -> Exec {
    let mut out = [0u32; LANES];
    if let Some(r) = plain32::<3>(w, inst, Ty::B32, |l, [a, b, c]| out[l] = f(a, b, c)) {
        r?;
        return write_plain32(w, inst, &out);
    }
    let s = fetch32(w, inst, 3, Ty::B32)?;
    for l in 0..LANES {
        out[l] = f(s.v[0][l], s.v[1][l], s.v[2][l]);
    }
    write32(w, inst, s.mask, &out)
}

/// [`map3`] through [`map32`]: the sources in place, the loop built for the widest vectors.
/// For the ops whose lane function vectorises only there (per-lane shifts, 64-bit shifts); a
/// scalar source costs a register's worth of copies, which plain ops like `v_and_or_b32` with
/// a scalar mask do not win back (emulator timings: 42 ns against [`map3`]'s 33).
fn map3v(w: &mut Wave, inst: &Inst, f: impl Fn(u32, u32, u32) -> u32) -> Exec {
    let mut out = [0u32; LANES];
    match map32::<3>(w, inst, Ty::B32, &mut out, |[a, b, c]| f(a, b, c)) {
        Some(Ok(())) => write_plain32(w, inst, &out),
        Some(Err(e)) => Err(e.into()),
        None => map3(w, inst, f),
    }
}

/// `v_cndmask_b32` without DPP/SDWA: the sources read in place (a scalar or constant filled
/// into a register's worth), the sign modifiers as masks, one select per lane in a loop built
/// for the widest vectors (a per-lane test of the condition's bits vectorises only there).
fn cndmask(w: &mut Wave, inst: &Inst) -> Exec {
    let exec = w.exec();
    let m = w.sval64(inst.src[2], 0, Ty::U64)?;
    // The VOP3 form takes float abs/neg on both sources (sign-bit operations on the 32 bits):
    // LLVM folds `c ? -x : x` into `v_cndmask_b32_e64 v, x, -x, c`.
    let keep = |i: usize| if inst.mods.abs >> i & 1 == 1 { 0x7fff_ffff } else { u32::MAX };
    let flip = |i: usize| if inst.mods.neg >> i & 1 == 1 { 0x8000_0000 } else { 0 };
    let mut out = [0u32; LANES];
    let (mut fill0, mut fill1) = ([0u32; LANES], [0u32; LANES]);
    let f = lanes_or_fill(w.src32_of(inst, 0, Ty::B32)?, &mut fill0);
    let t = lanes_or_fill(w.src32_of(inst, 1, Ty::B32)?, &mut fill1);
    select_lanes(&mut out, m, [t, f], [keep(1), keep(0)], [flip(1), flip(0)]);
    w.write_v32(inst.dst, exec, &out)?;
    Ok(Flow::Next)
}

multiversion! {
    /// `out[l] = (bit l of mask ? t : f)[l] & keep ^ flip` (`[t, f]`, keep and flip per source).
    fn select_lanes(out: &mut VReg, mask: u64, src: [&VReg; 2], keep: [u32; 2], flip: [u32; 2]) {
        for (l, o) in out.iter_mut().enumerate() {
            let (t, f) = (src[0][l] & keep[0] ^ flip[0], src[1][l] & keep[1] ^ flip[1]);
            *o = if mask >> l & 1 == 1 { t } else { f };
        }
    }
}

/// One source of a 64-bit op, widened to u64 per lane (`Ty::B32` sources are 32-bit operands,
/// zero-extended; the others are register pairs or 64-bit constants).
fn src_wide(w: &Wave, inst: &Inst, i: usize, ty: Ty) -> Result<[u64; LANES], super::super::error::FaultKind> {
    let mut out = [0u64; LANES];
    if ty == Ty::B32 {
        let s = w.src32_of(inst, i, ty)?;
        for l in 0..LANES {
            out[l] = s.get(l) as u64;
        }
    } else {
        let s = w.src64_of(inst, i, ty)?;
        for l in 0..LANES {
            out[l] = s.get(l);
        }
    }
    Ok(out)
}

/// 64-bit result from per-lane sources (no DPP/SDWA forms exist for these).
fn map64(w: &mut Wave, inst: &Inst, tys: [Ty; 3], n: usize, f: impl Fn(u64, u64, u64) -> u64) -> Exec {
    if let Ext::Dpp(_) = inst.ext {
        // v_mov_b64_dpp (row_newbcast only on gfx942).
        if n == 1 && tys[0] != Ty::B32 {
            let (v, mask) = super::fetch64(w, inst, 0, tys[0])?;
            let mut out = [0u64; LANES];
            for l in 0..LANES {
                out[l] = f(v[l], 0, 0);
            }
            w.write_v64(inst.dst, mask, &out)?;
            return Ok(Flow::Next);
        }
    }
    if inst.ext != Ext::None {
        return Err(super::super::step::not_implemented(inst));
    }
    let exec = w.exec();
    let mut out = [0u64; LANES];
    {
        let zero = [0u64; LANES];
        let a = src_wide(w, inst, 0, tys[0])?;
        let b = if n > 1 { src_wide(w, inst, 1, tys[1])? } else { zero };
        let c = if n > 2 { src_wide(w, inst, 2, tys[2])? } else { zero };
        for l in 0..LANES {
            out[l] = f(a[l], b[l], c[l]);
        }
    }
    w.write_v64(inst.dst, exec, &out)?;
    Ok(Flow::Next)
}

/// Add/sub with a carry or borrow per lane: `f(a, b, carry_in) -> (result, carry_out)`.
fn carry_op(w: &mut Wave, inst: &Inst, use_cin: bool, f: impl Fn(u32, u32, bool) -> (u32, bool)) -> Exec {
    let s = fetch32(w, inst, 2, Ty::B32)?;
    let cin = if use_cin { w.sval64(inst.src[2], 0, Ty::U64)? } else { 0 };
    let mut out = [0u32; LANES];
    let mut cout = 0u64;
    for l in 0..LANES {
        let (r, c) = f(s.v[0][l], s.v[1][l], cin >> l & 1 == 1);
        out[l] = r;
        if c && s.mask >> l & 1 == 1 {
            cout |= 1 << l;
        }
    }
    write32(w, inst, s.mask, &out)?;
    write_mask(w, sdst_of(inst), cout)
}

fn bfe(v: u32, off: u32, width: u32, signed: bool) -> u32 {
    let (off, width) = (off & 31, width & 31);
    if width == 0 {
        return 0;
    }
    let x = v >> off;
    let mask = if width >= 32 { u32::MAX } else { (1u32 << width) - 1 };
    let r = x & mask;
    if signed && r >> (width - 1) & 1 == 1 { r | !mask } else { r }
}

fn med3<T: Ord + Copy>(a: T, b: T, c: T) -> T {
    a.max(b).min(a.min(b).max(c))
}

/// `v_perm_b32` byte select: 0-7 pick bytes of {src0, src1}, 8-11 sign bytes, 12 0x00, 13+ 0xff.
/// Branch-free (selects between the three candidates), so that a lane loop of it vectorises.
#[inline(always)]
fn perm_byte(sel: u32, src: u64) -> u32 {
    let byte = (src >> (8 * (sel & 7))) as u32 & 0xff;
    // The sign of byte 1, 3, 5 or 7 spread over the byte.
    let sign = ((src >> (16 * (sel & 3) + 15)) as u32 & 1).wrapping_neg() & 0xff;
    let constant = if sel == 12 { 0 } else { 0xff };
    if sel < 8 {
        byte
    } else if sel < 12 {
        sign
    } else {
        constant
    }
}

/// Saturates a wide result when the instruction's clamp bit asks for it (integer clamp).
fn sat_u32(inst: &Inst, r: u64) -> u32 {
    if inst.mods.clamp { r.min(u32::MAX as u64) as u32 } else { r as u32 }
}

/// Executes an integer op, or returns None when `inst` is not one.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Option<Exec> {
    use Op::*;
    let clamp = inst.mods.clamp;
    Some(match inst.op {
        VMovB32 => map1(w, inst, |a| a),
        VMovB64 => map64(w, inst, [Ty::U64; 3], 1, |a, _, _| a),
        VNotB32 => map1(w, inst, |a| !a),
        VBfrevB32 => map1(w, inst, u32::reverse_bits),
        VFfbhU32 => map1(w, inst, |a| if a == 0 { u32::MAX } else { a.leading_zeros() }),
        VFfblB32 => map1(w, inst, |a| if a == 0 { u32::MAX } else { a.trailing_zeros() }),
        VFfbhI32 => map1(w, inst, |a| {
            let x = if (a as i32) < 0 { !a } else { a };
            if x == 0 { u32::MAX } else { x.leading_zeros() - 1 }
        }),
        VAddU32 => map2(w, inst, |a, b| sat_u32(inst, a as u64 + b as u64)),
        VSubU32 => map2(w, inst, |a, b| if clamp { a.saturating_sub(b) } else { a.wrapping_sub(b) }),
        VSubrevU32 => map2(w, inst, |a, b| if clamp { b.saturating_sub(a) } else { b.wrapping_sub(a) }),
        VAddI32 => map2(w, inst, |a, b| if clamp { (a as i32).saturating_add(b as i32) as u32 } else { a.wrapping_add(b) }),
        VSubI32 => map2(w, inst, |a, b| if clamp { (a as i32).saturating_sub(b as i32) as u32 } else { a.wrapping_sub(b) }),
        VAddCoU32 => carry_op(w, inst, false, |a, b, _| a.overflowing_add(b)),
        VSubCoU32 => carry_op(w, inst, false, |a, b, _| a.overflowing_sub(b)),
        VSubrevCoU32 => carry_op(w, inst, false, |a, b, _| b.overflowing_sub(a)),
        VAddcCoU32 => carry_op(w, inst, true, |a, b, c| {
            let r = a as u64 + b as u64 + c as u64;
            (r as u32, r >> 32 != 0)
        }),
        VSubbCoU32 => carry_op(w, inst, true, |a, b, c| {
            let s = b as u64 + c as u64;
            ((a as u64).wrapping_sub(s) as u32, s > a as u64)
        }),
        VSubbrevCoU32 => carry_op(w, inst, true, |a, b, c| {
            let s = a as u64 + c as u64;
            ((b as u64).wrapping_sub(s) as u32, s > b as u64)
        }),
        VMulLoU32 => map2(w, inst, |a, b| a.wrapping_mul(b)),
        VMulHiU32 => map2(w, inst, |a, b| ((a as u64 * b as u64) >> 32) as u32),
        VMulHiI32 => map2(w, inst, |a, b| ((a as i32 as i64 * b as i32 as i64) >> 32) as u32),
        VMulU32U24 => map2(w, inst, |a, b| (a & 0xff_ffff).wrapping_mul(b & 0xff_ffff)),
        VMulHiU32U24 => map2(w, inst, |a, b| (((a & 0xff_ffff) as u64 * (b & 0xff_ffff) as u64) >> 32) as u32),
        VMulI32I24 => map2(w, inst, |a, b| ((a << 8) as i32 >> 8).wrapping_mul((b << 8) as i32 >> 8) as u32),
        VMulHiI32I24 => map2(w, inst, |a, b| ((((a << 8) as i32 >> 8) as i64 * (((b << 8) as i32 >> 8) as i64)) >> 32) as u32),
        VMadU32U24 => map3(w, inst, |a, b, c| (a & 0xff_ffff).wrapping_mul(b & 0xff_ffff).wrapping_add(c)),
        VMadI32I24 => map3(w, inst, |a, b, c| (((a << 8) as i32 >> 8).wrapping_mul((b << 8) as i32 >> 8) as u32).wrapping_add(c)),
        VLshlrevB32 => map2(w, inst, |a, b| b << (a & 31)),
        VLshrrevB32 => map2(w, inst, |a, b| b >> (a & 31)),
        VAshrrevI32 => map2(w, inst, |a, b| ((b as i32) >> (a & 31)) as u32),
        VLshlrevB64 => map64(w, inst, [Ty::B32, Ty::U64, Ty::U64], 2, |a, b, _| b << (a & 63)),
        VLshrrevB64 => map64(w, inst, [Ty::B32, Ty::U64, Ty::U64], 2, |a, b, _| b >> (a & 63)),
        VAshrrevI64 => map64(w, inst, [Ty::B32, Ty::I64, Ty::U64], 2, |a, b, _| ((b as i64) >> (a & 63)) as u64),
        VAndB32 => map2(w, inst, |a, b| a & b),
        VOrB32 => map2(w, inst, |a, b| a | b),
        VXorB32 => map2(w, inst, |a, b| a ^ b),
        VXnorB32 => map2(w, inst, |a, b| !(a ^ b)),
        VMinU32 => map2(w, inst, u32::min),
        VMaxU32 => map2(w, inst, u32::max),
        VMinI32 => map2(w, inst, |a, b| (a as i32).min(b as i32) as u32),
        VMaxI32 => map2(w, inst, |a, b| (a as i32).max(b as i32) as u32),
        VMin3U32 => map3(w, inst, |a, b, c| a.min(b).min(c)),
        VMax3U32 => map3(w, inst, |a, b, c| a.max(b).max(c)),
        VMed3U32 => map3(w, inst, med3),
        VMin3I32 => map3(w, inst, |a, b, c| (a as i32).min(b as i32).min(c as i32) as u32),
        VMax3I32 => map3(w, inst, |a, b, c| (a as i32).max(b as i32).max(c as i32) as u32),
        VMed3I32 => map3(w, inst, |a, b, c| med3(a as i32, b as i32, c as i32) as u32),
        VBfeU32 => map3v(w, inst, |a, b, c| bfe(a, b, c, false)),
        VBfeI32 => map3v(w, inst, |a, b, c| bfe(a, b, c, true)),
        VBfiB32 => map3(w, inst, |a, b, c| (a & b) | (!a & c)),
        VBfmB32 => map2(w, inst, |a, b| ((1u64 << (a & 31)) as u32).wrapping_sub(1) << (b & 31)),
        VBcntU32B32 => map2(w, inst, |a, b| a.count_ones().wrapping_add(b)),
        VLshlAddU32 => map3v(w, inst, |a, b, c| (a << (b & 31)).wrapping_add(c)),
        VAddLshlU32 => map3v(w, inst, |a, b, c| a.wrapping_add(b) << (c & 31)),
        VAdd3U32 => map3v(w, inst, |a, b, c| a.wrapping_add(b).wrapping_add(c)),
        VLshlOrB32 => map3v(w, inst, |a, b, c| (a << (b & 31)) | c),
        VAndOrB32 => map3(w, inst, |a, b, c| (a & b) | c),
        VOr3B32 => map3(w, inst, |a, b, c| a | b | c),
        VXadU32 => map3(w, inst, |a, b, c| (a ^ b).wrapping_add(c)),
        VAlignbitB32 => map3v(w, inst, |a, b, c| (((a as u64) << 32 | b as u64) >> (c & 31)) as u32),
        VAlignbyteB32 => map3v(w, inst, |a, b, c| (((a as u64) << 32 | b as u64) >> (8 * (c & 3))) as u32),
        VPermB32 => map3v(w, inst, |a, b, c| {
            let src = (a as u64) << 32 | b as u64;
            perm_byte(c & 0xff, src)
                | perm_byte((c >> 8) & 0xff, src) << 8
                | perm_byte((c >> 16) & 0xff, src) << 16
                | perm_byte(c >> 24, src) << 24
        }),
        VCndmaskB32 if inst.ext == Ext::None => cndmask(w, inst),
        VCndmaskB32 => {
            let s = match fetch32(w, inst, 2, Ty::B32) {
                Ok(s) => s,
                Err(e) => return Some(Err(e.into())),
            };
            let m = match w.sval64(inst.src[2], 0, Ty::U64) {
                Ok(m) => m,
                Err(e) => return Some(Err(e.into())),
            };
            // The VOP3 form takes float abs/neg on both sources (sign-bit operations on the
            // 32 bits): LLVM folds `c ? -x : x` into `v_cndmask_b32_e64 v, x, -x, c`.
            let sign_mods = |i: usize, x: u32| {
                let x = if inst.mods.abs >> i & 1 == 1 { x & 0x7fff_ffff } else { x };
                if inst.mods.neg >> i & 1 == 1 { x ^ 0x8000_0000 } else { x }
            };
            let (t, f) = (s.v[1].map(|x| sign_mods(1, x)), s.v[0].map(|x| sign_mods(0, x)));
            let mut out = [0u32; LANES];
            // A select per lane (vectorises), not a branch.
            for (l, o) in out.iter_mut().enumerate() {
                *o = if m >> l & 1 == 1 { t[l] } else { f[l] };
            }
            write32(w, inst, s.mask, &out)
        }
        VMadU64U32 | VMadI64I32 => {
            let signed = inst.op == VMadI64I32;
            let exec = w.exec();
            let r = (|| -> Result<([u64; LANES], u64), super::super::error::FaultKind> {
                let a = w.src32_of(inst, 0, Ty::B32)?;
                let b = w.src32_of(inst, 1, Ty::B32)?;
                let c = w.src64_of(inst, 2, if signed { Ty::I64 } else { Ty::U64 })?;
                let mut out = [0u64; LANES];
                let mut carry = 0u64;
                for l in 0..LANES {
                    let (r, o) = if signed {
                        let p = a.get(l) as i32 as i128 * b.get(l) as i32 as i128 + c.get(l) as i64 as i128;
                        (p as u64, p > i64::MAX as i128 || p < i64::MIN as i128)
                    } else {
                        let p = a.get(l) as u128 * b.get(l) as u128 + c.get(l) as u128;
                        (p as u64, p >> 64 != 0)
                    };
                    out[l] = r;
                    if o && exec >> l & 1 == 1 {
                        carry |= 1 << l;
                    }
                }
                Ok((out, carry))
            })();
            match r {
                Ok((out, carry)) => w
                    .write_v64(inst.dst, exec, &out)
                    .map_err(Into::into)
                    .and_then(|_| if inst.sdst.is_none() { Ok(Flow::Next) } else { write_mask(w, inst.sdst, carry) }),
                Err(e) => Err(e.into()),
            }
        }
        VLshlAddU64 => map64(w, inst, [Ty::U64, Ty::B32, Ty::U64], 3, |a, b, c| (a << (b & 7)).wrapping_add(c)),
        VSadU32 => map3(w, inst, |a, b, c| a.abs_diff(b).wrapping_add(c)),
        VSadU16 => map3(w, inst, |a, b, c| ((a & 0xffff).abs_diff(b & 0xffff) + (a >> 16).abs_diff(b >> 16)).wrapping_add(c)),
        VSadU8 => {
            map3(w, inst, |a, b, c| (0..4).map(|i| ((a >> (8 * i)) & 0xff).abs_diff((b >> (8 * i)) & 0xff)).sum::<u32>().wrapping_add(c))
        }
        VSadHiU8 => map3(w, inst, |a, b, c| {
            ((0..4).map(|i| ((a >> (8 * i)) & 0xff).abs_diff((b >> (8 * i)) & 0xff)).sum::<u32>() << 16).wrapping_add(c)
        }),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perm_bytes_follow_the_isa_table_for_every_selector() {
        // The ISA's table case by case: bytes 0-7 of {src0, src1}, the signs of bytes 1, 3, 5, 7,
        // 0x00, then 0xff.
        let table = |sel: u32, src: u64| -> u32 {
            match sel {
                0..=7 => (src >> (8 * sel)) as u32 & 0xff,
                8..=11 => {
                    if src >> [15, 31, 47, 63][sel as usize - 8] & 1 == 1 {
                        0xff
                    } else {
                        0
                    }
                }
                12 => 0,
                _ => 0xff,
            }
        };
        for src in [0x8877_6655_4433_2211u64, 0x0102_0304_0506_0708, 0x80ff_7f00_8001_7ffe, u64::MAX, 0] {
            for sel in 0..256 {
                assert_eq!(perm_byte(sel, src), table(sel, src), "sel {sel} src {src:#x}");
            }
        }
    }

    #[test]
    fn perm_selects_bytes_and_constants() {
        let src = 0x8877_6655_4433_2211u64;
        assert_eq!(perm_byte(0, src), 0x11);
        assert_eq!(perm_byte(7, src), 0x88);
        assert_eq!(perm_byte(11, src), 0xff); // sign of byte 7
        assert_eq!(perm_byte(12, src), 0);
        assert_eq!(perm_byte(13, src), 0xff);
    }

    #[test]
    fn bitfield_extract_uses_five_bit_fields() {
        assert_eq!(bfe(0xF0, 4, 4, false), 0xF);
        assert_eq!(bfe(0xF0, 4, 4, true), u32::MAX);
        assert_eq!(bfe(0xF0, 4 + 32, 4 + 32, false), 0xF);
        assert_eq!(med3(5, 1, 3), 3);
    }
}
