//! GEMM: `C = alpha * A * B^T + beta * C` (+ bias, activation, residual), A `[M][K]`, B `[N][K]`.
//!
//! Structure (one workgroup = one `BM x BN` block of C, `WY x WX` waves of `TM x TN` MFMA tiles,
//! 16x16 or 32x32, see `wave`):
//! - prologue: K-tile 0 global -> registers -> LDS stage 0, K-tile 1 global -> registers, barrier;
//! - main loop, per K-tile kt: store the registers (K-tile kt + 1) into the other LDS stage;
//!   issue the global loads of K-tile kt + 2 into the registers; read this tile's MFMA fragments
//!   from LDS (one 128-bit read per 16 rows of each operand) and run the MFMAs; one barrier. Two
//!   LDS stages plus the register stage give each global load a whole K-tile of MFMAs (and a
//!   barrier) to complete behind;
//! - epilogue: alpha, beta * C, bias, activation, residual, conversion, store (or raw f32 partial
//!   sums for split-K).

mod epilogue;
mod mma;
pub mod reduce;
pub mod scaled;
mod tile;
pub mod wave;

pub use mma::{Bf8In, Bf16In, F16In, F32In, Fp8In, MmaIn, Xf32In};
pub use wave::{Tiles16, Tiles32, WaveTiles};

use crate::abi::gemm::{GemmArgs, K_TILE_BYTES, flags, out_type};
use crate::dsl::ids::{workgroup_id_x, workgroup_id_y, workgroup_id_z, workitem_id_x};
use crate::dsl::lds::LdsArena;
use crate::dsl::simd::U32x4;
use crate::dsl::sync::barrier;
use crate::dsl::wave::{lane_id, readfirstlane};
use tile::{CHUNKS, Operand, regs_to_lds};

/// Max 16-byte chunks one thread moves per operand per K-tile (sizes the register stage).
const MAX_CHUNKS_PER_THREAD: usize = 8;

/// The GEMM kernel for input type `E`, per-wave MFMA tiles `W`, `WY x WX` waves.
#[inline(always)]
pub fn gemm<E: MmaIn, W: WaveTiles, const WY: usize, const WX: usize>(args: GemmArgs) {
    let threads = WY * WX * 64;
    let (wm, wn) = (W::TM * W::DIM, W::TN * W::DIM);
    let (bm, bn) = (WY * wm, WX * wn);
    let thread = workitem_id_x() as usize;
    let wave = readfirstlane(thread as u32 / 64) as usize;
    let lane = lane_id() as usize;
    let (wy, wx) = (wave / WX, wave % WX);

    let splits = args.splits.max(1);
    let z = workgroup_id_z();
    let (batch, split) = ((z / splits) as usize, z % splits);
    let (row0, col0) = (workgroup_id_y() as usize * bm, workgroup_id_x() as usize * bn);
    let (m, n, k) = (args.m as usize, args.n as usize, args.k as usize);
    let eb = E::BYTES;
    // K-tile counters are u32: SALU has no 64-bit ordered compares, so usize counters would
    // live in VGPRs. (The host keeps K in bytes under 2^32.)
    let k_tiles = (args.k * eb as u32).div_ceil(K_TILE_BYTES);
    let kt0 = split * args.k_tiles_per_split;
    let kt1 = (kt0 + args.k_tiles_per_split).min(k_tiles);

    let vector_ok = args.flags & flags::VECTOR_OK != 0;
    let (na, nb) = (bm * CHUNKS / threads, bn * CHUNKS / threads);
    let k_bytes = k * eb;
    // K-tiles entirely inside K take 128-bit loads; the last partial one is zero-filled.
    let full_tiles = (k_bytes / K_TILE_BYTES as usize) as u32;
    // SAFETY: the host checked that every batch's matrices lie in the buffers.
    let (a, b) = unsafe {
        (
            Operand::<MAX_CHUNKS_PER_THREAD>::new(
                args.a.add((batch as u64 * args.batch_stride_a) as usize * eb + row0 * args.lda as usize * eb),
                args.lda as usize * eb,
                m.saturating_sub(row0),
                k_bytes,
                thread,
                threads,
                na,
            ),
            Operand::<MAX_CHUNKS_PER_THREAD>::new(
                args.b.add((batch as u64 * args.batch_stride_b) as usize * eb + col0 * args.ldb as usize * eb),
                args.ldb as usize * eb,
                n.saturating_sub(col0),
                k_bytes,
                thread,
                threads,
                nb,
            ),
        )
    };

    let mut lds = LdsArena::new();
    let lds_a = lds.take::<U32x4>(2 * bm * CHUNKS);
    let lds_b = lds.take::<U32x4>(2 * bn * CHUNKS);
    let mut ra = [U32x4::splat(0); MAX_CHUNKS_PER_THREAD];
    let mut rb = [U32x4::splat(0); MAX_CHUNKS_PER_THREAD];

    let mut acc = W::zero();
    // The wave's first rows of the A and B tiles (its output block's rows and columns).
    let (a_row, b_row) = (wy * wm, wx * wn);

    // Global -> registers for K-tile `kt`: 128-bit loads for full tiles, element-wise (zero
    // past K) for the last partial one or unaligned inputs.
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
    }

    // Prologue: K-tile kt0 into stage 0, K-tile kt0 + 1 into the registers.
    if kt0 < kt1 {
        if kt0 < full_tiles {
            load_tile!(kt0, fast);
        } else {
            load_tile!(kt0, slow);
        }
        // SAFETY: stage 0 is not read before the barrier below.
        unsafe {
            regs_to_lds(lds_a, 0, bm, thread, threads, na, &ra);
            regs_to_lds(lds_b, 0, bn, thread, threads, nb, &rb);
        }
        if kt0 + 1 < kt1 {
            if kt0 + 1 < full_tiles {
                load_tile!(kt0 + 1, fast);
            } else {
                load_tile!(kt0 + 1, slow);
            }
        }
    }
    barrier();

    let mut kt = kt0;
    // One K-tile on LDS stage `$stage`. `$has_next`: K-tile kt + 1 exists (it is in the
    // registers); `$has_next2`: so does kt + 2, loaded `$next` (`fast` or `slow`).
    macro_rules! step {
        ($stage:expr, $next:ident, $has_next:expr, $has_next2:expr) => {{
            let stage: usize = $stage;
            // Phase 1: K-tile kt + 1, loaded a whole step ago, from the registers into the other
            // stage (every wave finished reading it before the last barrier). Its loads had the
            // previous step's MFMAs to complete behind. (Stored after this step's MFMAs instead,
            // the compiler hoisted the stores, and their wait, above the MFMAs: the stores do
            // not alias the stage being read.)
            if $has_next {
                // SAFETY: the other stage is free (above) and not read before the barrier.
                unsafe {
                    regs_to_lds(lds_a, 1 - stage, bm, thread, threads, na, &ra);
                    regs_to_lds(lds_b, 1 - stage, bn, thread, threads, nb, &rb);
                }
            }
            // Phase 2: K-tile kt + 2's global loads into the registers; they complete behind
            // this step's MFMAs (the next step's phase 1 waits for them).
            if $has_next2 {
                load_tile!(kt + 2, $next);
            }
            // Phase 3: this K-tile's fragments from LDS, then the MFMAs.
            // SAFETY: stage `stage` was written before the last barrier.
            unsafe { acc.step::<E>(lds_a, lds_b, stage, bm, bn, a_row, b_row, lane) };
            // Publishes K-tile kt + 1 and frees this stage for the step after next.
            barrier();
            kt += 1;
        }};
    }

    // Hot loop: K-tile kt + 2 is a full one. Unrolled by two so the LDS stages are constants,
    // with its only exit at the bottom: an exit between the two halves makes the register
    // allocator rotate every accumulator through copies each iteration (64 v_mov per K-tile).
    let fast_steps = kt1.min(full_tiles).saturating_sub(kt0 + 2);
    for _ in 0..fast_steps / 2 {
        step!(0, fast, true, true);
        step!(1, fast, true, true);
    }
    if fast_steps % 2 == 1 {
        step!(0, fast, true, true);
    }
    // Tail: the last two K-tiles (and any whose successor's successor is the partial one).
    while kt < kt1 {
        step!(((kt - kt0) & 1) as usize, slow, kt + 1 < kt1, kt + 2 < kt1);
    }

    // Epilogue: the operand LDS is free after the last barrier; each wave stages its strips in
    // its own part of it.
    let partial = args.flags & flags::PARTIAL != 0;
    let c_elem = if partial || args.out_type == out_type::F32 { 4 } else { 2 };
    let c_off = if partial {
        split as usize * args.split_stride_c as usize + batch * args.batch_stride_c as usize
    } else {
        batch * args.batch_stride_c as usize
    };
    // SAFETY: offsets of this batch/split inside the buffers the host sized.
    let target = unsafe {
        epilogue::Target {
            c: args.c.add(c_off * c_elem),
            residual: args.residual.add(batch * args.batch_stride_r as usize * c_elem),
            m,
            n,
            ldc: args.ldc as usize,
            ldr: args.ldr as usize,
            vector_ok: vector_ok && (args.c as usize + c_off * c_elem) % 16 == 0 && (args.ldc as usize * c_elem) % 16 == 0,
        }
    };
    let strips = LdsArena::new().take::<f32>(WY * WX * epilogue::STRIP_FLOATS);
    let strip = strips.sub(wave * epilogue::STRIP_FLOATS, epilogue::STRIP_FLOATS);
    let params = epilogue::Params {
        alpha: args.alpha,
        beta: args.beta,
        bias: args.bias,
        out_type: args.out_type,
        activation: args.activation,
        flags: args.flags,
    };
    epilogue::store(&params, &target, &acc, strip, row0 + a_row, col0 + b_row, lane);
}
