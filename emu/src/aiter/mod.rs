//! AMD's hand-written gfx942 assembly kernels from AITER, run on the emulator.
//!
//! AITER ("AI Tensor Engine for ROCm") ships its assembly kernels as finished code objects in the
//! PyPI wheel `amd-aiter` ([`WHEEL_VERSION`]): `aiter_meta/hsa/gfx942/<family>/*.co`, with the
//! host code that launches them in `aiter_meta/csrc/py_itfs_cu/*.cu` and the MI300X/MI308X
//! times AMD measured for them in `aiter/configs/*tuned*.csv`. This module knows, per family, how
//! those host sources lay out a kernel's arguments and size its grid (read from the wheel's
//! sources and the kernels' metadata; no AITER code is copied), so the same launches run here:
//!
//! - [`gemm`]: the bf16 GEMMs (`bf16gemm`, f32 out, split-K by atomics) and the int8 GEMMs
//!   (`i8gemm`, per-token scales, pre-shuffled B);
//! - [`fmha`]: flash-attention forward v3 (`fmha_v3_fwd`, head dim 128, bf16, causal or not,
//!   GQA, the log-sum-exp output);
//! - [`moe`]: the fused mixture-of-experts stages (`fmoe_2stages` stage 1, the one-stage `fmoe`),
//!   with AITER's token sorting;
//! - [`tuned`]: the tuned-config tables and their measured times (the model's calibration data).
//!
//! The wheel is not part of this repository: [`Wheel::locate`] finds an extracted copy
//! (`cargo xtask aiter fetch` makes one; CI caches it) and says how to get one when there is none.

pub mod calibrate;
pub mod fmha;
pub mod gemm;
pub mod moe;
pub mod tuned;
mod wheel;

pub use wheel::{WHEEL_VERSION, Wheel, WheelError};

/// One launch of an AITER kernel, as its host code would make it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The kernel's symbol (AITER names them `_ZN5aiter<len><name>E`).
    pub kernel: String,
    /// Workgroups along x, y, z.
    pub grid: [u32; 3],
    /// Work-items per workgroup.
    pub block: [u32; 3],
    /// The kernel's argument struct, as bytes.
    pub kernargs: Vec<u8>,
}

impl Launch {
    /// The emulator's launch parameters (AITER's kernels use no launch-sized LDS).
    pub fn params(&self) -> crate::LaunchParams {
        crate::LaunchParams { grid: self.grid, block: self.block, dynamic_lds: 0, kernargs: self.kernargs.clone() }
    }

    /// Workgroups in the grid.
    pub fn workgroups(&self) -> u64 {
        self.grid.iter().map(|&g| g as u64).product()
    }
}

/// The symbol AITER's loaders look up for a kernel called `name` (`AiterAsmKernel`,
/// `fmha_fwd_v3_kernel`: `"_ZN5aiter" + strlen(name) + name + "E"`).
pub fn symbol(name: &str) -> String {
    format!("_ZN5aiter{}{name}E", name.len())
}

/// AITER's kernel argument structs: `__attribute__((packed))`, every pointer followed by 8 bytes
/// of padding (`p2`) and every 32-bit scalar by 12 (`p3`), so each field takes 16 bytes (the
/// wheel's `py_itfs_cu/*.cu`; the kernels' metadata lists the same offsets).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args(Vec<u8>);

impl Args {
    /// No fields yet.
    pub fn new() -> Args {
        Args(Vec::with_capacity(512))
    }

    /// A pointer field.
    pub fn ptr(mut self, p: u64) -> Args {
        self.0.extend_from_slice(&p.to_le_bytes());
        self.0.extend_from_slice(&[0; 8]);
        self
    }

    /// An unsigned 32-bit field.
    pub fn u32(mut self, v: u32) -> Args {
        self.0.extend_from_slice(&v.to_le_bytes());
        self.0.extend_from_slice(&[0; 12]);
        self
    }

    /// An f32 field.
    pub fn f32(self, v: f32) -> Args {
        self.u32(v.to_bits())
    }

    /// The bytes.
    pub fn bytes(self) -> Vec<u8> {
        self.0
    }
}
