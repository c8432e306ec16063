//! One compute unit, clock by clock: four SIMDs taking issue turns, their VALUs and matrix cores,
//! the CU's LDS pipe and memory path, the waves' wait counters and the workgroups' barriers.
//!
//! The simulation is event-skipping: every pipe reservation and every completion time is decided
//! when an instruction issues, so when no wave can issue the clock jumps to the earliest time one
//! can.

use super::ModelError;
use super::cost::{Cost, cost};
use super::machine::*;
use crate::exec::{Event, WorkgroupTrace};
use std::collections::{BTreeMap, VecDeque};

/// What the simulated CU is given.
pub(crate) struct CuJob<'a> {
    /// Traces to run, in dispatch order (reused cyclically when `workgroups` is larger).
    pub traces: &'a [WorkgroupTrace],
    /// Workgroups this CU runs.
    pub workgroups: u64,
    /// Waves per SIMD the registers allow.
    pub waves_per_simd: u32,
    /// LDS bytes per workgroup.
    pub lds_per_workgroup: u32,
    /// Clocks per byte through the CU's memory path.
    pub mem_clocks_per_byte: f64,
    /// Which of this CU's workgroups (in dispatch order) the timeline follows.
    pub timeline_workgroup: u64,
}

/// Busy time per resource and per instruction address.
#[derive(Clone, Debug, Default)]
pub(crate) struct CuResult {
    /// Clock at which the last wave ended.
    pub cycles: u64,
    /// Matrix-core busy clocks, summed over SIMDs.
    pub mfma_busy: u64,
    /// VALU busy clocks, summed over SIMDs.
    pub valu_busy: u64,
    /// LDS pipe busy clocks.
    pub lds_busy: u64,
    /// Memory path busy clocks.
    pub mem_busy: f64,
    /// Instructions issued.
    pub issued: u64,
    /// Most workgroups resident at once.
    pub max_resident: u32,
    /// Per pc: (executions, wave-clocks spent reaching and issuing it).
    pub per_pc: BTreeMap<u32, (u64, u64)>,
    /// Wave-clocks spent per cost class (stall before the instruction plus its issue turn).
    pub by_class: BTreeMap<&'static str, u64>,
    /// Workgroups actually simulated.
    pub simulated_workgroups: u64,
    /// The waves of workgroup [`CuJob::timeline_workgroup`], clock by clock ([`WaveTimeline`]).
    pub timeline: Vec<WaveTimeline>,
}

/// Stalls shorter than this are left out of a [`WaveTimeline`].
pub const TIMELINE_MIN_STALL: u64 = 32;

/// One wave of the first workgroup a CU ran: where it waited, and when it ended. The chain of a
/// latency-bound kernel (which load each wait is for, how long the barriers hold) reads off it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaveTimeline {
    /// Wave index in its workgroup.
    pub wave: usize,
    /// SIMD it ran on.
    pub simd: usize,
    /// Clock of its last issue (`s_endpgm`).
    pub end: u64,
    /// Its stalls of at least [`TIMELINE_MIN_STALL`] clocks, in order.
    pub stalls: Vec<Stall>,
    /// Its straight runs of code (a new run starts where the pc jumps), in order.
    pub runs: Vec<Run>,
}

impl WaveTimeline {
    /// Instructions it issued (its runs').
    pub fn issued(&self) -> u64 {
        self.runs.iter().map(|r| r.instructions).sum()
    }
}

/// Consecutive instructions a wave issued without a jump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Byte offset of the first instruction in the code object image.
    pub pc: u32,
    /// Clock the first issued at.
    pub at: u64,
    /// Instructions in the run.
    pub instructions: u64,
    /// Byte offset of the last.
    pub last_pc: u32,
}

/// A wave waiting before an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    /// The instruction's byte offset in the code object image.
    pub pc: u32,
    /// Clock it issued at.
    pub at: u64,
    /// Clocks the wave spent before it beyond its issue turn.
    pub cycles: u64,
}

struct WaveSim {
    wg: usize,
    trace: usize,
    wave: usize,
    simd: usize,
    next: usize,
    /// Earliest clock of the next issue (issue cadence, idles, branch, waits).
    ready: u64,
    /// Clock of the previous issue (for the time attributed to the next instruction).
    last: u64,
    vm: VecDeque<u64>,
    lgkm: VecDeque<u64>,
    at_barrier: bool,
    done: bool,
}

struct WgSim {
    waves: Vec<usize>,
    live: usize,
    arrived: usize,
    arrive_max: u64,
    /// Latest end of its waves (incl. their outstanding stores).
    end: u64,
}

/// Index of the earliest time at which at most `n` of `q` (completion times, non-decreasing)
/// are still outstanding.
fn wait_until(q: &VecDeque<u64>, n: usize) -> u64 {
    if q.len() <= n { 0 } else { q[q.len() - n - 1] }
}

fn pop_done(q: &mut VecDeque<u64>, t: u64) {
    while q.front().is_some_and(|&c| c <= t) {
        q.pop_front();
    }
}

fn class_name(c: &Cost) -> &'static str {
    match c {
        Cost::Salu => "salu",
        Cost::Valu(_) => "valu",
        Cost::Mfma(_) => "mfma",
        Cost::Smem => "smem",
        Cost::Vmem(_) => "vmem",
        Cost::Lds(_) => "ds",
        Cost::Branch(_) => "branch",
        Cost::Wait { .. } => "s_waitcnt",
        Cost::Barrier => "s_barrier",
        Cost::Idle(_) => "s_nop/s_sleep",
        Cost::End => "s_endpgm",
        Cost::Other => "other",
    }
}

/// Runs the job; stops dispatching after `max_workgroups` (the caller extrapolates).
pub(crate) fn simulate(job: &CuJob<'_>, max_workgroups: u64) -> Result<CuResult, ModelError> {
    let total = job.workgroups.min(max_workgroups);
    let mut costs: Vec<Vec<Vec<Cost>>> = Vec::with_capacity(job.traces.len());
    for t in job.traces {
        let mut per_wave = Vec::with_capacity(t.waves.len());
        for w in &t.waves {
            per_wave.push(w.iter().map(|e: &Event| cost(e).map_err(|u| ModelError::Unknown(u.0))).collect::<Result<Vec<_>, _>>()?);
        }
        costs.push(per_wave);
    }
    let mut r = CuResult::default();
    let mut waves: Vec<WaveSim> = Vec::new();
    let mut wgs: Vec<WgSim> = Vec::new();
    let mut simd_waves = [0u32; SIMDS];
    let mut lds_used = 0u32;
    let mut resident = 0u32;
    let mut dispatched = 0u64;
    let mut finished = 0u64;
    let mut valu_free = [0u64; SIMDS];
    let mut mfma_free = [0u64; SIMDS];
    let mut lds_free = 0u64;
    let mut mem_free = 0f64;
    // Per SIMD: indices of live waves, oldest first.
    let mut queue: [Vec<usize>; SIMDS] = Default::default();
    let mut t: u64 = 0;

    // Dispatch as many workgroups as fit at clock `now`.
    let dispatch = |now: u64,
                    waves: &mut Vec<WaveSim>,
                    wgs: &mut Vec<WgSim>,
                    queue: &mut [Vec<usize>; SIMDS],
                    simd_waves: &mut [u32; SIMDS],
                    lds_used: &mut u32,
                    resident: &mut u32,
                    dispatched: &mut u64|
     -> Result<(), ModelError> {
        while *dispatched < total {
            let ti = (*dispatched % job.traces.len() as u64) as usize;
            let n = job.traces[ti].waves.len();
            if *lds_used + job.lds_per_workgroup > LDS_BYTES {
                break;
            }
            // Place each wave on the least loaded SIMD.
            let mut load = *simd_waves;
            let mut placed = Vec::with_capacity(n);
            for _ in 0..n {
                let s = (0..SIMDS).min_by_key(|&s| load[s]).expect("four SIMDs");
                if load[s] >= job.waves_per_simd {
                    break;
                }
                load[s] += 1;
                placed.push(s);
            }
            if placed.len() < n {
                if *resident == 0 {
                    return Err(ModelError::DoesNotFit(format!(
                        "a workgroup of {n} waves does not fit {} waves per SIMD",
                        job.waves_per_simd
                    )));
                }
                break;
            }
            *simd_waves = load;
            *lds_used += job.lds_per_workgroup;
            *resident += 1;
            let wg = wgs.len();
            let mut ids = Vec::with_capacity(n);
            for (wave, &simd) in placed.iter().enumerate() {
                let id = waves.len();
                waves.push(WaveSim {
                    wg,
                    trace: ti,
                    wave,
                    simd,
                    next: 0,
                    ready: now,
                    last: now,
                    vm: VecDeque::new(),
                    lgkm: VecDeque::new(),
                    at_barrier: false,
                    done: false,
                });
                queue[simd].push(id);
                ids.push(id);
            }
            wgs.push(WgSim { waves: ids, live: n, arrived: 0, arrive_max: 0, end: 0 });
            *dispatched += 1;
        }
        Ok(())
    };

    dispatch(t, &mut waves, &mut wgs, &mut queue, &mut simd_waves, &mut lds_used, &mut resident, &mut dispatched)?;
    r.max_resident = resident;
    let mut idle_turns = 0u32;
    let mut freed = false;
    while finished < total {
        let s = (t % SIMDS as u64) as usize;
        let mut used = [false; 6]; // ports: valu/mfma, salu, smem, vmem, lds, branch/other
        let mut issued_any = false;
        let mut wi = 0;
        while wi < queue[s].len() {
            let id = queue[s][wi];
            wi += 1;
            let w = &mut waves[id];
            if w.done || w.at_barrier || w.ready > t {
                continue;
            }
            let c = costs[w.trace][w.wave][w.next];
            let mut action: Option<(usize, bool)> = None;
            let mut end_at = 0u64;
            let port = match c {
                Cost::Valu(_) | Cost::Mfma(_) => 0,
                Cost::Salu => 1,
                Cost::Smem => 2,
                Cost::Vmem(_) => 3,
                Cost::Lds(_) => 4,
                _ => 5,
            };
            if used[port] {
                continue;
            }
            // Can it go now?
            match c {
                Cost::Valu(_) if valu_free[s] > t => continue,
                Cost::Mfma(_) if mfma_free[s] > t => continue,
                Cost::Vmem(_) if w.vm.len() >= MAX_VMCNT => {
                    pop_done(&mut w.vm, t);
                    if w.vm.len() >= MAX_VMCNT {
                        w.ready = w.vm[0];
                        continue;
                    }
                }
                Cost::Lds(_) | Cost::Smem if w.lgkm.len() >= MAX_LGKMCNT => {
                    pop_done(&mut w.lgkm, t);
                    if w.lgkm.len() >= MAX_LGKMCNT {
                        w.ready = w.lgkm[0];
                        continue;
                    }
                }
                Cost::Wait { vm, lgkm } => {
                    let until = wait_until(&w.vm, vm).max(wait_until(&w.lgkm, lgkm));
                    if until > t {
                        w.ready = until;
                        continue;
                    }
                    pop_done(&mut w.vm, t);
                    pop_done(&mut w.lgkm, t);
                }
                _ => {}
            }
            used[port] = true;
            issued_any = true;
            r.issued += 1;
            let ev = &job.traces[w.trace].waves[w.wave][w.next];
            let spent = t + ISSUE_PERIOD - w.last;
            if w.wg as u64 == job.timeline_workgroup {
                if r.timeline.len() <= w.wave {
                    r.timeline.resize_with(w.wave + 1, WaveTimeline::default);
                }
                let tl = &mut r.timeline[w.wave];
                (tl.wave, tl.simd, tl.end) = (w.wave, w.simd, t);
                // (Instructions are at most 12 bytes: a larger step, or a step back, is a jump.)
                match tl.runs.last_mut() {
                    Some(run) if ev.pc > run.last_pc && ev.pc <= run.last_pc + 12 => {
                        run.instructions += 1;
                        run.last_pc = ev.pc;
                    }
                    _ => tl.runs.push(Run { pc: ev.pc, at: t, instructions: 1, last_pc: ev.pc }),
                }
                if spent - ISSUE_PERIOD >= TIMELINE_MIN_STALL {
                    tl.stalls.push(Stall { pc: ev.pc, at: t, cycles: spent - ISSUE_PERIOD });
                }
            }
            let e = r.per_pc.entry(ev.pc).or_default();
            e.0 += 1;
            e.1 += spent;
            *r.by_class.entry(class_name(&c)).or_default() += spent;
            w.last = t + ISSUE_PERIOD;
            w.next += 1;
            w.ready = t + ISSUE_PERIOD;
            match c {
                Cost::Valu(cy) => {
                    valu_free[s] = t + cy;
                    r.valu_busy += cy;
                    // Transcendentals: the next (usually dependent) instruction waits.
                    w.ready = w.ready.max(t + cy);
                }
                Cost::Mfma(cy) => {
                    mfma_free[s] = t + cy;
                    r.mfma_busy += cy;
                }
                Cost::Smem => w.lgkm.push_back((t + SMEM_LATENCY).max(w.lgkm.back().copied().unwrap_or(0))),
                Cost::Vmem(bytes) => {
                    let start = mem_free.max(t as f64);
                    let occ = bytes as f64 * job.mem_clocks_per_byte;
                    mem_free = start + occ;
                    r.mem_busy += occ;
                    let done = (mem_free.ceil() as u64 + VMEM_LATENCY).max(w.vm.back().copied().unwrap_or(0));
                    w.vm.push_back(done);
                }
                Cost::Lds(cy) => {
                    let start = lds_free.max(t);
                    lds_free = start + cy;
                    r.lds_busy += cy;
                    w.lgkm.push_back((lds_free + LDS_LATENCY).max(w.lgkm.back().copied().unwrap_or(0)));
                }
                Cost::Branch(true) => w.ready = t + BRANCH_CYCLES,
                Cost::Idle(cy) => w.ready = t + cy.max(ISSUE_PERIOD),
                Cost::Barrier => {
                    w.at_barrier = true;
                    action = Some((w.wg, false));
                }
                Cost::End => {
                    w.done = true;
                    simd_waves[s] -= 1;
                    // The kernel is not done before the wave's stores have landed.
                    let drained = w.vm.back().copied().unwrap_or(0).max(w.lgkm.back().copied().unwrap_or(0));
                    end_at = (t + ISSUE_PERIOD).max(drained);
                    action = Some((w.wg, true));
                }
                Cost::Salu | Cost::Branch(false) | Cost::Wait { .. } | Cost::Other => {}
            }
            if w.next >= costs[w.trace][w.wave].len() && !w.done {
                return Err(ModelError::Unknown(format!("wave {} of a traced workgroup ends without s_endpgm", w.wave)));
            }
            if let Some((wgi, ended)) = action {
                let wg = &mut wgs[wgi];
                if ended {
                    wg.live -= 1;
                } else {
                    wg.arrived += 1;
                    wg.arrive_max = wg.arrive_max.max(t);
                }
                // The barrier opens when every live wave has arrived (ended waves no longer count).
                if wg.live > 0 && wg.arrived == wg.live {
                    let open = wg.arrive_max.max(t) + ISSUE_PERIOD;
                    for &o in &wg.waves {
                        let ow = &mut waves[o];
                        if ow.at_barrier {
                            ow.at_barrier = false;
                            ow.ready = open;
                        }
                    }
                    wg.arrived = 0;
                    wg.arrive_max = 0;
                }
                wg.end = wg.end.max(end_at);
                if wg.live == 0 {
                    end_at = wg.end;
                    finished += 1;
                    resident -= 1;
                    lds_used -= job.lds_per_workgroup;
                    r.cycles = r.cycles.max(end_at);
                    freed = true;
                }
            }
        }
        // A workgroup ended: drop its waves from the queues and refill the CU.
        if freed {
            freed = false;
            for q in queue.iter_mut() {
                q.retain(|&i| !waves[i].done);
            }
            dispatch(t, &mut waves, &mut wgs, &mut queue, &mut simd_waves, &mut lds_used, &mut resident, &mut dispatched)?;
            r.max_resident = r.max_resident.max(resident);
        }
        if issued_any {
            idle_turns = 0;
            t += 1;
            continue;
        }
        idle_turns += 1;
        if idle_turns < SIMDS as u32 {
            t += 1;
            continue;
        }
        // A whole round without an issue: jump to the earliest clock anything can happen.
        idle_turns = 0;
        let mut next = u64::MAX;
        for q in &queue {
            for &id in q {
                let w = &waves[id];
                if w.done || w.at_barrier {
                    continue;
                }
                let c = costs[w.trace][w.wave][w.next];
                let gate = match c {
                    Cost::Valu(_) => valu_free[w.simd],
                    Cost::Mfma(_) => mfma_free[w.simd],
                    Cost::Wait { vm, lgkm } => wait_until(&w.vm, vm).max(wait_until(&w.lgkm, lgkm)),
                    _ => 0,
                };
                next = next.min(w.ready.max(gate));
            }
        }
        if next == u64::MAX {
            if finished < total {
                return Err(ModelError::Deadlock(format!(
                    "no wave can issue at clock {t}: {finished} of {total} workgroups done, {resident} resident"
                )));
            }
            break;
        }
        t = next.max(t + 1);
    }
    r.simulated_workgroups = total;
    Ok(r)
}
