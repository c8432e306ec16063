//! What the host library embeds: `host/build.rs` is one call to [`run`].
//!
//! Where the code objects come from, first match wins:
//! 1. `FERROCM_SKIP_DEVICE_BUILD=1`: none (documentation builds, the fuzz targets); every device
//!    then fails with `Error::NoCodeObjectForArch` giving the reason.
//! 2. `FERROCM_PREBUILT_DIR=<dir>`: `<dir>/<arch>/ferrocm.co`, what `cargo xtask build` writes. A
//!    relative path is taken from the directory cargo was started in (the shell's `$PWD`; cargo
//!    runs build scripts in the package's own directory, so that is the only place it is known).
//! 3. `FERROCM_BUILD_FROM_SOURCE=1`, or the `build-from-source` feature: the device crate is
//!    built here with its pinned nightly (the same pipeline as `cargo xtask build`).
//! 4. The objects the package carries, `prebuilt/<arch>/ferrocm.co` (a published `ferrocm`:
//!    stable Rust is then all a user needs).
//! 5. Otherwise (a checkout, which carries none): built from source as in 3.
//!
//! An object built earlier (2 and 4) must have been built from the device sources this build
//! compiles the kernel ABI from: the hash recorded next to it (`sources.sha256`) is compared with
//! the sources' ([`crate::sources`]), and a mismatch is an error naming the command that fixes it.
//! `FERROCM_ARCHS=gfx942[,gfx90a...]` picks the architectures (default gfx942).

use crate::pipeline::{self, ASM_FILE, BuildRequest, CODE_OBJECT_FILE, DEFAULT_ARCH};
use crate::sources;
use std::path::{Path, PathBuf};

/// The environment variables [`run`] reads (each a `rerun-if-env-changed`).
pub const ENV_VARS: &[&str] = &["FERROCM_ARCHS", "FERROCM_PREBUILT_DIR", "FERROCM_SKIP_DEVICE_BUILD", "FERROCM_BUILD_FROM_SOURCE"];

/// Where the device crate's sources are, as its build script tells the crates depending on it
/// (`links = "ferrocm_device"`, `cargo::metadata=dir=...`): the checkout's `device/`, or the
/// unpacked `ferrocm-device` package of a registry.
pub const DEVICE_DIR_VAR: &str = "DEP_FERROCM_DEVICE_DIR";

/// The directory of a package holding the code objects it carries.
pub const PACKAGE_PREBUILT_DIR: &str = "prebuilt";

/// The file the generated table is written to, in `OUT_DIR`.
pub const TABLE_FILE: &str = "code_objects.rs";

/// What the build script was asked for (from the environment in [`run`]; built directly in tests).
#[derive(Clone, Debug)]
pub struct Settings {
    /// The architectures to embed.
    pub archs: Vec<String>,
    /// `FERROCM_SKIP_DEVICE_BUILD`.
    pub skip: bool,
    /// `FERROCM_PREBUILT_DIR`, resolved to an absolute path.
    pub prebuilt_dir: Option<PathBuf>,
    /// `FERROCM_BUILD_FROM_SOURCE` or the `build-from-source` feature.
    pub from_source: bool,
    /// The host package's directory (`CARGO_MANIFEST_DIR`): its `prebuilt/` is looked at.
    pub package_dir: PathBuf,
    /// The device crate's sources, when known.
    pub device_dir: Option<PathBuf>,
    /// `OUT_DIR`: the table, and the objects of a build from source.
    pub out_dir: PathBuf,
}

/// Where the embedded objects came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// None embedded (`FERROCM_SKIP_DEVICE_BUILD`).
    Skipped,
    /// `FERROCM_PREBUILT_DIR`.
    PrebuiltDir(PathBuf),
    /// Built from the device sources by this build.
    Built,
    /// The package's `prebuilt/`.
    Package(PathBuf),
}

/// The outcome: objects by architecture, and what cargo should watch and say.
#[derive(Clone, Debug)]
pub struct Embedding {
    /// Where they came from.
    pub origin: Origin,
    /// (architecture, code object path).
    pub objects: Vec<(String, PathBuf)>,
    /// Files whose change must rerun the build script.
    pub watch: Vec<PathBuf>,
    /// Warnings for cargo to print.
    pub warnings: Vec<String>,
}

impl Settings {
    /// The settings cargo gives a build script.
    ///
    /// # Errors
    /// A bad `FERROCM_ARCHS`, or a missing `OUT_DIR`/`CARGO_MANIFEST_DIR` (not run by cargo).
    pub fn from_env() -> Result<Settings, String> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let required =
            |name: &str| var(name).map(PathBuf::from).ok_or_else(|| format!("{name} is not set: run by cargo as a build script"));
        let archs = match std::env::var("FERROCM_ARCHS") {
            Ok(list) => pipeline::parse_arch_list(&list).map_err(|e| format!("FERROCM_ARCHS: {e}"))?,
            Err(_) => vec![DEFAULT_ARCH.to_string()],
        };
        let pwd = var("PWD").map(PathBuf::from);
        let prebuilt_dir = var("FERROCM_PREBUILT_DIR").map(|d| resolve_user_path(Path::new(&d), pwd.as_deref()));
        let flag = |name: &str| var(name).is_some_and(|v| v != "0");
        Ok(Settings {
            archs,
            skip: flag("FERROCM_SKIP_DEVICE_BUILD"),
            prebuilt_dir,
            from_source: flag("FERROCM_BUILD_FROM_SOURCE") || var("CARGO_FEATURE_BUILD_FROM_SOURCE").is_some(),
            package_dir: required("CARGO_MANIFEST_DIR")?,
            device_dir: var(DEVICE_DIR_VAR).map(PathBuf::from),
            out_dir: required("OUT_DIR")?,
        })
    }
}

/// A path the user typed: absolute as given, relative to `cwd` (the directory cargo was started
/// in) when known, else as given (the build script's own directory).
pub fn resolve_user_path(path: &Path, cwd: Option<&Path>) -> PathBuf {
    match cwd {
        Some(cwd) if path.is_relative() && cwd.is_absolute() => cwd.join(path),
        _ => path.to_path_buf(),
    }
}

/// Decides where the objects come from and gets them (building them if that is the choice).
///
/// # Errors
/// A message for the user: a missing or stale object, a failed device build.
pub fn embed(s: &Settings) -> Result<Embedding, String> {
    if s.skip {
        return Ok(Embedding { origin: Origin::Skipped, objects: vec![], watch: vec![], warnings: vec![] });
    }
    if let Some(dir) = &s.prebuilt_dir {
        return take_prebuilt(s, Origin::PrebuiltDir(dir.clone()), dir);
    }
    let package = s.package_dir.join(PACKAGE_PREBUILT_DIR);
    if !s.from_source && package.is_dir() {
        return take_prebuilt(s, Origin::Package(package.clone()), &package);
    }
    build_from_source(s)
}

fn device_watch(device_dir: &Path) -> Vec<PathBuf> {
    ["src", "Cargo.toml", "rust-toolchain.toml"].iter().map(|p| device_dir.join(p)).collect()
}

fn take_prebuilt(s: &Settings, origin: Origin, dir: &Path) -> Result<Embedding, String> {
    let mut e = Embedding { origin: origin.clone(), objects: vec![], watch: vec![], warnings: vec![] };
    let current = match &s.device_dir {
        Some(d) => {
            e.watch.extend(device_watch(d));
            Some(sources::sources_hash(d).map_err(|err| format!("hashing the device sources: {err}"))?)
        }
        None => None,
    };
    for arch in &s.archs {
        let arch_dir = dir.join(arch);
        let path = arch_dir.join(CODE_OBJECT_FILE);
        if !path.is_file() {
            return Err(match &origin {
                Origin::Package(_) => format!(
                    "this ferrocm package carries prebuilt code objects for {} only, not {arch}; set \
                     FERROCM_BUILD_FROM_SOURCE=1 to build {arch} from the device sources (needs the \
                     pinned nightly toolchain)",
                    available(dir)
                ),
                _ => format!(
                    "FERROCM_PREBUILT_DIR has no {} (run `cargo xtask build --arch {arch}`; a relative \
                     FERROCM_PREBUILT_DIR is taken from the directory cargo runs in)",
                    path.display()
                ),
            });
        }
        e.watch.push(path.clone());
        e.watch.push(arch_dir.join(sources::SOURCES_FILE));
        match (sources::recorded(&arch_dir), &current) {
            (Some(rec), Some(cur)) if &rec != cur => {
                let device = s.device_dir.as_deref().map(|d| d.display().to_string()).unwrap_or_default();
                return Err(match &origin {
                    Origin::Package(_) => format!(
                        "the {arch} code object in {} was built from other device sources than {device} \
                         holds ({} {rec}, the sources hash to {cur}). In a checkout, `cargo xtask package` \
                         regenerates it (or delete that directory to build from source); otherwise \
                         FERROCM_BUILD_FROM_SOURCE=1 builds it from these sources with the pinned nightly",
                        dir.display(),
                        sources::SOURCES_FILE
                    ),
                    _ => format!(
                        "{} is stale: it was built from other device sources than {device} holds now \
                         ({} {rec}, the sources hash to {cur}). Run `cargo xtask build --arch {arch}`, or \
                         unset FERROCM_PREBUILT_DIR to build from source",
                        path.display(),
                        sources::SOURCES_FILE
                    ),
                });
            }
            (None, Some(_)) if matches!(origin, Origin::Package(_)) => {
                return Err(format!("{} has no {}: the package is incomplete", arch_dir.display(), sources::SOURCES_FILE));
            }
            (None, Some(_)) => e.warnings.push(format!(
                "{} has no {}, so whether it matches the device sources is unknown (`cargo xtask build` writes it)",
                path.display(),
                sources::SOURCES_FILE
            )),
            (_, None) => e
                .warnings
                .push(format!("the device sources were not found ({DEVICE_DIR_VAR} unset): {} is embedded unchecked", path.display())),
            _ => {}
        }
        e.objects.push((arch.clone(), path));
    }
    Ok(e)
}

/// The architectures a prebuilt directory holds, comma separated.
fn available(dir: &Path) -> String {
    let mut archs: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().join(CODE_OBJECT_FILE).is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    archs.sort();
    if archs.is_empty() { "no architecture".into() } else { archs.join(", ") }
}

fn build_from_source(s: &Settings) -> Result<Embedding, String> {
    let device_dir = s.device_dir.clone().ok_or_else(|| {
        format!("building the code objects from source needs the device crate's sources, which cargo did not name ({DEVICE_DIR_VAR} unset)")
    })?;
    let req = BuildRequest {
        device_dir: device_dir.clone(),
        target_dir: s.out_dir.join("device-target"),
        out_dir: s.out_dir.join("device-out"),
        archs: s.archs.clone(),
        allow_spills: false,
        show_progress: false,
    };
    let builds = pipeline::build(&req).map_err(|e| e.to_string())?;
    Ok(Embedding {
        origin: Origin::Built,
        objects: builds.into_iter().map(|b| (b.arch, b.code_object)).collect(),
        watch: device_watch(&device_dir),
        warnings: vec![],
    })
}

/// The Rust source included by `ferrocm::code_objects`: `EMBEDDED` (architecture, bytes),
/// `SKIPPED_REASON`, and `LISTINGS` (architecture, path of the assembly listing on the build
/// machine, where one lies next to the object).
pub fn table(e: &Embedding) -> String {
    let skipped = match e.origin {
        Origin::Skipped => "the crate was built with FERROCM_SKIP_DEVICE_BUILD",
        _ => "",
    };
    let mut t = String::from("/// (architecture, code object) pairs embedded at build time.\n");
    t += "static EMBEDDED: &[(&str, &[u8])] = &[\n";
    for (arch, path) in &e.objects {
        t += &format!("    ({arch:?}, include_bytes!({:?})),\n", abs(path));
    }
    t += "];\n";
    t += &format!("/// Why nothing is embedded, when nothing is.\n#[allow(dead_code)]\nstatic SKIPPED_REASON: &str = {skipped:?};\n");
    // The listings stay on disk (they are large); their paths serve tests and tools on the
    // machine that built the crate.
    t += "/// (architecture, path of the assembly listing on the build machine).\n";
    t += "static LISTINGS: &[(&str, &str)] = &[\n";
    for (arch, path) in &e.objects {
        let asm = path.with_file_name(ASM_FILE);
        if asm.is_file() {
            t += &format!("    ({arch:?}, {:?}),\n", abs(&asm));
        }
    }
    t += "];\n";
    t
}

fn abs(p: &Path) -> String {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()).display().to_string()
}

/// The build script: reads the settings from the environment, embeds, writes the table, tells
/// cargo what to watch. Exits with the message on failure.
pub fn run() {
    for var in ENV_VARS.iter().chain(&[DEVICE_DIR_VAR]) {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let result = Settings::from_env().and_then(|s| {
        // A relative FERROCM_PREBUILT_DIR depends on where cargo was started.
        if std::env::var_os("FERROCM_PREBUILT_DIR").is_some_and(|d| Path::new(&d).is_relative()) {
            println!("cargo::rerun-if-env-changed=PWD");
        }
        let e = embed(&s)?;
        // Rewritten only when it changes: the library recompiles when it does.
        crate::pipeline::write_if_changed(&s.out_dir.join(TABLE_FILE), table(&e).as_bytes()).map_err(|err| err.to_string())?;
        Ok(e)
    });
    match result {
        Ok(e) => {
            for w in &e.watch {
                println!("cargo::rerun-if-changed={}", w.display());
            }
            for w in &e.warnings {
                println!("cargo::warning={w}");
            }
        }
        Err(msg) => {
            eprintln!("\nferrocm: {msg}\n");
            std::process::exit(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch device crate and a prebuilt directory holding a gfx942 "object" recorded as
    /// built from it.
    fn setup(name: &str) -> (Settings, PathBuf) {
        let root = std::env::temp_dir().join(format!("ferrocm-embed-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let device = root.join("device");
        std::fs::create_dir_all(device.join("src")).unwrap();
        std::fs::write(device.join("rust-toolchain.toml"), "[toolchain]\n").unwrap();
        std::fs::write(device.join("Cargo.toml"), "[package]\n").unwrap();
        std::fs::write(device.join("src/lib.rs"), "//! kernels\n").unwrap();
        let prebuilt = root.join("objects");
        std::fs::create_dir_all(prebuilt.join("gfx942")).unwrap();
        std::fs::write(prebuilt.join("gfx942").join(CODE_OBJECT_FILE), b"\x7fELF").unwrap();
        sources::record(&prebuilt.join("gfx942"), &sources::sources_hash(&device).unwrap()).unwrap();
        let package = root.join("host");
        std::fs::create_dir_all(&package).unwrap();
        let s = Settings {
            archs: vec!["gfx942".into()],
            skip: false,
            prebuilt_dir: None,
            from_source: false,
            package_dir: package,
            device_dir: Some(device),
            out_dir: root.join("out"),
        };
        (s, prebuilt)
    }

    #[test]
    fn relative_paths_are_taken_from_where_cargo_was_started() {
        let cwd = Path::new("/work/repo");
        assert_eq!(resolve_user_path(Path::new("target/ferrocm"), Some(cwd)), PathBuf::from("/work/repo/target/ferrocm"));
        assert_eq!(resolve_user_path(Path::new("/abs/objects"), Some(cwd)), PathBuf::from("/abs/objects"));
        assert_eq!(resolve_user_path(Path::new("target/ferrocm"), None), PathBuf::from("target/ferrocm"));
        assert_eq!(resolve_user_path(Path::new("x"), Some(Path::new("not/absolute"))), PathBuf::from("x"));
    }

    #[test]
    fn a_prebuilt_dir_matching_the_sources_is_embedded_and_watched() {
        let (mut s, prebuilt) = setup("match");
        s.prebuilt_dir = Some(prebuilt.clone());
        let e = embed(&s).unwrap();
        assert_eq!(e.origin, Origin::PrebuiltDir(prebuilt.clone()));
        assert_eq!(e.objects, vec![("gfx942".to_string(), prebuilt.join("gfx942").join(CODE_OBJECT_FILE))]);
        assert!(e.warnings.is_empty(), "{:?}", e.warnings);
        assert!(e.watch.contains(&s.device_dir.clone().unwrap().join("src")));
        let t = table(&e);
        assert!(t.contains("(\"gfx942\", include_bytes!("), "{t}");
        assert!(t.contains("static SKIPPED_REASON: &str = \"\";"), "{t}");
    }

    #[test]
    fn a_stale_prebuilt_object_is_refused_with_the_fix() {
        let (mut s, prebuilt) = setup("stale");
        s.prebuilt_dir = Some(prebuilt.clone());
        std::fs::write(s.device_dir.as_ref().unwrap().join("src/new_kernel.rs"), "").unwrap();
        let err = embed(&s).unwrap_err();
        assert!(err.contains("is stale") && err.contains("cargo xtask build --arch gfx942"), "{err}");
        // The same object carried by a package names that case's fixes.
        let package = s.package_dir.join(PACKAGE_PREBUILT_DIR);
        std::fs::rename(&prebuilt, &package).unwrap();
        s.prebuilt_dir = None;
        let err = embed(&s).unwrap_err();
        assert!(err.contains("cargo xtask package") && err.contains("FERROCM_BUILD_FROM_SOURCE=1"), "{err}");
    }

    #[test]
    fn an_unrecorded_prebuilt_dir_warns_and_a_package_must_record() {
        let (mut s, prebuilt) = setup("unrecorded");
        std::fs::remove_file(prebuilt.join("gfx942").join(sources::SOURCES_FILE)).unwrap();
        s.prebuilt_dir = Some(prebuilt.clone());
        let e = embed(&s).unwrap();
        assert_eq!(e.warnings.len(), 1, "{:?}", e.warnings);
        std::fs::rename(&prebuilt, s.package_dir.join(PACKAGE_PREBUILT_DIR)).unwrap();
        s.prebuilt_dir = None;
        assert!(embed(&s).unwrap_err().contains("the package is incomplete"));
    }

    #[test]
    fn the_package_objects_are_used_unless_a_build_from_source_is_asked_for() {
        let (mut s, prebuilt) = setup("package");
        let package = s.package_dir.join(PACKAGE_PREBUILT_DIR);
        std::fs::rename(&prebuilt, &package).unwrap();
        let e = embed(&s).unwrap();
        assert_eq!(e.origin, Origin::Package(package.clone()));
        // An architecture the package lacks: named, with the opt-in that builds it.
        s.archs = vec!["gfx90a".into()];
        let err = embed(&s).unwrap_err();
        assert!(err.contains("for gfx942 only, not gfx90a") && err.contains("FERROCM_BUILD_FROM_SOURCE=1"), "{err}");
        // Asked to build from source, the package's objects are not looked at: the (scratch)
        // device crate is built, which here fails in the pipeline, not in the prebuilt check.
        s.archs = vec!["gfx942".into()];
        s.from_source = true;
        s.device_dir = None;
        let err = embed(&s).unwrap_err();
        assert!(err.contains("needs the device crate's sources"), "{err}");
    }

    #[test]
    fn skipping_embeds_nothing_and_says_why() {
        let (mut s, _) = setup("skip");
        s.skip = true;
        let e = embed(&s).unwrap();
        assert!(e.objects.is_empty());
        assert!(table(&e).contains("FERROCM_SKIP_DEVICE_BUILD"));
    }
}
