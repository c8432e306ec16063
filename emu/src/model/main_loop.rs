//! A kernel's main loop and its instruction mix: the share of the vector unit's issued cycles
//! that go to the matrix cores, the figure a GEMM's loop is judged by.
//!
//! Definitions (dynamic, over the traced waves):
//! - a *loop* is the pc range `head..=back` of a taken backward branch at `back` to `head`;
//! - the *main loop* is the loop whose range executed the most MFMA instructions (for a GEMM,
//!   the K loop; an inner loop nested in it is part of it), the tightest one on a tie (a
//!   backward branch to code before the loop, e.g. a loop exit laid out above it, makes a wider
//!   range around the same MFMAs);
//! - its *vector-unit cycles* are the issue cycles the cycle model charges the SIMD's vector
//!   pipes for the instructions executed in that range: an MFMA's cycles on the matrix core
//!   ([`super::cost::mfma_cycles`], GFX942.md's table) and every other VALU instruction's cycles
//!   ([`super::cost::cost`]: 4 per wave64 instruction, more for transcendental and 64-bit ones).
//!   Scalar, LDS, memory, branch and `s_waitcnt` instructions use other pipes and are not counted;
//! - the *MFMA share* is MFMA cycles / vector-unit cycles.

use super::cost::{Cost, UnknownCost, cost};
use crate::exec::{Class, Trace};
use std::collections::BTreeSet;

/// The instruction mix of a kernel's main loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopMix {
    /// Offset of the loop's first instruction in the code object image.
    pub head: u32,
    /// Offset of its backward branch.
    pub back: u32,
    /// MFMA instructions executed in the loop (all traced waves).
    pub mfmas: u64,
    /// Matrix-core cycles of those MFMAs.
    pub mfma_cycles: u64,
    /// Cycles of the loop's other VALU instructions.
    pub valu_cycles: u64,
}

impl LoopMix {
    /// MFMA cycles over all vector-unit cycles of the loop (0 when it has none).
    pub fn mfma_share(&self) -> f64 {
        let total = self.mfma_cycles + self.valu_cycles;
        if total == 0 { 0.0 } else { self.mfma_cycles as f64 / total as f64 }
    }
}

/// Every loop of the traced waves, as `(head, back)` pc pairs: the targets and sources of taken
/// backward branches.
pub fn loops(trace: &Trace) -> BTreeSet<(u32, u32)> {
    let mut out = BTreeSet::new();
    for wave in trace.workgroups.iter().flat_map(|w| &w.waves) {
        for pair in wave.windows(2) {
            if pair[0].class == Class::Branch && pair[0].taken() && pair[1].pc <= pair[0].pc {
                out.insert((pair[1].pc, pair[0].pc));
            }
        }
    }
    out
}

/// The main loop's mix (see the module docs), or `None` when no loop executed an MFMA.
///
/// # Errors
/// An instruction the cycle model cannot cost (an MFMA of unknown shape).
pub fn main_loop_mix(trace: &Trace) -> Result<Option<LoopMix>, UnknownCost> {
    let mut best: Option<LoopMix> = None;
    for (head, back) in loops(trace) {
        let mut mix = LoopMix { head, back, mfmas: 0, mfma_cycles: 0, valu_cycles: 0 };
        for e in trace.workgroups.iter().flat_map(|w| &w.waves).flatten() {
            if e.pc < head || e.pc > back {
                continue;
            }
            match cost(e)? {
                Cost::Mfma(c) => {
                    mix.mfmas += 1;
                    mix.mfma_cycles += c;
                }
                Cost::Valu(c) => mix.valu_cycles += c,
                _ => {}
            }
        }
        let better = |b: LoopMix| mix.mfmas > b.mfmas || (mix.mfmas == b.mfmas && mix.back - mix.head < b.back - b.head);
        if mix.mfmas > 0 && best.is_none_or(better) {
            best = Some(mix);
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::{Event, WorkgroupTrace};
    use crate::isa::Op;

    fn event(pc: u32, op: Op, class: Class) -> Event {
        Event { pc, op, class, a: 0, b: 0, lds_bytes: 0 }
    }

    /// One wave: a prologue VALU op, then `iterations` of a loop body of 4 16x16x16 bf16 MFMAs
    /// (16 cycles each on gfx942), 4 VALU adds, an LDS read and a backward branch (taken but the
    /// last time).
    fn trace(iterations: usize) -> Trace {
        let mut wave = vec![event(0, Op::VAddU32, Class::Valu)];
        for it in 0..iterations {
            let mut pc = 4;
            for _ in 0..4 {
                wave.push(event(pc, Op::VMfmaF3216x16x16Bf16, Class::Mfma));
                pc += 8;
            }
            for _ in 0..4 {
                wave.push(event(pc, Op::VAddU32, Class::Valu));
                pc += 4;
            }
            wave.push(event(pc, Op::DsReadB128, Class::Ds));
            pc += 8;
            let mut branch = event(pc, Op::SCbranchScc1, Class::Branch);
            branch.b = u32::from(it + 1 < iterations);
            wave.push(branch);
        }
        wave.push(event(200, Op::VAddU32, Class::Valu));
        Trace { workgroups: vec![WorkgroupTrace { id: [0; 3], linear: 0, waves: vec![wave] }] }
    }

    #[test]
    fn the_share_counts_mfma_and_valu_cycles_of_the_loop_only() {
        let mix = main_loop_mix(&trace(5)).unwrap().unwrap();
        assert_eq!((mix.head, mix.back), (4, 4 + 4 * 8 + 4 * 4 + 8));
        assert_eq!(mix.mfmas, 20);
        // 4 x 16 MFMA cycles against 4 x 4 VALU cycles per iteration: 64 / 80; the prologue and
        // epilogue adds and the LDS read do not count.
        assert_eq!((mix.mfma_cycles, mix.valu_cycles), (5 * 64, 5 * 16));
        assert!((mix.mfma_share() - 0.8).abs() < 1e-12);
    }

    #[test]
    fn of_two_ranges_around_the_same_mfmas_the_tighter_is_the_main_loop() {
        let mut t = trace(3);
        // A taken backward branch after the loop to the prologue: a wider range, same MFMAs.
        let wave = &mut t.workgroups[0].waves[0];
        let mut outer = event(100, Op::SCbranchScc1, Class::Branch);
        outer.b = 1;
        wave.push(outer);
        wave.push(event(0, Op::VAddU32, Class::Valu));
        assert_eq!(loops(&t).len(), 2);
        let mix = main_loop_mix(&t).unwrap().unwrap();
        assert_eq!((mix.head, mix.back, mix.mfmas), (4, 60, 12));
    }

    #[test]
    fn without_a_taken_backward_branch_there_is_no_main_loop() {
        assert_eq!(main_loop_mix(&trace(1)).unwrap(), None);
    }
}
