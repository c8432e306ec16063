//! Model files to the device: [`safetensors`] (single files and sharded checkpoints) and
//! [`gguf`] (v2/v3, quantized tensors kept quantized), loaded through one bounded, parallel path.
//!
//! How a load works ([`LoadOptions`]): the file's header is parsed from a memory map (only the
//! header's pages are touched); the tensor data is then read with positioned reads (`pread`) by
//! several reader threads into a fixed pool of pinned bounce buffers (64 MiB in all by default),
//! each buffer copied to the device asynchronously while the next one is read. File offsets and
//! bounce chunks are 4 KiB aligned. Host memory beyond the pool does not grow with the file: a
//! 100 GiB checkpoint goes through the same 64 MiB. On the emulator, pinned buffers are ordinary
//! memory and copies synchronous (the device is host memory), so there each reader thread reads
//! a chunk and then writes it into emulated device memory itself; still bounded, still parallel.
//!
//! ```no_run
//! use ferrocm::Device;
//! use ferrocm::io::{LoadOptions, safetensors::Checkpoint};
//! let dev = Device::new()?;
//! // A file, a directory (model.safetensors or model.safetensors.index.json), or an index.
//! let ckpt = Checkpoint::open("model/")?;
//! let weights = ckpt.load_all(&dev, &LoadOptions::default().on_progress(|p| {
//!     eprintln!("{:.0}%", 100.0 * p.bytes_done as f64 / p.bytes_total.max(1) as f64)
//! }))?;
//! let wq = weights.get("encoder.layer.0.attention.self.query.weight").unwrap();
//! println!("{:?} {}", wq.shape(), wq.dtype());
//! # Ok::<(), ferrocm::Error>(())
//! ```
//!
//! Element types ferrocm cannot hold on the device (f64, i64, i16, u8, bool, OCP fp8) are an
//! error naming the tensor and its type unless [`Conversions`] allows converting them. Every
//! malformed input is an [`Error::ModelFile`] naming the file and,
//! where there is one, the tensor; no input makes the readers panic or allocate more than the
//! file's size.

pub mod gguf;
pub(crate) mod loader;
pub mod safetensors;

mod convert;

pub use convert::{Conversions, Fp8Conversion};
pub use loader::{LoadOptions, Progress, Weights};

use crate::error::{Error, ModelFileError};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The page size file offsets and bounce chunks are aligned to.
pub(crate) const PAGE: u64 = 4096;

/// An [`Error::ModelFile`] for `path`, about `tensor` if given.
pub(crate) fn file_error(path: &Path, tensor: Option<&str>, kind: ModelFileError) -> Error {
    Error::ModelFile { path: path.to_path_buf(), tensor: tensor.map(str::to_string), kind }
}

/// An open model file: its path (for messages), the handle (for positioned reads by the
/// loader's threads), its length, and a read-only memory map (headers, small reads, views).
#[derive(Debug)]
pub(crate) struct MappedFile {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    pub(crate) map: Option<memmap2::Mmap>,
}

impl MappedFile {
    /// Opens and maps `path` (an empty file is not mapped: mapping zero bytes fails on Linux).
    pub(crate) fn open(path: &Path) -> crate::Result<Arc<MappedFile>> {
        let io = |op, source| file_error(path, None, ModelFileError::Io { op, source });
        let file = File::open(path).map_err(|e| io("open", e))?;
        let len = file.metadata().map_err(|e| io("stat", e))?.len();
        let map = if len == 0 {
            None
        } else {
            // SAFETY: a read-only private mapping. Like every memory-mapping loader this assumes
            // the file is not truncated or rewritten while it is open (that would change or
            // unmap bytes under the slices handed out); model files are written once.
            Some(unsafe { memmap2::MmapOptions::new().map(&file) }.map_err(|e| io("mmap", e))?)
        };
        Ok(Arc::new(MappedFile { path: path.to_path_buf(), file, map }))
    }

    /// The whole file's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// The file's length.
    pub(crate) fn len(&self) -> u64 {
        self.bytes().len() as u64
    }
}
