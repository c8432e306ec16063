//! Embeds ferrocm's device code objects.
//!
//! - FERROCM_PREBUILT_DIR=<dir>: take `<dir>/<arch>/ferrocm.co` (what `cargo xtask build` writes);
//! - otherwise build `../device` for each architecture with the same pipeline as the xtask, into
//!   this package's OUT_DIR;
//! - FERROCM_SKIP_DEVICE_BUILD=1: embed nothing (for documentation builds); every device then
//!   fails with `Error::NoCodeObjectForArch` naming the reason.
//!
//! FERROCM_ARCHS=gfx942[,gfx90a...] picks the architectures (default gfx942).

use std::path::{Path, PathBuf};
use xtask::device_build::{self, BuildRequest, CODE_OBJECT_FILE, DEFAULT_ARCH};

fn main() {
    for var in ["FERROCM_ARCHS", "FERROCM_PREBUILT_DIR", "FERROCM_SKIP_DEVICE_BUILD"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let archs = match std::env::var("FERROCM_ARCHS") {
        Ok(list) => device_build::parse_arch_list(&list).unwrap_or_else(|e| fail(&format!("FERROCM_ARCHS: {e}"))),
        Err(_) => vec![DEFAULT_ARCH.to_string()],
    };

    let (objects, skipped): (Vec<(String, PathBuf)>, &str) = if std::env::var_os("FERROCM_SKIP_DEVICE_BUILD").is_some() {
        (vec![], "the crate was built with FERROCM_SKIP_DEVICE_BUILD")
    } else if let Some(dir) = std::env::var_os("FERROCM_PREBUILT_DIR") {
        let dir = PathBuf::from(dir);
        let objects = archs
            .iter()
            .map(|arch| {
                let path = dir.join(arch).join(CODE_OBJECT_FILE);
                if !path.is_file() {
                    fail(&format!("FERROCM_PREBUILT_DIR has no {} (run `cargo xtask build --arch {arch}`)", path.display()));
                }
                println!("cargo:rerun-if-changed={}", path.display());
                (arch.clone(), path)
            })
            .collect();
        (objects, "")
    } else {
        let device_dir = manifest_dir.join("../device");
        for p in ["src", "Cargo.toml", "Cargo.lock", "rust-toolchain.toml"] {
            println!("cargo:rerun-if-changed={}", device_dir.join(p).display());
        }
        let req = BuildRequest {
            device_dir: device_dir.clone(),
            target_dir: out_dir.join("device-target"),
            out_dir: out_dir.join("device-out"),
            archs: archs.clone(),
            allow_spills: false,
            show_progress: false,
        };
        let builds = device_build::build(&req).unwrap_or_else(|e| fail(&e.to_string()));
        (builds.into_iter().map(|b| (b.arch, b.code_object)).collect(), "")
    };

    // The assembly listings stay on disk (they are large); their paths are for tests and tools
    // on the machine that built the crate.
    let mut listings = String::from("/// (architecture, path of the assembly listing on the build machine).\n");
    listings += "static LISTINGS: &[(&str, &str)] = &[\n";
    for (arch, path) in &objects {
        let asm = path.with_file_name(xtask::device_build::ASM_FILE);
        if asm.is_file() {
            listings += &format!("    ({arch:?}, {:?}),\n", abs(&asm));
        }
    }
    listings += "];\n";

    let mut table = String::from("/// (architecture, code object) pairs embedded at build time.\n");
    table += "static EMBEDDED: &[(&str, &[u8])] = &[\n";
    for (arch, path) in &objects {
        table += &format!("    ({arch:?}, include_bytes!({:?})),\n", abs(path));
    }
    table += "];\n";
    table += &format!("/// Why nothing is embedded, when nothing is.\n#[allow(dead_code)]\nstatic SKIPPED_REASON: &str = {skipped:?};\n");
    table += &listings;
    std::fs::write(out_dir.join("code_objects.rs"), table).expect("write code_objects.rs");
}

fn abs(p: &Path) -> String {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()).display().to_string()
}

fn fail(msg: &str) -> ! {
    eprintln!("\nferrocm: {msg}\n");
    std::process::exit(1)
}
