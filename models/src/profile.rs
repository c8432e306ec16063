//! Modeled MI300X time of a model step: the emulator runs a sample of each launch's workgroups
//! with a trace, and `EmulatorDevice::model` (the emulator's cycle model of one MI300X CU scaled
//! to the chip; its README documents every constant) turns each trace into a time. Launches are
//! grouped by the stage of the model that made them (`qkv`, `attention`, ...).
//!
//! Every figure here is *modeled*, not measured. Not modeled: per-launch overhead on the GPU
//! (a few microseconds per launch on real hardware, which fusing launches removes) and the
//! device-to-device copies of the KV cache (bytes, no kernel); both are reported beside the
//! modeled time (launch count) rather than guessed into it.

use crate::error::{Error, Result};
use ferrocm::Device;
use ferrocm::emulator::{EmulatorDevice, ProfiledLaunch, Profiling};

/// Workgroups traced per launch when modeling: spread over the grid, first and last included.
/// The model assumes the others behave like the sample (exact for GEMM tiles, which all run the
/// full K loop; see the model's README).
pub const SAMPLE_WORKGROUPS: u64 = 8;

/// One launch's modeled time.
#[derive(Clone, Debug)]
pub struct ModeledLaunch {
    /// The model stage that launched it.
    pub stage: &'static str,
    /// The kernel.
    pub kernel: String,
    /// Workgroups in its grid.
    pub workgroups: u64,
    /// Modeled MI300X seconds.
    pub seconds: f64,
    /// What the model names as the limit (`memory`, `mfma`, ...).
    pub bottleneck: String,
}

/// The modeled time of one model step, launch by launch.
#[derive(Clone, Debug, Default)]
pub struct ModeledStep {
    /// Every launch, in order.
    pub launches: Vec<ModeledLaunch>,
}

/// Modeled time of the launches of one stage.
#[derive(Clone, Debug)]
pub struct StageTime {
    /// The stage.
    pub stage: &'static str,
    /// Launches.
    pub launches: usize,
    /// Modeled seconds in all.
    pub seconds: f64,
}

impl ModeledStep {
    /// Modeled seconds, all launches.
    pub fn seconds(&self) -> f64 {
        self.launches.iter().map(|l| l.seconds).sum()
    }

    /// Kernel launches.
    pub fn launch_count(&self) -> usize {
        self.launches.len()
    }

    /// Time and launches per stage, in order of first appearance.
    pub fn by_stage(&self) -> Vec<StageTime> {
        let mut out: Vec<StageTime> = Vec::new();
        for l in &self.launches {
            match out.iter_mut().find(|s| s.stage == l.stage) {
                Some(s) => {
                    s.launches += 1;
                    s.seconds += l.seconds;
                }
                None => out.push(StageTime { stage: l.stage, launches: 1, seconds: l.seconds }),
            }
        }
        out
    }

    /// A text table: stage, launches, modeled microseconds, share.
    pub fn table(&self) -> String {
        let total = self.seconds();
        let mut s = format!("{:<12} {:>8} {:>14} {:>7}\n", "stage", "launches", "modeled us", "share");
        for st in self.by_stage() {
            s += &format!(
                "{:<12} {:>8} {:>14.1} {:>6.1}%\n",
                st.stage,
                st.launches,
                st.seconds * 1e6,
                100.0 * st.seconds / total.max(f64::MIN_POSITIVE)
            );
        }
        s += &format!("{:<12} {:>8} {:>14.1} {:>6.1}%\n", "total", self.launch_count(), total * 1e6, 100.0);
        s
    }
}

/// Collects profiled launches stage by stage while a model step runs with profiling on.
pub(crate) struct StageTracer<'d> {
    emu: &'d EmulatorDevice,
    current: &'static str,
    launches: Vec<(&'static str, ProfiledLaunch)>,
}

impl<'d> StageTracer<'d> {
    /// Turns profiling on for `device` (which must be the emulator).
    pub(crate) fn start(device: &'d Device) -> Result<StageTracer<'d>> {
        let emu = device.as_emulator().ok_or_else(|| Error::Modeling(format!("the device is {}", device.info().name)))?;
        emu.take_profiled();
        emu.set_profiling(Some(Profiling { sample_workgroups: SAMPLE_WORKGROUPS }));
        Ok(StageTracer { emu, current: "setup", launches: Vec::new() })
    }

    /// The launches made from now on belong to `stage`.
    pub(crate) fn stage(&mut self, stage: &'static str) {
        let current = self.current;
        self.launches.extend(self.emu.take_profiled().into_iter().map(|l| (current, l)));
        self.current = stage;
    }

    /// Profiling off; every launch modeled.
    pub(crate) fn finish(mut self) -> Result<ModeledStep> {
        self.stage("done");
        self.emu.set_profiling(None);
        let mut step = ModeledStep::default();
        for (stage, l) in std::mem::take(&mut self.launches) {
            let m = self.emu.model(&l).map_err(|e| Error::Modeling(e.to_string()))?;
            step.launches.push(ModeledLaunch {
                stage,
                kernel: l.kernel.clone(),
                workgroups: l.stats.grid_workgroups,
                seconds: m.seconds,
                bottleneck: m.bottleneck_text(),
            });
        }
        Ok(step)
    }
}

impl Drop for StageTracer<'_> {
    fn drop(&mut self) {
        // An error mid-step must not leave the device sampling every later launch.
        self.emu.set_profiling(None);
    }
}

/// Calls `tracer.stage(name)` when tracing.
pub(crate) fn stage(tracer: &mut Option<&mut StageTracer<'_>>, name: &'static str) {
    if let Some(t) = tracer.as_mut() {
        t.stage(name);
    }
}
