//! The K loop of a matrix-core kernel: K-tiles move global memory -> registers -> LDS stage ->
//! fragments -> MFMAs, each step overlapping the next tiles' movement with this tile's MFMAs.
//!
//! `S` LDS stages; the producer stages each K-tile through registers: the tile loaded at step kt
//! is stored at step kt + 1, into the stage freed by the barrier of step kt, and read S - 1 steps
//! later. One step (K-tile kt, LDS stage `kt % S`, fragment slot `kt % 2`):
//!
//! 1. read group 1's fragments of kt (group 0's were read during the previous step);
//! 2. store the registers (K-tile kt + S - 1) into its stage; issue the global loads of
//!    K-tile kt + S into the registers: they complete behind this step's MFMAs;
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

use super::global::{GlobalTile, Staged};
use super::lds::LdsTile;
use super::reg::GROUPS;
use crate::dsl::simd::U32x4;
use crate::dsl::sync::{barrier, sched_fence, set_priority};

/// What a kernel does with each K-tile once it is in LDS: its fragment reads and MFMAs, in the
/// two groups of the step (see the module notes).
pub trait Consumer {
    /// Reads group `g`'s fragments of the K-tile in LDS stage `stage` into fragment slot `slot`.
    ///
    /// # Safety
    /// The stage was published by a barrier no later than this read.
    unsafe fn read(&mut self, g: usize, slot: usize, a: LdsTile, b: LdsTile, stage: usize);

    /// Group `g`'s MFMAs on K-tile `kt` from fragment slot `slot`; `j` is the tile's position in
    /// the unit of `U` steps (a constant in the hot loop), `last`: `kt` is the last K-tile.
    fn mma(&mut self, g: usize, slot: usize, j: usize, kt: u32, last: bool);
}

/// The two operands' global and LDS tiles and the producer's register stage.
pub struct Pipeline<const N: usize, const S: usize> {
    a: GlobalTile<N>,
    b: GlobalTile<N>,
    lds_a: LdsTile,
    lds_b: LdsTile,
    ra: Staged<N>,
    rb: Staged<N>,
}

impl<const N: usize, const S: usize> Pipeline<N, S> {
    /// A pipeline moving `a` and `b` through `lds_a` and `lds_b` (each `S` stages of its rows).
    #[inline(always)]
    pub fn new(a: GlobalTile<N>, b: GlobalTile<N>, lds_a: LdsTile, lds_b: LdsTile) -> Self {
        const { assert!(S >= 2, "the producer stores into the stage the previous step freed") };
        Pipeline { a, b, lds_a, lds_b, ra: [U32x4::splat(0); N], rb: [U32x4::splat(0); N] }
    }

    /// Global -> registers for K-tile `kt`; `full`: the tile lies inside K.
    #[inline(always)]
    fn load(&mut self, kt: u32, full: bool) {
        self.a.load(kt, !full, &mut self.ra);
        self.b.load(kt, !full, &mut self.rb);
    }

    /// Registers -> LDS stage `stage`.
    ///
    /// # Safety
    /// No wave reads the stage until the next barrier, and none still reads what it held.
    #[inline(always)]
    unsafe fn store(&self, stage: usize) {
        // SAFETY: caller.
        unsafe {
            self.a.store(self.lds_a, stage, &self.ra);
            self.b.store(self.lds_b, stage, &self.rb);
        }
    }

    /// Runs K-tiles `kt0..kt1` through `c` in units of `U` steps; tiles below `full` lie inside K
    /// (128-bit loads), the one at `full` is partial. Ends after a barrier: the LDS tiles are
    /// free for the epilogue.
    #[inline(always)]
    pub fn run<const U: usize, C: Consumer>(&mut self, c: &mut C, kt0: u32, kt1: u32, full: u32) {
        const { assert!(U % S == 0 && U % 2 == 0, "stages and fragment slots must be constants in a unit") };
        const { assert!(GROUPS == 2) };
        let s = S as u32;
        // Prologue: K-tiles kt0 .. kt0 + S - 1 into stages 0 .. S - 2 through the registers, the
        // next one into the registers.
        crate::unroll_max!(st < S - 1, 4 => {
            let kt = kt0 + st as u32;
            if kt < kt1 {
                self.load(kt, kt < full);
                // SAFETY: no stage is read before the barrier below.
                unsafe { self.store(st) };
            }
        });
        if kt0 + s - 1 < kt1 {
            self.load(kt0 + s - 1, kt0 + s - 1 < full);
        }
        barrier();
        if kt0 < kt1 {
            // SAFETY: stage 0 was published by the barrier above.
            unsafe { c.read(0, 0, self.lds_a, self.lds_b, 0) };
        }

        let mut kt = kt0;
        // One step on K-tile kt at unit position `j`. `hot`: every tile it stores or loads
        // exists and lies inside K (known statically).
        macro_rules! step {
            ($j:expr, $hot:expr) => {{
                let pos: usize = $j;
                let (stage, slot) = (pos % S, pos % 2);
                // SAFETY (reads): stage `stage` was published by an earlier barrier (the prologue's
                // or, for kt - S + 1's store, step kt - S + 1's).
                unsafe { c.read(1, slot, self.lds_a, self.lds_b, stage) };
                if $hot || kt + s - 1 < kt1 {
                    // SAFETY: stage (kt + S - 1) % S held K-tile kt - 1, whose last reads ended
                    // before the previous step's barrier; nobody reads it before this step's.
                    unsafe { self.store((pos + S - 1) % S) };
                }
                if $hot {
                    self.load(kt + s, true);
                } else if kt + s < kt1 {
                    self.load(kt + s, kt + s < full);
                }
                let last = !$hot && kt + 1 == kt1;
                // The phases stay in this order: the machine scheduler would otherwise move the
                // MFMAs (which touch no memory) below the barrier, the LDS traffic above them.
                sched_fence();
                set_priority::<1>();
                c.mma(0, slot, pos, kt, last);
                sched_fence();
                barrier();
                if $hot || kt + 1 < kt1 {
                    // SAFETY: K-tile kt + 1 was stored at step kt + 2 - S <= kt, before the barrier.
                    unsafe { c.read(0, 1 - slot, self.lds_a, self.lds_b, (pos + 1) % S) };
                }
                sched_fence();
                c.mma(1, slot, pos, kt, last);
                set_priority::<0>();
                sched_fence();
                kt += 1;
            }};
        }

        // Hot loop: the last step of a unit loads K-tile kt + U - 1 + S, which must be full.
        let hot_end = kt1.min(full);
        while kt + ((U + S - 1) as u32) < hot_end {
            crate::unroll_max!(j < U, 6 => {
                step!(j, true);
            });
        }
        // Tail: the remaining tiles, whole units with runtime checks.
        while kt < kt1 {
            crate::unroll_max!(j < U, 6 => {
                if kt < kt1 {
                    step!(j, false);
                }
            });
        }
    }
}
