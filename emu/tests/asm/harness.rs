//! Runs hand-written gfx942 assembly kernels on the emulator.
//!
//! A kernel file `tests/asm/NAME.s` is a complete code object source: `.amdhsa_kernel`
//! descriptors and the code object v5 metadata (`.amdgpu_metadata`). It is assembled with
//! `llvm-mc-19 -triple=amdgcn-amd-amdhsa -mcpu=gfx942 -filetype=obj`, linked with
//! `rust-lld -flavor gnu -shared` (the toolchain's, or `$FERROCM_RUST_LLD`), parsed with
//! `CodeObject::parse` and launched like `ferrocm-emu run` does. A missing tool is a test
//! failure that names it: CI installs both.
#![allow(dead_code)]

use ferrocm_emu::codeobj::CodeObject;
use ferrocm_emu::{EmuConfig, EmuError, Emulator, LaunchParams, LaunchStats, Module};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

/// The pinned nightly whose `rust-lld` links device code (the same one the device build uses).
pub const NIGHTLY: &str = "nightly-2026-05-20";
/// The assembler.
pub const MC: &str = "llvm-mc-19";

fn tool_missing(what: &str, how: &str) -> ! {
    panic!("assembly-kernel tests need {what}, which was not found: {how}")
}

/// The `rust-lld` to link with: `$FERROCM_RUST_LLD`, else the pinned nightly's.
fn rust_lld() -> &'static Path {
    static LLD: OnceLock<PathBuf> = OnceLock::new();
    LLD.get_or_init(|| {
        if let Some(p) = std::env::var_os("FERROCM_RUST_LLD") {
            let p = PathBuf::from(p);
            if !p.is_file() {
                tool_missing(&format!("rust-lld at $FERROCM_RUST_LLD = {}", p.display()), "the variable names no file");
            }
            return p;
        }
        let out = Command::new("rustup")
            .args(["run", NIGHTLY, "rustc", "--print", "sysroot"])
            .output()
            .unwrap_or_else(|e| tool_missing("rustup", &format!("{e} (or set FERROCM_RUST_LLD to a rust-lld)")));
        if !out.status.success() {
            tool_missing(
                &format!("the {NIGHTLY} toolchain"),
                &format!("`rustup run {NIGHTLY} rustc --print sysroot` failed: {}", String::from_utf8_lossy(&out.stderr).trim()),
            );
        }
        let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let p = sysroot.join("lib/rustlib/x86_64-unknown-linux-gnu/bin/rust-lld");
        if !p.is_file() {
            tool_missing(&format!("rust-lld ({})", p.display()), &format!("install the {NIGHTLY} toolchain with its default components"));
        }
        p
    })
}

fn asm_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("asm")
}

/// Assembles and links `tests/asm/NAME.s` (once per test binary) and parses the code object.
pub fn code_object(name: &str) -> Arc<CodeObject> {
    static CACHE: OnceLock<std::sync::Mutex<std::collections::HashMap<String, Arc<CodeObject>>>> = OnceLock::new();
    // The lock is held while building so concurrent tests of one binary build a file once.
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(co) = cache.get(name) {
        return co.clone();
    }
    let src = asm_dir().join(format!("{name}.s"));
    assert!(src.is_file(), "no kernel source {}", src.display());
    let co = Arc::new(assemble_file(name, &src));
    cache.insert(name.to_string(), co.clone());
    co
}

/// Assembles and links `source` (a complete code object source, as the files in `tests/asm/`)
/// and parses the code object; `name` names it in messages and temporary files.
pub fn assemble(name: &str, source: &str) -> CodeObject {
    let dir = std::env::temp_dir().join(format!("ferrocm-asm-src-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.s"));
    std::fs::write(&src, source).unwrap();
    let co = assemble_file(name, &src);
    std::fs::remove_dir_all(&dir).ok();
    co
}

/// Assembles and links the source file `src`.
fn assemble_file(name: &str, src: &Path) -> CodeObject {
    let dir = std::env::temp_dir().join(format!("ferrocm-asm-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (obj, co_path) = (dir.join(format!("{name}.o")), dir.join(format!("{name}.co")));
    let out = Command::new(MC)
        .args(["-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj", "-o"])
        .arg(&obj)
        .arg(src)
        .output()
        .unwrap_or_else(|e| tool_missing(MC, &format!("{e} (Debian/Ubuntu: apt-get install llvm-19)")));
    assert!(out.status.success(), "{MC} rejected {}:\n{}", src.display(), String::from_utf8_lossy(&out.stderr));
    let out = Command::new(rust_lld()).args(["-flavor", "gnu", "-shared", "-o"]).arg(&co_path).arg(&obj).output().unwrap();
    assert!(out.status.success(), "rust-lld failed on {}:\n{}", obj.display(), String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&co_path).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    CodeObject::parse(&bytes).unwrap_or_else(|e| panic!("{name}.co: {e}"))
}

/// An emulated device with one assembled code object loaded.
pub struct Gpu {
    pub emu: Emulator,
    pub module: Module,
}

impl Gpu {
    /// A device with `tests/asm/NAME.s` loaded.
    pub fn new(name: &str) -> Gpu {
        let emu = Emulator::new(EmuConfig { threads: 2, instruction_budget: 1 << 20, memory_limit: 1 << 30, ..EmuConfig::default() });
        let module = emu.load(code_object(name)).unwrap_or_else(|e| panic!("loading {name}: {e}"));
        Gpu { emu, module }
    }

    /// A device buffer holding `bytes`.
    pub fn upload(&self, bytes: &[u8]) -> u64 {
        let a = self.emu.alloc(bytes.len() as u64).unwrap();
        self.emu.memory().write(a, bytes).unwrap();
        a
    }

    /// A device buffer holding `words`.
    pub fn upload_u32(&self, words: &[u32]) -> u64 {
        self.upload(&words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<_>>())
    }

    /// `n` zeroed dwords.
    pub fn zeros(&self, n: usize) -> u64 {
        self.emu.alloc(4 * n as u64).unwrap()
    }

    /// `n` dwords at `addr`.
    pub fn u32s(&self, addr: u64, n: usize) -> Vec<u32> {
        let mut b = vec![0u8; 4 * n];
        self.emu.memory().read(addr, &mut b).unwrap();
        b.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    /// `n` qwords at `addr`.
    pub fn u64s(&self, addr: u64, n: usize) -> Vec<u64> {
        let mut b = vec![0u8; 8 * n];
        self.emu.memory().read(addr, &mut b).unwrap();
        b.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
    }

    /// Launches `kernel` with one 64-bit kernel argument per entry of `args`.
    pub fn try_launch(&self, kernel: &str, grid: u32, block: u32, args: &[u64]) -> Result<LaunchStats, EmuError> {
        let kernargs = args.iter().flat_map(|a| a.to_le_bytes()).collect();
        let params = LaunchParams { grid: [grid, 1, 1], block: [block, 1, 1], dynamic_lds: 0, kernargs };
        self.emu.launch(&self.module, kernel, &params)
    }

    /// As [`Gpu::try_launch`], panicking with the fault.
    pub fn launch(&self, kernel: &str, grid: u32, block: u32, args: &[u64]) -> LaunchStats {
        self.try_launch(kernel, grid, block, args).unwrap_or_else(|e| panic!("{e}"))
    }
}
