//! Device pointers in argument structs.
//!
//! On the device [`Ptr<T>`]/[`PtrMut<T>`] are raw pointers, so the kernel entry takes them as
//! `global_buffer` arguments. On the host both are [`DevPtr<T>`]: a 64-bit device address that
//! remembers the element type, obtained from a `Buffer<T>`, never from a host pointer.

/// A read-only device pointer field of an argument struct.
#[cfg(target_arch = "amdgpu")]
pub type Ptr<T> = *const T;
/// A writable device pointer field of an argument struct.
#[cfg(target_arch = "amdgpu")]
pub type PtrMut<T> = *mut T;

/// A read-only device pointer field of an argument struct (a [`DevPtr`] on the host).
#[cfg(not(target_arch = "amdgpu"))]
pub type Ptr<T> = DevPtr<T>;
/// A writable device pointer field of an argument struct (a [`DevPtr`] on the host).
#[cfg(not(target_arch = "amdgpu"))]
pub type PtrMut<T> = DevPtr<T>;

/// A device address of `T` elements, as the host packs it into kernel arguments.
///
/// Get one from a device buffer (`Buffer::as_ptr` in the host crate). It is only an address: it
/// neither owns nor borrows the memory, so launches that use it are checked by the op wrappers.
#[cfg(not(target_arch = "amdgpu"))]
#[repr(transparent)]
pub struct DevPtr<T> {
    addr: u64,
    _elem: core::marker::PhantomData<fn() -> T>,
}

#[cfg(not(target_arch = "amdgpu"))]
impl<T> DevPtr<T> {
    /// The null device pointer (for optional arguments the kernel documents as "0 = absent").
    pub const NULL: Self = Self::from_addr(0);

    /// Wraps a raw device address. Prefer the host crate's `Buffer::as_ptr`.
    pub const fn from_addr(addr: u64) -> Self {
        DevPtr { addr, _elem: core::marker::PhantomData }
    }

    /// The raw device address.
    pub const fn addr(self) -> u64 {
        self.addr
    }

    /// The pointer `count` elements further on (wrapping, like pointer arithmetic on the device).
    pub const fn add(self, count: u64) -> Self {
        Self::from_addr(self.addr.wrapping_add(count.wrapping_mul(core::mem::size_of::<T>() as u64)))
    }

    /// The same address viewed as a pointer to `U`.
    pub const fn cast<U>(self) -> DevPtr<U> {
        DevPtr::from_addr(self.addr)
    }
}

#[cfg(not(target_arch = "amdgpu"))]
impl<T> Clone for DevPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
#[cfg(not(target_arch = "amdgpu"))]
impl<T> Copy for DevPtr<T> {}

#[cfg(not(target_arch = "amdgpu"))]
impl<T> PartialEq for DevPtr<T> {
    fn eq(&self, other: &Self) -> bool {
        self.addr == other.addr
    }
}
#[cfg(not(target_arch = "amdgpu"))]
impl<T> Eq for DevPtr<T> {}

#[cfg(not(target_arch = "amdgpu"))]
impl<T> core::fmt::Debug for DevPtr<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "DevPtr({:#x})", self.addr)
    }
}

// SAFETY: a u64 plus a zero-sized marker; every bit pattern is a valid address value.
#[cfg(not(target_arch = "amdgpu"))]
unsafe impl<T: 'static> bytemuck::Zeroable for DevPtr<T> {}
// SAFETY: as above; repr(transparent) over u64, no padding.
#[cfg(not(target_arch = "amdgpu"))]
unsafe impl<T: 'static> bytemuck::Pod for DevPtr<T> {}

#[cfg(not(target_arch = "amdgpu"))]
impl<T> super::KernArg for DevPtr<T> {
    fn write_le(&self, out: &mut [u8]) {
        out[..8].copy_from_slice(&self.addr.to_le_bytes());
    }
}
