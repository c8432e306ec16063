//! Raw HIP runtime API: types, constants and a table of function pointers resolved from
//! libamdhip64 at run time (nothing of ROCm is needed to build ferrocm).
//!
//! Signatures and values follow ROCm 6's `hip_runtime_api.h`.
#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `hipError_t`.
pub type hipError_t = c_int;
/// `hipSuccess`.
pub const HIP_SUCCESS: hipError_t = 0;
/// `hipErrorNoDevice`.
pub const HIP_ERROR_NO_DEVICE: hipError_t = 100;
/// `hipErrorOutOfMemory`.
pub const HIP_ERROR_OUT_OF_MEMORY: hipError_t = 2;
/// `hipErrorNotReady`: not an error, "the queued work has not completed yet" (event/stream queries).
pub const HIP_ERROR_NOT_READY: hipError_t = 600;

/// `hipStreamNonBlocking`: the stream does not synchronise with the legacy null stream.
pub const HIP_STREAM_NON_BLOCKING: c_uint = 0x1;
/// `hipEventDefault`.
pub const HIP_EVENT_DEFAULT: c_uint = 0x0;
/// `hipEventDisableTiming`: an event that only orders and signals completion (cheaper).
pub const HIP_EVENT_DISABLE_TIMING: c_uint = 0x2;
/// `hipHostMallocDefault`.
pub const HIP_HOST_MALLOC_DEFAULT: c_uint = 0x0;

/// Opaque handles.
pub type hipStream_t = *mut c_void;
/// Event handle.
pub type hipEvent_t = *mut c_void;
/// Loaded code object.
pub type hipModule_t = *mut c_void;
/// Kernel in a loaded module.
pub type hipFunction_t = *mut c_void;
/// Device address.
pub type hipDeviceptr_t = *mut c_void;

/// `hipMemcpyKind`.
pub type hipMemcpyKind = c_int;
/// Host to device.
pub const HIP_MEMCPY_HOST_TO_DEVICE: hipMemcpyKind = 1;
/// Device to host.
pub const HIP_MEMCPY_DEVICE_TO_HOST: hipMemcpyKind = 2;
/// Device to device.
pub const HIP_MEMCPY_DEVICE_TO_DEVICE: hipMemcpyKind = 3;

/// `extra` keys of `hipModuleLaunchKernel`: the packed kernarg buffer, its size, the end marker.
pub const HIP_LAUNCH_PARAM_BUFFER_POINTER: *mut c_void = 1 as *mut c_void;
/// See [`HIP_LAUNCH_PARAM_BUFFER_POINTER`].
pub const HIP_LAUNCH_PARAM_BUFFER_SIZE: *mut c_void = 2 as *mut c_void;
/// See [`HIP_LAUNCH_PARAM_BUFFER_POINTER`].
pub const HIP_LAUNCH_PARAM_END: *mut c_void = 3 as *mut c_void;

/// `hipDeviceProp_tR0600` (ROCm 6.0+), field for field. Groups of same-typed fields are arrays;
/// `gcnArchName` must land at offset 1168, which a unit test checks.
#[repr(C)]
pub struct hipDeviceProp_tR0600 {
    pub name: [c_char; 256],
    pub uuid: [u8; 16],
    pub luid: [c_char; 8],
    pub luidDeviceNodeMask: c_uint,
    pub totalGlobalMem: usize,
    pub sharedMemPerBlock: usize,
    pub regsPerBlock: c_int,
    pub warpSize: c_int,
    pub memPitch: usize,
    pub maxThreadsPerBlock: c_int,
    pub maxThreadsDim: [c_int; 3],
    pub maxGridSize: [c_int; 3],
    pub clockRate: c_int,
    pub totalConstMem: usize,
    pub major: c_int,
    pub minor: c_int,
    pub textureAlignment: usize,
    pub texturePitchAlignment: usize,
    pub deviceOverlap: c_int,
    pub multiProcessorCount: c_int,
    /// kernelExecTimeoutEnabled .. maxTexture1DLinear (7 ints), then the 38 ints of texture and
    /// surface limits (maxTexture2D[2] .. maxSurfaceCubemapLayered[2]).
    pub ints_a: [c_int; 45],
    pub surfaceAlignment: usize,
    /// concurrentKernels .. localL1CacheSupported (16 ints).
    pub ints_b: [c_int; 16],
    pub sharedMemPerMultiprocessor: usize,
    /// regsPerMultiprocessor .. cooperativeMultiDeviceLaunch (12 ints).
    pub ints_c: [c_int; 12],
    pub sharedMemPerBlockOptin: usize,
    /// pageableMemoryAccessUsesHostPageTables .. accessPolicyMaxWindowSize (4 ints).
    pub ints_d: [c_int; 4],
    pub reservedSharedMemPerBlock: usize,
    /// hostRegisterSupported .. unifiedFunctionPointers (13 4-byte fields).
    pub ints_e: [c_int; 13],
    pub reserved: [c_int; 63],
    pub hipReserved: [c_int; 32],
    pub gcnArchName: [c_char; 256],
    pub maxSharedMemoryPerMultiProcessor: usize,
    pub clockInstructionRate: c_int,
    pub arch: c_uint,
    pub hdpMemFlushCntl: *mut c_uint,
    pub hdpRegFlushCntl: *mut c_uint,
    pub cooperativeMultiDeviceUnmatched: [c_int; 4],
    pub isLargeBar: c_int,
    pub asicRevision: c_int,
    /// Room for fields a newer runtime may append (the runtime writes its own struct size).
    pub future: [u8; 1024],
}

macro_rules! hip_api {
    ($( $field:ident = $sym:literal : fn($($arg:ty),*) -> $ret:ty; )*) => {
        /// The HIP functions ferrocm calls, resolved from one opened libamdhip64.
        pub struct HipApi {
            /// Keeps the library mapped while the pointers are used.
            _lib: libloading::Library,
            /// The library path or name that was opened.
            pub library: String,
            $( #[doc = $sym] pub $field: unsafe extern "C" fn($($arg),*) -> $ret, )*
        }

        impl HipApi {
            /// Resolves every function; the first missing one is reported by name.
            ///
            /// # Safety
            /// `lib` must be a HIP runtime whose exports have the signatures above.
            pub unsafe fn resolve(lib: libloading::Library, library: String) -> Result<HipApi, &'static str> {
                $(
                    let $field = unsafe {
                        *lib.get::<unsafe extern "C" fn($($arg),*) -> $ret>(concat!($sym, "\0").as_bytes())
                            .map_err(|_| $sym)?
                    };
                )*
                Ok(HipApi { _lib: lib, library, $( $field, )* })
            }
        }
    };
}

hip_api! {
    hipInit = "hipInit": fn(c_uint) -> hipError_t;
    hipGetErrorString = "hipGetErrorString": fn(hipError_t) -> *const c_char;
    hipRuntimeGetVersion = "hipRuntimeGetVersion": fn(*mut c_int) -> hipError_t;
    hipGetDeviceCount = "hipGetDeviceCount": fn(*mut c_int) -> hipError_t;
    hipSetDevice = "hipSetDevice": fn(c_int) -> hipError_t;
    hipGetDevicePropertiesR0600 = "hipGetDevicePropertiesR0600": fn(*mut hipDeviceProp_tR0600, c_int) -> hipError_t;
    hipDeviceSynchronize = "hipDeviceSynchronize": fn() -> hipError_t;
    hipMalloc = "hipMalloc": fn(*mut *mut c_void, usize) -> hipError_t;
    hipFree = "hipFree": fn(*mut c_void) -> hipError_t;
    hipMemcpyAsync = "hipMemcpyAsync": fn(*mut c_void, *const c_void, usize, hipMemcpyKind, hipStream_t) -> hipError_t;
    hipMemsetD8Async = "hipMemsetD8Async": fn(hipDeviceptr_t, u8, usize, hipStream_t) -> hipError_t;
    hipMemGetInfo = "hipMemGetInfo": fn(*mut usize, *mut usize) -> hipError_t;
    hipHostMalloc = "hipHostMalloc": fn(*mut *mut c_void, usize, c_uint) -> hipError_t;
    hipHostFree = "hipHostFree": fn(*mut c_void) -> hipError_t;
    hipStreamCreateWithFlags = "hipStreamCreateWithFlags": fn(*mut hipStream_t, c_uint) -> hipError_t;
    hipStreamDestroy = "hipStreamDestroy": fn(hipStream_t) -> hipError_t;
    hipStreamSynchronize = "hipStreamSynchronize": fn(hipStream_t) -> hipError_t;
    hipStreamWaitEvent = "hipStreamWaitEvent": fn(hipStream_t, hipEvent_t, c_uint) -> hipError_t;
    hipEventCreateWithFlags = "hipEventCreateWithFlags": fn(*mut hipEvent_t, c_uint) -> hipError_t;
    hipEventDestroy = "hipEventDestroy": fn(hipEvent_t) -> hipError_t;
    hipEventRecord = "hipEventRecord": fn(hipEvent_t, hipStream_t) -> hipError_t;
    hipEventQuery = "hipEventQuery": fn(hipEvent_t) -> hipError_t;
    hipEventSynchronize = "hipEventSynchronize": fn(hipEvent_t) -> hipError_t;
    hipEventElapsedTime = "hipEventElapsedTime": fn(*mut f32, hipEvent_t, hipEvent_t) -> hipError_t;
    hipModuleLoadData = "hipModuleLoadData": fn(*mut hipModule_t, *const c_void) -> hipError_t;
    hipModuleUnload = "hipModuleUnload": fn(hipModule_t) -> hipError_t;
    hipModuleGetFunction = "hipModuleGetFunction": fn(*mut hipFunction_t, hipModule_t, *const c_char) -> hipError_t;
    hipModuleLaunchKernel = "hipModuleLaunchKernel": fn(
        hipFunction_t, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, hipStream_t,
        *mut *mut c_void, *mut *mut c_void
    ) -> hipError_t;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_prop_layout_matches_rocm6() {
        assert_eq!(std::mem::offset_of!(hipDeviceProp_tR0600, totalGlobalMem), 288);
        assert_eq!(std::mem::offset_of!(hipDeviceProp_tR0600, multiProcessorCount), 388);
        assert_eq!(std::mem::offset_of!(hipDeviceProp_tR0600, surfaceAlignment), 576);
        assert_eq!(std::mem::offset_of!(hipDeviceProp_tR0600, sharedMemPerMultiprocessor), 648);
        assert_eq!(std::mem::offset_of!(hipDeviceProp_tR0600, reservedSharedMemPerBlock), 728);
        assert_eq!(std::mem::offset_of!(hipDeviceProp_tR0600, gcnArchName), 1168);
    }
}
