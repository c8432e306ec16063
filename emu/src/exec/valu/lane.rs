//! Cross-lane and lane-indexed ops: readlane/readfirstlane/writelane, mbcnt, swap.

use super::super::error::FaultKind;
use super::super::step::{Exec, Flow};
use super::super::wave::{LANES, Ty, Wave};
use super::{fetch32, write32};
use crate::isa::{Inst, Op};

fn lane_index(w: &Wave, inst: &Inst, i: usize) -> Result<usize, FaultKind> {
    Ok((w.sval32(inst.src[i], inst.literal, Ty::B32)? & 63) as usize)
}

/// Executes a lane op, or returns None.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Option<Exec> {
    use Op::*;
    match inst.op {
        VReadlaneB32 | VReadfirstlaneB32 | VWritelaneB32 | VMbcntLoU32B32 | VMbcntHiU32B32 | VSwapB32 => Some(run(w, inst)),
        _ => None,
    }
}

fn run(w: &mut Wave, inst: &Inst) -> Exec {
    use Op::*;
    {
        match inst.op {
            VReadlaneB32 => {
                let lane = lane_index(w, inst, 1)?;
                let v = w.vreg(inst.src[0])?[lane];
                w.set_s32(inst.dst, v)?;
                Ok(Flow::Next)
            }
            VReadfirstlaneB32 => {
                let exec = w.exec();
                let lane = if exec == 0 { 0 } else { exec.trailing_zeros() as usize };
                let v = w.src32_of(inst, 0, Ty::B32)?.get(lane);
                w.set_s32(inst.dst, v)?;
                Ok(Flow::Next)
            }
            VWritelaneB32 => {
                // Writes one lane regardless of EXEC.
                let v = w.sval32(inst.src[0], inst.literal, Ty::B32)?;
                let lane = lane_index(w, inst, 1)?;
                w.vreg_mut(inst.dst)?[lane] = v;
                Ok(Flow::Next)
            }
            VMbcntLoU32B32 | VMbcntHiU32B32 => {
                let s = fetch32(w, inst, 2, Ty::B32)?;
                let mut out = [0u32; LANES];
                for l in 0..LANES {
                    let below = if inst.op == VMbcntLoU32B32 {
                        let n = l.min(32);
                        if n == 32 { s.v[0][l] } else { s.v[0][l] & ((1u32 << n) - 1) }
                    } else if l < 32 {
                        0
                    } else {
                        s.v[0][l] & ((1u64 << (l - 32)) - 1) as u32
                    };
                    out[l] = below.count_ones().wrapping_add(s.v[1][l]);
                }
                write32(w, inst, s.mask, &out)
            }
            VSwapB32 => {
                let exec = w.exec();
                let a = *w.vreg(inst.dst)?;
                let b = *w.vreg(inst.src[0])?;
                w.write_v32(inst.dst, exec, &b)?;
                w.write_v32(inst.src[0], exec, &a)?;
                Ok(Flow::Next)
            }
            _ => Err(super::super::step::not_implemented(inst)),
        }
    }
}
