//! AITER's kernels on the emulator, the heavy sweeps (run through `cargo xtask aiter ...`):
//!
//! - `calibrate [--sample N] [--filter TEXT] [--markdown FILE]`: every gfx942 row of AITER's
//!   tuned tables whose kernel the emulator runs, modeled; modeled over measured per row, the
//!   error distribution;
//! - `disasm [--objdump PATH] [--filter TEXT]`: `ferrocm-emu disasm` against `llvm-objdump-19 -d
//!   --mcpu=gfx942` on every gfx942 code object of the wheel; counts instructions and
//!   mismatches, fails on any.

use ferrocm_emu::aiter::Wheel;
use ferrocm_emu::aiter::calibrate::{self, Calibrated};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("calibrate") => calibrate(&args[1..]),
        Some("disasm") => disasm(&args[1..]),
        _ => Err("usage: aiter calibrate [--sample N] [--filter TEXT] [--markdown FILE] | disasm [--objdump PATH] [--filter TEXT]".into()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn calibrate(args: &[String]) -> Result<(), String> {
    let wheel = Wheel::locate().map_err(|e| e.to_string())?;
    let sample: u64 = flag(args, "--sample").map_or(Ok(16), |v| v.parse().map_err(|_| format!("bad --sample {v}")))?;
    let filter = flag(args, "--filter");
    let (rows, skipped) = calibrate::rows(&wheel).map_err(|e| e.to_string())?;
    let mut done: Vec<Calibrated> = Vec::new();
    let started = std::time::Instant::now();
    for row in rows.iter().filter(|r| filter.as_ref().is_none_or(|f| r.what.contains(f.as_str()) || r.kernel.contains(f.as_str()))) {
        let t = std::time::Instant::now();
        match calibrate::model_row(&wheel, row, sample) {
            Ok(c) => {
                eprintln!(
                    "{}:{} {} {} CU{}: measured {:.1} us, modeled {:.1} us ({:.2}x) [{}] ({:.1} s)",
                    c.row.table,
                    c.row.line,
                    c.row.what,
                    c.row.kernel,
                    c.row.cu_num,
                    c.row.measured_us,
                    c.modeled_us(),
                    c.ratio(),
                    c.modeled.modeled.bottleneck_text(),
                    t.elapsed().as_secs_f64()
                );
                done.push(c);
            }
            Err(e) => return Err(format!("{}:{}: {e}", row.table, row.line)),
        }
    }
    let mut anchor = String::new();
    if filter.is_none() || filter.as_deref() == Some("fmha") {
        let (lo, hi) = calibrate::FMHA_ANCHOR_TFLOPS;
        anchor += &format!(
            "\nSecond anchor: AITER's published fmha_v3_fwd MI300X throughput, {lo:.0}-{hi:.0} TFLOP/s (bf16, hd128, non-causal, seq >= 4096):\n\n| launch | modeled TFLOP/s | modeled/published (midpoint) | bottleneck (modeled) |\n|---|---|---|---|\n"
        );
        for a in calibrate::fmha_anchor_shapes() {
            let (m, tflops) = calibrate::model_fmha(&wheel, &a, sample).map_err(|e| e.to_string())?;
            eprintln!("fmha b{} h{} s{}: modeled {tflops:.0} TFLOP/s [{}]", a.batch, a.heads_q, a.seq_q, m.modeled.bottleneck_text());
            anchor += &format!(
                "| fmha_v3_fwd b={} h={} s={} d=128 | {tflops:.0} | {:.2} | {:.0} MHz | {:.0}% | {} |\n",
                a.batch,
                a.heads_q,
                a.seq_q,
                tflops / ((lo + hi) / 2.0),
                m.modeled.clock_mhz,
                100.0 * m.modeled.utilization.mfma,
                m.modeled.bottleneck_text()
            );
        }
    }
    let mut errs: Vec<f64> = done.iter().map(|c| (c.ratio() - 1.0).abs()).collect();
    let worst = done.iter().map(|c| c.ratio().max(1.0 / c.ratio())).fold(0.0, f64::max);
    let med = median(&mut errs);
    let md = report(&done, &skipped, med, worst) + &anchor;
    println!("{md}");
    if let Some(path) = flag(args, "--markdown") {
        std::fs::write(&path, &md).map_err(|e| format!("{path}: {e}"))?;
    }
    eprintln!("{} rows in {:.0} s", done.len(), started.elapsed().as_secs_f64());
    Ok(())
}

fn report(done: &[Calibrated], skipped: &[calibrate::Skipped], median_err: f64, worst: f64) -> String {
    let mut s = String::from(
        "| table:line | launch | kernel | CUs | measured us | modeled us | modeled/measured | bottleneck (modeled) |\n|---|---|---|---|---|---|---|---|\n",
    );
    for c in done {
        let k = c.row.kernel.trim_start_matches("_ZN5aiter").trim_end_matches('E').trim_start_matches(char::is_numeric);
        s += &format!(
            "| {}:{} | {} | {} | {} | {:.1} | {:.1} | {:.2} | {} |\n",
            c.row.table,
            c.row.line,
            c.row.what,
            k,
            c.row.cu_num,
            c.row.measured_us,
            c.modeled_us(),
            c.ratio(),
            c.modeled.modeled.bottleneck_text()
        );
    }
    s += &format!("\n{} rows: median |modeled/measured - 1| = {:.1}%, worst factor {:.2}x\n", done.len(), 100.0 * median_err, worst);
    for k in skipped {
        s += &format!("\nskipped {}:{}: {}", k.table, k.line, k.why);
    }
    s
}

fn disasm(args: &[String]) -> Result<(), String> {
    let wheel = Wheel::locate().map_err(|e| e.to_string())?;
    let objdump = flag(args, "--objdump").unwrap_or_else(|| "llvm-objdump-19".into());
    let filter = flag(args, "--filter");
    let objects = wheel.gfx942_objects().map_err(|e| e.to_string())?;
    let (mut files, mut instructions, mut bad_files) = (0u64, 0u64, 0u64);
    let started = std::time::Instant::now();
    for rel in objects.iter().filter(|r| filter.as_ref().is_none_or(|f| r.contains(f.as_str()))) {
        let path = wheel.gfx942(rel);
        let out = std::process::Command::new(&objdump)
            .args(["-d", "--mcpu=gfx942"])
            .arg(&path)
            .output()
            .map_err(|e| format!("running {objdump}: {e} (apt-get install llvm-19)"))?;
        if !out.status.success() {
            return Err(format!("{objdump} failed on {rel}: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let co = wheel.code_object(rel).map_err(|e| e.to_string())?;
        let d = ferrocm_emu::listing::objdump_differential(&co, &String::from_utf8_lossy(&out.stdout));
        files += 1;
        instructions += d.instructions;
        if !d.mismatches.is_empty() {
            bad_files += 1;
            for (line, theirs, ours) in d.mismatches.iter().take(5) {
                eprintln!("{rel}:{line}:\n  llvm-objdump: {theirs}\n  ferrocm-emu:  {ours}");
            }
        }
    }
    println!(
        "disasm differential: {files} gfx942 code objects, {instructions} instructions, {bad_files} objects with mismatches ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    if bad_files > 0 { Err(format!("{bad_files} code objects differ from llvm-objdump")) } else { Ok(()) }
}
