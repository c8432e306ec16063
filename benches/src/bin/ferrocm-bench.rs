//! The bench report and profiler behind `cargo xtask bench` and `cargo xtask profile`.
//!
//! ```text
//! ferrocm-bench report [--filter TEXT] [--out DIR]    every case (or those whose name contains
//!                                                      TEXT): table + JSON + roofline SVG in DIR
//! ferrocm-bench profile OP --shape SHAPE [--top N] [--workgroup N]    class breakdown and hottest blocks
//! ferrocm-bench gpu [--filter TEXT]                   real-GPU timing (HIP events), if a GPU is here
//! ```

use ferrocm::Device;
use ferrocm_benches::{aiter, gpu, profile, registry, report, roofline, run};
use std::path::PathBuf;
use std::process::ExitCode;

fn arg_value(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn selected(filter: &Option<String>) -> Vec<registry::Case> {
    registry::registry().into_iter().filter(|c| filter.as_ref().is_none_or(|f| c.name().contains(f.as_str()))).collect()
}

fn report_cmd(args: &[String]) -> Result<(), String> {
    let filter = arg_value(args, "--filter");
    let out = PathBuf::from(arg_value(args, "--out").unwrap_or_else(|| "target/bench".into()));
    let dev = Device::emulator().map_err(|e| e.to_string())?;
    let cases = selected(&filter);
    if cases.is_empty() {
        return Err(format!("no benchmark matches {filter:?}"));
    }
    let mut done = Vec::new();
    let mut failed = Vec::new();
    for c in &cases {
        eprintln!("bench: {} ...", c.name());
        match run::run_case(&dev, c) {
            Ok(r) => {
                eprintln!("   emulator {:.2} s, modeled {:.3} ms, {}", r.emu_wall_s, r.modeled_s * 1e3, r.bottleneck_text);
                done.push(r);
            }
            Err(e) => {
                eprintln!("   failed: {e}");
                failed.push(format!("{}: {e}", c.name()));
            }
        }
    }
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut md = report::markdown(&done);
    md += &aiter::markdown(&aiter::side_by_side(&done, &filter));
    let mut md_full = md.clone();
    match gpu::gpu_device() {
        Ok(_) => md_full += "\nA GPU is present: `ferrocm-bench gpu` times the same cases with HIP events.\n",
        Err(e) => md_full += &format!("\nReal-GPU timing: {e}.\n"),
    }
    for f in &failed {
        md_full += &format!("\nFAILED: {f}\n");
    }
    for (name, text) in [("bench.md", md_full.as_str()), ("bench.json", &report::json(&done)), ("roofline.svg", &roofline::svg(&done))] {
        std::fs::write(out.join(name), text).map_err(|e| format!("{}: {e}", out.join(name).display()))?;
    }
    println!("{md_full}");
    println!("written: {0}/bench.md, {0}/bench.json, {0}/roofline.svg", out.display());
    if failed.is_empty() { Ok(()) } else { Err(format!("{} case(s) failed", failed.len())) }
}

fn profile_cmd(args: &[String]) -> Result<(), String> {
    let op = args.first().filter(|a| !a.starts_with("--")).ok_or("profile needs an op name (e.g. gemm)")?;
    let top = arg_value(args, "--top").map(|t| t.parse::<usize>().map_err(|_| format!("--top {t:?}"))).transpose()?.unwrap_or(5);
    let case = match arg_value(args, "--shape") {
        Some(shape) => registry::case_for(op, &shape)?,
        None => registry::registry().into_iter().find(|c| c.op == op).ok_or_else(|| format!("no benchmark for op {op:?}"))?,
    };
    let workgroup =
        arg_value(args, "--workgroup").map(|w| w.parse::<u64>().map_err(|_| format!("--workgroup {w:?}"))).transpose()?.unwrap_or(0);
    let dev = Device::emulator().map_err(|e| e.to_string())?;
    let r = run::run_case_following(&dev, &case, workgroup).map_err(|e| e.to_string())?;
    println!("{}", profile::text(&dev, &r, top, workgroup));
    Ok(())
}

fn gpu_cmd(args: &[String]) -> Result<(), String> {
    let dev = match gpu::gpu_device() {
        Ok(d) => d,
        Err(e) => {
            println!("{e}. Nothing was timed.");
            return Ok(());
        }
    };
    println!("| case | mean | median | runs | input sets |\n|---|---:|---:|---:|---:|");
    for c in selected(&arg_value(args, "--filter")) {
        let t = gpu::time_case(&dev, &c).map_err(|e| format!("{}: {e}", c.name()))?;
        println!("| {} | {:.1} µs | {:.1} µs | {} | {} |", c.name(), t.mean_s * 1e6, t.median_s * 1e6, t.runs, t.input_sets);
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("report") => report_cmd(&args[1..]),
        Some("profile") => profile_cmd(&args[1..]),
        Some("gpu") => gpu_cmd(&args[1..]),
        _ => {
            Err("usage: ferrocm-bench report [--filter TEXT] [--out DIR] | profile OP [--shape SHAPE] [--top N] [--workgroup N] | gpu [--filter TEXT]"
                .into())
        }
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
