//! Moving K-tiles: global memory -> registers -> LDS (swizzled), and LDS -> MFMA fragments.
//!
//! A K-tile of an operand is `rows x 64 bytes` (4 chunks of 16 bytes per row). In LDS, chunk q
//! of row r lives at chunk position `q ^ ((r / 2) % 4)` of its row, rows packed without padding
//! (64 bytes = 16 banks). Why: the 8 lanes an LDS phase serves for a 128-bit access are either
//! 8 consecutive rows at one chunk (fragment reads) or 2 rows x 4 chunks (tile stores); with the
//! swizzle both land on 8 distinct 4-bank groups, so neither has a bank conflict, and no LDS is
//! spent on padding.

use crate::dsl::lds::LdsSlice;
use crate::dsl::mem::Buffer;
use crate::dsl::simd::U32x4;

/// Chunks (16 bytes) per row of a K-tile.
pub const CHUNKS: usize = 4;

/// Index (in 16-byte units) of chunk `q` of row `r` in a stage of `rows` rows.
#[inline(always)]
pub fn lds_index(stage: usize, rows: usize, r: usize, q: usize) -> usize {
    (stage * rows + r) * CHUNKS + (q ^ ((r >> 1) & 3))
}

/// One operand's geometry for a block, and this thread's chunks of it.
///
/// Rows at or past the matrix edge are clamped to the last row: they load valid memory, and the
/// results they feed (C rows/columns past the edge) are never stored, so interior and edge
/// blocks share one path. Only K needs zero-filling (past K the products must be 0): the last,
/// partial K-tile is loaded the same way (the buffer's range ends exactly at the last valid
/// byte, and reads past a range return 0) and the bytes past K are masked off in registers.
pub struct Operand<const N: usize> {
    /// Byte offset of each of this thread's chunks from the block start (row * ld + q * 16).
    pub off: [u32; N],
    /// K-position (bytes) of each chunk within a K-tile (q * 16).
    pub q16: [u32; N],
    /// K in bytes.
    pub k_bytes: usize,
    /// The block's rows as a buffer (loads advance its scalar offset along K).
    pub buf: Buffer,
}

impl<const N: usize> Operand<N> {
    /// Geometry for the block starting at `base`, `rows_left` rows from the matrix edge; this
    /// thread moves chunks `thread + i * threads` for `i < count`.
    #[inline(always)]
    pub fn new(base: *const u8, row_bytes: usize, rows_left: usize, k_bytes: usize, thread: usize, threads: usize, count: usize) -> Self {
        // The last row this block reads: its own last row or the matrix's, whichever is first.
        let last = rows_left.min(threads * count / CHUNKS).max(1) - 1;
        // The valid bytes: up to K of that row, so nothing past the operand's own memory is ever
        // read, even by the over-reading partial tile (the host keeps this under 4 GiB).
        let span = (last * row_bytes + k_bytes).min(u32::MAX as usize) as u32;
        let mut op = Operand { off: [0; N], q16: [0; N], k_bytes, buf: Buffer::new(base, span) };
        crate::unroll!(i < N => {
            if i < count {
                let c = thread + i * threads;
                let r = (c / CHUNKS).min(last);
                op.q16[i] = ((c % CHUNKS) * 16) as u32;
                op.off[i] = (r * row_bytes) as u32 + op.q16[i];
            }
        });
        op
    }

    /// Loads this thread's chunks of the K-tile at byte `kb` of every row (16 bytes each).
    /// `partial`: the tile reaches past K, whose bytes are zeroed.
    #[inline(always)]
    pub fn load(&self, kb: u32, count: usize, partial: bool, regs: &mut [U32x4; N]) {
        // The K offset is uniform, but LLVM may keep a loop counter in VGPRs; a scalar offset
        // must be an SGPR, so say so (else each load gets a waterfall loop).
        let kbs = crate::dsl::wave::readfirstlane(kb);
        // The range check ignores the scalar offset: the partial tile, which must be clipped at
        // the operand's end, goes through a buffer re-based at `kb` instead.
        let (buf, soff) = if partial { (self.buf.skip(kbs), 0) } else { (self.buf, kbs) };
        crate::unroll!(i < N => {
            if i < count {
                // SAFETY: rows are clamped inside the matrix; full tiles lie inside it and the
                // partial tile's range stops at its end.
                let mut v = unsafe { buf.load_b128(self.off[i], soff) };
                if partial {
                    let valid = self.k_bytes as i64 - (kb as i64 + self.q16[i] as i64);
                    let mut w = v.to_array();
                    crate::unroll!(d < 4 => {
                        let bytes = (valid - 4 * d as i64).clamp(0, 4) as u32;
                        w[d] &= if bytes == 4 { u32::MAX } else { (1u32 << (8 * bytes)) - 1 };
                    });
                    v = U32x4::from_array(w);
                }
                regs[i] = v;
            }
        });
    }
}

/// Stores this thread's chunks into LDS stage `stage` of a `rows`-row operand.
///
/// # Safety
/// `lds` holds two stages of `rows` rows; no wave reads the stage until the next barrier.
#[inline(always)]
pub unsafe fn regs_to_lds<const N: usize>(
    lds: LdsSlice<U32x4>,
    stage: usize,
    rows: usize,
    thread: usize,
    threads: usize,
    count: usize,
    regs: &[U32x4; N],
) {
    crate::unroll!(i < N => {
        if i < count {
            let c = thread + i * threads;
            unsafe { lds.write(lds_index(stage, rows, c / CHUNKS, c % CHUNKS), regs[i]) };
        }
    });
}
