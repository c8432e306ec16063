//! Raw elements between global memory and registers: `EPL` consecutive elements with one wide
//! access (the vector path: 128-bit for the widest operand, 32/64-bit for narrower ones), or one
//! element at a time (gathers, tails, the scalar path).
//!
//! Register arrays here are only indexed with constants (`unroll!`), so they stay in VGPRs.

use crate::dsl::dtype::Element;
use crate::dsl::mem::{load_b64, load_b128, store_b64, store_b128};
use crate::dsl::simd::{U32x2, U32x4};

/// Words of the widest run one work-item moves: 16 fp8 -> f32 elements are 4 x 128 bits.
const MAX_WORDS: usize = 16;

/// Element `k`'s bits from a little-endian word array.
#[inline(always)]
fn extract<D: Element>(w: &[u32; MAX_WORDS], k: usize) -> u32 {
    let byte = k * D::BYTES;
    let word = w[byte / 4];
    match D::BYTES {
        4 => word,
        2 => (word >> (8 * (byte % 4))) & 0xffff,
        _ => (word >> (8 * (byte % 4))) & 0xff,
    }
}

/// `EPL` elements of `D` starting at `p`: one 32- or 64-bit load for runs of 4 or 8 bytes,
/// `EPL * BYTES / 16` 128-bit loads for longer ones.
///
/// # Safety
/// `p` is aligned to the run's size (16 bytes for runs of 16 or more), `EPL * BYTES` is 4, 8,
/// 16, 32 or 64, and the bytes are readable.
#[inline(always)]
pub unsafe fn load_vec<D: Element, const EPL: usize>(p: *const u8) -> [u32; EPL] {
    let bytes = EPL * D::BYTES;
    let mut w = [0u32; MAX_WORDS];
    // SAFETY (all three arms): inside the run, aligned to its size (caller).
    if bytes == 4 {
        w[0] = unsafe { (p as *const u32).read() };
    } else if bytes == 8 {
        let v = unsafe { load_b64(p as *const u32) }.to_array();
        w[0] = v[0];
        w[1] = v[1];
    } else {
        crate::unroll_max!(q < bytes / 16, 4 => {
            let v = unsafe { load_b128(p.add(16 * q) as *const u32) }.to_array();
            // `% MAX_WORDS`: the unguarded copies of the unrolled loop must still index in
            // bounds to compile.
            w[(4 * q) % MAX_WORDS] = v[0];
            w[(4 * q + 1) % MAX_WORDS] = v[1];
            w[(4 * q + 2) % MAX_WORDS] = v[2];
            w[(4 * q + 3) % MAX_WORDS] = v[3];
        });
    }
    let mut out = [0u32; EPL];
    crate::unroll!(k < EPL => {
        out[k] = extract::<D>(&w, k);
    });
    out
}

/// Stores `EPL` elements of `D` at `p`, with the access sizes of [`load_vec`].
///
/// # Safety
/// As [`load_vec`], for writing. Only the low `BYTES` of each value are stored.
#[inline(always)]
pub unsafe fn store_vec<D: Element, const EPL: usize>(p: *mut u8, v: &[u32; EPL]) {
    let bytes = EPL * D::BYTES;
    let mut w = [0u32; MAX_WORDS];
    crate::unroll!(k < EPL => {
        let byte = k * D::BYTES;
        let bits = match D::BYTES {
            4 => v[k],
            2 => v[k] & 0xffff,
            _ => v[k] & 0xff,
        };
        w[byte / 4] |= bits << (8 * (byte % 4));
    });
    // SAFETY (all three arms): inside the run, aligned to its size (caller).
    if bytes == 4 {
        unsafe { (p as *mut u32).write(w[0]) };
    } else if bytes == 8 {
        unsafe { store_b64(p as *mut u32, U32x2::from_array([w[0], w[1]])) };
    } else {
        crate::unroll_max!(q < bytes / 16, 4 => {
            let chunk = U32x4::from_array([w[(4 * q) % MAX_WORDS], w[(4 * q + 1) % MAX_WORDS], w[(4 * q + 2) % MAX_WORDS], w[(4 * q + 3) % MAX_WORDS]]);
            unsafe { store_b128(p.add(16 * q) as *mut u32, chunk) };
        });
    }
}

/// Element `idx` of a `D` array at `p`.
///
/// # Safety
/// The element is readable.
#[inline(always)]
pub unsafe fn load_one<D: Element>(p: *const u8, idx: u32) -> u32 {
    let i = idx as usize;
    // SAFETY: caller.
    unsafe {
        match D::BYTES {
            4 => (p as *const u32).add(i).read(),
            2 => (p as *const u16).add(i).read() as u32,
            _ => p.add(i).read() as u32,
        }
    }
}

/// Writes element `idx` of a `D` array at `p` (the low `BYTES` of `bits`).
///
/// # Safety
/// The element is writable.
#[inline(always)]
pub unsafe fn store_one<D: Element>(p: *mut u8, idx: u32, bits: u32) {
    let i = idx as usize;
    // SAFETY: caller.
    unsafe {
        match D::BYTES {
            4 => (p as *mut u32).add(i).write(bits),
            2 => (p as *mut u16).add(i).write(bits as u16),
            _ => p.add(i).write(bits as u8),
        }
    }
}
