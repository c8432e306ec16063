//! A wave's share of a K-tile: its MFMA fragments from LDS and the MFMAs into its accumulators,
//! for the two instruction shapes, so the main loop and the epilogue are written once.
//!
//! Both shapes give a wave the same 64x64 outputs, 64 accumulator floats per lane and 16 bytes
//! of LDS reads per lane per 16 rows of operand, so they move the same bytes and need the same
//! registers. They differ in instruction count (a 32x32 MFMA does the work of four 16x16 ones in
//! twice the cycles, so it takes half the issue slots and leaves more of them to the loads,
//! address arithmetic and waits around it) and in the accumulator layout the epilogue reads.
//!
//! Fragment reads, per lane l, from a K-tile stored as `rows x 4` 16-byte chunks:
//! - 16x16: row `l % 16` of each 16-row tile, chunk `l / 16` (one 16-byte read per tile);
//! - 32x32: row `l % 32` of each 32-row tile, chunks `l / 32` and `l / 32 + 2` (two reads).
//!
//! In both, the 8 lanes an LDS phase serves read 8 consecutive rows at one chunk, which the
//! tile swizzle (`tile::lds_index`) spreads over all 32 banks.
//!
//! Loops use `unroll_max!` with the largest tile count any kernel instantiates (4): nested plain
//! `unroll!`s multiply their 16 guarded copies each before LLVM folds them, which at the four
//! levels of the 32x32 epilogue exhausts the compiler's memory.

use super::epilogue::{Strips, strip_index};
use super::mma::MmaIn;
use super::tile::lds_index;
use crate::dsl::lds::LdsSlice;
use crate::dsl::simd::{F32x4, F32x16, U32x4};

/// Most MFMA tiles a wave has along M or N (the bound of the unrolled loops).
const MAX_TILES: usize = 4;

/// A wave's accumulators for one MFMA shape: `TM x TN` tiles of `DIM x DIM`.
pub trait WaveTiles: Copy + Strips {
    /// Rows (and columns) of one MFMA tile.
    const DIM: usize;
    /// Tile rows of the wave.
    const TM: usize;
    /// Tile columns of the wave.
    const TN: usize;
    /// All zeros.
    fn zero() -> Self;
    /// One K-tile: this wave's fragments of LDS stage `stage` (A rows from `a_row0`, B rows from
    /// `b_row0`, of `bm` and `bn` rows per stage), then the MFMAs into `self`.
    ///
    /// # Safety
    /// The stage was written before the last barrier and holds those rows.
    #[allow(clippy::too_many_arguments)]
    unsafe fn step<E: MmaIn>(
        &mut self,
        lds_a: LdsSlice<U32x4>,
        lds_b: LdsSlice<U32x4>,
        stage: usize,
        bm: usize,
        bn: usize,
        a_row0: usize,
        b_row0: usize,
        lane: usize,
    );
}

/// 16x16 MFMA tiles: `TM x TN` of them per wave.
#[derive(Clone, Copy)]
pub struct Tiles16<const TM: usize, const TN: usize>(pub [[F32x4; TN]; TM]);

/// 32x32 MFMA tiles: `TM x TN` of them per wave.
#[derive(Clone, Copy)]
pub struct Tiles32<const TM: usize, const TN: usize>(pub [[F32x16; TN]; TM]);

impl<const TM: usize, const TN: usize> WaveTiles for Tiles16<TM, TN> {
    const DIM: usize = 16;
    const TM: usize = TM;
    const TN: usize = TN;
    #[inline(always)]
    fn zero() -> Self {
        const { assert!(TM <= MAX_TILES && TN <= MAX_TILES) };
        Tiles16([[F32x4::splat(0.0); TN]; TM])
    }
    #[inline(always)]
    unsafe fn step<E: MmaIn>(
        &mut self,
        lds_a: LdsSlice<U32x4>,
        lds_b: LdsSlice<U32x4>,
        stage: usize,
        bm: usize,
        bn: usize,
        a_row0: usize,
        b_row0: usize,
        lane: usize,
    ) {
        let (r, q) = (lane % 16, lane / 16);
        let mut fa = [U32x4::splat(0); TM];
        let mut fb = [U32x4::splat(0); TN];
        crate::unroll_max!(i < TM, 4 => {
            // SAFETY: inside the stage (caller).
            fa[i] = unsafe { lds_a.read(lds_index(stage, bm, a_row0 + 16 * i + r, q)) };
        });
        crate::unroll_max!(j < TN, 4 => {
            // SAFETY: as above.
            fb[j] = unsafe { lds_b.read(lds_index(stage, bn, b_row0 + 16 * j + r, q)) };
        });
        crate::unroll_max!(i < TM, 4 => {
            crate::unroll_max!(j < TN, 4 => {
                self.0[i][j] = E::mma(fa[i], fb[j], self.0[i][j]);
            });
        });
    }
}

impl<const TM: usize, const TN: usize> Strips for Tiles16<TM, TN> {
    const BANDS: usize = TM;
    #[inline(always)]
    fn write_band(&self, strip: LdsSlice<f32>, band: usize, lane: usize) {
        // Register e of lane l holds row 4 * (l / 16) + e, column l % 16 of its tile.
        crate::unroll_max!(i < TM, 4 => {
            if i == band {
                crate::unroll_max!(j < TN, 4 => {
                    let v = self.0[i][j].to_array();
                    crate::unroll_max!(e < 4, 4 => {
                        let idx = strip_index(4 * (lane / 16) + e, 16 * j + lane % 16);
                        // SAFETY: inside the wave's strip.
                        unsafe { strip.write(idx, v[e]) };
                    });
                });
            }
        });
    }
}

impl<const TM: usize, const TN: usize> WaveTiles for Tiles32<TM, TN> {
    const DIM: usize = 32;
    const TM: usize = TM;
    const TN: usize = TN;
    #[inline(always)]
    fn zero() -> Self {
        const { assert!(TM <= MAX_TILES && TN <= MAX_TILES) };
        Tiles32([[F32x16::splat(0.0); TN]; TM])
    }
    #[inline(always)]
    unsafe fn step<E: MmaIn>(
        &mut self,
        lds_a: LdsSlice<U32x4>,
        lds_b: LdsSlice<U32x4>,
        stage: usize,
        bm: usize,
        bn: usize,
        a_row0: usize,
        b_row0: usize,
        lane: usize,
    ) {
        let (r, q) = (lane % 32, lane / 32);
        let mut fa = [[U32x4::splat(0); 2]; TM];
        let mut fb = [[U32x4::splat(0); 2]; TN];
        crate::unroll_max!(h < 2, 2 => {
            crate::unroll_max!(i < TM, 4 => {
                // SAFETY: inside the stage (caller).
                fa[i][h] = unsafe { lds_a.read(lds_index(stage, bm, a_row0 + 32 * i + r, q + 2 * h)) };
            });
            crate::unroll_max!(j < TN, 4 => {
                // SAFETY: as above.
                fb[j][h] = unsafe { lds_b.read(lds_index(stage, bn, b_row0 + 32 * j + r, q + 2 * h)) };
            });
        });
        crate::unroll_max!(h < 2, 2 => {
            crate::unroll_max!(i < TM, 4 => {
                crate::unroll_max!(j < TN, 4 => {
                    self.0[i][j] = E::mma32(fa[i][h], fb[j][h], self.0[i][j]);
                });
            });
        });
    }
}

impl<const TM: usize, const TN: usize> Strips for Tiles32<TM, TN> {
    const BANDS: usize = 2 * TM;
    #[inline(always)]
    fn write_band(&self, strip: LdsSlice<f32>, band: usize, lane: usize) {
        // Register e of lane l holds row 8 * (e / 4) + 4 * (l / 32) + e % 4, column l % 32 of its
        // tile (GFX942.md). Band b is rows 16 (b % 2) .. + 16 of tile row b / 2, i.e. registers
        // 8 (b % 2) .. + 8. A 32-lane phase writes 32 consecutive columns of one row: all banks.
        crate::unroll_max!(i < TM, 4 => {
            crate::unroll_max!(s < 2, 2 => {
                if 2 * i + s == band {
                    crate::unroll_max!(j < TN, 4 => {
                        let v = self.0[i][j].to_array();
                        crate::unroll_max!(e < 8, 8 => {
                            let row = 8 * (e / 4) + 4 * (lane / 32) + e % 4;
                            let idx = strip_index(row, 32 * j + lane % 32);
                            // SAFETY: inside the wave's strip.
                            unsafe { strip.write(idx, v[8 * s + e]) };
                        });
                    });
                }
            });
        });
    }
}
