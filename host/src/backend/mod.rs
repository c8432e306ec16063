//! Where kernels run: a real GPU through HIP, or the gfx942 emulator.
//!
//! [`Device`](crate::Device) holds one backend behind this trait; buffers and launches go through
//! it as raw device addresses and byte slices, already validated by the safe layer above.

pub mod emulator;
pub mod hip;

use crate::error::Result;
use ferrocm_emu::codeobj::KernelInfo;

/// Which backend a [`Device`](crate::Device) uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// A GPU through libamdhip64.
    Hip,
    /// The gfx942 emulator on the CPU.
    Emulator,
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BackendKind::Hip => "hip",
            BackendKind::Emulator => "emulator",
        })
    }
}

/// What a device is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The backend.
    pub backend: BackendKind,
    /// Marketing name (HIP) or a description (emulator).
    pub name: String,
    /// The architecture, e.g. `gfx942`.
    pub arch: String,
    /// The full target id, e.g. `gfx942:sramecc+:xnack-`.
    pub target_id: String,
    /// Compute units.
    pub compute_units: u32,
    /// Peak engine clock in MHz.
    pub clock_mhz: u32,
    /// Device memory in bytes.
    pub total_memory: u64,
    /// Max work-items per workgroup.
    pub max_threads_per_block: u32,
}

/// One validated kernel launch.
pub(crate) struct Launch<'a> {
    pub kernel: &'a KernelInfo,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_lds: u32,
    /// The argument struct's bytes (explicit kernargs only; hidden ones are the backend's job).
    pub kernargs: &'a [u8],
}

/// The operations every backend provides. Addresses are device addresses from `alloc`.
pub(crate) trait Backend: Send + Sync + std::fmt::Debug {
    fn info(&self) -> &DeviceInfo;
    fn alloc(&self, bytes: u64) -> Result<u64>;
    fn free(&self, addr: u64);
    fn write(&self, dst: u64, src: &[u8]) -> Result<()>;
    fn read(&self, src: u64, dst: &mut [u8]) -> Result<()>;
    fn copy(&self, dst: u64, src: u64, bytes: u64) -> Result<()>;
    fn launch(&self, launch: &Launch<'_>) -> Result<()>;
    fn synchronize(&self) -> Result<()>;
    fn as_hip(&self) -> Option<&hip::HipDevice> {
        None
    }
    fn as_emulator(&self) -> Option<&emulator::EmulatorDevice> {
        None
    }
}
