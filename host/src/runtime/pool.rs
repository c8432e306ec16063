//! The caching memory pool: every device allocation goes through it.
//!
//! Why: a device allocation (`hipMalloc`) costs microseconds and `hipFree` waits for the whole
//! device, so an op that makes temporaries (a contiguous copy, split-K partials) would stall the
//! GPU once per call. The pool keeps freed blocks and hands them out again.
//!
//! Rules:
//! - Sizes are rounded up to a *size class*: 512 bytes at least, then four classes per power of
//!   two (at most 25% rounding, 12.5% on average), with steps capped at 2 MiB for large blocks.
//!   A request takes a cached block of exactly its class, else a new device allocation.
//! - A block comes back to the pool only when nothing can still use it: the runtime keeps every
//!   launch's operands alive until the stream has passed the launch (an event on HIP, at once
//!   on the emulator), and only then drops them. So a cached block is free on every stream, and
//!   reusing it needs no synchronisation at all ("stream-ordered": the free happens where the
//!   stream passes the last use).
//! - When the device is out of memory the pool first waits for queued work (which releases the
//!   operands it held), returns every cached block to the device and tries once more; the error
//!   names the requested and free bytes.

use crate::backend::Backend;
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Smallest block, and the granularity of small classes (hipMalloc aligns to 256 bytes anyway).
const MIN_BLOCK: u64 = 512;
/// Largest step between classes: large blocks waste at most this much.
const MAX_STEP: u64 = 2 << 20;

/// The size class of a request of `bytes`, or `None` when it cannot be represented.
pub(crate) fn size_class(bytes: u64) -> Option<u64> {
    if bytes <= MIN_BLOCK {
        return Some(MIN_BLOCK);
    }
    let log2 = 63 - bytes.leading_zeros();
    let step = (1u64 << log2.saturating_sub(2)).clamp(MIN_BLOCK, MAX_STEP);
    bytes.checked_next_multiple_of(step)
}

/// What the pool holds and has done. Get it with [`MemoryPool::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes of blocks handed out and not yet returned (class sizes, so at least what was asked).
    pub in_use_bytes: u64,
    /// The most `in_use_bytes` has been since the device was opened or [`MemoryPool::reset_peak`].
    pub peak_in_use_bytes: u64,
    /// Bytes of free blocks kept for reuse.
    pub cached_bytes: u64,
    /// Blocks handed out in all.
    pub allocations: u64,
    /// Of those, blocks taken from the cache (no device allocation).
    pub reuses: u64,
    /// Device allocations made (`hipMalloc` calls on HIP).
    pub device_allocations: u64,
    /// Device frees made (`hipFree` calls on HIP).
    pub device_frees: u64,
}

struct State {
    caching: bool,
    /// Free blocks by class.
    free: BTreeMap<u64, Vec<u64>>,
    stats: PoolStats,
}

/// A device's caching allocator. Every [`Buffer`](crate::Buffer), [`Tensor`](crate::Tensor) and
/// temporary of an op comes from it. Get it with [`Device::memory_pool`](crate::Device::memory_pool).
///
/// ```no_run
/// let dev = ferrocm::Device::new()?;
/// let x = dev.zeros::<f32>(1000)?;
/// drop(x);                                  // the block stays cached
/// let s = dev.memory_pool().stats();
/// assert_eq!(s.in_use_bytes, 0);
/// assert!(s.cached_bytes >= 4000);
/// dev.memory_pool().empty_cache();          // give it back to the device
/// # Ok::<(), ferrocm::Error>(())
/// ```
pub struct MemoryPool {
    backend: Arc<dyn Backend>,
    state: Mutex<State>,
}

impl std::fmt::Debug for MemoryPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryPool").field("stats", &self.stats()).finish()
    }
}

impl MemoryPool {
    pub(crate) fn new(backend: Arc<dyn Backend>) -> MemoryPool {
        let caching = std::env::var("FERROCM_POOL").map_or(true, |v| v != "0" && v != "off");
        MemoryPool { backend, state: Mutex::new(State { caching, free: BTreeMap::new(), stats: PoolStats::default() }) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current statistics.
    pub fn stats(&self) -> PoolStats {
        self.lock().stats
    }

    /// Sets [`PoolStats::peak_in_use_bytes`] to the current in-use bytes.
    pub fn reset_peak(&self) {
        let mut s = self.lock();
        s.stats.peak_in_use_bytes = s.stats.in_use_bytes;
    }

    /// True when freed blocks are kept for reuse (the default; `FERROCM_POOL=0` starts devices
    /// with caching off).
    pub fn caching(&self) -> bool {
        self.lock().caching
    }

    /// Turns caching on or off. Off, every freed block goes straight back to the device (and the
    /// cache is emptied now): the behaviour of a plain `hipMalloc`/`hipFree` runtime, for
    /// comparison and for hunting memory bugs.
    pub fn set_caching(&self, on: bool) {
        self.lock().caching = on;
        if !on {
            self.empty_cache();
        }
    }

    /// Returns every cached block to the device.
    pub fn empty_cache(&self) {
        self.trim(0);
    }

    /// Returns cached blocks to the device, largest first, until at most `keep_bytes` stay cached.
    pub fn trim(&self, keep_bytes: u64) {
        let mut released = Vec::new();
        {
            let mut s = self.lock();
            while s.stats.cached_bytes > keep_bytes {
                let Some(mut entry) = s.free.last_entry() else { break };
                let class = *entry.key();
                let addr = entry.get_mut().pop().expect("empty class lists are removed");
                if entry.get().is_empty() {
                    entry.remove();
                }
                s.stats.cached_bytes -= class;
                s.stats.device_frees += 1;
                released.push(addr);
            }
        }
        for addr in released {
            // SAFETY: cached blocks are unused by any queued work (see the module docs).
            unsafe { self.backend.free(addr) };
        }
    }

    /// A cached block of `class` bytes, if there is one.
    pub(crate) fn take(&self, class: u64) -> Option<u64> {
        let mut s = self.lock();
        let list = s.free.get_mut(&class)?;
        let addr = list.pop().expect("empty class lists are removed");
        if list.is_empty() {
            s.free.remove(&class);
        }
        s.stats.cached_bytes -= class;
        s.stats.reuses += 1;
        Self::hand_out(&mut s.stats, class);
        Some(addr)
    }

    /// A new device allocation of `class` bytes.
    pub(crate) fn allocate(&self, class: u64) -> Result<u64> {
        let addr = self.backend.alloc(class)?;
        let mut s = self.lock();
        s.stats.device_allocations += 1;
        Self::hand_out(&mut s.stats, class);
        Ok(addr)
    }

    fn hand_out(stats: &mut PoolStats, class: u64) {
        stats.allocations += 1;
        stats.in_use_bytes += class;
        stats.peak_in_use_bytes = stats.peak_in_use_bytes.max(stats.in_use_bytes);
    }

    /// Takes back a block no queued work uses any more.
    pub(crate) fn release(&self, addr: u64, class: u64) {
        let mut s = self.lock();
        s.stats.in_use_bytes -= class;
        if s.caching {
            s.free.entry(class).or_default().push(addr);
            s.stats.cached_bytes += class;
            return;
        }
        s.stats.device_frees += 1;
        drop(s);
        // SAFETY: the caller's contract: nothing queued uses the block.
        unsafe { self.backend.free(addr) };
    }

    /// Free device memory in bytes, for out-of-memory errors (0 when the backend cannot say).
    pub(crate) fn free_device_bytes(&self) -> u64 {
        self.backend.memory_info().map(|(free, _)| free).unwrap_or(0)
    }

    /// The out-of-memory error for a request of `requested` bytes.
    pub(crate) fn out_of_memory(&self, requested: u64) -> Error {
        Error::OutOfMemory { requested, free: self.free_device_bytes() }
    }
}

impl Drop for MemoryPool {
    fn drop(&mut self) {
        self.empty_cache();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_round_up_by_at_most_a_quarter() {
        assert_eq!(size_class(1), Some(512));
        assert_eq!(size_class(512), Some(512));
        assert_eq!(size_class(513), Some(1024));
        assert_eq!(size_class(4096), Some(4096));
        assert_eq!(size_class(4097), Some(5120));
        assert_eq!(size_class(1 << 20), Some(1 << 20));
        assert_eq!(size_class((1 << 20) + 1), Some(1_310_720));
        // Large blocks: 2 MiB steps.
        assert_eq!(size_class((1 << 30) + 1), Some((1 << 30) + (2 << 20)));
        assert_eq!(size_class(u64::MAX), None);
        for b in (1..200_000u64).step_by(37).chain((20..40).map(|s| (1u64 << s) + 12345)) {
            let c = size_class(b).unwrap();
            assert!(c >= b && (c - b) * 4 <= b.max(2048), "{b} -> {c}");
        }
    }
}
