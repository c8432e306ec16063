//! Structure-aware launches on the emulator: a kernel of the seed object (fuzz/seeds/tiny.co)
//! or of the emulator's fixture (10 compiled ferrocm kernels: copies, fills, GEMMs, MFMA
//! tiles), with fuzzed grid, block, dynamic LDS, buffers and kernel arguments laid out by the
//! kernel's own metadata (pointers into the buffers, small or arbitrary values), optionally
//! raw kernarg bytes, and optionally one dword of the kernel descriptor replaced.
//!
//! Checked on every input, besides "no panic, hang or unbounded allocation": a launch that
//! succeeds ran every workgroup of the grid with the waves its block needs, and every launch,
//! failed or not, leaves the device memory as it found it.
#![no_main]

use arbitrary::Arbitrary;
use ferrocm_emu::codeobj::{CodeObject, ValueKind};
use ferrocm_emu::{EmuConfig, Emulator, LaunchParams, Module};
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};

static TINY: &[u8] = include_bytes!("../seeds/tiny.co");
static FIXTURE: &[u8] = include_bytes!("../../emu/tests/fixtures/ferrocm.co");

/// Small enough that a runaway kernel (a GEMM's K loop over a fuzzed K) costs about a
/// millisecond: at most 4 workgroups of 1024-instruction waves (the fuzz build has overflow
/// checks on, so the emulator runs at a fraction of its release speed).
fn config(threads: usize) -> EmuConfig {
    EmuConfig { threads, instruction_budget: 1 << 10, memory_limit: 64 << 20, max_workgroups: 4 }
}

/// Each object loaded once into an emulator of one thread and one of two (reused: buffers are
/// freed after every input), in the order tiny/1, tiny/2, fixture/1, fixture/2.
fn loaded() -> &'static [(Emulator, Module)] {
    static L: OnceLock<Vec<(Emulator, Module)>> = OnceLock::new();
    L.get_or_init(|| {
        let mut v = Vec::new();
        for bytes in [TINY, FIXTURE] {
            let co = Arc::new(CodeObject::parse(bytes).expect("a seed object parses"));
            for threads in [1, 2] {
                let emu = Emulator::new(config(threads));
                let module = emu.load(co.clone()).expect("and loads");
                v.push((emu, module));
            }
        }
        v
    })
}

#[derive(Arbitrary, Debug)]
enum Dim {
    Small(u8),
    /// `1 << (v % 12)`: the block sizes kernels are built for, up to 2048 (past the limit).
    Pow2(u8),
    Any(u32),
}

impl Dim {
    fn get(&self) -> u32 {
        match *self {
            Dim::Small(v) => v as u32,
            Dim::Pow2(v) => 1 << (v % 12),
            Dim::Any(v) => v,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Arg {
    /// A pointer into buffer `index % 3` at `offset` (possibly past its end).
    Buffer { index: u8, offset: u16 },
    Small(u16),
    Any(u64),
}

#[derive(Arbitrary, Debug)]
struct Input {
    fixture: bool,
    kernel: u8,
    grid: [Dim; 3],
    block: [Dim; 3],
    dynamic_lds: Dim,
    /// Buffer sizes in bytes.
    buffers: [u16; 3],
    /// Values for the kernel's explicit arguments, in metadata order (missing ones are 0).
    args: Vec<Arg>,
    /// Instead of the metadata layout: these bytes as the kernargs.
    raw_kernargs: Option<Vec<u8>>,
    /// Replace dword `.0 % 16` of the descriptor with `.1` (of the seed object only: the patched
    /// copy is loaded anew, which for the fixture would dominate the time per input). The entry
    /// offset is not among them: the parser derives and checks the entry address, and a launch
    /// uses that.
    descriptor: Option<(u8, u32)>,
    two_threads: bool,
}

fn kernargs(input: &Input, co: &CodeObject, kernel: &str, bufs: &[(u64, u64)]) -> Vec<u8> {
    if let Some(raw) = &input.raw_kernargs {
        return raw.clone();
    }
    let meta = &co.kernel(kernel).expect("kernel from the object's list").meta;
    let mut out = vec![0u8; meta.explicit_args_end() as usize];
    let mut values = input.args.iter();
    for a in meta.explicit_args() {
        let v = match values.next() {
            Some(Arg::Buffer { index, offset }) => bufs[*index as usize % bufs.len()].0 + *offset as u64,
            Some(Arg::Small(v)) => *v as u64,
            Some(Arg::Any(v)) => *v,
            None if a.value_kind == ValueKind::GlobalBuffer => bufs[0].0,
            None => 0,
        };
        let (off, n) = (a.offset as usize, (a.size as usize).min(8));
        out[off..off + n].copy_from_slice(&v.to_le_bytes()[..n]);
    }
    out
}

fn run(input: &Input, emu: &Emulator, module: &Module) {
    let co = &module.co;
    let kernel = co.kernels[input.kernel as usize % co.kernels.len()].meta.name.clone();
    let before = emu.memory().in_use();
    let bufs: Vec<(u64, u64)> = input.buffers.iter().map(|&n| (emu.alloc(n as u64).expect("64 MiB hold 3 x 64 KiB"), n as u64)).collect();
    let params = LaunchParams {
        grid: input.grid.each_ref().map(Dim::get),
        block: input.block.each_ref().map(Dim::get),
        dynamic_lds: input.dynamic_lds.get(),
        kernargs: kernargs(input, co, &kernel, &bufs),
    };
    if let Ok(stats) = emu.launch(module, &kernel, &params) {
        let workgroups: u64 = params.grid.iter().map(|&g| g as u64).product();
        let threads: u64 = params.block.iter().map(|&b| b as u64).product();
        assert_eq!(stats.counters.workgroups, workgroups, "{params:?}");
        assert_eq!(stats.counters.waves, workgroups * threads.div_ceil(64), "{params:?}");
    }
    for (a, _) in bufs {
        emu.free(a).expect("allocated above");
    }
    assert_eq!(emu.memory().in_use(), before, "the launch leaked device memory");
}

fuzz_target!(|input: Input| {
    let threads = if input.two_threads { 2 } else { 1 };
    let (emu, module) = &loaded()[2 * input.fixture as usize + threads - 1];
    match input.descriptor {
        Some((dword, value)) if !input.fixture => {
            let mut co = (*module.co).clone();
            {
                let k = input.kernel as usize % co.kernels.len();
                let d = &mut co.kernels[k].descriptor;
                let at = (dword % 16) as usize;
                match at {
                    0 => d.group_segment_fixed_size = value,
                    1 => d.private_segment_fixed_size = value,
                    2 => d.kernarg_size = value,
                    11 => d.rsrc3 = value,
                    12 => d.rsrc1 = value,
                    13 => d.rsrc2 = value,
                    14 => (d.kernel_code_properties, d.kernarg_preload) = (value as u16, (value >> 16) as u16),
                    _ => {}
                }
            }
            let emu = Emulator::new(config(threads));
            let module = emu.load(Arc::new(co)).expect("the image is the seed's");
            run(&input, &emu, &module);
        }
        _ => run(&input, emu, module),
    }
});
