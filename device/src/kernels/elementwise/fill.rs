//! Fill a byte range from a 16-byte pattern: any dtype, any start alignment.

use crate::abi::elementwise::{ELT_BLOCK, FillPatternArgs};
use crate::dsl::ids::{workgroup_id_x, workitem_id_x};
use crate::dsl::mem::store_b128;
use crate::dsl::simd::U32x4;

/// Work-item `g` owns the aligned 16-byte chunk `align_down(dst, 16) + 16 g`. A chunk entirely
/// inside the range is one 128-bit store of the pattern (which the host indexed by address
/// modulo 16, so it needs no rotation here); the at most two chunks that straddle an end of the
/// range are written byte by byte, only inside it.
#[inline(always)]
pub fn fill_b128(args: FillPatternArgs) {
    let start = args.dst as usize as u64;
    let end = start + args.bytes;
    let first = start & !15;
    let chunk = first + 16 * (workgroup_id_x() as u64 * ELT_BLOCK as u64 + workitem_id_x() as u64);
    if chunk >= end {
        return;
    }
    let pattern = [args.pattern0, args.pattern1, args.pattern2, args.pattern3];
    let p = args.dst.wrapping_sub(start.wrapping_sub(chunk) as usize);
    // SAFETY: full chunks lie inside [dst, dst + bytes); partial ones write only inside it.
    unsafe {
        if chunk >= start && chunk + 16 <= end {
            store_b128(p as *mut u32, U32x4::from_array(pattern));
        } else {
            crate::unroll!(b < 16 => {
                let a = chunk + b as u64;
                if a >= start && a < end {
                    p.add(b).write((pattern[b / 4] >> (8 * (b % 4))) as u8);
                }
            });
        }
    }
}
