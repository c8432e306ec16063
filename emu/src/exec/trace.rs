//! Per-wave instruction traces: the executed stream of each wave of the traced workgroups, with
//! what each instruction moved, for the cycle model (`crate::model`) to replay.
//!
//! Tracing is off unless a launch asks for it ([`LaunchOptions::trace`](super::LaunchOptions)):
//! the wave loop is instantiated twice (a const generic), so an untraced launch runs exactly the
//! code it ran before tracing existed.
//!
//! An event records facts, not costs: the op, its class, and for memory instructions the bytes,
//! 64-byte lines and LDS bank-conflict cycles the counters saw for that one instruction. What
//! those cost on an MI300X is the model's business.

use super::counters::{Class, Counters};
use crate::isa::Op;

/// One executed wave instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Byte offset of the instruction from the start of the code object's image.
    pub pc: u32,
    /// The instruction.
    pub op: Op,
    /// Its class in the counters' sense.
    pub class: Class,
    /// Class-specific fact (see [`Event::bytes`], [`Event::imm`]).
    pub a: u32,
    /// Class-specific fact (see [`Event::lines`], [`Event::conflict_cycles`], [`Event::taken`]).
    pub b: u32,
    /// LDS bytes moved by a VMEM instruction that loads to LDS (0 otherwise).
    pub lds_bytes: u32,
}

impl Event {
    /// VMEM: global bytes the active lanes moved; DS: LDS bytes moved.
    pub fn bytes(&self) -> u32 {
        self.a
    }
    /// VMEM: distinct 64-byte lines touched.
    pub fn lines(&self) -> u32 {
        self.b
    }
    /// DS: extra cycles lost to bank conflicts (see [`super::counters::bank_conflict_cycles`]).
    pub fn conflict_cycles(&self) -> u32 {
        self.b
    }
    /// SOPP (`s_waitcnt`, `s_nop`, ...): the 16-bit immediate.
    pub fn imm(&self) -> u32 {
        self.a
    }
    /// Branch: whether it was taken.
    pub fn taken(&self) -> bool {
        self.b != 0
    }
}

/// The traces of one workgroup's waves, wave 0 first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkgroupTrace {
    /// Workgroup id (x, y, z).
    pub id: [u32; 3],
    /// Linear workgroup index (x fastest).
    pub linear: u64,
    /// One event list per wave.
    pub waves: Vec<Vec<Event>>,
}

impl WorkgroupTrace {
    /// Wave instructions in this workgroup.
    pub fn instructions(&self) -> usize {
        self.waves.iter().map(Vec::len).sum()
    }
}

/// The traces of a launch's traced workgroups, in linear-index order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// Traced workgroups.
    pub workgroups: Vec<WorkgroupTrace>,
}

/// The counter values an instruction can change that the trace reports per instruction.
#[derive(Clone, Copy, Default)]
pub(crate) struct Snapshot {
    global_bytes: u64,
    lines: u64,
    lds_bytes: u64,
    conflicts: u64,
}

impl Snapshot {
    #[inline]
    pub fn of(c: &Counters) -> Snapshot {
        Snapshot {
            global_bytes: c.global.bytes_read + c.global.bytes_written,
            lines: c.global.lines,
            lds_bytes: c.lds.bytes_read + c.lds.bytes_written,
            conflicts: c.lds.bank_conflict_cycles,
        }
    }

    /// The event of an instruction that ran between `self` and `after`.
    #[inline]
    pub fn event(self, after: &Counters, pc: u32, op: Op, class: Class, imm: u32, taken: bool) -> Event {
        let now = Snapshot::of(after);
        let d = |a: u64, b: u64| (a - b).min(u32::MAX as u64) as u32;
        let (a, b, lds_bytes) = match class {
            Class::Vmem => (d(now.global_bytes, self.global_bytes), d(now.lines, self.lines), d(now.lds_bytes, self.lds_bytes)),
            Class::Ds => (d(now.lds_bytes, self.lds_bytes), d(now.conflicts, self.conflicts), 0),
            Class::Branch => (imm, taken as u32, 0),
            _ => (imm, 0, 0),
        };
        Event { pc, op, class, a, b, lds_bytes }
    }
}
