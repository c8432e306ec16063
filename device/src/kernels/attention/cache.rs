//! Writing new key/value rows into their paged-cache slots (`abi::attention::WriteKvArgs`).

use crate::abi::attention::{ATTENTION_SMALL_BLOCK, WriteKvArgs};
use crate::dsl::ids::{workgroup_id_x, workitem_id_x};
use crate::dsl::simd::U32x4;

/// One work-item per 16 bytes of one token's row of one head, in K and in V: consecutive
/// work-items move consecutive bytes of a row (whole lines on both sides).
#[inline(always)]
pub fn write_kv(args: WriteKvArgs) {
    let per_row = args.d / 8;
    let item = workgroup_id_x() * ATTENTION_SMALL_BLOCK + workitem_id_x();
    if item >= args.tokens * args.kv_heads * per_row {
        return;
    }
    let c = item % per_row;
    let th = item / per_row;
    let (h, t) = (th % args.kv_heads, th / args.kv_heads);
    // SAFETY: t < tokens, the slot table's length (host-checked).
    let slot = unsafe { args.slots.add(t as usize).read() } as u32;
    // One comparison covers both ends: a negative slot is a huge unsigned one.
    if slot >= args.slots_total {
        // SAFETY: one u32; racing writers store offending tokens, whichever lands.
        unsafe { args.error.write(t + 1) };
        return;
    }
    let (page, off) = (slot / args.page_size, slot % args.page_size);
    let dst = (((page as usize * args.kv_heads as usize + h as usize) * args.page_size as usize + off as usize) * args.d as usize
        + 8 * c as usize)
        * 2;
    let src = |row_stride: u64, head_stride: u64| (t as u64 * row_stride + h as u64 * head_stride + 8 * c as u64) as usize * 2;
    // SAFETY: the host checked the rows' 16-byte alignment and that every slot below
    // slots_total is inside both caches.
    unsafe {
        let k = (args.k.add(src(args.k_row_stride, args.k_head_stride)) as *const U32x4).read();
        let v = (args.v.add(src(args.v_row_stride, args.v_head_stride)) as *const U32x4).read();
        (args.k_cache.add(dst) as *mut U32x4).write(k);
        (args.v_cache.add(dst) as *mut U32x4).write(v);
    }
}
