//! Operands whose reduction axis is the slow one in memory, moved into LDS transposed: attention's
//! V (`[keys][d]`, reduced over keys in `P V`) becomes `d` rows of 32 keys, from which 16x16
//! MFMA A-fragments are read like any K-contiguous tile.
//!
//! Why a transposing store: an MFMA lane needs 4 consecutive values of the reduction axis in one
//! register pair, and in V those are 4 different rows. Each lane loads a *quad* (4 consecutive
//! keys x 8 values of `d`, four 128-bit loads of whole 64-byte lines), regroups it in registers
//! into 8 pairs of words (one per `d`, 4 keys each: one byte permute per word) and writes those
//! with 8 `ds_write_b64`; the loads stay 128-bit and the reads 128-bit.
//!
//! Layout of one tile (32 keys): row `d` has 4 chunks of 16 bytes; chunk `c` holds keys
//! `4c .. 4c + 4` in its first 8 bytes and `16 + 4c .. 16 + 4c + 4` in its last 8: exactly the
//! A operand of the two 16x16x16 MFMAs over the tile's keys (lane `l` supplies k = `4 (l / 16)
//! ..` of each; see GFX942.md), so one `ds_read_b128` per lane feeds both. Rows are 64 bytes, half
//! the banks, so placement is swizzled twice: row `d` is stored at `r = d ^ ((d >> 3) & 1)` and
//! its chunk `c` at position `c ^ (((r >> 1) ^ (r >> 3)) & 3)`. Why: a quad store instruction
//! writes rows `8 dc + e` for one `e` (the register it holds), which without the row swap all
//! share a parity and so one half of the banks; with it, the 16 lanes of a `ds_write_b64` phase
//! (4 `dc` x 4 quads, see [`QuadRole`]) land on 16 distinct 8-byte bank pairs, and the 8 lanes of
//! every `ds_read_b128` phase (rows `16 dt + l % 16`, chunk `l / 16`, in MI300X's lane groups) on
//! 8 distinct 16-byte bank groups. The counter suites check both.

use crate::dsl::lds::{LdsArena, LdsSlice};
use crate::dsl::simd::{U32x2, U32x4};

/// Keys per tile (the reduction extent of two 16x16x16 MFMAs).
pub const TILE_KEYS: usize = 32;
/// 16-byte chunks per row of a tile.
const ROW_CHUNKS: usize = TILE_KEYS * 2 / 16;
/// Values of `d` per slab: the rows one half-wave's quads cover (4 chunks of 8).
pub const SLAB: usize = 32;

/// `tiles` tiles of `rows` rows (the `d` extent) each, in LDS.
#[derive(Clone, Copy)]
pub struct TransposedTile {
    /// 8-byte units (the store granularity).
    units: LdsSlice<U32x2>,
    rows: usize,
}

/// What one lane moves: keys `4 kq .. 4 kq + 4` of a tile, values `8 dc .. 8 dc + 8` of a slab.
/// A half-wave (32 lanes) covers one tile's 32 keys of one slab.
///
/// Why this lane order: the four lanes of one `kq` hold a whole 64-byte line of each key row
/// (coalesced loads); each 16-lane store phase takes the quads `kq` with bits 0 and 2 free
/// (chunks `c` and `c ^ 1`, both 8-byte halves), which with the row swizzle fills all 32 banks.
#[derive(Clone, Copy)]
pub struct QuadRole {
    /// Quad of keys in the tile (0..8).
    pub kq: usize,
    /// 8-value chunk of the slab (0..4).
    pub dc: usize,
    /// Which half of the wave (0 or 1): the slab/tile pair the caller assigns it.
    pub half: usize,
}

impl QuadRole {
    /// The role of `lane` (0..64).
    #[inline(always)]
    pub fn of(lane: usize) -> QuadRole {
        let g = (lane / 4) % 8;
        // g bit 0 -> kq bit 0, g bit 1 -> kq bit 2, g bit 2 -> kq bit 1.
        let kq = (g & 1) | ((g >> 1) & 1) << 2 | ((g >> 2) & 1) << 1;
        QuadRole { kq, dc: lane % 4, half: lane / 32 }
    }

    /// Byte offset, within a key row, of this lane's 16 bytes in slab `slab` (2-byte values).
    #[inline(always)]
    pub fn col_bytes(&self, slab: usize) -> usize {
        (slab * SLAB + 8 * self.dc) * 2
    }
}

impl TransposedTile {
    /// Takes `tiles` tiles of `rows` rows from the arena (`tiles * rows * 64` bytes). `rows` is a
    /// multiple of 32.
    #[inline(always)]
    pub fn new(arena: &mut LdsArena, rows: usize, tiles: usize) -> Self {
        TransposedTile { units: arena.take::<U32x2>(tiles * rows * ROW_CHUNKS * 2), rows }
    }

    /// The 16-byte position of chunk `c` of row `d` of tile `tile`: the layout's definition.
    /// [`TransposedTile::store`] and [`TransposedTile::read`] use closed forms of it for their
    /// rows (checked against it in debug builds): through this function, LLVM kept some sixty
    /// instructions of shifts and XORs per call site, hoisted before the decode loop and on
    /// the chain to its first step (modeled `attention_decode bf16 b1 h9 kv3 c64 d64 p16`).
    #[inline(always)]
    fn chunk(&self, tile: usize, d: usize, c: usize) -> usize {
        let r = d ^ ((d >> 3) & 1);
        (tile * self.rows + r) * ROW_CHUNKS + (c ^ (((r >> 1) ^ (r >> 3)) & 3))
    }

    /// Stores `quad` (the 16 bytes of slab `slab` of keys `4 kq + x`, x = 0..4, one chunk each)
    /// transposed into tile `tile`.
    ///
    /// # Safety
    /// `tile` and the slab are inside the tile; no wave reads the tile until the stores are
    /// published (a barrier, or program order within the wave that wrote it).
    #[inline(always)]
    pub unsafe fn store(&self, tile: usize, slab: usize, role: &QuadRole, quad: &[U32x4; 4]) {
        let [k0, k1, k2, k3] = [quad[0].to_array(), quad[1].to_array(), quad[2].to_array(), quad[3].to_array()];
        // Keys 4kq + x sit at chunk kq % 4 of their rows, in the 8-byte half kq / 4.
        let (c, h) = (role.kq % 4, role.kq / 4);
        // Rows d = 32 slab + 8 dc + 2w + e (e = 0, 1): d / 8 = 4 slab + dc, so the row swap
        // flips bit 0 by dc's bit 0, and the chunk's swizzle ((r / 2) ^ (r / 8)) & 3 is
        // (w ^ dc) & 3 (the rest of both terms is a multiple of 4). So each position is a
        // per-lane base, 8 w, and c ^ dc ^ w.
        let flip = role.dc & 1;
        let base = (tile * self.rows + slab * SLAB + 8 * role.dc) * ROW_CHUNKS;
        let cd = (c ^ role.dc) & 3;
        crate::unroll_max!(w < 4, 4 => {
            // Word w of each key holds d = 2w (low half) and 2w + 1 (high half).
            let lo = U32x2::from_array([pack_lo(k0[w], k1[w]), pack_lo(k2[w], k3[w])]);
            let hi = U32x2::from_array([pack_hi(k0[w], k1[w]), pack_hi(k2[w], k3[w])]);
            let at = |e: usize| base + 8 * w + 4 * (e ^ flip) + (cd ^ w);
            let d = slab * SLAB + 8 * role.dc + 2 * w;
            debug_assert!(at(0) == self.chunk(tile, d, c) && at(1) == self.chunk(tile, d + 1, c));
            // SAFETY: inside the tile (caller).
            unsafe {
                self.units.write(2 * at(0) + h, lo);
                self.units.write(2 * at(1) + h, hi);
            }
        });
    }

    /// The 16x16 MFMA A-fragment of `lane` for rows `16 dt ..` of tile `tile`: row
    /// `16 dt + lane % 16`, chunk `lane / 16` (both MFMAs over the tile's keys).
    ///
    /// # Safety
    /// In range, and the tile was published to this wave since its last store.
    #[inline(always)]
    pub unsafe fn read(&self, tile: usize, dt: usize, lane: usize) -> U32x4 {
        // Row d = 16 dt + m (m = lane % 16): the row swap flips bit 0 by m's bit 3 (mh), and
        // the chunk's swizzle is ((m / 2) ^ mh ^ 2 dt) & 3 (8 dt adds a multiple of 4 to
        // r / 2, and 2 dt + mh is 2 dt ^ mh). So the position is a per-lane base, 64 dt, and
        // the lane's chunk XOR 2 for odd dt.
        let (m, c) = (lane % 16, lane / 16);
        let mh = m >> 3;
        let at = (tile * self.rows + 16 * dt + (m ^ mh)) * ROW_CHUNKS + ((c ^ (m >> 1) ^ mh ^ (2 * dt)) & 3);
        debug_assert!(at == self.chunk(tile, 16 * dt + m, c));
        // SAFETY: inside the tile (caller); chunks are 16-byte aligned.
        unsafe { self.units.read_as::<U32x4>(2 * at) }
    }
}

/// The low 16-bit halves of `a` and `b` as one word (`a`'s first): one `v_perm_b32`.
#[inline(always)]
fn pack_lo(a: u32, b: u32) -> u32 {
    (a & 0xffff) | (b << 16)
}

/// The high 16-bit halves of `a` and `b` as one word.
#[inline(always)]
fn pack_hi(a: u32, b: u32) -> u32 {
    (a >> 16) | (b & 0xffff_0000)
}
