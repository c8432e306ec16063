//! ferrocm device crate: GPU kernels written in plain Rust for AMD Instinct GPUs.
//!
//! The crate is compiled twice:
//! - for `amdgcn-amd-amdhsa` (by `cargo xtask build`): `dsl`, `tile` and `kernels` are compiled and
//!   every kernel declared in [`abi`] is bound to its body in `kernels` as an `extern "gpu-kernel"`
//!   entry point of the code object;
//! - for the host as an ordinary library: only [`abi`] is compiled, so the host packs exactly the
//!   argument structs the kernels read. A host/device mismatch is a compile error.
//!
//! Adding a kernel: declare its argument struct and entry symbol with [`kernel_abi!`] in a file under
//! `abi/`, write the body in `kernels/` and bind it in its family's `entries.rs`, and add a host op
//! that builds the struct.
#![no_std]
#![cfg_attr(
    target_arch = "amdgpu",
    feature(
        abi_gpu_kernel,
        stdarch_amdgpu,
        link_llvm_intrinsics,
        abi_unadjusted,
        repr_simd,
        simd_ffi,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem,
        f16
    )
)]
#![cfg_attr(target_arch = "amdgpu", allow(internal_features, improper_ctypes))]
#![warn(missing_docs)]

// `macro_use`: the binding macros `kernel_abi!` defines on amdgpu reach `kernels`.
#[macro_use]
pub mod abi;

pub mod num;

#[cfg(target_arch = "amdgpu")]
pub mod dsl;

#[cfg(target_arch = "amdgpu")]
pub mod tile;

#[cfg(target_arch = "amdgpu")]
pub mod kernels;

/// A kernel that panics (index out of bounds, an assertion) traps: `s_trap 2` on the hardware,
/// which HIP reports as a failed launch and the emulator as a trap error naming the pc.
#[cfg(target_arch = "amdgpu")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::intrinsics::abort()
}
