//! Loading a 1 GiB safetensors file (page-cached) onto the emulator device through
//! `ferrocm::io`, against one plain `read` of the same file into a single host buffer.
//!
//! `cargo bench -p ferrocm-benches --bench model_load` (with FERROCM_PREBUILT_DIR set as for the
//! other benches). FERROCM_BENCH_MODEL_FILE picks the file (generated on first use; default
//! `target/bench/model-1g.safetensors`), FERROCM_BENCH_REPEATS the runs per row (default 5).
//!
//! Measured (2-core VM shared with other builds, so noisy; best of 7 and of 9 runs, at load
//! averages ~6.5 and ~11):
//!
//! | row | best (load 6.5) | best (load 11) |
//! |---|---|---|
//! | plain read, fresh buffer (pages faulted in by the read) | 0.541 s, 1.99 GB/s | 1.280 s |
//! | plain read, reused buffer (a page-cache copy alone) | 0.117 s, 9.17 GB/s | 0.250 s |
//! | io, 1 thread, fresh device memory | 0.228 s | 0.552 s |
//! | io, 1 thread, device blocks reused | 0.204 s, 5.26 GB/s | 0.480 s |
//! | io, 2 threads, fresh device memory | 0.157 s | 0.472 s |
//! | io, 2 threads, device blocks reused | 0.140 s, 7.64 GB/s | 0.402 s |
//!
//! Against the plain read into a fresh buffer, the load is 2.3x to 3.9x faster: the read pays
//! a page fault per 4 KiB of its new buffer, the loader writes into memory already mapped (the
//! bounce buffers are reused, emulated device memory is allocated in large zeroed blocks).
//! Against a read into a buffer already faulted in (memcpy speed out of the page cache), two
//! reader threads reach 62-84% and one 52-57%: on the emulator every chunk is two copies (page
//! cache -> bounce buffer -> emulated device memory), which a second core overlaps when one is
//! free. Peak heap beyond the device memory filled: 64.5 MiB = the 64 MiB pool plus ~0.5 MiB
//! of per-tensor bookkeeping (1060 tensors), independent of the file's size.
//!
//! Reported per row: best and median wall time, throughput, the ratio to the plain read into a
//! fresh buffer, and the peak heap memory a load adds beyond the device memory it fills (counted
//! by a counting global allocator; the emulator's device memory is heap memory of this process
//! too and is subtracted; what is left is the loader's own: bounce buffers and bookkeeping. The
//! file's pages are page cache, mapped or read, and not counted by either side).

use ferrocm::Device;
use ferrocm::io::LoadOptions;
use ferrocm::io::safetensors::Checkpoint;
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

const GIB: u64 = 1 << 30;
/// 60 tensors of 16 MiB, the rest in 1000 small ones of ~4 KiB (norms, biases): both kinds a
/// real checkpoint has, and a 1 GiB total.
const BIG: u64 = 16 << 20;
const N_BIG: u64 = 60;

fn generate(path: &Path) {
    let small_total = GIB - N_BIG * BIG;
    let n_small = 1000u64;
    let small = small_total / n_small / 4 * 4;
    let mut entries = Vec::new();
    let mut off = 0u64;
    for i in 0..N_BIG {
        entries.push(format!(
            "\"layers.{i:02}.w\":{{\"dtype\":\"F32\",\"shape\":[{},1024],\"data_offsets\":[{off},{}]}}",
            BIG / 4096,
            off + BIG
        ));
        off += BIG;
    }
    for i in 0..n_small {
        entries.push(format!("\"norms.{i:04}\":{{\"dtype\":\"F32\",\"shape\":[{}],\"data_offsets\":[{off},{}]}}", small / 4, off + small));
        off += small;
    }
    let json = format!("{{{}}}", entries.join(","));
    let mut f = std::io::BufWriter::with_capacity(8 << 20, std::fs::File::create(path).expect("create the bench file"));
    f.write_all(&(json.len() as u64).to_le_bytes()).unwrap();
    f.write_all(json.as_bytes()).unwrap();
    let chunk: Vec<u8> = (0..(8u32 << 20)).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let mut left = off;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    f.flush().unwrap();
}

/// The system allocator, counting live bytes and their peak (RSS is no good here: the
/// kernel updates per-thread RSS counters lazily).
struct Counting;
static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            PEAK.fetch_max(LIVE.fetch_add(l.size() as u64, Relaxed) + l.size() as u64, Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            PEAK.fetch_max(LIVE.fetch_add(l.size() as u64, Relaxed) + l.size() as u64, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size() as u64, Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            LIVE.fetch_sub(l.size() as u64, Relaxed);
            PEAK.fetch_max(LIVE.fetch_add(new as u64, Relaxed) + new as u64, Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Live heap bytes now; the peak is reset to it.
fn reset_peak() -> u64 {
    let live = LIVE.load(Relaxed);
    PEAK.store(live, Relaxed);
    live
}

struct Row {
    what: String,
    times: Vec<Duration>,
    extra_peak: u64,
}

fn stats(times: &[Duration]) -> (Duration, Duration) {
    let mut t = times.to_vec();
    t.sort();
    (t[0], t[t.len() / 2])
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let path =
        std::env::var_os("FERROCM_BENCH_MODEL_FILE").map(PathBuf::from).unwrap_or_else(|| root.join("target/bench/model-1g.safetensors"));
    let repeats: usize = std::env::var("FERROCM_BENCH_REPEATS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    if !path.exists() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        eprintln!("generating {} ...", path.display());
        generate(&path);
    }
    let len = std::fs::metadata(&path).unwrap().len();
    // Page-cache it (and check it is readable) before timing anything.
    let mut sink = vec![0u8; 8 << 20];
    let mut f = std::fs::File::open(&path).unwrap();
    while f.read(&mut sink).unwrap() > 0 {}
    drop(sink);

    let mut rows = Vec::new();

    // The baseline: one plain read of the whole file into one host buffer: a fresh one (what a
    // program reading a file does; the kernel faults its pages in during the read), and one
    // already faulted in (the copy alone: the page cache's speed limit).
    let mut reused = vec![0u8; len as usize];
    for fresh in [true, false] {
        let mut times = Vec::new();
        let mut extra = 0;
        for _ in 0..repeats {
            let before = reset_peak();
            let t = Instant::now();
            if fresh {
                let mut buf = vec![0u8; len as usize];
                std::fs::File::open(&path).unwrap().read_exact(&mut buf).unwrap();
                std::hint::black_box(&buf);
            } else {
                std::fs::File::open(&path).unwrap().read_exact(&mut reused).unwrap();
                std::hint::black_box(&reused);
            }
            times.push(t.elapsed());
            extra = extra.max(PEAK.load(Relaxed).saturating_sub(before).saturating_sub(if fresh { len } else { 0 }));
        }
        let what = if fresh { "plain read into one fresh host buffer" } else { "plain read into one reused (faulted-in) host buffer" };
        rows.push(Row { what: what.into(), times, extra_peak: extra });
    }
    drop(reused);

    let dev = Device::emulator().expect("the emulator device");
    let ckpt = Checkpoint::open(&path).expect("the bench file opens");
    for threads in [1, 2] {
        for warm_pool in [false, true] {
            let opts = LoadOptions::default().reader_threads(threads);
            let mut times = Vec::new();
            let mut extra = 0;
            for _ in 0..repeats {
                if !warm_pool {
                    dev.memory_pool().empty_cache();
                }
                let before = reset_peak();
                let pool_before = dev.memory_pool().stats().in_use_bytes + dev.memory_pool().stats().cached_bytes;
                let t = Instant::now();
                let w = ckpt.load_all(&dev, &opts).expect("load");
                times.push(t.elapsed());
                // Device memory this load made (emulated: heap of this process), by class size,
                // which is what the emulator allocates.
                let s = dev.memory_pool().stats();
                let device_new = (s.in_use_bytes + s.cached_bytes).saturating_sub(pool_before);
                extra = extra.max(PEAK.load(Relaxed).saturating_sub(before).saturating_sub(device_new));
                assert_eq!(w.len(), (N_BIG + 1000) as usize);
                drop(w);
            }
            let what = format!(
                "ferrocm::io -> emulator, {threads} reader thread{}, {} pool",
                if threads > 1 { "s" } else { "" },
                if warm_pool { "warm (device blocks reused)" } else { "cold (fresh device memory)" }
            );
            rows.push(Row { what, times, extra_peak: extra });
        }
    }

    let (base, _) = stats(&rows[0].times);
    println!(
        "\nLoading {} ({:.2} GiB, page-cached), {repeats} runs each, pool {} MiB\n",
        path.display(),
        len as f64 / GIB as f64,
        LoadOptions::default().pool_bytes() >> 20
    );
    println!("| what | best | median | GB/s (best) | vs plain read (fresh buffer) | peak extra heap |");
    println!("|---|---|---|---|---|---|");
    for r in &rows {
        let (best, median) = stats(&r.times);
        println!(
            "| {} | {:.3} s | {:.3} s | {:.2} | {:.0}% | {:.1} MiB |",
            r.what,
            best.as_secs_f64(),
            median.as_secs_f64(),
            len as f64 / best.as_secs_f64() / 1e9,
            100.0 * base.as_secs_f64() / best.as_secs_f64(),
            r.extra_peak as f64 / (1 << 20) as f64
        );
    }
}
