//! K-tiles in LDS: `rows x 64 bytes` per stage, swizzled so the accesses of both sides are free of
//! bank conflicts, `stages` copies for the pipeline.
//!
//! Chunk q (16 bytes) of row r lives at chunk position `q ^ ((r / 2) % 4)` of its row, rows packed
//! without padding (64 bytes = 16 banks). Why: a 128-bit access is served 8 lanes per phase
//! (MI300X's measured phases, the emulator's `lds_phase`), and 8 lanes reach all 32 banks only if
//! they hit 8 distinct 4-bank groups. Unswizzled, rows r and r + 2 share groups; with the XOR every
//! phase of the accesses the tiles make lands on 8 distinct groups: fragment reads (`reg`: several
//! rows at one chunk, 32x32, or two chunks of 4 rows each, 16x16) and tile stores (`global`: 2 rows
//! x 4 chunks). No LDS is spent on padding. The counter suite (`gemm_counters`) checks it.

use crate::dsl::lds::{LdsArena, LdsSlice};
use crate::dsl::simd::U32x4;

/// Bytes of K each row contributes to one K-tile: 4 chunks of 16 bytes (32 bf16/f16 values, 64
/// fp8 values, 16 f32 values). The host sizes LDS and splits K with the same number.
pub const K_TILE_BYTES: usize = crate::abi::gemm::K_TILE_BYTES as usize;
/// Chunks (16 bytes) per row of a K-tile.
pub const CHUNKS: usize = K_TILE_BYTES / 16;

/// One operand's K-tiles in LDS: `stages` stages of `rows` rows.
#[derive(Clone, Copy)]
pub struct LdsTile {
    chunks: LdsSlice<U32x4>,
    rows: usize,
}

impl LdsTile {
    /// Takes `stages` stages of `rows` rows from the arena (`stages * rows * 64` bytes).
    #[inline(always)]
    pub fn new(arena: &mut LdsArena, rows: usize, stages: usize) -> Self {
        LdsTile { chunks: arena.take::<U32x4>(stages * rows * CHUNKS), rows }
    }

    /// Rows per stage.
    #[inline(always)]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Position (in 16-byte units) of chunk `q` of row `r` in stage `stage`.
    #[inline(always)]
    pub fn index(&self, stage: usize, r: usize, q: usize) -> usize {
        (stage * self.rows + r) * CHUNKS + (q ^ ((r >> 1) & 3))
    }

    /// Byte offset of stage `stage` from the tile's start.
    #[inline(always)]
    pub fn stage_offset(&self, stage: usize) -> usize {
        stage * self.rows * K_TILE_BYTES
    }

    /// The first byte of the tile (all stages).
    #[inline(always)]
    pub fn as_ptr(&self) -> *mut u8 {
        self.chunks.as_ptr() as *mut u8
    }

    /// Chunk `q` of row `r` of stage `stage`.
    ///
    /// # Safety
    /// In range, and no wave writes the stage between the barrier that published it and this read.
    #[inline(always)]
    pub unsafe fn read(&self, stage: usize, r: usize, q: usize) -> U32x4 {
        unsafe { self.chunks.read(self.index(stage, r, q)) }
    }

    /// Writes chunk `q` of row `r` of stage `stage`.
    ///
    /// # Safety
    /// In range, and no wave reads the stage until the next barrier.
    #[inline(always)]
    pub unsafe fn write(&self, stage: usize, r: usize, q: usize, v: U32x4) {
        unsafe { self.chunks.write(self.index(stage, r, q), v) }
    }
}
