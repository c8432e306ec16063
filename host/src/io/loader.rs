//! The bounded parallel path from files to device tensors: reader threads `pread` 4 KiB-aligned
//! windows of the files into a fixed pool of pinned bounce buffers, convert element types in
//! place where asked, and queue asynchronous copies into the destination tensors, each thread
//! on its own stream, while they read the next window.
//!
//! Memory: the pool ([`LoadOptions::bounce_bytes`], 64 MiB by default) is all the host memory a
//! load takes besides the list of windows (a few dozen bytes per tensor and per chunk). A
//! bounce buffer is reused only once the copy out of it has completed
//! ([`PinnedBuffer::as_mut_slice`] waits for it), which is also what lets reading the next
//! window overlap the copy of the previous one.

use super::convert::Convert;
use super::{MappedFile, PAGE, file_error};
use crate::error::{Error, ModelFileError, Result};
use crate::runtime::device::Device;
use crate::runtime::pinned::PinnedBuffer;
use crate::runtime::stream::Stream;
use crate::tensor::Tensor;
use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Default size of the bounce-buffer pool: large enough to keep a PCIe/xGMI copy engine and
/// several readers busy, small next to any model worth loading fast.
pub const DEFAULT_BOUNCE_BYTES: usize = 64 << 20;
/// Default size of one bounce buffer (the pool holds `bounce_bytes / chunk_bytes` of them).
/// 8 MiB reads reach the page cache's full copy speed; smaller ones pay the syscall and the
/// copy setup more often, larger ones leave fewer buffers to overlap with.
pub const DEFAULT_CHUNK_BYTES: usize = 8 << 20;
/// Default reader threads: two already saturate a page-cached read on most hosts; more help
/// from cold storage (NVMe queues) and on the emulator, whose device writes are CPU copies.
pub const DEFAULT_READER_THREADS: usize = 2;
/// Windows are not stretched across more than this many unwanted bytes between two tensors
/// (partial loads): a new window is cheaper than reading what nobody asked for.
const MAX_GAP: u64 = 64 << 10;

/// How far a load has come, passed to the [`LoadOptions::on_progress`] callback after each
/// chunk is on its way to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Tensor bytes read and queued for the device so far.
    pub bytes_done: u64,
    /// Tensor bytes of the whole load.
    pub bytes_total: u64,
    /// Tensors completely queued.
    pub tensors_done: usize,
    /// Tensors in the load.
    pub tensors_total: usize,
}

/// The progress callback's type.
pub type ProgressFn = dyn Fn(Progress) + Send + Sync;

/// How a load runs: element conversions, reader threads, the bounce-buffer pool, a progress
/// callback. Get one with [`LoadOptions::default`] and the builder methods.
///
/// ```
/// use ferrocm::io::{Conversions, LoadOptions};
/// let opts = LoadOptions::default()
///     .convert(Conversions::all())
///     .reader_threads(4)
///     .bounce_bytes(32 << 20)
///     .on_progress(|p| eprint!("\r{}/{} tensors", p.tensors_done, p.tensors_total));
/// assert_eq!(opts.bounce_buffers(), 4); // 32 MiB in 8 MiB chunks
/// ```
#[derive(Clone)]
pub struct LoadOptions {
    pub(crate) convert: super::Conversions,
    pub(crate) reader_threads: usize,
    pub(crate) bounce_bytes: usize,
    pub(crate) chunk_bytes: usize,
    pub(crate) progress: Option<Arc<ProgressFn>>,
}

impl Default for LoadOptions {
    fn default() -> LoadOptions {
        LoadOptions {
            convert: super::Conversions::none(),
            reader_threads: DEFAULT_READER_THREADS,
            bounce_bytes: DEFAULT_BOUNCE_BYTES,
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            progress: None,
        }
    }
}

impl std::fmt::Debug for LoadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("convert", &self.convert)
            .field("reader_threads", &self.reader_threads)
            .field("bounce_bytes", &self.bounce_bytes)
            .field("chunk_bytes", &self.chunk_bytes)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl LoadOptions {
    /// The element-type conversions allowed (none by default).
    pub fn convert(mut self, c: super::Conversions) -> LoadOptions {
        self.convert = c;
        self
    }

    /// Reader threads (at least 1; at most one per bounce buffer is used). Default 2.
    pub fn reader_threads(mut self, n: usize) -> LoadOptions {
        self.reader_threads = n.max(1);
        self
    }

    /// Host memory for bounce buffers, in all (64 MiB by default). Rounded down to whole chunks,
    /// at least one.
    pub fn bounce_bytes(mut self, bytes: usize) -> LoadOptions {
        self.bounce_bytes = bytes;
        self
    }

    /// Size of one bounce buffer (8 MiB by default): rounded up to 4 KiB, at least 16 KiB.
    pub fn chunk_bytes(mut self, bytes: usize) -> LoadOptions {
        self.chunk_bytes = bytes;
        self
    }

    /// Called after each chunk has been read and queued for the device (from the reader
    /// threads, so it must be `Send + Sync`; keep it cheap).
    pub fn on_progress(mut self, f: impl Fn(Progress) + Send + Sync + 'static) -> LoadOptions {
        self.progress = Some(Arc::new(f));
        self
    }

    /// The size of one bounce buffer after rounding.
    pub fn chunk_size(&self) -> usize {
        self.chunk_bytes.max(4 * PAGE as usize).next_multiple_of(PAGE as usize)
    }

    /// How many bounce buffers the pool holds.
    pub fn bounce_buffers(&self) -> usize {
        (self.bounce_bytes / self.chunk_size()).max(1)
    }

    /// The host memory the pool takes: [`LoadOptions::bounce_buffers`] x [`LoadOptions::chunk_size`].
    pub fn pool_bytes(&self) -> usize {
        self.bounce_buffers() * self.chunk_size()
    }
}

/// Tensors loaded onto a device, by name, with what the load did to them.
///
/// Get one from [`Checkpoint::load_all`](crate::io::safetensors::Checkpoint::load_all) and its
/// siblings, or [`GgufFile::load_all`](crate::io::gguf::GgufFile::load_all).
///
/// ```no_run
/// # let ckpt = ferrocm::io::safetensors::Checkpoint::open("model.safetensors")?;
/// # let dev = ferrocm::Device::new()?;
/// let mut w = ckpt.load_prefix(&dev, "encoder.layer.0.", &Default::default())?;
/// for (name, t) in w.iter() {
///     println!("{name}: {:?} {}", t.shape(), t.dtype());
/// }
/// let q = w.take("encoder.layer.0.attention.self.query.weight").unwrap();
/// # Ok::<(), ferrocm::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Weights {
    pub(crate) tensors: BTreeMap<String, Tensor>,
    pub(crate) scales: BTreeMap<String, f32>,
    pub(crate) quantized: BTreeMap<String, super::gguf::QuantizedInfo>,
}

impl Weights {
    /// The tensor called `name`.
    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.tensors.get(name)
    }

    /// Removes and returns the tensor called `name` (to move it into a model).
    pub fn take(&mut self, name: &str) -> Option<Tensor> {
        self.tensors.remove(name)
    }

    /// Names and tensors in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.tensors.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The names in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(String::as_str)
    }

    /// How many tensors.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// True when nothing was loaded.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// What a device value of `name` must be multiplied by to give the file's value: 2.0 for
    /// OCP fp8 loaded with [`Fp8Conversion::SameBits`](crate::io::Fp8Conversion::SameBits)
    /// (double that tensor's scale), else 1.0.
    pub fn value_scale(&self, name: &str) -> f32 {
        self.scales.get(name).copied().unwrap_or(1.0)
    }

    /// For a GGUF quantized tensor (loaded as its raw blocks, an i8 tensor of bytes): its GGML
    /// type and logical shape. `None` for dense tensors.
    pub fn quantized_info(&self, name: &str) -> Option<&super::gguf::QuantizedInfo> {
        self.quantized.get(name)
    }

    /// The tensors by name.
    pub fn into_map(self) -> BTreeMap<String, Tensor> {
        self.tensors
    }
}

/// One tensor to bring to the device: `len` file bytes at `offset` of `file`, converted by
/// `convert` into the contiguous tensor `dst`.
pub(crate) struct Job {
    pub(crate) file: Arc<MappedFile>,
    pub(crate) name: String,
    pub(crate) offset: u64,
    pub(crate) len: u64,
    pub(crate) convert: Convert,
    pub(crate) dst: Tensor,
}

/// A piece of a job inside a window.
struct Piece {
    job: usize,
    /// Byte offset into the job's source bytes.
    src_start: u64,
    len: u64,
}

/// One read: the aligned file range `[start, end)` and the pieces of tensors inside it.
struct Window {
    file: usize,
    start: u64,
    end: u64,
    pieces: Vec<Piece>,
}

/// Cuts the jobs into windows of at most `chunk` bytes (aligned start, aligned or end-of-file
/// end). `files` are the jobs' distinct files by address.
fn plan(jobs: &[Job], files: &[Arc<MappedFile>], chunk: u64) -> Vec<Window> {
    let file_index = |f: &Arc<MappedFile>| files.iter().position(|g| Arc::ptr_eq(f, g)).unwrap_or(0);
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&j| (file_index(&jobs[j].file), jobs[j].offset));
    // Room for the unaligned head and tail of a window.
    let room = chunk - 2 * PAGE;
    let mut windows: Vec<Window> = Vec::new();
    for j in order {
        let job = &jobs[j];
        let (src, dst) = job.convert.sizes();
        // A growing conversion needs the room for its output: such pieces get windows alone.
        let grows = dst > src;
        let max_piece = (room * src as u64 / src.max(dst) as u64 / src as u64 * src as u64).max(src as u64);
        let fi = file_index(&job.file);
        let flen = job.file.len();
        let mut done = 0;
        while done < job.len || (job.len == 0 && done == 0) {
            let len = max_piece.min(job.len - done);
            let (p_start, p_end) = (job.offset + done, job.offset + done + len);
            let aligned_end = p_end.next_multiple_of(PAGE).min(flen.max(p_end));
            let joins = !grows
                && windows.last().is_some_and(|w| {
                    w.file == fi
                        && w.pieces.last().is_some_and(|p| !jobs[p.job].convert.grows())
                        && p_start >= w.end.saturating_sub(PAGE)
                        && p_start <= w.end + MAX_GAP
                        && aligned_end - w.start <= chunk
                });
            let piece = Piece { job: j, src_start: done, len };
            if joins {
                let w = windows.last_mut().expect("checked");
                w.end = w.end.max(aligned_end);
                w.pieces.push(piece);
            } else {
                windows.push(Window { file: fi, start: p_start / PAGE * PAGE, end: aligned_end, pieces: vec![piece] });
            }
            if job.len == 0 {
                break;
            }
            done += len;
        }
    }
    windows
}

impl Convert {
    fn grows(self) -> bool {
        let (s, d) = self.sizes();
        d > s
    }
}

/// Runs the jobs: every destination tensor holds its converted bytes when this returns (the
/// copy streams are synchronised). The first failure stops the readers and is returned.
pub(crate) fn run(device: &Device, jobs: &[Job], opts: &LoadOptions) -> Result<()> {
    if jobs.is_empty() {
        return Ok(());
    }
    let mut files: Vec<Arc<MappedFile>> = Vec::new();
    for j in jobs {
        if !files.iter().any(|f| Arc::ptr_eq(f, &j.file)) {
            files.push(j.file.clone());
        }
    }
    let chunk = opts.chunk_size();
    let windows = plan(jobs, &files, chunk as u64);
    let threads = opts.reader_threads.min(opts.bounce_buffers()).min(windows.len()).max(1);
    let per_thread = (opts.bounce_buffers() / threads).max(1);

    let shared = Shared {
        jobs,
        files: &files,
        windows: &windows,
        next: AtomicUsize::new(0),
        failed: AtomicBool::new(false),
        error: Mutex::new(None),
        bytes_done: AtomicU64::new(0),
        bytes_total: jobs.iter().map(|j| j.len).sum(),
        pieces_left: jobs.iter().map(|_| AtomicUsize::new(0)).collect(),
        tensors_done: AtomicUsize::new(0),
        progress: opts.progress.clone(),
    };
    for w in &windows {
        for p in &w.pieces {
            shared.pieces_left[p.job].fetch_add(1, Ordering::Relaxed);
        }
    }

    std::thread::scope(|s| {
        for _ in 0..threads {
            let shared = &shared;
            s.spawn(move || {
                if let Err(e) = reader(device, shared, per_thread, chunk) {
                    shared.failed.store(true, Ordering::Relaxed);
                    shared.error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                }
            });
        }
    });
    match shared.error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

struct Shared<'a> {
    jobs: &'a [Job],
    files: &'a [Arc<MappedFile>],
    windows: &'a [Window],
    next: AtomicUsize,
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
    bytes_done: AtomicU64,
    bytes_total: u64,
    pieces_left: Vec<AtomicUsize>,
    tensors_done: AtomicUsize,
    progress: Option<Arc<ProgressFn>>,
}

/// One reader thread: its own stream and `buffers` bounce buffers, used round-robin, so the
/// copy out of one overlaps the read into the next.
fn reader(device: &Device, sh: &Shared<'_>, buffers: usize, chunk: usize) -> Result<()> {
    let stream = device.new_stream()?;
    let mut bufs: Vec<PinnedBuffer<u8>> = Vec::with_capacity(buffers);
    for _ in 0..buffers {
        bufs.push(device.alloc_pinned::<u8>(chunk)?);
    }
    let result = read_windows(sh, &stream, &mut bufs);
    // The copies must be done before the buffers go (their drop would wait too) and before
    // the caller sees the tensors.
    let synced = stream.synchronize();
    result.and(synced)
}

fn read_windows(sh: &Shared<'_>, stream: &Stream, bufs: &mut [PinnedBuffer<u8>]) -> Result<()> {
    let mut turn = 0;
    while !sh.failed.load(Ordering::Relaxed) {
        let wi = sh.next.fetch_add(1, Ordering::Relaxed);
        let Some(w) = sh.windows.get(wi) else { return Ok(()) };
        let buf = &mut bufs[turn % bufs.len()];
        turn += 1;
        let file = &sh.files[w.file];
        let first = &sh.jobs[w.pieces[0].job];
        let n = (w.end - w.start) as usize;
        // Waits for the previous copy out of this buffer.
        let host = buf.as_mut_slice()?;
        read_exact_at(file, &mut host[..n], w.start, &first.name)?;
        let mut outs = Vec::with_capacity(w.pieces.len());
        for p in &w.pieces {
            let job = &sh.jobs[p.job];
            let at = (job.offset + p.src_start - w.start) as usize;
            let (src, _) = job.convert.sizes();
            let out = job
                .convert
                .apply(&mut host[at..], p.len as usize, p.src_start / src as u64)
                .map_err(|kind| file_error(&file.path, Some(&job.name), kind))?;
            outs.push((at, out));
        }
        for (p, &(at, out)) in w.pieces.iter().zip(&outs) {
            let job = &sh.jobs[p.job];
            let (src, dst) = job.convert.sizes();
            let dst_byte = (p.src_start / src as u64 * dst as u64) as usize;
            stream.copy_htod_bytes(buf, at..at + out, &job.dst, dst_byte)?;
        }
        let mut finished = 0;
        for p in &w.pieces {
            if sh.pieces_left[p.job].fetch_sub(1, Ordering::Relaxed) == 1 {
                finished += 1;
            }
        }
        let bytes: u64 = w.pieces.iter().map(|p| p.len).sum();
        let done = sh.bytes_done.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let tensors = sh.tensors_done.fetch_add(finished, Ordering::Relaxed) + finished;
        if let Some(f) = &sh.progress {
            f(Progress { bytes_done: done, bytes_total: sh.bytes_total, tensors_done: tensors, tensors_total: sh.jobs.len() });
        }
    }
    Ok(())
}

/// Fills `buf` from `offset`; a file shorter than that (truncated since it was opened) is a
/// [`ModelFileError::Truncated`] naming `tensor`.
fn read_exact_at(file: &MappedFile, buf: &mut [u8], offset: u64, tensor: &str) -> Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match file.file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => {
                let available = file.file.metadata().map(|m| m.len()).unwrap_or(offset + done as u64);
                return Err(file_error(
                    &file.path,
                    Some(tensor),
                    ModelFileError::Truncated { what: "tensor data".into(), needed: offset + buf.len() as u64, available },
                ));
            }
            Ok(k) => done += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(file_error(&file.path, Some(tensor), ModelFileError::Io { op: "read", source: e })),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_round_and_bound_the_pool() {
        let o = LoadOptions::default();
        assert_eq!((o.chunk_size(), o.bounce_buffers(), o.pool_bytes()), (8 << 20, 8, 64 << 20));
        let o = LoadOptions::default().chunk_bytes(5000).bounce_bytes(100_000);
        assert_eq!(o.chunk_size(), 16384);
        assert_eq!(o.bounce_buffers(), 6);
        // Never zero buffers, whatever is asked.
        assert_eq!(LoadOptions::default().bounce_bytes(0).bounce_buffers(), 1);
    }
}
