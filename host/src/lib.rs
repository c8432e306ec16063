//! # ferrocm
//!
//! Fast tensor ops on AMD Instinct GPUs, with the kernels written in plain Rust.
//!
//! The kernels live in the `ferrocm-device` crate, compiled ahead of time for `amdgcn-amd-amdhsa`
//! (gfx942 = MI300X first) and embedded in this crate. They run either on a real GPU through the
//! HIP runtime (libamdhip64, opened at run time, so nothing of ROCm is needed to build) or on
//! ferrocm's gfx942 emulator, which executes the same machine code on the CPU.
//!
//! ```no_run
//! use ferrocm::{Device, ops};
//! let dev = Device::new()?; // HIP if a GPU is present, else the emulator
//! let x = dev.from_slice(&[1.0f32, 2.0, 3.0])?;
//! let mut y = dev.from_slice(&[10.0f32, 20.0, 30.0])?;
//! ops::basic::saxpy(2.0, &x, &mut y)?;
//! assert_eq!(y.to_vec()?, vec![12.0, 24.0, 36.0]);
//! # Ok::<(), ferrocm::Error>(())
//! ```
//!
//! Layers: the runtime — [`Device`] (backend selection, kernel launches), [`Stream`] and
//! [`Event`] (queues and their ordering), [`MemoryPool`] (caching allocator), [`Buffer`] and
//! [`PinnedBuffer`] (device and page-locked host memory); [`Tensor`] (shape, strides, dtype) and
//! [`Operands`] (tensors lowered to kernel pointers, kept alive while launches use them);
//! [`ops`] (validated tensor operations); [`reference`](mod@reference) (CPU definitions of every
//! op); [`io`] (model files to the device: safetensors, GGUF); [`hip`] and `emulator` (what
//! only one backend has).
//!
//! Features: `emulator` (default) adds the gfx942 emulator backend and [`Device::new`]'s fallback
//! to it; `build-from-source` builds the code objects from the device crate's sources with its
//! pinned nightly instead of using the prebuilt ones the package carries.
#![warn(missing_docs)]

mod backend;

pub mod code_objects;

mod dtype;
mod error;
pub mod io;
pub mod ops;
pub mod quant;
pub mod reference;
mod runtime;
mod tensor;

pub use backend::{BackendKind, DeviceInfo, MI300X_CUS};
pub use dtype::{DType, Element, Fp8E4M3Fnuz, Fp8E5M2Fnuz};
pub use error::{CodeObjectError, Error, ModelFileError, Result};
pub use runtime::buffer::{ALLOC_SLACK, Buffer, RawBuffer};
pub use runtime::device::{Device, EMULATED_ARCH};
pub use runtime::event::Event;
pub use runtime::launch::{LDS_LIMIT_BYTES, LaunchConfig};
pub use runtime::pinned::PinnedBuffer;
pub use runtime::pool::{MemoryPool, PoolStats};
pub use runtime::stream::{Stream, StreamGuard};
pub use tensor::{Operands, Tensor, contiguous_strides, u32_of};

/// Code object parsing (the `ferrocm-codeobj` crate): what [`Device::code_object`] returns.
pub use ferrocm_codeobj as codeobj;
/// The kernel ABI shared with the device crate: argument structs, typed kernel handles, pointers.
pub use ferrocm_device::abi;
/// Declares a kernel argument struct (see [`abi`]); re-exported for out-of-tree kernels and tests.
pub use ferrocm_device::kernel_abi;
pub use half::{bf16, f16};

/// What only the HIP backend has: its device type, how the runtime library is found.
pub mod hip {
    pub use crate::backend::hip::{HIP_LIBRARY_CANDIDATES, HipDevice, device_count, open_runtime};
}

/// What only the emulator backend has (the `emulator` feature, on by default): its device type
/// ([`Device::as_emulator`]) with the counters of each launch, profiling, and modeled MI300X time.
///
/// The statistics types below are the emulator's own (the `ferrocm-emu` crate), re-exported as
/// what this API returns; tools that need more of the emulator (its decoder, the cycle model's
/// internals) depend on `ferrocm-emu` directly.
#[cfg(feature = "emulator")]
pub mod emulator {
    pub use crate::backend::emulator::{EmulatorDevice, LaunchShapes, ProfiledLaunch, Profiling};
    pub use ferrocm_emu::exec::report::{counters_json, launch_json};
    pub use ferrocm_emu::exec::{Counters, Counting, GlobalCounters, LdsCounters, Trace};
    pub use ferrocm_emu::model::{Bottleneck, ModelError, Modeled};
    pub use ferrocm_emu::{LaunchParams, LaunchStats, Module};
}
