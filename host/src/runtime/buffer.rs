//! Device memory: [`Buffer<T>`], typed; [`RawBuffer`], the untyped allocation under it and under
//! [`Tensor`](crate::Tensor).

use crate::error::{Error, Result};
use crate::runtime::device::Device;
use ferrocm_device::abi::DevPtr;
use std::marker::PhantomData;

/// Readable bytes every allocation carries past its requested end (the size sent to the
/// backend is `bytes + ALLOC_SLACK` rounded up to 16).
///
/// Why: kernels read operands with 128-bit and range-checked dword loads at arbitrary byte
/// alignment (views start anywhere), so the load holding a buffer's last valid byte may reach up
/// to 15 bytes past it. Those bytes are read, never written, and never reach a result; the slack
/// makes sure they exist (on the GPU the next page may be unmapped; the emulator checks every
/// byte). [`RawBuffer::size_bytes`] stays the requested size.
pub const ALLOC_SLACK: u64 = 15;

/// One device allocation (freed on drop). Zero-byte allocations take no device memory and have
/// address 0.
pub struct RawBuffer {
    device: Device,
    addr: u64,
    bytes: u64,
}

impl std::fmt::Debug for RawBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RawBuffer({:#x}, {} bytes on {})", self.addr, self.bytes, self.device.backend())
    }
}

impl RawBuffer {
    /// Allocates `bytes` on `device`.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] or the backend's error.
    pub fn new(device: &Device, bytes: u64) -> Result<RawBuffer> {
        let addr = if bytes == 0 {
            0
        } else {
            let rounded =
                bytes.checked_add(ALLOC_SLACK).and_then(|b| b.checked_next_multiple_of(16)).ok_or(Error::OutOfMemory { bytes })?;
            device.backend_impl().alloc(rounded)?
        };
        Ok(RawBuffer { device: device.clone(), addr, bytes })
    }

    /// The device address of the first byte.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.bytes
    }

    /// The owning device.
    pub fn device(&self) -> &Device {
        &self.device
    }

    fn check_range(&self, offset: u64, len: u64) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.bytes => Ok(()),
            _ => Err(Error::LengthMismatch { expected: self.bytes.saturating_sub(offset) as usize, actual: len as usize }),
        }
    }

    /// Copies `src` to byte `offset`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] past the end; the backend's error.
    pub fn write(&self, offset: u64, src: &[u8]) -> Result<()> {
        self.check_range(offset, src.len() as u64)?;
        if src.is_empty() {
            return Ok(());
        }
        self.device.backend_impl().write(self.addr + offset, src)
    }

    /// Copies from byte `offset` into `dst`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] past the end; the backend's error.
    pub fn read(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        self.check_range(offset, dst.len() as u64)?;
        if dst.is_empty() {
            return Ok(());
        }
        self.device.backend_impl().read(self.addr + offset, dst)
    }

    /// Device-to-device copy of `bytes` from `src` (at `src_offset`) to `self` (at `offset`).
    ///
    /// # Errors
    /// [`Error::DeviceMismatch`], [`Error::LengthMismatch`], the backend's error.
    pub fn copy_from(&self, offset: u64, src: &RawBuffer, src_offset: u64, bytes: u64) -> Result<()> {
        if !self.device.same_device(&src.device) {
            return Err(Error::DeviceMismatch);
        }
        self.check_range(offset, bytes)?;
        src.check_range(src_offset, bytes)?;
        if bytes == 0 {
            return Ok(());
        }
        self.device.backend_impl().copy(self.addr + offset, src.addr + src_offset, bytes)
    }
}

impl Drop for RawBuffer {
    fn drop(&mut self) {
        if self.addr != 0 {
            self.device.backend_impl().free(self.addr);
        }
    }
}

/// A typed device buffer of `len` elements of `T`.
///
/// Created by [`Device::alloc`], [`Device::zeros`] or [`Device::from_slice`]; read back with
/// [`Buffer::to_vec`]. Pass it to kernels through [`Buffer::as_ptr`] (for raw launches) or to the
/// safe [`ops`](crate::ops).
pub struct Buffer<T> {
    raw: RawBuffer,
    len: usize,
    _elem: PhantomData<T>,
}

impl<T> std::fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer<{}>[{}] at {:#x}", std::any::type_name::<T>(), self.len, self.raw.addr)
    }
}

impl<T: bytemuck::Pod> Buffer<T> {
    pub(crate) fn alloc(device: &Device, len: usize) -> Result<Buffer<T>> {
        let elem = std::mem::size_of::<T>();
        let bytes = len.checked_mul(elem).ok_or(Error::AllocationOverflow { elements: len, elem_size: elem })?;
        Ok(Buffer { raw: RawBuffer::new(device, bytes as u64)?, len, _elem: PhantomData })
    }

    /// Element count.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The device this buffer lives on.
    pub fn device(&self) -> &Device {
        self.raw.device()
    }

    /// The underlying allocation.
    pub fn raw(&self) -> &RawBuffer {
        &self.raw
    }

    /// The untyped allocation, giving up the element type (for building a tensor).
    pub fn into_raw(self) -> RawBuffer {
        self.raw
    }

    /// The device address as a typed kernel-argument pointer.
    pub fn as_ptr(&self) -> DevPtr<T> {
        DevPtr::from_addr(self.raw.addr)
    }

    /// Copies the whole buffer to a new `Vec`.
    ///
    /// # Errors
    /// The backend's error (a failed earlier kernel surfaces here on HIP).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut v = vec![T::zeroed(); self.len];
        self.raw.read(0, bytemuck::cast_slice_mut(&mut v))?;
        Ok(v)
    }

    /// Overwrites the buffer with `data` (same length).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`]; the backend's error.
    pub fn copy_from_slice(&mut self, data: &[T]) -> Result<()> {
        if data.len() != self.len {
            return Err(Error::LengthMismatch { expected: self.len, actual: data.len() });
        }
        self.raw.write(0, bytemuck::cast_slice(data))
    }

    /// Copies another buffer of the same length and device into this one, on the device.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`], [`Error::DeviceMismatch`]; the backend's error.
    pub fn copy_from(&mut self, src: &Buffer<T>) -> Result<()> {
        if src.len != self.len {
            return Err(Error::LengthMismatch { expected: self.len, actual: src.len });
        }
        self.raw.copy_from(0, &src.raw, 0, self.size_bytes() as u64)
    }

    /// A new buffer with the same contents.
    ///
    /// # Errors
    /// As [`Device::alloc`] and [`Buffer::copy_from`].
    pub fn try_clone(&self) -> Result<Buffer<T>> {
        let mut b = Buffer::alloc(self.device(), self.len)?;
        b.copy_from(self)?;
        Ok(b)
    }
}
