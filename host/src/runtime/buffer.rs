//! Device memory: [`RawBuffer`], one block of the memory pool, and [`Buffer<T>`], typed and
//! one-dimensional. [`Tensor`](crate::Tensor) is the shaped view over the same blocks.

use super::device::Device;
use super::pool::MemoryPool;
use crate::error::{Error, Result};
use ferrocm_device::abi::DevPtr;
use std::marker::PhantomData;
use std::sync::Arc;

/// Readable bytes every allocation carries past its requested end (the block is at least
/// `bytes + ALLOC_SLACK`).
///
/// Why: kernels read operands with 128-bit and range-checked dword loads at arbitrary byte
/// alignment (views start anywhere), so the load holding a buffer's last valid byte may reach up
/// to 15 bytes past it. Those bytes are read, never written, and never reach a result; the slack
/// makes sure they exist (on the GPU the next page may be unmapped; the emulator checks every
/// byte). [`RawBuffer::size_bytes`] stays the requested size.
pub const ALLOC_SLACK: u64 = 15;

/// One device allocation: a block of the device's [`MemoryPool`], returned to it when the last
/// handle goes. Zero-byte allocations take no block and have address 0.
///
/// Shared (`Arc`) by every [`Tensor`](crate::Tensor) view and [`Buffer`] over it, and by the
/// runtime while queued work still uses it, so it is never reused early. Get it from
/// [`Tensor::storage`](crate::Tensor::storage) or [`Buffer::raw`].
pub struct RawBuffer {
    pool: Arc<MemoryPool>,
    device_id: u64,
    addr: u64,
    bytes: u64,
    class: u64,
}

impl std::fmt::Debug for RawBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RawBuffer({:#x}, {} bytes)", self.addr, self.bytes)
    }
}

impl RawBuffer {
    pub(crate) fn new(pool: Arc<MemoryPool>, device_id: u64, addr: u64, bytes: u64, class: u64) -> RawBuffer {
        RawBuffer { pool, device_id, addr, bytes, class }
    }

    /// The device address of the first byte.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Size in bytes (as requested; the block may be larger).
    pub fn size_bytes(&self) -> u64 {
        self.bytes
    }

    /// The id of the owning device ([`Device::id`]).
    pub fn device_id(&self) -> u64 {
        self.device_id
    }

    /// `Ok` when `[offset, offset + len)` lies inside.
    pub(crate) fn check_range(&self, offset: u64, len: u64) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.bytes => Ok(()),
            _ => Err(Error::LengthMismatch { expected: self.bytes.saturating_sub(offset) as usize, actual: len as usize }),
        }
    }
}

impl Drop for RawBuffer {
    fn drop(&mut self) {
        if self.class != 0 {
            self.pool.release(self.addr, self.class);
        }
    }
}

/// A typed device buffer of `len` elements of `T`.
///
/// Created by [`Device::alloc`], [`Device::zeros`] or [`Device::from_slice`]; read back with
/// [`Buffer::to_vec`]; copied asynchronously from and to pinned host memory with
/// [`Stream::copy_htod`](crate::Stream::copy_htod) / [`Stream::copy_dtoh`](crate::Stream::copy_dtoh).
/// Pass it to the ops that take buffers ([`ops::basic`](crate::ops::basic)) or to raw launches
/// through [`Buffer::as_ptr`].
pub struct Buffer<T> {
    device: Device,
    raw: Arc<RawBuffer>,
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
        Ok(Buffer { device: device.clone(), raw: Arc::new(device.alloc_raw(bytes as u64)?), len, _elem: PhantomData })
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
        &self.device
    }

    /// The underlying allocation.
    pub fn raw(&self) -> &Arc<RawBuffer> {
        &self.raw
    }

    /// The device address as a typed kernel-argument pointer (for raw launches, whose caller
    /// must keep the buffer alive until the stream has passed the launch).
    pub fn as_ptr(&self) -> DevPtr<T> {
        DevPtr::from_addr(self.raw.addr)
    }

    /// Copies the whole buffer to a new `Vec`, after the work queued before on the current
    /// stream (synchronous).
    ///
    /// # Errors
    /// The backend's error (a failed earlier kernel surfaces here on HIP).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut v = vec![T::zeroed(); self.len];
        self.device.read_bytes(&self.raw, 0, bytemuck::cast_slice_mut(&mut v))?;
        Ok(v)
    }

    /// Overwrites the buffer with `data` (same length), ordered on the current stream; returns
    /// when the copy is done.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`]; the backend's error.
    pub fn copy_from_slice(&mut self, data: &[T]) -> Result<()> {
        if data.len() != self.len {
            return Err(Error::LengthMismatch { expected: self.len, actual: data.len() });
        }
        self.device.write_bytes(&self.raw, 0, bytemuck::cast_slice(data))
    }

    /// Copies another buffer of the same length and device into this one, on the device
    /// (queued on the current stream).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`], [`Error::DeviceMismatch`]; the backend's error.
    pub fn copy_from(&mut self, src: &Buffer<T>) -> Result<()> {
        if src.len != self.len {
            return Err(Error::LengthMismatch { expected: self.len, actual: src.len });
        }
        if !src.device.same_device(&self.device) {
            return Err(Error::DeviceMismatch { op: "Buffer::copy_from", operand: "src" });
        }
        self.device.copy_device(&self.raw, 0, &src.raw, 0, self.size_bytes() as u64)
    }

    /// A new buffer with the same contents.
    ///
    /// # Errors
    /// As [`Device::alloc`] and [`Buffer::copy_from`].
    pub fn try_clone(&self) -> Result<Buffer<T>> {
        let mut b = Buffer::alloc(&self.device, self.len)?;
        b.copy_from(self)?;
        Ok(b)
    }
}
