//! ferrocm's build tasks as a library, so `host/build.rs` runs exactly what `cargo xtask build` runs.

pub mod device_build;
pub mod report;
