//! The HIP backend: kernels run on a real AMD GPU through libamdhip64, opened at run time.
//!
//! Layers (after cudarc): [`sys`] holds the raw function table, [`result`] has one function per
//! HIP call turning status codes into [`Error`]s, and this module the owning type [`HipDevice`]
//! (one GPU with ferrocm's code object loaded), which the runtime drives through the backend
//! trait. Streams, events and memory are the runtime's types ([`Stream`](crate::Stream),
//! [`Event`](crate::Event), [`PinnedBuffer`](crate::PinnedBuffer)).

pub mod result;
pub mod sys;

use super::{Backend, BackendKind, DeviceInfo, Launch, RawEvent, RawFunction, RawStream};
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::ptr::NonNull;
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

/// The process-wide runtime: `FERROCM_HIP_LIBRARY` if set, else the standard names; opened and
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
    result::init(&api)?;
    let api = Arc::new(api);
    *slot = Some(api.clone());
    Ok(api)
}

/// Number of GPUs HIP sees (0 when the runtime is present but there is no device).
///
/// # Errors
/// [`Error::HipNotFound`] without ROCm; a HIP call's error.
pub fn device_count() -> Result<usize> {
    let api = runtime()?;
    result::device_count(&api)
}

/// A raw handle that HIP allows any thread to use.
#[derive(Clone, Copy, Debug)]
struct Handle(*mut c_void);
// SAFETY: HIP handles (modules, functions, streams, events) are thread-safe runtime objects.
unsafe impl Send for Handle {}
// SAFETY: as above.
unsafe impl Sync for Handle {}

/// One GPU with ferrocm's code object loaded. Reach it with [`Device::as_hip`](crate::Device::as_hip)
/// for HIP-only facts (the runtime version); everything else goes through [`Device`](crate::Device).
pub struct HipDevice {
    api: Arc<HipApi>,
    ordinal: c_int,
    info: DeviceInfo,
    module: Handle,
    /// Kernel handles by name (resolved once; the runtime caches its own handle per kernel too).
    functions: Mutex<HashMap<String, Handle>>,
    /// The device's default stream (a non-blocking stream of its own, not the legacy null stream).
    stream: Handle,
}

impl std::fmt::Debug for HipDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HipDevice").field("ordinal", &self.ordinal).field("info", &self.info).finish()
    }
}

fn c_str(b: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = b.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl HipDevice {
    /// Device properties of GPU `ordinal`, before any module is loaded.
    pub(crate) fn probe(ordinal: usize) -> Result<(Arc<HipApi>, DeviceInfo)> {
        let api = runtime()?;
        let count = result::device_count(&api)?;
        if count == 0 {
            return Err(Error::NoDevice);
        }
        if ordinal >= count {
            return Err(Error::DeviceIndex { index: ordinal, count });
        }
        let ord = ordinal as c_int;
        result::set_device(&api, ord)?;
        let props = result::device_properties(&api, ord)?;
        let full_arch = c_str(&props.gcnArchName);
        if !full_arch.starts_with("gfx") {
            return Err(Error::BackendUnavailable {
                backend: "hip",
                reason: format!("device {ordinal} reports gcnArchName {full_arch:?}, not a gfx target"),
            });
        }
        let info = DeviceInfo {
            backend: BackendKind::Hip,
            name: c_str(&props.name),
            arch: full_arch.split(':').next().unwrap_or_default().to_string(),
            target_id: full_arch,
            compute_units: props.multiProcessorCount.max(0) as u32,
            clock_mhz: (props.clockRate.max(0) / 1000) as u32,
            total_memory: props.totalGlobalMem as u64,
            max_threads_per_block: props.maxThreadsPerBlock.max(0) as u32,
        };
        Ok((api, info))
    }

    /// Opens GPU `ordinal` and loads `code_object` on it.
    pub(crate) fn open(ordinal: usize, code_object: &[u8]) -> Result<HipDevice> {
        let (api, info) = Self::probe(ordinal)?;
        let ord = ordinal as c_int;
        result::set_device(&api, ord)?;
        // SAFETY: `code_object` is a whole code object (it parsed before we got here).
        let module = unsafe { result::module_load_data(&api, code_object)? };
        let stream = match result::stream_create(&api) {
            Ok(s) => s,
            Err(e) => {
                // SAFETY: loaded just above, nothing uses it.
                let _ = unsafe { result::module_unload(&api, module) };
                return Err(e);
            }
        };
        Ok(HipDevice { api, ordinal: ord, info, module: Handle(module), functions: Mutex::new(HashMap::new()), stream: Handle(stream) })
    }

    fn bind(&self) -> Result<()> {
        // HIP's current device is per thread: select ours on whatever thread calls.
        result::set_device(&self.api, self.ordinal)
    }

    /// The HIP runtime version (e.g. 60342134 for ROCm 6.3).
    ///
    /// # Errors
    /// The HIP call's error.
    pub fn runtime_version(&self) -> Result<i32> {
        result::runtime_version(&self.api)
    }

    /// The library the runtime was opened from.
    pub fn library(&self) -> &str {
        &self.api.library
    }

    fn stream_of(&self, s: RawStream) -> sys::hipStream_t {
        s.0 as sys::hipStream_t
    }
}

impl Drop for HipDevice {
    fn drop(&mut self) {
        // The runtime has synchronised and released everything it queued; errors at teardown
        // are ignored (there is no one left to report them to).
        let _ = self.bind();
        // SAFETY: handles created in `open`, destroyed once.
        unsafe {
            let _ = result::stream_synchronize(&self.api, self.stream.0);
            let _ = result::stream_destroy(&self.api, self.stream.0);
            let _ = result::module_unload(&self.api, self.module.0);
        }
    }
}

impl Backend for HipDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn completes_inline(&self) -> bool {
        false
    }

    fn alloc(&self, bytes: u64) -> Result<u64> {
        self.bind()?;
        result::malloc(&self.api, bytes)
    }
    unsafe fn free(&self, addr: u64) {
        let _ = self.bind();
        // SAFETY: per the trait's contract. A failure cannot be reported from a destructor.
        let _ = unsafe { result::free(&self.api, addr) };
    }
    fn memory_info(&self) -> Result<(u64, u64)> {
        self.bind()?;
        result::mem_get_info(&self.api)
    }
    fn host_alloc(&self, bytes: usize) -> Result<Option<NonNull<u8>>> {
        self.bind()?;
        Ok(NonNull::new(result::host_malloc(&self.api, bytes.max(1))? as *mut u8))
    }
    unsafe fn host_free(&self, ptr: NonNull<u8>) {
        // SAFETY: per the trait's contract.
        let _ = unsafe { result::host_free(&self.api, ptr.as_ptr() as *mut c_void) };
    }

    fn default_stream(&self) -> RawStream {
        RawStream(self.stream.0 as usize)
    }
    fn create_stream(&self) -> Result<RawStream> {
        self.bind()?;
        Ok(RawStream(result::stream_create(&self.api)? as usize))
    }
    unsafe fn destroy_stream(&self, s: RawStream) {
        // SAFETY: per the trait's contract.
        let _ = unsafe { result::stream_destroy(&self.api, self.stream_of(s)) };
    }
    fn synchronize_stream(&self, s: RawStream) -> Result<()> {
        // SAFETY: the runtime passes only live streams of this device.
        unsafe { result::stream_synchronize(&self.api, self.stream_of(s)) }
    }
    fn synchronize(&self) -> Result<()> {
        self.bind()?;
        result::device_synchronize(&self.api)
    }
    fn create_event(&self, timing: bool) -> Result<RawEvent> {
        self.bind()?;
        Ok(RawEvent(result::event_create(&self.api, timing)? as usize))
    }
    unsafe fn destroy_event(&self, e: RawEvent) {
        // SAFETY: per the trait's contract.
        let _ = unsafe { result::event_destroy(&self.api, e.0 as sys::hipEvent_t) };
    }
    fn record_event(&self, e: RawEvent, s: RawStream) -> Result<()> {
        // SAFETY: live handles of this device.
        unsafe { result::event_record(&self.api, e.0 as sys::hipEvent_t, self.stream_of(s)) }
    }
    fn event_complete(&self, e: RawEvent) -> Result<bool> {
        // SAFETY: a live event.
        unsafe { result::event_query(&self.api, e.0 as sys::hipEvent_t) }
    }
    fn synchronize_event(&self, e: RawEvent) -> Result<()> {
        // SAFETY: a live event.
        unsafe { result::event_synchronize(&self.api, e.0 as sys::hipEvent_t) }
    }
    fn stream_wait_event(&self, s: RawStream, e: RawEvent) -> Result<()> {
        // SAFETY: live handles.
        unsafe { result::stream_wait_event(&self.api, self.stream_of(s), e.0 as sys::hipEvent_t) }
    }
    fn elapsed_ms(&self, start: RawEvent, end: RawEvent) -> Result<f32> {
        // SAFETY: live events.
        unsafe { result::event_elapsed_time(&self.api, start.0 as sys::hipEvent_t, end.0 as sys::hipEvent_t) }
    }

    fn write(&self, s: RawStream, dst: u64, src: &[u8]) -> Result<()> {
        self.bind()?;
        // SAFETY: dst is a live allocation of at least src.len() bytes (checked by the runtime);
        // the host slice may be freed right after we return, so the stream is synchronised.
        unsafe {
            result::memcpy_async(
                &self.api,
                dst as *mut c_void,
                src.as_ptr() as *const c_void,
                src.len(),
                sys::HIP_MEMCPY_HOST_TO_DEVICE,
                self.stream_of(s),
            )?;
            result::stream_synchronize(&self.api, self.stream_of(s))
        }
    }
    fn read(&self, s: RawStream, src: u64, dst: &mut [u8]) -> Result<()> {
        self.bind()?;
        // SAFETY: src is a live allocation of at least dst.len() bytes; synchronised before the
        // slice is handed back.
        unsafe {
            result::memcpy_async(
                &self.api,
                dst.as_mut_ptr() as *mut c_void,
                src as *const c_void,
                dst.len(),
                sys::HIP_MEMCPY_DEVICE_TO_HOST,
                self.stream_of(s),
            )?;
            result::stream_synchronize(&self.api, self.stream_of(s))
        }
    }
    unsafe fn write_async(&self, s: RawStream, dst: u64, src: *const u8, len: usize) -> Result<()> {
        self.bind()?;
        // SAFETY: per the trait's contract (pinned source kept unchanged until the stream passes).
        unsafe {
            result::memcpy_async(
                &self.api,
                dst as *mut c_void,
                src as *const c_void,
                len,
                sys::HIP_MEMCPY_HOST_TO_DEVICE,
                self.stream_of(s),
            )
        }
    }
    unsafe fn read_async(&self, s: RawStream, src: u64, dst: *mut u8, len: usize) -> Result<()> {
        self.bind()?;
        // SAFETY: per the trait's contract.
        unsafe {
            result::memcpy_async(
                &self.api,
                dst as *mut c_void,
                src as *const c_void,
                len,
                sys::HIP_MEMCPY_DEVICE_TO_HOST,
                self.stream_of(s),
            )
        }
    }
    fn copy(&self, s: RawStream, dst: u64, src: u64, bytes: u64) -> Result<()> {
        self.bind()?;
        // SAFETY: both ranges are live allocations (checked by the runtime); stream-ordered.
        unsafe {
            result::memcpy_async(
                &self.api,
                dst as *mut c_void,
                src as *const c_void,
                bytes as usize,
                sys::HIP_MEMCPY_DEVICE_TO_DEVICE,
                self.stream_of(s),
            )
        }
    }
    fn memset(&self, s: RawStream, dst: u64, value: u8, bytes: u64) -> Result<()> {
        self.bind()?;
        // SAFETY: a live allocation range (checked by the runtime); stream-ordered.
        unsafe { result::memset_d8_async(&self.api, dst, value, bytes as usize, self.stream_of(s)) }
    }

    fn function(&self, name: &str) -> Result<RawFunction> {
        let mut cache = self.functions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = cache.get(name) {
            return Ok(RawFunction(f.0 as usize));
        }
        // SAFETY: the module is live for the device's lifetime.
        let f = unsafe { result::module_get_function(&self.api, self.module.0, name)? };
        cache.insert(name.to_string(), Handle(f));
        Ok(RawFunction(f as usize))
    }
    unsafe fn launch(&self, s: RawStream, l: &Launch<'_>) -> Result<()> {
        self.bind()?;
        // SAFETY: per the trait's contract (validated launch, live operands).
        unsafe {
            result::module_launch_kernel(
                &self.api,
                l.function.0 as sys::hipFunction_t,
                l.grid,
                l.block,
                l.dynamic_lds,
                self.stream_of(s),
                l.kernargs,
            )
        }
    }

    fn as_hip(&self) -> Option<&HipDevice> {
        Some(self)
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
