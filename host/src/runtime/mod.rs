//! The runtime: devices, memory, launches.

pub(crate) mod buffer;
pub(crate) mod device;
pub(crate) mod launch;
