//! [`PinnedBuffer<T>`]: page-locked host memory, the source and destination of asynchronous
//! copies ([`Stream::copy_htod`](crate::Stream::copy_htod) and friends).
//!
//! Safety without `unsafe` for the caller: the buffer remembers the events recorded after the
//! copies queued on it. Reading it ([`PinnedBuffer::as_slice`]) waits for the copies that write
//! it; writing it ([`PinnedBuffer::as_mut_slice`]) and dropping it wait for all of them. A copy
//! that writes the buffer takes it by `&mut`, so no slice can be borrowed meanwhile.

use super::device::Device;
use super::event::Event;
use crate::error::{Error, Result};
use std::alloc::Layout;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Mutex;

/// Alignment of pageable fallback allocations (a page, like the runtime's pinned ones).
const PAGE: usize = 4096;

enum HostKind {
    /// `hipHostMalloc` memory: copies are truly asynchronous.
    Pinned,
    /// Ordinary memory (the emulator, or pinned memory unavailable): copies are synchronous.
    Pageable(Layout),
    /// Zero bytes: nothing allocated.
    Empty,
}

/// Host memory for asynchronous copies to and from a device: page-locked (`hipHostMalloc`) on
/// HIP, ordinary memory where that is unavailable (the emulator, or a failed pinned allocation:
/// [`PinnedBuffer::is_pinned`] is then false and copies are synchronous).
///
/// Get one with [`Device::alloc_pinned`]; it is zero-filled.
///
/// ```no_run
/// use ferrocm::Device;
/// let dev = Device::new()?;
/// let stream = dev.current_stream();
/// let mut host = dev.alloc_pinned::<f32>(1024)?;
/// host.as_mut_slice()?.iter_mut().enumerate().for_each(|(i, v)| *v = i as f32);
/// let buf = dev.alloc::<f32>(1024)?;
/// stream.copy_htod(&host, &buf)?;          // returns at once on HIP
/// let mut back = dev.alloc_pinned::<f32>(1024)?;
/// stream.copy_dtoh(&buf, &mut back)?;
/// assert_eq!(back.as_slice()?[1023], 1023.0); // waits for the copy
/// # Ok::<(), ferrocm::Error>(())
/// ```
pub struct PinnedBuffer<T> {
    device: Device,
    ptr: NonNull<u8>,
    len: usize,
    kind: HostKind,
    /// Events after queued copies that read the buffer (host to device).
    reads: Mutex<Vec<Event>>,
    /// Events after queued copies that write the buffer (device to host).
    writes: Mutex<Vec<Event>>,
    _elem: PhantomData<T>,
}

// SAFETY: the buffer owns its memory; shared access only reads it (`as_slice` after the copies
// writing it completed) or queues copies that read it.
unsafe impl<T: Send> Send for PinnedBuffer<T> {}
// SAFETY: as above; `&PinnedBuffer` gives out `&[T]` only.
unsafe impl<T: Sync> Sync for PinnedBuffer<T> {}

impl<T> std::fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PinnedBuffer<{}>[{}] ({})", std::any::type_name::<T>(), self.len, if self.is_pinned() { "pinned" } else { "pageable" })
    }
}

fn wait_all(events: &Mutex<Vec<Event>>) -> Result<()> {
    let mut list = events.lock().unwrap_or_else(|p| p.into_inner());
    for e in list.iter() {
        e.synchronize()?;
    }
    list.clear();
    Ok(())
}

impl<T: bytemuck::Pod> PinnedBuffer<T> {
    pub(crate) fn alloc(device: &Device, len: usize) -> Result<PinnedBuffer<T>> {
        let elem = std::mem::size_of::<T>();
        let bytes = len.checked_mul(elem).ok_or(Error::AllocationOverflow { elements: len, elem_size: elem })?;
        let (ptr, kind) = if bytes == 0 {
            (NonNull::<u64>::dangling().cast(), HostKind::Empty)
        } else {
            match device.backend_impl().host_alloc(bytes) {
                Ok(Some(p)) => (p, HostKind::Pinned),
                // No pinned memory here (the emulator), or none left: ordinary memory, with
                // synchronous copies.
                Ok(None) | Err(_) => {
                    let layout = Layout::from_size_align(bytes, PAGE.max(std::mem::align_of::<T>()))
                        .map_err(|_| Error::AllocationOverflow { elements: len, elem_size: elem })?;
                    // SAFETY: non-zero size.
                    let p = unsafe { std::alloc::alloc(layout) };
                    let p = NonNull::new(p).ok_or(Error::HostOutOfMemory { bytes: bytes as u64 })?;
                    (p, HostKind::Pageable(layout))
                }
            }
        };
        if bytes != 0 {
            // Both allocators return uninitialised memory; a `&[T]` of it must be initialised.
            // SAFETY: `bytes` writable bytes at `ptr`.
            unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, bytes) };
        }
        Ok(PinnedBuffer {
            device: device.clone(),
            ptr,
            len,
            kind,
            reads: Mutex::new(Vec::new()),
            writes: Mutex::new(Vec::new()),
            _elem: PhantomData,
        })
    }

    /// The contents, once the queued copies into the buffer have completed.
    ///
    /// # Errors
    /// The backend's error (a failed copy).
    pub fn as_slice(&self) -> Result<&[T]> {
        wait_all(&self.writes)?;
        // SAFETY: `len` initialised elements; no queued copy writes them any more, and new ones
        // need `&mut self`.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr() as *const T, self.len) })
    }

    /// The contents for writing, once every queued copy from or into the buffer has completed.
    ///
    /// # Errors
    /// The backend's error.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.synchronize()?;
        // SAFETY: exclusive access; no copy in flight.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr() as *mut T, self.len) })
    }

    /// Waits for every queued copy from or into the buffer.
    ///
    /// # Errors
    /// The backend's error.
    pub fn synchronize(&self) -> Result<()> {
        wait_all(&self.reads)?;
        wait_all(&self.writes)
    }

    /// Remembers a queued copy that reads (`write == false`) or writes the buffer; completed
    /// ones are forgotten on the way.
    pub(crate) fn track(&self, event: Event, writes: bool) -> Result<()> {
        let list = if writes { &self.writes } else { &self.reads };
        let mut list = list.lock().unwrap_or_else(|p| p.into_inner());
        let mut still = Vec::with_capacity(list.len() + 1);
        for e in list.drain(..) {
            if !e.is_complete()? {
                still.push(e);
            }
        }
        still.push(event);
        *list = still;
        Ok(())
    }
}

impl<T> PinnedBuffer<T> {
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

    /// True for page-locked memory (asynchronous copies); false for the pageable fallback.
    pub fn is_pinned(&self) -> bool {
        matches!(self.kind, HostKind::Pinned)
    }

    /// The device whose copies use the buffer.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Start of the bytes (for the copy methods).
    pub(crate) fn host_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl<T> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        // Queued copies must not outlive the memory. If waiting fails the device is broken;
        // leaking is then the only safe choice.
        let waited =
            [&self.reads, &self.writes].iter().all(|l| l.lock().unwrap_or_else(|p| p.into_inner()).iter().all(|e| e.synchronize().is_ok()));
        match self.kind {
            HostKind::Pinned if waited => {
                // SAFETY: from host_alloc, no copy in flight.
                unsafe { self.device.backend_impl().host_free(self.ptr) }
            }
            // SAFETY: allocated with this layout; host copies are synchronous, none in flight.
            HostKind::Pageable(layout) => unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) },
            _ => {}
        }
    }
}
