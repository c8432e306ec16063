//! The code objects embedded at build time, one per GPU architecture.
//!
//! `build.rs` (`ferrocm_device_build::embed`) takes, for every architecture in FERROCM_ARCHS
//! (default gfx942), the objects this package carries, or those of FERROCM_PREBUILT_DIR, or builds
//! them from the device sources; each is checked against the sources it was built from. It
//! generates the table included here.

use crate::error::{Error, Result};

include!(concat!(env!("OUT_DIR"), "/code_objects.rs"));

/// Every embedded code object as (architecture, bytes).
pub fn embedded() -> &'static [(&'static str, &'static [u8])] {
    EMBEDDED
}

/// The code object for `arch`.
///
/// # Errors
/// [`Error::NoCodeObjectForArch`] when the crate was built without that architecture.
pub fn for_arch(arch: &str) -> Result<&'static [u8]> {
    EMBEDDED.iter().find(|(a, _)| *a == arch).map(|(_, b)| *b).ok_or_else(|| Error::NoCodeObjectForArch {
        arch: arch.to_string(),
        available: if EMBEDDED.is_empty() {
            format!("none: {SKIPPED_REASON}")
        } else {
            EMBEDDED.iter().map(|(a, _)| *a).collect::<Vec<_>>().join(", ")
        },
    })
}

/// Path of the assembly listing of `arch`'s code object on the machine that built this crate
/// (for tests and tooling; `None` when it was not kept).
pub fn listing_path(arch: &str) -> Option<&'static str> {
    LISTINGS.iter().find(|(a, _)| *a == arch).map(|(_, p)| *p)
}
