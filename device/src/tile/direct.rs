//! Global tiles loaded straight into LDS (gfx942's `buffer_load_dword ... lds`): no registers,
//! no LDS store instructions, 4 bytes per lane per load.
//!
//! A load to LDS writes lane l's dword at `M0 + 4 l`: the LDS side of an instruction is fixed (256
//! contiguous bytes), so the swizzle of the LDS tile (`lds`) is applied on the global side: the lane
//! that lands on position p of a stage loads the dword that belongs there. A stage of `rows` rows is
//! `rows * 16` dwords; wave w's i-th load fills the 256 bytes `(i * waves + w) * 256 ..` of it, so
//! the 16 lanes covering a row read that row's 64 bytes (one line) in swizzled order.
//!
//! Edges as for register-staged tiles (`global`): rows past the matrix edge are clamped to the
//! last one, and in the partial last K-tile the lanes whose dword lies past K take an offset out of
//! the buffer's range, so the load writes zero into LDS (CDNA3 ISA: out-of-range loads to LDS
//! write zeros). That zero-fills exactly when K's bytes are a multiple of 4 (a dword straddling K
//! would carry the bytes after it): callers check.

use super::lds::{K_TILE_BYTES, LdsTile};
use crate::dsl::mem::Buffer;
use crate::dsl::wave::{lane_id, readfirstlane};

/// An offset past any buffer's range (a lane that must load zero).
const OUT_OF_RANGE: u32 = 0xFFFF_FFF0;

/// One operand's block rows, loaded straight into LDS: `D` loads per lane per K-tile.
pub struct DirectTile<const D: usize> {
    /// Byte offset of each of this lane's dwords from the block start, per load.
    off: [u32; D],
    /// K-position (bytes) of each of those dwords within a K-tile.
    kpos: [u32; D],
    /// This wave's first 256-byte piece of a stage, and the waves of the workgroup.
    wave: usize,
    waves: usize,
    /// K in bytes.
    k_bytes: usize,
    buf: Buffer,
}

impl<const D: usize> DirectTile<D> {
    /// The `rows`-row block at `base` (as [`GlobalTile::new`](super::global::GlobalTile::new)),
    /// loaded by `threads` work-items of which this is `thread`; `rows * 16 / threads` must be `D`.
    ///
    /// # Safety
    /// As [`GlobalTile::new`](super::global::GlobalTile::new); `k_bytes` is a multiple of 4.
    #[inline(always)]
    pub unsafe fn new(
        base: *const u8,
        row_bytes: usize,
        rows_left: usize,
        k_bytes: usize,
        rows: usize,
        thread: usize,
        threads: usize,
    ) -> Self {
        let dwords = K_TILE_BYTES / 4;
        debug_assert!(rows * dwords / threads == D && k_bytes % 4 == 0);
        let last = rows_left.min(rows).max(1) - 1;
        let span = (last * row_bytes + k_bytes).min(u32::MAX as usize) as u32;
        let (waves, wave, lane) = (threads / 64, readfirstlane(thread as u32 / 64) as usize, lane_id() as usize);
        let mut t = DirectTile { off: [0; D], kpos: [0; D], wave, waves, k_bytes, buf: Buffer::new(base, span) };
        crate::unroll!(i < D => {
            // The stage dword this lane writes in load i, and what belongs there: row r, chunk
            // position `slot` (holding chunk `slot ^ swizzle(r)`, `lds`), dword d of the chunk.
            let p = (i * waves + wave) * 64 + lane;
            let (r, slot, d) = (p / dwords, (p % dwords) / 4, p % 4);
            let q = slot ^ ((r >> 1) & 3);
            t.kpos[i] = (q * 16 + d * 4) as u32;
            t.off[i] = (r.min(last) * row_bytes) as u32 + t.kpos[i];
        });
        t
    }

    /// Starts loading K-tile `kt` into stage `stage` of `lds`. `partial`: the tile reaches past
    /// K, whose bytes load as zero.
    ///
    /// # Safety
    /// `lds` has this block's rows; nobody reads or writes the stage until the loads are complete
    /// (`vmcnt`) and published by a barrier.
    #[inline(always)]
    pub unsafe fn load(&self, kt: u32, partial: bool, lds: LdsTile, stage: usize) {
        let kb = readfirstlane(kt * K_TILE_BYTES as u32);
        // The range check ignores the scalar offset: the partial tile goes through a buffer
        // re-based at `kb`, with the lanes past K sent out of its range.
        let (buf, soff) = if partial { (self.buf.skip(kb), 0) } else { (self.buf, kb) };
        crate::unroll!(i < D => {
            // SAFETY: inside the stage (caller); offsets clamped inside the operand.
            unsafe {
                let dst = lds.as_ptr().add(lds.stage_offset(stage) + (i * self.waves + self.wave) * 256);
                let past_k = partial && (kb + self.kpos[i]) as usize >= self.k_bytes;
                buf.load_lds_b32(dst, if past_k { OUT_OF_RANGE } else { self.off[i] }, soff);
            }
        });
    }
}
