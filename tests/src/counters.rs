//! The emulator's counters for suites that assert on them: the device is shared by a test
//! binary's tests, which run in parallel, so a test holds [`exclusive`] for its whole run and no
//! other test's launch lands in what [`measure`] counts.

use ferrocm::emulator::Counters;
use std::sync::{Mutex, MutexGuard};

static LOCK: Mutex<()> = Mutex::new(());

/// This test's exclusive use of the device (among the tests that take it).
pub fn exclusive() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `f` and returns its result and the counters of all its launches, or `None` on a real GPU
/// (no counters there). Call it while holding [`exclusive`].
pub fn measure<T>(f: impl FnOnce() -> T) -> Option<(T, Counters)> {
    let emu = crate::device().as_emulator()?;
    emu.reset_total_counters();
    let out = f();
    Some((out, emu.total_counters()))
}
