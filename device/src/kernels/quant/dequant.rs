//! Dequantization: `y = W` as a row-major `[n, k]` tensor of f32, f16 or bf16.
//!
//! One wave per chunk of a tile (16 rows x 256 weights): lane `l` loads its piece of every slice
//! (code part `l / 16` of row `l % 16`: one 128-bit load per slice, the wave's 64 loads one
//! contiguous KiB), computes its 8 weights per group in f32 (`Format`: exactly the f64
//! definition rounded to f32), and writes them into LDS in row-major order; then the wave reads
//! the rows back and stores them 16 bytes per lane, consecutive lanes consecutive bytes of a row.
//! A 16-bit output is the f32 weight rounded to nearest even.
//!
//! LDS rows are [`DEQUANT_PITCH`] floats apart (256 + 4), so the 16-byte writes of 8 lanes (8 rows
//! at one column) land on 8 distinct bank groups; the reads are conflict-free as contiguous
//! 16-byte runs, and for 16-bit outputs (8 floats per lane, two reads) lanes alternate which half
//! they read first by `(lane / 4) % 2`, which keeps every 8-lane phase on distinct bank groups.

use super::format::{Format, load_chunk};
use crate::abi::quant::{self as abi, CHUNK, CHUNK_GROUPS, DEQUANT_PITCH, DequantArgs, GROUP, TILE_ROWS, dtype, element};
use crate::dsl::convert::{f32_to_bf16, f32_to_f16_bits};
use crate::dsl::ids::{workgroup_id_x, workgroup_id_y};
use crate::dsl::lds::LdsArena;
use crate::dsl::mem::store_b128;
use crate::dsl::simd::{F32x4, U32x4};
use crate::dsl::wave::lane_id;
use core::sync::atomic::{Ordering, compiler_fence};

/// The weights `w_t` of codes `t = 0..8` of the lane's part of group `g`.
#[inline(always)]
pub fn weights<F: Format>(r: &super::format::Regs, g: usize) -> [f32; 8] {
    let s = F::scale(r, g);
    let mut w = [0f32; 8];
    crate::unroll_max!(i < 4, 4 => {
        let p = F::pair(r, g, i);
        crate::unroll_max!(h < 2, 2 => {
            let t = 2 * i + h;
            let u = (p >> (16 * h)) & 0xFFFF;
            let a = if t < 4 { s.a0 } else { s.a1 };
            w[t] = if F::HAS_MIN { a * u as f32 + s.b } else { a * (u as i32 - F::OFFSET as i32) as f32 };
        });
    });
    w
}

/// The `quant_dequant_*` kernel for format `F`.
#[inline(always)]
pub fn dequant<F: Format>(a: DequantArgs) {
    let (chunk, tile) = (workgroup_id_x() as usize, workgroup_id_y() as usize);
    let lane = lane_id() as usize;
    let (part, row) = (lane / TILE_ROWS, lane % TILE_ROWS);
    let (n, k) = (a.n as usize, a.k as usize);
    let chunks = (k / GROUP).div_ceil(CHUNK_GROUPS);
    let nb = if chunk + 1 == chunks { abi::tail_groups(k) } else { CHUNK_GROUPS };
    // SAFETY: the host launched one workgroup per chunk of each tile of the layout.
    let regs = unsafe {
        let base = a.w.add(tile * abi::tile_bytes(F::F, k) + chunk * abi::chunk_bytes(F::F, CHUNK_GROUPS));
        load_chunk::<F>(base, nb, part, row)
    };

    let lds = LdsArena::new().take::<f32>(TILE_ROWS * DEQUANT_PITCH);
    crate::unroll_max!(g < CHUNK_GROUPS, 8 => {
        if g < nb {
            let w = weights::<F>(&regs, g);
            crate::unroll_max!(h < 2, 2 => {
                // Codes 4h..4h + 4 are 4 consecutive weights of the group (both mappings).
                let col = GROUP * g + element(F::F, part, 4 * h);
                let v = F32x4::from_array([w[4 * h], w[4 * h + 1], w[4 * h + 2], w[4 * h + 3]]);
                // SAFETY: inside this wave's LDS (one wave per workgroup).
                unsafe { lds.write_as(row * DEQUANT_PITCH + col, v) };
            });
        }
    });
    // A wave's LDS accesses complete in order; this only keeps the compiler from moving them.
    compiler_fence(Ordering::SeqCst);

    let rows = n.saturating_sub(tile * TILE_ROWS).min(TILE_ROWS);
    let cols = nb * GROUP;
    // SAFETY (both paths): rows < n and columns < k of this chunk; y is 16-byte aligned and its
    // rows (k elements, k a multiple of 32) keep that alignment.
    unsafe {
        if a.out_type == dtype::F32 {
            // 4 floats per lane: one row per step.
            let col = 4 * lane;
            let mut r = 0;
            while r < rows {
                if col < cols {
                    let v: U32x4 = lds.read_as(r * DEQUANT_PITCH + col);
                    let at = (tile * TILE_ROWS + r) * k + chunk * CHUNK + col;
                    store_b128((a.y as *mut f32).add(at) as *mut u32, v);
                }
                r += 1;
            }
        } else {
            // 8 values per lane: two rows per step.
            let (sub, col) = (lane / 32, 8 * (lane % 32));
            let first = (lane / 4) % 2;
            let mut r = 0;
            while r < rows {
                let rr = r + sub;
                if rr < rows && col < cols {
                    let mut v = [0f32; 8];
                    crate::unroll_max!(q < 2, 2 => {
                        let half = q ^ first;
                        let x: F32x4 = lds.read_as(rr * DEQUANT_PITCH + col + 4 * half);
                        let x = x.to_array();
                        crate::unroll_max!(e < 4, 4 => {
                            // A select on the lane's parity, not an index: keeps `v` in registers.
                            if half == 0 { v[e] = x[e] } else { v[4 + e] = x[e] }
                        });
                    });
                    let h = |x: f32| if a.out_type == dtype::F16 { f32_to_f16_bits(x) as u32 } else { f32_to_bf16(x).0 as u32 };
                    let words = U32x4::from_array([
                        h(v[0]) | h(v[1]) << 16,
                        h(v[2]) | h(v[3]) << 16,
                        h(v[4]) | h(v[5]) << 16,
                        h(v[6]) | h(v[7]) << 16,
                    ]);
                    let at = (tile * TILE_ROWS + rr) * k + chunk * CHUNK + col;
                    store_b128((a.y as *mut u16).add(at) as *mut u32, words);
                }
                r += 2;
            }
        }
    }
}
