//! Real-GPU timing through HIP events, for when a GPU is present. Conventions (GFX942.md,
//! "Benchmark conventions"): at least 50 warm-up runs and 100 timed runs, inputs rotated over
//! at least 512 MiB of buffers so the 256 MiB Infinity Cache cannot hold them, normally
//! distributed data. Without a GPU this says so; it never reports a number it did not measure.

use crate::registry::Case;
use ferrocm::Device;

/// Warm-up runs before timing.
pub const WARMUPS: usize = 50;
/// Timed runs.
pub const TIMED_RUNS: usize = 100;
/// Input bytes the rotation covers at least.
pub const ROTATION_BYTES: u64 = 512 << 20;

/// Measured GPU times of one case.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuTiming {
    /// Mean of the timed runs, seconds.
    pub mean_s: f64,
    /// Median of the timed runs, seconds.
    pub median_s: f64,
    /// Timed runs.
    pub runs: usize,
    /// Input sets rotated over.
    pub input_sets: usize,
}

/// Why GPU timing did not happen.
#[derive(Debug)]
pub enum GpuError {
    /// No GPU path here (no HIP runtime, no GPU, or an emulator device): the reason.
    NotAvailable(String),
    /// The op or a HIP call failed.
    Failed(ferrocm::Error),
}

impl std::fmt::Display for GpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuError::NotAvailable(why) => write!(f, "real-GPU timing is not available: {why}"),
            GpuError::Failed(e) => write!(f, "real-GPU timing failed: {e}"),
        }
    }
}

impl std::error::Error for GpuError {}

impl From<ferrocm::Error> for GpuError {
    fn from(e: ferrocm::Error) -> Self {
        GpuError::Failed(e)
    }
}

/// HIP device 0, or why there is none.
pub fn gpu_device() -> Result<Device, GpuError> {
    match ferrocm::hip::device_count() {
        Ok(0) => Err(GpuError::NotAvailable("the HIP runtime reports no GPU".into())),
        Ok(_) => Device::hip(0).map_err(|e| GpuError::NotAvailable(format!("HIP device 0 did not open: {e}"))),
        Err(e) => Err(GpuError::NotAvailable(format!("no HIP runtime ({e})"))),
    }
}

/// A case prepared on a GPU over enough input sets to cover [`ROTATION_BYTES`], each run on the
/// next set.
pub struct Rotation {
    stream: ferrocm::Stream,
    ops: Vec<Box<dyn FnMut() -> ferrocm::Result<()>>>,
    next: usize,
    start: ferrocm::Event,
    end: ferrocm::Event,
}

impl Rotation {
    /// Prepares `case` on `dev` (a HIP device) and runs the [`WARMUPS`].
    ///
    /// # Errors
    /// [`GpuError::NotAvailable`] on a non-HIP device; [`GpuError::Failed`] when the op or HIP fails.
    pub fn new(dev: &Device, case: &crate::registry::Case) -> Result<Rotation, GpuError> {
        if dev.as_hip().is_none() {
            return Err(GpuError::NotAvailable("the device is the emulator".into()));
        }
        let sets = (ROTATION_BYTES.div_ceil(case.min_bytes.max(1)) as usize).max(2);
        let ops = (0..sets).map(|i| (case.prepare)(dev, 1 + i as u64)).collect::<ferrocm::Result<Vec<_>>>()?;
        let stream = dev.current_stream();
        let mut r = Rotation { ops, next: 0, start: ferrocm::Event::new(dev)?, end: ferrocm::Event::new(dev)?, stream };
        for _ in 0..WARMUPS {
            r.run()?;
        }
        dev.synchronize()?;
        Ok(r)
    }

    fn run(&mut self) -> ferrocm::Result<()> {
        let i = self.next;
        self.next = (self.next + 1) % self.ops.len();
        self.ops[i]()
    }

    /// Input sets rotated over.
    pub fn sets(&self) -> usize {
        self.ops.len()
    }

    /// One run on the next input set, timed with HIP events; seconds.
    ///
    /// # Errors
    /// The op's or HIP's error.
    pub fn timed_run(&mut self) -> Result<f64, GpuError> {
        self.start.record(&self.stream)?;
        self.run()?;
        self.end.record(&self.stream)?;
        self.end.synchronize()?;
        Ok(self.start.elapsed_ms(&self.end)? as f64 / 1e3)
    }
}

/// Times `case` on `dev` (a HIP device): [`WARMUPS`] warm-ups, then [`TIMED_RUNS`] runs timed
/// with HIP events, rotating input sets.
///
/// # Errors
/// [`GpuError::NotAvailable`] on a non-HIP device; [`GpuError::Failed`] when the op or HIP fails.
pub fn time_case(dev: &Device, case: &Case) -> Result<GpuTiming, GpuError> {
    let mut rot = Rotation::new(dev, case)?;
    let mut times = (0..TIMED_RUNS).map(|_| rot.timed_run()).collect::<Result<Vec<f64>, _>>()?;
    let mean_s = times.iter().sum::<f64>() / times.len() as f64;
    times.sort_by(f64::total_cmp);
    let median_s = (times[(TIMED_RUNS - 1) / 2] + times[TIMED_RUNS / 2]) / 2.0;
    Ok(GpuTiming { mean_s, median_s, runs: TIMED_RUNS, input_sets: rot.sets() })
}
