//! Writing new key/value rows into their paged-cache slots (`abi::attention::WriteKvArgs`), and
//! the same with a decode step's rotary embedding of the queries and keys on the way
//! (`abi::attention::RopeWriteKvArgs`).

use crate::abi::attention::{ATTENTION_SMALL_BLOCK, RopeWriteKvArgs, WriteKvArgs};
use crate::dsl::dtype::Chunked;
use crate::dsl::ids::{workgroup_id_x, workitem_id_x};
use crate::dsl::mem::{load_chunk, store_chunk};
use crate::dsl::simd::U32x4;
use crate::num::Divisor;

/// One work-item per 16 bytes of one token's row of one head, in K and in V: consecutive
/// work-items move consecutive bytes of a row (whole lines on both sides). Its divisions (by the
/// row's work-items, the heads, the page size) are the host's invariant divisors
/// ([`Divisor`]): the work-item and slot indices reach 2^32, where a run-time division was
/// twenty-odd instructions each on this short kernel's path.
#[inline(always)]
pub fn write_kv(args: WriteKvArgs) {
    let per_row = Divisor { d: args.d / 8, magic: args.row_magic, shift: args.row_shift };
    let heads = Divisor { d: args.kv_heads, magic: args.heads_magic, shift: args.heads_shift };
    let item = workgroup_id_x() * ATTENTION_SMALL_BLOCK + workitem_id_x();
    if item >= args.tokens * args.kv_heads * per_row.d {
        return;
    }
    let (th, c) = per_row.div_rem(item);
    let (t, h) = heads.div_rem(th);
    // SAFETY: t < tokens, the slot table's length (host-checked).
    let slot = unsafe { args.slots.add(t as usize).read() } as u32;
    // One comparison covers both ends: a negative slot is a huge unsigned one.
    if slot >= args.slots_total {
        // SAFETY: one u32; racing writers store offending tokens, whichever lands.
        unsafe { args.error.write(t + 1) };
        return;
    }
    let (page, off) = Divisor { d: args.page_size, magic: args.page_magic, shift: args.page_shift }.div_rem(slot);
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

/// One work-item per 16 bytes (8 values, 4 rotation pairs) of one head of one token: query heads
/// rotated into `q`, key heads rotated into their cache slot, value heads copied into theirs.
/// The rotation is `rope`'s (`x c - y s`, `y c + x s` in f32, rounded once), so a step through
/// this kernel writes the bits `rope` then `write_kv` would.
#[inline(always)]
pub fn rope_write_kv<E: Chunked>(a: RopeWriteKvArgs) {
    let per_row = Divisor { d: a.d / 8, magic: a.row_magic, shift: a.row_shift };
    let all = Divisor { d: a.heads + 2 * a.kv_heads, magic: a.all_magic, shift: a.all_shift };
    let item = workgroup_id_x() * ATTENTION_SMALL_BLOCK + workitem_id_x();
    if item >= a.tokens * all.d * per_row.d {
        return;
    }
    let (th, c) = per_row.div_rem(item);
    let (t, h) = all.div_rem(th);
    let e = 8 * c as usize;
    // The loads that need nothing else go out together (the token's position and slot are read
    // by every work-item, used or not): position -> cos/sin and slot -> store are then two
    // dependent steps, not three.
    // SAFETY: t < tokens, h < heads + 2 kv_heads, e + 8 <= d: inside the row (host-checked
    // 16-byte alignment of the rows and their stride).
    let mut chunk = unsafe { load_chunk(a.qkv, (t as usize * a.row_stride as usize + h as usize * a.d as usize + e) * 2) };
    let (sq, t_in) = Divisor { d: a.seq.max(1), magic: a.seq_magic, shift: a.seq_shift }.div_rem(t);
    // SAFETY: t / seq < tokens / seq offsets, t < tokens slots (host-checked).
    let (pos, slot) = unsafe { (a.offsets.add(sq as usize).read(), a.slots.add(t as usize).read() as u32) };
    if h < a.heads + a.kv_heads && (e as u32) < a.rot_dim {
        // Rotation pairs e/2 .. e/2 + 4 at the token's position.
        let pos = pos.wrapping_add(t_in as i32);
        let ok = pos >= 0 && (pos as u32) < a.cache_rows;
        let at = if ok { pos as usize * (a.rot_dim / 2) as usize + e / 2 } else { 0 };
        // SAFETY: with ok, row pos of both tables holds pairs e/2 .. e/2 + 4 (rot_dim is a
        // multiple of 8 and e < rot_dim); 16-byte aligned as rot_dim / 2 is a multiple of 4.
        let (cs, sn) = unsafe { ((a.cos.add(at) as *const U32x4).read().to_array(), (a.sin.add(at) as *const U32x4).read().to_array()) };
        let x = E::unpack(chunk);
        let mut y = [0f32; 8];
        crate::unroll!(p < 4 => {
            let (co, si) = if ok { (f32::from_bits(cs[p]), f32::from_bits(sn[p])) } else { (f32::NAN, f32::NAN) };
            let (x0, x1) = (x[2 * p], x[2 * p + 1]);
            (y[2 * p], y[2 * p + 1]) = (x0 * co - x1 * si, x1 * co + x0 * si);
        });
        chunk = E::pack(&y);
    }
    if h < a.heads {
        // SAFETY: q is [tokens][heads][d]: inside, 16-byte aligned.
        unsafe { store_chunk(a.q, ((t as usize * a.heads as usize + h as usize) * a.d as usize + e) * 2, chunk) };
        return;
    }
    // One comparison covers both ends: a negative slot is a huge unsigned one.
    if slot >= a.slots_total {
        // SAFETY: one u32; racing writers store offending tokens, whichever lands.
        unsafe { a.error.write(t + 1) };
        return;
    }
    let (value, kh) = if h >= a.heads + a.kv_heads { (true, h - a.heads - a.kv_heads) } else { (false, h - a.heads) };
    let (page, off) = Divisor { d: a.page_size, magic: a.page_magic, shift: a.page_shift }.div_rem(slot);
    let dst = (((page as usize * a.kv_heads as usize + kh as usize) * a.page_size as usize + off as usize) * a.d as usize + e) * 2;
    // SAFETY: every slot below slots_total is inside both caches (host-checked).
    unsafe { store_chunk(if value { a.v_cache } else { a.k_cache }, dst, chunk) };
}
