//! The emulator backend: kernels run on the CPU in ferrocm's gfx942 emulator (`ferrocm-emu`),
//! executing the same code object a GPU would.
//!
//! Launches are synchronous. Settings come from the environment: FERROCM_EMU_THREADS (CPU threads
//! for workgroups, default: all cores), FERROCM_EMU_BUDGET (instructions per wave before a kernel
//! is declared runaway), FERROCM_EMU_MEMORY (bytes of emulated device memory).

use super::{Backend, BackendKind, DeviceInfo, Launch};
use crate::error::{Error, Result};
use ferrocm_emu::codeobj::CodeObject;
use ferrocm_emu::exec::Counters;
use ferrocm_emu::exec::LaunchOptions;
use ferrocm_emu::{EmuConfig, Emulator, LaunchParams, LaunchStats, Module};
use std::sync::{Arc, Mutex};

/// How launches are profiled for the cycle model (see [`EmulatorDevice::set_profiling`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profiling {
    /// Workgroups emulated (with a trace) per launch, spread over the grid; the rest are not
    /// run, so outputs are incomplete while profiling is on.
    pub sample_workgroups: u64,
}

/// One launch made while profiling was on.
#[derive(Clone, Debug)]
pub struct ProfiledLaunch {
    /// Kernel name.
    pub kernel: String,
    /// What was launched.
    pub params: LaunchParams,
    /// Counters (of the sampled workgroups), wall time and trace.
    pub stats: LaunchStats,
}

/// A device backed by the gfx942 emulator.
pub struct EmulatorDevice {
    info: DeviceInfo,
    emu: Emulator,
    module: Module,
    last: Mutex<Option<LaunchStats>>,
    total: Mutex<Counters>,
    profiling: Mutex<Option<Profiling>>,
    profiled: Mutex<Vec<ProfiledLaunch>>,
}

impl std::fmt::Debug for EmulatorDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmulatorDevice").field("info", &self.info).finish()
    }
}

fn env_num(name: &str) -> Result<Option<u64>> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| Error::InvalidArgument { op: "emulator", message: format!("{name}={v:?} is not a number") }),
        Err(_) => Ok(None),
    }
}

impl EmulatorDevice {
    /// Loads `code_object` into a new emulated gfx942.
    ///
    /// # Errors
    /// Bad FERROCM_EMU_* values; a code object the emulator cannot load.
    pub(crate) fn open(code_object: &[u8]) -> Result<EmulatorDevice> {
        let mut config = EmuConfig::default();
        if let Some(t) = env_num("FERROCM_EMU_THREADS")? {
            config.threads = (t as usize).max(1);
        }
        if let Some(b) = env_num("FERROCM_EMU_BUDGET")? {
            config.instruction_budget = b;
        }
        if let Some(m) = env_num("FERROCM_EMU_MEMORY")? {
            config.memory_limit = m;
        }
        let co = Arc::new(CodeObject::parse_for(code_object, crate::runtime::device::EMULATED_ARCH)?);
        let emu = Emulator::new(config);
        let module = emu.load(co)?;
        let info = DeviceInfo {
            backend: BackendKind::Emulator,
            name: "ferrocm gfx942 emulator (MI300X)".into(),
            arch: crate::runtime::device::EMULATED_ARCH.into(),
            target_id: format!("{}:sramecc+:xnack-", crate::runtime::device::EMULATED_ARCH),
            compute_units: 304,
            clock_mhz: 2100,
            total_memory: emu.config().memory_limit,
            max_threads_per_block: 1024,
        };
        Ok(EmulatorDevice {
            info,
            emu,
            module,
            last: Mutex::new(None),
            total: Mutex::new(Counters::default()),
            profiling: Mutex::new(None),
            profiled: Mutex::new(Vec::new()),
        })
    }

    /// Counters and timing of the most recent launch on this device.
    pub fn last_launch(&self) -> Option<LaunchStats> {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Counters summed over every launch since the device was opened or the last
    /// [`EmulatorDevice::reset_total_counters`]: what an op that launches several kernels (a main
    /// pass and a combining pass, say) costs in all.
    pub fn total_counters(&self) -> Counters {
        self.total.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Zeroes [`EmulatorDevice::total_counters`].
    pub fn reset_total_counters(&self) {
        *self.total.lock().unwrap_or_else(|p| p.into_inner()) = Counters::default();
    }

    /// Turns profiling on (`Some`) or off for the following launches: each runs only a sample of
    /// its workgroups, traced, and is recorded for [`EmulatorDevice::take_profiled`]. Results of
    /// profiled launches are incomplete; this is for the cycle model and benchmarks.
    pub fn set_profiling(&self, p: Option<Profiling>) {
        *self.profiling.lock().unwrap_or_else(|p| p.into_inner()) = p;
    }

    /// The launches recorded since the last call (oldest first).
    pub fn take_profiled(&self) -> Vec<ProfiledLaunch> {
        std::mem::take(&mut *self.profiled.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The emulator itself (memory, configuration).
    pub fn emulator(&self) -> &Emulator {
        &self.emu
    }

    /// The loaded code object.
    pub fn module(&self) -> &Module {
        &self.module
    }
}

impl Backend for EmulatorDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn alloc(&self, bytes: u64) -> Result<u64> {
        self.emu.alloc(bytes).map_err(|e| match e {
            ferrocm_emu::EmuError::OutOfMemory { requested, .. } => Error::OutOfMemory { bytes: requested },
            e => e.into(),
        })
    }
    fn free(&self, addr: u64) {
        // Only Buffer's Drop frees, once per allocation; a failure here would be a ferrocm bug,
        // and panicking in a destructor would be worse than leaking.
        let _ = self.emu.free(addr);
    }
    fn write(&self, dst: u64, src: &[u8]) -> Result<()> {
        Ok(self.emu.memory().write(dst, src)?)
    }
    fn read(&self, src: u64, dst: &mut [u8]) -> Result<()> {
        Ok(self.emu.memory().read(src, dst)?)
    }
    fn copy(&self, dst: u64, src: u64, bytes: u64) -> Result<()> {
        Ok(self.emu.memory().copy(dst, src, bytes)?)
    }
    fn launch(&self, l: &Launch<'_>) -> Result<()> {
        let params = LaunchParams { grid: l.grid, block: l.block, dynamic_lds: l.dynamic_lds, kernargs: l.kernargs.to_vec() };
        let profiling = *self.profiling.lock().unwrap_or_else(|p| p.into_inner());
        let stats = match profiling {
            None => self.emu.launch(&self.module, &l.kernel.meta.name, &params)?,
            Some(p) => {
                let total = l.grid.iter().map(|&g| g as u64).product();
                let opts = LaunchOptions { sample: Some(LaunchOptions::spread_sample(total, p.sample_workgroups)), trace: true };
                let stats = self.emu.launch_with(&self.module, &l.kernel.meta.name, &params, &opts)?;
                let rec = ProfiledLaunch { kernel: l.kernel.meta.name.clone(), params, stats: stats.clone() };
                self.profiled.lock().unwrap_or_else(|p| p.into_inner()).push(rec);
                stats
            }
        };
        self.total.lock().unwrap_or_else(|p| p.into_inner()).merge(&stats.counters);
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(stats);
        Ok(())
    }
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn as_emulator(&self) -> Option<&EmulatorDevice> {
        Some(self)
    }
}
