//! Register tiles: a wave's accumulators in one MFMA layout (16x16 or 32x32 tiles), the
//! fragments it reads from LDS tiles to feed them, and the layout the epilogue reads back.
//!
//! Both shapes give a wave `TM*DIM x TN*DIM` outputs in `TM * TN * DIM * DIM / 64` accumulator
//! registers per lane and read 16 bytes of LDS per lane per 16 rows of operand per K-tile, so
//! they move the same bytes. They differ in instruction count (a 32x32 MFMA does the work of
//! four 16x16 ones in twice the cycles, so it takes half the issue slots) and in layout.
//!
//! Fragment reads, per lane l, from a K-tile stored as `rows x 4` 16-byte chunks (`lds`):
//! - 16x16: row `l % 16` of each 16-row tile, chunk `l / 16` (one 16-byte read per tile);
//! - 32x32: row `l % 32` of each 32-row tile, chunks `l / 32` and `l / 32 + 2` (two reads).
//!
//! Groups: the pipeline (`pipeline`) splits each K-tile's MFMAs in two, so that the fragment reads
//! of the next group (or of the next K-tile, after the barrier that publishes it) run behind
//! MFMAs. 32x32 tiles split along K: group h takes chunks `l / 32 + 2h`, half the fragments each,
//! so the fragment registers hold one K-tile. 16x16 tiles cannot split a lane's chunk (each
//! lane's 16 bytes feed both halves), so they split the list of MFMAs instead and read all of a
//! K-tile's fragments in group 0, into one of two buffers (by K-tile parity): the next K-tile's
//! fragments arrive while this one's second group still reads its own.
//!
//! Loops use `unroll_max!` with the largest tile count any kernel instantiates (4): nested plain
//! `unroll!`s multiply their 16 guarded copies each before LLVM folds them, which at the four
//! levels of the 32x32 epilogue exhausts the compiler's memory.

use super::lds::LdsTile;
use super::mma::{MmaInput, mma16, mma32};
use crate::dsl::simd::{F32x4, F32x16, U32x4};

/// Most MFMA tiles a wave has along M or N (the bound of the unrolled loops).
pub const MAX_TILES: usize = 4;
/// Most groups of 4 accumulator registers a lane holds ([`RegTile::QUADS`]: a 64x64 wave tile).
pub const MAX_QUADS: usize = 16;
/// MFMA groups per K-tile (see the module notes).
pub const GROUPS: usize = 2;

/// A wave's fragments: `a[s][i]`, `b[s][j]` for slot `s` (a K half for 32x32 tiles, a K-tile
/// parity for 16x16 ones) and 16-byte chunks of A tile row i and B tile column j.
#[derive(Clone, Copy)]
pub struct Frags<const TM: usize, const TN: usize> {
    /// A's chunks.
    pub a: [[U32x4; TM]; 2],
    /// B's chunks.
    pub b: [[U32x4; TN]; 2],
}

impl<const TM: usize, const TN: usize> Frags<TM, TN> {
    /// Zeroed (never read before written; a defined start for the compiler).
    #[inline(always)]
    pub fn new() -> Self {
        Frags { a: [[U32x4::splat(0); TM]; 2], b: [[U32x4::splat(0); TN]; 2] }
    }
}

impl<const TM: usize, const TN: usize> Default for Frags<TM, TN> {
    fn default() -> Self {
        Self::new()
    }
}

/// Where a wave's fragments come from: the stage, and the wave's first rows of the A and B
/// tiles (its output block's rows and columns).
#[derive(Clone, Copy)]
pub struct Source {
    /// A's LDS tile.
    pub a: LdsTile,
    /// B's LDS tile.
    pub b: LdsTile,
    /// The stage holding the K-tile.
    pub stage: usize,
    /// The wave's first A row.
    pub a_row: usize,
    /// The wave's first B row.
    pub b_row: usize,
    /// The lane (0..64).
    pub lane: usize,
}

/// A wave's accumulators for one MFMA shape: `TM x TN` tiles of `DIM x DIM`.
pub trait RegTile: Copy {
    /// Rows (and columns) of one MFMA tile.
    const DIM: usize;
    /// Tile rows of the wave.
    const TM: usize;
    /// Tile columns of the wave.
    const TN: usize;
    /// 16-row bands of the wave's output (how the epilogue walks it).
    const BANDS: usize = Self::TM * Self::DIM / 16;
    /// The fragment registers.
    type Frags: Copy;

    /// All zeros.
    fn zero() -> Self;
    /// Fresh fragment registers.
    fn frags() -> Self::Frags;

    /// Reads group `g`'s fragments of the K-tile at `src` into slot `buf` (a K-tile parity).
    ///
    /// # Safety
    /// The stage was published by a barrier no later than this read and holds the wave's rows.
    unsafe fn read(f: &mut Self::Frags, g: usize, buf: usize, src: Source);

    /// Group `g`'s MFMAs from the fragments of slot `buf`.
    fn mma<E: MmaInput>(&mut self, f: &Self::Frags, g: usize, buf: usize);

    /// Hands band `band` (rows `16 * band ..`, all `TN * DIM` columns) of this lane's accumulators
    /// to `put(row within the band, column, value)`; every lane's calls together cover the band.
    fn band(&self, band: usize, lane: usize, put: impl FnMut(usize, usize, f32));

    /// The lane's accumulator registers in groups of 4 (at most [`MAX_QUADS`]).
    const QUADS: usize = Self::TM * Self::TN * Self::DIM * Self::DIM / 256;

    /// Group `q < QUADS` of 4 accumulator registers: the raw layout, for partial results that
    /// another wave of the same shape adds back with [`RegTile::add_quads`].
    fn quad(&self, q: usize) -> F32x4;

    /// Replaces each group `q` of 4 accumulator registers by `f(q, registers)`.
    fn map_quads(&mut self, f: impl FnMut(usize, F32x4) -> F32x4);

    /// Adds `get(q)` to each group `q` of 4 accumulator registers (`registers + get(q)`).
    #[inline(always)]
    fn add_quads(&mut self, mut get: impl FnMut(usize) -> F32x4) {
        self.map_quads(|q, v| {
            let (mut v, g) = (v.to_array(), get(q).to_array());
            crate::unroll_max!(e < 4, 4 => {
                v[e] += g[e];
            });
            F32x4::from_array(v)
        });
    }
}

/// 16x16 MFMA tiles: `TM x TN` of them per wave.
#[derive(Clone, Copy)]
pub struct Tiles16<const TM: usize, const TN: usize>(pub [[F32x4; TN]; TM]);

/// 32x32 MFMA tiles: `TM x TN` of them per wave.
#[derive(Clone, Copy)]
pub struct Tiles32<const TM: usize, const TN: usize>(pub [[F32x16; TN]; TM]);

impl<const TM: usize, const TN: usize> RegTile for Tiles16<TM, TN> {
    const DIM: usize = 16;
    const TM: usize = TM;
    const TN: usize = TN;
    type Frags = Frags<TM, TN>;

    #[inline(always)]
    fn zero() -> Self {
        const { assert!(TM <= MAX_TILES && TN <= MAX_TILES) };
        Tiles16([[F32x4::splat(0.0); TN]; TM])
    }

    #[inline(always)]
    fn frags() -> Self::Frags {
        Frags::new()
    }

    #[inline(always)]
    unsafe fn read(f: &mut Self::Frags, g: usize, buf: usize, s: Source) {
        if g != 0 {
            return;
        }
        let (r, q) = (s.lane % 16, s.lane / 16);
        crate::unroll_max!(i < TM, 4 => {
            // SAFETY: inside the stage (caller).
            f.a[buf][i] = unsafe { s.a.read(s.stage, s.a_row + 16 * i + r, q) };
        });
        crate::unroll_max!(j < TN, 4 => {
            // SAFETY: as above.
            f.b[buf][j] = unsafe { s.b.read(s.stage, s.b_row + 16 * j + r, q) };
        });
    }

    #[inline(always)]
    fn mma<E: MmaInput>(&mut self, f: &Self::Frags, g: usize, buf: usize) {
        // Group 0 takes the first half of the tiles in row-major order, group 1 the rest.
        crate::unroll_max!(i < TM, 4 => {
            crate::unroll_max!(j < TN, 4 => {
                if ((i * TN + j) * 2 < TM * TN) == (g == 0) {
                    self.0[i][j] = mma16::<E>(f.a[buf][i], f.b[buf][j], self.0[i][j]);
                }
            });
        });
    }

    #[inline(always)]
    fn band(&self, band: usize, lane: usize, mut put: impl FnMut(usize, usize, f32)) {
        // Register e of lane l holds row 4 * (l / 16) + e, column l % 16 of its tile (GFX942.md).
        crate::unroll_max!(i < TM, 4 => {
            if i == band {
                crate::unroll_max!(j < TN, 4 => {
                    let v = self.0[i][j].to_array();
                    crate::unroll_max!(e < 4, 4 => {
                        put(4 * (lane / 16) + e, 16 * j + lane % 16, v[e]);
                    });
                });
            }
        });
    }

    #[inline(always)]
    fn quad(&self, q: usize) -> F32x4 {
        self.0[q / TN][q % TN]
    }

    #[inline(always)]
    fn map_quads(&mut self, mut f: impl FnMut(usize, F32x4) -> F32x4) {
        crate::unroll_max!(i < TM, 4 => {
            crate::unroll_max!(j < TN, 4 => {
                self.0[i][j] = f(i * TN + j, self.0[i][j]);
            });
        });
    }
}

impl<const TM: usize, const TN: usize> RegTile for Tiles32<TM, TN> {
    const DIM: usize = 32;
    const TM: usize = TM;
    const TN: usize = TN;
    type Frags = Frags<TM, TN>;

    #[inline(always)]
    fn zero() -> Self {
        const { assert!(TM <= MAX_TILES && TN <= MAX_TILES) };
        Tiles32([[F32x16::splat(0.0); TN]; TM])
    }

    #[inline(always)]
    fn frags() -> Self::Frags {
        Frags::new()
    }

    #[inline(always)]
    unsafe fn read(f: &mut Self::Frags, g: usize, _buf: usize, s: Source) {
        let (r, q) = (s.lane % 32, s.lane / 32 + 2 * g);
        crate::unroll_max!(i < TM, 4 => {
            // SAFETY: inside the stage (caller).
            f.a[g][i] = unsafe { s.a.read(s.stage, s.a_row + 32 * i + r, q) };
        });
        crate::unroll_max!(j < TN, 4 => {
            // SAFETY: as above.
            f.b[g][j] = unsafe { s.b.read(s.stage, s.b_row + 32 * j + r, q) };
        });
    }

    #[inline(always)]
    fn mma<E: MmaInput>(&mut self, f: &Self::Frags, g: usize, _buf: usize) {
        crate::unroll_max!(i < TM, 4 => {
            crate::unroll_max!(j < TN, 4 => {
                self.0[i][j] = mma32::<E>(f.a[g][i], f.b[g][j], self.0[i][j]);
            });
        });
    }

    #[inline(always)]
    fn band(&self, band: usize, lane: usize, mut put: impl FnMut(usize, usize, f32)) {
        // Register e of lane l holds row 8 * (e / 4) + 4 * (l / 32) + e % 4, column l % 32 of its
        // tile (GFX942.md). Band b is rows 16 (b % 2) .. + 16 of tile row b / 2, i.e. registers
        // 8 (b % 2) .. + 8.
        crate::unroll_max!(i < TM, 4 => {
            crate::unroll_max!(s < 2, 2 => {
                if 2 * i + s == band {
                    crate::unroll_max!(j < TN, 4 => {
                        let v = self.0[i][j].to_array();
                        crate::unroll_max!(e < 8, 8 => {
                            put(8 * (e / 4) + 4 * (lane / 32) + e % 4, 32 * j + lane % 32, v[8 * s + e]);
                        });
                    });
                }
            });
        });
    }

    #[inline(always)]
    fn quad(&self, q: usize) -> F32x4 {
        // Tiles in row-major order, 4 groups each.
        let (t, h) = (q / 4, q % 4);
        let v = self.0[t / TN][t % TN].to_array();
        F32x4::from_array([v[4 * h], v[4 * h + 1], v[4 * h + 2], v[4 * h + 3]])
    }

    #[inline(always)]
    fn map_quads(&mut self, mut f: impl FnMut(usize, F32x4) -> F32x4) {
        crate::unroll_max!(i < TM, 4 => {
            crate::unroll_max!(j < TN, 4 => {
                let mut v = self.0[i][j].to_array();
                crate::unroll_max!(h < 4, 4 => {
                    let g = f(4 * (i * TN + j) + h, F32x4::from_array([v[4 * h], v[4 * h + 1], v[4 * h + 2], v[4 * h + 3]])).to_array();
                    crate::unroll_max!(e < 4, 4 => {
                        v[4 * h + e] = g[e];
                    });
                });
                self.0[i][j] = F32x16::from_array(v);
            });
        });
    }
}
