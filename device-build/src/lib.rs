//! ferrocm-device-build: ferrocm's device code built into AMDGPU code objects, and what the host
//! library embeds.
//!
//! - [`pipeline`]: the device crate compiled for `amdgcn-amd-amdhsa` with its pinned nightly, per
//!   GPU architecture, into a code object, its assembly listing and a resource report
//!   (`cargo xtask build` runs it; so does a build from source).
//! - [`sources`]: the hash of the device sources an object was built from, recorded next to it.
//! - [`embed`]: the host library's build script: which objects `ferrocm` embeds (prebuilt ones
//!   from the package, from `FERROCM_PREBUILT_DIR`, or built from source), checked against the
//!   sources.
//! - [`report`]: the resource report as a table and as JSON.
//!
//! A build-dependency of `ferrocm` and a dependency of the task runner (`xtask`), so a build
//! script never depends on the task runner, and both produce the same bytes.
#![warn(missing_docs)]

pub mod embed;
pub mod pipeline;
pub mod report;
pub mod sources;

pub use pipeline::{
    ASM_FILE, ArchBuild, BuildError, BuildRequest, CODE_OBJECT_FILE, DEFAULT_ARCH, DEVICE_TARGET, REPORT_FILE, build, check_toolchain,
    install_command, parse_arch_list, pinned_toolchain,
};
