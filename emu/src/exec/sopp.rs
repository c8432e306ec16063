//! Program control (SOPP): branches, waits, barriers, the end of the program.
//!
//! `s_waitcnt` is a no-op here: every memory access completes before the next instruction, so
//! any wait is already satisfied (the cycle model accounts for what it would cost).

use super::error::FaultKind;
use super::step::{Exec, Flow, Trouble, not_implemented};
use super::wave::Wave;
use crate::isa::{Inst, Op};

/// Branch target: the next instruction plus simm16 dwords.
#[inline]
fn target(w: &Wave, inst: &Inst) -> u64 {
    (w.pc as i64 + 4 + 4 * (inst.imm as i16 as i64)) as u64
}

#[inline]
fn branch_if(w: &Wave, inst: &Inst, cond: bool) -> Exec {
    Ok(if cond { Flow::Jump(target(w, inst)) } else { Flow::Next })
}

/// Executes one SOPP instruction.
pub(crate) fn exec(w: &mut Wave, inst: &Inst) -> Exec {
    use Op::*;
    match inst.op {
        SNop | SWaitcnt | SSetprio | SIcacheInv | SIncperflevel | SDecperflevel | STtracedata | SWakeup => Ok(Flow::Next),
        SEndpgm | SEndpgmSaved => Ok(Flow::End),
        SBarrier => Ok(Flow::Barrier),
        SSleep => Ok(Flow::Yield),
        SBranch => Ok(Flow::Jump(target(w, inst))),
        SCbranchScc0 => branch_if(w, inst, !w.scc),
        SCbranchScc1 => branch_if(w, inst, w.scc),
        SCbranchVccz => branch_if(w, inst, w.vcc() == 0),
        SCbranchVccnz => branch_if(w, inst, w.vcc() != 0),
        SCbranchExecz => branch_if(w, inst, w.exec() == 0),
        SCbranchExecnz => branch_if(w, inst, w.exec() != 0),
        STrap => Err(Trouble::new(FaultKind::Trap((inst.imm & 0xff) as u16))),
        SSethalt => Err(Trouble::new(FaultKind::Invalid("s_sethalt: the wave halted".into()))),
        _ => Err(not_implemented(inst)),
    }
}
