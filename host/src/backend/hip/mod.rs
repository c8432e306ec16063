//! The HIP backend: kernels run on a real AMD GPU through libamdhip64, opened at run time.
//!
//! Layers (after cudarc): [`sys`] holds the raw function table, [`result`] turns status codes into
//! [`Error`]s, and this module has the owning types: [`HipDevice`] (one GPU with ferrocm's code
//! object loaded), [`Stream`] and [`Event`].

pub mod result;
pub mod sys;

use super::{Backend, BackendKind, DeviceInfo, Launch};
use crate::error::{Error, Result};
use result::check;
use std::collections::HashMap;
use std::ffi::{CString, c_int, c_void};
use std::sync::{Arc, Mutex};
use sys::HipApi;

/// Library names tried in order when FERROCM_HIP_LIBRARY is not set.
pub const HIP_LIBRARY_CANDIDATES: &[&str] = &["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "/opt/rocm/lib/libamdhip64.so"];

/// Opens the first loadable library of `candidates` and resolves the API.
///
/// # Errors
/// [`Error::HipNotFound`] when none opens; [`Error::HipSymbolMissing`] for a runtime too old.
pub fn open_runtime(candidates: &[&str]) -> Result<HipApi> {
    let mut last = String::from("no candidates");
    for name in candidates {
        // SAFETY: loading a shared library runs its initialisers; libamdhip64's are benign.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => {
                // SAFETY: the library is the HIP runtime; the table's signatures are ROCm 6's.
                return unsafe { HipApi::resolve(lib, name.to_string()) }
                    .map_err(|symbol| Error::HipSymbolMissing { library: name.to_string(), symbol });
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(Error::HipNotFound { tried: candidates.join(", "), reason: last })
}

/// The process-wide runtime: FERROCM_HIP_LIBRARY if set, else the standard names; opened and
/// initialised (`hipInit`) on first success and kept. Failures are not cached (a failed `dlopen`
/// is cheap) so every caller gets the typed error.
pub fn runtime() -> Result<Arc<HipApi>> {
    static RUNTIME: Mutex<Option<Arc<HipApi>>> = Mutex::new(None);
    let mut slot = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(api) = &*slot {
        return Ok(api.clone());
    }
    let custom = std::env::var("FERROCM_HIP_LIBRARY").ok();
    let candidates: Vec<&str> = match &custom {
        Some(path) => vec![path.as_str()],
        None => HIP_LIBRARY_CANDIDATES.to_vec(),
    };
    let api = open_runtime(&candidates)?;
    // SAFETY: plain FFI call with a flags value of 0.
    check(&api, "hipInit", unsafe { (api.hipInit)(0) })?;
    let api = Arc::new(api);
    *slot = Some(api.clone());
    Ok(api)
}

/// Number of GPUs HIP sees (0 when the runtime is present but there is no device).
pub fn device_count() -> Result<usize> {
    let api = runtime()?;
    let mut n: c_int = 0;
    // SAFETY: out-pointer to a local.
    let code = unsafe { (api.hipGetDeviceCount)(&mut n) };
    if code == sys::HIP_ERROR_NO_DEVICE {
        return Ok(0);
    }
    check(&api, "hipGetDeviceCount", code)?;
    Ok(n.max(0) as usize)
}

/// A raw handle that HIP allows any thread to use.
#[derive(Clone, Copy, Debug)]
struct Handle(*mut c_void);
// SAFETY: HIP handles (modules, functions, streams, events) are thread-safe runtime objects.
unsafe impl Send for Handle {}
// SAFETY: as above.
unsafe impl Sync for Handle {}

/// One GPU with ferrocm's code object loaded.
pub struct HipDevice {
    api: Arc<HipApi>,
    ordinal: c_int,
    info: DeviceInfo,
    module: Handle,
    functions: Mutex<HashMap<String, Handle>>,
    stream: Handle,
}

impl std::fmt::Debug for HipDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HipDevice").field("ordinal", &self.ordinal).field("info", &self.info).finish()
    }
}

impl HipDevice {
    /// Device properties of GPU `ordinal`, before any module is loaded.
    pub(crate) fn probe(ordinal: usize) -> Result<(Arc<HipApi>, DeviceInfo)> {
        let api = runtime()?;
        let count = device_count()?;
        if count == 0 {
            return Err(Error::NoDevice);
        }
        if ordinal >= count {
            return Err(Error::DeviceIndex { index: ordinal, count });
        }
        let ord = ordinal as c_int;
        // SAFETY: plain FFI calls; the props struct is zeroed, writable and large enough.
        unsafe {
            check(&api, "hipSetDevice", (api.hipSetDevice)(ord))?;
            let mut props: Box<sys::hipDeviceProp_tR0600> = Box::new(std::mem::zeroed());
            check(&api, "hipGetDevicePropertiesR0600", (api.hipGetDevicePropertiesR0600)(&mut *props, ord))?;
            let cstr = |b: &[std::ffi::c_char]| {
                let bytes: Vec<u8> = b.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
                String::from_utf8_lossy(&bytes).into_owned()
            };
            let full_arch = cstr(&props.gcnArchName);
            if !full_arch.starts_with("gfx") {
                return Err(Error::BackendUnavailable {
                    backend: "hip",
                    reason: format!("device {ordinal} reports gcnArchName {full_arch:?}, not a gfx target"),
                });
            }
            let info = DeviceInfo {
                backend: BackendKind::Hip,
                name: cstr(&props.name),
                arch: full_arch.split(':').next().unwrap_or_default().to_string(),
                target_id: full_arch,
                compute_units: props.multiProcessorCount.max(0) as u32,
                clock_mhz: (props.clockRate.max(0) / 1000) as u32,
                total_memory: props.totalGlobalMem as u64,
                max_threads_per_block: props.maxThreadsPerBlock.max(0) as u32,
            };
            Ok((api, info))
        }
    }

    /// Opens GPU `ordinal` and loads `code_object` on it.
    pub(crate) fn open(ordinal: usize, code_object: &[u8]) -> Result<HipDevice> {
        let (api, info) = Self::probe(ordinal)?;
        let ord = ordinal as c_int;
        // SAFETY: FFI with valid out-pointers; the image outlives the call (HIP copies it).
        unsafe {
            check(&api, "hipSetDevice", (api.hipSetDevice)(ord))?;
            let mut module = std::ptr::null_mut();
            check(&api, "hipModuleLoadData", (api.hipModuleLoadData)(&mut module, code_object.as_ptr() as *const c_void))?;
            let mut stream = std::ptr::null_mut();
            check(&api, "hipStreamCreate", (api.hipStreamCreate)(&mut stream))?;
            Ok(HipDevice { api, ordinal: ord, info, module: Handle(module), functions: Mutex::new(HashMap::new()), stream: Handle(stream) })
        }
    }

    fn bind(&self) -> Result<()> {
        // HIP's current device is per thread: select ours on whatever thread calls.
        // SAFETY: plain FFI call.
        check(&self.api, "hipSetDevice", unsafe { (self.api.hipSetDevice)(self.ordinal) })
    }

    fn function(&self, name: &str) -> Result<Handle> {
        let mut cache = self.functions.lock().expect("function cache poisoned");
        if let Some(f) = cache.get(name) {
            return Ok(*f);
        }
        let cname = CString::new(name).map_err(|_| Error::KernelNotFound { kernel: name.into(), arch: self.info.arch.clone() })?;
        let mut f = std::ptr::null_mut();
        // SAFETY: valid out-pointer, module handle and C string.
        check(&self.api, "hipModuleGetFunction", unsafe { (self.api.hipModuleGetFunction)(&mut f, self.module.0, cname.as_ptr()) })?;
        cache.insert(name.to_string(), Handle(f));
        Ok(Handle(f))
    }

    /// A new stream on this GPU.
    pub fn create_stream(&self) -> Result<Stream> {
        self.bind()?;
        let mut s = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        check(&self.api, "hipStreamCreate", unsafe { (self.api.hipStreamCreate)(&mut s) })?;
        Ok(Stream { api: self.api.clone(), handle: Handle(s) })
    }

    /// A new event (for timing with [`Event::elapsed_ms`]).
    pub fn create_event(&self) -> Result<Event> {
        self.bind()?;
        let mut e = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        check(&self.api, "hipEventCreate", unsafe { (self.api.hipEventCreate)(&mut e) })?;
        Ok(Event { api: self.api.clone(), handle: Handle(e) })
    }

    /// Records `event` on the device's launch stream (the stream every ferrocm launch uses).
    pub fn record(&self, event: &Event) -> Result<()> {
        // SAFETY: both handles are live.
        check(&self.api, "hipEventRecord", unsafe { (self.api.hipEventRecord)(event.handle.0, self.stream.0) })
    }

    /// The HIP runtime version (e.g. 60342134 for ROCm 6.3).
    pub fn runtime_version(&self) -> Result<i32> {
        let mut v = 0;
        // SAFETY: valid out-pointer.
        check(&self.api, "hipRuntimeGetVersion", unsafe { (self.api.hipRuntimeGetVersion)(&mut v) })?;
        Ok(v)
    }
}

impl Drop for HipDevice {
    fn drop(&mut self) {
        // SAFETY: handles created in `open`, destroyed once; errors at teardown are ignored.
        unsafe {
            (self.api.hipSetDevice)(self.ordinal);
            (self.api.hipStreamSynchronize)(self.stream.0);
            (self.api.hipStreamDestroy)(self.stream.0);
            (self.api.hipModuleUnload)(self.module.0);
        }
    }
}

impl Backend for HipDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&self, bytes: u64) -> Result<u64> {
        self.bind()?;
        let mut p = std::ptr::null_mut();
        // SAFETY: valid out-pointer; a zero-byte request is rounded to one byte by the caller.
        result::check_alloc(&self.api, unsafe { (self.api.hipMalloc)(&mut p, bytes as usize) }, bytes)?;
        Ok(p as u64)
    }

    fn free(&self, addr: u64) {
        // SAFETY: `addr` came from `alloc` on this device and is freed once (Buffer's Drop).
        unsafe {
            (self.api.hipSetDevice)(self.ordinal);
            (self.api.hipFree)(addr as *mut c_void);
        }
    }

    fn write(&self, dst: u64, src: &[u8]) -> Result<()> {
        self.bind()?;
        // SAFETY: dst is a live allocation of at least src.len() bytes (checked by Buffer).
        let code = unsafe {
            (self.api.hipMemcpyAsync)(
                dst as *mut c_void,
                src.as_ptr() as *const c_void,
                src.len(),
                sys::HIP_MEMCPY_HOST_TO_DEVICE,
                self.stream.0,
            )
        };
        check(&self.api, "hipMemcpyAsync(HtoD)", code)?;
        // The host slice may be freed right after: wait for the copy.
        // SAFETY: live stream.
        check(&self.api, "hipStreamSynchronize", unsafe { (self.api.hipStreamSynchronize)(self.stream.0) })
    }

    fn read(&self, src: u64, dst: &mut [u8]) -> Result<()> {
        self.bind()?;
        // SAFETY: src is a live allocation of at least dst.len() bytes (checked by Buffer).
        let code = unsafe {
            (self.api.hipMemcpyAsync)(
                dst.as_mut_ptr() as *mut c_void,
                src as *const c_void,
                dst.len(),
                sys::HIP_MEMCPY_DEVICE_TO_HOST,
                self.stream.0,
            )
        };
        check(&self.api, "hipMemcpyAsync(DtoH)", code)?;
        // SAFETY: live stream.
        check(&self.api, "hipStreamSynchronize", unsafe { (self.api.hipStreamSynchronize)(self.stream.0) })
    }

    fn copy(&self, dst: u64, src: u64, bytes: u64) -> Result<()> {
        self.bind()?;
        // SAFETY: both ranges are live allocations (checked by Buffer); stream-ordered.
        let code = unsafe {
            (self.api.hipMemcpyAsync)(
                dst as *mut c_void,
                src as *const c_void,
                bytes as usize,
                sys::HIP_MEMCPY_DEVICE_TO_DEVICE,
                self.stream.0,
            )
        };
        check(&self.api, "hipMemcpyAsync(DtoD)", code)
    }

    fn launch(&self, l: &Launch<'_>) -> Result<()> {
        self.bind()?;
        let f = self.function(&l.kernel.meta.name)?;
        let mut args = l.kernargs.to_vec();
        let mut size = args.len();
        let mut extra = [
            sys::HIP_LAUNCH_PARAM_BUFFER_POINTER,
            args.as_mut_ptr() as *mut c_void,
            sys::HIP_LAUNCH_PARAM_BUFFER_SIZE,
            &mut size as *mut usize as *mut c_void,
            sys::HIP_LAUNCH_PARAM_END,
        ];
        // SAFETY: the launch was validated (kernel, block, LDS, kernarg layout); the buffer and
        // size outlive the call, which copies them.
        let code = unsafe {
            (self.api.hipModuleLaunchKernel)(
                f.0,
                l.grid[0],
                l.grid[1],
                l.grid[2],
                l.block[0],
                l.block[1],
                l.block[2],
                l.dynamic_lds,
                self.stream.0,
                std::ptr::null_mut(),
                extra.as_mut_ptr(),
            )
        };
        check(&self.api, "hipModuleLaunchKernel", code)
    }

    fn synchronize(&self) -> Result<()> {
        self.bind()?;
        // SAFETY: live stream.
        check(&self.api, "hipStreamSynchronize", unsafe { (self.api.hipStreamSynchronize)(self.stream.0) })
    }

    fn as_hip(&self) -> Option<&HipDevice> {
        Some(self)
    }
}

/// A HIP stream.
pub struct Stream {
    api: Arc<HipApi>,
    handle: Handle,
}

impl Stream {
    /// Waits for everything queued on the stream.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: live stream.
        check(&self.api, "hipStreamSynchronize", unsafe { (self.api.hipStreamSynchronize)(self.handle.0) })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: created by hipStreamCreate, destroyed once.
        unsafe { (self.api.hipStreamDestroy)(self.handle.0) };
    }
}

/// A HIP event, for GPU-side timing.
pub struct Event {
    api: Arc<HipApi>,
    handle: Handle,
}

impl Event {
    /// Records the event on `stream`.
    pub fn record_on(&self, stream: &Stream) -> Result<()> {
        // SAFETY: live handles.
        check(&self.api, "hipEventRecord", unsafe { (self.api.hipEventRecord)(self.handle.0, stream.handle.0) })
    }

    /// Waits until the event has completed.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: live event.
        check(&self.api, "hipEventSynchronize", unsafe { (self.api.hipEventSynchronize)(self.handle.0) })
    }

    /// Milliseconds between two completed events.
    pub fn elapsed_ms(start: &Event, end: &Event) -> Result<f32> {
        let mut ms = 0f32;
        // SAFETY: valid out-pointer and live events.
        check(&start.api, "hipEventElapsedTime", unsafe { (start.api.hipEventElapsedTime)(&mut ms, start.handle.0, end.handle.0) })?;
        Ok(ms)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created by hipEventCreate, destroyed once.
        unsafe { (self.api.hipEventDestroy)(self.handle.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_runtime_is_a_clean_hip_not_found_error() {
        let err = open_runtime(&["/nonexistent/libamdhip64.so"]).err().expect("no HIP at that path");
        assert!(matches!(err, Error::HipNotFound { .. }), "{err:?}");
        assert!(err.to_string().starts_with("HIP runtime not found"), "{err}");
    }
}
