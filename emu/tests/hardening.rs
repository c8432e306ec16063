//! Corrupt code objects and hostile launches: each case found by mutation fuzzing or by hand
//! (issue 13) is a typed error now, with no panic, no runaway allocation and no endless loop.
//! The mutants are the fixture code object with one field changed.

use ferrocm_emu::codeobj::{CodeObject, CodeObjectError, Elf, MAX_IMAGE_BYTES, Relocation};
use ferrocm_emu::exec::{LaunchOptions, MAX_KERNARG_BYTES, MAX_SCRATCH_PER_LANE};
use ferrocm_emu::{EmuConfig, EmuError, Emulator, LaunchParams, listing};
use std::path::PathBuf;
use std::sync::Arc;

fn fixture() -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ferrocm.co");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// File offsets of the program headers of loadable segments.
fn load_headers(co: &[u8]) -> Vec<usize> {
    let (phoff, phnum) = (u64_at(co, 32) as usize, u16::from_le_bytes([co[56], co[57]]) as usize);
    (0..phnum).map(|i| phoff + 56 * i).filter(|&h| u32::from_le_bytes(co[h..h + 4].try_into().unwrap()) == 1).collect()
}

/// File offsets of every symbol table entry named `name` (`.symtab` and `.dynsym`).
fn symbol_entries(co: &[u8], name: &str) -> Vec<usize> {
    let elf = Elf::parse(co).unwrap();
    let mut out = Vec::new();
    for s in elf.sections.iter().filter(|s| s.kind == 2 || s.kind == 11) {
        let strtab = &elf.sections[s.link as usize];
        for e in (s.offset..s.offset + s.size).step_by(24) {
            let e = e as usize;
            let at = strtab.offset as usize + u32::from_le_bytes(co[e..e + 4].try_into().unwrap()) as usize;
            let end = at + co[at..].iter().position(|&b| b == 0).unwrap();
            if &co[at..end] == name.as_bytes() {
                out.push(e);
            }
        }
    }
    assert!(!out.is_empty(), "no symbol {name}");
    out
}

/// The file offset of `kernel`'s descriptor.
fn descriptor_offset(co: &[u8], kernel: &str) -> usize {
    let parsed = CodeObject::parse(co).unwrap();
    let kd = parsed.kernel(kernel).unwrap().descriptor_vaddr;
    let s = parsed.elf.segments.iter().find(|s| s.holds(kd, 64)).unwrap();
    (s.file_offset + kd - s.vaddr) as usize
}

fn malformed(co: &[u8]) -> String {
    match CodeObject::parse(co) {
        Err(CodeObjectError::Malformed(m)) => m,
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn a_symbol_size_past_its_segment_is_refused() {
    // u64::MAX panicked slicing in `disasm`; 2^44 made the atomics scan walk 4 bytes at a time
    // for ever.
    for size in [u64::MAX, 1 << 44, 1 << 20] {
        let mut co = fixture();
        for e in symbol_entries(&co, "copy_u32") {
            put_u64(&mut co, e + 16, size);
        }
        let m = malformed(&co);
        assert!(m.contains("copy_u32") && m.contains("runs past its segment"), "{m}");
    }
}

#[test]
fn a_segment_at_the_top_of_the_address_space_is_refused() {
    let mut co = fixture();
    let h = load_headers(&co)[1];
    put_u64(&mut co, h + 16, 0xffff_ffff_ffff_f000);
    let m = malformed(&co);
    assert!(m.contains("overflows 64 bits"), "{m}");
}

#[test]
fn an_image_above_the_limit_is_refused_before_it_is_built() {
    // A 218 KB file whose data segment is 1 GiB in memory reached 2 GB and then aborted
    // allocating the decode cache.
    let mut co = fixture();
    let h = *load_headers(&co).last().unwrap();
    put_u64(&mut co, h + 40, 1 << 30);
    match CodeObject::parse(&co) {
        Err(CodeObjectError::ImageTooLarge { size, limit }) => assert!(size > 1 << 30 && limit == MAX_IMAGE_BYTES),
        other => panic!("expected ImageTooLarge, got {other:?}"),
    }
}

#[test]
fn a_large_zero_filled_segment_costs_no_decode_cache() {
    // Within the limit: the image holds the zeros, the decode cache only the file's code.
    let mut co = fixture();
    let h = *load_headers(&co).last().unwrap();
    put_u64(&mut co, h + 40, 200 << 20);
    let co = Arc::new(CodeObject::parse(&co).unwrap());
    let emu = Emulator::new(EmuConfig::default());
    let module = emu.load(co.clone()).unwrap();
    let code_bytes: u64 = co.elf.segments.iter().filter(|s| s.executable()).map(|s| s.file_size).sum();
    assert!((module.code_words() as u64) <= code_bytes / 4 + 1, "{} words for {code_bytes} bytes of code", module.code_words());
    assert!(emu.memory().in_use() >= 200 << 20);
    // An emulator whose memory cannot hold the image says so.
    let small = Emulator::new(EmuConfig { memory_limit: 64 << 20, ..EmuConfig::default() });
    assert!(matches!(small.load(co), Err(EmuError::OutOfMemory { .. })));
}

#[test]
fn a_misaligned_entry_is_named_as_such() {
    let mut co = fixture();
    let kd = descriptor_offset(&co, "copy_u32");
    let off = u64_at(&co, kd + 16);
    put_u64(&mut co, kd + 16, off + 4);
    let m = malformed(&co);
    assert!(m.contains("is not 256-byte aligned"), "{m}");
    // Far outside: no wrap-around into the image.
    put_u64(&mut co, kd + 16, (-(1i64 << 40)) as u64);
    let m = malformed(&co);
    assert!(m.contains("leaves the address space") && m.contains("-0x10000000000"), "{m}");
}

#[test]
fn corrupt_offsets_are_not_reported_as_huge_truncations() {
    let mut co = fixture();
    put_u64(&mut co, 32, u64::MAX - 8); // e_phoff
    let e = CodeObject::parse(&co).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, CodeObjectError::Malformed(_)) && !text.contains("18446744073709551615"), "{text}");
    let mut co = fixture();
    let h = load_headers(&co)[0];
    put_u64(&mut co, h + 8, u64::MAX - 2); // p_offset
    let text = CodeObject::parse(&co).unwrap_err().to_string();
    assert!(text.contains("overflows 64 bits") && !text.contains("needs 18446744073709551615"), "{text}");
}

#[test]
fn info_of_absurd_register_counts_does_not_divide_by_zero() {
    let mut co = CodeObject::parse(&fixture()).unwrap();
    co.kernels[0].meta.vgpr_count = u32::MAX;
    co.kernels[1].meta.agpr_count = u32::MAX;
    assert_eq!(co.kernels[0].resources().max_waves_per_simd, 0);
    let mut out = Vec::new();
    listing::info(&co, &mut out).unwrap();
    assert!(String::from_utf8(out).unwrap().contains("max waves/SIMD 0"));
}

#[test]
fn info_reports_the_descriptors_scratch() {
    let mut co = fixture();
    let kd = descriptor_offset(&co, "copy_u32");
    co[kd + 4..kd + 8].copy_from_slice(&0xFFFF_FFFFu32.to_le_bytes());
    let parsed = CodeObject::parse(&co).unwrap();
    assert_eq!(parsed.kernel("copy_u32").unwrap().resources().scratch, u32::MAX);
    let mut out = Vec::new();
    listing::info(&parsed, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("scratch 4294967295 B") && text.contains("the metadata says 0 B"), "{text}");
}

/// An emulator with the fixture loaded, and two 256-byte buffers as `copy_u32`'s kernargs.
fn copy_setup(co: CodeObject) -> (Emulator, ferrocm_emu::Module, Vec<u8>) {
    let emu = Emulator::new(EmuConfig { threads: 2, ..EmuConfig::default() });
    let module = emu.load(Arc::new(co)).unwrap();
    let (a, b) = (emu.alloc(256).unwrap(), emu.alloc(256).unwrap());
    let mut kernargs = Vec::new();
    kernargs.extend(a.to_le_bytes());
    kernargs.extend(b.to_le_bytes());
    kernargs.extend(64u32.to_le_bytes());
    (emu, module, kernargs)
}

fn launch_error(r: Result<ferrocm_emu::LaunchStats, EmuError>) -> String {
    match r {
        Err(EmuError::Launch { reason, .. }) => reason,
        other => panic!("expected a launch error, got {other:?}"),
    }
}

#[test]
fn a_huge_descriptor_scratch_is_refused_at_launch() {
    // 0xFFFFFFFF bytes per lane aborted allocating 275 GB for the first wave.
    let mut co = fixture();
    let kd = descriptor_offset(&co, "copy_u32");
    co[kd + 4..kd + 8].copy_from_slice(&(MAX_SCRATCH_PER_LANE + 1).to_le_bytes());
    let (emu, module, kernargs) = copy_setup(CodeObject::parse(&co).unwrap());
    let p = LaunchParams { grid: [1, 1, 1], block: [64, 1, 1], dynamic_lds: 0, kernargs };
    let reason = launch_error(emu.launch(&module, "copy_u32", &p));
    assert!(reason.contains("scratch per work-item"), "{reason}");
}

#[test]
fn block_and_grid_volumes_do_not_wrap() {
    let (emu, module, kernargs) = copy_setup(CodeObject::parse(&fixture()).unwrap());
    // 2^31 * 2^31 * 4 = 2^64: wrapped to 0 work-items, passed validation, ran 0 waves, "succeeded".
    let p = LaunchParams { grid: [1, 1, 1], block: [1 << 31, 1 << 31, 4], dynamic_lds: 0, kernargs: kernargs.clone() };
    let reason = launch_error(emu.launch(&module, "copy_u32", &p));
    assert!(reason.contains("more than 2^64 work-items"), "{reason}");
    let p = LaunchParams { grid: [1, 1, 1], block: [1 << 16, 1 << 16, 1], dynamic_lds: 0, kernargs: kernargs.clone() };
    assert!(launch_error(emu.launch(&module, "copy_u32", &p)).contains("4294967296 work-items"));
    let p = LaunchParams { grid: [u32::MAX; 3], block: [1, 1, 1], dynamic_lds: 0, kernargs };
    assert!(launch_error(emu.launch(&module, "copy_u32", &p)).contains("more than 2^64 workgroups"));
}

#[test]
fn the_workgroup_limit_bounds_a_launch_but_not_a_sample_of_it() {
    let co = CodeObject::parse(&fixture()).unwrap();
    let emu = Emulator::new(EmuConfig { threads: 2, max_workgroups: 1000, ..EmuConfig::default() });
    let module = emu.load(Arc::new(co)).unwrap();
    let buf = emu.alloc(4 << 20).unwrap();
    let mut kernargs = Vec::new();
    kernargs.extend(buf.to_le_bytes());
    kernargs.extend(buf.to_le_bytes());
    kernargs.extend(0u32.to_le_bytes()); // n = 0: every lane exits at once
    let p = LaunchParams { grid: [4000, 1, 1], block: [64, 1, 1], dynamic_lds: 0, kernargs };
    let reason = launch_error(emu.launch(&module, "copy_u32", &p));
    assert!(reason.contains("4000 workgroups") && reason.contains("max_workgroups"), "{reason}");
    let sample = LaunchOptions { sample: Some(LaunchOptions::spread_sample(4000, 10)), trace: false, ..LaunchOptions::default() };
    let stats = emu.launch_with(&module, "copy_u32", &p, &sample).unwrap();
    assert_eq!((stats.counters.workgroups, stats.grid_workgroups), (10, 4000));
}

#[test]
fn oversized_kernargs_are_refused() {
    let (emu, module, mut kernargs) = copy_setup(CodeObject::parse(&fixture()).unwrap());
    kernargs.resize(MAX_KERNARG_BYTES as usize + 1, 0);
    let p = LaunchParams { grid: [1, 1, 1], block: [64, 1, 1], dynamic_lds: 0, kernargs };
    assert!(launch_error(emu.launch(&module, "copy_u32", &p)).contains("kernarg segment of 65537 bytes"));
}

#[test]
fn failed_launches_free_what_they_allocated() {
    // A descriptor whose user-SGPR count disagrees with its enable bits fails after the
    // kernarg segment, packet and queue were allocated; they used to leak.
    let mut co = fixture();
    let kd = descriptor_offset(&co, "copy_u32");
    co[kd + 52] ^= 0b10; // COMPUTE_PGM_RSRC2.USER_SGPR_COUNT, low bit
    let (emu, module, kernargs) = copy_setup(CodeObject::parse(&co).unwrap());
    let before = emu.memory().in_use();
    let p = LaunchParams { grid: [1, 1, 1], block: [64, 1, 1], dynamic_lds: 0, kernargs };
    for _ in 0..3 {
        assert!(matches!(emu.launch(&module, "copy_u32", &p), Err(EmuError::Unsupported(_))));
    }
    assert_eq!(emu.memory().in_use(), before);
}

#[test]
fn a_relocation_at_the_top_of_the_address_space_is_refused() {
    let mut co = CodeObject::parse(&fixture()).unwrap();
    co.elf.relocations.push(Relocation { offset: u64::MAX - 3, kind: 13, symbol: 0, addend: 0 });
    let emu = Emulator::new(EmuConfig::default());
    match emu.load(Arc::new(co)) {
        Err(EmuError::Unsupported(m)) => assert!(m.contains("outside the image"), "{m}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
    // The image allocation was returned.
    assert_eq!(emu.memory().in_use(), 0);
}

#[test]
fn device_copies_check_both_ranges_before_allocating() {
    let emu = Emulator::new(EmuConfig::default());
    let (a, b) = (emu.alloc(64).unwrap(), emu.alloc(64).unwrap());
    assert!(matches!(emu.memory().copy(b, a, u64::MAX), Err(EmuError::HostAccess { .. })));
    assert!(matches!(emu.memory().copy(b, a, 65), Err(EmuError::HostAccess { .. })));
    emu.memory().copy(b, a, 64).unwrap();
}

#[test]
fn allocations_past_the_address_space_are_out_of_memory() {
    let emu = Emulator::new(EmuConfig { memory_limit: u64::MAX, ..EmuConfig::default() });
    assert!(matches!(emu.alloc(u64::MAX), Err(EmuError::OutOfMemory { .. })));
    assert!(matches!(emu.alloc(u64::MAX - (1 << 50)), Err(EmuError::OutOfMemory { .. })));
    // Inside the address space but beyond any host: refused, not aborted.
    assert!(matches!(emu.alloc(1 << 60), Err(EmuError::OutOfMemory { .. })));
}

#[test]
fn the_test_build_checks_integer_overflow() {
    // `cargo test` (CI's `cargo xtask test`) builds with the test profile, which inherits dev's
    // overflow checks and debug assertions; the workspace only raises its opt-level. Every test
    // above therefore also fails on a wrapped size, not only on a wrong result. This guards the
    // profile: turning the checks off would make it fail.
    let wrapped = std::panic::catch_unwind(|| std::hint::black_box(u32::MAX) + std::hint::black_box(1));
    assert!(wrapped.is_err(), "u32::MAX + 1 did not panic: the test profile lost overflow-checks");
    assert!(cfg!(debug_assertions), "the test profile lost debug-assertions");
}
