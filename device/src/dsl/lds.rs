//! The launch-sized (dynamic) LDS block as typed views.
//!
//! Rust has no address spaces, so kernels cannot declare `static` LDS; all LDS comes from the block
//! whose size the launch gives (HIP's `sharedMemBytes`). [`LdsArena`] carves it into typed,
//! aligned [`LdsSlice`]s in a fixed order, the same order for every wave, so every wave sees the
//! same layout. The host op computes the byte total with the same arithmetic (a `*_LDS_BYTES`
//! constant or function in the kernel's `abi` module) and the launch validates it against 64 KiB.

/// The start of the launch-sized LDS block, as a pointer to `T`.
#[inline(always)]
pub fn dynamic_lds<T>() -> *mut T {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
}

/// Hands out consecutive typed regions of the launch-sized LDS block.
pub struct LdsArena {
    base: *mut u8,
    next: usize,
}

impl LdsArena {
    /// An arena over the whole launch-sized block, starting at offset 0.
    #[inline(always)]
    pub fn new() -> Self {
        // 16-byte alignment of the base lets regions hold 128-bit (b128) accesses.
        LdsArena { base: dynamic_lds::<u128>() as *mut u8, next: 0 }
    }

    /// The next `len` elements of `T`, aligned to `T`'s alignment.
    #[inline(always)]
    pub fn take<T>(&mut self, len: usize) -> LdsSlice<T> {
        let align = core::mem::align_of::<T>();
        let start = (self.next + align - 1) & !(align - 1);
        self.next = start + len * core::mem::size_of::<T>();
        // SAFETY: pointer arithmetic within the LDS aperture; accesses are the caller's to check.
        LdsSlice { ptr: unsafe { self.base.add(start) } as *mut T, len }
    }

    /// Bytes handed out so far (what the launch must provide at least).
    #[inline(always)]
    pub fn used_bytes(&self) -> usize {
        self.next
    }
}

impl Default for LdsArena {
    fn default() -> Self {
        Self::new()
    }
}

/// A typed region of LDS shared by the workgroup.
///
/// Reads and writes are `unsafe` because LDS is shared: the caller orders conflicting accesses of
/// different waves with [`barrier`](super::sync::barrier). Indices are not bounds-checked on the
/// hot path; [`LdsSlice::len`] is there for `debug_assert!`s.
pub struct LdsSlice<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> Clone for LdsSlice<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for LdsSlice<T> {}

impl<T: Copy> LdsSlice<T> {
    /// A region of no elements (for a consumer that is handed a region it must not write,
    /// e.g. the GEMV's activation sums where the kernel has none).
    #[inline(always)]
    pub fn empty() -> LdsSlice<T> {
        LdsSlice { ptr: core::ptr::null_mut(), len: 0 }
    }

    /// Element count.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the region is empty.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The region's first element.
    #[inline(always)]
    pub fn as_ptr(&self) -> *mut T {
        self.ptr
    }

    /// The `len` elements starting at element `start` (a per-wave or per-stage part).
    #[inline(always)]
    pub fn sub(&self, start: usize, len: usize) -> LdsSlice<T> {
        // SAFETY: pointer arithmetic only; accesses stay the caller's to check.
        LdsSlice { ptr: unsafe { self.ptr.add(start) }, len }
    }

    /// Reads element `i`.
    ///
    /// # Safety
    /// `i < len`, and no other wave writes element `i` without a barrier in between.
    #[inline(always)]
    pub unsafe fn read(&self, i: usize) -> T {
        unsafe { self.ptr.add(i).read() }
    }

    /// Writes element `i`.
    ///
    /// # Safety
    /// `i < len`, and no other wave accesses element `i` without a barrier in between.
    #[inline(always)]
    pub unsafe fn write(&self, i: usize, v: T) {
        unsafe { self.ptr.add(i).write(v) }
    }

    /// Reads a `U` (for example a vector of several elements) at element offset `i`.
    ///
    /// # Safety
    /// The `U` lies within the region, is aligned for `U`, and is not raced as above.
    #[inline(always)]
    pub unsafe fn read_as<U: Copy>(&self, i: usize) -> U {
        unsafe { (self.ptr.add(i) as *const U).read() }
    }

    /// Writes a `U` at element offset `i`.
    ///
    /// # Safety
    /// As for [`LdsSlice::read_as`].
    #[inline(always)]
    pub unsafe fn write_as<U: Copy>(&self, i: usize, v: U) {
        unsafe { (self.ptr.add(i) as *mut U).write(v) }
    }
}
