//! Where kernels run: a real GPU through HIP, or the gfx942 emulator.
//!
//! [`Device`](crate::Device) holds one backend behind [`Backend`]; memory, streams, events, copies
//! and launches go through it as raw handles, device addresses and byte slices, already validated
//! by the runtime above (`crate::runtime`), which also owns every lifetime question: a backend
//! never decides when memory may be reused.

#[cfg(feature = "emulator")]
pub mod emulator;
pub mod hip;

use crate::error::Result;
use std::ptr::NonNull;

/// Which backend a [`Device`](crate::Device) uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// A GPU through libamdhip64.
    Hip,
    /// The gfx942 emulator on the CPU.
    Emulator,
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BackendKind::Hip => "hip",
            BackendKind::Emulator => "emulator",
        })
    }
}

/// Compute units of an MI300X (GFX942.md): what the emulator reports (it models one) and what
/// the launch-plan choosers' plain forms (`ops::gemm::choose_config`, ...) plan for; the ops
/// themselves plan for their device's [`DeviceInfo::compute_units`].
pub const MI300X_CUS: usize = 304;

/// What a device is. Get it with [`Device::info`](crate::Device::info).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The backend.
    pub backend: BackendKind,
    /// Marketing name (HIP) or a description (emulator).
    pub name: String,
    /// The architecture, e.g. `gfx942`.
    pub arch: String,
    /// The full target id, e.g. `gfx942:sramecc+:xnack-`.
    pub target_id: String,
    /// Compute units.
    pub compute_units: u32,
    /// Peak engine clock in MHz.
    pub clock_mhz: u32,
    /// Device memory in bytes.
    pub total_memory: u64,
    /// Max work-items per workgroup.
    pub max_threads_per_block: u32,
}

/// A backend stream handle (a `hipStream_t`, or the emulator's stream number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RawStream(pub usize);

/// A backend event handle (a `hipEvent_t`, or the emulator's event number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RawEvent(pub usize);

/// A backend kernel handle (a `hipFunction_t`, or the emulator's kernel number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RawFunction(pub usize);

/// One validated kernel launch.
pub(crate) struct Launch<'a> {
    /// The kernel, as [`Backend::function`] resolved it.
    pub function: RawFunction,
    /// Its symbol (for the emulator's statistics and faults; HIP names kernels by `function`).
    #[cfg_attr(not(feature = "emulator"), allow(dead_code))]
    pub name: &'a str,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_lds: u32,
    /// The argument struct's bytes (explicit kernargs only; hidden ones are the backend's job).
    pub kernargs: &'a [u8],
}

/// The operations every backend provides. Addresses are device addresses from `alloc`; stream
/// and event handles come from the same backend. Work on one stream runs in the order it was
/// queued; the `*_async` copies and `launch` may return before the work is done.
pub(crate) trait Backend: Send + Sync + std::fmt::Debug {
    fn info(&self) -> &DeviceInfo;
    /// True when every operation has completed when its call returns (the emulator): the runtime
    /// then needs no events to know when the device has passed a launch.
    fn completes_inline(&self) -> bool;

    // ---- memory ---------------------------------------------------------------------------
    fn alloc(&self, bytes: u64) -> Result<u64>;
    /// # Safety
    /// `addr` came from `alloc` and no queued work uses it any more.
    unsafe fn free(&self, addr: u64);
    /// (free, total) device memory in bytes.
    fn memory_info(&self) -> Result<(u64, u64)>;
    /// Page-locked host memory the device can copy from and to asynchronously, or `None` when
    /// the backend has none (the emulator: its copies are plain memory copies anyway).
    fn host_alloc(&self, bytes: usize) -> Result<Option<NonNull<u8>>>;
    /// # Safety
    /// `ptr` came from `host_alloc` and no queued copy uses it any more.
    unsafe fn host_free(&self, ptr: NonNull<u8>);

    // ---- streams and events ---------------------------------------------------------------
    /// The stream the device was opened with (never destroyed by the runtime).
    fn default_stream(&self) -> RawStream;
    fn create_stream(&self) -> Result<RawStream>;
    /// # Safety
    /// `s` came from `create_stream`; nothing will be queued on it again.
    unsafe fn destroy_stream(&self, s: RawStream);
    fn synchronize_stream(&self, s: RawStream) -> Result<()>;
    /// Waits for all work on every stream of the device.
    fn synchronize(&self) -> Result<()>;
    /// A new event; `timing` events can measure elapsed time (costlier on HIP).
    fn create_event(&self, timing: bool) -> Result<RawEvent>;
    /// # Safety
    /// `e` came from `create_event` and is not used again.
    unsafe fn destroy_event(&self, e: RawEvent);
    fn record_event(&self, e: RawEvent, s: RawStream) -> Result<()>;
    /// True once the work before the event's last record has completed (or it was never recorded).
    fn event_complete(&self, e: RawEvent) -> Result<bool>;
    fn synchronize_event(&self, e: RawEvent) -> Result<()>;
    /// Work queued on `s` after this call waits for the event's last record.
    fn stream_wait_event(&self, s: RawStream, e: RawEvent) -> Result<()>;
    fn elapsed_ms(&self, start: RawEvent, end: RawEvent) -> Result<f32>;

    // ---- copies ---------------------------------------------------------------------------
    /// Host to device, ordered on `s`; returns once the copy is done (`src` may be reused).
    fn write(&self, s: RawStream, dst: u64, src: &[u8]) -> Result<()>;
    /// Device to host, ordered on `s`; returns once `dst` holds the data.
    fn read(&self, s: RawStream, src: u64, dst: &mut [u8]) -> Result<()>;
    /// Host to device, queued on `s`.
    ///
    /// # Safety
    /// `src` is `len` readable bytes from `host_alloc` that stay unchanged until `s` passes the copy.
    unsafe fn write_async(&self, s: RawStream, dst: u64, src: *const u8, len: usize) -> Result<()>;
    /// Device to host, queued on `s`.
    ///
    /// # Safety
    /// `dst` is `len` writable bytes from `host_alloc`, untouched by the host until `s` passes the copy.
    unsafe fn read_async(&self, s: RawStream, src: u64, dst: *mut u8, len: usize) -> Result<()>;
    /// Device to device, queued on `s`.
    fn copy(&self, s: RawStream, dst: u64, src: u64, bytes: u64) -> Result<()>;
    /// Sets `bytes` bytes at `dst` to `value`, queued on `s`.
    fn memset(&self, s: RawStream, dst: u64, value: u8, bytes: u64) -> Result<()>;

    // ---- kernels --------------------------------------------------------------------------
    /// The handle of kernel `name` in the loaded code object.
    fn function(&self, name: &str) -> Result<RawFunction>;
    /// Queues a launch on `s`.
    ///
    /// # Safety
    /// The launch was validated against the code object and every address in its arguments
    /// stays valid until `s` passes it.
    unsafe fn launch(&self, s: RawStream, launch: &Launch<'_>) -> Result<()>;

    fn as_hip(&self) -> Option<&hip::HipDevice> {
        None
    }
    #[cfg(feature = "emulator")]
    fn as_emulator(&self) -> Option<&emulator::EmulatorDevice> {
        None
    }
    /// The compute units a launch shape whose results do not depend on it is sized for (one
    /// workgroup per CU): the device's on a GPU, the emulator's choice on the emulator
    /// (`EmulatorDevice::set_launch_shapes`). Shapes whose bits depend on the grid (split-K, a
    /// context split into parts) are sized for [`DeviceInfo::compute_units`] on every backend.
    fn shape_units(&self) -> u32 {
        self.info().compute_units
    }
}
