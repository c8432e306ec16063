//! One case on the emulator: a sampled, traced run of the op, then the cycle model of every
//! launch it made. All times here except `emu_wall_s` are modeled MI300X figures.

use crate::registry::Case;
use ferrocm::Device;
use ferrocm::emulator::{ProfiledLaunch, Profiling};
use ferrocm_emu::exec::Trace;
use ferrocm_emu::model::machine::{CLOCK_MHZ, HBM_PEAK_BYTES_PER_S, peak_flops};
use ferrocm_emu::model::main_loop::{LoopMix, main_loop_mix};
use ferrocm_emu::model::{Bottleneck, KernelShape, ModelError, Modeled, Workload, model};
use std::sync::Arc;
use std::time::Instant;

/// Why a case could not be measured.
#[derive(Debug)]
pub enum BenchError {
    /// The device is not the emulator (modeling needs its traces).
    NotEmulator,
    /// The op failed.
    Op(ferrocm::Error),
    /// The op launched no kernel.
    NoLaunch,
    /// The cycle model refused a launch.
    Model(String, ferrocm_emu::model::ModelError),
}

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BenchError::NotEmulator => write!(f, "modeled figures need the emulator backend (FERROCM_BACKEND=emu)"),
            BenchError::Op(e) => write!(f, "the op failed: {e}"),
            BenchError::NoLaunch => write!(f, "the op launched no kernel"),
            BenchError::Model(k, e) => write!(f, "kernel {k}: {e}"),
        }
    }
}

impl std::error::Error for BenchError {}

impl From<ferrocm::Error> for BenchError {
    fn from(e: ferrocm::Error) -> Self {
        BenchError::Op(e)
    }
}

/// Counters of one launch, scaled from the sampled workgroups to the whole grid.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scaled {
    /// Wave instructions.
    pub instructions: f64,
    /// MFMA instructions.
    pub mfma: f64,
    /// Global bytes read and written by active lanes.
    pub global_bytes: f64,
    /// 64-byte lines touched.
    pub lines: f64,
    /// LDS bytes.
    pub lds_bytes: f64,
    /// LDS bank-conflict cycles.
    pub bank_conflict_cycles: f64,
    /// Barriers (per wave).
    pub barriers: f64,
}

/// One kernel launch of a case.
#[derive(Clone, Debug)]
pub struct LaunchReport {
    /// Kernel name.
    pub kernel: String,
    /// Workgroups in the grid.
    pub grid_workgroups: u64,
    /// Workgroups emulated.
    pub sampled_workgroups: u64,
    /// Emulator wall time of the sampled launch, seconds.
    pub emu_wall_s: f64,
    /// Counters scaled to the grid.
    pub counters: Scaled,
    /// The model's answer.
    pub modeled: Modeled,
    /// The instruction mix of the kernel's main loop (the loop with the most MFMAs), if any.
    pub main_loop: Option<LoopMix>,
    /// The trace (for profiles).
    pub trace: Arc<Trace>,
    /// Image base of the code object in emulator memory (to disassemble per-pc entries).
    pub image_base: u64,
}

/// A case's result.
#[derive(Clone, Debug)]
pub struct CaseReport {
    /// `op`.
    pub op: &'static str,
    /// Shape.
    pub shape: String,
    /// Useful FLOPs.
    pub flops: f64,
    /// Compulsory HBM bytes.
    pub min_bytes: u64,
    /// Compute roof name.
    pub math: &'static str,
    /// Peak FLOP/s of that roof.
    pub peak_flops: f64,
    /// Emulator wall time of the op (sampled launches), seconds.
    pub emu_wall_s: f64,
    /// Modeled MI300X time, seconds (sum over the op's launches).
    pub modeled_s: f64,
    /// Modeled FLOP/s.
    pub flops_per_s: f64,
    /// Modeled time with every launch at the peak clock ([`CLOCK_MHZ`]), seconds: the figure the
    /// project's targets are stated at, independent of the model's clock-under-load line.
    pub modeled_peak_clock_s: f64,
    /// Modeled FLOP/s at the peak clock.
    pub flops_per_s_peak_clock: f64,
    /// Modeled bytes per second (compulsory bytes over modeled time).
    pub bytes_per_s: f64,
    /// Modeled time's share of the roofline bound: `max(flops/peak, bytes/HBM peak) / time`.
    pub roof_fraction: f64,
    /// The bottleneck the model names for the longest launch.
    pub bottleneck: Bottleneck,
    /// The same as text, with the busiest resource of a latency-bound launch.
    pub bottleneck_text: String,
    /// Launches, in order.
    pub launches: Vec<LaunchReport>,
}

impl CaseReport {
    /// FLOPs per compulsory byte.
    pub fn intensity(&self) -> f64 {
        self.flops / self.min_bytes.max(1) as f64
    }
}

fn scaled(l: &ProfiledLaunch) -> Scaled {
    let c = &l.stats.counters;
    let f = l.stats.grid_workgroups as f64 / c.workgroups.max(1) as f64;
    Scaled {
        instructions: c.instructions as f64 * f,
        mfma: c.mfma.values().sum::<u64>() as f64 * f,
        global_bytes: (c.global.bytes_read + c.global.bytes_written) as f64 * f,
        lines: c.global.lines as f64 * f,
        lds_bytes: (c.lds.bytes_read + c.lds.bytes_written) as f64 * f,
        bank_conflict_cycles: c.lds.bank_conflict_cycles as f64 * f,
        barriers: c.barriers as f64 * f,
    }
}

/// Prepares `case` on `dev` (an emulator device), runs it once with profiling on, and models
/// every launch. The op's compulsory bytes are given to its busiest launch (the others are
/// modeled as streaming).
///
/// # Errors
/// [`BenchError`].
pub fn run_case(dev: &Device, case: &Case) -> Result<CaseReport, BenchError> {
    run_case_following(dev, case, 0)
}

/// [`run_case`] with every launch's timeline ([`ferrocm_emu::model::Modeled::timeline`])
/// following workgroup `workgroup` of its busiest CU (in dispatch order; 0 is the first), for
/// `cargo xtask profile --workgroup N`.
///
/// # Errors
/// [`BenchError`].
pub fn run_case_following(dev: &Device, case: &Case, workgroup: u64) -> Result<CaseReport, BenchError> {
    let emu = dev.as_emulator().ok_or(BenchError::NotEmulator)?;
    let mut op = (case.prepare)(dev, 1)?;
    emu.take_profiled();
    emu.set_profiling(Some(Profiling { sample_workgroups: case.sample_workgroups }));
    let started = Instant::now();
    let ran = op();
    let wall = started.elapsed().as_secs_f64();
    emu.set_profiling(None);
    let launches = emu.take_profiled();
    ran?;
    if launches.is_empty() {
        return Err(BenchError::NoLaunch);
    }
    // The busiest launch: most instructions over its grid.
    let weight = |l: &ProfiledLaunch| scaled(l).instructions;
    let main = (0..launches.len()).max_by(|&a, &b| weight(&launches[a]).total_cmp(&weight(&launches[b]))).unwrap_or(0);
    let mut reports = Vec::new();
    for (i, l) in launches.iter().enumerate() {
        let k = dev
            .code_object()
            .kernel(&l.kernel)
            .ok_or_else(|| BenchError::Op(ferrocm::Error::KernelNotFound { kernel: l.kernel.clone(), arch: dev.arch().into() }))?;
        let trace = l.stats.trace.clone().ok_or_else(|| BenchError::Model(l.kernel.clone(), ferrocm_emu::model::ModelError::NoTrace))?;
        let load =
            Workload { timeline_workgroup: workgroup, ..Workload::mi300x(l.stats.grid_workgroups, (i == main).then_some(case.min_bytes)) };
        let modeled =
            model(&trace, &KernelShape::of(k, l.params.dynamic_lds), &load).map_err(|e| BenchError::Model(l.kernel.clone(), e))?;
        let main_loop = main_loop_mix(&trace).map_err(|e| BenchError::Model(l.kernel.clone(), ModelError::Unknown(e.0)))?;
        reports.push(LaunchReport {
            kernel: l.kernel.clone(),
            grid_workgroups: l.stats.grid_workgroups,
            sampled_workgroups: l.stats.counters.workgroups,
            emu_wall_s: l.stats.wall_time.as_secs_f64(),
            counters: scaled(l),
            modeled,
            main_loop,
            trace,
            image_base: emu.module().image_base,
        });
    }
    let modeled_s: f64 = reports.iter().map(|r| r.modeled.seconds).sum();
    let modeled_peak_clock_s: f64 = reports.iter().map(|r| r.modeled.cycles as f64 / (CLOCK_MHZ * 1e6)).sum();
    let peak = peak_flops(case.math);
    let bound = (case.flops / peak).max(case.min_bytes as f64 / HBM_PEAK_BYTES_PER_S);
    let longest = reports.iter().max_by(|a, b| a.modeled.seconds.total_cmp(&b.modeled.seconds)).expect("at least one launch");
    Ok(CaseReport {
        op: case.op,
        shape: case.shape.clone(),
        flops: case.flops,
        min_bytes: case.min_bytes,
        math: case.math.name(),
        peak_flops: peak,
        emu_wall_s: wall,
        modeled_s,
        flops_per_s: case.flops / modeled_s,
        modeled_peak_clock_s,
        flops_per_s_peak_clock: case.flops / modeled_peak_clock_s,
        bytes_per_s: case.min_bytes as f64 / modeled_s,
        roof_fraction: bound / modeled_s,
        bottleneck: longest.modeled.bottleneck,
        bottleneck_text: longest.modeled.bottleneck_text(),
        launches: reports,
    })
}
