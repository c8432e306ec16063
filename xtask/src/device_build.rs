//! The device build: `device/` compiled for amdgcn-amd-amdhsa with the pinned nightly, per GPU
//! architecture, into a code object, its assembly listing and a resource report.
//!
//! Used by `cargo xtask build` and by `host/build.rs`, so both produce the same bytes.
//!
//! The nested cargo runs with a cleared environment: a build script inherits `RUSTFLAGS`,
//! `CARGO_*`, `RUSTUP_TOOLCHAIN` and friends from the outer build, and any of them leaking in would
//! build the device crate for the wrong target or with the stable compiler.

use ferrocm_emu::codeobj::{CodeObject, KernelResources};
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
    "PATH", "HOME", "USER", "LANG", "TMPDIR", "RUSTUP_HOME", "CARGO_HOME", "http_proxy", "https_proxy",
    "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR",
];

/// What to build.
#[derive(Clone, Debug)]
pub struct BuildRequest {
    /// The device crate (contains Cargo.toml and rust-toolchain.toml).
    pub device_dir: PathBuf,
    /// Cargo target directory for the nested builds (one subdirectory per architecture).
    pub target_dir: PathBuf,
    /// Where `<arch>/ferrocm.co`, `ferrocm.s` and `resources.json` are written.
    pub out_dir: PathBuf,
    /// Architectures, e.g. `["gfx942"]`.
    pub archs: Vec<String>,
    /// Accept kernels that spill registers.
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
    /// Kernels spill registers and spills were not allowed.
    Spills {
        /// The architecture.
        arch: String,
        /// `kernel (vgpr spills / sgpr spills)` entries.
        kernels: Vec<String>,
    },
    /// Reading or writing a file failed.
    Io(PathBuf, std::io::Error),
}

fn install_command(toolchain: &str) -> String {
    format!("rustup toolchain install {toolchain} --profile minimal --component rust-src")
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
            BuildError::NoPin(p) => write!(f, "{} is missing or names no `channel`", p.display()),
            BuildError::CargoFailed { arch, status } => {
                write!(f, "the device build for {arch} failed ({status}); the compiler's messages are above")
            }
            BuildError::MissingOutput(p) => write!(f, "the device build did not produce {}", p.display()),
            BuildError::CodeObject(e) => write!(f, "the built code object is invalid: {e}"),
            BuildError::Spills { arch, kernels } => write!(
                f,
                "kernels spill registers on {arch}: {}. Fix the kernels, or pass --allow-spills to accept it",
                kernels.join(", ")
            ),
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

/// Checks the pinned nightly and its rust-src are installed.
pub fn check_toolchain(toolchain: &str) -> Result<(), BuildError> {
    let out = clean_command("rustup")
        .args(["run", toolchain, "rustc", "--print", "sysroot"])
        .output()
        .map_err(|_| BuildError::RustupMissing)?;
    if !out.status.success() {
        return Err(BuildError::ToolchainMissing { toolchain: toolchain.to_string() });
    }
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if !sysroot.join("lib/rustlib/src/rust/library/core/src/lib.rs").is_file() {
        return Err(BuildError::RustSrcMissing { toolchain: toolchain.to_string() });
    }
    Ok(())
}

/// Builds every requested architecture; stops at the first failure.
pub fn build(req: &BuildRequest) -> Result<Vec<ArchBuild>, BuildError> {
    let toolchain = pinned_toolchain(&req.device_dir)?;
    check_toolchain(&toolchain)?;
    req.archs.iter().map(|arch| build_arch(req, &toolchain, arch)).collect()
}

fn build_arch(req: &BuildRequest, toolchain: &str, arch: &str) -> Result<ArchBuild, BuildError> {
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
        .args(["--", "--emit=asm,link"])
        .current_dir(&req.device_dir);
    if !req.show_progress {
        cmd.stdout(std::process::Stdio::null());
    }
    let status = cmd.status().map_err(|_| BuildError::RustupMissing)?;
    if !status.success() {
        return Err(BuildError::CargoFailed { arch: arch.to_string(), status: status.to_string() });
    }

    let release = target_dir.join(DEVICE_TARGET).join("release");
    let elf = release.join("ferrocm_device.elf");
    if !elf.is_file() {
        return Err(BuildError::MissingOutput(elf));
    }
    let asm = newest_asm(&release.join("deps")).ok_or_else(|| BuildError::MissingOutput(release.join("deps/*.s")))?;

    let out = req.out_dir.join(arch);
    std::fs::create_dir_all(&out).map_err(|e| BuildError::Io(out.clone(), e))?;
    let co_path = out.join(CODE_OBJECT_FILE);
    let asm_path = out.join(ASM_FILE);
    let bytes = std::fs::read(&elf).map_err(|e| BuildError::Io(elf.clone(), e))?;
    write_if_changed(&co_path, &bytes)?;
    let asm_text = std::fs::read(&asm).map_err(|e| BuildError::Io(asm.clone(), e))?;
    write_if_changed(&asm_path, &asm_text)?;

    let co = CodeObject::parse_for(&bytes, arch).map_err(|e| BuildError::CodeObject(e.to_string()))?;
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

    let spilling: Vec<String> = build
        .kernels
        .iter()
        .filter(|k| k.spills())
        .map(|k| format!("{} ({} VGPR / {} SGPR spills)", k.name, k.vgpr_spills, k.sgpr_spills))
        .collect();
    if !spilling.is_empty() && !req.allow_spills {
        return Err(BuildError::Spills { arch: arch.to_string(), kernels: spilling });
    }
    Ok(build)
}

/// The most recently written `ferrocm_device*.s` (the final, post-LTO listing).
fn newest_asm(deps: &Path) -> Option<PathBuf> {
    std::fs::read_dir(deps)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("ferrocm_device") && n.ends_with(".s")
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .map(|e| e.path())
}

/// Writes only when the content differs, so an unchanged rebuild does not retrigger dependents.
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<(), BuildError> {
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
        if ferrocm_emu::codeobj::arch_mach(a).is_none() {
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
        assert!(msg.contains("rustup toolchain install nightly-1999-01-01 --profile minimal --component rust-src"), "{msg}");
    }

    #[test]
    fn arch_lists() {
        assert_eq!(parse_arch_list("gfx90a,gfx942").unwrap(), vec!["gfx90a", "gfx942"]);
        assert!(parse_arch_list("gfx942,").is_err());
        assert!(parse_arch_list("sm_90").is_err());
    }
}
