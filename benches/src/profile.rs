//! `cargo xtask profile`: where one case's modeled time goes, per instruction class and per
//! basic block (hottest first, with the block's code), from the cycle model's per-pc costs.

use crate::run::CaseReport;
use ferrocm::Device;
use ferrocm_emu::model::main_loop::loops;
use ferrocm_emu::model::{TIMELINE_MIN_STALL, hot_blocks};
use std::fmt::Write;

/// Runs of code shorter than this are left out of the wave timelines.
const RUN_LINES: u64 = 8;
/// Instructions of a block printed at most.
const BLOCK_LINES: usize = 24;
/// Lines past the first `BLOCK_LINES` of a block shown when they take at least this share of the wave time.
const HOT_LINE: f64 = 0.01;

/// The text profile of `case` (run on `dev`, the emulator it was measured on), `top` blocks per
/// launch; the wave timelines are of workgroup `workgroup` of each launch's busiest CU (what
/// [`crate::run::run_case_following`] was given).
pub fn text(dev: &Device, case: &CaseReport, top: usize, workgroup: u64) -> String {
    let mut s = format!("profile of {} {} (modeled MI300X, {:.3} ms)\n", case.op, case.shape, case.modeled_s * 1e3);
    let module = dev.as_emulator().map(|e| e.module());
    for l in &case.launches {
        let m = &l.modeled;
        let u = &m.utilization;
        let _ = writeln!(
            s,
            "\n== {}: {} cycles ({:.3} ms), bottleneck {}; {} waves/SIMD, {} workgroups resident, {} per CU\n   busy: MFMA {:.0}%  VALU {:.0}%  LDS {:.0}%  memory {:.0}%",
            l.kernel,
            m.cycles,
            m.seconds * 1e3,
            m.bottleneck_text(),
            m.waves_per_simd,
            m.resident_workgroups,
            m.workgroups_per_cu,
            100.0 * u.mfma,
            100.0 * u.valu,
            100.0 * u.lds,
            100.0 * u.memory
        );
        let total: u64 = m.by_class.values().sum::<u64>().max(1);
        let _ = writeln!(s, "\n   wave time by instruction class (stall before + issue):");
        let mut classes: Vec<_> = m.by_class.iter().collect();
        classes.sort_by(|a, b| b.1.cmp(a.1));
        for (name, &wc) in classes {
            let _ = writeln!(s, "   {:>14}  {:>6.1}%  {:>14} wave-cycles", name, 100.0 * wc as f64 / total as f64, wc);
        }
        let loops = loops(&l.trace);
        if let Some(x) = l.main_loop {
            let _ = writeln!(
                s,
                "\n   main loop {:#x}..={:#x}: MFMA share of vector-unit cycles {:.1}% ({} MFMAs, {} matrix-core cycles, {} other VALU cycles)",
                x.head,
                x.back,
                100.0 * x.mfma_share(),
                x.mfmas,
                x.mfma_cycles,
                x.valu_cycles
            );
        }
        // One workgroup's waves: when each ended and where it waited (the chain of a
        // latency-bound launch; a later workgroup of the busiest CU shows what the first left
        // it, e.g. the younger of two co-resident ones, which issues after the older).
        let _ = writeln!(
            s,
            "\n   workgroup {workgroup} of the busiest CU's {}, wave by wave (clock of issue, wait before it; waits under {TIMELINE_MIN_STALL} clocks left out):",
            m.workgroups_per_cu
        );
        if m.timeline.is_empty() {
            let _ = writeln!(s, "   (none: the busiest CU runs workgroups 0 to {})", m.workgroups_per_cu.saturating_sub(1));
        }
        for w in &m.timeline {
            let _ = writeln!(s, "   wave {} (SIMD {}): {} instructions, ends at {}", w.wave, w.simd, w.issued(), w.end);
            // Runs of code and waits merged in clock order.
            let (mut ri, mut si) = (0, 0);
            while ri < w.runs.len() || si < w.stalls.len() {
                let stall_first = si < w.stalls.len() && (ri >= w.runs.len() || w.stalls[si].at < w.runs[ri].at);
                if stall_first {
                    let st = w.stalls[si];
                    let text =
                        module.and_then(|md| md.fetch(l.image_base + st.pc as u64).ok()).map(|i| i.text()).unwrap_or_else(|| "?".into());
                    let _ = writeln!(s, "     {:>6}  wait {:<5} before {:#x}  {text}", st.at, st.cycles, st.pc);
                    si += 1;
                } else {
                    let r = w.runs[ri];
                    if r.instructions >= RUN_LINES {
                        let _ = writeln!(s, "     {:>6}  run of {:>4} instructions {:#x}..={:#x}", r.at, r.instructions, r.pc, r.last_pc);
                    }
                    ri += 1;
                }
            }
        }
        let waves = (l.trace.workgroups.iter().map(|w| w.waves.len()).sum::<usize>() as f64 / l.trace.workgroups.len().max(1) as f64)
            * m.workgroups_per_cu as f64;
        let _ = writeln!(s, "\n   hottest basic blocks (offsets in the code object image):");
        for b in hot_blocks(&l.trace, m).iter().take(top) {
            let mfmas = b
                .pcs
                .iter()
                .filter(|&&pc| {
                    module.and_then(|md| md.fetch(l.image_base + pc as u64).ok()).is_some_and(|i| i.op.name().starts_with("v_mfma"))
                })
                .count();
            let per_wave = b.executions as f64 / waves.max(1.0);
            let kind = match loops.iter().find(|&&(head, back)| head <= b.start && b.start <= back) {
                Some(&(head, back)) if head == b.start => {
                    format!("loop head (loop {head:#x}..={back:#x}), {per_wave:.0} iterations per wave")
                }
                Some(&(head, back)) => format!("inside loop {head:#x}..={back:#x}, {per_wave:.0} executions per wave"),
                None => format!("outside loops, {per_wave:.0} executions per wave"),
            };
            let _ = writeln!(
                s,
                "\n   block @{:#x}: {:.1}% of wave time (~{:.0} CU cycles), {} instructions ({} MFMA), {}",
                b.start,
                100.0 * b.share,
                b.share * m.cycles as f64,
                b.pcs.len(),
                mfmas,
                kind
            );
            // The block's first lines, then only the hot ones (where a long block's time goes).
            let mut hidden = 0;
            for (i, &pc) in b.pcs.iter().enumerate() {
                let c = m.per_pc.get(&pc).map(|c| c.wave_cycles).unwrap_or(0);
                let share = c as f64 / total as f64;
                if i >= BLOCK_LINES && share < HOT_LINE {
                    hidden += 1;
                    continue;
                }
                let text = module.and_then(|md| md.fetch(l.image_base + pc as u64).ok()).map(|i| i.text()).unwrap_or_else(|| "?".into());
                let _ = writeln!(s, "     {pc:#8x}  {:>5.1}%  {text}", 100.0 * share);
            }
            if hidden > 0 {
                let _ = writeln!(s, "     ... {hidden} more, each under {:.0}%", 100.0 * HOT_LINE);
            }
        }
    }
    s
}
