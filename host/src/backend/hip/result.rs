//! HIP status codes -> [`Error`]: every call site names the function, and the message comes from
//! `hipGetErrorString`.

use super::sys::{HIP_ERROR_OUT_OF_MEMORY, HIP_SUCCESS, HipApi, hipError_t};
use crate::error::{Error, Result};
use std::ffi::CStr;

/// `Ok(())` for hipSuccess, else the named error with the runtime's description.
pub fn check(api: &HipApi, call: &'static str, code: hipError_t) -> Result<()> {
    if code == HIP_SUCCESS {
        return Ok(());
    }
    // SAFETY: hipGetErrorString returns a static NUL-terminated string (or null).
    let message = unsafe {
        let p = (api.hipGetErrorString)(code);
        if p.is_null() { "unknown error".to_string() } else { CStr::from_ptr(p).to_string_lossy().into_owned() }
    };
    Err(Error::Hip { call, code, message })
}

/// As [`check`], mapping hipErrorOutOfMemory of an allocation to [`Error::OutOfMemory`].
pub fn check_alloc(api: &HipApi, code: hipError_t, bytes: u64) -> Result<()> {
    if code == HIP_ERROR_OUT_OF_MEMORY {
        return Err(Error::OutOfMemory { bytes });
    }
    check(api, "hipMalloc", code)
}
