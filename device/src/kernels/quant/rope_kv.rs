//! The decode GEMV's rotary-embedding and KV-cache epilogue (`abi::quant::flags::ROPE_KV`): a
//! fused QKV projection whose queries come out rotated and whose keys and values go straight
//! into their paged-cache slots, so that a decode step needs no `rope_write_kv` launch.
//!
//! The epilogue works on pairs of columns (a rotation pair, `(2i, 2i + 1)` of a head, never
//! straddles a 16-row tile): entry `idx` of the workgroup is pair `idx % 8` of activation row
//! `(idx / 8) % rows` of its tile `idx >> shift` (rows rounded up to a power of two). A pair needs
//! its row's position, then the cos/sin at that position, and its row's cache slot: two dependent
//! loads, which at the end of the kernel would add two memory latencies to it. So every lane
//! fetches its first entry's ahead: the position and slot loads go out with the kernel's first
//! loads ([`ahead`]), the table loads once those have landed, while the K loop runs
//! ([`tables`]); only entries past a workgroup's first `waves * 64` (large row blocks, many
//! tiles per workgroup) load theirs in the epilogue.

use crate::abi::quant::{QGemvArgs, TILE_ROWS, dtype};
use crate::dsl::convert::{bf16_to_f32, f16_bits_to_f32, f32_to_bf16, f32_to_f16_bits};
use crate::dsl::ids::{workgroup_id_y, workgroup_size_x, workitem_id_x};
use crate::dsl::lds::LdsSlice;
use crate::dsl::math::SmallDiv;
use crate::dsl::mem::Buffer;
use crate::num::Divisor;

/// The workgroup's entries: `count` tiles of `rows` activation rows of 8 pairs.
#[derive(Clone, Copy)]
struct Entries {
    shift: u32,
    rows: u32,
    count: u32,
}

impl Entries {
    #[inline(always)]
    fn new(a: &QGemvArgs, count: u32) -> Entries {
        let rows = a.m.max(1);
        Entries { shift: 3 + rows.next_power_of_two().trailing_zeros(), rows, count }
    }

    /// One past the last entry index.
    #[inline(always)]
    fn end(&self) -> u32 {
        self.count << self.shift
    }

    /// Entry `idx` as (tile index, row, pair).
    #[inline(always)]
    fn at(&self, idx: u32) -> (u32, u32, u32) {
        (idx >> self.shift, (idx & ((1 << self.shift) - 1)) >> 3, idx & 7)
    }
}

/// What the first loads gave for an entry: its sequence's first position, its token's place in
/// the sequence and its slot. (Nothing is computed from the loaded values here: that would wait
/// for the loads before the kernel's next ones go out.)
#[derive(Clone, Copy)]
pub(super) struct Ahead {
    first_pos: i32,
    in_seq: u32,
    slot: u32,
}

impl Ahead {
    /// Without `flags::ROPE_KV`: nothing loaded.
    pub(super) const NONE: Ahead = Ahead { first_pos: 0, in_seq: 0, slot: 0 };
}

/// What an entry needs besides its products: the cos and sin of its pair at its row's position
/// (read as 0 outside the tables, where the rotation is NaN) and its row's slot.
#[derive(Clone, Copy)]
pub(super) struct Fetched {
    cos: f32,
    sin: f32,
    /// The raw position (a per-lane flag would hold a pair of scalar registers across the K
    /// loop, which has none to spare).
    pos: i32,
    slot: u32,
}

impl Fetched {
    /// Without `flags::ROPE_KV`: nothing loaded.
    pub(super) const NONE: Fetched = Fetched { cos: 0.0, sin: 0.0, pos: 0, slot: 0 };
}

/// The token (activation row of the whole launch) of row `mi` of the workgroup's block, kept
/// inside the block's rows so that every read is in bounds whatever the entry.
#[inline(always)]
fn token(a: &QGemvArgs, mi: u32) -> u32 {
    workgroup_id_y() * a.m_block + mi.min(a.m.max(1) - 1)
}

/// Issues the position and slot loads of entry `idx` (a lane's first: `workitem_id_x()`).
///
/// # Safety
/// With `flags::ROPE_KV`, the `rope_` arguments describe their buffers (`m` slots, `m /
/// rope_seq` offsets); `a.m` and `a.m_block` are the workgroup's block's (after `setup`).
#[inline(always)]
pub(super) unsafe fn ahead(a: &QGemvArgs, count: u32, idx: u32) -> Ahead {
    let (_, mi, _) = Entries::new(a, count).at(idx);
    let t = token(a, mi);
    let (s, r) = SmallDiv::new(a.rope_seq).div_rem(t);
    // SAFETY: t is a token of the launch (its slot and its sequence's offset exist).
    let (off, slot) = unsafe { (a.rope_offsets.add(s as usize).read(), a.rope_slots.add(t as usize).read()) };
    Ahead { first_pos: off, in_seq: r, slot: slot as u32 }
}

/// Issues the table loads of entry `idx` (whose [`ahead`] gave `ah`) of the workgroup's tiles
/// `first, first + stride, ..`.
///
/// # Safety
/// As [`ahead`]; the tables hold `cache_rows * rot_dim / 2` f32 each.
#[inline(always)]
pub(super) unsafe fn tables(a: &QGemvArgs, first: u32, stride: u32, count: u32, idx: u32, ah: Ahead) -> Fetched {
    let (ti, _, p) = Entries::new(a, count).at(idx);
    let col = (first + ti * stride) * TILE_ROWS as u32 + 2 * p;
    let e = SmallDiv::new(a.head_dim).div_rem(col).1;
    let pos = ah.first_pos.wrapping_add(ah.in_seq as i32);
    let half = a.rot_dim / 2;
    // Past the tables (a position outside them, a pair not rotated): the range check reads 0.
    let at = if pos_ok(a, pos) && e < a.rot_dim { (pos as u32 * half + e / 2) * 4 } else { Buffer::PAST };
    let bytes = a.cache_rows * half * 4;
    let (cb, sb) = (Buffer::new(a.rope_cos as *const u8, bytes), Buffer::new(a.rope_sin as *const u8, bytes));
    // SAFETY: range-checked loads.
    let (c, s) = unsafe { (cb.load_b32(at, 0), sb.load_b32(at, 0)) };
    Fetched { cos: f32::from_bits(c), sin: f32::from_bits(s), pos, slot: ah.slot }
}

/// Whether position `pos` is a row of the tables.
#[inline(always)]
fn pos_ok(a: &QGemvArgs, pos: i32) -> bool {
    pos >= 0 && (pos as u32) < a.cache_rows
}

/// `v` rounded to the output type (f16 or bf16) and back: the value the plain GEMV stores.
#[inline(always)]
fn round(ty: u32, v: f32) -> f32 {
    if ty == dtype::F16 { f16_bits_to_f32(f32_to_f16_bits(v)) } else { bf16_to_f32(f32_to_bf16(v)) }
}

/// The bits of `v` in the output type.
#[inline(always)]
fn bits(ty: u32, v: f32) -> u32 {
    if ty == dtype::F16 { f32_to_f16_bits(v) as u32 } else { f32_to_bf16(v).0 as u32 }
}

/// The epilogue of every entry of the workgroup's `count` tiles, after the reductions'
/// barrier: `fetched` is what the lane fetched ahead for its first entry.
///
/// # Safety
/// As [`tables`]; `results` hold the tiles' sums (`results[ti * 256 + m * 16 + n]`); `y` has `m`
/// rows of `ldy`; every slot below `slots_total` is inside both caches.
#[inline(always)]
pub(super) unsafe fn epilogue(a: &QGemvArgs, first: u32, stride: u32, count: u32, results: LdsSlice<f32>, fetched: Fetched) {
    let entries = Entries::new(a, count);
    let (thread, threads) = (workitem_id_x(), workgroup_size_x());
    let d = SmallDiv::new(a.head_dim);
    if thread < entries.end() {
        // SAFETY: as above.
        unsafe { entry(a, entries, d, first, stride, results, thread, fetched) };
    }
    let mut idx = thread + threads;
    while idx < entries.end() {
        // SAFETY: as above.
        let f = unsafe { tables(a, first, stride, count, idx, ahead(a, count, idx)) };
        // SAFETY: as above.
        unsafe { entry(a, entries, d, first, stride, results, idx, f) };
        idx += threads;
    }
}

/// Entry `idx`: its pair of products rounded, rotated (query and key heads, below `rot_dim`)
/// and stored into `y` (query heads) or its cache slot.
///
/// # Safety
/// As [`epilogue`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn entry(a: &QGemvArgs, entries: Entries, d: SmallDiv, first: u32, stride: u32, results: LdsSlice<f32>, idx: u32, f: Fetched) {
    let (ti, mi, p) = entries.at(idx);
    let col = (first + ti * stride) * TILE_ROWS as u32 + 2 * p;
    if mi >= entries.rows || col >= a.n {
        return;
    }
    let at = (ti * 256 + mi * TILE_ROWS as u32 + 2 * p) as usize;
    // SAFETY: written by the reductions before the caller's barrier.
    let (g0, g1) = unsafe { (results.read(at), results.read(at + 1)) };
    let ty = a.out_type;
    // As the plain GEMV then `rope_write_kv` compute it: the products rounded to the output
    // type, rotated in f32, rounded once more.
    let (mut x0, mut x1) = (round(ty, g0), round(ty, g1));
    let (head, e) = d.div_rem(col);
    if head < a.heads + a.kv_heads && e < a.rot_dim {
        let (c, s) = if pos_ok(a, f.pos) { (f.cos, f.sin) } else { (f32::NAN, f32::NAN) };
        (x0, x1) = (x0 * c - x1 * s, x1 * c + x0 * s);
    }
    let word = bits(ty, x0) | bits(ty, x1) << 16;
    if head < a.heads {
        // SAFETY: row mi < m of y, column col + 1 < heads * head_dim <= ldy; 4-byte aligned
        // (col, ldy even).
        unsafe { (a.y.add((mi * a.ldy + col) as usize * 2) as *mut u32).write(word) };
        return;
    }
    let t = token(a, mi);
    if f.slot >= a.slots_total {
        // SAFETY: one u32; racing writers store offending tokens, whichever lands.
        unsafe { a.rope_error.write(t + 1) };
        return;
    }
    let value = head >= a.heads + a.kv_heads;
    let kh = head - a.heads - if value { a.kv_heads } else { 0 };
    let (page, off) = Divisor { d: a.page_size, magic: a.page_magic, shift: a.page_shift }.div_rem(f.slot);
    let dst = (((page as usize * a.kv_heads as usize + kh as usize) * a.page_size as usize + off as usize) * a.head_dim as usize
        + e as usize)
        * 2;
    // SAFETY: the slot is inside both caches (host-checked); e + 1 < head_dim, 4-byte aligned.
    unsafe { ((if value { a.v_cache } else { a.k_cache }).add(dst) as *mut u32).write(word) };
}
