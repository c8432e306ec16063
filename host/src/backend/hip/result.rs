//! One function per HIP call: status code -> [`Error`] (cudarc's `result` layer).
//!
//! Every error names the HIP function, and its message comes from `hipGetErrorString`. Functions
//! taking handles or pointers are `unsafe`: the handles must be live and the pointers valid for
//! the call, which the safe layer ([`super::HipDevice`]) guarantees.

use super::sys::{self, HIP_ERROR_NOT_READY, HIP_ERROR_OUT_OF_MEMORY, HIP_SUCCESS, HipApi, hipError_t};
use crate::error::{Error, Result};
use std::ffi::{CStr, CString, c_int, c_void};

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

/// `hipInit(0)`.
pub fn init(api: &HipApi) -> Result<()> {
    // SAFETY: plain call with a flags value of 0.
    check(api, "hipInit", unsafe { (api.hipInit)(0) })
}

/// `hipGetDeviceCount`; 0 (not an error) when the runtime reports hipErrorNoDevice.
pub fn device_count(api: &HipApi) -> Result<usize> {
    let mut n: c_int = 0;
    // SAFETY: out-pointer to a local.
    let code = unsafe { (api.hipGetDeviceCount)(&mut n) };
    if code == sys::HIP_ERROR_NO_DEVICE {
        return Ok(0);
    }
    check(api, "hipGetDeviceCount", code)?;
    Ok(n.max(0) as usize)
}

/// `hipSetDevice`: HIP's current device is per thread.
pub fn set_device(api: &HipApi, ordinal: c_int) -> Result<()> {
    // SAFETY: plain call.
    check(api, "hipSetDevice", unsafe { (api.hipSetDevice)(ordinal) })
}

/// `hipGetDevicePropertiesR0600`.
pub fn device_properties(api: &HipApi, ordinal: c_int) -> Result<Box<sys::hipDeviceProp_tR0600>> {
    // SAFETY: an all-zero hipDeviceProp_tR0600 is valid (integers, arrays, null pointers).
    let mut props: Box<sys::hipDeviceProp_tR0600> = Box::new(unsafe { std::mem::zeroed() });
    // SAFETY: the struct is writable and at least as large as ROCm 6's.
    check(api, "hipGetDevicePropertiesR0600", unsafe { (api.hipGetDevicePropertiesR0600)(&mut *props, ordinal) })?;
    Ok(props)
}

/// `hipRuntimeGetVersion`.
pub fn runtime_version(api: &HipApi) -> Result<i32> {
    let mut v = 0;
    // SAFETY: out-pointer to a local.
    check(api, "hipRuntimeGetVersion", unsafe { (api.hipRuntimeGetVersion)(&mut v) })?;
    Ok(v)
}

/// `hipDeviceSynchronize`.
pub fn device_synchronize(api: &HipApi) -> Result<()> {
    // SAFETY: plain call.
    check(api, "hipDeviceSynchronize", unsafe { (api.hipDeviceSynchronize)() })
}

/// `hipMalloc`; hipErrorOutOfMemory becomes [`Error::OutOfMemory`] with the free bytes.
pub fn malloc(api: &HipApi, bytes: u64) -> Result<u64> {
    let mut p = std::ptr::null_mut();
    // SAFETY: out-pointer to a local.
    let code = unsafe { (api.hipMalloc)(&mut p, bytes as usize) };
    if code == HIP_ERROR_OUT_OF_MEMORY {
        let free = mem_get_info(api).map(|(f, _)| f).unwrap_or(0);
        return Err(Error::OutOfMemory { requested: bytes, free });
    }
    check(api, "hipMalloc", code)?;
    Ok(p as u64)
}

/// `hipFree` (which waits for the device's queued work first).
///
/// # Safety
/// `addr` came from [`malloc`] and is freed once.
pub unsafe fn free(api: &HipApi, addr: u64) -> Result<()> {
    // SAFETY: per the contract.
    check(api, "hipFree", unsafe { (api.hipFree)(addr as *mut c_void) })
}

/// `hipMemGetInfo`: (free, total) bytes.
pub fn mem_get_info(api: &HipApi) -> Result<(u64, u64)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: out-pointers to locals.
    check(api, "hipMemGetInfo", unsafe { (api.hipMemGetInfo)(&mut free, &mut total) })?;
    Ok((free as u64, total as u64))
}

/// `hipHostMalloc` (page-locked host memory).
pub fn host_malloc(api: &HipApi, bytes: usize) -> Result<*mut c_void> {
    let mut p = std::ptr::null_mut();
    // SAFETY: out-pointer to a local.
    check(api, "hipHostMalloc", unsafe { (api.hipHostMalloc)(&mut p, bytes, sys::HIP_HOST_MALLOC_DEFAULT) })?;
    Ok(p)
}

/// `hipHostFree`.
///
/// # Safety
/// `p` came from [`host_malloc`] and no queued copy uses it.
pub unsafe fn host_free(api: &HipApi, p: *mut c_void) -> Result<()> {
    // SAFETY: per the contract.
    check(api, "hipHostFree", unsafe { (api.hipHostFree)(p) })
}

/// `hipMemcpyAsync`.
///
/// # Safety
/// `dst`/`src` are valid for `bytes` bytes of the memory `kind` names until `stream` passes the copy.
pub unsafe fn memcpy_async(
    api: &HipApi,
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    kind: sys::hipMemcpyKind,
    stream: sys::hipStream_t,
) -> Result<()> {
    // SAFETY: per the contract.
    check(api, "hipMemcpyAsync", unsafe { (api.hipMemcpyAsync)(dst, src, bytes, kind, stream) })
}

/// `hipMemsetD8Async`.
///
/// # Safety
/// `dst` is `bytes` bytes of device memory; `stream` is live.
pub unsafe fn memset_d8_async(api: &HipApi, dst: u64, value: u8, bytes: usize, stream: sys::hipStream_t) -> Result<()> {
    // SAFETY: per the contract.
    check(api, "hipMemsetD8Async", unsafe { (api.hipMemsetD8Async)(dst as *mut c_void, value, bytes, stream) })
}

/// `hipStreamCreateWithFlags(hipStreamNonBlocking)`: ferrocm's streams never synchronise with
/// the legacy null stream, which it does not use.
pub fn stream_create(api: &HipApi) -> Result<sys::hipStream_t> {
    let mut s = std::ptr::null_mut();
    // SAFETY: out-pointer to a local.
    check(api, "hipStreamCreateWithFlags", unsafe { (api.hipStreamCreateWithFlags)(&mut s, sys::HIP_STREAM_NON_BLOCKING) })?;
    Ok(s)
}

/// `hipStreamDestroy`.
///
/// # Safety
/// `s` is live and not used again.
pub unsafe fn stream_destroy(api: &HipApi, s: sys::hipStream_t) -> Result<()> {
    // SAFETY: per the contract.
    check(api, "hipStreamDestroy", unsafe { (api.hipStreamDestroy)(s) })
}

/// `hipStreamSynchronize`.
///
/// # Safety
/// `s` is live.
pub unsafe fn stream_synchronize(api: &HipApi, s: sys::hipStream_t) -> Result<()> {
    // SAFETY: per the contract.
    check(api, "hipStreamSynchronize", unsafe { (api.hipStreamSynchronize)(s) })
}

/// `hipStreamWaitEvent(s, e, 0)`.
///
/// # Safety
/// Both handles are live.
pub unsafe fn stream_wait_event(api: &HipApi, s: sys::hipStream_t, e: sys::hipEvent_t) -> Result<()> {
    // SAFETY: per the contract.
    check(api, "hipStreamWaitEvent", unsafe { (api.hipStreamWaitEvent)(s, e, 0) })
}

/// `hipEventCreateWithFlags`, timing disabled unless `timing`.
pub fn event_create(api: &HipApi, timing: bool) -> Result<sys::hipEvent_t> {
    let mut e = std::ptr::null_mut();
    let flags = if timing { sys::HIP_EVENT_DEFAULT } else { sys::HIP_EVENT_DISABLE_TIMING };
    // SAFETY: out-pointer to a local.
    check(api, "hipEventCreateWithFlags", unsafe { (api.hipEventCreateWithFlags)(&mut e, flags) })?;
    Ok(e)
}

/// `hipEventDestroy`.
///
/// # Safety
/// `e` is live and not used again.
pub unsafe fn event_destroy(api: &HipApi, e: sys::hipEvent_t) -> Result<()> {
    // SAFETY: per the contract.
    check(api, "hipEventDestroy", unsafe { (api.hipEventDestroy)(e) })
}

/// `hipEventRecord`.
///
/// # Safety
/// Both handles are live.
pub unsafe fn event_record(api: &HipApi, e: sys::hipEvent_t, s: sys::hipStream_t) -> Result<()> {
    // SAFETY: per the contract.
    check(api, "hipEventRecord", unsafe { (api.hipEventRecord)(e, s) })
}

/// `hipEventQuery`: `true` when complete, `false` for hipErrorNotReady.
///
/// # Safety
/// `e` is live.
pub unsafe fn event_query(api: &HipApi, e: sys::hipEvent_t) -> Result<bool> {
    // SAFETY: per the contract.
    let code = unsafe { (api.hipEventQuery)(e) };
    if code == HIP_ERROR_NOT_READY {
        return Ok(false);
    }
    check(api, "hipEventQuery", code)?;
    Ok(true)
}

/// `hipEventSynchronize`.
///
/// # Safety
/// `e` is live.
pub unsafe fn event_synchronize(api: &HipApi, e: sys::hipEvent_t) -> Result<()> {
    // SAFETY: per the contract.
    check(api, "hipEventSynchronize", unsafe { (api.hipEventSynchronize)(e) })
}

/// `hipEventElapsedTime` in milliseconds.
///
/// # Safety
/// Both events are live.
pub unsafe fn event_elapsed_time(api: &HipApi, start: sys::hipEvent_t, end: sys::hipEvent_t) -> Result<f32> {
    let mut ms = 0f32;
    // SAFETY: out-pointer to a local; live events per the contract.
    check(api, "hipEventElapsedTime", unsafe { (api.hipEventElapsedTime)(&mut ms, start, end) })?;
    Ok(ms)
}

/// `hipModuleLoadData`.
///
/// # Safety
/// `image` is a complete code object (HIP reads its length from the ELF headers).
pub unsafe fn module_load_data(api: &HipApi, image: &[u8]) -> Result<sys::hipModule_t> {
    let mut m = std::ptr::null_mut();
    // SAFETY: per the contract; HIP copies the image.
    check(api, "hipModuleLoadData", unsafe { (api.hipModuleLoadData)(&mut m, image.as_ptr() as *const c_void) })?;
    Ok(m)
}

/// `hipModuleUnload`.
///
/// # Safety
/// `m` is live and none of its functions is used again.
pub unsafe fn module_unload(api: &HipApi, m: sys::hipModule_t) -> Result<()> {
    // SAFETY: per the contract.
    check(api, "hipModuleUnload", unsafe { (api.hipModuleUnload)(m) })
}

/// `hipModuleGetFunction`.
///
/// # Safety
/// `m` is live.
pub unsafe fn module_get_function(api: &HipApi, m: sys::hipModule_t, name: &str) -> Result<sys::hipFunction_t> {
    let cname = CString::new(name).map_err(|_| Error::InvalidArgument { op: "hipModuleGetFunction", message: format!("{name:?}") })?;
    let mut f = std::ptr::null_mut();
    // SAFETY: out-pointer to a local, a NUL-terminated name, a live module.
    check(api, "hipModuleGetFunction", unsafe { (api.hipModuleGetFunction)(&mut f, m, cname.as_ptr()) })?;
    Ok(f)
}

/// `hipModuleLaunchKernel` with the packed kernarg buffer passed through `extra`
/// (`HIP_LAUNCH_PARAM_BUFFER_POINTER`/`_SIZE`), which HIP copies before returning.
///
/// # Safety
/// `f` and `stream` are live; the launch shape and kernargs were validated against the kernel.
pub unsafe fn module_launch_kernel(
    api: &HipApi,
    f: sys::hipFunction_t,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    stream: sys::hipStream_t,
    kernargs: &[u8],
) -> Result<()> {
    let mut args = kernargs.to_vec();
    let mut size = args.len();
    let mut extra = [
        sys::HIP_LAUNCH_PARAM_BUFFER_POINTER,
        args.as_mut_ptr() as *mut c_void,
        sys::HIP_LAUNCH_PARAM_BUFFER_SIZE,
        &mut size as *mut usize as *mut c_void,
        sys::HIP_LAUNCH_PARAM_END,
    ];
    // SAFETY: per the contract; the buffer and size outlive the call, which copies them.
    let code = unsafe {
        (api.hipModuleLaunchKernel)(
            f,
            grid[0],
            grid[1],
            grid[2],
            block[0],
            block[1],
            block[2],
            shared_bytes,
            stream,
            std::ptr::null_mut(),
            extra.as_mut_ptr(),
        )
    };
    check(api, "hipModuleLaunchKernel", code)
}
