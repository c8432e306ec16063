//! The bench report: a markdown table for people, JSON for tools. Every MI300X figure in it is
//! modeled (cycle model on emulator traces); the wall times are the emulator's on this host.

use crate::run::CaseReport;
use ferrocm_emu::model::machine::{CLOCK_MHZ, HBM_PEAK_BYTES_PER_S, HBM_SUSTAINED_BYTES_PER_S, LOADED_CLOCK_MHZ};
use serde_json::json;

fn si(v: f64) -> String {
    let a = v.abs();
    if a >= 1e12 {
        format!("{:.2}T", v / 1e12)
    } else if a >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn time(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

/// The markdown report.
pub fn markdown(cases: &[CaseReport]) -> String {
    let mut s = format!(
        "# ferrocm benchmarks (modeled MI300X)\n\n\
         Modeled figures come from the cycle model (`emu/src/model/README.md`) replaying emulator traces of a \
         sample of each launch's workgroups, at the clock under each launch's matrix-core load ({CLOCK_MHZ:.0} MHz \
         peak, {LOADED_CLOCK_MHZ:.0} MHz with the matrix cores always busy) with HBM at {:.1} TB/s sustained; nothing \
         here ran on a GPU. \"TFLOP/s at peak clock\" is the same work over the same modeled cycles at \
         {CLOCK_MHZ:.0} MHz (the clock the project's performance targets are stated at). \"% roof\" is the roofline bound (FLOPs at the matrix/vector peak, compulsory bytes \
         at the {:.1} TB/s HBM peak, whichever is longer) over the modeled time. Emulator wall time is this \
         host's, for the sampled workgroups only. \"Main-loop MFMA share\" is, in the loop that executed the \
         most MFMAs, their matrix-core cycles over all vector-unit cycles (those plus the other VALU \
         instructions'; scalar, LDS, memory, branch and wait instructions excluded; \
         `emu/src/model/main_loop.rs`).\n\n",
        HBM_SUSTAINED_BYTES_PER_S / 1e12,
        HBM_PEAK_BYTES_PER_S / 1e12
    );
    s += "| op | shape | emulator wall | sampled WGs | instructions | MFMA | global bytes | LDS bytes | LDS conflict cycles | modeled time | TFLOP/s | TFLOP/s at peak clock | GB/s | % roof | bottleneck |\n";
    s += "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
    for c in cases {
        let sum = |f: &dyn Fn(&crate::run::LaunchReport) -> f64| c.launches.iter().map(f).sum::<f64>();
        let sampled: Vec<String> = c.launches.iter().map(|l| format!("{}/{}", l.sampled_workgroups, l.grid_workgroups)).collect();
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {}B | {}B | {} | {} | {} | {} | {:.0} | {:.1}% | {} |\n",
            c.op,
            c.shape,
            time(c.emu_wall_s),
            sampled.join(" + "),
            si(sum(&|l| l.counters.instructions)),
            si(sum(&|l| l.counters.mfma)),
            si(sum(&|l| l.counters.global_bytes)),
            si(sum(&|l| l.counters.lds_bytes)),
            si(sum(&|l| l.counters.bank_conflict_cycles)),
            time(c.modeled_s),
            if c.flops > 0.0 { format!("{:.1}", c.flops_per_s / 1e12) } else { "-".into() },
            if c.flops > 0.0 { format!("{:.1}", c.flops_per_s_peak_clock / 1e12) } else { "-".into() },
            c.bytes_per_s / 1e9,
            100.0 * c.roof_fraction,
            c.bottleneck_text,
        );
    }
    s += "\n## Launches\n\n| case | kernel | waves/SIMD | resident WGs | WGs per CU | tail eff. | HBM share of requests | util MFMA / VALU / LDS / memory | main-loop MFMA share | modeled time | bottleneck |\n|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|\n";
    for c in cases {
        for l in &c.launches {
            let m = &l.modeled;
            let u = &m.utilization;
            s += &format!(
                "| {} {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.0}% / {:.0}% / {:.0}% / {:.0}% | {} | {} | {} |\n",
                c.op,
                c.shape,
                l.kernel,
                m.waves_per_simd,
                m.resident_workgroups,
                m.workgroups_per_cu,
                m.tail_efficiency,
                m.hbm_fraction,
                100.0 * u.mfma,
                100.0 * u.valu,
                100.0 * u.lds,
                100.0 * u.memory,
                l.main_loop.map(|x| format!("{:.1}%", 100.0 * x.mfma_share())).unwrap_or_else(|| "-".into()),
                time(m.seconds),
                m.bottleneck_text()
            );
        }
    }
    s
}

/// The JSON report.
pub fn json(cases: &[CaseReport]) -> String {
    let v: Vec<_> = cases
        .iter()
        .map(|c| {
            let launches: Vec<_> = c
                .launches
                .iter()
                .map(|l| {
                    let m = &l.modeled;
                    json!({
                        "kernel": l.kernel,
                        "grid_workgroups": l.grid_workgroups,
                        "sampled_workgroups": l.sampled_workgroups,
                        "emulator_wall_s": l.emu_wall_s,
                        "counters_scaled_to_grid": {
                            "instructions": l.counters.instructions,
                            "mfma": l.counters.mfma,
                            "global_bytes": l.counters.global_bytes,
                            "global_lines_64b": l.counters.lines,
                            "lds_bytes": l.counters.lds_bytes,
                            "lds_bank_conflict_cycles": l.counters.bank_conflict_cycles,
                            "barriers": l.counters.barriers,
                        },
                        "main_loop": l.main_loop.map(|x| json!({
                            "head_pc": x.head,
                            "back_branch_pc": x.back,
                            "mfmas": x.mfmas,
                            "mfma_cycles": x.mfma_cycles,
                            "other_valu_cycles": x.valu_cycles,
                            "mfma_share": x.mfma_share(),
                        })),
                        "modeled": {
                            "cycles": m.cycles,
                            "seconds": m.seconds,
                            "workgroups_per_cu": m.workgroups_per_cu,
                            "simulated_workgroups": m.simulated_workgroups,
                            "tail_efficiency": m.tail_efficiency,
                            "waves_per_simd": m.waves_per_simd,
                            "resident_workgroups": m.resident_workgroups,
                            "requested_bytes": m.requested_bytes,
                            "hbm_fraction": m.hbm_fraction,
                            "utilization": {"mfma": m.utilization.mfma, "valu": m.utilization.valu, "lds": m.utilization.lds, "memory": m.utilization.memory},
                            "bottleneck": m.bottleneck.name(),
                            "busiest": {"resource": m.busiest.0.name(), "busy": m.busiest.1},
                            "wave_cycles_by_class": m.by_class,
                        },
                    })
                })
                .collect();
            json!({
                "op": c.op,
                "shape": c.shape,
                "flops": c.flops,
                "min_bytes": c.min_bytes,
                "compute_roof": c.math,
                "compute_roof_flops_per_s": c.peak_flops,
                "emulator_wall_s": c.emu_wall_s,
                "modeled_s": c.modeled_s,
                "modeled_flops_per_s": c.flops_per_s,
                "modeled_s_at_peak_clock": c.modeled_peak_clock_s,
                "modeled_flops_per_s_at_peak_clock": c.flops_per_s_peak_clock,
                "modeled_bytes_per_s": c.bytes_per_s,
                "roof_fraction": c.roof_fraction,
                "bottleneck": c.bottleneck.name(),
                "launches": launches,
            })
        })
        .collect();
    let doc = json!({
        "modeled": true,
        "clock_mhz": CLOCK_MHZ,
        "loaded_clock_mhz": LOADED_CLOCK_MHZ,
        "hbm_sustained_bytes_per_s": HBM_SUSTAINED_BYTES_PER_S,
        "hbm_peak_bytes_per_s": HBM_PEAK_BYTES_PER_S,
        "cases": v,
    });
    serde_json::to_string_pretty(&doc).expect("plain values") + "\n"
}
