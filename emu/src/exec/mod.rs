//! The execution engine: device memory, loaded modules, launches, and the instruction semantics.
//!
//! ```text
//! Emulator (memory, config) --load--> Module (image + decode cache)
//!          \--launch(module, kernel, params)--> workgroups on CPU threads --> LaunchStats
//! ```
//! A workgroup's waves run on one thread (see `workgroup`); workgroups run in parallel unless
//! the kernel has global atomics, in which case they run in order for reproducible results.

// Families match on `Op` variants by name: a misspelt or non-gfx942 name would be a catch-all
// binding, so these lints are errors here.
#![deny(unreachable_patterns, unused_variables)]

mod atomic;
pub mod buffer;
pub mod counters;
mod cpu;
mod ds;
pub mod error;
mod launch;
mod linear_load;
pub mod memory;
mod mfma;
mod program;
pub mod report;
mod salu;
mod smem;
mod sopp;
mod staged;
mod step;
pub mod trace;
mod valu;
mod vmem;
pub mod wave;
mod workgroup;

pub use counters::{Access, Class, Counters, Counting, GlobalCounters, LdsCounters};
pub use error::{EmuError, Fault, FaultKind, Space};
pub use launch::{
    LDS_SIZE, LaunchOptions, LaunchParams, LaunchStats, MAX_KERNARG_BYTES, MAX_SCRATCH_PER_LANE, MAX_THREADS, MAX_WORKGROUP_SIZE, volume,
};
pub use memory::{Memory, PRIVATE_APERTURE, SHARED_APERTURE};
pub use program::Module;
pub use step::class_of;
pub use trace::{Event, Trace, WorkgroupTrace};

use crate::codeobj::CodeObject;
use std::sync::Arc;

/// Emulator settings.
#[derive(Clone, Debug)]
pub struct EmuConfig {
    /// CPU threads workgroups are spread over.
    pub threads: usize,
    /// Instructions a single wave may execute before it is declared runaway.
    pub instruction_budget: u64,
    /// Device memory the emulator may allocate.
    pub memory_limit: u64,
    /// Workgroups a launch may run (the grid's, or the sample's): with the per-wave budget,
    /// this bounds a launch's time; a grid of 2^32 workgroups would otherwise run for hours.
    pub max_workgroups: u64,
}

impl Default for EmuConfig {
    fn default() -> Self {
        EmuConfig {
            threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            instruction_budget: 1 << 28,
            memory_limit: 16 << 30,
            // 16M workgroups: more than any test or benchmark shape launches (an elementwise
            // op over 2^28 elements takes 2^20), a few minutes of the emulator for a tiny kernel.
            max_workgroups: 1 << 24,
        }
    }
}

impl EmuConfig {
    /// The CPU threads a launch runs workgroups on at most: `threads`, at least 1 and at most
    /// [`MAX_THREADS`].
    pub fn worker_threads(&self) -> usize {
        self.threads.clamp(1, MAX_THREADS)
    }
}

/// An emulated gfx942: device memory plus the machinery to run kernels in it.
pub struct Emulator {
    pub(crate) memory: Memory,
    pub(crate) config: EmuConfig,
    /// The launches' per-thread run state, kept between launches (`WorkgroupRun::take`): at
    /// most one per worker of the widest launch so far, each some megabytes (a counter per
    /// dword of the largest module's code, the waves' registers, the LDS).
    pub(crate) runs: std::sync::Mutex<Vec<workgroup::WorkgroupRun>>,
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator").field("config", &self.config).field("in_use", &self.memory.in_use()).finish()
    }
}

impl Emulator {
    /// A new emulated device.
    pub fn new(config: EmuConfig) -> Emulator {
        Emulator { memory: Memory::new(config.memory_limit), config, runs: Default::default() }
    }

    /// The settings.
    pub fn config(&self) -> &EmuConfig {
        &self.config
    }

    /// The device memory (allocate, read, write, copy).
    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// Allocates `bytes` of zeroed device memory.
    pub fn alloc(&self, bytes: u64) -> Result<u64, EmuError> {
        self.memory.alloc(bytes)
    }

    /// Frees an allocation.
    pub fn free(&self, addr: u64) -> Result<(), EmuError> {
        self.memory.free(addr)
    }

    /// Loads a code object (its image goes into device memory, as the HSA loader does).
    pub fn load(&self, co: Arc<CodeObject>) -> Result<Module, EmuError> {
        Module::load(&self.memory, co)
    }
}
