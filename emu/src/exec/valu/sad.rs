//! Sums of absolute differences beyond the basic ones in `int.rs`: masked SAD (`v_msad_u8`), the
//! quad SADs (`v_qsad_pk_u16_u8`, `v_mqsad_pk_u16_u8`, `v_mqsad_u32_u8`) and the byte average
//! `v_lerp_u8`, as the ISA pseudo-code defines them.

use super::super::error::FaultKind;
use super::super::step::{Exec, Flow};
use super::super::wave::{LANES, Ty, Wave};
use super::fetch32;
use crate::isa::{Ext, Inst, Op};

fn byte(x: u64, i: u32) -> u32 {
    (x >> (8 * i)) as u32 & 0xff
}

/// SAD of the four bytes of `a` against `r` plus `acc`; `masked` skips bytes where `r` is 0.
pub(crate) fn sad_u8(a: u32, r: u32, acc: u32, masked: bool) -> u32 {
    (0..4).fold(acc, |s, i| {
        let (x, y) = (byte(a as u64, i), byte(r as u64, i));
        if masked && y == 0 { s } else { s.wrapping_add(x.abs_diff(y)) }
    })
}

/// `v_lerp_u8`: per byte `(a + b + round) >> 1`, the rounding bit being bit 0 of src2's byte.
pub(crate) fn lerp_u8(a: u32, b: u32, c: u32) -> u32 {
    (0..4).fold(0, |d, i| {
        let s = byte(a as u64, i) + byte(b as u64, i) + (byte(c as u64, i) & 1);
        d | (s >> 1) << (8 * i)
    })
}

/// Executes a SAD op, or returns None.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Option<Exec> {
    use Op::*;
    Some(match inst.op {
        VMsadU8 | VLerpU8 => (|| {
            let s = fetch32(w, inst, 3, Ty::B32)?;
            let mut out = [0u32; LANES];
            for l in 0..LANES {
                let (a, b, c) = (s.v[0][l], s.v[1][l], s.v[2][l]);
                out[l] = if inst.op == VMsadU8 { sad_u8(a, b, c, true) } else { lerp_u8(a, b, c) };
            }
            super::write32(w, inst, s.mask, &out)
        })(),
        VQsadPkU16U8 | VMqsadPkU16U8 | VMqsadU32U8 => quad(w, inst),
        _ => return None,
    })
}

/// The quad SADs: four SADs of the byte windows S0[31+8i : 8i] against S1.
fn quad(w: &mut Wave, inst: &Inst) -> Exec {
    if inst.ext != Ext::None {
        return Err(super::super::step::not_implemented(inst));
    }
    let masked = inst.op != Op::VQsadPkU16U8;
    let wide = inst.op == Op::VMqsadU32U8;
    let exec = w.exec();
    let mut out = [[0u32; LANES]; 4];
    {
        let a = w.src64_of(inst, 0, Ty::U64)?;
        let r = w.src32_of(inst, 1, Ty::B32)?;
        // src2: four packed u16 accumulators in 64 bits, or four u32 in a 128-bit VGPR quad.
        let acc: Vec<[u32; LANES]> = if wide {
            if inst.src[2].as_vgpr().is_none() {
                return Err(FaultKind::NotImplemented("v_mqsad_u32_u8 with a non-VGPR accumulator".into()).into());
            }
            (0..4).map(|k| w.vreg_at(inst.src[2], k).map(|v| *v)).collect::<Result<_, _>>()?
        } else {
            let c = w.src64_of(inst, 2, Ty::U64)?;
            let mut lo = [0u32; LANES];
            let mut hi = [0u32; LANES];
            for l in 0..LANES {
                lo[l] = c.get(l) as u32;
                hi[l] = (c.get(l) >> 32) as u32;
            }
            vec![lo, hi]
        };
        for l in 0..LANES {
            let x = a.get(l);
            for i in 0..4u32 {
                let window = (x >> (8 * i)) as u32;
                if wide {
                    out[i as usize][l] = sad_u8(window, r.get(l), acc[i as usize][l], masked);
                } else {
                    let c16 = (acc[(i / 2) as usize][l] >> (16 * (i % 2))) & 0xffff;
                    let s = sad_u8(window, r.get(l), c16, masked);
                    let s = if inst.mods.clamp { s.min(0xffff) } else { s & 0xffff };
                    out[(i / 2) as usize][l] |= s << (16 * (i % 2));
                }
            }
        }
    }
    let n = if wide { 4 } else { 2 };
    for k in 0..n {
        w.write_v32(crate::isa::Opnd(inst.dst.0 + k as u16), exec, &out[k])?;
    }
    Ok(Flow::Next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_sad_skips_zero_reference_bytes() {
        assert_eq!(sad_u8(0x0a0b0c0d, 0x00010000, 5, true), 5 + 10);
        assert_eq!(sad_u8(0x0a0b0c0d, 0x00010000, 5, false), 5 + 10 + 10 + 12 + 13);
        assert_eq!(lerp_u8(0xff01_0203, 0x0101_0202, 0x0001_0100), 0x8001_0202);
    }
}
