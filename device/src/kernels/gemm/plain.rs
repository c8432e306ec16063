//! The plain GEMM kernel: one workgroup computes one `BM x BN` block of C with `WY x WX` waves,
//! each a register tile `W` of MFMA tiles, over its split's K-tiles (the tile layer's pipeline),
//! then runs the epilogue (or writes raw f32 partials for split-K). Its two halves,
//! [`accumulate`] and [`store`], also serve the stream-K kernel (`stream_k`).

use super::epilogue;
use crate::abi::gemm::{GemmArgs, K_TILE_BYTES, flags, out_type};
use crate::dsl::ids::{wave_id_x, workgroup_id_x, workgroup_id_y, workgroup_id_z, workitem_id_x};
use crate::dsl::lds::LdsArena;
use crate::dsl::wave::lane_id;
use crate::tile::accumulate::Accumulate;
use crate::tile::global::GlobalTile;
use crate::tile::lds::LdsTile;
use crate::tile::mma::MmaInput;
use crate::tile::order;
use crate::tile::pipeline::{Pipeline, Staged};
use crate::tile::reg::RegTile;

/// Max 16-byte chunks one thread moves per operand per K-tile (sizes the register stage).
const MAX_CHUNKS_PER_THREAD: usize = 8;
/// LDS stages of the K loop (the host sizes LDS with `abi::gemm::gemm_lds_bytes`).
pub const STAGES: usize = 2;
/// K-tiles per unit of the pipeline's hot loop (constant stages and fragment slots).
const UNIT: usize = 2;
/// Register sets of the staged producer: a K-tile's loads get two steps to land, not one. With
/// one, every wave waited ~270 clocks a step (`cargo xtask profile gemm --shape "fp8
/// 4096x4096x4096"`: four `s_waitcnt vmcnt` before the stores, 68 clocks apart): the CU's eight
/// waves issue their loads together and the last wave's queue behind the others' on the CU's
/// memory path. Modeled (`cargo xtask bench --filter gemm`, TFLOP/s at peak clock): bf16
/// 4096^3 1005 -> 1046, fp8 4096^3 1785 -> 1839, bf16 16x16x16 4096^3 922 -> 969; the short K
/// loop of f16 1024^3 343 -> 322 (one more tile in the prologue). The VGPR counts did not
/// change. The fp8 block-scaled kernel keeps one set: with two (254 VGPRs) its first wave ran
/// faster but the launch slower (4096x2112x7168: 1625 -> 1545).
const REG_SETS: usize = 2;

/// The GEMM kernel for input type `E`, per-wave register tiles `W`, `WY x WX` waves.
#[inline(always)]
pub fn gemm<E: MmaInput, W: RegTile, const WY: usize, const WX: usize>(args: GemmArgs) {
    let (bm, bn) = (WY * W::TM * W::DIM, WX * W::TN * W::DIM);
    let splits = args.splits.max(1);
    let z = workgroup_id_z();
    let (batch, split) = ((z / splits) as usize, z % splits);
    let (m, n) = (args.m as usize, args.n as usize);
    let (bx, by) = order::block(workgroup_id_x(), workgroup_id_y(), n.div_ceil(bn) as u32, m.div_ceil(bm) as u32);
    let at = At { batch, row0: by as usize * bm, col0: bx as usize * bn };
    let kt0 = split * args.k_tiles_per_split;
    let kt1 = (kt0 + args.k_tiles_per_split).min(k_tiles::<E>(&args));
    let acc = accumulate::<E, W, WY, WX>(&args, &at, kt0, kt1);
    store::<W, WY, WX>(&args, &at, &acc, split as usize);
}

/// Where a workgroup's block lies: its batch and its first row and column of C.
pub struct At {
    /// The batch.
    pub batch: usize,
    /// First row of the block.
    pub row0: usize,
    /// First column of the block.
    pub col0: usize,
}

/// K-tiles of one block's reduction.
#[inline(always)]
pub fn k_tiles<E: MmaInput>(args: &GemmArgs) -> u32 {
    // (The host keeps K in bytes under 2^32.)
    (args.k * E::BYTES as u32).div_ceil(K_TILE_BYTES)
}

/// The wave's first row and column of its block (its part of the A and B tiles).
#[inline(always)]
fn wave_origin<W: RegTile, const WX: usize>() -> (usize, usize) {
    let wave = wave_id_x() as usize;
    ((wave / WX) * W::TM * W::DIM, (wave % WX) * W::TN * W::DIM)
}

/// This wave's accumulators of block `at` over K-tiles `kt0..kt1` (the tile layer's pipeline).
/// Ends after a barrier: the LDS is free.
#[inline(always)]
pub fn accumulate<E: MmaInput, W: RegTile, const WY: usize, const WX: usize>(args: &GemmArgs, at: &At, kt0: u32, kt1: u32) -> W {
    let threads = WY * WX * 64;
    let (bm, bn) = (WY * W::TM * W::DIM, WX * W::TN * W::DIM);
    let thread = workitem_id_x() as usize;
    let lane = lane_id() as usize;
    let (m, n, k) = (args.m as usize, args.n as usize, args.k as usize);
    let (batch, row0, col0) = (at.batch, at.row0, at.col0);
    let eb = E::BYTES;
    let k_bytes = k * eb;
    // K-tiles entirely inside K take 128-bit loads; the last partial one is zero-filled.
    let full_tiles = (k_bytes / K_TILE_BYTES as usize) as u32;
    // SAFETY: the host checked that every batch's matrices lie in the buffers, and the spans of
    // the blocks' rows.
    let (a, b) = unsafe {
        (
            GlobalTile::<MAX_CHUNKS_PER_THREAD>::new(
                args.a.add((batch as u64 * args.batch_stride_a) as usize * eb + row0 * args.lda as usize * eb),
                args.lda as usize * eb,
                m.saturating_sub(row0),
                k_bytes,
                bm,
                thread,
                threads,
            ),
            GlobalTile::<MAX_CHUNKS_PER_THREAD>::new(
                args.b.add((batch as u64 * args.batch_stride_b) as usize * eb + col0 * args.ldb as usize * eb),
                args.ldb as usize * eb,
                n.saturating_sub(col0),
                k_bytes,
                bn,
                thread,
                threads,
            ),
        )
    };

    let mut lds = LdsArena::new();
    let lds_a = LdsTile::new(&mut lds, bm, STAGES);
    let lds_b = LdsTile::new(&mut lds, bn, STAGES);
    let (a_row, b_row) = wave_origin::<W, WX>();
    let mut acc = Accumulate::<E, W>::new(a_row, b_row, lane);
    Pipeline::new(Staged::<MAX_CHUNKS_PER_THREAD, STAGES, REG_SETS>::new(a, b, lds_a, lds_b))
        .run::<UNIT, _>(&mut acc, kt0, kt1, full_tiles);
    acc.acc
}

/// The epilogue of this wave's part of block `at`: C (or, with `PARTIAL`, split `split`'s f32
/// partials) from the accumulators. The operand LDS must be free (each wave stages its strips in
/// its own part of it).
#[inline(always)]
pub fn store<W: RegTile, const WY: usize, const WX: usize>(args: &GemmArgs, at: &At, acc: &W, split: usize) {
    let wave = wave_id_x() as usize;
    let lane = lane_id() as usize;
    let (m, n, batch) = (args.m as usize, args.n as usize, at.batch);
    let partial = args.flags & flags::PARTIAL != 0;
    let c_elem = if partial || args.out_type == out_type::F32 { 4 } else { 2 };
    let c_off = if partial {
        split * args.split_stride_c as usize + batch * args.batch_stride_c as usize
    } else {
        batch * args.batch_stride_c as usize
    };
    let vector_ok = args.flags & flags::VECTOR_OK != 0;
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
    let (a_row, b_row) = wave_origin::<W, WX>();
    epilogue::store(&params, &target, acc, strip, at.row0 + a_row, at.col0 + b_row, lane);
}
