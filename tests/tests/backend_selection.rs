//! Backend selection and the HIP backend on a machine without ROCm.
//!
//! One test function, because it changes process environment variables.

use ferrocm::{BackendKind, Device, Error};

fn rocm_present() -> bool {
    ferrocm::hip::open_runtime(ferrocm::hip::HIP_LIBRARY_CANDIDATES).is_ok()
}

#[test]
fn backend_selection_rules() {
    // SAFETY: this test binary has a single test, so no other thread reads the environment.
    unsafe {
        std::env::remove_var("FERROCM_BACKEND");
        std::env::remove_var("FERROCM_HIP_LIBRARY");
    }
    if rocm_present() {
        eprintln!("ROCm is installed here: the HIP-absent checks do not apply");
    } else {
        // Without ROCm: HIP is a clean "not found", the default device is the emulator.
        let err = Device::hip(0).unwrap_err();
        assert!(matches!(err, Error::HipNotFound { .. }), "{err}");
        assert!(err.to_string().starts_with("HIP runtime not found"), "{err}");
        assert_eq!(Device::new().unwrap().backend(), BackendKind::Emulator);
        // SAFETY: as above.
        unsafe { std::env::set_var("FERROCM_BACKEND", "hip") };
        assert!(matches!(Device::new().unwrap_err(), Error::HipNotFound { .. }));
    }
    // SAFETY: as above.
    unsafe { std::env::set_var("FERROCM_HIP_LIBRARY", "/nonexistent/libamdhip64.so") };
    let err = ferrocm::hip::device_count().unwrap_err();
    assert!(matches!(err, Error::HipNotFound { ref tried, .. } if tried.contains("/nonexistent/")), "{err}");
    // SAFETY: as above.
    unsafe { std::env::set_var("FERROCM_BACKEND", "emu") };
    assert_eq!(Device::new().unwrap().backend(), BackendKind::Emulator);
    // SAFETY: as above.
    unsafe { std::env::set_var("FERROCM_BACKEND", "cuda") };
    assert!(matches!(Device::new().unwrap_err(), Error::BadBackendVariable { ref value } if value == "cuda"));
    // SAFETY: as above.
    unsafe {
        std::env::remove_var("FERROCM_BACKEND");
        std::env::remove_var("FERROCM_HIP_LIBRARY");
    }
}
