//! `cargo xtask package`: the crates as they would be published, and a check that a user who
//! depends on `ferrocm` gets a working library with stable Rust and nothing else.
//!
//! 1. The device code is built (by the caller) for the architectures a package carries.
//! 2. Their code objects, each with the hash of the device sources it was built from, are staged
//!    in `host/prebuilt/<arch>/`, which the host package's `include` takes into the package; git
//!    ignores that directory (built objects are never committed, so adding a kernel needs no
//!    binary refreshed by hand) and it is removed again when packaging ends, because a checkout
//!    that holds it embeds it instead of building from source.
//! 3. `cargo package`: the device crate (its own workspace), then `ferrocm-codeobj`,
//!    `ferrocm-device-build`, `ferrocm-emu` and `ferrocm` together, as they would be published
//!    after `ferrocm-device` (a `[patch]` given on the command line stands in for the registry
//!    copy of it), into `target/package/`. Not verified there: the check below builds exactly
//!    these packages, which is what verification would do, once instead of once per crate.
//! 4. The check: every `.crate` is unpacked into `target/package-check/crates/`, and two
//!    scratch crates, each its own workspace (`target/package-check/<name>/`), with the unpacked
//!    packages patched in for crates.io, are built and run with only the stable toolchain
//!    reachable: a rustup home of its own that holds the stable toolchain alone, and no
//!    `FERROCM_*`, `CARGO_*` or `RUST*` variables from the outside. Their build scripts then
//!    must use the objects the package carries (a build from source would need the pinned
//!    nightly, which that rustup home does not have). `ferrocm-package-check` depends on
//!    `ferrocm = "0.1.0"` and runs saxpy on the emulator against the CPU reference;
//!    `ferrocm-package-check-hip-only` depends on it without default features and checks that
//!    asking for the emulator, or for the default device without a GPU, is the clear error.
//!    The target directory is kept between runs and files are unpacked only where they changed,
//!    so a rerun rebuilds only the crates whose package changed (the emulator only when it
//!    does).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The architectures a published package carries code objects for.
///
/// gfx942 only: the kernels do not compile for the others. gfx90a has no fp8 matrix
/// instructions (LLVM: "Cannot select: intrinsic %llvm.amdgcn.mfma.f32.16x16x32.bf8.bf8") and
/// gfx950 dropped the xf32 ones (LLVM: "Cannot select: intrinsic
/// %llvm.amdgcn.mfma.f32.16x16x8.xf32"), and `ferrocm-device` builds every kernel for every
/// architecture (`cargo xtask build --arch gfx90a` / `--arch gfx950` fail with those errors).
pub const PREBUILT_ARCHS: &[&str] = &["gfx942"];

/// The version of every published crate (the workspace's; `device/Cargo.toml` states the same).
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The crates of the main workspace that are published, in dependency order (`ferrocm-device`
/// is packaged first, from its own workspace).
const WORKSPACE_PACKAGES: &[&str] = &["ferrocm-codeobj", "ferrocm-device-build", "ferrocm-emu", "ferrocm"];

/// Every published crate, as the scratch crate patches them in.
const ALL_PACKAGES: &[&str] = &["ferrocm-device", "ferrocm-codeobj", "ferrocm-device-build", "ferrocm-emu", "ferrocm"];

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn run(what: &str, cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("running {what}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{what} failed ({status})")) }
}

/// `host/prebuilt/` while it exists; removed when dropped, also when packaging fails.
struct Staged(PathBuf);

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The workspace's `Cargo.lock` as it was; written back when dropped. Packaging with the
/// `ferrocm-device` patch records it in the lockfile as an unused patch (the workspace itself
/// reaches the device crate by path), and the next ordinary build would remove it again: the
/// check must not touch a tracked file.
struct KeptLockfile(PathBuf, Option<Vec<u8>>);

impl Drop for KeptLockfile {
    fn drop(&mut self) {
        if let Some(before) = &self.1
            && std::fs::read(&self.0).ok().as_deref() != Some(&before[..])
        {
            let _ = std::fs::write(&self.0, before);
        }
    }
}

/// Packages every published crate into `<root>/target/package/`, carrying the objects of
/// `objects` (`<objects>/<arch>/ferrocm.co` and `sources.sha256`, as `cargo xtask build` wrote
/// them). Returns the directory holding the `.crate` files.
pub fn package(root: &Path, objects: &Path) -> Result<PathBuf, String> {
    let staged = Staged(root.join("host").join(ferrocm_device_build::embed::PACKAGE_PREBUILT_DIR));
    let _ = std::fs::remove_dir_all(&staged.0);
    for arch in PREBUILT_ARCHS {
        let (from, to) = (objects.join(arch), staged.0.join(arch));
        std::fs::create_dir_all(&to).map_err(|e| format!("{}: {e}", to.display()))?;
        for file in [ferrocm_device_build::CODE_OBJECT_FILE, ferrocm_device_build::sources::SOURCES_FILE] {
            std::fs::copy(from.join(file), to.join(file)).map_err(|e| format!("{}: {e}", from.join(file).display()))?;
        }
    }
    let target = root.join("target");
    let out = target.join("package");
    // --allow-dirty: the check runs on work in progress too (and on the staged objects, which
    // git ignores).
    run(
        "cargo package (ferrocm-device)",
        cargo()
            .current_dir(root)
            .args(["package", "--quiet", "--no-verify", "--allow-dirty", "--manifest-path"])
            .arg(root.join("device/Cargo.toml"))
            .arg("--target-dir")
            .arg(&target),
    )?;
    let device = out.join(format!("ferrocm-device-{VERSION}"));
    let mut cmd = cargo();
    cmd.current_dir(root).args(["package", "--quiet", "--no-verify", "--allow-dirty", "--target-dir"]).arg(&target);
    for p in WORKSPACE_PACKAGES {
        cmd.args(["-p", p]);
    }
    // ferrocm-device 0.1.0 "on crates.io": the package just made, unpacked.
    unpack(&out.join(format!("ferrocm-device-{VERSION}.crate")), &out)?;
    cmd.arg("--config").arg(format!("patch.crates-io.ferrocm-device.path={:?}", device.display().to_string()));
    let lockfile = root.join("Cargo.lock");
    let kept = KeptLockfile(lockfile.clone(), std::fs::read(&lockfile).ok());
    run("cargo package (ferrocm and the crates it depends on)", &mut cmd)?;
    drop(kept);
    drop(staged);
    Ok(out)
}

fn unpack(krate: &Path, into: &Path) -> Result<(), String> {
    std::fs::create_dir_all(into).map_err(|e| format!("{}: {e}", into.display()))?;
    run(&format!("tar -xzf {}", krate.display()), Command::new("tar").arg("-xzf").arg(krate).arg("-C").arg(into))
}

/// Makes `to` hold exactly the files of `from`, writing only those that differ (cargo decides
/// what to rebuild by modification times).
fn sync(from: &Path, to: &Path) -> Result<(), String> {
    let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    std::fs::create_dir_all(to).map_err(|e| io(to, e))?;
    let mut wanted = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(from).map_err(|e| io(from, e))? {
        let entry = entry.map_err(|e| io(from, e))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        wanted.insert(entry.file_name());
        if entry.file_type().map_err(|e| io(&src, e))?.is_dir() {
            sync(&src, &dst)?;
        } else {
            let bytes = std::fs::read(&src).map_err(|e| io(&src, e))?;
            if std::fs::read(&dst).ok().as_deref() != Some(&bytes[..]) {
                let _ = std::fs::remove_dir_all(&dst);
                std::fs::write(&dst, &bytes).map_err(|e| io(&dst, e))?;
            }
        }
    }
    for entry in std::fs::read_dir(to).map_err(|e| io(to, e))? {
        let entry = entry.map_err(|e| io(to, e))?;
        if !wanted.contains(&entry.file_name()) {
            let p = entry.path();
            let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
        }
    }
    Ok(())
}

/// A user's crate of the check: its name, its `ferrocm` dependency (as written in its
/// `Cargo.toml`, `VERSION` standing for the version) and its program.
struct Scratch {
    name: &'static str,
    dependency: &'static str,
    main: &'static str,
}

/// The crates the check builds and runs: the one-line dependency on one op, and the same without
/// the default `emulator` feature.
const SCRATCHES: &[Scratch] = &[
    Scratch { name: "ferrocm-package-check", dependency: "ferrocm = \"VERSION\"", main: SCRATCH_MAIN },
    Scratch {
        name: "ferrocm-package-check-hip-only",
        dependency: "ferrocm = { version = \"VERSION\", default-features = false }",
        main: SCRATCH_HIP_ONLY_MAIN,
    },
];

/// A scratch crate's manifest: the dependency a user writes, the published packages standing in
/// for crates.io, and its own workspace (it lives under the main workspace's `target/`).
fn scratch_manifest(scratch: &Scratch, crates: &Path) -> String {
    let mut m = format!(
        "# Written by `cargo xtask package`: a user's crate depending on the packaged ferrocm.\n\
         [package]\nname = \"{}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\n{}\n\n\
         # The packages made by `cargo package`, unpacked, as if crates.io had them.\n[patch.crates-io]\n",
        scratch.name, scratch.dependency
    );
    for p in ALL_PACKAGES {
        m += &format!("{p} = {{ path = {:?} }}\n", crates.join(format!("{p}-{VERSION}")).display().to_string());
    }
    m += "\n[workspace]\n";
    m.replace("\"VERSION\"", &format!("{VERSION:?}"))
}

const SCRATCH_MAIN: &str = r#"//! Written by `cargo xtask package`: one op on the emulator, through the packaged ferrocm.
fn main() -> Result<(), ferrocm::Error> {
    let dev = ferrocm::Device::emulator()?;
    let x = dev.from_slice(&[1.0f32, 2.0, 3.0])?;
    let mut y = dev.from_slice(&[10.0f32, 20.0, 30.0])?;
    ferrocm::ops::basic::saxpy(2.0, &x, &mut y)?;
    let got = y.to_vec()?;
    let want = ferrocm::reference::basic::saxpy(2.0, &[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]);
    if got != want {
        eprintln!("saxpy through the packaged ferrocm: {got:?}, the reference says {want:?}");
        std::process::exit(1);
    }
    println!("saxpy through the packaged ferrocm on {}: {got:?}", dev.info().name);
    Ok(())
}
"#;

const SCRATCH_HIP_ONLY_MAIN: &str = r#"//! Written by `cargo xtask package`: the packaged ferrocm without its `emulator` feature.
use ferrocm::{Device, Error};

fn main() {
    // No emulator: asking for one is a clear error, and so is the default device without a GPU.
    match Device::emulator() {
        Err(Error::BackendUnavailable { backend: "emulator", reason }) if reason.contains("`emulator` feature") => {}
        other => panic!("Device::emulator() without the emulator feature: {other:?}"),
    }
    let gpus = ferrocm::hip::device_count().unwrap_or(0);
    match Device::new() {
        Ok(dev) if gpus > 0 => println!("ferrocm without the emulator feature: {}", dev.info().name),
        Err(Error::BackendUnavailable { reason, .. }) if gpus == 0 && reason.contains("`emulator` feature") => {
            println!("ferrocm without the emulator feature, no GPU: {reason}")
        }
        other => panic!("Device::new() without the emulator feature ({gpus} GPUs): {other:?}"),
    }
}
"#;

/// A rustup home holding the stable toolchain alone (linked to the real one): what runs in it
/// cannot reach the device crate's pinned nightly. Returns (home, toolchain name).
fn stable_only_rustup(dir: &Path) -> Result<(PathBuf, String), String> {
    let out = Command::new("rustup")
        .args(["run", "stable", "rustc", "--print", "sysroot"])
        .output()
        .map_err(|e| format!("running rustup: {e}"))?;
    if !out.status.success() {
        return Err("the packaging check builds with the stable toolchain: `rustup toolchain install stable`".into());
    }
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let name = sysroot.file_name().ok_or("rustup printed no sysroot")?.to_string_lossy().into_owned();
    let toolchains = dir.join("toolchains");
    std::fs::create_dir_all(&toolchains).map_err(|e| format!("{}: {e}", toolchains.display()))?;
    let link = toolchains.join(&name);
    if std::fs::read_link(&link).ok().as_deref() != Some(&sysroot) {
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&sysroot, &link).map_err(|e| format!("{}: {e}", link.display()))?;
    }
    Ok((dir.to_path_buf(), name))
}

/// Builds and runs the scratch crate against the packages in `packages` (see the module docs).
pub fn check(root: &Path, packages: &Path) -> Result<(), String> {
    let work = root.join("target/package-check");
    let fresh = work.join("unpacked");
    let _ = std::fs::remove_dir_all(&fresh);
    for p in ALL_PACKAGES {
        unpack(&packages.join(format!("{p}-{VERSION}.crate")), &fresh)?;
    }
    let crates = work.join("crates");
    sync(&fresh, &crates)?;
    let (rustup_home, toolchain) = stable_only_rustup(&work.join("rustup-stable-only"))?;
    for scratch in SCRATCHES {
        let started = std::time::Instant::now();
        build_and_run(scratch, &work, &crates, &rustup_home, &toolchain)?;
        println!("packaging check: {} built (stable only) and ran in {:.1} s", scratch.name, started.elapsed().as_secs_f64());
    }
    Ok(())
}

fn build_and_run(scratch: &Scratch, work: &Path, crates: &Path, rustup_home: &Path, toolchain: &str) -> Result<(), String> {
    let dir = work.join(scratch.name);
    std::fs::create_dir_all(dir.join("src")).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (path, text) in [(dir.join("Cargo.toml"), scratch_manifest(scratch, crates)), (dir.join("src/main.rs"), scratch.main.to_string())] {
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }

    // A user's environment: nothing of this build's leaks in (FERROCM_PREBUILT_DIR would embed
    // the workspace's objects instead of the package's; CARGO_* and RUST* would change what
    // builds with what).
    let mut cmd = Command::new("cargo");
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        let leaks =
            k.starts_with("FERROCM_") || (k.starts_with("CARGO") && k != "CARGO_HOME") || (k.starts_with("RUST") && k != "RUSTUP_HOME");
        if leaks {
            cmd.env_remove(&key);
        }
    }
    // One target directory for both: the dependencies they share are built once.
    cmd.current_dir(&dir)
        .env("RUSTUP_HOME", rustup_home)
        .env("RUSTUP_TOOLCHAIN", toolchain)
        .env("RUSTUP_AUTO_INSTALL", "0")
        .args(["run", "--quiet", "--target-dir"])
        .arg(work.join("target"));
    run(&format!("{} (a crate depending on the packaged ferrocm, stable toolchain only)", scratch.name), &mut cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_writes_only_what_changed_and_removes_the_rest() {
        let base = std::env::temp_dir().join(format!("ferrocm-xtask-sync-{}", std::process::id()));
        let (from, to) = (base.join("from"), base.join("to"));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(from.join("src")).unwrap();
        std::fs::write(from.join("src/lib.rs"), "a").unwrap();
        std::fs::write(from.join("Cargo.toml"), "b").unwrap();
        sync(&from, &to).unwrap();
        assert_eq!(std::fs::read_to_string(to.join("src/lib.rs")).unwrap(), "a");
        let before = std::fs::metadata(to.join("Cargo.toml")).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(from.join("src/lib.rs"), "changed").unwrap();
        std::fs::write(to.join("stale.rs"), "x").unwrap();
        sync(&from, &to).unwrap();
        assert_eq!(std::fs::read_to_string(to.join("src/lib.rs")).unwrap(), "changed");
        assert_eq!(std::fs::metadata(to.join("Cargo.toml")).unwrap().modified().unwrap(), before, "an unchanged file was rewritten");
        assert!(!to.join("stale.rs").exists());
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn the_scratch_crate_depends_on_ferrocm_by_version_and_patches_every_package() {
        let m = scratch_manifest(&SCRATCHES[0], Path::new("/p/crates"));
        assert!(m.contains(&format!("[dependencies]\nferrocm = \"{VERSION}\"\n")), "{m}");
        let hip_only = scratch_manifest(&SCRATCHES[1], Path::new("/p/crates"));
        assert!(hip_only.contains(&format!("ferrocm = {{ version = \"{VERSION}\", default-features = false }}")), "{hip_only}");
        for p in ALL_PACKAGES {
            assert!(m.contains(&format!("{p} = {{ path = \"/p/crates/{p}-{VERSION}\" }}")), "{m}");
        }
        assert!(m.ends_with("[workspace]\n"));
    }
}
