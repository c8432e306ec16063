//! `ferrocm-emu`: run, disassemble or describe any gfx942 code object.
//!
//! ```text
//! ferrocm-emu run FILE.co --kernel NAME --grid X[,Y,Z] --block X[,Y,Z] [--lds BYTES]
//!     --buf NAME=@file | NAME=zeros:BYTES ...   device buffers
//!     --arg u32:5 --arg f32:1.5 --arg ptr:NAME --arg zero:8 ...   kernargs, in order
//!     --out NAME=file ...   buffers written back after the run
//!     [--stats json] [--threads N] [--budget N]
//! ferrocm-emu disasm FILE.co
//! ferrocm-emu info FILE.co
//! ```
//! Kernargs are laid out in the order given, each at its natural alignment (`ptr` is 8 bytes
//! naming a `--buf`; `zero:N` is N zero bytes, unaligned); hidden arguments are appended from the
//! code object's metadata by the launch.

use ferrocm_emu::codeobj::CodeObject;
use ferrocm_emu::exec::report::launch_json;
use ferrocm_emu::{EmuConfig, Emulator, LaunchParams};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;

const USAGE: &str = "usage:
  ferrocm-emu run FILE.co --kernel NAME --grid X[,Y,Z] --block X[,Y,Z] [--lds BYTES]
      [--buf NAME=@FILE | --buf NAME=zeros:BYTES]... [--arg TYPE:VALUE]... [--out NAME=FILE]...
      [--stats json] [--threads N] [--budget N]
      TYPE: u8 u16 u32 i32 f32 u64 i64 f64, ptr:BUFNAME, zero:N
  ferrocm-emu disasm FILE.co
  ferrocm-emu info FILE.co";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("run") => run(&args[1..]),
        Some("disasm") => with_file(&args[1..], disasm),
        Some("info") => with_file(&args[1..], info),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(USAGE.to_string()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn load(path: &str) -> Result<CodeObject, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    CodeObject::parse(&bytes).map_err(|e| format!("{path}: {e}"))
}

fn with_file(args: &[String], f: fn(&CodeObject) -> Result<(), String>) -> Result<(), String> {
    match args {
        [path] => f(&load(path)?),
        _ => Err(USAGE.to_string()),
    }
}

fn info(co: &CodeObject) -> Result<(), String> {
    println!("{} code object v{}, {} bytes, {} kernels", co.arch, co.version, co.bytes().len(), co.kernels.len());
    for k in &co.kernels {
        let r = k.resources();
        let m = &k.meta;
        println!("\n{}  (entry {:#x}, {} bytes of code)", m.name, k.code_vaddr, k.code_size);
        println!(
            "  VGPR {} AGPR {} SGPR {}  LDS {} B  scratch {} B  spills {}/{}  max waves/SIMD {}  max workgroup {}",
            r.vgprs,
            r.agprs,
            r.sgprs,
            r.lds_static,
            r.scratch,
            r.vgpr_spills,
            r.sgpr_spills,
            r.max_waves_per_simd,
            m.max_flat_workgroup_size
        );
        println!("  kernarg segment {} bytes (align {})", m.kernarg_segment_size, m.kernarg_segment_align);
        for a in &m.args {
            println!(
                "    @{:<4} {:>3} B  {:?}{}",
                a.offset,
                a.size,
                a.value_kind,
                a.name.as_deref().map(|n| format!("  {n}")).unwrap_or_default()
            );
        }
    }
    Ok(())
}

fn disasm(co: &CodeObject) -> Result<(), String> {
    let image = co.load_image().map_err(|e| e.to_string())?;
    for k in &co.kernels {
        println!("\n{:016x} <{}>:", k.code_vaddr, k.meta.name);
        let start = k.code_vaddr as usize;
        let end = (start + k.code_size as usize).min(image.len());
        let words: Vec<u32> = image[start..end].chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4"))).collect();
        let mut i = 0;
        while i < words.len() {
            let pc = k.code_vaddr + 4 * i as u64;
            match ferrocm_emu::isa::decode(&words[i..], pc) {
                Ok(inst) => {
                    let n = inst.size as usize / 4;
                    let raw: Vec<String> = words[i..i + n].iter().map(|w| format!("{w:08X}")).collect();
                    println!("\t{:<56} // {pc:012X}: {}", inst.text(), raw.join(" "));
                    i += n;
                }
                Err(e) => {
                    println!("\t<invalid: {e}>  // {pc:012X}: {:08X}", words[i]);
                    i += 1;
                }
            }
        }
    }
    Ok(())
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

fn push_aligned(kernargs: &mut Vec<u8>, bytes: &[u8], align: usize) {
    while kernargs.len() % align != 0 {
        kernargs.push(0);
    }
    kernargs.extend_from_slice(bytes);
}

fn run(args: &[String]) -> Result<(), String> {
    let path = args.first().ok_or(USAGE)?;
    let co = Arc::new(load(path)?);
    let (mut kernel, mut grid, mut block, mut lds) = (None, None, None, 0u32);
    let mut bufs: Vec<(String, Vec<u8>)> = Vec::new();
    let mut kargs: Vec<String> = Vec::new();
    let mut outs: Vec<(String, String)> = Vec::new();
    let mut stats_json = false;
    let mut config = EmuConfig::default();
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--kernel" => kernel = Some(val()?),
            "--grid" => grid = Some(dims(&val()?)?),
            "--block" => block = Some(dims(&val()?)?),
            "--lds" => lds = val()?.parse().map_err(|_| "bad --lds")?,
            "--threads" => config.threads = val()?.parse().map_err(|_| "bad --threads")?,
            "--budget" => config.instruction_budget = val()?.parse().map_err(|_| "bad --budget")?,
            "--stats" => {
                let v = val()?;
                if v != "json" {
                    return Err(format!("--stats takes `json`, got {v:?}"));
                }
                stats_json = true;
            }
            "--buf" => {
                let v = val()?;
                let (name, spec) = v.split_once('=').ok_or_else(|| format!("bad --buf {v:?}"))?;
                let data = if let Some(file) = spec.strip_prefix('@') {
                    std::fs::read(file).map_err(|e| format!("{file}: {e}"))?
                } else if let Some(n) = spec.strip_prefix("zeros:") {
                    vec![0u8; n.parse().map_err(|_| format!("bad size in {v:?}"))?]
                } else {
                    return Err(format!("bad --buf {v:?} (NAME=@FILE or NAME=zeros:BYTES)"));
                };
                bufs.push((name.to_string(), data));
            }
            "--arg" => kargs.push(val()?),
            "--out" => {
                let v = val()?;
                let (name, file) = v.split_once('=').ok_or_else(|| format!("bad --out {v:?}"))?;
                outs.push((name.to_string(), file.to_string()));
            }
            other => return Err(format!("unknown option {other:?}\n{USAGE}")),
        }
    }
    let kernel = kernel.ok_or("--kernel is required")?;
    let (grid, block) = (grid.ok_or("--grid is required")?, block.ok_or("--block is required")?);

    let emu = Emulator::new(config);
    let module = emu.load(co.clone()).map_err(|e| e.to_string())?;
    let mut addrs = BTreeMap::new();
    for (name, data) in &bufs {
        let a = emu.alloc(data.len() as u64).map_err(|e| e.to_string())?;
        emu.memory().write(a, data).map_err(|e| e.to_string())?;
        addrs.insert(name.clone(), (a, data.len()));
    }
    let mut kernargs = Vec::new();
    for k in &kargs {
        let (ty, v) = k.split_once(':').ok_or_else(|| format!("bad --arg {k:?}"))?;
        let bad = || format!("bad value in --arg {k:?}");
        match ty {
            "u8" => push_aligned(&mut kernargs, &v.parse::<u8>().map_err(|_| bad())?.to_le_bytes(), 1),
            "u16" => push_aligned(&mut kernargs, &v.parse::<u16>().map_err(|_| bad())?.to_le_bytes(), 2),
            "u32" => push_aligned(&mut kernargs, &v.parse::<u32>().map_err(|_| bad())?.to_le_bytes(), 4),
            "i32" => push_aligned(&mut kernargs, &v.parse::<i32>().map_err(|_| bad())?.to_le_bytes(), 4),
            "f32" => push_aligned(&mut kernargs, &v.parse::<f32>().map_err(|_| bad())?.to_le_bytes(), 4),
            "u64" => push_aligned(&mut kernargs, &v.parse::<u64>().map_err(|_| bad())?.to_le_bytes(), 8),
            "i64" => push_aligned(&mut kernargs, &v.parse::<i64>().map_err(|_| bad())?.to_le_bytes(), 8),
            "f64" => push_aligned(&mut kernargs, &v.parse::<f64>().map_err(|_| bad())?.to_le_bytes(), 8),
            "ptr" => {
                let (a, _) = addrs.get(v).ok_or_else(|| format!("--arg ptr:{v}: no --buf named {v}"))?;
                push_aligned(&mut kernargs, &a.to_le_bytes(), 8);
            }
            "zero" => kernargs.extend(std::iter::repeat_n(0u8, v.parse::<usize>().map_err(|_| bad())?)),
            _ => return Err(format!("unknown argument type {ty:?} in {k:?}")),
        }
    }
    let params = LaunchParams { grid, block, dynamic_lds: lds, kernargs };
    let stats = emu.launch(&module, &kernel, &params).map_err(|e| e.to_string())?;
    for (name, file) in &outs {
        let (a, len) = addrs.get(name).ok_or_else(|| format!("--out {name}: no --buf named {name}"))?;
        let mut data = vec![0u8; *len];
        emu.memory().read(*a, &mut data).map_err(|e| e.to_string())?;
        std::fs::write(file, &data).map_err(|e| format!("{file}: {e}"))?;
    }
    if stats_json {
        println!("{}", serde_json::to_string_pretty(&launch_json(&stats)).expect("plain JSON"));
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
