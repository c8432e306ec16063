//! `dst[i] = src[i]`, 128 bits per work-item.

use crate::abi::smoke::{COPY_WORDS_PER_ITEM, CopyArgs};
use crate::dsl::ids::global_id_x;
use crate::dsl::mem::{load_b128, store_b128};

/// Each work-item moves one aligned 16-byte chunk; the work-item owning the ragged end copies the
/// last `n % 4` words one by one, so no access crosses the end of either buffer.
#[inline(always)]
pub fn copy_u32(args: CopyArgs) {
    let first = global_id_x() as usize * COPY_WORDS_PER_ITEM as usize;
    let n = args.n as usize;
    // SAFETY: every access below stays below n words; both buffers are 16-byte aligned (host).
    unsafe {
        if first + 4 <= n {
            store_b128(args.dst.add(first), load_b128(args.src.add(first)));
        } else {
            let mut i = first;
            while i < n {
                args.dst.add(i).write(args.src.add(i).read());
                i += 1;
            }
        }
    }
}
