//! fp8 GEMM with DeepGEMM-style block scales (see `abi::gemm_fp8`).
//!
//! The main loop is the plain GEMM's (two LDS stages, 128-bit loads, swizzled tiles) with one
//! change: the MFMAs of each 128-wide K block accumulate into `tmp` (the block's first MFMA takes
//! C = 0, so starting a block costs nothing), and at the block's end the partial sums are
//! promoted: `acc += tmp * (sa[row][kb] * sb[n_block][kb])`, as packed FMAs (`v_pk_fma_f32`,
//! two values per instruction) — the "promotion" that keeps fp8 products' scale out of the MFMAs.
//! A K-tile is 64 bytes = 64 fp8 values, so a scale block is two K-tiles.

use super::epilogue;
use super::mma::Fp8In;
use super::tile::{CHUNKS, Operand, regs_to_lds};
use super::wave::{Tiles16, WaveTiles};
use crate::abi::gemm::{K_TILE_BYTES, out_type};
use crate::abi::gemm_fp8::{Fp8ScaledArgs, SCALE_BLOCK, group_mode};
use crate::dsl::ids::{workgroup_id_x, workgroup_id_y, workgroup_id_z, workitem_id_x};
use crate::dsl::lds::LdsArena;
use crate::dsl::mem::Buffer;
use crate::dsl::simd::{F32x4, U32x4};
use crate::dsl::sync::barrier;
use crate::dsl::wave::{lane_id, readfirstlane};

const TM: usize = 4;
const TN: usize = 4;
const WY: usize = 2;
const WX: usize = 2;
const MAX_CHUNKS: usize = 8;
/// K-tiles per scale block.
const TILES_PER_BLOCK: usize = (SCALE_BLOCK / K_TILE_BYTES) as usize;

/// `acc += tmp * s` for one 16x16 tile, with `s` the per-row scale of the lane's 4 rows.
#[inline(always)]
fn promote(acc: F32x4, tmp: F32x4, s: F32x4) -> F32x4 {
    // SAFETY: a lane-wise fused multiply-add of plain f32 vectors.
    unsafe { core::intrinsics::simd::simd_fma(tmp, s, acc) }
}

/// The fp8 block-scaled kernel, 128x128 blocks of 4 waves.
#[inline(always)]
pub fn gemm_fp8_scaled(args: Fp8ScaledArgs) {
    let threads = WY * WX * 64;
    let (bm, bn) = (WY * TM * 16, WX * TN * 16);
    let thread = workitem_id_x() as usize;
    let wave = readfirstlane(thread as u32 / 64) as usize;
    let lane = lane_id() as usize;
    let (wy, wx) = (wave / WX, wave % WX);
    let (row0, col0) = (workgroup_id_y() as usize * bm, workgroup_id_x() as usize * bn);
    let (n, k) = (args.n as usize, args.k as usize);

    // Which group this block computes, and the rows it owns.
    // Per-group element offsets of A, A's scales and C (masked mode's slabs).
    let (group, a_g, sa_g, c_g, m) = match args.group_mode {
        group_mode::CONTIGUOUS => {
            if row0 >= args.m as usize {
                return;
            }
            // SAFETY: row0 < m, group_info holds m ids (host-checked, block-uniform).
            let g = readfirstlane(unsafe { args.group_info.add(row0).read() } as u32) as i32;
            if g < 0 {
                return; // a block of padding rows
            }
            (g as usize, 0, 0, 0, args.m as usize)
        }
        group_mode::MASKED => {
            let g = workgroup_id_z() as usize;
            // SAFETY: g < groups (grid z), group_info holds a count per group (host-checked).
            let valid = readfirstlane(unsafe { args.group_info.add(g).read() } as u32) as usize;
            if row0 >= valid {
                return;
            }
            let g64 = g as u64;
            let at = |stride: u64| (g64 * stride) as usize;
            (g, at(args.a_group_stride), at(args.sa_group_stride), at(args.c_group_stride), valid.min(args.m as usize))
        }
        _ => (0, 0, 0, 0, args.m as usize),
    };
    let vector_ok = args.vector_ok != 0;
    // K-tile counters are u32: SALU has no 64-bit ordered compares, so usize counters would
    // live in VGPRs.
    let k_tiles = args.k.div_ceil(K_TILE_BYTES);
    let full_tiles = args.k / K_TILE_BYTES;
    let (na, nb) = (bm * CHUNKS / threads, bn * CHUNKS / threads);
    // SAFETY: the host checked A, B and C hold every group's rows.
    let (a, b) = unsafe {
        (
            Operand::<MAX_CHUNKS>::new(
                (args.a as *const u8).add(a_g + row0 * args.lda as usize),
                args.lda as usize,
                m.saturating_sub(row0),
                k,
                thread,
                threads,
                na,
            ),
            Operand::<MAX_CHUNKS>::new(
                (args.b as *const u8).add(group * args.b_group_stride as usize + col0 * args.ldb as usize),
                args.ldb as usize,
                n.saturating_sub(col0),
                k,
                thread,
                threads,
                nb,
            ),
        )
    };
    let mut lds = LdsArena::new();
    let lds_a = lds.take::<U32x4>(2 * bm * CHUNKS);
    let lds_b = lds.take::<U32x4>(2 * bn * CHUNKS);
    let mut ra = [U32x4::splat(0); MAX_CHUNKS];
    let mut rb = [U32x4::splat(0); MAX_CHUNKS];
    let mut acc = [[F32x4::splat(0.0); TN]; TM];
    let mut tmp = Tiles16::<TM, TN>::zero();
    // The wave's first rows of the A and B tiles.
    let (a_row, b_row) = (wy * TM * 16, wx * TN * 16);
    // The lane's first accumulator row (of 4 consecutive) in tile row i: row0 + 16 i + lrow.
    let lrow = wy * TM * 16 + 4 * (lane / 16);
    // B's scales for this block (its 128 columns lie in one 128-row scale block of B).
    // SAFETY: offsets inside the scale tensors the host sized.
    let sb_buf = Buffer::new(
        unsafe { args.b_scale.add(group * args.sb_group_stride as usize + (col0 / SCALE_BLOCK as usize) * args.sb_nb_stride as usize) }
            as *const u8,
        u32::MAX,
    );
    // A's scales, each K block's rows contiguous: one 16-byte load gives a lane its 4 rows.
    // SAFETY: an offset inside the scale tensor.
    let sa_group = unsafe { args.a_scale.add(sa_g) };

    // The raw scales of K block `kb` (A's per tile row i, then B's). Issued when a block
    // starts and used when it ends, so the loads complete behind its MFMAs.
    let load_scales = |kb: u32| -> ([U32x4; TM], u32) {
        let kb = kb as usize;
        // SAFETY: kb < ceil(K / 128); the scale tensors hold that many blocks (host-checked).
        // A vector load of the uniform value, not a scalar one: scalar loads return out of order,
        // so while one is in flight every wait for this step's LDS fragments has to be
        // `lgkmcnt(0)`, which also waits for the scalar load (11.6% of the loop's wave time).
        let sb = unsafe { sb_buf.load_b32(0, (kb * args.sb_kb_stride as usize * 4) as u32) };
        // Column kb: m rows. The buffer's range ends at row m, so rows past it read 0 (they are
        // never stored) without a per-lane branch.
        // SAFETY: inside the scale tensor.
        let col = Buffer::new(unsafe { sa_group.add(kb * args.sa_kb_stride as usize) } as *const u8, (m * 4) as u32);
        let mut sa = [U32x4::splat(0); TM];
        crate::unroll!(i < TM => {
            // SAFETY: range-checked.
            sa[i] = unsafe { col.load_b128(((row0 + lrow + 16 * i) * 4) as u32, 0) };
        });
        (sa, sb)
    };
    let mut scales = ([U32x4::splat(0); TM], 0u32);

    macro_rules! load_tile {
        ($kt:expr, fast) => {{
            let kb = $kt * K_TILE_BYTES;
            a.load(kb, na, false, &mut ra);
            b.load(kb, nb, false, &mut rb);
        }};
        ($kt:expr, slow) => {{
            let kb = $kt * K_TILE_BYTES;
            a.load(kb, na, true, &mut ra);
            b.load(kb, nb, true, &mut rb);
        }};
        // Whichever the tile needs (the tail's branches only touch the load registers).
        ($kt:expr, dynamic) => {{
            let next = $kt;
            if next < full_tiles {
                load_tile!(next, fast);
            } else if next < k_tiles {
                load_tile!(next, slow);
            }
        }};
    }

    if k_tiles > 0 {
        if full_tiles > 0 {
            load_tile!(0, fast);
        } else {
            load_tile!(0, slow);
        }
        // SAFETY: stage 0 is not read before the barrier below.
        unsafe {
            regs_to_lds(lds_a, 0, bm, thread, threads, na, &ra);
            regs_to_lds(lds_b, 0, bn, thread, threads, nb, &rb);
        }
        // K-tile 1 waits in the registers (see `gemm`: each load gets a whole step).
        load_tile!(1, dynamic);
    }
    barrier();

    let mut kt = 0u32;
    // `$has_next`: K-tile kt + 1 exists (it is in the registers); `$next` loads K-tile kt + 2
    // (`fast`, or `dynamic`: as it needs, if it exists). `$first`: this K-tile starts a scale
    // block (its MFMAs take C = 0); `$promote`: it ends one.
    macro_rules! step {
        ($stage:expr, $next:ident, $has_next:expr, $first:expr, $promote:expr) => {{
            let stage: usize = $stage;
            if $has_next {
                // SAFETY: every wave finished reading the other stage before the last barrier,
                // and nothing reads it before the next one.
                unsafe {
                    regs_to_lds(lds_a, 1 - stage, bm, thread, threads, na, &ra);
                    regs_to_lds(lds_b, 1 - stage, bn, thread, threads, nb, &rb);
                }
            }
            load_tile!(kt + 2, $next);
            if $first {
                scales = load_scales(kt / TILES_PER_BLOCK as u32);
            }
            if $first {
                // A constant zero: the block's first MFMAs take C = 0, no register is cleared.
                tmp = Tiles16::zero();
            }
            // SAFETY: stage `stage` was written before the last barrier.
            unsafe { tmp.step::<Fp8In>(lds_a, lds_b, stage, bm, bn, a_row, b_row, lane) };
            // Promotion at the end of a scale block (or of K).
            if $promote {
                let sb = f32::from_bits(scales.1);
                crate::unroll!(i < TM => {
                    let v = scales.0[i].to_array();
                    let s = F32x4::from_array([f32::from_bits(v[0]) * sb, f32::from_bits(v[1]) * sb, f32::from_bits(v[2]) * sb, f32::from_bits(v[3]) * sb]);
                    crate::unroll!(j < TN => {
                        acc[i][j] = promote(acc[i][j], tmp.0[i][j], s);
                    });
                });
            }
            barrier();
            kt += 1;
        }};
    }

    // The loop walks whole scale blocks (two K-tiles, or one at the very end), so whether a step
    // starts or ends a block is static: a runtime choice would make LLVM select between C = 0
    // and `tmp` for the MFMAs, a second copy of all 64 partial sums.
    // Hot loop: the two tiles after the block (which its steps load) are full.
    while kt + 3 < full_tiles {
        step!(0, fast, true, true, false);
        step!(1, fast, true, false, true);
    }
    // Tail: the last blocks, tiles loaded as each needs (the partial tile clipped).
    while kt < k_tiles {
        if kt + 1 < k_tiles {
            step!((kt & 1) as usize, dynamic, true, true, false);
            step!((kt & 1) as usize, dynamic, kt + 1 < k_tiles, false, true);
        } else {
            step!((kt & 1) as usize, dynamic, false, true, true);
        }
    }

    // SAFETY: this block's rows of C, sized by the host.
    let c_block = unsafe { (args.c as *mut u8).add((c_g + row0 * args.ldc as usize) * 2) };
    let target = epilogue::Target {
        c: c_block,
        residual: core::ptr::null(),
        m: m - row0,
        n,
        ldc: args.ldc as usize,
        ldr: 0,
        vector_ok: vector_ok && (c_block as usize) % 16 == 0 && (args.ldc as usize * 2) % 16 == 0,
    };
    let params = epilogue::Params { alpha: 1.0, beta: 0.0, bias: core::ptr::null(), out_type: out_type::BF16, activation: 0, flags: 0 };
    let strips = LdsArena::new().take::<f32>(WY * WX * epilogue::STRIP_FLOATS);
    let strip = strips.sub(wave * epilogue::STRIP_FLOATS, epilogue::STRIP_FLOATS);
    epilogue::store(&params, &target, &Tiles16(acc), strip, wy * TM * 16, col0 + wx * TN * 16, lane);
}
