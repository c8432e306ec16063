//! Global tiles: a block's rows of a K-contiguous matrix, walked one K-tile (`rows x 64 bytes`)
//! at a time through a buffer resource, into registers and from there into an LDS tile.
//!
//! The workgroup's threads share the K-tile's 16-byte chunks: thread t moves chunks
//! `t, t + threads, ...`, so consecutive threads take consecutive chunks of a row: every load
//! instruction reads whole 64-byte lines, and every LDS store phase (8 lanes: 2 rows x 4 chunks)
//! lands on distinct banks (see `lds`).
//!
//! Rows at or past the matrix edge are clamped to the last row: they load valid memory, and the
//! results they feed (C rows/columns past the edge) are never stored, so interior and edge blocks
//! share one path. Only K needs zero-filling (past K the products must be 0): the last, partial
//! K-tile goes through a buffer whose range ends at the operand's last byte (reads past a range
//! return 0) and the bytes past K are masked off in registers.

use super::lds::{CHUNKS, K_TILE_BYTES, LdsTile};
use crate::dsl::mem::Buffer;
use crate::dsl::simd::U32x4;
use crate::dsl::wave::readfirstlane;

/// A thread's chunks of one K-tile in registers (`N` at most; the tile uses `count` of them).
pub type Stage<const N: usize> = [U32x4; N];

/// One operand's block rows, and this thread's share of each K-tile.
pub struct GlobalTile<const N: usize> {
    /// Byte offset of each of this thread's chunks from the block start (row * ld + q * 16).
    off: [u32; N],
    /// K-position (bytes) of each chunk within a K-tile (q * 16).
    q16: [u32; N],
    /// Chunks this thread moves per K-tile.
    count: usize,
    /// This thread and the workgroup's threads (which chunks it moves).
    thread: usize,
    threads: usize,
    /// K in bytes.
    k_bytes: usize,
    /// The block's rows as a buffer (loads advance its scalar offset along K).
    buf: Buffer,
}

impl<const N: usize> GlobalTile<N> {
    /// The `rows`-row block starting at `base`, rows `row_bytes` apart, `rows_left` rows before
    /// the matrix edge, K of `k_bytes`; this thread is `thread` of `threads`.
    ///
    /// # Safety
    /// `base` is the address of a row of the operand, which holds `rows_left` rows from there (at
    /// least one) of `row_bytes` bytes, K-contiguous, each with `k_bytes` readable bytes; the
    /// block's span (the host checks it) is below 4 GiB.
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
        let count = rows * CHUNKS / threads;
        // The last row this block reads: its own last row or the matrix's, whichever is first.
        let last = rows_left.min(rows).max(1) - 1;
        // The valid bytes: up to K of that row, so nothing past the operand's own memory is ever
        // read, even by the over-reading partial tile.
        let span = (last * row_bytes + k_bytes).min(u32::MAX as usize) as u32;
        let mut t = GlobalTile { off: [0; N], q16: [0; N], count, thread, threads, k_bytes, buf: Buffer::new(base, span) };
        crate::unroll!(i < N => {
            if i < count {
                let c = thread + i * threads;
                let r = (c / CHUNKS).min(last);
                t.q16[i] = ((c % CHUNKS) * 16) as u32;
                t.off[i] = (r * row_bytes) as u32 + t.q16[i];
            }
        });
        t
    }

    /// Loads this thread's chunks of K-tile `kt` into `regs` (16 bytes each). `partial`: the tile
    /// reaches past K, whose bytes are zeroed.
    #[inline(always)]
    pub fn load(&self, kt: u32, partial: bool, regs: &mut Stage<N>) {
        // The K offset is uniform, but LLVM may keep a loop counter in VGPRs; a scalar offset
        // must be an SGPR, so say so (else each load gets a waterfall loop).
        let kb = readfirstlane(kt * K_TILE_BYTES as u32);
        // The range check ignores the scalar offset: the partial tile, which must be clipped at
        // the operand's end, goes through a buffer re-based at `kb` instead.
        let (buf, soff) = if partial { (self.buf.skip(kb), 0) } else { (self.buf, kb) };
        crate::unroll!(i < N => {
            if i < self.count {
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

    /// Stores this thread's chunks from `regs` into stage `stage` of `lds`.
    ///
    /// # Safety
    /// `lds` has this block's rows; no wave reads the stage until the next barrier.
    #[inline(always)]
    pub unsafe fn store(&self, lds: LdsTile, stage: usize, regs: &Stage<N>) {
        crate::unroll!(i < N => {
            if i < self.count {
                let c = self.thread + i * self.threads;
                // SAFETY: inside the stage (caller).
                unsafe { lds.write(stage, c / CHUNKS, c % CHUNKS, regs[i]) };
            }
        });
    }
}
