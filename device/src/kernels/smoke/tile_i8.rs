//! One wave computes a 32x32 i32 tile `C = A * B^T` (A, B 32 x K i8) with the tile layer: the
//! smallest kernel that runs every layer of it (global tiles, LDS stages, the K-loop pipeline with
//! either producer, a register tile and its accumulator layout) and the int8 matrix core. K a
//! multiple of 4 bytes takes the loads straight into LDS (three stages), other K the register-
//! staged producer (two).

use crate::abi::smoke::{MfmaTileI8Args, TILE_I8};
use crate::dsl::ids::workitem_id_x;
use crate::dsl::lds::LdsArena;
use crate::dsl::wave::lane_id;
use crate::tile::accumulate::Accumulate;
use crate::tile::direct::DirectTile;
use crate::tile::global::GlobalTile;
use crate::tile::lds::{K_TILE_BYTES, LdsTile};
use crate::tile::pipeline::{Direct, Pipeline, Staged};
use crate::tile::reg::{RegTile, Tiles32};

const ROWS: usize = TILE_I8 as usize;
/// 16-byte chunks one work-item moves per operand per K-tile (32 rows x 4 chunks / 64 lanes).
const CHUNKS: usize = 2;
/// Loads to LDS (4 bytes) one work-item issues per operand per K-tile (32 rows x 16 dwords / 64).
const DWORDS: usize = 8;

/// Launch: one workgroup of 64 work-items, `TILE_I8_LDS_BYTES` of dynamic LDS.
#[inline(always)]
pub fn mfma_tile_32x32_i8(args: MfmaTileI8Args) {
    let (thread, lane) = (workitem_id_x() as usize, lane_id() as usize);
    let k = args.k as usize;
    let mut lds = LdsArena::new();
    // Three stages' room: the direct path uses them all, the staged one the first two.
    let (lds_a, lds_b) = (LdsTile::new(&mut lds, ROWS, 3), LdsTile::new(&mut lds, ROWS, 3));
    let mut acc = Accumulate::<i8, Tiles32<1, 1>>::new(0, 0, lane);
    let (k_tiles, full) = (k.div_ceil(K_TILE_BYTES) as u32, (k / K_TILE_BYTES) as u32);
    if k % 4 == 0 {
        // Loads straight into LDS (they zero-fill the last K-tile exactly when K is a multiple of
        // 4 bytes), three stages.
        // SAFETY: as above; k is a multiple of 4.
        let (a, b) = unsafe {
            (
                DirectTile::<DWORDS>::new(args.a as *const u8, k, ROWS, k, ROWS, thread, 64),
                DirectTile::<DWORDS>::new(args.b as *const u8, k, ROWS, k, ROWS, thread, 64),
            )
        };
        Pipeline::new(Direct::<DWORDS, 3>::new(a, b, lds_a, lds_b)).run::<6, _>(&mut acc, 0, k_tiles, full);
    } else {
        // SAFETY: A and B hold 32 rows of k bytes (host-checked).
        let (a, b) = unsafe {
            (
                GlobalTile::<CHUNKS>::new(args.a as *const u8, k, ROWS, k, ROWS, thread, 64),
                GlobalTile::<CHUNKS>::new(args.b as *const u8, k, ROWS, k, ROWS, thread, 64),
            )
        };
        Pipeline::new(Staged::<CHUNKS, 2>::new(a, b, lds_a, lds_b)).run::<2, _>(&mut acc, 0, k_tiles, full);
    }
    // The accumulators hold i32 bits; each band is 16 rows.
    crate::unroll!(band < 2 => {
        acc.acc.band(band, lane, |row, col, v| {
            // SAFETY: C holds 32 x 32 i32.
            unsafe { args.c.add((16 * band + row) * ROWS + col).write(v.to_bits() as i32) };
        });
    });
}
