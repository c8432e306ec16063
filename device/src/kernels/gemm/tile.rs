//! Moving K-tiles: global memory -> registers -> LDS (swizzled), and LDS -> MFMA fragments.
//!
//! A K-tile of an operand is `rows x 64 bytes` (4 chunks of 16 bytes per row). In LDS, chunk q
//! of row r lives at chunk position `q ^ ((r / 2) % 4)` of its row, rows packed without padding
//! (64 bytes = 16 banks). Why: the 8 lanes an LDS phase serves for a 128-bit access are either
//! 8 consecutive rows at one chunk (fragment reads) or 2 rows x 4 chunks (tile stores); with the
//! swizzle both land on 8 distinct 4-bank groups, so neither has a bank conflict, and no LDS is
//! spent on padding.

use crate::dsl::lds::LdsSlice;
use crate::dsl::mem::load_b128;
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
/// blocks share the fast path. Only K needs zero-filling (past K the products must be 0).
pub struct Operand<const N: usize> {
    /// Row 0 of this block, plus kt * 64 bytes as the loop advances (wave-uniform).
    pub base: *const u8,
    /// Bytes between rows.
    pub row_bytes: usize,
    /// Rows of the matrix left from this block's first row.
    pub rows_left: usize,
    /// K in bytes.
    pub k_bytes: usize,
    /// Byte offset of each of this thread's chunks from `base` (row * row_bytes + q * 16).
    pub off: [u32; N],
    /// Row of each chunk (clamped), for the slow path.
    pub row: [u32; N],
    /// Chunk index within the row, for the slow path.
    pub q: [u32; N],
}

impl<const N: usize> Operand<N> {
    /// Geometry for `rows` rows of a block whose first row is `rows_left` from the edge; this
    /// thread moves chunks `thread + i * threads` for `i < count`.
    #[inline(always)]
    pub fn new(base: *const u8, row_bytes: usize, rows_left: usize, k_bytes: usize, thread: usize, threads: usize, count: usize) -> Self {
        let mut op = Operand { base, row_bytes, rows_left, k_bytes, off: [0; N], row: [0; N], q: [0; N] };
        crate::unroll!(i < N => {
            if i < count {
                let c = thread + i * threads;
                let r = (c / CHUNKS).min(rows_left.max(1) - 1);
                op.row[i] = r as u32;
                op.q[i] = (c % CHUNKS) as u32;
                op.off[i] = (r * row_bytes + (c % CHUNKS) * 16) as u32;
            }
        });
        op
    }

    /// Loads this thread's chunks of the K-tile at byte `kb` of every row with 128-bit loads.
    /// Requires the whole tile inside K and 16-byte alignment.
    #[inline(always)]
    pub fn load_fast(&self, kb: usize, count: usize, regs: &mut [U32x4; N]) {
        // SAFETY: the tile lies inside K and the rows are clamped inside the matrix.
        let base = unsafe { self.base.add(kb) };
        crate::unroll!(i < N => {
            if i < count {
                regs[i] = unsafe { load_b128(base.add(self.off[i] as usize) as *const u32) };
            }
        });
    }

    /// Loads the K-tile at byte `kb` element by element, zero past K (the last, partial tile;
    /// or inputs that are not 16-byte aligned).
    #[inline(always)]
    pub fn load_slow(&self, elem_bytes: usize, kb: usize, count: usize, regs: &mut [U32x4; N]) {
        crate::unroll!(i < N => {
            if i < count {
                let kq = kb + self.q[i] as usize * 16;
                // SAFETY: rows are clamped inside the matrix; only bytes below k_bytes are read.
                let row = unsafe { self.base.add(self.row[i] as usize * self.row_bytes) };
                let mut w = [0u32; 4];
                crate::unroll!(e < 16 => {
                    if e % elem_bytes == 0 && kq + e + elem_bytes <= self.k_bytes {
                        unsafe {
                            let p = row.add(kq + e);
                            let v = match elem_bytes {
                                1 => p.read() as u32,
                                2 => (p as *const u16).read_unaligned() as u32,
                                _ => (p as *const u32).read_unaligned(),
                            };
                            w[e / 4] |= v << (8 * (e % 4));
                        }
                    }
                });
                regs[i] = U32x4::from_array(w);
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
