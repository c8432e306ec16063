//! `ferrocm-emu`: run, disassemble or describe any gfx942 code object.
//!
//! ```text
//! ferrocm-emu run FILE.co --kernel NAME --grid X[,Y,Z] --block X[,Y,Z] [--lds BYTES]
//!     --buf NAME=@file | NAME=zeros:BYTES ...   device buffers
//!     --arg u32:5 --arg f32:1.5 --arg ptr:NAME --arg zero:8 ...   kernargs, in order
//!     --out NAME=file ...   buffers written back after the run
//!     [--stats json] [--threads N] [--budget N] [--memory BYTES] [--max-workgroups N]
//!     [--model [--sample N] [--cus N] [--hbm-bytes N]]   modeled MI300X (or --cus N) time
//! ferrocm-emu disasm FILE.co
//! ferrocm-emu info FILE.co
//! ```
//! Kernargs are laid out in the order given, each at its natural alignment (`ptr` is 8 bytes
//! naming a `--buf`; `zero:N` is N zero bytes, unaligned); hidden arguments are appended from the
//! code object's metadata by the launch.
//!
//! Buffers go straight to emulated device memory (zeros are never built on the host, files are
//! copied through in chunks), so the emulator's memory limit is what bounds them. Output to a
//! closed pipe (`ferrocm-emu disasm x.co | head`) ends the program quietly.

use ferrocm_emu::codeobj::CodeObject;
use ferrocm_emu::exec::report::launch_json;
use ferrocm_emu::exec::{MAX_KERNARG_BYTES, Memory};
use ferrocm_emu::model::{Chip, ModelOptions, modeled_launch};
use ferrocm_emu::{EmuConfig, Emulator, LaunchParams, listing};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

const USAGE: &str = "usage:
  ferrocm-emu run FILE.co --kernel NAME --grid X[,Y,Z] --block X[,Y,Z] [--lds BYTES]
      [--buf NAME=@FILE | --buf NAME=zeros:BYTES]... [--arg TYPE:VALUE]... [--out NAME=FILE]...
      [--stats json] [--threads N] [--budget N] [--memory BYTES] [--max-workgroups N]
      [--model [--sample N] [--cus N] [--hbm-bytes N]]
      TYPE: u8 u16 u32 i32 f32 u64 i64 f64, ptr:BUFNAME, zero:N
      --model: run a traced sample of N workgroups (default 16) spread over the grid and give the
      modeled time, utilisation and bottleneck on MI300X (--cus 80: MI308X); --hbm-bytes: the
      launch's compulsory HBM traffic, if known. A sampled run writes only its workgroups'
      outputs, so --model and --out do not go together.
  ferrocm-emu disasm FILE.co
  ferrocm-emu info FILE.co";

/// Host bytes moved at a time between files and emulated memory.
const CHUNK: usize = 1 << 20;

/// Why the CLI stops.
enum Failure {
    /// An error to report.
    Msg(String),
    /// Stdout was closed by its reader: not an error of ours.
    ClosedPipe,
}

impl From<String> for Failure {
    fn from(s: String) -> Self {
        Failure::Msg(s)
    }
}

impl From<&str> for Failure {
    fn from(s: &str) -> Self {
        Failure::Msg(s.to_string())
    }
}

/// A failed write to stdout.
fn stdout_failure(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe { Failure::ClosedPipe } else { Failure::Msg(format!("writing to stdout: {e}")) }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("run") => run(&args[1..]),
        Some("disasm") => with_file(&args[1..], |path, co, out| {
            // llvm-objdump's first line, so the two listings compare line for line.
            writeln!(out, "\n{path}:\tfile format elf64-amdgpu")?;
            listing::disasm(co, out)
        }),
        Some("info") => with_file(&args[1..], |_, co, out| listing::info(co, out)),
        Some("-h" | "--help") => writeln!(io::stdout(), "{USAGE}").map_err(stdout_failure),
        _ => Err(USAGE.into()),
    };
    match r {
        Ok(()) | Err(Failure::ClosedPipe) => ExitCode::SUCCESS,
        Err(Failure::Msg(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn load(path: &str) -> Result<CodeObject, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    CodeObject::parse(&bytes).map_err(|e| format!("{path}: {e}"))
}

type Lister = fn(&str, &CodeObject, &mut io::BufWriter<io::StdoutLock<'static>>) -> io::Result<()>;

fn with_file(args: &[String], f: Lister) -> Result<(), Failure> {
    match args {
        [path] => {
            let co = load(path)?;
            let mut out = io::BufWriter::new(io::stdout().lock());
            f(path, &co, &mut out).and_then(|()| out.flush()).map_err(stdout_failure)
        }
        _ => Err(USAGE.into()),
    }
}

fn dims(s: &str) -> Result<[u32; 3], String> {
    let v: Vec<u32> =
        s.split(',').map(|x| x.trim().parse::<u32>().map_err(|_| format!("bad dimensions {s:?}"))).collect::<Result<_, _>>()?;
    match v.as_slice() {
        [x] => Ok([*x, 1, 1]),
        [x, y] => Ok([*x, *y, 1]),
        [x, y, z] => Ok([*x, *y, *z]),
        _ => Err(format!("bad dimensions {s:?}")),
    }
}

/// Appends `bytes` at the next multiple of `align`, keeping the kernargs within what a launch
/// accepts (checked before growing, so `zero:1000000000` allocates nothing).
fn push_aligned(kernargs: &mut Vec<u8>, bytes: &[u8], align: usize) -> Result<(), String> {
    let start = kernargs.len().next_multiple_of(align);
    let end = start as u64 + bytes.len() as u64;
    if end > MAX_KERNARG_BYTES {
        return Err(format!("the arguments need {end} kernarg bytes, more than the {MAX_KERNARG_BYTES} a launch takes"));
    }
    kernargs.resize(start, 0);
    kernargs.extend_from_slice(bytes);
    Ok(())
}

/// Where a `--buf` comes from.
enum Source {
    /// A file's bytes.
    File(String),
    /// Zeros.
    Zeros(u64),
}

/// Allocates a device buffer for `src` and fills it; returns its address and size.
fn upload(emu: &Emulator, src: &Source) -> Result<(u64, u64), String> {
    match src {
        Source::Zeros(n) => Ok((emu.alloc(*n).map_err(|e| e.to_string())?, *n)),
        Source::File(path) => {
            let mut f = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
            let len = f.metadata().map_err(|e| format!("{path}: {e}"))?.len();
            let addr = emu.alloc(len).map_err(|e| format!("{path}: {e}"))?;
            copy_in(emu.memory(), addr, len, &mut f).map_err(|e| format!("{path}: {e}"))?;
            Ok((addr, len))
        }
    }
}

/// Copies exactly `len` bytes of `r` to device address `addr`, a chunk at a time.
fn copy_in(mem: &Memory, addr: u64, len: u64, r: &mut impl Read) -> Result<(), String> {
    let mut buf = vec![0u8; CHUNK.min(len as usize)];
    let mut done = 0u64;
    while done < len {
        let n = ((len - done) as usize).min(buf.len());
        r.read_exact(&mut buf[..n]).map_err(|e| format!("reading byte {done} of {len}: {e}"))?;
        mem.write(addr + done, &buf[..n]).map_err(|e| e.to_string())?;
        done += n as u64;
    }
    Ok(())
}

/// Writes `len` bytes at device address `addr` to `w`, a chunk at a time.
fn copy_out(mem: &Memory, addr: u64, len: u64, w: &mut impl Write) -> Result<(), String> {
    let mut buf = vec![0u8; CHUNK.min(len as usize)];
    let mut done = 0u64;
    while done < len {
        let n = ((len - done) as usize).min(buf.len());
        mem.read(addr + done, &mut buf[..n]).map_err(|e| e.to_string())?;
        w.write_all(&buf[..n]).map_err(|e| e.to_string())?;
        done += n as u64;
    }
    Ok(())
}

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("bad {flag} {v:?}"))
}

fn run(args: &[String]) -> Result<(), Failure> {
    let path = args.first().ok_or(USAGE)?;
    let co = Arc::new(load(path)?);
    let (mut kernel, mut grid, mut block, mut lds) = (None, None, None, 0u32);
    let mut bufs: Vec<(String, Source)> = Vec::new();
    let mut kargs: Vec<String> = Vec::new();
    let mut outs: Vec<(String, String)> = Vec::new();
    let mut stats_json = false;
    let mut config = EmuConfig::default();
    let mut modeled: Option<ModelOptions> = None;
    let (mut sample, mut cus, mut hbm_bytes) = (None, None, None);
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--kernel" => kernel = Some(val()?),
            "--grid" => grid = Some(dims(&val()?)?),
            "--block" => block = Some(dims(&val()?)?),
            "--lds" => lds = number("--lds", &val()?)?,
            "--threads" => config.threads = number("--threads", &val()?)?,
            "--budget" => config.instruction_budget = number("--budget", &val()?)?,
            "--memory" => config.memory_limit = number("--memory", &val()?)?,
            "--max-workgroups" => config.max_workgroups = number("--max-workgroups", &val()?)?,
            "--stats" => {
                let v = val()?;
                if v != "json" {
                    return Err(format!("--stats takes `json`, got {v:?}").into());
                }
                stats_json = true;
            }
            "--buf" => {
                let v = val()?;
                let (name, spec) = v.split_once('=').ok_or_else(|| format!("bad --buf {v:?}"))?;
                let src = if let Some(file) = spec.strip_prefix('@') {
                    Source::File(file.to_string())
                } else if let Some(n) = spec.strip_prefix("zeros:") {
                    Source::Zeros(n.parse().map_err(|_| format!("bad size in {v:?}"))?)
                } else {
                    return Err(format!("bad --buf {v:?} (NAME=@FILE or NAME=zeros:BYTES)").into());
                };
                // A second buffer of the same name would silently shadow the first for `ptr:`
                // and `--out`.
                if bufs.iter().any(|(n, _)| n == name) {
                    return Err(format!("--buf {name} given twice").into());
                }
                bufs.push((name.to_string(), src));
            }
            "--arg" => kargs.push(val()?),
            "--model" => modeled = Some(ModelOptions::default()),
            "--sample" => sample = Some(number::<u64>("--sample", &val()?)?),
            "--cus" => cus = Some(number::<u64>("--cus", &val()?)?),
            "--hbm-bytes" => hbm_bytes = Some(number::<u64>("--hbm-bytes", &val()?)?),
            "--out" => {
                let v = val()?;
                let (name, file) = v.split_once('=').ok_or_else(|| format!("bad --out {v:?}"))?;
                outs.push((name.to_string(), file.to_string()));
            }
            other => return Err(format!("unknown option {other:?}\n{USAGE}").into()),
        }
    }
    let kernel = kernel.ok_or("--kernel is required")?;
    if let Some(m) = modeled.as_mut() {
        if !outs.is_empty() {
            return Err("--model runs a sample of the grid, whose outputs are partial: run --out without --model".into());
        }
        if sample == Some(0) || cus == Some(0) {
            return Err("--sample and --cus take a positive number".into());
        }
        m.sample_workgroups = sample.unwrap_or(m.sample_workgroups);
        m.chip = cus.map_or(Chip::MI300X, Chip::with_cus);
        m.hbm_bytes = hbm_bytes;
    } else if sample.is_some() || cus.is_some() || hbm_bytes.is_some() {
        return Err("--sample, --cus and --hbm-bytes go with --model".into());
    }
    let (grid, block) = (grid.ok_or("--grid is required")?, block.ok_or("--block is required")?);
    for (name, _) in &outs {
        if !bufs.iter().any(|(n, _)| n == name) {
            return Err(format!("--out {name}: no --buf named {name}").into());
        }
    }

    let emu = Emulator::new(config);
    let module = emu.load(co.clone()).map_err(|e| e.to_string())?;
    let mut addrs = BTreeMap::new();
    for (name, src) in &bufs {
        addrs.insert(name.clone(), upload(&emu, src).map_err(|e| format!("--buf {name}: {e}"))?);
    }
    let mut kernargs = Vec::new();
    for k in &kargs {
        let (ty, v) = k.split_once(':').ok_or_else(|| format!("bad --arg {k:?}"))?;
        let bad = || format!("bad value in --arg {k:?}");
        let ka = &mut kernargs;
        match ty {
            "u8" => push_aligned(ka, &v.parse::<u8>().map_err(|_| bad())?.to_le_bytes(), 1),
            "u16" => push_aligned(ka, &v.parse::<u16>().map_err(|_| bad())?.to_le_bytes(), 2),
            "u32" => push_aligned(ka, &v.parse::<u32>().map_err(|_| bad())?.to_le_bytes(), 4),
            "i32" => push_aligned(ka, &v.parse::<i32>().map_err(|_| bad())?.to_le_bytes(), 4),
            "f32" => push_aligned(ka, &v.parse::<f32>().map_err(|_| bad())?.to_le_bytes(), 4),
            "u64" => push_aligned(ka, &v.parse::<u64>().map_err(|_| bad())?.to_le_bytes(), 8),
            "i64" => push_aligned(ka, &v.parse::<i64>().map_err(|_| bad())?.to_le_bytes(), 8),
            "f64" => push_aligned(ka, &v.parse::<f64>().map_err(|_| bad())?.to_le_bytes(), 8),
            "ptr" => {
                let (a, _) = addrs.get(v).ok_or_else(|| format!("--arg ptr:{v}: no --buf named {v}"))?;
                push_aligned(ka, &a.to_le_bytes(), 8)
            }
            "zero" => {
                let n: u64 = v.parse().map_err(|_| bad())?;
                if n > MAX_KERNARG_BYTES {
                    Err(format!("--arg {k}: more than the {MAX_KERNARG_BYTES} kernarg bytes a launch takes"))
                } else {
                    push_aligned(ka, &vec![0u8; n as usize], 1)
                }
            }
            _ => Err(format!("unknown argument type {ty:?} in {k:?}")),
        }?;
    }
    let params = LaunchParams { grid, block, dynamic_lds: lds, kernargs };
    if let Some(opts) = modeled {
        let m = modeled_launch(&emu, &module, &kernel, &params, &opts).map_err(|e| e.to_string())?;
        if stats_json {
            let mut j = launch_json(&m.stats);
            j["model"] = m.json();
            let text = serde_json::to_string_pretty(&j).expect("plain JSON");
            writeln!(io::stdout(), "{text}").map_err(stdout_failure)?;
        } else {
            write!(io::stdout(), "{}", m.text()).map_err(stdout_failure)?;
        }
        return Ok(());
    }
    let stats = emu.launch(&module, &kernel, &params).map_err(|e| e.to_string())?;
    for (name, file) in &outs {
        let (a, len) = addrs[name];
        let mut f = std::fs::File::create(file).map_err(|e| format!("{file}: {e}"))?;
        copy_out(emu.memory(), a, len, &mut f).map_err(|e| format!("--out {name}={file}: {e}"))?;
    }
    if stats_json {
        let text = serde_json::to_string_pretty(&launch_json(&stats)).expect("plain JSON");
        writeln!(io::stdout(), "{text}").map_err(stdout_failure)?;
    } else {
        let c = &stats.counters;
        eprintln!(
            "{kernel}: {} workgroups, {} waves, {} instructions in {:.3} s ({:.1} M inst/s)",
            c.workgroups,
            c.waves,
            c.instructions,
            stats.wall_time.as_secs_f64(),
            c.instructions as f64 / stats.wall_time.as_secs_f64().max(1e-9) / 1e6
        );
    }
    Ok(())
}
