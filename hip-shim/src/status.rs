//! `hipError_t` values (ROCm 6's `hip_runtime_api.h`) and their `hipGetErrorString` texts.

use std::ffi::{c_char, c_int};

/// `hipError_t`.
pub type HipError = c_int;

pub const SUCCESS: HipError = 0;
pub const INVALID_VALUE: HipError = 1;
pub const OUT_OF_MEMORY: HipError = 2;
pub const NOT_INITIALIZED: HipError = 3;
pub const INVALID_CONFIGURATION: HipError = 9;
pub const INVALID_DEVICE_POINTER: HipError = 17;
pub const INVALID_MEMCPY_DIRECTION: HipError = 21;
pub const INVALID_DEVICE_FUNCTION: HipError = 98;
pub const INVALID_DEVICE: HipError = 101;
pub const INVALID_IMAGE: HipError = 200;
pub const INVALID_HANDLE: HipError = 400;
pub const NOT_FOUND: HipError = 500;
pub const NOT_READY: HipError = 600;
pub const ILLEGAL_ADDRESS: HipError = 700;
pub const LAUNCH_FAILURE: HipError = 719;

/// The static description of `code` (NUL-terminated).
pub fn describe(code: HipError) -> *const c_char {
    let s: &'static [u8] = match code {
        SUCCESS => b"no error\0",
        INVALID_VALUE => b"invalid argument\0",
        OUT_OF_MEMORY => b"out of memory\0",
        NOT_INITIALIZED => b"initialization error\0",
        INVALID_CONFIGURATION => b"invalid configuration argument\0",
        INVALID_DEVICE_POINTER => b"invalid device pointer\0",
        INVALID_MEMCPY_DIRECTION => b"invalid copy direction for memcpy\0",
        INVALID_DEVICE_FUNCTION => b"invalid device function\0",
        INVALID_DEVICE => b"invalid device ordinal\0",
        INVALID_IMAGE => b"device kernel image is invalid\0",
        INVALID_HANDLE => b"invalid resource handle\0",
        NOT_FOUND => b"named symbol not found\0",
        NOT_READY => b"device not ready\0",
        ILLEGAL_ADDRESS => b"an illegal memory access was encountered\0",
        LAUNCH_FAILURE => b"unspecified launch failure\0",
        _ => b"unknown error\0",
    };
    s.as_ptr() as *const c_char
}
