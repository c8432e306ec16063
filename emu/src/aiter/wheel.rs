//! Where the AITER wheel's files are.

use crate::codeobj::{CodeObject, CodeObjectError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The `amd-aiter` release whose kernels, sources and measurements this module was written
/// against (its argument layouts are read from this version's host sources).
pub const WHEEL_VERSION: &str = "0.1.7.post2.dev18";

/// Why the wheel's files cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WheelError {
    /// No extracted wheel where we looked.
    #[error(
        "the amd-aiter {WHEEL_VERSION} wheel is not extracted at {0} (`cargo xtask aiter fetch` downloads and extracts it; \
         FERROCM_AITER_DIR points elsewhere)"
    )]
    Missing(PathBuf),
    /// A file of the wheel could not be read.
    #[error("{path}: {err}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        err: std::io::Error,
    },
    /// A code object of the wheel did not parse.
    #[error("{path}: {err}")]
    CodeObject {
        /// The file.
        path: PathBuf,
        /// What was wrong with it.
        err: CodeObjectError,
    },
}

/// An extracted copy of the wheel (its top level holds `aiter/` and `aiter_meta/`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wheel {
    root: PathBuf,
}

impl Wheel {
    /// The directory `cargo xtask aiter fetch` extracts to when `FERROCM_AITER_DIR` is unset:
    /// `$XDG_CACHE_HOME` (else `~/.cache`) `/ferrocm/amd-aiter-<version>`.
    pub fn default_dir() -> PathBuf {
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        cache.join("ferrocm").join(format!("amd-aiter-{WHEEL_VERSION}"))
    }

    /// The wheel at `$FERROCM_AITER_DIR`, else at [`Wheel::default_dir`].
    ///
    /// # Errors
    /// [`WheelError::Missing`] naming where it looked and how to fetch it.
    pub fn locate() -> Result<Wheel, WheelError> {
        let root = std::env::var_os("FERROCM_AITER_DIR").map(PathBuf::from).unwrap_or_else(Wheel::default_dir);
        Wheel::at(&root)
    }

    /// The wheel extracted at `root`.
    ///
    /// # Errors
    /// [`WheelError::Missing`] when `root` holds no `aiter_meta/hsa/gfx942`.
    pub fn at(root: &Path) -> Result<Wheel, WheelError> {
        if root.join("aiter_meta/hsa/gfx942").is_dir() {
            Ok(Wheel { root: root.to_path_buf() })
        } else {
            Err(WheelError::Missing(root.to_path_buf()))
        }
    }

    /// The extracted wheel's top directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A file under `aiter_meta/hsa/gfx942/` (the gfx942 code objects), e.g.
    /// `bf16gemm/bf16gemm_outf32_tn_64x64_pf3.co`.
    pub fn gfx942(&self, rel: &str) -> PathBuf {
        self.root.join("aiter_meta/hsa/gfx942").join(rel)
    }

    /// A tuned-config table under `aiter/configs/`, e.g. `bf16_tuned_gemm.csv`.
    pub fn config(&self, name: &str) -> PathBuf {
        self.root.join("aiter/configs").join(name)
    }

    /// Reads and parses the gfx942 code object at `rel`.
    ///
    /// # Errors
    /// [`WheelError::Io`], [`WheelError::CodeObject`].
    pub fn code_object(&self, rel: &str) -> Result<Arc<CodeObject>, WheelError> {
        let path = self.gfx942(rel);
        let bytes = std::fs::read(&path).map_err(|err| WheelError::Io { path: path.clone(), err })?;
        CodeObject::parse_for(&bytes, "gfx942").map(Arc::new).map_err(|err| WheelError::CodeObject { path, err })
    }

    /// Every gfx942 code object of the wheel (`*.co` under `aiter_meta/hsa/gfx942`), relative to
    /// that directory, sorted.
    ///
    /// # Errors
    /// [`WheelError::Io`] for a directory that cannot be listed.
    pub fn gfx942_objects(&self) -> Result<Vec<String>, WheelError> {
        let base = self.gfx942("");
        let mut out = Vec::new();
        let mut dirs = vec![base.clone()];
        while let Some(d) = dirs.pop() {
            let entries = std::fs::read_dir(&d).map_err(|err| WheelError::Io { path: d.clone(), err })?;
            for e in entries {
                let p = e.map_err(|err| WheelError::Io { path: d.clone(), err })?.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "co")
                    && let Ok(rel) = p.strip_prefix(&base)
                {
                    out.push(rel.to_string_lossy().into_owned());
                }
            }
        }
        out.sort();
        Ok(out)
    }
}
