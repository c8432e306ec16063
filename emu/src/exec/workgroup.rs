//! One workgroup: its waves and its LDS, run on one CPU thread.
//!
//! Scheduling: the running waves take turns of [`TURN`] instructions each (fewer when a wave
//! reaches `s_barrier`, `s_endpgm` or `s_sleep`), round-robin in wave order, as the hardware
//! issues the waves of a workgroup side by side (one instruction per wave per issue turn, on
//! four SIMDs at once). When every wave that has not ended waits at the barrier, the barrier
//! opens (waves that have ended no longer count, as on the hardware). The order is fixed, so a
//! launch is deterministic.
//!
//! Why turns and not each wave to its next barrier: hand-written kernels rely on the waves
//! moving together. AMD's AITER MoE kernels read an LDS staging area right after a barrier and
//! overwrite it with the next chunk some 70 instructions later without another barrier; on the
//! hardware every wave's reads are long done by then. Run to the barrier one at a time, the
//! first wave would overwrite the area before the last had read it.

use super::counters::{Class, Counters};
use super::error::{Fault, FaultKind};
use super::launch::{LaunchInfo, init_wave};
use super::memory::MemView;
use super::program::Module;
use super::step::{Ctx, Flow, Trouble, step};
use super::trace::{Event, Snapshot};
use super::wave::{LANES, Wave, WaveStatus};
use crate::isa::{Enc, Op};
use std::sync::Mutex;

/// Instructions a wave runs before the next wave's turn: one, so the waves of a workgroup advance
/// together as on the hardware (module docs).
pub(crate) const TURN: u32 = 1;

/// Reusable per-thread state (waves and LDS are recycled across workgroups).
pub(crate) struct WorkgroupRun {
    waves: Vec<Wave>,
    lds: Vec<u8>,
    /// Counters updated on every instruction, kept in arrays and folded in at the end.
    pub hot: HotCounters,
}

/// Per-instruction counters in flat arrays (a map update per instruction would dominate).
pub(crate) struct HotCounters {
    pub by_class: [u64; Class::ALL.len()],
    /// Executions per op (MFMAs only), indexed by `Op as usize`: a map entry keyed by the
    /// mnemonic per MFMA cost ~1.5% of a model decode step.
    pub by_op: Vec<u64>,
    /// Executions per dword of code (indexed by the module's counter slots).
    pub per_word: Vec<u64>,
    /// The slots counted so far lie in `touched.0..touched.1` (empty: `(usize::MAX, 0)`). A
    /// launch runs one kernel, a small part of the module's code: folding only this range
    /// spares a scan of the whole table (megabytes, mostly never-touched zero pages) per
    /// worker and launch.
    touched: (usize, usize),
}

impl HotCounters {
    /// Counts one execution of the instruction at counter slot `slot`.
    #[inline(always)]
    pub fn count_slot(&mut self, slot: usize) {
        self.per_word[slot] += 1;
        self.touched = (self.touched.0.min(slot), self.touched.1.max(slot + 1));
    }

    /// Zeroes every count, as [`WorkgroupRun::new`] makes them: only the touched range is
    /// cleared (the rest is still zero), so a run kept for the next launch costs no rewrite of
    /// the whole table.
    fn reset(&mut self) {
        let (lo, hi) = self.touched;
        if let Some(t) = self.per_word.get_mut(lo..hi) {
            t.fill(0);
        }
        self.by_class = [0; Class::ALL.len()];
        self.by_op.fill(0);
        self.touched = (usize::MAX, 0);
    }

    /// Adds `o`'s counts to these (another worker's of the same launch), so that a launch
    /// folds its per-pc counts into a map once, not once per worker and again in the merge.
    pub fn absorb(&mut self, o: &HotCounters) {
        for (a, b) in self.by_class.iter_mut().zip(&o.by_class) {
            *a += b;
        }
        for (a, b) in self.by_op.iter_mut().zip(&o.by_op) {
            *a += b;
        }
        let (lo, hi) = o.touched;
        if lo < hi {
            for (a, b) in self.per_word[lo..hi].iter_mut().zip(&o.per_word[lo..hi]) {
                *a += b;
            }
            self.touched = (self.touched.0.min(lo), self.touched.1.max(hi));
        }
    }

    /// Adds these counts to `c` (instruction totals, class mix, per-pc map).
    pub fn fold_into(&self, c: &mut Counters, module: &Module) {
        for class in Class::ALL {
            let n = self.by_class[class as usize];
            if n > 0 {
                *c.by_class.entry(class).or_default() += n;
                c.instructions += n;
            }
        }
        for (&op, &n) in Op::all().iter().zip(&self.by_op) {
            if n > 0 {
                *c.mfma.entry(op.name()).or_default() += n;
            }
        }
        // Slots outside the touched range hold 0 and would be skipped anyway.
        let (lo, hi) = self.touched;
        let counted = self.per_word.get(lo..hi).unwrap_or_default().iter().enumerate().filter(|&(_, &n)| n > 0);
        let counted = counted.map(|(i, &n)| (module.slot_pc(lo + i), n));
        if c.per_pc.is_empty() {
            // A launch's counters start empty: built in one go from keys in order (slots and
            // their pcs ascend together), not an insertion per pc.
            c.per_pc = counted.collect();
        } else {
            for (pc, n) in counted {
                *c.per_pc.entry(pc).or_default() += n;
            }
        }
    }
}

impl WorkgroupRun {
    /// A run for a module of `code_words` dwords of code: every count zero, no waves yet.
    pub fn new(code_words: usize) -> Self {
        WorkgroupRun {
            waves: Vec::new(),
            lds: Vec::new(),
            hot: HotCounters {
                by_class: [0; Class::ALL.len()],
                by_op: vec![0; Op::all().len()],
                per_word: vec![0; code_words],
                touched: (usize::MAX, 0),
            },
        }
    }

    /// A run for a module of `code_words` dwords, taken from `pool` when it holds one (its
    /// counts zeroed when it went back), else new. The per-pc table is a counter per dword of
    /// the whole code object (megabytes): made afresh per launch and worker, zeroing it was a
    /// tenth of a model decode step.
    pub fn take(pool: &Mutex<Vec<WorkgroupRun>>, code_words: usize) -> Self {
        match pool.lock().expect("run pool lock").pop() {
            Some(mut run) => {
                run.hot.per_word.resize(code_words, 0);
                run
            }
            None => WorkgroupRun::new(code_words),
        }
    }

    /// Zeroes the counts (after [`HotCounters::fold_into`]) and puts the run back in `pool`
    /// for the next launch; waves and LDS keep their allocations.
    pub fn give_back(mut self, pool: &Mutex<Vec<WorkgroupRun>>) {
        self.hot.reset();
        pool.lock().expect("run pool lock").push(self);
    }
}

pub(crate) fn run_workgroup(
    run: &mut WorkgroupRun,
    info: &LaunchInfo<'_>,
    wg: [u32; 3],
    mem: &MemView,
    counters: &mut Counters,
    mut trace: Option<&mut Vec<Vec<Event>>>,
) -> Result<(), Fault> {
    // Validated by the launch: 1..=1024 work-items.
    let n_waves = (info.threads as usize).div_ceil(LANES);
    while run.waves.len() < n_waves {
        run.waves.push(Wave::new(0, 0));
    }
    run.lds.clear();
    run.lds.resize(info.lds_bytes as usize, 0);
    let fault = |w: &Wave, kind: FaultKind, lane: Option<u32>| Fault {
        kernel: info.kernel.meta.name.clone(),
        workgroup: wg,
        wave: w.index,
        pc: w.pc,
        pc_offset: w.pc as i64 - info.entry_pc as i64,
        inst: info.module.fetch(w.pc).map(|i| i.text()).unwrap_or_else(|_| info.module.raw(w.pc)),
        lane,
        kind,
    };
    for (i, w) in run.waves[..n_waves].iter_mut().enumerate() {
        init_wave(w, info, wg, i as u32, mem).map_err(|k| fault(w, k, None))?;
    }
    counters.workgroups += 1;
    counters.waves += n_waves as u64;
    if let Some(t) = trace.as_deref_mut() {
        t.clear();
        t.resize_with(n_waves, Vec::new);
    }

    loop {
        let mut any_running = false;
        for wi in 0..n_waves {
            if run.waves[wi].status != WaveStatus::Running {
                continue;
            }
            any_running = true;
            let (waves, lds, hot) = (&mut run.waves, &mut run.lds, &mut run.hot);
            let mut cx = Ctx { mem, lds: &mut lds[..], counters, hot, info };
            let w = &mut waves[wi];
            let ran = match trace.as_deref_mut() {
                None => run_wave::<false>(w, &mut cx, &mut Vec::new(), TURN),
                Some(t) => run_wave::<true>(w, &mut cx, &mut t[wi], TURN),
            };
            if let Err(t) = ran {
                let kind = match t.kind {
                    FaultKind::InstructionBudget(n) if waves[..n_waves].iter().any(|o| o.status == WaveStatus::AtBarrier) => {
                        let waiting: Vec<u32> =
                            waves[..n_waves].iter().filter(|o| o.status == WaveStatus::AtBarrier).map(|o| o.index).collect();
                        FaultKind::BarrierDeadlock(format!(
                            "waves {waiting:?} wait at s_barrier while wave {wi} ran {n} instructions without reaching one"
                        ))
                    }
                    k => k,
                };
                return Err(fault(&waves[wi], kind, t.lane));
            }
        }
        let waves = &mut run.waves[..n_waves];
        if waves.iter().all(|w| w.status == WaveStatus::Ended) {
            return Ok(());
        }
        if !any_running {
            // Everyone left is at the barrier (or yielded): open it.
            for w in waves.iter_mut() {
                if w.status == WaveStatus::AtBarrier {
                    w.status = WaveStatus::Running;
                }
            }
        }
    }
}

/// Executes up to `turn` instructions of one wave, fewer if it blocks (barrier, end, sleep) or
/// faults. With `TRACE`, every instruction is appended to `events`; without, `events` is
/// untouched and the tracing code is compiled out of this instance.
fn run_wave<const TRACE: bool>(w: &mut Wave, cx: &mut Ctx<'_, '_>, events: &mut Vec<Event>, turn: u32) -> Result<(), Trouble> {
    let module = cx.info.module;
    for _ in 0..turn {
        let (slot, inst, class) = module.fetch_slot(w.pc).map_err(|e| Trouble::new(FaultKind::Decode(e)))?;
        w.executed += 1;
        if w.executed > cx.info.budget {
            return Err(Trouble::new(FaultKind::InstructionBudget(cx.info.budget)));
        }
        // VSKIP: a vector instruction is fetched but not issued; it counts (and the model costs
        // it) as a program-control instruction.
        let skipped = w.mode.vskip && matches!(class, Class::Valu | Class::Mfma | Class::Ds | Class::Vmem);
        let class = if skipped { Class::Other } else { class };
        cx.hot.by_class[class as usize] += 1;
        if class == Class::Mfma {
            cx.hot.by_op[inst.op as usize] += 1;
        }
        cx.hot.count_slot(slot);
        let before = if TRACE { Snapshot::of(cx.counters) } else { Snapshot::default() };
        let flow = if skipped { Flow::Next } else { step(w, inst, cx)? };
        if TRACE {
            let imm = if inst.enc == Enc::Sopp { inst.imm as u32 & 0xffff } else { 0 };
            let taken = matches!(flow, Flow::Jump(_));
            // Image-relative: the image is at most MAX_IMAGE_BYTES, well inside 32 bits.
            let pc = (w.pc - module.image_base) as u32;
            events.push(before.event(cx.counters, pc, inst.op, class, imm, taken));
        }
        match flow {
            Flow::Next => w.pc += inst.size as u64,
            Flow::Jump(target) => w.pc = target,
            Flow::Barrier => {
                w.pc += inst.size as u64;
                w.status = WaveStatus::AtBarrier;
                cx.counters.barriers += 1;
                return Ok(());
            }
            Flow::Yield => {
                w.pc += inst.size as u64;
                // Stays Running; the scheduler moves on to the next wave and comes back.
                return Ok(());
            }
            Flow::End => {
                w.status = WaveStatus::Ended;
                return Ok(());
            }
        }
    }
    Ok(())
}
