//! Row copies: embedding gather / index_select (rows picked by an i32 index, each checked) and
//! the block copies of concat (rows in order).

use crate::abi::movement::{CopyRowsArgs, MOVE_BLOCK};
use crate::dsl::ids::{workgroup_id_x, workitem_id_x};
use crate::dsl::simd::{U32x2, U32x4};

/// `n / d` with a [`FastDivisor`](crate::abi::elementwise::FastDivisor)'s magic numbers.
#[inline(always)]
fn fast_div(n: u32, magic: u32, shift: u32) -> u32 {
    let t = ((n as u64 * magic as u64) >> 32) as u32;
    ((t as u64 + n as u64) >> shift) as u32
}

/// Copies one `U`-sized chunk.
///
/// # Safety
/// Both addresses are aligned for `U` and inside their buffers.
#[inline(always)]
unsafe fn copy_unit<U: Copy>(src: *const u8, dst: *mut u8, zero: U, valid: bool) {
    // SAFETY: caller.
    unsafe {
        let v = if valid { (src as *const U).read() } else { zero };
        (dst as *mut U).write(v);
    }
}

/// One chunk per work-item. Consecutive work-items take consecutive chunks of a row, so each wave
/// reads and writes contiguous runs (rows of 16-byte chunks are fully coalesced); the row's
/// index is the same for all its chunks, so its load is one line per wave.
#[inline(always)]
pub fn copy_rows(args: CopyRowsArgs) {
    let id = workgroup_id_x() * MOVE_BLOCK + workitem_id_x();
    if id >= args.chunks {
        return;
    }
    let row = fast_div(id, args.cpr_magic, args.cpr_shift);
    let chunk = id - row * args.chunks_per_row;
    let p = fast_div(row, args.inner_magic, args.inner_shift);
    let j = row - p * args.inner_rows;

    let mut src_row = j as u64;
    let mut valid = true;
    if !args.index.is_null() {
        // SAFETY: j < inner_rows, the index tensor's length (host-checked).
        let s = unsafe { args.index.add(j as usize).read() };
        // One comparison covers both ends: a negative index is a huge unsigned one.
        valid = (s as u32) < args.index_limit;
        if !valid {
            // SAFETY: error points at one u32 whenever index is set. Racing writers store
            // positions of offending rows; whichever lands is reported.
            unsafe { args.error.write(j + 1) };
        }
        src_row = if valid { s as u32 as u64 } else { 0 };
    }
    let unit = args.unit as u64;
    let src_off = p as u64 * args.src_outer_pitch + src_row * args.src_row_pitch + chunk as u64 * unit;
    let dst_off = p as u64 * args.dst_outer_pitch + j as u64 * args.dst_row_pitch + chunk as u64 * unit;
    // SAFETY: the host checked every row of the source and destination lies in its buffer and
    // chose `unit` so every chunk address is aligned to it; invalid rows are not read.
    unsafe {
        let (src, dst) = (args.src.add(src_off as usize), args.dst.add(dst_off as usize));
        match args.unit {
            16 => copy_unit(src, dst, U32x4::splat(0), valid),
            8 => copy_unit(src, dst, U32x2::splat(0), valid),
            4 => copy_unit(src, dst, 0u32, valid),
            2 => copy_unit(src, dst, 0u16, valid),
            _ => copy_unit(src, dst, 0u8, valid),
        }
    }
}
