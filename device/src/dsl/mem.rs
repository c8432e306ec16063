//! Global-memory accesses that must be a single wide instruction.
//!
//! A `U32x4` read through an aligned pointer becomes one `global_load_dwordx4` (128 bits per lane),
//! the access width HBM streaming wants. The helpers make the alignment requirement explicit.

use super::simd::{U32x2, U32x4};

/// Loads 16 bytes at `p`.
///
/// # Safety
/// `p` is 16-byte aligned and the 16 bytes are readable device memory.
#[inline(always)]
pub unsafe fn load_b128(p: *const u32) -> U32x4 {
    unsafe { (p as *const U32x4).read() }
}

/// Stores 16 bytes at `p`.
///
/// # Safety
/// `p` is 16-byte aligned and the 16 bytes are writable device memory.
#[inline(always)]
pub unsafe fn store_b128(p: *mut u32, v: U32x4) {
    unsafe { (p as *mut U32x4).write(v) }
}

/// Loads 8 bytes at `p`.
///
/// # Safety
/// `p` is 8-byte aligned and readable.
#[inline(always)]
pub unsafe fn load_b64(p: *const u32) -> U32x2 {
    unsafe { (p as *const U32x2).read() }
}

/// Stores 8 bytes at `p`.
///
/// # Safety
/// `p` is 8-byte aligned and writable.
#[inline(always)]
pub unsafe fn store_b64(p: *mut u32, v: U32x2) {
    unsafe { (p as *mut U32x2).write(v) }
}
