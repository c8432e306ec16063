//! What only the HIP backend does, checked when the suite runs on it: through the HIP test
//! double in CI (`cargo xtask test` runs this suite with `FERROCM_BACKEND=hip` and
//! `FERROCM_HIP_LIBRARY` naming `libferrocm_hip_shim.so`), or on a real GPU. On the emulator the
//! tests say so and check nothing.

use ferrocm::abi::DevPtr;
use ferrocm::abi::smoke::{SAXPY_F32, STREAM_BLOCK, SaxpyArgs};
use ferrocm::{BackendKind, Error, LaunchConfig};
use ferrocm_tests::device;

fn on_hip() -> bool {
    let hip = device().backend() == BackendKind::Hip;
    if !hip {
        eprintln!("not on the HIP backend: nothing to check here (cargo xtask test runs this suite on the HIP test double)");
    }
    hip
}

/// hipDeviceProp_tR0600 read at the right offsets: the double writes each field by its ROCm 6
/// offset, independently of ferrocm's struct definition.
#[test]
fn device_properties_come_through_the_rocm6_struct() {
    if !on_hip() {
        return;
    }
    let dev = device();
    let info = dev.info();
    assert_eq!(info.arch, "gfx942");
    assert!(info.target_id.starts_with("gfx942:"), "{}", info.target_id);
    assert!(info.compute_units > 0 && info.max_threads_per_block >= 256 && info.total_memory > 0, "{info:?}");
    let hip = dev.as_hip().expect("a HIP device");
    if hip.library().contains("ferrocm_hip_shim") {
        assert_eq!((info.compute_units, info.clock_mhz, info.max_threads_per_block), (304, 2100, 1024), "{info:?}");
        assert!(info.name.contains("test double"), "{}", info.name);
    }
    assert!(hip.runtime_version().unwrap() >= 60_000_000);
}

/// A kernel fault is reported asynchronously, by the next synchronising call, as a typed HIP
/// error naming the call; the device stays usable afterwards (on the test double, which clears
/// the error once reported; a real GPU may need a restart of the process).
#[test]
fn an_asynchronous_fault_surfaces_at_the_next_synchronisation() {
    if !on_hip() {
        return;
    }
    let dev = device();
    if !dev.as_hip().unwrap().library().contains("ferrocm_hip_shim") {
        eprintln!("a real GPU: not faulting it on purpose");
        return;
    }
    let s = dev.new_stream().unwrap();
    let _on = s.enter();
    let y = dev.from_slice(&[0.0f32; 64]).unwrap();
    // x points nowhere: the kernel's first load faults on the device, after the launch returned.
    let args = SaxpyArgs { x: DevPtr::from_addr(0x10), y: y.as_ptr(), a: 1.0, n: 64 };
    // SAFETY: deliberately invalid for the device, never for the host: the fault stays inside the
    // (emulated) GPU.
    unsafe { dev.launch(SAXPY_F32, LaunchConfig::for_items(64, STREAM_BLOCK), &args) }.expect("the launch itself is accepted");
    match s.synchronize() {
        Err(Error::Hip { call, code, .. }) => {
            assert_eq!(call, "hipStreamSynchronize");
            assert_eq!(code, 700, "hipErrorIllegalAddress");
        }
        other => panic!("expected the fault at synchronisation, got {other:?}"),
    }
    // Still usable.
    let z = dev.from_slice(&[1.0f32, 2.0]).unwrap();
    assert_eq!(z.to_vec().unwrap(), vec![1.0, 2.0]);
}
