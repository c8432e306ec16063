//! Device memory: a flat 64-bit address space of allocations, plus the LDS and scratch apertures.
//!
//! Storage is 32-bit atomic words accessed with relaxed ordering: workgroups run on several CPU
//! threads at once, and a kernel's racy (or atomic) accesses must not be data races in the
//! emulator itself. Sub-word stores are read-modify-writes of their word, so two lanes writing
//! neighbouring bytes never lose each other's update. On x86 relaxed atomic loads and stores are
//! plain moves.
//!
//! Addresses are never reused: each allocation gets fresh addresses with an unmapped guard gap
//! after it, so a use-after-free or a small overrun faults instead of touching a neighbour.

use super::error::EmuError;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};

/// First address handed out by `alloc`.
pub const HEAP_BASE: u64 = 0x0000_1000_0000_0000;
/// Allocation alignment (hipMalloc's).
pub const ALLOC_ALIGN: u64 = 256;
/// Unmapped bytes after every allocation.
pub const GUARD_GAP: u64 = 64 * 1024;
/// Start of the private (scratch) aperture: flat addresses in [base, base + 4 GiB) are the lane's
/// scratch (ROCm's gfx9 SH_MEM_BASES: private base 1, shared base 2, in address bits 63:48).
pub const PRIVATE_APERTURE: u64 = 0x0001_0000_0000_0000;
/// Start of the LDS (shared) aperture.
pub const SHARED_APERTURE: u64 = 0x0002_0000_0000_0000;
/// Size of each aperture.
pub const APERTURE_SIZE: u64 = 1 << 32;

/// One allocation.
pub struct Region {
    /// First address.
    pub base: u64,
    /// Size in bytes.
    pub size: u64,
    words: Box<[AtomicU32]>,
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Region({:#x}, {} bytes)", self.base, self.size)
    }
}

impl Region {
    /// A zeroed region, or `None` when the host cannot provide the memory (reported as an
    /// emulated out-of-memory error rather than aborting the process).
    fn new(base: u64, size: u64) -> Option<Region> {
        let n = usize::try_from(size.div_ceil(4)).ok()?;
        let mut words = Vec::new();
        words.try_reserve_exact(n).ok()?;
        words.extend((0..n).map(|_| AtomicU32::new(0)));
        Some(Region { base, size, words: words.into_boxed_slice() })
    }

    /// True when `[off, off + len)` lies inside.
    #[inline]
    pub fn contains(&self, off: u64, len: u64) -> bool {
        off.checked_add(len).is_some_and(|e| e <= self.size)
    }

    /// The word holding byte `off`.
    #[inline]
    fn word(&self, off: u64) -> &AtomicU32 {
        &self.words[(off / 4) as usize]
    }

    /// The dwords at `off` (4-byte aligned; caller checked bounds) into `out`.
    #[inline]
    pub(crate) fn read_dwords(&self, off: u64, out: &mut [u32]) {
        let (first, n) = ((off / 4) as usize, out.len());
        for (o, w) in out.iter_mut().zip(&self.words[first..first + n]) {
            *o = w.load(Relaxed);
        }
    }

    /// Reads an aligned or unaligned u32 at offset `off` (caller checked bounds).
    #[inline]
    pub fn read_u32(&self, off: u64) -> u32 {
        if off % 4 == 0 {
            return self.word(off).load(Relaxed);
        }
        let mut b = [0u8; 4];
        self.read_bytes(off, &mut b);
        u32::from_le_bytes(b)
    }

    /// Writes a u32 at offset `off` (caller checked bounds).
    #[inline]
    pub fn write_u32(&self, off: u64, v: u32) {
        if off % 4 == 0 {
            self.word(off).store(v, Relaxed);
        } else {
            self.write_bytes(off, &v.to_le_bytes());
        }
    }

    /// Reads bytes at `off` (caller checked bounds).
    pub fn read_bytes(&self, mut off: u64, out: &mut [u8]) {
        let mut i = 0;
        if off % 4 == 0 {
            // Whole aligned words with fixed-size copies (what nearly every kernel load is);
            // the general loop below would call memmove for each few bytes.
            let first = (off / 4) as usize;
            let n = out.len() / 4;
            for (w, o) in self.words[first..first + n].iter().zip(out.chunks_exact_mut(4)) {
                o.copy_from_slice(&w.load(Relaxed).to_le_bytes());
            }
            i = 4 * n;
            off += i as u64;
        }
        while i < out.len() {
            let w = self.word(off).load(Relaxed).to_le_bytes();
            let start = (off % 4) as usize;
            let n = (4 - start).min(out.len() - i);
            out[i..i + n].copy_from_slice(&w[start..start + n]);
            i += n;
            off += n as u64;
        }
    }

    /// Writes bytes at `off` (caller checked bounds). Whole words are stored; partial words are
    /// merged atomically.
    pub fn write_bytes(&self, mut off: u64, data: &[u8]) {
        let mut i = 0;
        while i < data.len() {
            let start = (off % 4) as usize;
            if start == 0 && data.len() - i >= 4 {
                // The aligned bulk in one pass (host uploads of whole tensors land here): plain
                // relaxed stores, no per-word bookkeeping. Measured: a 1 GiB model load onto the
                // emulator (one reader thread, benches/benches/model_load.rs) 0.83 s -> 0.20 s;
                // the word loop below was the whole difference.
                let n = (data.len() - i) / 4;
                let first = (off / 4) as usize;
                for (w, c) in self.words[first..first + n].iter().zip(data[i..i + 4 * n].chunks_exact(4)) {
                    w.store(u32::from_le_bytes([c[0], c[1], c[2], c[3]]), Relaxed);
                }
                i += 4 * n;
                off += 4 * n as u64;
                continue;
            }
            let n = (4 - start).min(data.len() - i);
            let mut mask = 0u32;
            let mut val = 0u32;
            for k in 0..n {
                mask |= 0xff << (8 * (start + k));
                val |= (data[i + k] as u32) << (8 * (start + k));
            }
            let w = self.word(off);
            let mut cur = w.load(Relaxed);
            loop {
                match w.compare_exchange_weak(cur, (cur & !mask) | val, Relaxed, Relaxed) {
                    Ok(_) => break,
                    Err(c) => cur = c,
                }
            }
            i += n;
            off += n as u64;
        }
    }

    /// Atomic read-modify-write of the aligned u32 at `off`; returns the old value.
    #[inline]
    pub fn rmw_u32(&self, off: u64, f: impl Fn(u32) -> u32) -> u32 {
        let w = self.word(off);
        let mut cur = w.load(Relaxed);
        loop {
            match w.compare_exchange_weak(cur, f(cur), Relaxed, Relaxed) {
                Ok(old) => return old,
                Err(c) => cur = c,
            }
        }
    }

    /// Atomic read-modify-write of the 8-byte-aligned u64 at `off` (two words, updated under a
    /// striped lock since there is no 64-bit view of the storage); returns the old value.
    pub fn rmw_u64(&self, off: u64, f: impl Fn(u64) -> u64) -> u64 {
        static LOCKS: [Mutex<()>; 64] = [const { Mutex::new(()) }; 64];
        let _g = LOCKS[((self.base + off) / 8 % 64) as usize].lock().unwrap_or_else(|p| p.into_inner());
        let old = self.read_u32(off) as u64 | (self.read_u32(off + 4) as u64) << 32;
        let new = f(old);
        self.write_u32(off, new as u32);
        self.write_u32(off + 4, (new >> 32) as u32);
        old
    }
}

/// The allocations of one emulated device.
pub struct Memory {
    regions: RwLock<Vec<Arc<Region>>>,
    next: Mutex<u64>,
    limit: u64,
}

impl Memory {
    /// An empty address space that allows up to `limit` bytes of allocations.
    pub fn new(limit: u64) -> Memory {
        Memory { regions: RwLock::new(Vec::new()), next: Mutex::new(HEAP_BASE), limit }
    }

    /// Bytes currently allocated.
    pub fn in_use(&self) -> u64 {
        self.regions.read().expect("memory lock").iter().map(|r| r.size).sum()
    }

    /// Allocates `size` zeroed bytes (at least 1) and returns the address.
    ///
    /// Allocations are serialised by the address cursor's lock, held from the limit check to
    /// the insertion: threads allocating at once cannot both pass the check and overshoot the
    /// limit together (frees only lower the bytes in use meanwhile).
    ///
    /// # Errors
    /// [`EmuError::OutOfMemory`] past the limit, when the address space is used up, or when
    /// the host cannot allocate the bytes.
    pub fn alloc(&self, size: u64) -> Result<u64, EmuError> {
        let size = size.max(1);
        let mut next = self.next.lock().expect("memory lock");
        let in_use = self.in_use();
        let oom = || EmuError::OutOfMemory { requested: size, in_use, limit: self.limit };
        if in_use.saturating_add(size) > self.limit {
            return Err(oom());
        }
        // Addresses are never reused; with a limit near 2^64 they could run out.
        let base = next.checked_next_multiple_of(ALLOC_ALIGN).ok_or_else(oom)?;
        let after = base.checked_add(size).and_then(|e| e.checked_add(GUARD_GAP)).ok_or_else(oom)?;
        let region = Arc::new(Region::new(base, size).ok_or_else(oom)?);
        *next = after;
        let mut regions = self.regions.write().expect("memory lock");
        regions.push(region); // bases increase monotonically: the list stays sorted
        Ok(base)
    }

    /// Frees the allocation starting at `addr`.
    pub fn free(&self, addr: u64) -> Result<(), EmuError> {
        let mut regions = self.regions.write().expect("memory lock");
        match regions.binary_search_by_key(&addr, |r| r.base) {
            Ok(i) => {
                regions.remove(i);
                Ok(())
            }
            Err(_) => Err(EmuError::BadFree { addr }),
        }
    }

    /// A snapshot of the allocations for a launch (lock-free lookups while kernels run).
    pub fn view(&self) -> MemView {
        let regions = self.regions.read().expect("memory lock").clone();
        let bases = regions.iter().map(|r| r.base).collect();
        MemView { regions, bases, hint: AtomicUsize::new(0) }
    }

    /// Host write of `data` at `addr`.
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<(), EmuError> {
        let v = self.view();
        let (r, off) = v.find(addr, data.len() as u64).ok_or(EmuError::HostAccess { addr, size: data.len() as u64 })?;
        r.write_bytes(off, data);
        Ok(())
    }

    /// Host read into `out` from `addr`.
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), EmuError> {
        let v = self.view();
        let (r, off) = v.find(addr, out.len() as u64).ok_or(EmuError::HostAccess { addr, size: out.len() as u64 })?;
        r.read_bytes(off, out);
        Ok(())
    }

    /// Host fill of `bytes` bytes at `addr` with `value`.
    pub fn fill(&self, addr: u64, value: u8, bytes: u64) -> Result<(), EmuError> {
        let v = self.view();
        let (r, off) = v.find(addr, bytes).ok_or(EmuError::HostAccess { addr, size: bytes })?;
        const CHUNK: u64 = 1 << 16;
        let pattern = vec![value; CHUNK.min(bytes) as usize];
        let mut done = 0;
        while done < bytes {
            let n = CHUNK.min(bytes - done);
            r.write_bytes(off + done, &pattern[..n as usize]);
            done += n;
        }
        Ok(())
    }

    /// Device-to-device copy.
    ///
    /// # Errors
    /// [`EmuError::HostAccess`] when either range is not inside one allocation (checked before
    /// any staging buffer is allocated, so a bogus size cannot exhaust host memory).
    pub fn copy(&self, dst: u64, src: u64, bytes: u64) -> Result<(), EmuError> {
        let v = self.view();
        v.find(src, bytes).ok_or(EmuError::HostAccess { addr: src, size: bytes })?;
        v.find(dst, bytes).ok_or(EmuError::HostAccess { addr: dst, size: bytes })?;
        // Both ranges lie in live allocations, which the memory limit bounds.
        let mut tmp = vec![0u8; bytes as usize];
        self.read(src, &mut tmp)?;
        self.write(dst, &tmp)
    }
}

/// A snapshot of the allocation list.
pub struct MemView {
    regions: Vec<Arc<Region>>,
    /// `regions[i].base`, searched without touching the regions themselves.
    bases: Vec<u64>,
    /// The region of the last lookup, tried first: a wave's lanes, and a kernel's consecutive
    /// accesses, mostly stay in one tensor (measured: the binary search was most of the time
    /// of global loads in a model decode step).
    hint: AtomicUsize,
}

impl Clone for MemView {
    fn clone(&self) -> MemView {
        MemView { regions: self.regions.clone(), bases: self.bases.clone(), hint: AtomicUsize::new(self.hint.load(Relaxed)) }
    }
}

impl MemView {
    /// The allocation containing `[addr, addr + len)` and the offset of `addr` in it.
    #[inline]
    pub fn find(&self, addr: u64, len: u64) -> Option<(&Region, u64)> {
        let h = self.hint.load(Relaxed);
        if let Some(r) = self.regions.get(h) {
            let off = addr.wrapping_sub(r.base);
            if addr >= r.base && r.contains(off, len) {
                return Some((&**r, off));
            }
        }
        let i = match self.bases.binary_search(&addr) {
            Ok(i) => i,
            Err(0) => return None,
            Err(i) => i - 1,
        };
        let r = &self.regions[i];
        let off = addr - r.base; // r.base <= addr by the search
        if !r.contains(off, len) {
            return None;
        }
        // Written only when it changes, so threads reading one tensor share the line.
        self.hint.store(i, Relaxed);
        Some((&**r, off))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_disjoint_and_bounds_checked() {
        let m = Memory::new(1 << 20);
        let a = m.alloc(10).unwrap();
        let b = m.alloc(10).unwrap();
        assert_eq!(a % ALLOC_ALIGN, 0);
        assert!(b >= a + 10 + GUARD_GAP);
        m.write(a, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).unwrap();
        let mut out = [0u8; 3];
        m.read(a + 7, &mut out).unwrap();
        assert_eq!(out, [8, 9, 10]);
        assert!(m.read(a + 8, &mut out).is_err());
        assert!(m.write(a + 10, &[0]).is_err());
        m.free(a).unwrap();
        assert!(m.read(a, &mut out).is_err(), "use after free must fault");
        assert!(matches!(m.free(a), Err(EmuError::BadFree { .. })));
        assert!(matches!(m.alloc(2 << 20), Err(EmuError::OutOfMemory { .. })));
    }

    #[test]
    fn sub_word_writes_merge() {
        let m = Memory::new(1 << 20);
        let a = m.alloc(8).unwrap();
        let v = m.view();
        let (r, _) = v.find(a, 8).unwrap();
        r.write_u32(0, 0xAABBCCDD);
        r.write_bytes(1, &[0x11, 0x22]);
        assert_eq!(r.read_u32(0), 0xAA2211DD);
        r.write_u32(2, 0x55667788); // unaligned, straddles two words
        assert_eq!(r.read_u32(2), 0x55667788);
        assert_eq!(r.read_u32(0), 0x778811DD);
    }

    #[test]
    fn concurrent_allocations_never_exceed_the_limit() {
        // 8 threads each try 4 allocations of 1/16 of the limit: at most 16 can succeed, and the
        // sum in use never passes the limit (the check and the insertion are one step).
        for _ in 0..20 {
            let m = Memory::new(16 << 12);
            let ok: usize = std::thread::scope(|s| {
                let hs: Vec<_> = (0..8).map(|_| s.spawn(|| (0..4).filter(|_| m.alloc(1 << 12).is_ok()).count())).collect();
                hs.into_iter().map(|h| h.join().unwrap()).sum()
            });
            assert_eq!(ok, 16);
            assert_eq!(m.in_use(), 16 << 12);
        }
    }

    #[test]
    fn fill_sets_exactly_the_range() {
        let m = Memory::new(1 << 20);
        let a = m.alloc(200_000).unwrap();
        m.fill(a + 3, 0xAB, 150_000).unwrap();
        let mut out = vec![0u8; 200_000];
        m.read(a, &mut out).unwrap();
        assert!(out[..3].iter().all(|&b| b == 0) && out[3..150_003].iter().all(|&b| b == 0xAB));
        assert!(out[150_003..].iter().all(|&b| b == 0));
        assert!(m.fill(a + 199_999, 1, 2).is_err());
    }
}
