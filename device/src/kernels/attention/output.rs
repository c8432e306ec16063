//! From `O^T` accumulators (16x16 layout: lane `l` of tile `dt` holds `d = 16 dt + 4 (l / 16) +
//! r` of query column `l % 16`) to 16-byte stores of whole 64-byte lines.
//!
//! A lane holds runs of 4 values of `d` per tile, 8 bytes once rounded; the lanes `h = l / 16`
//! and `h ^ 1` hold neighbouring runs of the same row. For each pair of tiles `(2 a, 2 a + 1)`
//! they swap one run (one `ds_bpermute` per word, no LDS memory): even `h` keeps tile `2 a`'s run
//! and receives its partner's, odd `h` does the same for tile `2 a + 1`, so every lane holds 8
//! consecutive values (16 bytes) and the four lanes of a row cover its 32 values of the pair:
//! one 64-byte line per row per store instruction.

use super::scores::scale;
use crate::dsl::dtype::Element;
use crate::dsl::simd::{F32x4, U32x4};
use crate::dsl::wave::shuffle_xor;

/// Lane `lane`'s 16 bytes of tile pair `a` of one query column, `acc[dt]` its accumulators
/// (scaled by `f` and rounded to `E`): the first `d` they hold, and the chunk.
#[inline(always)]
pub fn chunk<E: Element>(acc0: F32x4, acc1: F32x4, f: f32, a: usize, lane: usize) -> (usize, U32x4) {
    let h = lane / 16;
    let run = |acc: F32x4| {
        let v = scale(acc, f).to_array();
        [E::from_f32(v[0]) | E::from_f32(v[1]) << 16, E::from_f32(v[2]) | E::from_f32(v[3]) << 16]
    };
    let (r0, r1) = (run(acc0), run(acc1));
    let odd = h % 2 == 1;
    // Even h sends its tile-(2a+1) run, odd h its tile-(2a) run.
    let send = if odd { r0 } else { r1 };
    let got = [shuffle_xor(send[0], 16), shuffle_xor(send[1], 16)];
    let words = if odd { [got[0], got[1], r1[0], r1[1]] } else { [r0[0], r0[1], got[0], got[1]] };
    (32 * a + 8 * (h / 2) + 16 * (h % 2), U32x4::from_array(words))
}
