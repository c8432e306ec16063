//! A kernel launch as the HSA runtime and the hardware dispatcher would do it: kernarg segment with
//! hidden arguments, dispatch packet, per-wave initial registers, then workgroups on CPU threads.

use super::counters::{Counters, Counting};
use super::error::{EmuError, Fault, FaultKind};
use super::memory::{MemView, PRIVATE_APERTURE, SHARED_APERTURE};
use super::program::Module;
use super::trace::{Trace, WorkgroupTrace};
use super::wave::{FloatMode, LANES, Wave, WaveStatus, reg};
use super::workgroup::{WorkgroupRun, run_workgroup};
use super::{EmuConfig, Emulator};
use crate::codeobj::{KernelInfo, ValueKind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Max work-items per workgroup on gfx9.
pub const MAX_WORKGROUP_SIZE: u32 = 1024;
/// LDS per workgroup on gfx942.
pub const LDS_SIZE: u32 = 64 * 1024;
/// Size of `hsa_kernel_dispatch_packet_t`.
const DISPATCH_PACKET_SIZE: u64 = 64;
/// Zero bytes after the kernarg segment (see `launch`).
const KERNARG_PADDING: usize = 256;
/// Bytes reserved for the (zeroed) `hsa_queue_t` a queue pointer points at.
const QUEUE_SIZE: u64 = 128;
/// The largest kernarg segment the emulator builds (the metadata's `.kernarg_segment_size` or
/// the explicit bytes given, whichever is larger): 64 KiB. Runtimes allow far less (ROCclr
/// reports 1 KiB of kernel parameters, CUDA 32 KiB); the bound keeps a corrupt size field or a
/// `--arg zero:1000000000` from allocating gigabytes per launch.
pub const MAX_KERNARG_BYTES: u64 = 64 << 10;
/// The most scratch a work-item can have: ROCr refuses a dispatch whose private segment
/// exceeds 262128 bytes per work-item (`AqlQueue`, HSA_STATUS_ERROR_OUT_OF_RESOURCES). The
/// emulator holds a wave's scratch in host memory, so a larger descriptor value (say
/// 0xFFFFFFFF, 275 GB per wave) is refused the same way.
pub const MAX_SCRATCH_PER_LANE: u32 = 262_128;
/// CPU threads a launch uses at most, whatever `EmuConfig::threads` asks for.
pub const MAX_THREADS: usize = 256;

/// `x * y * z` of launch dimensions (work-items per workgroup, workgroups per grid), `None` past
/// `u64::MAX`: three u32 factors reach 2^96, and a wrapped product (a block of
/// [2^31, 2^31, 4] is 2^64 = 0 mod 2^64) would pass every check and run nothing.
pub fn volume(dims: [u32; 3]) -> Option<u64> {
    (dims[0] as u64).checked_mul(dims[1] as u64)?.checked_mul(dims[2] as u64)
}

/// What to launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchParams {
    /// Workgroups along x, y, z.
    pub grid: [u32; 3],
    /// Work-items per workgroup along x, y, z.
    pub block: [u32; 3],
    /// Launch-sized LDS bytes.
    pub dynamic_lds: u32,
    /// The explicit kernel arguments, laid out as the kernel expects (hidden ones are appended
    /// by the launch from the metadata).
    pub kernargs: Vec<u8>,
}

/// How to run a launch beyond what the kernel sees: which workgroups, whether to trace, how
/// much to count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchOptions {
    /// Run only these workgroups (linear indices, x fastest; out-of-grid ones are an error).
    /// Outputs of the others are not written: a sampled launch is for counting and modeling,
    /// not for results. `None` runs the whole grid.
    pub sample: Option<Vec<u64>>,
    /// Record a per-wave instruction trace of every workgroup run ([`LaunchStats::trace`]).
    pub trace: bool,
    /// How much of [`LaunchStats::counters`] to count. A trace's events carry the footprint
    /// counts, so a traced launch must count [`Counting::Full`] (a lean one is refused).
    pub counting: Counting,
}

impl LaunchOptions {
    /// The sample the benches and the cycle model trace for kernel `kernel` of `module` on a
    /// chip of `xcds` dies: [`LaunchOptions::spread_sample`] when its workgroups are
    /// independent; [`LaunchOptions::xcd_run_sample`] when its code has global atomics
    /// (workgroups that may hand each other data through memory: the stream-K GEMM's neighbours
    /// share blocks, and which of them finishes a block depends on which ran first).
    pub fn sample_for(module: &Module, kernel: &str, total: u64, n: u64, xcds: u64) -> Vec<u64> {
        if module.kernel_has_global_atomics(kernel) { Self::xcd_run_sample(total, n, xcds) } else { Self::spread_sample(total, n) }
    }

    /// `n` consecutive workgroups of one XCD from the middle of a grid of `total` on a chip of
    /// `xcds` dies: ids `s, s + xcds, s + 2 xcds, ..` (the dispatcher hands workgroup i to XCD
    /// i % xcds), consecutive ids when the grid has fewer than `xcds n`, the whole grid when
    /// `n >= total`. Kernels that order their work by XCD (`tile::order::dispatch_rank`) give
    /// these neighbouring work; run one at a time in id order (as kernels with global atomics
    /// are), each finds its predecessor's data in memory as it would on the GPU.
    pub fn xcd_run_sample(total: u64, n: u64, xcds: u64) -> Vec<u64> {
        let xcds = xcds.max(1);
        if n >= total || total <= 1 {
            return (0..total).collect();
        }
        let n = n.max(1);
        if total < xcds * n {
            let s = (total - n) / 2;
            return (s..s + n).collect();
        }
        // Workgroups 0, xcds, 2 xcds, .. run on XCD 0: total.div_ceil(xcds) of them.
        let s = (total.div_ceil(xcds) - n) / 2;
        (s..s + n).map(|j| j * xcds).collect()
    }

    /// `n` workgroups spread evenly over a grid of `total` (the first and the last always
    /// included, so a ragged edge tile is in the sample), or the whole grid when `n >= total`.
    pub fn spread_sample(total: u64, n: u64) -> Vec<u64> {
        if n >= total || total <= 1 {
            return (0..total).collect();
        }
        let n = n.max(1);
        let mut v: Vec<u64> = if n == 1 { vec![0] } else { (0..n).map(|i| i * (total - 1) / (n - 1)).collect() };
        v.dedup();
        v
    }
}

/// What a launch did.
#[derive(Clone, Debug, Default)]
pub struct LaunchStats {
    /// Counters over all workgroups.
    pub counters: Counters,
    /// Host wall time of the launch.
    pub wall_time: Duration,
    /// CPU threads used.
    pub threads: usize,
    /// Whether workgroups ran one at a time (kernels with global atomics, for determinism).
    pub sequential: bool,
    /// Workgroups in the launch's grid (more than `counters.workgroups` for a sampled launch).
    pub grid_workgroups: u64,
    /// Per-wave traces, when [`LaunchOptions::trace`] asked for them.
    pub trace: Option<Arc<Trace>>,
}

/// Everything the waves of a launch share (read-only while it runs).
pub(crate) struct LaunchInfo<'a> {
    pub module: &'a Module,
    pub kernel: &'a KernelInfo,
    pub params: &'a LaunchParams,
    pub kernarg_addr: u64,
    pub packet_addr: u64,
    pub queue_addr: u64,
    pub entry_pc: u64,
    /// Work-items per workgroup (validated: 1..=MAX_WORKGROUP_SIZE).
    pub threads: u32,
    /// Vector registers of the unified file per wave, and where the AGPRs start in it.
    pub unified_vgprs: usize,
    pub accum_offset: usize,
    pub lds_bytes: u32,
    pub scratch_per_lane: u32,
    pub mode: FloatMode,
    pub budget: u64,
}

fn launch_err(kernel: &KernelInfo, reason: impl Into<String>) -> EmuError {
    EmuError::Launch { kernel: kernel.meta.name.clone(), reason: reason.into() }
}

/// The hidden kernarg bytes of `kind` for this launch, or an error for one the emulator does not
/// provide.
fn hidden_value(kernel: &KernelInfo, kind: &ValueKind, p: &LaunchParams, queue: u64) -> Result<Option<u64>, EmuError> {
    let grid_items = |d: usize| p.grid[d] as u64 * p.block[d] as u64;
    Ok(Some(match kind {
        ValueKind::HiddenBlockCount(d) => p.grid[*d as usize] as u64,
        ValueKind::HiddenGroupSize(d) => p.block[*d as usize] as u64,
        // HIP grids are whole workgroups: the last one is never partial.
        ValueKind::HiddenRemainder(d) => grid_items(*d as usize) % p.block[*d as usize] as u64,
        ValueKind::HiddenGlobalOffset(_) | ValueKind::HiddenNone => 0,
        ValueKind::HiddenGridDims => {
            if p.grid[2] * p.block[2] > 1 {
                3
            } else if p.grid[1] * p.block[1] > 1 {
                2
            } else {
                1
            }
        }
        ValueKind::HiddenDynamicLdsSize => p.dynamic_lds as u64,
        ValueKind::HiddenSharedBase => SHARED_APERTURE >> 32,
        ValueKind::HiddenPrivateBase => PRIVATE_APERTURE >> 32,
        ValueKind::HiddenQueuePtr => queue,
        ValueKind::Other(name) if name == "hidden_multigrid_sync_arg" => 0,
        ValueKind::Other(name) if name.starts_with("hidden_") => {
            return Err(launch_err(kernel, format!("the kernel needs {name}, which the emulator does not provide")));
        }
        _ => return Ok(None),
    }))
}

impl Emulator {
    /// Runs `kernel` of `module` to completion.
    ///
    /// # Errors
    /// [`EmuError::Launch`] for a launch the hardware would refuse, [`EmuError::Fault`] for a
    /// kernel fault (the lowest-numbered faulting workgroup's, for reproducible messages).
    pub fn launch(&self, module: &Module, kernel: &str, params: &LaunchParams) -> Result<LaunchStats, EmuError> {
        self.launch_with(module, kernel, params, &LaunchOptions::default())
    }

    /// As [`Emulator::launch`], running only a sample of the workgroups and/or tracing them.
    ///
    /// # Errors
    /// As [`Emulator::launch`]; [`EmuError::Launch`] for a sampled index outside the grid.
    pub fn launch_with(&self, module: &Module, kernel: &str, params: &LaunchParams, opts: &LaunchOptions) -> Result<LaunchStats, EmuError> {
        let started = Instant::now();
        let k = module.co.kernel(kernel).ok_or_else(|| EmuError::NoSuchKernel(kernel.to_string()))?;
        let meta = &k.meta;
        let desc = &k.descriptor;

        // ---- the checks a dispatcher makes ----
        if params.grid.contains(&0) || params.block.contains(&0) {
            return Err(launch_err(k, format!("empty grid {:?} or block {:?}", params.grid, params.block)));
        }
        let max_threads = MAX_WORKGROUP_SIZE.min(meta.max_flat_workgroup_size);
        let threads = match volume(params.block) {
            Some(t) if t <= max_threads as u64 => t as u32,
            t => {
                let t = t.map_or("more than 2^64".to_string(), |t| t.to_string());
                return Err(launch_err(k, format!("block {:?} has {t} work-items per workgroup, max {max_threads}", params.block)));
            }
        };
        if params.grid.iter().zip(params.block).any(|(&g, b)| g as u64 * b as u64 > u32::MAX as u64) {
            return Err(launch_err(k, "grid exceeds 2^32 work-items in a dimension"));
        }
        let grid_workgroups =
            volume(params.grid).ok_or_else(|| launch_err(k, format!("grid {:?} has more than 2^64 workgroups", params.grid)))?;
        if let Some(bad) = opts.sample.as_ref().and_then(|s| s.iter().find(|&&i| i >= grid_workgroups)) {
            return Err(launch_err(k, format!("sampled workgroup {bad} is outside the grid of {grid_workgroups}")));
        }
        if opts.trace && opts.counting != Counting::Full {
            return Err(launch_err(k, "a traced launch counts fully: its events carry the footprint counts (Counting::Full)"));
        }
        let to_run = opts.sample.as_ref().map_or(grid_workgroups, |s| s.len() as u64);
        if to_run > self.config.max_workgroups {
            return Err(launch_err(
                k,
                format!(
                    "{to_run} workgroups to run, more than the emulator's limit of {} (EmuConfig::max_workgroups)",
                    self.config.max_workgroups
                ),
            ));
        }
        if desc.private_segment_fixed_size > MAX_SCRATCH_PER_LANE {
            return Err(launch_err(
                k,
                format!(
                    "the descriptor asks for {} bytes of scratch per work-item, more than the {MAX_SCRATCH_PER_LANE} a dispatch can have",
                    desc.private_segment_fixed_size
                ),
            ));
        }
        let lds_bytes = meta.group_segment_fixed_size as u64 + params.dynamic_lds as u64;
        if lds_bytes > LDS_SIZE as u64 {
            return Err(launch_err(k, format!("{lds_bytes} bytes of LDS, max {LDS_SIZE}")));
        }
        if desc.wavefront_size32() || meta.wavefront_size != 64 {
            return Err(launch_err(k, "wave32 kernels do not run on gfx9"));
        }
        if desc.uses_dynamic_stack() || meta.uses_dynamic_stack {
            return Err(EmuError::Unsupported(format!("kernel {kernel} uses a dynamically sized stack")));
        }
        let explicit_end = meta.explicit_args_end();
        if (params.kernargs.len() as u64) < explicit_end {
            return Err(launch_err(k, format!("{} kernarg bytes given, the kernel reads {explicit_end}", params.kernargs.len())));
        }
        let ka_size = (meta.kernarg_segment_size as u64).max(params.kernargs.len() as u64).max(8);
        if ka_size > MAX_KERNARG_BYTES {
            return Err(launch_err(
                k,
                format!(
                    "a kernarg segment of {ka_size} bytes ({} given, {} in the metadata), more than the {MAX_KERNARG_BYTES} the emulator allows",
                    params.kernargs.len(),
                    meta.kernarg_segment_size
                ),
            ));
        }
        let ka_size = ka_size as usize;

        // ---- kernarg segment, dispatch packet, queue ----
        let mem = &self.memory;
        // Freed when the launch returns, on every path.
        let mut scratchpad = Allocations { mem, addrs: Vec::new() };
        let queue_addr = scratchpad.alloc(QUEUE_SIZE)?;
        let mut kernarg = vec![0u8; ka_size];
        kernarg[..params.kernargs.len()].copy_from_slice(&params.kernargs);
        for a in meta.args.iter().filter(|a| a.value_kind.is_hidden()) {
            if let Some(v) = hidden_value(k, &a.value_kind, params, queue_addr)? {
                let (off, n) = (a.offset as usize, (a.size as usize).min(8));
                if off + n > kernarg.len() {
                    return Err(EmuError::Unsupported(format!("hidden argument at {off} outside the kernarg segment")));
                }
                kernarg[off..off + n].copy_from_slice(&v.to_le_bytes()[..n]);
            }
        }
        // Scalar loads fetch kernargs in blocks of up to 64 bytes and may read past the segment's
        // end (LLVM merges neighbouring loads); the runtime's kernarg buffers are padded, so the
        // emulator's is too.
        let kernarg_addr = scratchpad.alloc((ka_size + KERNARG_PADDING) as u64)?;
        mem.write(kernarg_addr, &kernarg)?;

        let packet_addr = scratchpad.alloc(DISPATCH_PACKET_SIZE)?;
        let mut pkt = [0u8; DISPATCH_PACKET_SIZE as usize];
        let dims = hidden_value(k, &ValueKind::HiddenGridDims, params, 0)?.unwrap_or(1) as u16;
        pkt[0..2].copy_from_slice(&(2u16/* HSA_PACKET_TYPE_KERNEL_DISPATCH */).to_le_bytes());
        pkt[2..4].copy_from_slice(&dims.to_le_bytes());
        for d in 0..3 {
            pkt[4 + 2 * d..6 + 2 * d].copy_from_slice(&(params.block[d] as u16).to_le_bytes());
            pkt[12 + 4 * d..16 + 4 * d].copy_from_slice(&(params.grid[d] * params.block[d]).to_le_bytes());
        }
        pkt[24..28].copy_from_slice(&desc.private_segment_fixed_size.to_le_bytes());
        pkt[28..32].copy_from_slice(&(lds_bytes as u32).to_le_bytes());
        pkt[32..40].copy_from_slice(&(module.image_base + k.descriptor_vaddr).to_le_bytes());
        pkt[40..48].copy_from_slice(&kernarg_addr.to_le_bytes());
        mem.write(packet_addr, &pkt)?;

        // ---- register allocation from the descriptor ----
        // What the dispatcher reads: the granulated count of the unified VGPR+AGPR file and
        // ACCUM_OFFSET. Hand-written objects may omit `.agpr_count` from the metadata, so the
        // metadata is only a cross-check: counts it declares beyond the allocation mean the two
        // disagree, and the launch is refused rather than guessed at.
        let unified = desc.allocated_vgprs() as usize;
        let acc = desc.accum_offset() as usize;
        if let Some(why) = k.register_mismatch() {
            return Err(launch_err(k, why));
        }
        let mode = FloatMode {
            round32: desc.float_round_mode_32() as u8,
            round16_64: desc.float_round_mode_16_64() as u8,
            denorm32: desc.float_denorm_mode_32() as u8,
            denorm16_64: desc.float_denorm_mode_16_64() as u8,
            dx10_clamp: desc.dx10_clamp(),
            ieee: desc.ieee_mode(),
            fp16_ovfl: desc.fp16_overflow(),
            vskip: false,
        };
        let info = LaunchInfo {
            module,
            kernel: k,
            params,
            kernarg_addr,
            packet_addr,
            queue_addr,
            entry_pc: module.image_base + k.code_vaddr,
            threads,
            unified_vgprs: unified,
            accum_offset: acc,
            lds_bytes: lds_bytes as u32,
            scratch_per_lane: desc.private_segment_fixed_size,
            mode,
            budget: self.config.instruction_budget,
        };
        check_user_sgprs(&info)?;

        // ---- run the workgroups ----
        let sequential = self.config.threads <= 1 || module.kernel_has_global_atomics(kernel);
        let result = run_all(&info, &mem.view(), &self.config, &self.runs, sequential, opts, to_run);
        scratchpad.free()?;
        let (counters, threads, trace) = result?;
        Ok(LaunchStats { counters, wall_time: started.elapsed(), threads, sequential, grid_workgroups, trace: trace.map(Arc::new) })
    }
}

/// Device allocations a launch makes for itself, freed when it ends however it ends.
struct Allocations<'m> {
    mem: &'m super::memory::Memory,
    addrs: Vec<u64>,
}

impl Allocations<'_> {
    fn alloc(&mut self, bytes: u64) -> Result<u64, EmuError> {
        let a = self.mem.alloc(bytes)?;
        self.addrs.push(a);
        Ok(a)
    }

    /// Frees everything now, reporting a failure (the early-return paths free in `drop`).
    fn free(mut self) -> Result<(), EmuError> {
        for a in std::mem::take(&mut self.addrs) {
            self.mem.free(a)?;
        }
        Ok(())
    }
}

impl Drop for Allocations<'_> {
    fn drop(&mut self) {
        for &a in &self.addrs {
            // Allocated by this launch and not freed yet: cannot fail.
            let _ = self.mem.free(a);
        }
    }
}

/// The user SGPR count the descriptor declares must match what its enable bits lay out.
fn check_user_sgprs(info: &LaunchInfo<'_>) -> Result<(), EmuError> {
    let d = &info.kernel.descriptor;
    let u = d.user_sgprs();
    let laid_out = 4 * u.private_segment_buffer as u32
        + 2 * (u.dispatch_ptr as u32
            + u.queue_ptr as u32
            + u.kernarg_segment_ptr as u32
            + u.dispatch_id as u32
            + u.flat_scratch_init as u32)
        + u.private_segment_size as u32
        + d.kernarg_preload().0;
    if laid_out != d.user_sgpr_count() {
        return Err(EmuError::Unsupported(format!(
            "kernel {}: descriptor declares {} user SGPRs but its enable bits lay out {laid_out}",
            info.kernel.meta.name,
            d.user_sgpr_count()
        )));
    }
    Ok(())
}

/// Initial registers of wave `w` of workgroup `wg`, per the AMDHSA ABI.
pub(crate) fn init_wave(wave: &mut Wave, info: &LaunchInfo<'_>, wg: [u32; 3], w: u32, mem: &MemView) -> Result<(), FaultKind> {
    wave.reset(info.unified_vgprs, info.accum_offset);
    wave.index = w;
    wave.pc = info.entry_pc;
    wave.mode = info.mode;
    let d = &info.kernel.descriptor;
    let u = d.user_sgprs();
    let mut s = 0usize;
    let mut put = |wave: &mut Wave, vals: &[u32]| {
        for &v in vals {
            wave.s[s] = v;
            s += 1;
        }
    };
    let lohi = |a: u64| [a as u32, (a >> 32) as u32];
    if u.private_segment_buffer {
        // The scratch buffer resource the runtime builds for this wave (MUBUF accesses through it
        // reach the lane's private memory).
        put(wave, &super::buffer::private_segment_vsharp(info.scratch_per_lane));
    }
    if u.dispatch_ptr {
        put(wave, &lohi(info.packet_addr));
    }
    if u.queue_ptr {
        put(wave, &lohi(info.queue_addr));
    }
    if u.kernarg_segment_ptr {
        put(wave, &lohi(info.kernarg_addr));
    }
    if u.dispatch_id {
        put(wave, &[0, 0]);
    }
    if u.flat_scratch_init {
        put(wave, &lohi(PRIVATE_APERTURE));
    }
    if u.private_segment_size {
        put(wave, &[info.scratch_per_lane]);
    }
    let (preload_len, preload_off) = d.kernarg_preload();
    for i in 0..preload_len {
        let addr = info.kernarg_addr + 4 * (preload_off + i) as u64;
        let v = mem.find(addr, 4).map(|(r, o)| r.read_u32(o)).unwrap_or(0);
        put(wave, &[v]);
    }
    let ids = d.workgroup_id_enabled();
    for dim in 0..3 {
        if ids[dim] {
            put(wave, &[wg[dim]]);
        }
    }
    if d.workgroup_info_enabled() {
        put(wave, &[0]);
    }
    if d.enable_private_segment() {
        put(wave, &[0]); // private segment wave offset: each wave has its own scratch here
    }
    if s > 102 {
        return Err(FaultKind::Invalid(format!("{s} initial SGPRs exceed the 102 a wave has")));
    }

    // v0: packed work-item ids (gfx90a+: x 9:0, y 19:10, z 29:20) and EXEC for this wave.
    // The block's volume is at most 1024 (validated), so these products do not wrap.
    let b = info.params.block;
    let threads = info.threads;
    let mut exec = 0u64;
    let v0 = wave.v.first_mut().ok_or(FaultKind::Register("the kernel allocates no VGPRs".into()))?;
    for lane in 0..LANES as u32 {
        let i = w * LANES as u32 + lane;
        if i < threads {
            exec |= 1 << lane;
            let (x, y, z) = (i % b[0], (i / b[0]) % b[1], i / (b[0] * b[1]));
            v0[lane as usize] = x | y << 10 | z << 20;
        }
    }
    wave.set_exec(exec);
    wave.s[reg::M0] = 0;
    wave.scratch_per_lane = info.scratch_per_lane;
    wave.scratch.clear();
    wave.scratch.resize(info.scratch_per_lane as usize * LANES, 0);
    wave.status = WaveStatus::Running;
    Ok(())
}

/// Runs every workgroup (or the sample); returns merged counters, the thread count and the trace.
fn run_all(
    info: &LaunchInfo<'_>,
    mem: &MemView,
    config: &EmuConfig,
    runs: &Mutex<Vec<WorkgroupRun>>,
    sequential: bool,
    opts: &LaunchOptions,
    total: u64,
) -> Result<(Counters, usize, Option<Trace>), EmuError> {
    let g = info.params.grid;
    // Validated against EmuConfig::max_workgroups: fits usize on the 64-bit hosts this runs on.
    let total = total as usize;
    let traces: Mutex<Vec<WorkgroupTrace>> = Mutex::new(Vec::new());
    let threads = if sequential { 1 } else { config.worker_threads().min(total.max(1)) };
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let first_fault: Mutex<Option<(usize, Fault)>> = Mutex::new(None);
    let merged = Mutex::new(Counters::new(opts.counting));
    // The workers' run state, whose per-instruction counts are summed and folded in once.
    let finished: Mutex<Vec<WorkgroupRun>> = Mutex::new(Vec::new());

    let worker = || {
        let mut run = WorkgroupRun::take(runs, info.module.code_words());
        let mut counters = Counters::new(opts.counting);
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let j = next.fetch_add(1, Ordering::Relaxed);
            if j >= total {
                break;
            }
            let i = opts.sample.as_ref().map_or(j, |s| s[j] as usize);
            let wg =
                [(i % g[0] as usize) as u32, ((i / g[0] as usize) % g[1] as usize) as u32, (i / (g[0] as usize * g[1] as usize)) as u32];
            let mut waves = Vec::new();
            let ran = run_workgroup(&mut run, info, wg, mem, &mut counters, opts.trace.then_some(&mut waves));
            if opts.trace && ran.is_ok() {
                traces.lock().expect("trace lock").push(WorkgroupTrace { id: wg, linear: i as u64, waves });
            }
            if let Err(f) = ran {
                let mut slot = first_fault.lock().expect("fault lock");
                if slot.as_ref().is_none_or(|(j, _)| i < *j) {
                    *slot = Some((i, f));
                }
                stop.store(true, Ordering::Relaxed);
                break;
            }
        }
        merged.lock().expect("counter lock").merge(&counters);
        finished.lock().expect("run lock").push(run);
    };
    if threads == 1 {
        worker();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(&worker);
            }
        });
    }
    let mut merged = merged.into_inner().expect("counter lock");
    let mut done = finished.into_inner().expect("run lock");
    if let Some((first, rest)) = done.split_first_mut() {
        for r in rest.iter() {
            first.hot.absorb(&r.hot);
        }
        first.hot.fold_into(&mut merged, info.module);
    }
    for r in done {
        r.give_back(runs);
    }
    if let Some((_, f)) = first_fault.into_inner().expect("fault lock") {
        return Err(f.into());
    }
    let trace = opts.trace.then(|| {
        let mut workgroups = traces.into_inner().expect("trace lock");
        workgroups.sort_by_key(|w| w.linear);
        Trace { workgroups }
    });
    Ok((merged, threads, trace))
}

#[cfg(test)]
mod tests {
    use super::LaunchOptions;

    #[test]
    fn an_xcd_run_sample_is_consecutive_workgroups_of_one_xcd() {
        // 607 workgroups on 8 XCDs: 76 on XCD 0 (ids 0, 8, .., 600); the middle 8 of them.
        assert_eq!(LaunchOptions::xcd_run_sample(607, 8, 8), (34..42).map(|j| j * 8).collect::<Vec<u64>>());
        for (total, n) in [(607, 8), (64, 8), (65, 8), (9, 3), (20, 8), (8, 8), (3, 8), (1, 1)] {
            let s = LaunchOptions::xcd_run_sample(total, n, 8);
            assert_eq!(s.len() as u64, n.min(total), "{total} {n}");
            assert!(s.iter().all(|&i| i < total), "{total} {n}: {s:?}");
            assert!(s.windows(2).all(|w| w[1] > w[0]), "{total} {n}: {s:?}");
            // One XCD (stride 8) when the grid has 8 per sampled workgroup, else consecutive.
            let step = if total >= 8 * n && n < total { 8 } else { 1 };
            assert!(s.windows(2).all(|w| w[1] - w[0] == step), "{total} {n}: {s:?}");
        }
    }
}
