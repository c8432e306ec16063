//! [`Device`]: one GPU (or emulated GPU) with ferrocm's code object loaded.

use crate::backend::emulator::EmulatorDevice;
use crate::backend::hip::HipDevice;
use crate::backend::{Backend, BackendKind, DeviceInfo, Launch};
use crate::code_objects;
use crate::error::{Error, Result};
use crate::runtime::buffer::Buffer;
use crate::runtime::launch::{LaunchConfig, validate};
use ferrocm_device::abi::{Kernel, KernelArgs};
use ferrocm_emu::codeobj::{CodeObject, KernelInfo};
use std::sync::Arc;

/// The architecture the emulator implements.
pub const EMULATED_ARCH: &str = "gfx942";

/// A device: where buffers live and kernels run. Cheap to clone (shared handle).
///
/// Get one with [`Device::new`] (HIP when a GPU is present, else the emulator; overridable with
/// `FERROCM_BACKEND=hip|emu`), or explicitly with [`Device::hip`] / [`Device::emulator`].
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
    backend: Box<dyn Backend>,
    code_object: CodeObject,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("info", self.info()).finish()
    }
}

impl Device {
    /// The default device.
    ///
    /// Rules: `FERROCM_BACKEND=hip` forces HIP device 0 (errors if unavailable), `=emu` forces the
    /// emulator; otherwise HIP device 0 when the HIP runtime is present and reports a GPU, else
    /// the emulator.
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
                _ => Device::emulator(),
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
        Ok(Device { inner: Arc::new(Inner { backend: Box::new(backend), code_object }) })
    }

    /// A new emulated gfx942 (its own device memory).
    ///
    /// # Errors
    /// [`Error::NoCodeObjectForArch`] if gfx942 was not built, or the emulator refusing the
    /// code object.
    pub fn emulator() -> Result<Device> {
        let bytes = code_objects::for_arch(EMULATED_ARCH)?;
        let code_object = CodeObject::parse_for(bytes, EMULATED_ARCH)?;
        let backend = EmulatorDevice::open(bytes)?;
        Ok(Device { inner: Arc::new(Inner { backend: Box::new(backend), code_object }) })
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

    /// The HIP backend's device, for streams and events; `None` on the emulator.
    pub fn as_hip(&self) -> Option<&HipDevice> {
        self.inner.backend.as_hip()
    }

    /// The emulator backend's device, for counters; `None` on HIP.
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

    /// A buffer of `len` elements with unspecified (but initialised, any-bit-pattern) contents.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`], [`Error::AllocationOverflow`].
    pub fn alloc<T: bytemuck::Pod>(&self, len: usize) -> Result<Buffer<T>> {
        Buffer::alloc(self, len)
    }

    /// A buffer of `len` zero elements.
    ///
    /// # Errors
    /// As [`Device::alloc`].
    pub fn zeros<T: bytemuck::Pod>(&self, len: usize) -> Result<Buffer<T>> {
        let b = Buffer::alloc(self, len)?;
        b.raw().write(0, &vec![0u8; b.size_bytes()])?;
        Ok(b)
    }

    /// A buffer holding a copy of `data`.
    ///
    /// # Errors
    /// As [`Device::alloc`].
    pub fn from_slice<T: bytemuck::Pod>(&self, data: &[T]) -> Result<Buffer<T>> {
        let b = Buffer::alloc(self, data.len())?;
        b.raw().write(0, bytemuck::cast_slice(data))?;
        Ok(b)
    }

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

    /// Launches `kernel` with `args` on this device (asynchronously on HIP).
    ///
    /// # Safety
    /// The pointers in `args` must point at live buffers of this device, large enough for every
    /// access the kernel makes for these arguments and this launch shape (the op wrappers in
    /// [`ops`](crate::ops) check this; raw launches are the caller's responsibility). The emulator
    /// reports out-of-bounds accesses as errors; a GPU does not.
    ///
    /// # Errors
    /// The validation errors of [`Device::validate_launch`], then the backend's.
    pub unsafe fn launch<A: KernelArgs>(&self, kernel: Kernel<A>, cfg: LaunchConfig, args: &A) -> Result<()> {
        let info = self.validate_launch(kernel, &cfg)?;
        let mut kernargs = vec![0u8; std::mem::size_of::<A>()];
        args.write_kernargs(&mut kernargs);
        self.inner.backend.launch(&Launch {
            kernel: info,
            grid: cfg.grid,
            block: cfg.block,
            dynamic_lds: cfg.dynamic_lds_bytes,
            kernargs: &kernargs,
        })
    }

    /// Waits until all work queued on the device has finished.
    ///
    /// # Errors
    /// The backend's error for a failed kernel or copy.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.backend.synchronize()
    }
}
