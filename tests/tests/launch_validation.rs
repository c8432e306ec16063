//! Every bad launch is refused before anything runs, each with its own error.

use ferrocm::abi::smoke::{FILL_U32, FillArgs, SAXPY_F32, SaxpyArgs};
use ferrocm::abi::{DevPtr, Kernel, PtrMut};
use ferrocm::{Device, Error, LaunchConfig};

fn dev() -> Device {
    Device::emulator().unwrap()
}

fn fill_args(d: &Device) -> FillArgs {
    let buf = d.zeros::<u32>(16).unwrap();
    FillArgs { dst: buf.as_ptr(), value: 7, n: 16 }
}

ferrocm::kernel_abi! {
    /// Same size as FillArgs, fields in another order: must be caught field by field.
    pub struct ShuffledFill {
        /// The value (where FillArgs has the pointer).
        pub value: u32,
        /// The count.
        pub n: u32,
        /// The destination.
        pub dst: PtrMut<u32>,
    }
    kernels {
        /// Names the real fill kernel with the wrong struct.
        SHUFFLED_FILL = "fill_u32",
    }
}

#[test]
fn a_kernel_missing_from_the_code_object() {
    let d = dev();
    let k = Kernel::<FillArgs>::new("no_such_kernel");
    let err = d.validate_launch(k, &LaunchConfig::linear(1, 64)).unwrap_err();
    assert!(matches!(err, Error::KernelNotFound { ref kernel, .. } if kernel == "no_such_kernel"), "{err}");
}

#[test]
fn an_argument_struct_of_the_wrong_size() {
    let d = dev();
    let k = Kernel::<SaxpyArgs>::new(FILL_U32.name());
    let err = d.validate_launch(k, &LaunchConfig::linear(1, 64)).unwrap_err();
    assert!(matches!(err, Error::KernargSizeMismatch { struct_size: 24, expected: 16, .. }), "{err}");
}

#[test]
fn an_argument_struct_with_fields_in_the_wrong_place() {
    let d = dev();
    let err = d.validate_launch(SHUFFLED_FILL, &LaunchConfig::linear(1, 64)).unwrap_err();
    assert!(matches!(err, Error::KernargLayoutMismatch { field: "value", offset: 0, size: 4, .. }), "{err}");
}

#[test]
fn a_block_larger_than_the_kernel_allows() {
    let d = dev();
    // fill_u32 is compiled for workgroups of at most 256 work-items (its declared bound).
    assert_eq!(FILL_U32.max_threads(), 256);
    let cfg = LaunchConfig { grid: [1, 1, 1], block: [64, 8, 1], dynamic_lds_bytes: 0 };
    let err = d.validate_launch(FILL_U32, &cfg).unwrap_err();
    assert!(matches!(err, Error::BlockTooLarge { threads: 512, max: 256, .. }), "{err}");
    let args = fill_args(&d);
    // SAFETY: refused before anything runs.
    let err = unsafe { d.launch(FILL_U32, cfg, &args) }.unwrap_err();
    assert!(matches!(err, Error::BlockTooLarge { .. }), "{err}");
}

#[test]
fn a_block_whose_volume_wraps_is_too_large() {
    let d = dev();
    // 2^31 * 2^31 * 4 = 2^64: wrapped to 0 work-items, passed validation and "ran" nothing.
    let cfg = LaunchConfig { grid: [1, 1, 1], block: [1 << 31, 1 << 31, 4], dynamic_lds_bytes: 0 };
    let err = d.validate_launch(FILL_U32, &cfg).unwrap_err();
    assert!(matches!(err, Error::BlockTooLarge { threads: u64::MAX, max: 256, .. }), "{err}");
    let cfg = LaunchConfig { grid: [1, 1, 1], block: [1 << 16, 1 << 16, 1 << 16], dynamic_lds_bytes: 0 };
    assert!(matches!(d.validate_launch(FILL_U32, &cfg).unwrap_err(), Error::BlockTooLarge { .. }));
    let args = fill_args(&d);
    // SAFETY: refused before anything runs.
    assert!(matches!(unsafe { d.launch(FILL_U32, cfg, &args) }.unwrap_err(), Error::BlockTooLarge { .. }));
}

#[test]
fn a_block_with_a_zero_dimension() {
    let d = dev();
    let cfg = LaunchConfig { grid: [1, 1, 1], block: [64, 0, 1], dynamic_lds_bytes: 0 };
    assert!(matches!(d.validate_launch(FILL_U32, &cfg).unwrap_err(), Error::EmptyBlock { .. }));
}

#[test]
fn more_lds_than_a_workgroup_has() {
    let d = dev();
    let ok = LaunchConfig::linear(1, 64).with_lds(64 * 1024);
    d.validate_launch(FILL_U32, &ok).unwrap();
    let cfg = LaunchConfig::linear(1, 64).with_lds(64 * 1024 + 1);
    let err = d.validate_launch(FILL_U32, &cfg).unwrap_err();
    assert!(matches!(err, Error::LdsTooLarge { dynamic_lds: 65537, limit: 65536, .. }), "{err}");
}

#[test]
fn an_empty_grid() {
    let d = dev();
    let cfg = LaunchConfig::linear(0, 64);
    assert!(matches!(d.validate_launch(FILL_U32, &cfg).unwrap_err(), Error::EmptyGrid { .. }));
    let args = fill_args(&d);
    // SAFETY: refused before anything runs.
    assert!(matches!(unsafe { d.launch(FILL_U32, cfg, &args) }.unwrap_err(), Error::EmptyGrid { .. }));
}

#[test]
fn a_grid_beyond_32_bit_work_item_counts() {
    let d = dev();
    let cfg = LaunchConfig::linear(u32::MAX / 64 + 1, 64);
    assert!(matches!(d.validate_launch(FILL_U32, &cfg).unwrap_err(), Error::GridTooLarge { .. }));
}

#[test]
fn a_valid_launch_passes_validation() {
    let d = dev();
    let info = d.validate_launch(SAXPY_F32, &LaunchConfig::linear(4, 256)).unwrap();
    assert_eq!(info.meta.name, "saxpy_f32");
    let _unused: DevPtr<u32> = DevPtr::NULL;
}
