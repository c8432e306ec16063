//! ferrocm-emu: a gfx942 (MI300X, CDNA3) ISA emulator.
//!
//! Runs AMDGPU code objects instruction by instruction on the CPU, wave64, with counters that stand
//! in for a profiler.
#![warn(missing_docs)]

pub mod aiter;
/// Code objects: the `ferrocm-codeobj` crate, whose types the emulator's API takes
/// ([`Emulator::load`] a [`codeobj::CodeObject`]).
pub use ferrocm_codeobj as codeobj;
pub mod exec;
pub mod isa;
pub mod listing;
pub mod model;

pub use exec::{EmuConfig, EmuError, Emulator, LaunchParams, LaunchStats, Module};
