//! [`Device`]: one GPU (or emulated GPU) with ferrocm's code object loaded, its memory pool,
//! its streams and its resolved kernels.

use super::buffer::{ALLOC_SLACK, Buffer, RawBuffer};
use super::launch::{LaunchConfig, ResolvedKernel, validate, validate_args, validate_shape};
use super::pinned::PinnedBuffer;
use super::pool::{MemoryPool, size_class};
use super::stream::{EventCache, Held, Stream, StreamCore, current_core};
#[cfg(feature = "emulator")]
use crate::backend::emulator::EmulatorDevice;
use crate::backend::hip::HipDevice;
use crate::backend::{Backend, BackendKind, DeviceInfo, Launch};
use crate::code_objects;
use crate::error::{Error, Result};
use ferrocm_codeobj::{CodeObject, KernelInfo};
use ferrocm_device::abi::{Kernel, KernelArgs};
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// The architecture the emulator implements.
pub const EMULATED_ARCH: &str = "gfx942";

/// A device: where buffers live and kernels run. Cheap to clone (shared handle).
///
/// Get one with [`Device::new`] (HIP when a GPU is present, else the emulator; overridable with
/// `FERROCM_BACKEND=hip|emu`), or explicitly with [`Device::hip`] / [`Device::emulator`].
/// Each device has its own memory ([`Device::memory_pool`]), a default [`Stream`] and any
/// number of others ([`Device::new_stream`]).
///
/// ```no_run
/// let dev = ferrocm::Device::new()?;
/// let x = dev.from_slice(&[1.0f32, 2.0, 3.0])?;
/// assert_eq!(x.to_vec()?, vec![1.0, 2.0, 3.0]);
/// # Ok::<(), ferrocm::Error>(())
/// ```
#[derive(Clone)]
pub struct Device {
    inner: Arc<Inner>,
}

struct Inner {
    id: u64,
    backend: Arc<dyn Backend>,
    code_object: CodeObject,
    pool: Arc<MemoryPool>,
    events: Arc<EventCache>,
    default_stream: Arc<StreamCore>,
    /// Every stream made with `new_stream` that is still alive (for device-wide release).
    streams: Mutex<Vec<Weak<StreamCore>>>,
    /// Kernels resolved on this device, by symbol.
    kernels: Mutex<HashMap<&'static str, Arc<ResolvedKernel>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // No tensor, buffer or stream of the device is left (they hold it); what the default
        // stream still holds is released once the device is idle, before the pool, the events
        // and the backend go (in field order).
        if self.backend.synchronize().is_ok() {
            self.default_stream.release_all_complete();
        }
    }
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("id", &self.inner.id).field("info", self.info()).finish()
    }
}

static NEXT_DEVICE_ID: AtomicU64 = AtomicU64::new(1);

impl Device {
    /// The default device.
    ///
    /// Rules: `FERROCM_BACKEND=hip` forces HIP device 0 (errors if unavailable), `=emu` forces the
    /// emulator; otherwise HIP device 0 when the HIP runtime is present and reports a GPU, else
    /// the emulator. Built without the `emulator` feature there is no fallback: no GPU is
    /// [`Error::BackendUnavailable`] naming why HIP found none.
    ///
    /// # Errors
    /// A bad FERROCM_BACKEND value, or the forced/selected backend failing to open.
    pub fn new() -> Result<Device> {
        match std::env::var("FERROCM_BACKEND") {
            Ok(v) if v == "hip" => Device::hip(0),
            Ok(v) if v == "emu" || v == "emulator" => Device::emulator(),
            Ok(v) => Err(Error::BadBackendVariable { value: v }),
            Err(_) => match crate::backend::hip::device_count() {
                Ok(n) if n > 0 => Device::hip(0),
                #[cfg(feature = "emulator")]
                _ => Device::emulator(),
                #[cfg(not(feature = "emulator"))]
                found => Err(Error::BackendUnavailable {
                    backend: "emulator",
                    reason: format!(
                        "no GPU was found ({}) and ferrocm was built without its `emulator` feature",
                        match found {
                            Ok(_) => "HIP reports none".to_string(),
                            Err(e) => e.to_string(),
                        }
                    ),
                }),
            },
        }
    }

    /// HIP device `ordinal`.
    ///
    /// # Errors
    /// [`Error::HipNotFound`] without ROCm, [`Error::NoDevice`] without a GPU,
    /// [`Error::NoCodeObjectForArch`] for a GPU ferrocm was not built for, or a HIP call's error.
    pub fn hip(ordinal: usize) -> Result<Device> {
        let (_, info) = HipDevice::probe(ordinal)?;
        let bytes = code_objects::for_arch(&info.arch)?;
        let code_object = CodeObject::parse_for(bytes, &info.arch)?;
        let backend = HipDevice::open(ordinal, bytes)?;
        Ok(Device::with_backend(Arc::new(backend), code_object))
    }

    /// A new emulated gfx942 (its own device memory).
    ///
    /// # Errors
    /// [`Error::NoCodeObjectForArch`] if gfx942 was not built, or the emulator refusing the
    /// code object; [`Error::BackendUnavailable`] when ferrocm was built without its `emulator`
    /// feature.
    pub fn emulator() -> Result<Device> {
        #[cfg(feature = "emulator")]
        {
            let bytes = code_objects::for_arch(EMULATED_ARCH)?;
            let code_object = CodeObject::parse_for(bytes, EMULATED_ARCH)?;
            let backend = EmulatorDevice::open(bytes)?;
            Ok(Device::with_backend(Arc::new(backend), code_object))
        }
        #[cfg(not(feature = "emulator"))]
        Err(Error::BackendUnavailable {
            backend: "emulator",
            reason: "ferrocm was built without its `emulator` feature (it is on by default)".into(),
        })
    }

    fn with_backend(backend: Arc<dyn Backend>, code_object: CodeObject) -> Device {
        let id = NEXT_DEVICE_ID.fetch_add(1, Ordering::Relaxed);
        let events = Arc::new(EventCache::new(backend.clone()));
        let default_stream = Arc::new(StreamCore::new(backend.clone(), backend.default_stream(), id, false, events.clone()));
        Device {
            inner: Arc::new(Inner {
                id,
                pool: Arc::new(MemoryPool::new(backend.clone())),
                backend,
                code_object,
                events,
                default_stream,
                streams: Mutex::new(Vec::new()),
                kernels: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// A number identifying this device among those opened by the process (distinct for two
    /// [`Device::emulator`] calls, equal for clones of one handle).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// What the device is.
    pub fn info(&self) -> &DeviceInfo {
        self.inner.backend.info()
    }

    /// The backend in use.
    pub fn backend(&self) -> BackendKind {
        self.info().backend
    }

    /// The architecture, e.g. `gfx942`.
    pub fn arch(&self) -> &str {
        &self.info().arch
    }

    /// The loaded code object (kernels, metadata, descriptors).
    pub fn code_object(&self) -> &CodeObject {
        &self.inner.code_object
    }

    /// The HIP backend's device (runtime version, library path); `None` on the emulator.
    pub fn as_hip(&self) -> Option<&HipDevice> {
        self.inner.backend.as_hip()
    }

    /// The emulator backend's device, for counters and profiling; `None` on HIP. (With the
    /// `emulator` feature, on by default.)
    #[cfg(feature = "emulator")]
    pub fn as_emulator(&self) -> Option<&EmulatorDevice> {
        self.inner.backend.as_emulator()
    }

    /// True when both handles are the same device.
    pub fn same_device(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub(crate) fn backend_impl(&self) -> &dyn Backend {
        &*self.inner.backend
    }

    // ---- streams --------------------------------------------------------------------------

    /// The stream every op uses unless another is made current ([`Stream::enter`]).
    pub fn default_stream(&self) -> Stream {
        Stream::from_core(self.clone(), self.inner.default_stream.clone())
    }

    /// The calling thread's current stream of this device: the innermost one entered with
    /// [`Stream::enter`], else the default stream. Ops, copies and `to_vec` queue here.
    pub fn current_stream(&self) -> Stream {
        Stream::from_core(self.clone(), self.current_core())
    }

    pub(crate) fn current_core(&self) -> Arc<StreamCore> {
        current_core(self.inner.id).unwrap_or_else(|| self.inner.default_stream.clone())
    }

    /// A new stream of this device.
    ///
    /// # Errors
    /// The backend's error.
    pub fn new_stream(&self) -> Result<Stream> {
        let raw = self.inner.backend.create_stream()?;
        let core = Arc::new(StreamCore::new(self.inner.backend.clone(), raw, self.inner.id, true, self.inner.events.clone()));
        let mut streams = self.inner.streams.lock().unwrap_or_else(|p| p.into_inner());
        streams.retain(|s| s.strong_count() > 0);
        streams.push(Arc::downgrade(&core));
        Ok(Stream::from_core(self.clone(), core))
    }

    fn live_streams(&self) -> Vec<Arc<StreamCore>> {
        let streams = self.inner.streams.lock().unwrap_or_else(|p| p.into_inner());
        std::iter::once(self.inner.default_stream.clone()).chain(streams.iter().filter_map(Weak::upgrade)).collect()
    }

    /// Waits until all work queued on every stream of the device has finished, and returns the
    /// memory that work held to the pool.
    ///
    /// # Errors
    /// The backend's error for a failed kernel or copy.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.backend.synchronize()?;
        for s in self.live_streams() {
            s.release_all_complete();
        }
        Ok(())
    }

    // ---- memory ---------------------------------------------------------------------------

    /// The device's caching allocator (statistics, `empty_cache`, `trim`).
    pub fn memory_pool(&self) -> &MemoryPool {
        &self.inner.pool
    }

    /// A block of at least `bytes` (+ [`ALLOC_SLACK`]) bytes from the pool.
    pub(crate) fn alloc_raw(&self, bytes: u64) -> Result<RawBuffer> {
        let pool = &self.inner.pool;
        if bytes == 0 {
            return Ok(RawBuffer::new(pool.clone(), self.inner.id, 0, 0, 0));
        }
        let class = bytes.checked_add(ALLOC_SLACK).and_then(size_class).ok_or_else(|| pool.out_of_memory(bytes))?;
        let wrap = |addr| RawBuffer::new(pool.clone(), self.inner.id, addr, bytes, class);
        if let Some(addr) = pool.take(class) {
            return Ok(wrap(addr));
        }
        // Blocks whose last work has completed but which nobody released yet.
        for s in self.live_streams() {
            s.release_passed()?;
        }
        if let Some(addr) = pool.take(class) {
            return Ok(wrap(addr));
        }
        match pool.allocate(class) {
            Ok(addr) => Ok(wrap(addr)),
            Err(Error::OutOfMemory { .. }) => {
                // Wait for everything queued (releasing what it held), give the cache back to
                // the device, and try once more.
                self.synchronize()?;
                if let Some(addr) = pool.take(class) {
                    return Ok(wrap(addr));
                }
                pool.empty_cache();
                pool.allocate(class).map(wrap).map_err(|e| match e {
                    Error::OutOfMemory { free, .. } => Error::OutOfMemory { requested: bytes, free },
                    e => e,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// A buffer of `len` elements with unspecified (but initialised, any-bit-pattern) contents.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`], [`Error::AllocationOverflow`].
    pub fn alloc<T: bytemuck::Pod>(&self, len: usize) -> Result<Buffer<T>> {
        Buffer::alloc(self, len)
    }

    /// A buffer of `len` zero elements (zeroed on the current stream).
    ///
    /// # Errors
    /// As [`Device::alloc`].
    pub fn zeros<T: bytemuck::Pod>(&self, len: usize) -> Result<Buffer<T>> {
        let b = Buffer::alloc(self, len)?;
        self.memset(b.raw(), 0, b.size_bytes() as u64)?;
        Ok(b)
    }

    /// A buffer holding a copy of `data`.
    ///
    /// # Errors
    /// As [`Device::alloc`].
    pub fn from_slice<T: bytemuck::Pod>(&self, data: &[T]) -> Result<Buffer<T>> {
        let b = Buffer::alloc(self, data.len())?;
        self.write_bytes(b.raw(), 0, bytemuck::cast_slice(data))?;
        Ok(b)
    }

    /// Host memory of `len` elements for asynchronous copies (page-locked on HIP), zero-filled.
    ///
    /// # Errors
    /// [`Error::AllocationOverflow`], [`Error::HostOutOfMemory`].
    pub fn alloc_pinned<T: bytemuck::Pod>(&self, len: usize) -> Result<PinnedBuffer<T>> {
        PinnedBuffer::alloc(self, len)
    }

    fn check_owner(&self, op: &'static str, raw: &RawBuffer) -> Result<()> {
        if raw.device_id() != self.inner.id {
            return Err(Error::DeviceMismatch { op, operand: "buffer" });
        }
        Ok(())
    }

    /// Host to device on the current stream; returns when `src` has been copied.
    pub(crate) fn write_bytes(&self, raw: &Arc<RawBuffer>, offset: u64, src: &[u8]) -> Result<()> {
        self.check_owner("write", raw)?;
        raw.check_range(offset, src.len() as u64)?;
        if src.is_empty() {
            return Ok(());
        }
        self.inner.backend.write(self.current_core().raw, raw.addr() + offset, src)
    }

    /// Device to host after the work queued on the current stream.
    pub(crate) fn read_bytes(&self, raw: &Arc<RawBuffer>, offset: u64, dst: &mut [u8]) -> Result<()> {
        self.check_owner("read", raw)?;
        raw.check_range(offset, dst.len() as u64)?;
        if dst.is_empty() {
            return Ok(());
        }
        self.inner.backend.read(self.current_core().raw, raw.addr() + offset, dst)
    }

    /// Device to device, queued on the current stream.
    pub(crate) fn copy_device(&self, dst: &Arc<RawBuffer>, dst_off: u64, src: &Arc<RawBuffer>, src_off: u64, bytes: u64) -> Result<()> {
        self.check_owner("copy", dst)?;
        self.check_owner("copy", src)?;
        dst.check_range(dst_off, bytes)?;
        src.check_range(src_off, bytes)?;
        if bytes == 0 {
            return Ok(());
        }
        let stream = self.current_core();
        self.inner.backend.copy(stream.raw, dst.addr() + dst_off, src.addr() + src_off, bytes)?;
        stream.hold_until_passed(vec![dst.clone(), src.clone()])
    }

    /// Fills `bytes` bytes of `raw` with `value`, queued on the current stream.
    pub(crate) fn memset(&self, raw: &Arc<RawBuffer>, value: u8, bytes: u64) -> Result<()> {
        self.check_owner("memset", raw)?;
        raw.check_range(0, bytes)?;
        if bytes == 0 {
            return Ok(());
        }
        let stream = self.current_core();
        self.inner.backend.memset(stream.raw, raw.addr(), value, bytes)?;
        stream.hold_until_passed(vec![raw.clone()])
    }

    // ---- kernels --------------------------------------------------------------------------

    /// Checks a launch without running it: the kernel exists for this device's architecture, the
    /// argument struct matches the kernel's kernarg layout, and block, LDS and grid are valid.
    ///
    /// # Errors
    /// One variant per violation: [`Error::KernelNotFound`], [`Error::KernargSizeMismatch`],
    /// [`Error::KernargLayoutMismatch`], [`Error::EmptyBlock`], [`Error::BlockTooLarge`],
    /// [`Error::LdsTooLarge`], [`Error::EmptyGrid`], [`Error::GridTooLarge`].
    pub fn validate_launch<A: KernelArgs>(&self, kernel: Kernel<A>, cfg: &LaunchConfig) -> Result<&KernelInfo> {
        validate(&self.inner.code_object, kernel, cfg)
    }

    /// The kernel's resolved handle: looked up, checked against `A` and bound to the backend
    /// once per device, then taken from the cache.
    fn resolve<A: KernelArgs + 'static>(&self, kernel: Kernel<A>) -> Result<Arc<ResolvedKernel>> {
        let name = kernel.name();
        let mut cache = self.inner.kernels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = cache.get(name).filter(|r| r.args == TypeId::of::<A>()) {
            return Ok(r.clone());
        }
        let info = validate_args(&self.inner.code_object, kernel)?;
        let resolved = Arc::new(ResolvedKernel {
            name,
            function: self.inner.backend.function(name)?,
            args: TypeId::of::<A>(),
            max_threads: info.meta.max_flat_workgroup_size,
            static_lds: info.meta.group_segment_fixed_size,
        });
        cache.insert(name, resolved.clone());
        Ok(resolved)
    }

    /// Queues `kernel` on `stream` and keeps `operands` alive until the stream has passed it.
    ///
    /// # Safety
    /// As [`Device::launch`], with `operands` holding every allocation `args` points into.
    pub(crate) unsafe fn launch_on<A: KernelArgs + 'static>(
        &self,
        stream: &StreamCore,
        kernel: Kernel<A>,
        cfg: LaunchConfig,
        args: &A,
        operands: Held,
    ) -> Result<()> {
        let k = self.resolve(kernel)?;
        validate_shape(k.name, k.max_threads, k.static_lds, &cfg)?;
        let mut kernargs = vec![0u8; std::mem::size_of::<A>()];
        args.write_kernargs(&mut kernargs);
        let launch = Launch {
            function: k.function,
            name: k.name,
            grid: cfg.grid,
            block: cfg.block,
            dynamic_lds: cfg.dynamic_lds_bytes,
            kernargs: &kernargs,
        };
        // SAFETY: validated above; the caller guarantees the operands.
        unsafe { self.inner.backend.launch(stream.raw, &launch)? };
        stream.hold_until_passed(operands)
    }

    /// Launches `kernel` with `args` on the current stream (asynchronously on HIP).
    ///
    /// Prefer [`Operands`](crate::Operands), which checks and keeps every operand alive; this
    /// raw form keeps nothing.
    ///
    /// # Safety
    /// The pointers in `args` must point at live buffers of this device, large enough for every
    /// access the kernel makes for these arguments and this launch shape, and those buffers must
    /// stay alive until the stream has passed the launch (synchronise, or wait for an event
    /// recorded after it). The emulator reports out-of-bounds accesses as errors; a GPU does not.
    ///
    /// # Errors
    /// The validation errors of [`Device::validate_launch`], then the backend's.
    pub unsafe fn launch<A: KernelArgs + 'static>(&self, kernel: Kernel<A>, cfg: LaunchConfig, args: &A) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.launch_on(&self.current_core(), kernel, cfg, args, Vec::new()) }
    }
}
