//! Asynchronous copies between pinned host memory ([`PinnedBuffer`]) and device memory, queued
//! on a [`Stream`].
//!
//! A copy keeps its device operand alive until the stream has passed it (like a launch) and
//! leaves an event on the pinned buffer, which host access then waits for. With a pageable
//! fallback buffer (the emulator, or no pinned memory) the copy is synchronous.

use super::buffer::{Buffer, RawBuffer};
use super::event::Event;
use super::pinned::PinnedBuffer;
use super::stream::Stream;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::ops::Range;
use std::sync::Arc;

impl Stream {
    fn check_host<T>(&self, what: &'static str, host: &PinnedBuffer<T>) -> Result<()> {
        if !host.device().same_device(self.device()) {
            return Err(Error::ForeignHandle { what });
        }
        Ok(())
    }

    fn check_device(&self, op: &'static str, operand: &'static str, raw: &RawBuffer) -> Result<()> {
        if raw.device_id() != self.device().id() {
            return Err(Error::DeviceMismatch { op, operand });
        }
        Ok(())
    }

    /// Host to device: `len` bytes of `host` at `host_off` into `dst` at `dst_off`.
    fn htod<T: bytemuck::Pod>(
        &self,
        host: &PinnedBuffer<T>,
        host_off: usize,
        dst: &Arc<RawBuffer>,
        dst_off: u64,
        len: usize,
    ) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let backend = self.device().backend_impl();
        // SAFETY: the range was checked inside `host`; the byte pointer stays valid while `host`
        // lives, and `host` waits for the tracked event before being written or freed.
        let src = unsafe { host.host_ptr().add(host_off) };
        if !host.is_pinned() {
            // SAFETY: as above, read synchronously.
            return backend.write(self.core().raw, dst.addr() + dst_off, unsafe { std::slice::from_raw_parts(src, len) });
        }
        // SAFETY: pinned memory, tracked below until the stream passes the copy.
        unsafe { backend.write_async(self.core().raw, dst.addr() + dst_off, src, len)? };
        host.track(Event::recorded_untimed(self)?, false)?;
        self.core().hold_until_passed(vec![dst.clone()])
    }

    /// Device to host: `len` bytes of `src` at `src_off` into `host` at `host_off`.
    fn dtoh<T: bytemuck::Pod>(
        &self,
        src: &Arc<RawBuffer>,
        src_off: u64,
        host: &mut PinnedBuffer<T>,
        host_off: usize,
        len: usize,
    ) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        // Earlier copies still reading the buffer must finish before the device overwrites it.
        host.synchronize()?;
        let backend = self.device().backend_impl();
        // SAFETY: range checked by the callers; exclusive access through `&mut`.
        let dst = unsafe { host.host_ptr().add(host_off) };
        if !host.is_pinned() {
            // SAFETY: as above, written synchronously.
            return backend.read(self.core().raw, src.addr() + src_off, unsafe { std::slice::from_raw_parts_mut(dst, len) });
        }
        // SAFETY: pinned memory, tracked below: `as_slice` and drop wait for the event.
        unsafe { backend.read_async(self.core().raw, src.addr() + src_off, dst, len)? };
        host.track(Event::recorded_untimed(self)?, true)?;
        self.core().hold_until_passed(vec![src.clone()])
    }

    /// Queues a copy of all of `src` into `dst` (same length) on this stream. With pinned
    /// memory it returns at once; `src` must not change until the copy is done, which
    /// [`PinnedBuffer::as_mut_slice`] enforces by waiting.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`]; [`Error::ForeignHandle`] / [`Error::DeviceMismatch`] for a
    /// buffer of another device; the backend's error.
    pub fn copy_htod<T: bytemuck::Pod>(&self, src: &PinnedBuffer<T>, dst: &Buffer<T>) -> Result<()> {
        self.check_host("the pinned buffer", src)?;
        self.check_device("copy_htod", "dst", dst.raw())?;
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { expected: dst.len(), actual: src.len() });
        }
        self.htod(src, 0, dst.raw(), 0, dst.size_bytes())
    }

    /// Queues a copy of all of `src` into `dst` (same length) on this stream; reading `dst`
    /// ([`PinnedBuffer::as_slice`]) waits for it.
    ///
    /// # Errors
    /// As [`Stream::copy_htod`].
    pub fn copy_dtoh<T: bytemuck::Pod>(&self, src: &Buffer<T>, dst: &mut PinnedBuffer<T>) -> Result<()> {
        self.check_host("the pinned buffer", dst)?;
        self.check_device("copy_dtoh", "src", src.raw())?;
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { expected: src.len(), actual: dst.len() });
        }
        self.dtoh(src.raw(), 0, dst, 0, src.size_bytes())
    }

    /// Queues a copy of `src[src_range]` into the bytes of the contiguous tensor `dst` starting
    /// at byte `dst_byte` (for loaders filling a tensor chunk by chunk).
    ///
    /// # Errors
    /// [`Error::Layout`] for a strided `dst`; [`Error::InvalidArgument`] for ranges outside
    /// either side; as [`Stream::copy_htod`].
    pub fn copy_htod_bytes(&self, src: &PinnedBuffer<u8>, src_range: Range<usize>, dst: &Tensor, dst_byte: usize) -> Result<()> {
        self.check_host("the pinned buffer", src)?;
        self.check_device("copy_htod_bytes", "dst", dst.storage())?;
        let (off, len) = byte_window("copy_htod_bytes", src.len(), &src_range, dst, dst_byte)?;
        self.htod(src, src_range.start, dst.storage(), off, len)
    }

    /// Queues a copy of the bytes of the contiguous tensor `src` starting at byte `src_byte`
    /// into `dst[dst_range]`.
    ///
    /// # Errors
    /// As [`Stream::copy_htod_bytes`].
    pub fn copy_dtoh_bytes(&self, src: &Tensor, src_byte: usize, dst: &mut PinnedBuffer<u8>, dst_range: Range<usize>) -> Result<()> {
        self.check_host("the pinned buffer", dst)?;
        self.check_device("copy_dtoh_bytes", "src", src.storage())?;
        let (off, len) = byte_window("copy_dtoh_bytes", dst.len(), &dst_range, src, src_byte)?;
        self.dtoh(src.storage(), off, dst, dst_range.start, len)
    }
}

/// Checks a host byte range against its buffer and the same length at `byte` inside the
/// contiguous tensor `t`; returns the storage offset and the length.
fn byte_window(op: &'static str, host_len: usize, range: &Range<usize>, t: &Tensor, byte: usize) -> Result<(u64, usize)> {
    if !t.is_contiguous() {
        return Err(Error::Layout { op, message: "the tensor must be contiguous".into() });
    }
    if range.start > range.end || range.end > host_len {
        return Err(Error::InvalidArgument { op, message: format!("host range {range:?} outside a buffer of {host_len} bytes") });
    }
    let len = range.end - range.start;
    let tensor_bytes = t.numel().checked_mul(t.dtype().size()).unwrap_or(usize::MAX);
    if byte.checked_add(len).is_none_or(|end| end > tensor_bytes) {
        return Err(Error::InvalidArgument { op, message: format!("{len} bytes at byte {byte} of a tensor of {tensor_bytes} bytes") });
    }
    Ok(((t.offset() * t.dtype().size() + byte) as u64, len))
}
