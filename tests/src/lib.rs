//! Shared helpers of the test suites in `tests/tests/`.
//!
//! - [`device`]: the device under test (HIP when present, else the emulator; FERROCM_BACKEND
//!   overrides), created once per test binary.
//! - [`proptest_config`]: case counts, raised with FERROCM_PROPTEST_CASES for long local runs.
//! - [`values`]: random values and views of any dtype, ulp-based closeness (elementwise suites).
//! - [`tensors`]: float tensors from f64 values and back, rounding helpers.
//! - [`counters`]: exclusive use of the device and the emulator's counters of a closure.
//! - [`model_files`]: tiny safetensors files (well-formed or broken) and scratch directories.
//! - [`quant`]: GGML blocks of every format with random codes and chosen scales.
//! - [`attention`]: error bounds of attention outputs against the f64 reference.

pub mod attention;
pub mod counters;
pub mod model_files;
pub mod quant;
pub mod tensors;
pub mod values;

use ferrocm::Device;
use std::sync::OnceLock;

/// The device every suite runs on.
pub fn device() -> &'static Device {
    static DEV: OnceLock<Device> = OnceLock::new();
    DEV.get_or_init(|| Device::new().expect("a device (HIP or the emulator)"))
}

/// A proptest configuration with `default_cases` cases unless FERROCM_PROPTEST_CASES says
/// otherwise.
pub fn proptest_config(default_cases: u32) -> proptest::test_runner::Config {
    let cases = std::env::var("FERROCM_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default_cases);
    proptest::test_runner::Config { cases, failure_persistence: None, ..Default::default() }
}

/// The embedded gfx942 code object.
pub fn gfx942_code_object() -> &'static [u8] {
    ferrocm::code_objects::for_arch("gfx942").expect("ferrocm is built for gfx942")
}
