//! One instruction: routing to the family that implements it, and what happens next.

use super::counters::{Class, Counters};
use super::error::FaultKind;
use super::launch::LaunchInfo;
use super::memory::MemView;
use super::wave::Wave;
use super::workgroup::HotCounters;
use super::{ds, mfma, salu, smem, sopp, valu, vmem};
use crate::isa::{Enc, Inst, Op};

/// What the wave does after an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Fall through to the next instruction.
    Next,
    /// Continue at this address.
    Jump(u64),
    /// Wait at the workgroup barrier (then continue after it).
    Barrier,
    /// Let other waves run (s_sleep), then continue.
    Yield,
    /// The wave has ended.
    End,
}

/// A fault before its location is attached: what, and for which lane.
#[derive(Debug)]
pub(crate) struct Trouble {
    pub kind: FaultKind,
    pub lane: Option<u32>,
}

impl Trouble {
    pub fn new(kind: FaultKind) -> Self {
        Trouble { kind, lane: None }
    }
    pub fn lane(kind: FaultKind, lane: usize) -> Self {
        Trouble { kind, lane: Some(lane as u32) }
    }
}

impl From<FaultKind> for Trouble {
    fn from(kind: FaultKind) -> Self {
        Trouble::new(kind)
    }
}

/// Result of executing one instruction.
pub(crate) type Exec = Result<Flow, Trouble>;

/// What an instruction can touch besides its wave.
pub(crate) struct Ctx<'a, 'b> {
    pub mem: &'a MemView,
    pub lds: &'a mut [u8],
    pub counters: &'a mut Counters,
    pub hot: &'a mut HotCounters,
    pub info: &'a LaunchInfo<'b>,
}

/// The error for a decoded instruction the emulator does not execute.
pub(crate) fn not_implemented(inst: &Inst) -> Trouble {
    Trouble::new(FaultKind::NotImplemented(format!("{} ({:?} encoding, {} bytes)", inst.op.name(), inst.enc, inst.size)))
}

/// The class an instruction counts under.
pub fn class_of(inst: &Inst) -> Class {
    match inst.enc {
        Enc::Sop1 => match inst.op {
            Op::SSetpcB64 | Op::SSwappcB64 => Class::Branch,
            _ => Class::Salu,
        },
        Enc::Sop2 | Enc::Sopc => Class::Salu,
        Enc::Sopk => match inst.op {
            Op::SCallB64 => Class::Branch,
            _ => Class::Salu,
        },
        Enc::Sopp => match inst.op {
            Op::SBranch
            | Op::SCbranchScc0
            | Op::SCbranchScc1
            | Op::SCbranchVccz
            | Op::SCbranchVccnz
            | Op::SCbranchExecz
            | Op::SCbranchExecnz => Class::Branch,
            _ => Class::Other,
        },
        Enc::Smem => Class::Smem,
        Enc::Vop1 | Enc::Vop2 | Enc::Vopc | Enc::Vop3 => Class::Valu,
        Enc::Vop3p => {
            if mfma::is_mfma(inst.op) {
                Class::Mfma
            } else {
                Class::Valu
            }
        }
        Enc::Ds => Class::Ds,
        Enc::Flat | Enc::Global | Enc::Scratch | Enc::Mubuf => Class::Vmem,
    }
}

/// Executes `inst` on `w`.
#[inline]
pub(crate) fn step(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>) -> Exec {
    match inst.enc {
        Enc::Sop1 | Enc::Sop2 | Enc::Sopk | Enc::Sopc => salu::exec(w, inst),
        Enc::Sopp => sopp::exec(w, inst),
        Enc::Smem => smem::exec(w, inst, cx),
        Enc::Vop1 | Enc::Vop2 | Enc::Vopc | Enc::Vop3 => valu::exec(w, inst, cx),
        Enc::Vop3p => {
            if mfma::is_mfma(inst.op) {
                mfma::exec(w, inst)
            } else {
                valu::exec_vop3p(w, inst)
            }
        }
        Enc::Ds => ds::exec(w, inst, cx),
        Enc::Flat | Enc::Global | Enc::Scratch | Enc::Mubuf => vmem::exec(w, inst, cx),
    }
}
