//! The device build: `device/` compiled for amdgcn-amd-amdhsa with the pinned nightly, per GPU
//! architecture, into a code object, its assembly listing and a resource report.
//!
//! Used by `cargo xtask build` and by `host/build.rs` (through [`crate::embed`]), so both produce
//! the same bytes. Each object is written with the hash of the sources it was built from
//! ([`crate::sources`]).
//!
//! Pipeline: rustc compiles and optimises the crate (fat LTO) to LLVM bitcode; the build sets
//! each kernel's `amdgpu-flat-work-group-size` from the launch bound declared in
//! `ferrocm_device::abi` (rustc has no way to say it, and without it LLVM budgets every kernel for
//! 1024-item workgroups: 128 registers per wave) and defines the loads to LDS rustc cannot
//! declare (`LDS_LOAD_SYMBOL`); then `llc` and `rust-lld` from the same toolchain (rustup's
//! `llvm-tools` component, the same LLVM as rustc) produce the code object and its listing.
//!
//! The nested cargo runs with a cleared environment: a build script inherits `RUSTFLAGS`,
//! `CARGO_*`, `RUSTUP_TOOLCHAIN` and friends from the outer build, and any of them leaking in would
//! build the device crate for the wrong target or with the stable compiler.

use crate::sources;
use ferrocm_codeobj::{CodeObject, KernelResources};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The rustc target of every code object.
pub const DEVICE_TARGET: &str = "amdgcn-amd-amdhsa";
/// The architecture built when none is named.
pub const DEFAULT_ARCH: &str = "gfx942";
/// File names inside `<out_dir>/<arch>/`.
pub const CODE_OBJECT_FILE: &str = "ferrocm.co";
/// The assembly listing next to the code object.
pub const ASM_FILE: &str = "ferrocm.s";
/// The resource report next to the code object.
pub const REPORT_FILE: &str = "resources.json";

/// Environment variables the nested build keeps; everything else is cleared.
const KEPT_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LANG",
    "TMPDIR",
    "RUSTUP_HOME",
    "CARGO_HOME",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// What to build.
#[derive(Clone, Debug)]
pub struct BuildRequest {
    /// The device crate (contains Cargo.toml and rust-toolchain.toml).
    pub device_dir: PathBuf,
    /// Cargo target directory for the nested builds (one subdirectory per architecture).
    pub target_dir: PathBuf,
    /// Where `<arch>/ferrocm.co`, `ferrocm.s`, `resources.json` and `sources.sha256` are written.
    pub out_dir: PathBuf,
    /// Architectures, e.g. `["gfx942"]`.
    pub archs: Vec<String>,
    /// Accept kernels that spill registers or use scratch memory.
    pub allow_spills: bool,
    /// Let the nested cargo print its progress (the xtask does; build scripts do not).
    pub show_progress: bool,
}

/// What one architecture's build produced.
#[derive(Clone, Debug)]
pub struct ArchBuild {
    /// The architecture.
    pub arch: String,
    /// The code object.
    pub code_object: PathBuf,
    /// The assembly listing.
    pub asm: PathBuf,
    /// The resource report (JSON).
    pub report: PathBuf,
    /// Code object version.
    pub version: u32,
    /// Size of the code object in bytes.
    pub size: u64,
    /// Per-kernel resources.
    pub kernels: Vec<KernelResources>,
}

/// Why the device build failed.
#[derive(Debug)]
pub enum BuildError {
    /// rustup is not on PATH.
    RustupMissing,
    /// The pinned nightly is not installed.
    ToolchainMissing {
        /// The pinned toolchain.
        toolchain: String,
    },
    /// The pinned nightly lacks rust-src (needed by `-Zbuild-std`).
    RustSrcMissing {
        /// The pinned toolchain.
        toolchain: String,
    },
    /// The pinned nightly lacks llvm-tools (llc, llvm-dis, llvm-as, rust-lld).
    LlvmToolsMissing {
        /// The pinned toolchain.
        toolchain: String,
    },
    /// A tool of the pipeline failed.
    ToolFailed {
        /// The tool.
        tool: String,
        /// Its exit status and message.
        message: String,
    },
    /// The code object and the ABI's kernel declarations disagree.
    KernelMismatch(String),
    /// device/rust-toolchain.toml is missing or has no channel.
    NoPin(PathBuf),
    /// The nested cargo failed.
    CargoFailed {
        /// The architecture.
        arch: String,
        /// Its exit status.
        status: String,
    },
    /// The build finished but an expected file is missing.
    MissingOutput(PathBuf),
    /// The produced code object does not validate.
    CodeObject(String),
    /// Kernels spill registers or use scratch memory, and spills were not allowed.
    Spills {
        /// The architecture.
        arch: String,
        /// `kernel (vgpr spills / sgpr spills)` entries.
        kernels: Vec<String>,
    },
    /// Reading or writing a file failed.
    Io(PathBuf, std::io::Error),
}

/// The one command that installs everything the device build needs.
pub fn install_command(toolchain: &str) -> String {
    format!("rustup toolchain install {toolchain} --profile minimal --component rust-src --component llvm-tools")
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::RustupMissing => write!(
                f,
                "rustup is not on PATH; the device crate is built with a pinned nightly through rustup \
                 (install rustup from https://rustup.rs, then run `cargo xtask build` again)"
            ),
            BuildError::ToolchainMissing { toolchain } => write!(
                f,
                "the device crate needs the pinned toolchain {toolchain}, which is not installed. Run:\n    {}",
                install_command(toolchain)
            ),
            BuildError::RustSrcMissing { toolchain } => write!(
                f,
                "the toolchain {toolchain} lacks the rust-src component (needed to build `core` for \
                 amdgcn). Run:\n    {}",
                install_command(toolchain)
            ),
            BuildError::LlvmToolsMissing { toolchain } => write!(
                f,
                "the toolchain {toolchain} lacks the llvm-tools component (llc, rust-lld: the device \
                 build sets kernel launch bounds in LLVM IR). Run:\n    {}",
                install_command(toolchain)
            ),
            BuildError::ToolFailed { tool, message } => write!(f, "{tool} failed: {message}"),
            BuildError::KernelMismatch(m) => write!(f, "code object and ferrocm_device::abi disagree: {m}"),
            BuildError::NoPin(p) => write!(f, "{} is missing or names no `channel`", p.display()),
            BuildError::CargoFailed { arch, status } => {
                write!(f, "the device build for {arch} failed ({status}); the compiler's messages are above")
            }
            BuildError::MissingOutput(p) => write!(f, "the device build did not produce {}", p.display()),
            BuildError::CodeObject(e) => write!(f, "the built code object is invalid: {e}"),
            BuildError::Spills { arch, kernels } => {
                write!(
                    f,
                    "kernels spill registers or use scratch memory on {arch}: {}. Fix the kernels, or pass --allow-spills to accept it",
                    kernels.join(", ")
                )
            }
            BuildError::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

impl std::error::Error for BuildError {}

/// The toolchain pinned in `<device_dir>/rust-toolchain.toml`.
pub fn pinned_toolchain(device_dir: &Path) -> Result<String, BuildError> {
    let path = device_dir.join("rust-toolchain.toml");
    let text = std::fs::read_to_string(&path).map_err(|_| BuildError::NoPin(path.clone()))?;
    text.lines()
        .map(str::trim)
        .find_map(|l| {
            let rest = l.strip_prefix("channel")?.trim_start().strip_prefix('=')?.trim();
            Some(rest.trim_matches('"').to_string())
        })
        .filter(|c| !c.is_empty())
        .ok_or(BuildError::NoPin(path))
}

fn clean_command(program: &str) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear();
    for key in KEPT_ENV {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    // Never let rustup install a toolchain behind the user's back: a missing pin is reported.
    cmd.env("RUSTUP_AUTO_INSTALL", "0");
    cmd
}

/// The LLVM tools of a toolchain (`<sysroot>/lib/rustlib/<host>/bin`).
#[derive(Clone, Debug)]
pub struct Tools {
    dir: PathBuf,
}

impl Tools {
    fn tool(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// Checks the pinned nightly, its rust-src and its llvm-tools are installed.
pub fn check_toolchain(toolchain: &str) -> Result<Tools, BuildError> {
    let rustc = |args: &[&str]| {
        clean_command("rustup").args(["run", toolchain, "rustc"]).args(args).output().map_err(|_| BuildError::RustupMissing)
    };
    let out = rustc(&["--print", "sysroot"])?;
    if !out.status.success() {
        return Err(BuildError::ToolchainMissing { toolchain: toolchain.to_string() });
    }
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if !sysroot.join("lib/rustlib/src/rust/library/core/src/lib.rs").is_file() {
        return Err(BuildError::RustSrcMissing { toolchain: toolchain.to_string() });
    }
    let vv = String::from_utf8_lossy(&rustc(&["-vV"])?.stdout).into_owned();
    let host = vv.lines().find_map(|l| l.strip_prefix("host: ")).unwrap_or("x86_64-unknown-linux-gnu").trim().to_string();
    let tools = Tools { dir: sysroot.join("lib/rustlib").join(host).join("bin") };
    for t in ["llc", "llvm-dis", "llvm-as", "opt", "rust-lld"] {
        if !tools.tool(t).is_file() {
            return Err(BuildError::LlvmToolsMissing { toolchain: toolchain.to_string() });
        }
    }
    Ok(tools)
}

/// Builds every requested architecture; stops at the first failure.
pub fn build(req: &BuildRequest) -> Result<Vec<ArchBuild>, BuildError> {
    let toolchain = pinned_toolchain(&req.device_dir)?;
    let tools = check_toolchain(&toolchain)?;
    // Hashed before the build starts: a source edited while it runs makes the recorded hash
    // older than the object, so the next check asks for a rebuild rather than trusting it.
    let hash = sources::sources_hash(&req.device_dir)?;
    req.archs.iter().map(|arch| build_arch(req, &toolchain, &tools, arch, &hash)).collect()
}

/// Every kernel the ABI declares, with its launch bound.
fn declared_kernels() -> std::collections::BTreeMap<&'static str, u32> {
    ferrocm_device::abi::ALL_KERNELS.iter().flat_map(|k| k.iter()).map(|d| (d.name, d.max_threads)).collect()
}

/// Adds `amdgpu-flat-work-group-size` to every kernel definition of an LLVM IR module.
pub fn set_launch_bounds(ir: &str, bounds: &std::collections::BTreeMap<&str, u32>) -> Result<String, BuildError> {
    let mut out = String::with_capacity(ir.len() + 64 * bounds.len());
    let mut seen = 0;
    for line in ir.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("define amdgpu_kernel ") {
            let name = rest
                .split_once('@')
                .and_then(|(_, r)| r.split_once('('))
                .map(|(n, _)| n.trim_matches('"'))
                .ok_or_else(|| BuildError::KernelMismatch(format!("unparsable kernel definition: {line}")))?;
            let bound = *bounds
                .get(name)
                .ok_or_else(|| BuildError::KernelMismatch(format!("kernel {name} is not declared in abi::ALL_KERNELS")))?;
            if line.contains("amdgpu-flat-work-group-size") {
                return Err(BuildError::KernelMismatch(format!("kernel {name} already has a flat workgroup size")));
            }
            let body = line
                .trim_end()
                .strip_suffix('{')
                .ok_or_else(|| BuildError::KernelMismatch(format!("kernel {name}: definition line does not end with `{{`")))?;
            out += &format!("{body}\"amdgpu-flat-work-group-size\"=\"1,{bound}\" {{\n");
            seen += 1;
        } else {
            out += line;
        }
    }
    if seen != bounds.len() {
        return Err(BuildError::KernelMismatch(format!("{} kernels declared, {seen} defined", bounds.len())));
    }
    Ok(out)
}

/// The symbol the device crate declares for a 4-byte global -> LDS load
/// (`dsl::mem::Buffer::load_lds_b32`), and the definition the build gives it.
///
/// Why here: the LLVM intrinsic (`llvm.amdgcn.raw.buffer.load.lds`) takes its LDS destination as
/// a `ptr addrspace(3)`, a type Rust cannot name; rustc checks link_llvm_intrinsics signatures and
/// refuses the declaration ("intrinsic signature mismatch ... expected ptr addrspace(3), found
/// ptr"). So the device crate calls an ordinary external symbol with a generic pointer, and the
/// build defines it as an always-inlined wrapper that casts the pointer and calls the intrinsic
/// (size 4, instruction offset 0, no cache bits). (A Rust definition kept out of line does not
/// work: rustc does not mark functions noinline on this target, so LTO inlines it away.)
/// Because rustc's attribute inference saw a call to an unknown function in the kernels that use
/// it (and then assumed they need every hidden kernel argument, the hostcall buffer included),
/// the build inlines the wrapper and reruns LLVM's AMDGPU attribute inference before code
/// generation when the symbol is used.
pub const LDS_LOAD_SYMBOL: &str = "ferrocm.buffer.load.lds.b32";
const LDS_LOAD_DEFINITION: &str =
    "define internal void @ferrocm.buffer.load.lds.b32(<4 x i32> %rsrc, ptr %lds, i32 %voffset, i32 %soffset) alwaysinline nounwind {
  %l = addrspacecast ptr %lds to ptr addrspace(3)
  call void @llvm.amdgcn.raw.buffer.load.lds(<4 x i32> %rsrc, ptr addrspace(3) %l, i32 4, i32 %voffset, i32 %soffset, i32 0, i32 0)
  ret void
}
declare void @llvm.amdgcn.raw.buffer.load.lds(<4 x i32>, ptr addrspace(3), i32 immarg, i32, i32, i32 immarg, i32 immarg)
";

/// Replaces the declaration of [`LDS_LOAD_SYMBOL`] (if the device code uses it) by its
/// definition; the second value says whether it did.
pub fn define_lds_load(ir: &str) -> Result<(String, bool), BuildError> {
    let prefix = format!("declare void @{LDS_LOAD_SYMBOL}(");
    let mut out = String::with_capacity(ir.len() + LDS_LOAD_DEFINITION.len());
    let mut used = false;
    for line in ir.split_inclusive('\n') {
        if line.starts_with(&prefix) {
            if !line.contains("(<4 x i32>, ptr") {
                return Err(BuildError::KernelMismatch(format!("{LDS_LOAD_SYMBOL} is declared with another signature: {line}")));
            }
            out += LDS_LOAD_DEFINITION;
            used = true;
        } else {
            out += line;
        }
    }
    Ok((out, used))
}

fn run_tool(cmd: &mut Command, tool: &str) -> Result<Vec<u8>, BuildError> {
    let out = cmd.output().map_err(|e| BuildError::ToolFailed { tool: tool.to_string(), message: e.to_string() })?;
    if !out.status.success() {
        return Err(BuildError::ToolFailed {
            tool: tool.to_string(),
            message: format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr)),
        });
    }
    Ok(out.stdout)
}

fn build_arch(req: &BuildRequest, toolchain: &str, tools: &Tools, arch: &str, sources_hash: &str) -> Result<ArchBuild, BuildError> {
    let target_dir = req.target_dir.join(arch);
    let mut cmd = clean_command("rustup");
    cmd.args(["run", toolchain, "cargo", "rustc", "--lib", "--crate-type", "cdylib", "--release"])
        .arg("--manifest-path")
        .arg(req.device_dir.join("Cargo.toml"))
        .args(["--target", DEVICE_TARGET, "-Zbuild-std=core"])
        .arg("--target-dir")
        .arg(&target_dir)
        // target-cpu must reach `core` too (build-std), hence a config rustflag, not a rustc arg.
        .arg("--config")
        .arg(format!("target.{DEVICE_TARGET}.rustflags=[\"-Ctarget-cpu={arch}\"]"))
        .args(["--", "--emit=llvm-bc"])
        .current_dir(&req.device_dir);
    if !req.show_progress {
        cmd.stdout(std::process::Stdio::null());
    }
    let status = cmd.status().map_err(|_| BuildError::RustupMissing)?;
    if !status.success() {
        return Err(BuildError::CargoFailed { arch: arch.to_string(), status: status.to_string() });
    }

    let deps = target_dir.join(DEVICE_TARGET).join("release").join("deps");
    let bc = deps.join("ferrocm_device.bc");
    if !bc.is_file() {
        return Err(BuildError::MissingOutput(bc));
    }

    // Launch bounds into the IR, then code generation and linking with the toolchain's LLVM.
    let work = target_dir.join("pipeline");
    std::fs::create_dir_all(&work).map_err(|e| BuildError::Io(work.clone(), e))?;
    let ir = run_tool(Command::new(tools.tool("llvm-dis")).arg(&bc).args(["-o", "-"]), "llvm-dis")?;
    let bounds = declared_kernels();
    let (patched, lds_loads) = define_lds_load(&set_launch_bounds(&String::from_utf8_lossy(&ir), &bounds)?)?;
    let ll = work.join("ferrocm_device.ll");
    std::fs::write(&ll, patched).map_err(|e| BuildError::Io(ll.clone(), e))?;
    let bc2 = work.join("ferrocm_device.bounded.bc");
    if lds_loads {
        // See LDS_LOAD_SYMBOL: inline the wrapper, then redo the attribute inference it spoiled.
        run_tool(
            Command::new(tools.tool("opt"))
                .args(["-mtriple=amdgcn-amd-amdhsa", &format!("-mcpu={arch}"), "-passes=always-inline,amdgpu-attributor"])
                .arg(&ll)
                .arg("-o")
                .arg(&bc2),
            "opt",
        )?;
    } else {
        run_tool(Command::new(tools.tool("llvm-as")).arg(&ll).arg("-o").arg(&bc2), "llvm-as")?;
    }
    let llc = |kind: &str, out: &Path| -> Result<(), BuildError> {
        run_tool(
            Command::new(tools.tool("llc"))
                .args(["-O3", "-mtriple=amdgcn-amd-amdhsa", &format!("-mcpu={arch}"), "-relocation-model=pic"])
                .arg(format!("-filetype={kind}"))
                .arg(&bc2)
                .arg("-o")
                .arg(out),
            "llc",
        )
        .map(|_| ())
    };
    let obj = work.join("ferrocm_device.o");
    let asm = work.join("ferrocm_device.s");
    // The object and the listing are independent code generations of the same IR: side by side
    // on this 2-core machine they take 44 s instead of 27 + 29 s.
    let (obj_done, asm_done) = std::thread::scope(|s| {
        let asm_job = s.spawn(|| llc("asm", &asm));
        (llc("obj", &obj), asm_job.join().expect("the llc thread does not panic"))
    });
    obj_done?;
    asm_done?;
    let elf = work.join("ferrocm_device.elf");
    run_tool(
        Command::new(tools.tool("rust-lld"))
            .args(["-flavor", "gnu", "--gc-sections", "-shared", "-O1", "--strip-debug"])
            .arg(&obj)
            .arg("-o")
            .arg(&elf),
        "rust-lld",
    )?;

    let out = req.out_dir.join(arch);
    std::fs::create_dir_all(&out).map_err(|e| BuildError::Io(out.clone(), e))?;
    let co_path = out.join(CODE_OBJECT_FILE);
    let asm_path = out.join(ASM_FILE);
    let bytes = std::fs::read(&elf).map_err(|e| BuildError::Io(elf.clone(), e))?;
    write_if_changed(&co_path, &bytes)?;
    let asm_text = std::fs::read(&asm).map_err(|e| BuildError::Io(asm.clone(), e))?;
    write_if_changed(&asm_path, &asm_text)?;

    let co = CodeObject::parse_for(&bytes, arch).map_err(|e| BuildError::CodeObject(e.to_string()))?;
    for k in &co.kernels {
        if bounds.get(k.meta.name.as_str()) != Some(&k.meta.max_flat_workgroup_size) {
            return Err(BuildError::KernelMismatch(format!(
                "kernel {} has max workgroup size {}, the ABI declares {:?}",
                k.meta.name,
                k.meta.max_flat_workgroup_size,
                bounds.get(k.meta.name.as_str())
            )));
        }
    }
    let kernels: Vec<KernelResources> = co.kernels.iter().map(|k| k.resources()).collect();
    let report_path = out.join(REPORT_FILE);
    let build = ArchBuild {
        arch: arch.to_string(),
        code_object: co_path,
        asm: asm_path,
        report: report_path.clone(),
        version: co.version,
        size: bytes.len() as u64,
        kernels,
    };
    write_if_changed(&report_path, crate::report::json(&build).as_bytes())?;

    // Scratch without spills is a stack object (an array indexed at run time, a closure's
    // captured references): as slow as a spill, and refused with them.
    let spilling: Vec<String> = build
        .kernels
        .iter()
        .filter(|k| k.spills() || k.scratch > 0)
        .map(|k| format!("{} ({} VGPR / {} SGPR spills, {} scratch bytes)", k.name, k.vgpr_spills, k.sgpr_spills, k.scratch))
        .collect();
    if !spilling.is_empty() && !req.allow_spills {
        return Err(BuildError::Spills { arch: arch.to_string(), kernels: spilling });
    }
    // Last: only an object that passed every check is recorded as built from these sources. (An
    // object that failed one keeps the hash of the sources its predecessor was built from: if
    // the sources changed since, that hash no longer matches them and the object counts as
    // stale; if they did not, the build reproduced its predecessor.)
    sources::record(&out, sources_hash)?;
    Ok(build)
}

/// Writes only when the content differs, so an unchanged rebuild does not retrigger dependents.
pub(crate) fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<(), BuildError> {
    if std::fs::read(path).ok().as_deref() == Some(bytes) {
        return Ok(());
    }
    std::fs::write(path, bytes).map_err(|e| BuildError::Io(path.to_path_buf(), e))
}

/// Parses `gfx942` or `gfx90a,gfx942` into a list (empty entries rejected).
pub fn parse_arch_list(s: &str) -> Result<Vec<String>, String> {
    let archs: Vec<String> = s.split(',').map(|a| a.trim().to_string()).collect();
    if archs.iter().any(|a| a.is_empty()) {
        return Err(format!("bad architecture list {s:?}"));
    }
    for a in &archs {
        if ferrocm_codeobj::arch_mach(a).is_none() {
            return Err(format!("unknown architecture {a:?} (expected e.g. gfx942, gfx90a)"));
        }
    }
    Ok(archs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_pin_from_the_device_crate() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../device");
        assert_eq!(pinned_toolchain(&dir).unwrap(), "nightly-2026-05-20");
    }

    #[test]
    fn a_missing_toolchain_names_the_install_command() {
        let err = check_toolchain("nightly-1999-01-01").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(&install_command("nightly-1999-01-01")), "{msg}");
        assert!(msg.contains("--component rust-src --component llvm-tools"), "{msg}");
    }

    #[test]
    fn launch_bounds_go_into_kernel_definitions() {
        let ir = "define amdgpu_kernel void @k(ptr %p) unnamed_addr #0 {\nentry:\n  ret void\n}\ndefine void @helper() #1 {\n}\n";
        let bounds = [("k", 256u32)].into_iter().collect();
        let out = set_launch_bounds(ir, &bounds).unwrap();
        assert!(out.contains("@k(ptr %p) unnamed_addr #0 \"amdgpu-flat-work-group-size\"=\"1,256\" {"), "{out}");
        assert!(out.contains("define void @helper() #1 {"));
        let none = std::collections::BTreeMap::new();
        assert!(matches!(set_launch_bounds(ir, &none), Err(BuildError::KernelMismatch(_))));
    }

    #[test]
    fn the_lds_load_declaration_becomes_its_definition() {
        let ir = "declare void @ferrocm.buffer.load.lds.b32(<4 x i32>, ptr noundef, i32 noundef, i32 noundef) unnamed_addr #3\n";
        let (out, used) = define_lds_load(ir).unwrap();
        assert!(used);
        assert!(out.contains("define internal void @ferrocm.buffer.load.lds.b32("), "{out}");
        assert!(out.contains("call void @llvm.amdgcn.raw.buffer.load.lds("), "{out}");
        assert!(!out.contains("declare void @ferrocm"), "{out}");
        assert_eq!(define_lds_load("define void @x() {\n}\n").unwrap(), ("define void @x() {\n}\n".to_string(), false));
        assert!(define_lds_load("declare void @ferrocm.buffer.load.lds.b32(i32)\n").is_err());
    }

    #[test]
    fn arch_lists() {
        assert_eq!(parse_arch_list("gfx90a,gfx942").unwrap(), vec!["gfx90a", "gfx942"]);
        assert!(parse_arch_list("gfx942,").is_err());
        assert!(parse_arch_list("sm_90").is_err());
    }
}
