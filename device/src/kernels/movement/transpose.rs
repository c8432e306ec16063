//! Transpose of the last two axes through LDS: `dst[b][c][r] = src[b][r][c]`.
//!
//! A workgroup moves one tile of 64 input rows x 256 bytes (64 x 64 32-bit words: 64 f32, 128
//! f16 or 256 fp8 columns). Both global sides are coalesced with 128-bit accesses per lane:
//! - load: 16 lanes read one 256-byte tile row, four passes of 16 rows; each lane writes its 16
//!   bytes to LDS with one `ds_write_b128`;
//! - store: each lane reads one word column over `4 * EW` consecutive rows (`EW = 4 / bytes`
//!   elements per word) with `ds_read_b32`s, transposes the `EW x EW` element blocks in
//!   registers, and writes `EW` output rows 16 bytes each; four consecutive lanes cover 64
//!   consecutive bytes (one line) of an output row.
//!
//! LDS layout (conflict-free for both sides): word `(r, w)` lives at
//! `r * 64 + 4 * ((w / 4) ^ g(r)) + w % 4` with `g(r) = 2 * ((r / (4 * EW)) % 4)`. The XOR moves
//! whole 16-byte groups, so the `ds_write_b128`s stay intact, and a write phase (8 lanes, one
//! row, groups 0..7 or 8..15) still covers all 32 banks once. A read phase (32 lanes: 8 word
//! columns x 4 row blocks) sees the 4 row blocks with g = 0, 2, 4, 6, which spreads the 2 x 4
//! column groups over all 8 bank groups: 32 distinct banks.

use crate::abi::movement::{MOVE_BLOCK, TransposeArgs, transpose_flags};
use crate::dsl::ids::{workgroup_id_x, workgroup_id_y, workgroup_id_z, workitem_id_x};
use crate::dsl::lds::LdsArena;
use crate::dsl::mem::{load_b128, store_b128};
use crate::dsl::simd::U32x4;
use crate::dsl::sync::barrier;

/// Tile rows (input) and words per tile row.
const TILE_ROWS: usize = 64;
const TILE_WORDS: usize = 64;
/// Tile rows loaded per pass by the 256 work-items (16 per row).
const ROWS_PER_PASS: usize = MOVE_BLOCK as usize / 16;

/// Word index of tile word `(r, w)` in LDS (the swizzle above).
#[inline(always)]
fn lds_word(r: usize, w: usize, ew: usize) -> usize {
    let g = 2 * ((r / (4 * ew)) % 4);
    r * TILE_WORDS + 4 * ((w / 4) ^ g) + w % 4
}

/// Reads element `i` of the source (any alignment) as the low bits of a word.
///
/// # Safety
/// The element is inside the source.
#[inline(always)]
unsafe fn read_elem<const B: usize>(p: *const u8, i: u64) -> u32 {
    // SAFETY: caller.
    unsafe {
        match B {
            4 => (p as *const u32).add(i as usize).read(),
            2 => (p as *const u16).add(i as usize).read() as u32,
            _ => p.add(i as usize).read() as u32,
        }
    }
}

/// Writes the low `B` bytes of `v` as element `i` of the destination.
///
/// # Safety
/// The element is inside the destination.
#[inline(always)]
unsafe fn write_elem<const B: usize>(p: *mut u8, i: u64, v: u32) {
    // SAFETY: caller.
    unsafe {
        match B {
            4 => (p as *mut u32).add(i as usize).write(v),
            2 => (p as *mut u16).add(i as usize).write(v as u16),
            _ => p.add(i as usize).write(v as u8),
        }
    }
}

/// The transpose kernel for `B`-byte elements (1, 2 or 4).
#[inline(always)]
pub fn transpose<const B: usize>(args: TransposeArgs) {
    let ew = 4 / B; // elements per word
    let mask = if B == 4 { u32::MAX } else { (1u32 << (8 * B)) - 1 };
    let tile_cols = TILE_WORDS * ew; // elements per tile row
    let (rows, cols) = (args.rows as u64, args.cols as u64);
    let t = workitem_id_x() as usize;
    let (tc0, tr0, b) = (workgroup_id_x() as u64 * tile_cols as u64, workgroup_id_y() as u64 * TILE_ROWS as u64, workgroup_id_z() as u64);
    let src = args.src.wrapping_add((b * args.src_batch_stride) as usize * B);
    // SAFETY: batch b of the contiguous destination, inside it (host-sized).
    let dst = unsafe { args.dst.add((b * rows * cols) as usize * B) };
    let lds = LdsArena::new().take::<u32>(TILE_ROWS * TILE_WORDS);

    // Phase 1: global -> registers. Work-item t reads 16 bytes (4 * ew elements) of tile row
    // t / 16 + 16 * pass, starting at column 4 * ew * (t % 16).
    let q = t % 16;
    let c = tc0 + (4 * ew * q) as u64;
    let src_vec = args.flags & transpose_flags::SRC_VEC != 0;
    let mut regs = [U32x4::splat(0); TILE_ROWS / ROWS_PER_PASS];
    crate::unroll_max!(pass < TILE_ROWS / ROWS_PER_PASS, 4 => {
        let r = tr0 + (t / 16 + ROWS_PER_PASS * pass) as u64;
        if r < rows {
            let base = r * args.src_row_stride;
            // SAFETY: every element read is at a row < rows and a column < cols of this batch
            // (host-checked view); the 128-bit form only when aligned (SRC_VEC) and in range.
            unsafe {
                if src_vec && c + (4 * ew) as u64 <= cols {
                    regs[pass % 4] = load_b128(src.add((base + c) as usize * B) as *const u32);
                } else {
                    let mut w = [0u32; 4];
                    crate::unroll!(k < 16 => {
                        if k < 4 * ew {
                            let cc = c + k as u64;
                            if cc < cols {
                                let v = read_elem::<B>(src, base + cc * args.src_col_stride);
                                w[(k / ew) % 4] |= v << (8 * B * (k % ew));
                            }
                        }
                    });
                    regs[pass % 4] = U32x4::from_array(w);
                }
            }
        }
    });

    // Phase 2: registers -> LDS (one ds_write_b128 per pass), then the barrier.
    crate::unroll_max!(pass < TILE_ROWS / ROWS_PER_PASS, 4 => {
        let r = t / 16 + ROWS_PER_PASS * pass;
        // SAFETY: inside the tile; each word is written by one work-item before the barrier.
        unsafe { lds.write_as(lds_word(r, 4 * q, ew), regs[pass % 4]) };
    });
    barrier();

    // Phase 3: LDS -> registers -> global. Work-item t handles word column w over rows
    // 4 * ew * j .. + 4 * ew, j = t % 4 + 4 * pass; its wave covers word columns 16 * wave ..
    // + 16 (lane / 4).
    let w = t / 4; // = 16 * wave + lane / 4
    let dst_vec = args.flags & transpose_flags::DST_VEC != 0;
    crate::unroll_max!(pass < 4, 4 => {
        if pass < 4 / ew {
            let j = t % 4 + 4 * pass;
            let r0 = 4 * ew * j;
            let mut words = [0u32; 16];
            crate::unroll!(i < 16 => {
                if i < 4 * ew {
                    // SAFETY: inside the tile, written before the barrier.
                    words[i] = unsafe { lds.read(lds_word(r0 + i, w, ew)) };
                }
            });
            let out_c = tr0 + r0 as u64; // first output column of this work-item's run
            crate::unroll_max!(e < 4, 4 => {
                if e < ew {
                    let oc = tc0 + (w * ew + e) as u64; // output row
                    // Output word m holds the elements of rows r0 + m*ew .. + ew, column e.
                    let mut out = [0u32; 4];
                    crate::unroll_max!(m < 4, 4 => {
                        crate::unroll_max!(s < 4, 4 => {
                            if s < ew {
                                let v = (words[(m * ew + s) % 16] >> (8 * B * e)) & mask;
                                out[m % 4] |= v << (8 * B * s);
                            }
                        });
                    });
                    if oc < cols {
                        let row_base = oc * rows;
                        // SAFETY: output row oc < cols, columns < rows: inside batch b.
                        unsafe {
                            if dst_vec && out_c + (4 * ew) as u64 <= rows {
                                store_b128(dst.add((row_base + out_c) as usize * B) as *mut u32, U32x4::from_array(out));
                            } else {
                                crate::unroll!(k < 16 => {
                                    if k < 4 * ew && out_c + (k as u64) < rows {
                                        write_elem::<B>(dst, row_base + out_c + k as u64, (out[(k / ew) % 4] >> (8 * B * (k % ew))) & mask);
                                    }
                                });
                            }
                        }
                    }
                }
            });
        }
    });
}
