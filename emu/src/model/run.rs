//! One launch, sampled and modeled: what `ferrocm-emu run --model` and the AITER calibration
//! do, and what a library user calls to get a modeled time for any code object.
//!
//! The sample is the benches' (`LaunchOptions::sample_for`): a few workgroups spread over the
//! grid, first and last included (or, for kernels whose workgroups exchange data through global
//! atomics, consecutive workgroups of one XCD), traced and replayed on the cycle model of one CU
//! scaled to the chip. Everything this returns besides `stats` is a *modeled* figure.

use super::machine::{Chip, peak_flops_on};
use super::main_loop::{LoopMix, main_loop_mix};
use super::{KernelShape, ModelError, Modeled, Workload, model};
use crate::exec::{EmuError, LaunchOptions, LaunchStats, Module};
use crate::{Emulator, LaunchParams};
use serde_json::{Value, json};

/// How to model a launch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelOptions {
    /// Workgroups to emulate and trace, chosen by `LaunchOptions::sample_for` (the whole grid
    /// when it is smaller).
    pub sample_workgroups: u64,
    /// The chip.
    pub chip: Chip,
    /// The launch's compulsory HBM bytes, when known (see [`Workload::hbm_bytes`]).
    pub hbm_bytes: Option<u64>,
}

impl Default for ModelOptions {
    /// 16 workgroups (the benches' GEMM sample) on MI300X, every byte from HBM.
    fn default() -> Self {
        ModelOptions { sample_workgroups: 16, chip: Chip::MI300X, hbm_bytes: None }
    }
}

/// A sampled launch and what the model makes of it.
#[derive(Clone, Debug)]
pub struct ModeledLaunch {
    /// The sampled launch's statistics (counters of the sample only; outputs of workgroups
    /// outside the sample are not written).
    pub stats: LaunchStats,
    /// The modeled launch (times at the chip's clock).
    pub modeled: Modeled,
    /// The kernel's main-loop mix, when it has a loop with MFMAs.
    pub main_loop: Option<LoopMix>,
    /// The chip it was modeled on.
    pub chip: Chip,
}

/// Why a launch could not be modeled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModeledLaunchError {
    /// The sampled launch failed.
    #[error(transparent)]
    Emu(#[from] EmuError),
    /// The model refused the trace.
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// Runs a traced sample of `kernel`'s launch and models the whole launch on `opts.chip`.
///
/// # Errors
/// [`ModeledLaunchError`]: the launch's own errors, or the model's.
pub fn modeled_launch(
    emu: &Emulator,
    module: &Module,
    kernel: &str,
    params: &LaunchParams,
    opts: &ModelOptions,
) -> Result<ModeledLaunch, ModeledLaunchError> {
    let k = module.co.kernel(kernel).ok_or_else(|| EmuError::NoSuchKernel(kernel.to_string()))?;
    let total = crate::exec::volume(params.grid).unwrap_or(0);
    let sample = LaunchOptions {
        sample: Some(LaunchOptions::sample_for(module, kernel, total, opts.sample_workgroups, opts.chip.xcds)),
        trace: true,
        ..LaunchOptions::default()
    };
    let stats = emu.launch_with(module, kernel, params, &sample)?;
    let trace = stats.trace.clone().ok_or(ModelError::NoTrace)?;
    let load = Workload { grid_workgroups: stats.grid_workgroups, hbm_bytes: opts.hbm_bytes, chip: opts.chip, timeline_workgroup: 0 };
    let modeled = model(&trace, &KernelShape::of(k, params.dynamic_lds), &load)?;
    let main_loop = main_loop_mix(&trace).map_err(|e| ModelError::Unknown(e.0))?;
    Ok(ModeledLaunch { stats, modeled, main_loop, chip: opts.chip })
}

impl ModeledLaunch {
    /// Matrix-core FLOPs of the whole launch: the sample's MFMAs scaled to the grid.
    pub fn mfma_flops(&self) -> f64 {
        let c = &self.stats.counters;
        let sampled: f64 = c.mfma.iter().filter_map(|(name, n)| super::cost::mfma_flops(name).map(|(f, _)| f * *n as f64)).sum();
        sampled * self.stats.grid_workgroups as f64 / c.workgroups.max(1) as f64
    }

    /// The modeled figures as JSON (for `--stats json`); every value is labelled modeled.
    pub fn json(&self) -> Value {
        let m = &self.modeled;
        let u = &m.utilization;
        let flops = self.mfma_flops();
        let kinds: std::collections::BTreeSet<_> =
            self.stats.counters.mfma.keys().filter_map(|n| super::cost::mfma_flops(n).map(|(_, k)| k)).collect();
        let peak = kinds.iter().map(|&k| peak_flops_on(k, &self.chip)).fold(0.0, f64::max);
        json!({
            "modeled": true,
            "chip": { "name": self.chip.name, "cus": self.chip.cus, "xcds": self.chip.xcds, "peak_clock_mhz": self.chip.clock_mhz,
                      "loaded_clock_mhz": self.chip.loaded_clock_mhz, "hbm_bytes_per_s": self.chip.hbm_bytes_per_s },
            "clock_mhz": m.clock_mhz,
            "seconds": m.seconds,
            "cycles": m.cycles,
            "sampled_workgroups": self.stats.counters.workgroups,
            "grid_workgroups": self.stats.grid_workgroups,
            "workgroups_per_cu": m.workgroups_per_cu,
            "simulated_workgroups": m.simulated_workgroups,
            "tail_efficiency": m.tail_efficiency,
            "waves_per_simd": m.waves_per_simd,
            "resident_workgroups": m.resident_workgroups,
            "utilization": { "mfma": u.mfma, "valu": u.valu, "lds": u.lds, "memory": u.memory },
            "bottleneck": m.bottleneck.name(),
            "bottleneck_text": m.bottleneck_text(),
            "requested_bytes": m.requested_bytes,
            "hbm_fraction": m.hbm_fraction,
            "mfma_flops": flops,
            "mfma_flops_per_s": if m.seconds > 0.0 { flops / m.seconds } else { 0.0 },
            "mfma_peak_fraction": if m.seconds > 0.0 && peak > 0.0 { flops / m.seconds / peak } else { 0.0 },
            "main_loop_mfma_share": self.main_loop.map(|l| l.mfma_share()),
        })
    }

    /// The modeled figures as text lines.
    pub fn text(&self) -> String {
        let m = &self.modeled;
        let u = &m.utilization;
        let flops = self.mfma_flops();
        let mut s = format!(
            "modeled {} ({} CUs, clock {:.0} MHz under this load): {:.2} us, {} workgroups ({} per CU, {} sampled, \
             tail efficiency {:.0}%), {} waves/SIMD\n",
            self.chip.name,
            self.chip.cus,
            m.clock_mhz,
            m.seconds * 1e6,
            self.stats.grid_workgroups,
            m.workgroups_per_cu,
            self.stats.counters.workgroups,
            100.0 * m.tail_efficiency,
            m.waves_per_simd
        );
        s += &format!(
            "modeled utilisation: matrix cores {:.0}%, VALU {:.0}%, LDS {:.0}%, memory {:.0}%; bottleneck: {}\n",
            100.0 * u.mfma,
            100.0 * u.valu,
            100.0 * u.lds,
            100.0 * u.memory,
            m.bottleneck_text()
        );
        if flops > 0.0 {
            s += &format!("modeled MFMA throughput: {:.1} TFLOP/s\n", flops / m.seconds / 1e12);
        }
        if let Some(l) = self.main_loop {
            s += &format!("main loop {:#x}..{:#x}: MFMA share {:.0}% of vector-unit cycles\n", l.head, l.back, 100.0 * l.mfma_share());
        }
        s
    }
}
