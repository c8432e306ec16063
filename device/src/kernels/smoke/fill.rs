//! `dst[i] = value`.

use crate::abi::smoke::FillArgs;
use crate::dsl::ids::global_id_x;

/// One word per work-item.
#[inline(always)]
pub fn fill_u32(args: FillArgs) {
    let i = global_id_x();
    if i < args.n {
        // SAFETY: i < n and the host passes a buffer of n words.
        unsafe { args.dst.add(i as usize).write(args.value) };
    }
}
