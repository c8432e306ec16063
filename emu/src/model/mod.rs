//! A cycle model of MI300X: one compute unit simulated clock by clock on the emulator's
//! per-wave instruction traces, and the dispatch of the grid over 304 CUs around it.
//! Every figure it gives is *modeled*, not measured. See `README.md` in this folder for the
//! model, its constants and its approximations.
//!
//! ```text
//! Emulator::launch_with(.., LaunchOptions { sample, trace: true }) -> LaunchStats.trace
//!     -> model(trace, KernelShape, Workload) -> Modeled (time, utilisations, bottleneck, per pc)
//! ```

pub mod cost;
mod cu;
pub mod machine;
pub mod main_loop;
mod run;

pub use cu::{Run, Stall, TIMELINE_MIN_STALL, WaveTimeline};
pub use machine::Chip;
pub use run::{ModelOptions, ModeledLaunch, ModeledLaunchError, modeled_launch};

use crate::codeobj::KernelInfo;
use crate::exec::{Class, Trace};
use machine::*;
use std::collections::{BTreeMap, BTreeSet};

/// What the model knows of a kernel besides its trace: occupancy limits from the code object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelShape {
    /// Waves per SIMD the kernel's VGPR/AGPR/SGPR use allows (1..=8).
    pub waves_per_simd: u32,
    /// LDS bytes per workgroup (static plus launch-sized).
    pub lds_per_workgroup: u32,
}

impl KernelShape {
    /// The limits of `kernel` launched with `dynamic_lds` bytes of launch-sized LDS.
    pub fn of(kernel: &KernelInfo, dynamic_lds: u32) -> KernelShape {
        KernelShape { waves_per_simd: kernel.waves_per_simd(), lds_per_workgroup: kernel.meta.group_segment_fixed_size + dynamic_lds }
    }
}

/// The launch as a whole.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workload {
    /// Workgroups in the grid.
    pub grid_workgroups: u64,
    /// Bytes the launch must move to or from HBM at least (its inputs and outputs, each once),
    /// when known. Requests beyond that are taken to hit in L2/Infinity Cache. `None`: every
    /// requested byte goes to HBM (a streaming kernel).
    pub hbm_bytes: Option<u64>,
    /// The chip (CU count, dies, clock, HBM).
    pub chip: Chip,
    /// Which of the busiest CU's workgroups (in dispatch order, from 0) [`Modeled::timeline`]
    /// follows; past the last, the timeline is empty.
    pub timeline_workgroup: u64,
}

impl Workload {
    /// A launch of `grid_workgroups` on MI300X.
    pub fn mi300x(grid_workgroups: u64, hbm_bytes: Option<u64>) -> Workload {
        Workload { grid_workgroups, hbm_bytes, chip: Chip::MI300X, timeline_workgroup: 0 }
    }
}

/// The resource the model finds limiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Bottleneck {
    /// The matrix cores are busy most of the time.
    MatrixCores,
    /// The vector ALUs are.
    Valu,
    /// The LDS pipe is.
    Lds,
    /// The CU's share of L2/HBM bandwidth is.
    Memory,
    /// No pipe is busy most of the time: waves wait on latencies or barriers (too few waves,
    /// or too little independent work per wave, to hide them).
    Latency,
}

impl Modeled {
    /// The bottleneck for reports: for a latency-bound kernel, with its busiest resource.
    pub fn bottleneck_text(&self) -> String {
        match self.bottleneck {
            Bottleneck::Latency if self.busiest.1 > 0.0 => {
                format!("latency (busiest: {} {:.0}%)", self.busiest.0.name(), 100.0 * self.busiest.1)
            }
            b => b.name().to_string(),
        }
    }
}

impl Bottleneck {
    /// Lowercase name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Bottleneck::MatrixCores => "matrix cores",
            Bottleneck::Valu => "VALU",
            Bottleneck::Lds => "LDS",
            Bottleneck::Memory => "memory",
            Bottleneck::Latency => "latency",
        }
    }
}

/// A resource is called the bottleneck when busy at least this share of the time; below it the
/// kernel is latency-bound. A reporting threshold of this model, not a hardware figure.
const BOTTLENECK_BUSY: f64 = 0.6;
/// Wave instructions the CU simulation replays at most before extrapolating (keeps a bench
/// under a few seconds; a GEMM workgroup of 4096^3 is far below it).
const EVENT_BUDGET: u64 = 40_000_000;

/// Busy share of each resource over the simulated CU's run (0..=1).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Utilization {
    /// Matrix cores (mean over the 4 SIMDs).
    pub mfma: f64,
    /// VALUs (mean over the 4 SIMDs).
    pub valu: f64,
    /// LDS pipe.
    pub lds: f64,
    /// The CU's memory path (its share of L2/HBM bandwidth).
    pub memory: f64,
}

/// Modeled cost of one instruction address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PcCost {
    /// Executions on the busiest CU (scaled to its workgroup count).
    pub executions: u64,
    /// Wave-clocks spent reaching and issuing it (stalls before it plus its issue turn).
    pub wave_cycles: u64,
}

/// The model's answer for one launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Modeled {
    /// Modeled kernel time in clocks: the busiest CU's (the CU simulation counts clocks; the
    /// time divides them by `clock_mhz`).
    pub cycles: u64,
    /// Modeled kernel time in seconds: `cycles` at `clock_mhz`.
    pub seconds: f64,
    /// The clock the time is at, MHz: the chip's peak lowered for matrix-core load
    /// ([`Chip::clock_under`]).
    pub clock_mhz: f64,
    /// Workgroups the busiest CU runs (`ceil(grid / CUs)`).
    pub workgroups_per_cu: u64,
    /// Workgroups simulated clock by clock (the rest extrapolated at the steady rate).
    pub simulated_workgroups: u64,
    /// Grid workgroups over the slots of a whole number of dispatch rounds: 1 when every CU
    /// runs the same count.
    pub tail_efficiency: f64,
    /// Waves per SIMD the registers allow.
    pub waves_per_simd: u32,
    /// Most workgroups resident on the CU at once.
    pub resident_workgroups: u32,
    /// Bytes requested through the memory path, whole grid (64-byte lines).
    pub requested_bytes: f64,
    /// Of those, the share modeled as going to HBM.
    pub hbm_fraction: f64,
    /// Busy shares.
    pub utilization: Utilization,
    /// What limits the kernel.
    pub bottleneck: Bottleneck,
    /// The busiest resource and its busy share (the same as `bottleneck` unless that is
    /// [`Bottleneck::Latency`]).
    pub busiest: (Bottleneck, f64),
    /// Wave-clocks per instruction class (where the waves' time goes).
    pub by_class: BTreeMap<&'static str, u64>,
    /// Per instruction address (byte offset in the code object image).
    pub per_pc: BTreeMap<u32, PcCost>,
    /// One workgroup the busiest CU ran ([`Workload::timeline_workgroup`], the first unless
    /// asked), wave by wave (`cargo xtask profile` prints it).
    pub timeline: Vec<WaveTimeline>,
}

/// Why the model cannot answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The launch was not traced (or traced no workgroup).
    #[error("the launch has no trace: run it with LaunchOptions {{ trace: true, .. }}")]
    NoTrace,
    /// An instruction the model cannot cost.
    #[error("the cycle model cannot cost {0}")]
    Unknown(String),
    /// A workgroup that cannot be resident on a CU.
    #[error("the cycle model cannot place the kernel: {0}")]
    DoesNotFit(String),
    /// The simulation found no wave able to issue.
    #[error("cycle model deadlock: {0}")]
    Deadlock(String),
}

/// Models `trace` (a sample of the launch's workgroups) as the whole launch of `load`.
///
/// # Errors
/// [`ModelError`]: no trace, an uncostable instruction, a workgroup too large for a CU.
pub fn model(trace: &Trace, kernel: &KernelShape, load: &Workload) -> Result<Modeled, ModelError> {
    let sample = &trace.workgroups;
    if sample.is_empty() || load.grid_workgroups == 0 {
        return Err(ModelError::NoTrace);
    }
    if kernel.waves_per_simd == 0 {
        return Err(ModelError::DoesNotFit("the kernel's registers exceed a SIMD's".into()));
    }
    if kernel.lds_per_workgroup > LDS_BYTES {
        return Err(ModelError::DoesNotFit(format!("{} bytes of LDS per workgroup", kernel.lds_per_workgroup)));
    }
    let n = sample.len() as f64;
    let line_bytes: u64 = sample
        .iter()
        .flat_map(|w| w.waves.iter().flatten())
        .filter(|e| e.class == Class::Vmem)
        .map(|e| e.lines() as u64 * LINE_BYTES)
        .sum();
    let requested = line_bytes as f64 / n * load.grid_workgroups as f64;
    let hbm_fraction = match load.hbm_bytes {
        Some(h) if requested > 0.0 => (h as f64 / requested).min(1.0),
        _ => 1.0,
    };
    // Bandwidth shares: all busy CUs split HBM evenly; the CUs of one die split its L2.
    let chip = &load.chip;
    let active = load.grid_workgroups.min(chip.cus);
    let hbm_per_cu = chip.hbm_bytes_per_s / (chip.clock_mhz * 1e6) / active as f64;
    let l2_per_cu = L2_BYTES_PER_CLOCK_PER_XCD / active.div_ceil(chip.xcds).min(chip.cus_per_xcd()) as f64;
    // Every byte crosses L2, the missed share HBM too; the two are pipelined, the slower rules.
    let mem_clocks_per_byte = (hbm_fraction / hbm_per_cu).max(1.0 / l2_per_cu);

    let per_cu = load.grid_workgroups.div_ceil(chip.cus);
    let events_per_wg = (sample.iter().map(|w| w.instructions() as u64).sum::<u64>() as f64 / n).max(1.0);
    let cap = ((EVENT_BUDGET as f64 / events_per_wg) as u64).max(2);
    let job = cu::CuJob {
        traces: sample,
        workgroups: per_cu,
        waves_per_simd: kernel.waves_per_simd,
        lds_per_workgroup: kernel.lds_per_workgroup,
        mem_clocks_per_byte,
        timeline_workgroup: load.timeline_workgroup,
    };
    let full = cu::simulate(&job, cap)?;
    let cycles = if per_cu <= cap {
        full.cycles
    } else {
        // Steady state: the clocks the second half of the simulated workgroups took, per workgroup.
        let half = cu::simulate(&job, cap / 2)?;
        let rate = (full.cycles - half.cycles) as f64 / (cap - cap / 2) as f64;
        full.cycles + (rate * (per_cu - cap) as f64).round() as u64
    };
    let sim_cycles = full.cycles.max(1) as f64;
    let utilization = Utilization {
        mfma: full.mfma_busy as f64 / (SIMDS as f64 * sim_cycles),
        valu: full.valu_busy as f64 / (SIMDS as f64 * sim_cycles),
        lds: full.lds_busy as f64 / sim_cycles,
        memory: full.mem_busy / sim_cycles,
    };
    let candidates = [
        (utilization.mfma, Bottleneck::MatrixCores),
        (utilization.valu, Bottleneck::Valu),
        (utilization.lds, Bottleneck::Lds),
        (utilization.memory, Bottleneck::Memory),
    ];
    let (busiest, which) = candidates.iter().copied().fold((0.0, Bottleneck::Latency), |a, b| if b.0 > a.0 { b } else { a });
    let bottleneck = if busiest >= BOTTLENECK_BUSY { which } else { Bottleneck::Latency };
    let scale = per_cu as f64 / full.simulated_workgroups as f64;
    let per_pc = full
        .per_pc
        .iter()
        .map(|(&pc, &(ex, wc))| {
            (pc, PcCost { executions: (ex as f64 * scale).round() as u64, wave_cycles: (wc as f64 * scale).round() as u64 })
        })
        .collect();
    let by_class = full.by_class.iter().map(|(&k, &v)| (k, (v as f64 * scale).round() as u64)).collect();
    let clock_mhz = chip.clock_under(utilization.mfma);
    Ok(Modeled {
        cycles,
        seconds: cycles as f64 / (clock_mhz * 1e6),
        clock_mhz,
        workgroups_per_cu: per_cu,
        simulated_workgroups: full.simulated_workgroups,
        tail_efficiency: load.grid_workgroups as f64 / (chip.cus * per_cu) as f64,
        waves_per_simd: kernel.waves_per_simd,
        resident_workgroups: full.max_resident,
        requested_bytes: requested,
        hbm_fraction,
        utilization,
        bottleneck,
        busiest: (which, busiest),
        by_class,
        per_pc,
        timeline: full.timeline,
    })
}

/// A basic block of the traced code with its modeled cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Byte offset (in the image) of its first instruction.
    pub start: u32,
    /// Byte offsets of its executed instructions, in address order.
    pub pcs: Vec<u32>,
    /// Executions of its first instruction.
    pub executions: u64,
    /// Wave-clocks spent in it.
    pub wave_cycles: u64,
    /// Its share of all wave-clocks.
    pub share: f64,
}

/// The basic blocks of the traced code (a block starts at the first instruction of a wave, at a
/// branch target and after a branch), costliest first.
pub fn hot_blocks(trace: &Trace, modeled: &Modeled) -> Vec<Block> {
    let mut leaders = BTreeSet::new();
    for wave in trace.workgroups.iter().flat_map(|w| &w.waves) {
        if let Some(first) = wave.first() {
            leaders.insert(first.pc);
        }
        for pair in wave.windows(2) {
            if pair[0].class == Class::Branch {
                leaders.insert(pair[1].pc);
            }
        }
    }
    let mut blocks: BTreeMap<u32, Block> = BTreeMap::new();
    let total: u64 = modeled.per_pc.values().map(|c| c.wave_cycles).sum::<u64>().max(1);
    for (&pc, c) in &modeled.per_pc {
        let start = leaders.range(..=pc).next_back().copied().unwrap_or(pc);
        let b = blocks.entry(start).or_insert(Block { start, pcs: Vec::new(), executions: 0, wave_cycles: 0, share: 0.0 });
        if pc == start {
            b.executions = c.executions;
        }
        b.pcs.push(pc);
        b.wave_cycles += c.wave_cycles;
    }
    let mut v: Vec<Block> = blocks.into_values().collect();
    for b in &mut v {
        b.share = b.wave_cycles as f64 / total as f64;
    }
    v.sort_by_key(|b| std::cmp::Reverse(b.wave_cycles));
    v
}
