//! The emulator backend: kernels run on the CPU in ferrocm's gfx942 emulator (`ferrocm-emu`),
//! executing the same code object a GPU would.
//!
//! Every operation completes before its call returns, in the calling thread: streams are
//! ordering domains that are trivially honoured (work queued on one stream has finished before
//! anything queued later on any stream starts), an event completes when it is recorded, and
//! timing events measure host wall time. Settings come from the environment: FERROCM_EMU_THREADS (CPU threads
//! for workgroups, default: all cores), FERROCM_EMU_BUDGET (instructions per wave before a kernel
//! is declared runaway), FERROCM_EMU_MEMORY (bytes of emulated device memory).

use super::{Backend, BackendKind, DeviceInfo, Launch, RawEvent, RawFunction, RawStream};
use crate::error::{Error, Result};
use ferrocm_codeobj::{CodeObject, ValueKind};
use ferrocm_emu::exec::{Counters, Counting, LaunchOptions};
use ferrocm_emu::model::machine::Chip;
use ferrocm_emu::model::{KernelShape, Modeled, Workload};
use ferrocm_emu::{EmuConfig, Emulator, LaunchParams, LaunchStats, Module};
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// How launches are profiled for the cycle model (see [`EmulatorDevice::set_profiling`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profiling {
    /// Workgroups emulated (with a trace) per launch, chosen by the emulator's
    /// `LaunchOptions::sample_for` (spread over the grid, or consecutive workgroups of one XCD
    /// for kernels with global atomics); the rest are not run, so outputs are incomplete while
    /// profiling is on.
    pub sample_workgroups: u64,
}

/// Which launch shapes the emulator's launches get where the shape does not change a result
/// (see [`EmulatorDevice::set_launch_shapes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LaunchShapes {
    /// The shapes a GPU gets: grids sized for the modeled MI300X's 304 compute units. The
    /// default, so that tests and profiles run exactly the launches a GPU would.
    #[default]
    Gpu,
    /// Grids sized for the emulator's worker threads where the result is bit for bit the same
    /// whatever the grid: each workgroup takes more of the work, so the work every workgroup
    /// repeats (a GEMV's prologue, its table of activation sums, its fused norm) runs fewer
    /// times. The emulator's cost is its instructions, not the latency a GPU hides with more
    /// workgroups. Profiled launches (which the cycle model reads) always get the GPU's shapes.
    Emulator,
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
    /// The bytes of the distinct device allocations the launch's pointer arguments pointed
    /// into when it ran (`None` when none did): its compulsory HBM traffic as
    /// [`EmulatorDevice::model`] takes it.
    pub operand_bytes: Option<u64>,
}

/// Workgroups per worker thread that [`LaunchShapes::Emulator`] sizes grids for.
const EMULATOR_GROUPS_PER_THREAD: u32 = 4;

/// A device backed by the gfx942 emulator.
pub struct EmulatorDevice {
    info: DeviceInfo,
    emu: Emulator,
    module: Module,
    last: Mutex<Option<LaunchStats>>,
    total: Mutex<Counters>,
    profiling: Mutex<Option<Profiling>>,
    profiled: Mutex<Vec<ProfiledLaunch>>,
    /// How much launches outside profiling count.
    counting: Mutex<Counting>,
    /// The launch shapes outside profiling.
    shapes: Mutex<LaunchShapes>,
    /// Stream and event numbers (0 is the default stream).
    next_handle: AtomicUsize,
    /// When each event was last recorded (`None`: never).
    events: Mutex<HashMap<usize, Option<Instant>>>,
    /// Kernel names by function handle.
    functions: Mutex<Vec<String>>,
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
            compute_units: super::MI300X_CUS as u32,
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
            counting: Mutex::new(Counting::Full),
            shapes: Mutex::new(LaunchShapes::Gpu),
            next_handle: AtomicUsize::new(1),
            events: Mutex::new(HashMap::new()),
            functions: Mutex::new(Vec::new()),
        })
    }

    /// Counters and timing of the most recent launch on this device.
    pub fn last_launch(&self) -> Option<LaunchStats> {
        lock(&self.last).clone()
    }

    /// Counters summed over every launch since the device was opened or the last
    /// [`EmulatorDevice::reset_total_counters`]: what an op that launches several kernels (a main
    /// pass and a combining pass, say) costs in all.
    pub fn total_counters(&self) -> Counters {
        lock(&self.total).clone()
    }

    /// Zeroes [`EmulatorDevice::total_counters`].
    pub fn reset_total_counters(&self) {
        *lock(&self.total) = Counters::default();
    }

    /// Turns profiling on (`Some`) or off for the following launches: each runs only a sample of
    /// its workgroups, traced, and is recorded for [`EmulatorDevice::take_profiled`]. Results of
    /// profiled launches are incomplete; this is for the cycle model and benchmarks.
    pub fn set_profiling(&self, p: Option<Profiling>) {
        *lock(&self.profiling) = p;
    }

    /// How much the following launches count ([`EmulatorDevice::last_launch`],
    /// [`EmulatorDevice::total_counters`]): [`Counting::Full`] when the device opens.
    /// [`Counting::Lean`] leaves out the 64-byte lines of global accesses and the LDS bank
    /// conflicts (they stay zero), which makes the emulator ~8-20% faster on model runs; use it
    /// where only results matter. Profiled launches always count fully (the cycle model reads
    /// the footprints).
    ///
    /// ```
    /// use ferrocm::Device;
    /// use ferrocm::emulator::Counting;
    /// let dev = Device::emulator()?;
    /// let emu = dev.as_emulator().expect("the emulator device");
    /// emu.set_counting(Counting::Lean);
    /// assert_eq!(emu.counting(), Counting::Lean);
    /// # Ok::<(), ferrocm::Error>(())
    /// ```
    pub fn set_counting(&self, counting: Counting) {
        *lock(&self.counting) = counting;
    }

    /// How much launches outside profiling count now ([`EmulatorDevice::set_counting`]).
    pub fn counting(&self) -> Counting {
        *lock(&self.counting)
    }

    /// The shapes of the following launches where a shape does not change a result
    /// ([`LaunchShapes::Gpu`] when the device opens). [`LaunchShapes::Emulator`] sizes those
    /// grids for the emulator's CPU threads: the quantized GEMV then takes up to 16 tiles of
    /// output rows a workgroup instead of one, which makes SmolLM2's decode about 1.7x faster
    /// on the emulator, with the same output bits (the `ferrocm` CLI's choice). Launches while
    /// profiling is on keep the GPU's shapes: the modeled times stay those of the GPU's launches.
    ///
    /// ```
    /// use ferrocm::Device;
    /// use ferrocm::emulator::LaunchShapes;
    /// let dev = Device::emulator()?;
    /// let emu = dev.as_emulator().expect("the emulator device");
    /// emu.set_launch_shapes(LaunchShapes::Emulator);
    /// assert_eq!(emu.launch_shapes(), LaunchShapes::Emulator);
    /// # Ok::<(), ferrocm::Error>(())
    /// ```
    pub fn set_launch_shapes(&self, shapes: LaunchShapes) {
        *lock(&self.shapes) = shapes;
    }

    /// The CPU threads a launch's workgroups run on (FERROCM_EMU_THREADS, else every core,
    /// at most `ferrocm_emu::exec::MAX_THREADS`).
    pub fn threads(&self) -> usize {
        self.emu.config().worker_threads()
    }

    /// The compute units the launch shapes are sized for now: the modeled MI300X's 304, or
    /// with [`LaunchShapes::Emulator`] outside profiling 4 per [`EmulatorDevice::threads`] (a
    /// few workgroups per thread, so that uneven ones still share out evenly), at most 304.
    pub fn shape_units(&self) -> u32 {
        match self.launch_shapes() {
            LaunchShapes::Emulator if lock(&self.profiling).is_none() => {
                (self.threads() as u32).saturating_mul(EMULATOR_GROUPS_PER_THREAD).clamp(1, self.info.compute_units)
            }
            _ => self.info.compute_units,
        }
    }

    /// The launch shapes outside profiling now ([`EmulatorDevice::set_launch_shapes`]).
    pub fn launch_shapes(&self) -> LaunchShapes {
        *lock(&self.shapes)
    }

    /// The launches recorded since the last call (oldest first).
    pub fn take_profiled(&self) -> Vec<ProfiledLaunch> {
        std::mem::take(&mut *lock(&self.profiled))
    }

    /// The modeled MI300X time of a profiled launch: its traced sample of workgroups replayed
    /// through the emulator's cycle model of one CU, scaled to the chip's 304 CUs and the
    /// launch's whole grid (`ferrocm_emu::model` documents the model, its constants and what it
    /// leaves out). Memory: each distinct allocation the launch's pointer arguments point into
    /// moves between HBM and the chip once ([`ProfiledLaunch::operand_bytes`], the rule the
    /// bench registry's compulsory bytes follow); the rest of the requested bytes hit in L2
    /// (a GEMV's rows of x that every workgroup reads, say). Every figure it returns is
    /// modeled, not measured.
    ///
    /// # Errors
    /// [`Error::KernelNotFound`] for a launch of another device's code object;
    /// [`Error::Modeling`] when the launch has no trace or the model cannot cost or place it.
    pub fn model(&self, launch: &ProfiledLaunch) -> Result<Modeled> {
        let kernel = self
            .module
            .co
            .kernel(&launch.kernel)
            .ok_or_else(|| Error::KernelNotFound { kernel: launch.kernel.clone(), arch: self.info.arch.clone() })?;
        let modeling = |source| Error::Modeling { kernel: launch.kernel.clone(), source };
        let trace = launch.stats.trace.as_ref().ok_or_else(|| modeling(ferrocm_emu::model::ModelError::NoTrace))?;
        let load = Workload::mi300x(launch.stats.grid_workgroups, launch.operand_bytes);
        ferrocm_emu::model::model(trace, &KernelShape::of(kernel, launch.params.dynamic_lds), &load).map_err(modeling)
    }

    /// [`ProfiledLaunch::operand_bytes`] of a launch of `kernel` with `params`: the sizes of
    /// the distinct allocations its global-buffer arguments point into (the pool's blocks, so
    /// up to a quarter more than the tensors), each counted once however many arguments point
    /// into it. A launch that reads a little of a large allocation (an embedding lookup) is
    /// charged all of it, which the model caps at what the launch requests.
    fn operand_bytes(&self, kernel: &str, params: &LaunchParams) -> Option<u64> {
        let info = self.module.co.kernel(kernel)?;
        let mem = self.emu.memory().view();
        let mut bases: Vec<u64> = Vec::new();
        let mut bytes = 0u64;
        for a in info.meta.explicit_args().filter(|a| a.value_kind == ValueKind::GlobalBuffer) {
            let at = a.offset as usize;
            let Some(word) = params.kernargs.get(at..at + 8) else { continue };
            let addr = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            if let Some((region, _)) = mem.find(addr, 1)
                && !bases.contains(&region.base)
            {
                bases.push(region.base);
                bytes += region.size;
            }
        }
        (!bases.is_empty()).then_some(bytes)
    }

    /// The emulator's loaded module (decoded instructions at their addresses, image base), for
    /// tools built on the `ferrocm-emu` crate, such as the bench harness's per-block profiles.
    pub fn module(&self) -> &Module {
        &self.module
    }
}

impl Backend for EmulatorDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn shape_units(&self) -> u32 {
        EmulatorDevice::shape_units(self)
    }
    fn completes_inline(&self) -> bool {
        true
    }
    fn alloc(&self, bytes: u64) -> Result<u64> {
        self.emu.alloc(bytes).map_err(|e| match e {
            ferrocm_emu::EmuError::OutOfMemory { requested, in_use, limit } => {
                Error::OutOfMemory { requested, free: limit.saturating_sub(in_use) }
            }
            e => e.into(),
        })
    }
    unsafe fn free(&self, addr: u64) {
        // Only the memory pool frees, once per allocation; a failure here would be a ferrocm
        // bug, and panicking in a destructor would be worse than leaking.
        let _ = self.emu.free(addr);
    }
    fn memory_info(&self) -> Result<(u64, u64)> {
        let limit = self.emu.config().memory_limit;
        Ok((limit.saturating_sub(self.emu.memory().in_use()), limit))
    }
    fn host_alloc(&self, _bytes: usize) -> Result<Option<NonNull<u8>>> {
        // Host memory is all the same to the emulator: pinned buffers fall back to pageable.
        Ok(None)
    }
    unsafe fn host_free(&self, _ptr: NonNull<u8>) {}

    fn default_stream(&self) -> RawStream {
        RawStream(0)
    }
    fn create_stream(&self) -> Result<RawStream> {
        Ok(RawStream(self.next_handle.fetch_add(1, Ordering::Relaxed)))
    }
    unsafe fn destroy_stream(&self, _s: RawStream) {}
    fn synchronize_stream(&self, _s: RawStream) -> Result<()> {
        Ok(())
    }
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn create_event(&self, _timing: bool) -> Result<RawEvent> {
        let e = self.next_handle.fetch_add(1, Ordering::Relaxed);
        lock(&self.events).insert(e, None);
        Ok(RawEvent(e))
    }
    unsafe fn destroy_event(&self, e: RawEvent) {
        lock(&self.events).remove(&e.0);
    }
    fn record_event(&self, e: RawEvent, _s: RawStream) -> Result<()> {
        // Everything queued before has completed: the event completes now.
        lock(&self.events).insert(e.0, Some(Instant::now()));
        Ok(())
    }
    fn event_complete(&self, _e: RawEvent) -> Result<bool> {
        Ok(true)
    }
    fn synchronize_event(&self, _e: RawEvent) -> Result<()> {
        Ok(())
    }
    fn stream_wait_event(&self, _s: RawStream, _e: RawEvent) -> Result<()> {
        Ok(())
    }
    fn elapsed_ms(&self, start: RawEvent, end: RawEvent) -> Result<f32> {
        let events = lock(&self.events);
        match (events.get(&start.0).copied().flatten(), events.get(&end.0).copied().flatten()) {
            (Some(a), Some(b)) => Ok(b.saturating_duration_since(a).as_secs_f32() * 1e3),
            _ => Err(Error::InvalidArgument { op: "Event::elapsed_ms", message: "both events must have been recorded".into() }),
        }
    }

    fn write(&self, _s: RawStream, dst: u64, src: &[u8]) -> Result<()> {
        Ok(self.emu.memory().write(dst, src)?)
    }
    fn read(&self, _s: RawStream, src: u64, dst: &mut [u8]) -> Result<()> {
        Ok(self.emu.memory().read(src, dst)?)
    }
    unsafe fn write_async(&self, s: RawStream, dst: u64, src: *const u8, len: usize) -> Result<()> {
        // SAFETY: the caller guarantees `len` readable bytes at `src`.
        self.write(s, dst, unsafe { std::slice::from_raw_parts(src, len) })
    }
    unsafe fn read_async(&self, s: RawStream, src: u64, dst: *mut u8, len: usize) -> Result<()> {
        // SAFETY: the caller guarantees `len` writable bytes at `dst`, untouched meanwhile.
        self.read(s, src, unsafe { std::slice::from_raw_parts_mut(dst, len) })
    }
    fn copy(&self, _s: RawStream, dst: u64, src: u64, bytes: u64) -> Result<()> {
        Ok(self.emu.memory().copy(dst, src, bytes)?)
    }
    fn memset(&self, _s: RawStream, dst: u64, value: u8, bytes: u64) -> Result<()> {
        Ok(self.emu.memory().fill(dst, value, bytes)?)
    }

    fn function(&self, name: &str) -> Result<RawFunction> {
        let mut names = lock(&self.functions);
        if let Some(i) = names.iter().position(|n| n == name) {
            return Ok(RawFunction(i));
        }
        if self.module.co.kernel(name).is_none() {
            return Err(Error::KernelNotFound { kernel: name.to_string(), arch: self.info.arch.clone() });
        }
        names.push(name.to_string());
        Ok(RawFunction(names.len() - 1))
    }
    unsafe fn launch(&self, _s: RawStream, l: &Launch<'_>) -> Result<()> {
        let params = LaunchParams { grid: l.grid, block: l.block, dynamic_lds: l.dynamic_lds, kernargs: l.kernargs.to_vec() };
        let profiling = *lock(&self.profiling);
        let stats = match profiling {
            None => {
                let opts = LaunchOptions { counting: self.counting(), ..LaunchOptions::default() };
                self.emu.launch_with(&self.module, l.name, &params, &opts)?
            }
            Some(p) => {
                let total = l.grid.iter().map(|&g| g as u64).product();
                // The launch is modeled on MI300X (`EmulatorDevice::model`): its dies.
                let sample = LaunchOptions::sample_for(&self.module, l.name, total, p.sample_workgroups, Chip::MI300X.xcds);
                let opts = LaunchOptions { sample: Some(sample), trace: true, ..LaunchOptions::default() };
                let stats = self.emu.launch_with(&self.module, l.name, &params, &opts)?;
                // Sized now, while the launch's operands are certainly alive.
                let operand_bytes = self.operand_bytes(l.name, &params);
                let rec = ProfiledLaunch { kernel: l.name.to_string(), params, stats: stats.clone(), operand_bytes };
                lock(&self.profiled).push(rec);
                stats
            }
        };
        lock(&self.total).merge(&stats.counters);
        *lock(&self.last) = Some(stats);
        Ok(())
    }
    fn as_emulator(&self) -> Option<&EmulatorDevice> {
        Some(self)
    }
}

/// Locks `m`, recovering the data of a panicked holder (the emulator's bookkeeping stays usable).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
