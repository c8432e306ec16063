//! The decode GEMV: `C = alpha * A * B^T + beta * C` (+ bias, activation, residual) for a few
//! rows of A (decode: M <= 16), B streamed once per 16 rows of A.
//!
//! A workgroup owns 16 rows of B (16 columns of C) and 16 rows of A; its waves split K, each a
//! run of consecutive K-tiles (64 bytes of every row). Per K-tile, lane `l` loads the 16 bytes at
//! `16 (l / 16)` of B row `l % 16` and of A row `l % 16`: exactly the operands of the 16x16
//! MFMAs (A's rows as the MFMA's rows, B's rows as its columns, the chunk's slices as
//! consecutive MFMAs over K; both sides take the same k from each lane, so the order of K inside
//! a tile does not matter). A wave's load of B is 16 whole 64-byte lines. Rows of A past M and
//! of B past N read as zero (range-checked buffers); in the last K-tile, bytes past K are masked
//! to zero on both sides (they may hold the next row).
//!
//! Why no LDS staging: each byte of B is used by one wave, once; LDS would only add a round trip.
//! Why the matrix cores: one MFMA covers all 16 rows of A, so M = 1..16 cost the same
//! arithmetic, and the products and f32 sums are the GEMM's.
//!
//! A wave's loads run one group of [`GEMV_GROUP`] K-tiles ahead of its arithmetic. The waves'
//! partial sums meet in LDS and are added in wave order (deterministic), then GEMM's per-element
//! epilogue runs.

use super::epilogue::{self, Params, Target};
use crate::abi::gemm::{GEMV_GROUP, GEMV_RED_PITCH, GEMV_ROWS, GemmArgs, K_TILE_BYTES, flags, out_type};
use crate::dsl::ids::{workgroup_id_x, workgroup_id_y, workgroup_id_z, workgroup_size_x, workitem_id_x};
use crate::dsl::lds::{LdsArena, LdsSlice};
use crate::dsl::mem::Buffer;
use crate::dsl::simd::{F32x4, U32x4};
use crate::dsl::sync::barrier;
use crate::dsl::wave::{lane_id, readfirstlane};
use crate::tile::mma::{MmaInput, mma16};

/// K-tiles per load group.
const G: usize = GEMV_GROUP as usize;
/// A K-tile offset past every operand (the host keeps a block's rows under 2 GiB, so a lane's
/// offset plus this does not wrap): the load reads zeros and touches no memory.
const PAST: u32 = 1 << 31;
/// Rows of A and B per workgroup, as a `usize`.
const ROWS: usize = GEMV_ROWS as usize;
/// [`GEMV_RED_PITCH`] as a `usize`.
const PITCH: usize = GEMV_RED_PITCH as usize;

/// One group's chunks: B's and A's, per K-tile.
type Group = ([U32x4; G], [U32x4; G]);

/// `v` with its bytes from `valid` (0..=16) on zeroed.
#[inline(always)]
fn keep_bytes(v: U32x4, valid: u32) -> U32x4 {
    let w = v.to_array();
    let mut out = [0u32; 4];
    crate::unroll!(i < 4 => {
        let lo = 4 * i as u32;
        let mask = if valid >= lo + 4 {
            u32::MAX
        } else if valid <= lo {
            0
        } else {
            (1u32 << (8 * (valid - lo))) - 1
        };
        out[i] = w[i] & mask;
    });
    U32x4::from_array(out)
}

/// The `gemv_*` kernel for input type `E` (grid and arguments: `abi::gemm::GEMV_ROWS`).
#[inline(always)]
pub fn gemv<E: MmaInput>(args: GemmArgs) {
    let eb = E::BYTES as u32;
    let thread = workitem_id_x();
    let wave = readfirstlane(thread / 64);
    let waves = workgroup_size_x() / 64;
    let lane = lane_id();
    let (row, part) = (lane % GEMV_ROWS, lane / GEMV_ROWS);
    let batch = workgroup_id_z() as usize;
    let (col0, row0) = (workgroup_id_x() * GEMV_ROWS, workgroup_id_y() * GEMV_ROWS);
    let (m, n) = (args.m, args.n);
    let k_bytes = args.k * eb;
    let k_tiles = k_bytes.div_ceil(K_TILE_BYTES);
    let full_tiles = k_bytes / K_TILE_BYTES;
    let t0 = (wave * args.k_tiles_per_split).min(k_tiles);
    let t1 = (t0 + args.k_tiles_per_split).min(k_tiles);
    // (The grid covers M and N: both are at least 1 here.)
    let (rows_a, rows_b) = ((m - row0).min(GEMV_ROWS), (n - col0).min(GEMV_ROWS));
    let (lda, ldb) = (args.lda * eb, args.ldb * eb);
    // SAFETY: the host checked that every batch's matrices lie in the buffers; the block's rows
    // span under 2 GiB (checked too), so the ranges below, and a lane's offset plus PAST, fit
    // in 32 bits.
    let (ab, bb) = unsafe {
        let a = args.a.add((batch as u64 * args.batch_stride_a) as usize * eb as usize + (row0 * lda) as usize);
        let b = args.b.add((batch as u64 * args.batch_stride_b) as usize * eb as usize + (col0 * ldb) as usize);
        (Buffer::new(a, (rows_a - 1) * lda + k_bytes), Buffer::new(b, (rows_b - 1) * ldb + k_bytes))
    };
    let (a_lane, b_lane) = (row * lda + 16 * part, row * ldb + 16 * part);

    // The wave's whole K-tiles t0..f_end in groups of G; a K-tile past f_end loads nothing.
    let f_end = t1.min(full_tiles);
    let groups = f_end.saturating_sub(t0).div_ceil(G as u32);
    let load = |g: u32| -> Group {
        let mut out = ([U32x4::splat(0); G], [U32x4::splat(0); G]);
        crate::unroll!(j < G => {
            let t = t0 + g * G as u32 + j as u32;
            // (A wave-uniform select, then one add per lane: selecting per lane made LLVM
            // branch around each load.)
            let at = if t < f_end { t * K_TILE_BYTES } else { PAST };
            // SAFETY: offsets inside the operands' ranges, or past them (zeros).
            unsafe {
                out.0[j] = bb.load_b128(b_lane + at, 0);
                out.1[j] = ab.load_b128(a_lane + at, 0);
            }
        });
        out
    };
    // Group `g`'s products (K-tiles past the wave's whole ones, zeros, are skipped: a
    // wave-uniform branch, not MFMAs on padding).
    let compute = |grp: &Group, g: u32, mut acc: F32x4| -> F32x4 {
        crate::unroll!(j < G => {
            if t0 + g * G as u32 + (j as u32) < f_end {
                acc = mma16::<E>(grp.1[j], grp.0[j], acc);
            }
        });
        acc
    };
    let mut acc = F32x4::splat(0.0);
    // Unrolled by two so that the register sets swap roles instead of being copied.
    let mut cur = load(0);
    let mut nxt: Group;
    let mut g = 0;
    while g < groups {
        nxt = load(g + 1);
        acc = compute(&cur, g, acc);
        g += 1;
        if g >= groups {
            break;
        }
        cur = load(g + 1);
        acc = compute(&nxt, g, acc);
        g += 1;
    }
    // The last K-tile when K ends inside it, by the wave that owns it.
    if t0 <= full_tiles && full_tiles < t1 {
        let t = full_tiles;
        let valid = k_bytes.saturating_sub(t * K_TILE_BYTES + 16 * part).min(16);
        // Pieces wholly past K read nothing (not the next row's first bytes).
        let at = if valid > 0 { t * K_TILE_BYTES } else { PAST };
        // SAFETY: as for the loads above.
        let (b, a) = unsafe { (bb.load_b128(b_lane + at, 0), ab.load_b128(a_lane + at, 0)) };
        acc = mma16::<E>(keep_bytes(a, valid), keep_bytes(b, valid), acc);
    }

    // The waves' sums: register e of lane l is C[4 (l / 16) + e][l % 16] of the block.
    let red = LdsArena::new().take::<f32>(waves as usize * 4 * PITCH);
    let v = acc.to_array();
    crate::unroll!(e < 4 => {
        // SAFETY: this wave's part of the region.
        unsafe { red.write((wave as usize * 4 + e) * PITCH + lane as usize, v[e]) };
    });
    barrier();

    let c_elem = if args.out_type == out_type::F32 { 4 } else { 2 };
    let params = Params {
        alpha: args.alpha,
        beta: args.beta,
        bias: args.bias,
        out_type: args.out_type,
        activation: args.activation,
        flags: args.flags & (flags::BETA | flags::BIAS | flags::RESIDUAL),
    };
    // SAFETY: this batch's C and residual inside the buffers the host sized.
    let target = unsafe {
        Target {
            c: args.c.add(batch * args.batch_stride_c as usize * c_elem),
            residual: args.residual.add(batch * args.batch_stride_r as usize * c_elem),
            m: m as usize,
            n: n as usize,
            ldc: args.ldc as usize,
            ldr: args.ldr as usize,
            vector_ok: false,
        }
    };
    if epilogue::linear(&params) {
        finish(&params, &target, red, thread, waves, rows_a, rows_b, row0, col0, epilogue::element_linear);
    } else {
        finish(&params, &target, red, thread, waves, rows_a, rows_b, row0, col0, epilogue::element);
    }
}

/// The block's outputs from the waves' sums in `red` (added in wave order), through the
/// per-element epilogue `element` ([`epilogue::element`], or its linear form where that is the
/// same value: see [`epilogue::element_linear`]), stored to C.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn finish(
    params: &Params,
    target: &Target,
    red: LdsSlice<f32>,
    thread: u32,
    waves: u32,
    rows_a: u32,
    rows_b: u32,
    row0: u32,
    col0: u32,
    element: impl Fn(&Params, &Target, f32, usize, usize) -> f32,
) {
    let mut t = thread as usize;
    while t < rows_a as usize * ROWS {
        let (mi, ni) = (t / ROWS, t % ROWS);
        if ni < rows_b as usize {
            let mut sum = 0.0f32;
            let mut w = 0;
            while w < waves as usize {
                // SAFETY: written before the barrier.
                sum += unsafe { red.read((w * 4 + mi % 4) * PITCH + (mi / 4) * ROWS + ni) };
                w += 1;
            }
            let (r, c) = (row0 as usize + mi, col0 as usize + ni);
            let y = element(params, target, sum, r, c);
            // SAFETY: r < M, c < N: inside C.
            unsafe { epilogue::store_out(target.c, params.out_type, r * target.ldc + c, y) };
        }
        t += waves as usize * 64;
    }
}
