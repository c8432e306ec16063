//! Emulator errors. A kernel fault names the kernel, workgroup, wave, pc, instruction and lane.

use crate::codeobj::CodeObjectError;
use std::fmt;

/// Which memory an access went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// Device (global) memory.
    Global,
    /// The workgroup's LDS.
    Lds,
    /// A lane's private (scratch) memory.
    Scratch,
}

impl fmt::Display for Space {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Space::Global => "global",
            Space::Lds => "LDS",
            Space::Scratch => "scratch",
        })
    }
}

/// What went wrong in a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultKind {
    /// An access outside every allocation (or outside LDS / the lane's scratch).
    OutOfBounds {
        /// The memory.
        space: Space,
        /// The address (LDS/scratch: byte offset).
        addr: u64,
        /// The access size.
        size: u32,
    },
    /// An access the ISA requires to be aligned, misaligned.
    Misaligned {
        /// The memory.
        space: Space,
        /// The address.
        addr: u64,
        /// The required alignment.
        align: u32,
    },
    /// An instruction that does not decode.
    Decode(String),
    /// An instruction that decodes but the emulator does not execute.
    NotImplemented(String),
    /// The kernel executed `s_trap`.
    Trap(u16),
    /// A wave executed more instructions than the budget (an endless loop?).
    InstructionBudget(u64),
    /// Waves wait at `s_barrier` while the others keep running without ever reaching it.
    BarrierDeadlock(String),
    /// A register index outside the wave's allocation.
    Register(String),
    /// Anything else the ISA calls undefined that the emulator refuses to guess.
    Invalid(String),
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::OutOfBounds { space, addr, size } => write!(f, "out-of-bounds {space} access of {size} bytes at {addr:#x}"),
            FaultKind::Misaligned { space, addr, align } => {
                write!(f, "misaligned {space} access at {addr:#x} (needs {align}-byte alignment)")
            }
            FaultKind::Decode(s) => write!(f, "invalid instruction: {s}"),
            FaultKind::NotImplemented(s) => write!(f, "not implemented in the emulator: {s}"),
            FaultKind::Trap(code) => write!(f, "s_trap {code} (a device-side panic or abort)"),
            FaultKind::InstructionBudget(n) => write!(f, "wave exceeded the instruction budget of {n} (runaway kernel?)"),
            FaultKind::BarrierDeadlock(s) => write!(f, "barrier deadlock: {s}"),
            FaultKind::Register(s) => write!(f, "register out of range: {s}"),
            FaultKind::Invalid(s) => write!(f, "{s}"),
        }
    }
}

/// A fault with its location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// Kernel name.
    pub kernel: String,
    /// Workgroup id.
    pub workgroup: [u32; 3],
    /// Wave index within the workgroup.
    pub wave: u32,
    /// Program counter (device address).
    pub pc: u64,
    /// Offset of the pc from the kernel's entry.
    pub pc_offset: i64,
    /// The instruction's text (or raw dwords when it did not decode).
    pub inst: String,
    /// The lane, when the fault is a lane's.
    pub lane: Option<u32>,
    /// What happened.
    pub kind: FaultKind,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel {} faulted: {} (workgroup {:?}, wave {}, pc {:#x} = entry{:+#x}, `{}`",
            self.kernel, self.kind, self.workgroup, self.wave, self.pc, self.pc_offset, self.inst
        )?;
        if let Some(l) = self.lane {
            write!(f, ", lane {l}")?;
        }
        write!(f, ")")
    }
}

/// Every error of the emulator.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmuError {
    /// A kernel faulted.
    #[error("{0}")]
    Fault(Box<Fault>),
    /// The code object is invalid.
    #[error(transparent)]
    CodeObject(#[from] CodeObjectError),
    /// A host-side memory operation on an address that is not allocated (or past its end).
    #[error("host access of {size} bytes at {addr:#x} is outside every allocation")]
    HostAccess {
        /// The address.
        addr: u64,
        /// The size.
        size: u64,
    },
    /// `free` of something that is not the start of a live allocation.
    #[error("free of {addr:#x}, which is not a live allocation")]
    BadFree {
        /// The address.
        addr: u64,
    },
    /// The emulated device memory limit was hit.
    #[error("out of emulated device memory: {requested} bytes requested, {in_use} of {limit} in use")]
    OutOfMemory {
        /// The request.
        requested: u64,
        /// Bytes allocated.
        in_use: u64,
        /// The configured limit.
        limit: u64,
    },
    /// The kernel is not in the module.
    #[error("kernel {0} not found in the code object")]
    NoSuchKernel(String),
    /// A launch the emulator cannot perform as asked.
    #[error("invalid launch of {kernel}: {reason}")]
    Launch {
        /// The kernel.
        kernel: String,
        /// Why.
        reason: String,
    },
    /// A code object feature the emulator does not support (named).
    #[error("unsupported code object feature: {0}")]
    Unsupported(String),
}

impl From<Fault> for EmuError {
    fn from(f: Fault) -> Self {
        EmuError::Fault(Box::new(f))
    }
}
