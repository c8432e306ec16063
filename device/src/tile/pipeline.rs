//! The K loop of a matrix-core kernel: K-tiles move global memory -> registers -> LDS stage ->
//! fragments -> MFMAs, each step overlapping the next tiles' movement with this tile's MFMAs.
//!
//! `S` LDS stages, filled by a [`Producer`]: [`Staged`] moves each K-tile through `R` sets of
//! registers with 128-bit loads (the tile loaded at step kt is stored at step kt + R, into the
//! stage freed by the barrier of the step before, and read S - 1 steps later); [`Direct`] loads
//! it straight into LDS. One step (K-tile kt, LDS stage `kt % S`, fragment slot `kt % 2`):
//!
//! 1. read group 1's fragments of kt (group 0's were read during the previous step);
//! 2. the producer's share: store the registers (K-tile kt + S - 1) into its stage and issue the
//!    global loads of K-tile kt + S + R - 1 into the set just stored, which complete behind the
//!    next R steps' MFMAs (staged), or issue K-tile kt + S - 1's loads into its stage (direct);
//! 3. group 0's MFMAs;
//! 4. barrier: every wave's stores of step 2 are visible, every read of the stage step 2 of the
//!    next step overwrites is done;
//! 5. read group 0's fragments of kt + 1;
//! 6. group 1's MFMAs, behind which step 5's reads complete.
//!
//! Steps 3 to 6 run at raised issue priority (`s_setprio 1`): a wave with MFMAs (or the fragment
//! reads they wait for) ready wins the SIMD's arbiter over a co-resident wave's global loads and
//! LDS stores, which have slack. The model does not model priorities, only the instructions'
//! issue turns: bf16 4096^3 is modeled at 991 TFLOP/s without them, 987 with this pair, 982
//! with the priority also lowered between the groups.
//!
//! So every LDS read has half a K-tile of MFMAs to complete behind, the barrier comes between
//! two MFMA groups (the matrix cores are busy while waves gather at it), and each global load
//! has a whole step. Why not the barrier after all of a tile's MFMAs: the next tile's fragments
//! can only be read after it, and the MFMAs that need them would wait for the LDS round trip
//! every K-tile (measured: 16% of the wave time in one `s_waitcnt`).
//!
//! The hot loop runs in units of `U` steps (`U` a multiple of `S` and of 2) with the position
//! `j` in the unit a constant, so stages, slots and the consumer's per-position work (the fp8
//! block-scaled kernel's scale blocks) are compile-time; it needs every tile it loads to be
//! full. The tail runs the same units with runtime checks and clipped partial tiles.
//!
//! K-tile counters are u32: SALU has no 64-bit ordered compares, so usize counters would live
//! in VGPRs.

use super::direct::DirectTile;
use super::global::{GlobalTile, Stage};
use super::lds::LdsTile;
use super::reg::GROUPS;
use crate::dsl::simd::U32x4;
use crate::dsl::sync::{barrier, barrier_with_global, sched_fence, set_priority};

/// What a kernel does with each K-tile once it is in LDS: its fragment reads and MFMAs, in the
/// two groups of the step (see the module notes).
pub trait Consumer {
    /// Its MFMAs do not look at `last` ([`Consumer::mma`]): then a run that ends inside K runs
    /// hot to its end (see [`Pipeline::run_as`]), where `last` is always false.
    const IGNORES_LAST: bool = false;

    /// Reads group `g`'s fragments of the K-tile in LDS stage `stage` into fragment slot `slot`.
    ///
    /// # Safety
    /// The stage was published by a barrier no later than this read.
    unsafe fn read(&mut self, g: usize, slot: usize, a: LdsTile, b: LdsTile, stage: usize);

    /// Group `g`'s MFMAs on K-tile `kt` from fragment slot `slot`; `j` is the tile's position in
    /// the unit of `U` steps (a constant in the hot loop), `last`: `kt` is the last K-tile.
    fn mma(&mut self, g: usize, slot: usize, j: usize, kt: u32, last: bool);
}

/// How K-tiles get from global memory into LDS stages: the pipeline calls it at fixed points of
/// every step (see the module notes).
pub trait Producer {
    /// LDS stages.
    const STAGES: usize;
    /// Steps between the step that starts moving a K-tile and the one that first reads it: the
    /// hot loop needs every tile up to that far ahead to be full.
    const AHEAD: u32;
    /// Whether the hot loop gets a prologue of its own, without branches (the tail keeps the
    /// checked one). For producers whose loads are still in flight a step into the loop: LLVM's
    /// wait insertion loses the order of loads issued under a branch where the branches join,
    /// and at the loop's head it then waits for every load in flight (the staged producer with
    /// two register sets: `vmcnt(0)` each step where `vmcnt(4)` suffices). Not for the others:
    /// the second copy of the prologue costs code, and moved the quantized GEMM's steps
    /// (Q4_K 512x4096x4096 40.5 -> 42.2 us modeled).
    const HOT_PROLOGUE: bool;
    /// A's and B's LDS tiles.
    fn lds(&self) -> (LdsTile, LdsTile);
    /// Moves K-tiles `kt0 ..` into stages `0 .. STAGES - 1` (those below `kt1`; tiles below
    /// `full` lie inside K), or starts moving them, before the first barrier. `hot`: every
    /// tile up to `kt0 + AHEAD` exists and lies inside K (then it issues its loads without
    /// branches).
    ///
    /// # Safety
    /// No wave reads the stages before the next [`Producer::publish`].
    unsafe fn prologue(&mut self, kt0: u32, kt1: u32, full: u32, hot: bool);
    /// Step `kt`'s share (unit position `pos`): K-tiles `kt + 1 ..` as far as this producer runs
    /// ahead. `hot`: every tile it touches exists and lies inside K.
    ///
    /// # Safety
    /// The stage it writes was freed by the previous step's barrier.
    unsafe fn produce(&mut self, kt: u32, pos: usize, hot: bool, kt1: u32, full: u32);
    /// The workgroup barrier that publishes what this producer wrote.
    fn publish(&self);
}

/// The register-staged producer: a K-tile is loaded (128-bit loads) into one of `R` register
/// sets R steps before the step that stores it into the stage the previous step's barrier
/// freed, and read S - 1 steps after that. With `R = 1` a tile's loads have one step to land;
/// with `R = 2` two, for up to `8 N` more VGPRs: a step's loads queue behind the other waves'
/// on the CU's memory path, and one step was not always enough (the plain GEMM's `REG_SETS`).
pub struct Staged<const N: usize, const S: usize, const R: usize = 1> {
    a: GlobalTile<N>,
    b: GlobalTile<N>,
    lds_a: LdsTile,
    lds_b: LdsTile,
    ra: [Stage<N>; R],
    rb: [Stage<N>; R],
}

impl<const N: usize, const S: usize, const R: usize> Staged<N, S, R> {
    /// Moves `a` and `b` through `lds_a` and `lds_b` (each `S` stages of its rows).
    #[inline(always)]
    pub fn new(a: GlobalTile<N>, b: GlobalTile<N>, lds_a: LdsTile, lds_b: LdsTile) -> Self {
        const { assert!(S >= 2, "the producer stores into the stage the previous step freed") };
        const { assert!(R >= 1 && R <= 2, "one or two register sets") };
        Staged { a, b, lds_a, lds_b, ra: [[U32x4::splat(0); N]; R], rb: [[U32x4::splat(0); N]; R] }
    }

    /// Global -> register set `set` for K-tile `kt`; `full`: the tile lies inside K.
    #[inline(always)]
    fn load(&mut self, kt: u32, full: bool, set: usize) {
        self.a.load(kt, !full, &mut self.ra[set]);
        self.b.load(kt, !full, &mut self.rb[set]);
    }

    /// Register set `set` -> LDS stage `stage`.
    ///
    /// # Safety
    /// No wave reads the stage until the next barrier, and none still reads what it held.
    #[inline(always)]
    unsafe fn store(&self, stage: usize, set: usize) {
        // SAFETY: caller.
        unsafe {
            self.a.store(self.lds_a, stage, &self.ra[set]);
            self.b.store(self.lds_b, stage, &self.rb[set]);
        }
    }
}

impl<const N: usize, const S: usize, const R: usize> Producer for Staged<N, S, R> {
    const STAGES: usize = S;
    const AHEAD: u32 = (S + R - 1) as u32;
    const HOT_PROLOGUE: bool = R > 1;

    #[inline(always)]
    fn lds(&self) -> (LdsTile, LdsTile) {
        (self.lds_a, self.lds_b)
    }

    #[inline(always)]
    unsafe fn prologue(&mut self, kt0: u32, kt1: u32, full: u32, hot: bool) {
        // K-tiles kt0 .. kt0 + S - 1 into stages 0 .. S - 2, the next R into the register sets
        // (K-tile kt0 + t in set t % R: the set a unit position names, see `produce`).
        crate::unroll_max!(st < S - 1, 4 => {
            let kt = kt0 + st as u32;
            if hot || kt < kt1 {
                self.load(kt, hot || kt < full, st % R);
                // SAFETY: caller.
                unsafe { self.store(st, st % R) };
            }
        });
        crate::unroll_max!(r < R, 2 => {
            let t = S - 1 + r;
            let next = kt0 + t as u32;
            if hot || next < kt1 {
                self.load(next, hot || next < full, t % R);
            }
            // The sets' loads in order, one set after the other, as the K loop issues them
            // (interleaved by the scheduler, they make the loop's first waits count wrong).
            sched_fence();
        });
    }

    #[inline(always)]
    unsafe fn produce(&mut self, kt: u32, pos: usize, hot: bool, kt1: u32, full: u32) {
        // K-tile kt0 + t lives in set t % R, and kt = kt0 + pos modulo the unit (a multiple of R).
        let (s, ahead) = (S as u32, Self::AHEAD);
        if hot || kt + s - 1 < kt1 {
            // SAFETY: stage (kt + S - 1) % S held K-tile kt - 1 (caller).
            unsafe { self.store((pos + S - 1) % S, (pos + S - 1) % R) };
        }
        let set = (pos + S + R - 1) % R;
        if hot {
            self.load(kt + ahead, true, set);
        } else if kt + ahead < kt1 {
            self.load(kt + ahead, kt + ahead < full, set);
        }
    }

    #[inline(always)]
    fn publish(&self) {
        barrier();
    }
}

/// The direct producer: K-tiles go from global memory straight into LDS (`buffer_load_dword ...
/// lds`, 4 bytes per lane, no registers), the tile kt + S - 1 at step kt into the stage freed by
/// the previous step's barrier, and every wave waits for its own loads before the barrier that
/// publishes them.
///
/// Why the GEMMs do not use it: LLVM cannot tell which LDS bytes a load to LDS writes (rustc can
/// attach no alias scope to it), so it puts an `s_waitcnt vmcnt(0)` before every LDS read that
/// follows one (measured on this toolchain): the fragment reads after each step's barrier wait
/// for all loads in flight, so loads run ahead of their use by at most half a step, against the
/// staged producer's whole step; and 4 bytes per lane take four times the load instructions of
/// 128-bit ones. It serves kernels whose K loop is short next to their latency budget (the int8
/// smoke kernel runs on it).
pub struct Direct<const D: usize, const S: usize> {
    a: DirectTile<D>,
    b: DirectTile<D>,
    lds_a: LdsTile,
    lds_b: LdsTile,
}

impl<const D: usize, const S: usize> Direct<D, S> {
    /// Moves `a` and `b` into `lds_a` and `lds_b` (each `S` stages of its rows).
    #[inline(always)]
    pub fn new(a: DirectTile<D>, b: DirectTile<D>, lds_a: LdsTile, lds_b: LdsTile) -> Self {
        const { assert!(S >= 2, "the producer loads into the stage the previous step freed") };
        Direct { a, b, lds_a, lds_b }
    }

    /// K-tile `kt` into stage `stage`.
    ///
    /// # Safety
    /// Nobody reads or writes the stage until the next barrier.
    #[inline(always)]
    unsafe fn load(&self, kt: u32, full: bool, stage: usize) {
        // SAFETY: caller.
        unsafe {
            self.a.load(kt, !full, self.lds_a, stage);
            self.b.load(kt, !full, self.lds_b, stage);
        }
    }
}

impl<const D: usize, const S: usize> Producer for Direct<D, S> {
    const STAGES: usize = S;
    const AHEAD: u32 = S as u32 - 1;
    const HOT_PROLOGUE: bool = false;

    #[inline(always)]
    fn lds(&self) -> (LdsTile, LdsTile) {
        (self.lds_a, self.lds_b)
    }

    #[inline(always)]
    unsafe fn prologue(&mut self, kt0: u32, kt1: u32, full: u32, hot: bool) {
        crate::unroll_max!(st < S - 1, 4 => {
            let kt = kt0 + st as u32;
            if hot || kt < kt1 {
                // SAFETY: caller.
                unsafe { self.load(kt, hot || kt < full, st) };
            }
        });
    }

    #[inline(always)]
    unsafe fn produce(&mut self, kt: u32, pos: usize, hot: bool, kt1: u32, full: u32) {
        let next = kt + S as u32 - 1;
        if hot || next < kt1 {
            // SAFETY: stage (kt + S - 1) % S held K-tile kt - 1 (caller).
            unsafe { self.load(next, hot || next < full, (pos + S - 1) % S) };
        }
    }

    #[inline(always)]
    fn publish(&self) {
        // The loads write LDS through the vector-memory path: each wave's must be complete
        // (vmcnt) before the barrier, not only its LDS instructions.
        barrier_with_global();
    }
}

/// The K loop: a producer moving K-tiles into LDS, the schedule of the module notes.
pub struct Pipeline<P: Producer> {
    p: P,
}

impl<P: Producer> Pipeline<P> {
    /// A pipeline over producer `p`.
    #[inline(always)]
    pub fn new(p: P) -> Self {
        Pipeline { p }
    }

    /// Runs K-tiles `kt0..kt1` through `c` in units of `U` steps; tiles below `full` lie inside K
    /// (the last, at `full`, is partial). Ends after a barrier: the LDS tiles are free for the
    /// epilogue.
    #[inline(always)]
    pub fn run<const U: usize, C: Consumer>(&mut self, c: &mut C, kt0: u32, kt1: u32, full: u32) {
        self.run_as::<U, false, C>(c, kt0, kt1, full)
    }

    /// [`Pipeline::run`] with the producer's share of each step moved after the barrier
    /// (`LATE`): step kt produces what step kt + 1 would (the K-tile one further ahead, into the
    /// stage this barrier freed), between the next fragment reads and group 1's MFMAs, and the
    /// prologue produces step kt0's. For two groups of waves sharing the SIMDs and the barriers,
    /// each on its own part of K (the quantized GEMM): with one group early and one late, one
    /// wave's producer work runs beside the other's MFMAs instead of both waves' at once.
    #[inline(always)]
    pub fn run_as<const U: usize, const LATE: bool, C: Consumer>(&mut self, c: &mut C, kt0: u32, kt1: u32, full: u32) {
        const { assert!(U % P::STAGES == 0 && U % 2 == 0, "stages and fragment slots must be constants in a unit") };
        const { assert!(GROUPS == 2) };
        let (lds_a, lds_b) = self.p.lds();
        let stages = P::STAGES;
        let mut kt = kt0;
        // One step on K-tile kt at unit position `j`. `hot`: every tile the producer touches
        // exists and lies inside K (known statically).
        macro_rules! step {
            ($j:expr, $hot:expr) => {{
                let pos: usize = $j;
                let (stage, slot) = (pos % stages, pos % 2);
                // SAFETY (reads): stage `stage` was published by an earlier barrier.
                unsafe { c.read(1, slot, lds_a, lds_b, stage) };
                if !LATE {
                    // SAFETY: the stage it writes held K-tile kt - 1, whose last reads ended
                    // before the previous step's barrier; nobody reads it before this step's.
                    unsafe { self.p.produce(kt, pos, $hot, kt1, full) };
                }
                let last = !$hot && kt + 1 == kt1;
                // The phases stay in this order: the machine scheduler would otherwise move the
                // MFMAs (which touch no memory) below the barrier, the LDS traffic above them.
                sched_fence();
                set_priority::<1>();
                c.mma(0, slot, pos, kt, last);
                sched_fence();
                self.p.publish();
                if $hot || kt + 1 < kt1 {
                    // SAFETY: K-tile kt + 1 was written before the barrier above.
                    unsafe { c.read(0, 1 - slot, lds_a, lds_b, (pos + 1) % stages) };
                }
                sched_fence();
                if LATE {
                    // SAFETY: what step kt + 1 writes early is the stage that held K-tile kt,
                    // whose reads all ended before the barrier above; nobody reads it before
                    // the next step's. (Position pos + 1 may be U: a multiple of every period.)
                    unsafe { self.p.produce(kt + 1, pos + 1, $hot, kt1, full) };
                    sched_fence();
                }
                c.mma(1, slot, pos, kt, last);
                set_priority::<0>();
                sched_fence();
                kt += 1;
            }};
        }

        // Hot loop: the last step of a unit touches K-tile kt + U - 1 + AHEAD, which must be full.
        // With `HOT_PROLOGUE` it is entered from a prologue of its own, without branches (see
        // `Producer::HOT_PROLOGUE`).
        // A run that ends inside K (a split or stream-K segment) runs hot to its last whole
        // unit when the consumer ignores `last`: the producer then loads up to AHEAD tiles past
        // the run (inside K) and stores them into stages that no step reads, and the last step
        // reads the next stage's fragments for nothing (after the last barrier, possibly while
        // another wave's epilogue writes there: values nobody uses); in the tail, its loads
        // under branches made LLVM wait for every load in flight (a memory latency at every
        // segment end).
        let hot_end = if C::IGNORES_LAST { full } else { kt1.min(full) };
        // (A constant test for the other consumers: their loops keep their code.)
        let in_run = |kt: u32| !C::IGNORES_LAST || kt + (U as u32 - 1) < kt1;
        // The prologue (`hot`: branch-free, every tile it loads exists and is full), the barrier
        // that publishes stage 0, and the first fragment reads.
        macro_rules! start {
            ($hot:expr) => {{
                // SAFETY: no stage is read before the barrier below.
                unsafe { self.p.prologue(kt0, kt1, full, $hot) };
                if LATE {
                    // SAFETY: as for the prologue.
                    unsafe { self.p.produce(kt0, 0, $hot, kt1, full) };
                }
                self.p.publish();
                if $hot || kt0 < kt1 {
                    // SAFETY: stage 0 was published by the barrier above.
                    unsafe { c.read(0, 0, lds_a, lds_b, 0) };
                }
            }};
        }
        macro_rules! hot_loop {
            () => {
                while kt + (U as u32 - 1 + P::AHEAD + LATE as u32) < hot_end && in_run(kt) {
                    crate::unroll_max!(j < U, 8 => {
                        step!(j, true);
                    });
                }
            };
        }
        if !P::HOT_PROLOGUE {
            start!(false);
            hot_loop!();
        } else if kt0 + (U as u32 - 1 + P::AHEAD + LATE as u32) < hot_end && in_run(kt0) {
            start!(true);
            hot_loop!();
        } else {
            start!(false);
        }
        // Tail: the remaining tiles, whole units with runtime checks.
        while kt < kt1 {
            crate::unroll_max!(j < U, 8 => {
                if kt < kt1 {
                    step!(j, false);
                }
            });
        }
    }
}
