//! ferrocm-hip-shim: a test double of the HIP runtime for CI, which has no GPU.
//!
//! The library exports the HIP functions ferrocm opens from `libamdhip64.so`, with the exact C
//! signatures and struct layouts of ROCm 6's `hip_runtime_api.h`, implemented on ferrocm's
//! gfx942 emulator (one device, gfx942, 304 CUs). Pointing `FERROCM_HIP_LIBRARY` at it makes
//! ferrocm's HIP backend — function table, argument packing through `extra`, status mapping,
//! streams, events, pinned memory, the runtime's keep-alive and pool logic — run for real.
//! Like tinygrad's mock GPU, it is a test double; the product's fallback is ferrocm's emulator
//! backend.
//!
//! Fidelity to HIP where it matters for those tests:
//! - streams are in-order queues, each drained by its own thread: launches and copies run after
//!   the enqueueing call has returned, so operands freed too early or unordered streams fault
//!   or compute garbage, as on a GPU;
//! - `hipMemcpyAsync` from or to pinned memory (`hipHostMalloc`) is asynchronous; from pageable
//!   memory host-to-device copies are staged before returning and device-to-host ones wait, as
//!   HIP documents; `hipFree` and `hipHostFree` wait for the device first;
//! - kernel faults are reported by a later synchronising call (`hipStreamSynchronize`,
//!   `hipDeviceSynchronize`, `hipEventSynchronize`, `hipEventQuery`, a synchronous copy) as
//!   `hipErrorIllegalAddress` or `hipErrorLaunchFailure`, with the fault printed to stderr.
//!   Deviation: the error is reported once and then cleared (a real device stays unusable).
//! - the legacy null stream (handle 0) waits for every other stream before its own work.
#![allow(non_snake_case, clippy::missing_safety_doc)]

mod device;
mod queue;
mod status;

use device::{Shim, shim};
use ferrocm_emu::LaunchParams;
use status::*;
use std::alloc::Layout;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::Arc;

/// `hipMemcpyKind`.
const HOST_TO_HOST: c_int = 0;
const HOST_TO_DEVICE: c_int = 1;
const DEVICE_TO_HOST: c_int = 2;
const DEVICE_TO_DEVICE: c_int = 3;
const DEFAULT: c_int = 4;
/// `hipEventDisableTiming`.
const EVENT_DISABLE_TIMING: c_uint = 0x2;
/// `extra` keys of `hipModuleLaunchKernel`.
const LAUNCH_PARAM_BUFFER_POINTER: usize = 1;
const LAUNCH_PARAM_BUFFER_SIZE: usize = 2;
const LAUNCH_PARAM_END: usize = 3;
/// Alignment of hipHostMalloc memory (a page).
const PAGE: usize = 4096;
/// The version reported by `hipRuntimeGetVersion`: the ROCm 6.0 API this double implements.
const RUNTIME_VERSION: c_int = 60_000_000;

/// Runs `f`, turning a panic into hipErrorUnknown instead of unwinding into C.
fn guard(f: impl FnOnce() -> HipError) -> HipError {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(999)
}

/// A raw pointer moved into queued work (the caller's contract keeps it valid until then).
struct SendPtr(*mut u8);
// SAFETY: only dereferenced by the queued copy, under the caller's HIP contract.
unsafe impl Send for SendPtr {}

// ---- initialisation and devices -------------------------------------------------------------

#[unsafe(no_mangle)]
pub extern "C" fn hipInit(flags: c_uint) -> HipError {
    if flags != 0 {
        return INVALID_VALUE;
    }
    shim();
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn hipGetErrorString(code: HipError) -> *const c_char {
    describe(code)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipRuntimeGetVersion(version: *mut c_int) -> HipError {
    if version.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: non-null out-pointer per the API.
    unsafe { *version = RUNTIME_VERSION };
    SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDeviceCount(count: *mut c_int) -> HipError {
    if count.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: non-null out-pointer.
    unsafe { *count = 1 };
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn hipSetDevice(device: c_int) -> HipError {
    if device != 0 { INVALID_DEVICE } else { SUCCESS }
}

/// Writes the fields ferrocm reads at their offsets in ROCm 6's `hipDeviceProp_tR0600`
/// (`name` 0, `totalGlobalMem` 288, `sharedMemPerBlock` 296, `warpSize` 308,
/// `maxThreadsPerBlock` 320, `clockRate` 348 (kHz), `multiProcessorCount` 388, `gcnArchName`
/// 1168); the rest stays as the caller initialised it. Written by offset, not through a
/// struct, so the double checks ferrocm's struct definition instead of sharing it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDevicePropertiesR0600(prop: *mut u8, device: c_int) -> HipError {
    if prop.is_null() {
        return INVALID_VALUE;
    }
    if device != 0 {
        return INVALID_DEVICE;
    }
    let limit = shim().emu.config().memory_limit;
    // SAFETY: the caller passes a whole hipDeviceProp_tR0600 (1424+ bytes); every write below
    // ends before byte 1424.
    unsafe {
        let put = |off: usize, bytes: &[u8]| std::ptr::copy_nonoverlapping(bytes.as_ptr(), prop.add(off), bytes.len());
        let name = b"ferrocm HIP test double (gfx942 emulator)\0";
        put(0, name);
        put(288, &(limit as usize).to_le_bytes());
        put(296, &(64usize * 1024).to_le_bytes());
        put(308, &64i32.to_le_bytes());
        put(320, &1024i32.to_le_bytes());
        put(348, &2_100_000i32.to_le_bytes());
        put(388, &304i32.to_le_bytes());
        put(1168, b"gfx942:sramecc+:xnack-\0");
    }
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn hipDeviceSynchronize() -> HipError {
    guard(|| {
        let s = shim();
        s.synchronize_all();
        s.take_error()
    })
}

// ---- memory -----------------------------------------------------------------------------------

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMalloc(ptr: *mut *mut c_void, size: usize) -> HipError {
    guard(|| {
        if ptr.is_null() {
            return INVALID_VALUE;
        }
        match shim().emu.alloc(size as u64) {
            Ok(addr) => {
                // SAFETY: non-null out-pointer.
                unsafe { *ptr = addr as *mut c_void };
                SUCCESS
            }
            Err(e) => Shim::code_of(&e),
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hipFree(ptr: *mut c_void) -> HipError {
    guard(|| {
        if ptr.is_null() {
            return SUCCESS;
        }
        let s = shim();
        // hipFree synchronises the device before releasing the memory.
        s.synchronize_all();
        match s.emu.free(ptr as u64) {
            Ok(()) => SUCCESS,
            Err(_) => INVALID_DEVICE_POINTER,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemGetInfo(free: *mut usize, total: *mut usize) -> HipError {
    if free.is_null() || total.is_null() {
        return INVALID_VALUE;
    }
    let s = shim();
    let limit = s.emu.config().memory_limit;
    // SAFETY: non-null out-pointers.
    unsafe {
        *free = limit.saturating_sub(s.emu.memory().in_use()) as usize;
        *total = limit as usize;
    }
    SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipHostMalloc(ptr: *mut *mut c_void, size: usize, _flags: c_uint) -> HipError {
    guard(|| {
        if ptr.is_null() {
            return INVALID_VALUE;
        }
        let Ok(layout) = Layout::from_size_align(size.max(1), PAGE) else { return OUT_OF_MEMORY };
        // SAFETY: non-zero size.
        let p = unsafe { std::alloc::alloc(layout) };
        if p.is_null() {
            return OUT_OF_MEMORY;
        }
        shim().add_pinned(p as usize, layout);
        // SAFETY: non-null out-pointer.
        unsafe { *ptr = p as *mut c_void };
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hipHostFree(ptr: *mut c_void) -> HipError {
    guard(|| {
        if ptr.is_null() {
            return SUCCESS;
        }
        let s = shim();
        s.synchronize_all();
        match s.remove_pinned(ptr as usize) {
            // SAFETY: allocated by hipHostMalloc with this layout; the device is idle.
            Some(layout) => unsafe {
                std::alloc::dealloc(ptr as *mut u8, layout);
                SUCCESS
            },
            None => INVALID_VALUE,
        }
    })
}

/// The kind of a hipMemcpyDefault copy, from where the addresses live.
fn resolve_kind(kind: c_int, dst: u64, src: u64) -> c_int {
    if kind != DEFAULT {
        return kind;
    }
    let s = shim();
    match (s.is_device(dst), s.is_device(src)) {
        (true, true) => DEVICE_TO_DEVICE,
        (true, false) => HOST_TO_DEVICE,
        (false, true) => DEVICE_TO_HOST,
        (false, false) => HOST_TO_HOST,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyAsync(dst: *mut c_void, src: *const c_void, size: usize, kind: c_int, stream: *mut c_void) -> HipError {
    guard(|| {
        let s = shim();
        let Some(q) = s.stream(stream as usize) else { return INVALID_HANDLE };
        if size == 0 {
            return SUCCESS;
        }
        if dst.is_null() || src.is_null() {
            return INVALID_VALUE;
        }
        let (d, sr) = (dst as u64, src as u64);
        match resolve_kind(kind, d, sr) {
            HOST_TO_DEVICE => {
                if s.is_pinned(src as usize, size) {
                    let p = SendPtr(src as *mut u8);
                    q.enqueue(Box::new(move || {
                        let p = p;
                        // SAFETY: pinned memory the caller keeps unchanged until the stream passes.
                        let data = unsafe { std::slice::from_raw_parts(p.0, size) };
                        if let Err(e) = shim().emu.memory().write(d, data) {
                            shim().fail(Shim::code_of(&e), &e.to_string());
                        }
                    }));
                } else {
                    // Pageable: staged now, so the caller may reuse its memory on return.
                    // SAFETY: `size` readable bytes per the API.
                    let data = unsafe { std::slice::from_raw_parts(src as *const u8, size) }.to_vec();
                    q.enqueue(Box::new(move || {
                        if let Err(e) = shim().emu.memory().write(d, &data) {
                            shim().fail(Shim::code_of(&e), &e.to_string());
                        }
                    }));
                }
                SUCCESS
            }
            DEVICE_TO_HOST => {
                let pinned = s.is_pinned(dst as usize, size);
                let p = SendPtr(dst as *mut u8);
                q.enqueue(Box::new(move || {
                    let p = p;
                    // SAFETY: `size` writable bytes the caller does not touch until the copy ran.
                    let out = unsafe { std::slice::from_raw_parts_mut(p.0, size) };
                    if let Err(e) = shim().emu.memory().read(sr, out) {
                        shim().fail(Shim::code_of(&e), &e.to_string());
                    }
                }));
                if !pinned {
                    // Pageable destination: the copy is synchronous.
                    q.synchronize();
                    return s.take_error();
                }
                SUCCESS
            }
            DEVICE_TO_DEVICE => {
                q.enqueue(Box::new(move || {
                    if let Err(e) = shim().emu.memory().copy(d, sr, size as u64) {
                        shim().fail(Shim::code_of(&e), &e.to_string());
                    }
                }));
                SUCCESS
            }
            HOST_TO_HOST => {
                q.synchronize();
                // SAFETY: both ranges valid per the API.
                unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size) };
                SUCCESS
            }
            _ => INVALID_MEMCPY_DIRECTION,
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hipMemsetD8Async(dst: *mut c_void, value: u8, count: usize, stream: *mut c_void) -> HipError {
    guard(|| {
        let Some(q) = shim().stream(stream as usize) else { return INVALID_HANDLE };
        let d = dst as u64;
        q.enqueue(Box::new(move || {
            if let Err(e) = shim().emu.memory().fill(d, value, count as u64) {
                shim().fail(Shim::code_of(&e), &e.to_string());
            }
        }));
        SUCCESS
    })
}

// ---- streams ----------------------------------------------------------------------------------

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamCreateWithFlags(stream: *mut *mut c_void, _flags: c_uint) -> HipError {
    if stream.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: non-null out-pointer.
    unsafe { *stream = shim().add_stream() as *mut c_void };
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn hipStreamDestroy(stream: *mut c_void) -> HipError {
    guard(|| match shim().remove_stream(stream as usize) {
        Some(q) => {
            q.shutdown();
            SUCCESS
        }
        None => INVALID_HANDLE,
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hipStreamSynchronize(stream: *mut c_void) -> HipError {
    guard(|| {
        let s = shim();
        let Some(q) = s.stream(stream as usize) else { return INVALID_HANDLE };
        q.synchronize();
        s.take_error()
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hipStreamWaitEvent(stream: *mut c_void, event: *mut c_void, flags: c_uint) -> HipError {
    guard(|| {
        if flags != 0 {
            return INVALID_VALUE;
        }
        let s = shim();
        let (Some(q), Some(e)) = (s.stream(stream as usize), s.event(event as usize)) else { return INVALID_HANDLE };
        e.make_wait(&q);
        SUCCESS
    })
}

// ---- events -----------------------------------------------------------------------------------

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventCreateWithFlags(event: *mut *mut c_void, flags: c_uint) -> HipError {
    if event.is_null() {
        return INVALID_VALUE;
    }
    // SAFETY: non-null out-pointer.
    unsafe { *event = shim().add_event(flags & EVENT_DISABLE_TIMING == 0) as *mut c_void };
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn hipEventDestroy(event: *mut c_void) -> HipError {
    if shim().remove_event(event as usize) { SUCCESS } else { INVALID_HANDLE }
}

#[unsafe(no_mangle)]
pub extern "C" fn hipEventRecord(event: *mut c_void, stream: *mut c_void) -> HipError {
    guard(|| {
        let s = shim();
        let (Some(e), Some(q)) = (s.event(event as usize), s.stream(stream as usize)) else { return INVALID_HANDLE };
        e.record(&q);
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hipEventQuery(event: *mut c_void) -> HipError {
    guard(|| {
        let s = shim();
        let Some(e) = s.event(event as usize) else { return INVALID_HANDLE };
        match s.take_error() {
            SUCCESS if e.complete() => SUCCESS,
            SUCCESS => NOT_READY,
            err => err,
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hipEventSynchronize(event: *mut c_void) -> HipError {
    guard(|| {
        let s = shim();
        let Some(e) = s.event(event as usize) else { return INVALID_HANDLE };
        e.synchronize();
        s.take_error()
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventElapsedTime(ms: *mut f32, start: *mut c_void, stop: *mut c_void) -> HipError {
    guard(|| {
        if ms.is_null() {
            return INVALID_VALUE;
        }
        let s = shim();
        let (Some(a), Some(b)) = (s.event(start as usize), s.event(stop as usize)) else { return INVALID_HANDLE };
        if !a.timing || !b.timing {
            return INVALID_HANDLE;
        }
        match (a.time(), b.time()) {
            (Some(ta), Some(tb)) => {
                let d = if tb >= ta { (tb - ta).as_secs_f32() } else { -(ta - tb).as_secs_f32() };
                // SAFETY: non-null out-pointer.
                unsafe { *ms = d * 1e3 };
                SUCCESS
            }
            _ => NOT_READY,
        }
    })
}

// ---- modules and launches ---------------------------------------------------------------------

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleLoadData(module: *mut *mut c_void, image: *const c_void) -> HipError {
    guard(|| {
        if module.is_null() || image.is_null() {
            return INVALID_VALUE;
        }
        // SAFETY: HIP's contract: `image` is a whole code object.
        match unsafe { shim().load_module(image as *const u8) } {
            Ok(id) => {
                // SAFETY: non-null out-pointer.
                unsafe { *module = id as *mut c_void };
                SUCCESS
            }
            Err(e) => e,
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hipModuleUnload(module: *mut c_void) -> HipError {
    guard(|| {
        let s = shim();
        s.synchronize_all();
        if s.unload_module(module as usize) { SUCCESS } else { INVALID_HANDLE }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleGetFunction(function: *mut *mut c_void, module: *mut c_void, name: *const c_char) -> HipError {
    guard(|| {
        if function.is_null() || name.is_null() {
            return INVALID_VALUE;
        }
        // SAFETY: a NUL-terminated name per the API.
        let Ok(name) = unsafe { CStr::from_ptr(name) }.to_str() else { return NOT_FOUND };
        match shim().get_function(module as usize, name) {
            Ok(id) => {
                // SAFETY: non-null out-pointer.
                unsafe { *function = id as *mut c_void };
                SUCCESS
            }
            Err(e) => e,
        }
    })
}

/// The kernarg bytes of a launch: the `extra` buffer (HIP_LAUNCH_PARAM_BUFFER_POINTER/SIZE), or
/// `kernelParams` (one pointer per explicit argument, packed at the metadata's offsets).
///
/// # Safety
/// The pointers follow `hipModuleLaunchKernel`'s contract.
unsafe fn kernargs(f: &device::Function, params: *mut *mut c_void, extra: *mut *mut c_void) -> Result<Vec<u8>, HipError> {
    if !extra.is_null() {
        let (mut buf, mut size) = (std::ptr::null::<u8>(), None::<usize>);
        let mut i = 0;
        loop {
            // SAFETY: a key/value list ending in HIP_LAUNCH_PARAM_END per the API.
            let key = unsafe { *extra.add(i) } as usize;
            match key {
                LAUNCH_PARAM_END => break,
                LAUNCH_PARAM_BUFFER_POINTER => buf = unsafe { *extra.add(i + 1) } as *const u8,
                // SAFETY: the value points at a size_t.
                LAUNCH_PARAM_BUFFER_SIZE => size = Some(unsafe { *(*extra.add(i + 1) as *const usize) }),
                _ => return Err(INVALID_VALUE),
            }
            i += 2;
        }
        let size = size.ok_or(INVALID_VALUE)?;
        if buf.is_null() && size > 0 {
            return Err(INVALID_VALUE);
        }
        // SAFETY: `size` readable bytes at `buf`.
        return Ok(if size == 0 { Vec::new() } else { unsafe { std::slice::from_raw_parts(buf, size) }.to_vec() });
    }
    let end = f.args.iter().map(|&(o, s)| o + s).max().unwrap_or(0);
    let mut out = vec![0u8; end];
    if end > 0 && params.is_null() {
        return Err(INVALID_VALUE);
    }
    for (i, &(off, size)) in f.args.iter().enumerate() {
        // SAFETY: one pointer per explicit argument, each to `size` bytes.
        unsafe { std::ptr::copy_nonoverlapping(*params.add(i) as *const u8, out.as_mut_ptr().add(off), size) };
    }
    Ok(out)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleLaunchKernel(
    function: *mut c_void,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared_bytes: c_uint,
    stream: *mut c_void,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> HipError {
    guard(|| {
        let s = shim();
        let Some(f) = s.function(function as usize) else { return INVALID_DEVICE_FUNCTION };
        let Some(q) = s.stream(stream as usize) else { return INVALID_HANDLE };
        let (grid, block) = ([grid_x, grid_y, grid_z], [block_x, block_y, block_z]);
        let threads = block.iter().map(|&b| b as u64).product::<u64>();
        if grid.contains(&0) || block.contains(&0) || threads > f.max_threads as u64 {
            return INVALID_CONFIGURATION;
        }
        // SAFETY: the caller's contract; the bytes are copied before returning, as HIP does.
        let args = match unsafe { kernargs(&f, kernel_params, extra) } {
            Ok(a) => a,
            Err(e) => return e,
        };
        let params = LaunchParams { grid, block, dynamic_lds: shared_bytes, kernargs: args };
        let f = Arc::clone(&f);
        q.enqueue(Box::new(move || {
            if let Err(e) = shim().emu.launch(&f.module, &f.name, &params) {
                shim().fail(Shim::code_of(&e), &e.to_string());
            }
        }));
        SUCCESS
    })
}
