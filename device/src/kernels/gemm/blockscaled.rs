//! fp8 GEMM with DeepGEMM-style block scales (see `abi::gemm_blockscaled`), on the tile layer's K loop.
//!
//! The consumer differs from the plain GEMM's in one way: the MFMAs of each 128-wide K block
//! accumulate into `tmp` (the block's first MFMAs take C = 0, so starting a block costs nothing),
//! and at the block's end the partial sums are promoted: `acc += tmp * (sa[row][kb] *
//! sb[n_block][kb])`, as packed FMAs (`v_pk_fma_f32`, two values per instruction) — the
//! "promotion" that keeps fp8 products' scale out of the MFMAs. A K-tile is 64 bytes = 64 fp8
//! values, so a scale block is two K-tiles: the pipeline's unit, so whether a step starts or ends
//! a block is static (a runtime choice would make LLVM select between C = 0 and `tmp` for the
//! MFMAs, a second copy of all 64 partial sums).
//!
//! The kernel's two halves, [`accumulate`] (a block's promoted sums over a range of whole scale
//! blocks) and [`store`] (the epilogue), also serve its stream-K form (`stream_k::BlockScaled`).

use super::epilogue;
use crate::abi::Fp8E4M3Fnuz;
use crate::abi::gemm::{K_TILE_BYTES, flags as gemm_flags, out_type};
use crate::abi::gemm_blockscaled::{BlockScaledArgs, SCALE_BLOCK, flags, group_mode};
use crate::dsl::ids::{workgroup_id_x, workgroup_id_y, workgroup_id_z, workitem_id_x};
use crate::dsl::lds::LdsArena;
use crate::dsl::mem::Buffer;
use crate::dsl::simd::{F32x4, U32x4};
use crate::dsl::wave::{lane_id, readfirstlane};
use crate::tile::global::GlobalTile;
use crate::tile::lds::LdsTile;
use crate::tile::order;
use crate::tile::pipeline::{Consumer, Pipeline, Staged};
use crate::tile::reg::{Frags, RegTile, Source, Tiles16};

/// MFMA tiles of a wave along M and N: every wave computes 64x64.
const TM: usize = 4;
const TN: usize = 4;
const MAX_CHUNKS: usize = 8;
const STAGES: usize = 2;
/// K-tiles per scale block: the pipeline's unit.
const TILES_PER_BLOCK: usize = (SCALE_BLOCK / K_TILE_BYTES) as usize;

/// `acc += tmp * s` for one 16x16 tile, with `s` the per-row scale of the lane's 4 rows.
#[inline(always)]
fn promote(acc: F32x4, tmp: F32x4, s: F32x4) -> F32x4 {
    // SAFETY: a lane-wise fused multiply-add of plain f32 vectors.
    unsafe { core::intrinsics::simd::simd_fma(tmp, s, acc) }
}

/// Where a block's scales are: B's for its 128 columns, A's for its rows.
struct Scales {
    /// B's scales of the block's 128-row block of B (K blocks `sb_kb_stride` apart).
    sb: Buffer,
    sb_kb_stride: usize,
    /// A's scales of the group, each K block's rows contiguous.
    sa: *const f32,
    sa_kb_stride: usize,
    /// Rows of the group (A's scales past them read 0).
    m: usize,
    /// The lane's first accumulator row in tile row 0, from the group's first row.
    lrow: usize,
}

impl Scales {
    /// The raw scales of K block `kb`: A's for the lane's rows (per tile row), B's. Issued when a
    /// block starts and used when it ends, so the loads complete behind its MFMAs.
    #[inline(always)]
    fn load(&self, kb: u32) -> ([U32x4; TM], u32) {
        let kb = kb as usize;
        // SAFETY: kb < ceil(K / 128); the scale tensors hold that many blocks (host-checked).
        // A vector load of the uniform value, not a scalar one: scalar loads return out of order,
        // so while one is in flight every wait for LDS fragments has to be `lgkmcnt(0)`, which
        // also waits for the scalar load (11.6% of the loop's wave time).
        let sb = unsafe { self.sb.load_b32(0, (kb * self.sb_kb_stride * 4) as u32) };
        // Column kb: m rows. The buffer's range ends at row m, so rows past it read 0 (they are
        // never stored) without a per-lane branch.
        // SAFETY: inside the scale tensor.
        let col = Buffer::new(unsafe { self.sa.add(kb * self.sa_kb_stride) } as *const u8, (self.m * 4) as u32);
        let mut sa = [U32x4::splat(0); TM];
        crate::unroll!(i < TM => {
            // SAFETY: range-checked.
            sa[i] = unsafe { col.load_b128(((self.lrow + 16 * i) * 4) as u32, 0) };
        });
        (sa, sb)
    }
}

/// The block-scaled consumer: per scale block, MFMAs into `tmp`, then promotion into `acc`.
///
/// All of a K-tile's fragments are read in group 0 into one buffer and all its MFMAs run in
/// group 0: the 16x16 tiles' second fragment buffer (see `tile::reg`) would take this kernel
/// past 256 registers, to one wave per SIMD (measured: 298, and 1416 against 1513 TFLOP/s).
struct Promote {
    tmp: Tiles16<TM, TN>,
    frags: Frags<TM, TN>,
    a_row: usize,
    b_row: usize,
    lane: usize,
    acc: [[F32x4; TN]; TM],
    scales: Scales,
    raw: ([U32x4; TM], u32),
}

impl Consumer for Promote {
    #[inline(always)]
    unsafe fn read(&mut self, g: usize, _slot: usize, a: LdsTile, b: LdsTile, stage: usize) {
        let src = Source { a, b, stage, a_row: self.a_row, b_row: self.b_row, lane: self.lane };
        // SAFETY: caller.
        unsafe { Tiles16::read(&mut self.frags, g, 0, src) };
    }

    #[inline(always)]
    fn mma(&mut self, g: usize, _slot: usize, j: usize, kt: u32, last: bool) {
        let (first, end) = (j % TILES_PER_BLOCK == 0, j % TILES_PER_BLOCK == TILES_PER_BLOCK - 1 || last);
        if g == 0 {
            if first {
                // Issued when the block starts and used when it ends: the loads complete behind
                // its MFMAs.
                self.raw = self.scales.load(kt / TILES_PER_BLOCK as u32);
                // A constant zero: the block's first MFMAs take C = 0, no register is cleared.
                self.tmp = Tiles16::zero();
            }
            self.tmp.mma::<Fp8E4M3Fnuz>(&self.frags, 0, 0);
            self.tmp.mma::<Fp8E4M3Fnuz>(&self.frags, 1, 0);
        }
        // Promotion at the end of a scale block (or of K).
        if g == 1 && end {
            let sb = f32::from_bits(self.raw.1);
            crate::unroll!(i < TM => {
                let v = self.raw.0[i].to_array();
                let s = F32x4::from_array([f32::from_bits(v[0]) * sb, f32::from_bits(v[1]) * sb, f32::from_bits(v[2]) * sb, f32::from_bits(v[3]) * sb]);
                crate::unroll!(j < TN => {
                    self.acc[i][j] = promote(self.acc[i][j], self.tmp.0[i][j], s);
                });
            });
        }
    }
}

/// The fp8 block-scaled kernel: `WY x WX` waves of 64x64 (128x128 blocks of 4 waves; the
/// small-M block of one), over split `z % splits` of K; `PARTIAL`: the split-K first pass, f32
/// partials out. (A kernel of its own: with the choice at run time the 128x128 kernel needed
/// 264 registers, one wave per SIMD; 256 without.)
#[inline(always)]
pub fn gemm_fp8_blockscaled<const WY: usize, const WX: usize, const PARTIAL: bool>(args: BlockScaledArgs) {
    let (bm, bn) = (WY * TM * 16, WX * TN * 16);
    let (bx, by) =
        order::block(workgroup_id_x(), workgroup_id_y(), (args.n as usize).div_ceil(bn) as u32, (args.m as usize).div_ceil(bm) as u32);
    let (row0, col0) = (by as usize * bm, bx as usize * bn);
    let splits = args.splits.max(1);
    let (gz, split) = (workgroup_id_z() / splits, workgroup_id_z() % splits);

    // Which group this block computes, and the rows it owns.
    let g = match args.group_mode {
        group_mode::CONTIGUOUS => {
            if row0 >= args.m as usize {
                return;
            }
            // SAFETY: row0 < m, group_info holds m ids (host-checked, block-uniform).
            let g = readfirstlane(unsafe { args.group_info.add(row0).read() } as u32) as i32;
            if g < 0 {
                return; // a block of padding rows
            }
            Group { group: g as usize, ..Group::whole(&args) }
        }
        group_mode::MASKED => {
            let g = gz as usize;
            // SAFETY: g < groups (grid z), group_info holds a count per group (host-checked).
            let valid = readfirstlane(unsafe { args.group_info.add(g).read() } as u32) as usize;
            if row0 >= valid {
                return;
            }
            let g64 = g as u64;
            let at = |stride: u64| (g64 * stride) as usize;
            Group {
                group: g,
                a: at(args.a_group_stride),
                sa: at(args.sa_group_stride),
                c: at(args.c_group_stride),
                m: valid.min(args.m as usize),
            }
        }
        _ => Group::whole(&args),
    };
    let k_tiles = args.k.div_ceil(K_TILE_BYTES);
    // Whole scale blocks per split (the host keeps k_tiles_per_split even), so a split's first
    // K-tile starts a block.
    let kt0 = split * args.k_tiles_per_split;
    let kt1 = (kt0 + args.k_tiles_per_split).min(k_tiles);
    let acc = accumulate::<WY, WX>(&args, &g, row0, col0, kt0, kt1);
    store::<WY, WX, PARTIAL>(&args, &g, row0, col0, split, &acc);
}

/// The group a block computes and where its operands start: the group's index (B and its
/// scales), element offsets of its A, A's scales and C (masked mode's slabs), and its rows.
pub struct Group {
    group: usize,
    a: usize,
    sa: usize,
    c: usize,
    m: usize,
}

impl Group {
    /// The one problem of `group_mode::NONE` (and the contiguous mode's offsets).
    #[inline(always)]
    pub fn whole(args: &BlockScaledArgs) -> Group {
        Group { group: 0, a: 0, sa: 0, c: 0, m: args.m as usize }
    }
}

/// This wave's promoted accumulators of the block at `row0, col0` of group `g` over K-tiles
/// `kt0..kt1` (`kt0` starts a scale block). Ends after a barrier: the LDS is free.
#[inline(always)]
pub fn accumulate<const WY: usize, const WX: usize>(
    args: &BlockScaledArgs,
    g: &Group,
    row0: usize,
    col0: usize,
    kt0: u32,
    kt1: u32,
) -> Tiles16<TM, TN> {
    let threads = WY * WX * 64;
    let (bm, bn) = (WY * TM * 16, WX * TN * 16);
    let thread = workitem_id_x() as usize;
    let wave = readfirstlane(thread as u32 / 64) as usize;
    let lane = lane_id() as usize;
    let (wy, wx) = (wave / WX, wave % WX);
    let (n, k, m) = (args.n as usize, args.k as usize, g.m);
    let full_tiles = args.k / K_TILE_BYTES;
    // SAFETY: the host checked A, B and C hold every group's rows.
    let (a, b) = unsafe {
        (
            GlobalTile::<MAX_CHUNKS>::new(
                (args.a as *const u8).add(g.a + row0 * args.lda as usize),
                args.lda as usize,
                m.saturating_sub(row0),
                k,
                bm,
                thread,
                threads,
            ),
            GlobalTile::<MAX_CHUNKS>::new(
                (args.b as *const u8).add(g.group * args.b_group_stride as usize + col0 * args.ldb as usize),
                args.ldb as usize,
                n.saturating_sub(col0),
                k,
                bn,
                thread,
                threads,
            ),
        )
    };
    let mut lds = LdsArena::new();
    let lds_a = LdsTile::new(&mut lds, bm, STAGES);
    let lds_b = LdsTile::new(&mut lds, bn, STAGES);
    // The wave's first rows of the A and B tiles.
    let (a_row, b_row) = (wy * TM * 16, wx * TN * 16);
    // B's scales for this block (its columns lie in one 128-row scale block of B).
    // SAFETY: offsets inside the scale tensors the host sized.
    let sb = Buffer::new(
        unsafe { args.b_scale.add(g.group * args.sb_group_stride as usize + (col0 / SCALE_BLOCK as usize) * args.sb_nb_stride as usize) }
            as *const u8,
        u32::MAX,
    );
    let scales = Scales {
        sb,
        sb_kb_stride: args.sb_kb_stride as usize,
        // SAFETY: an offset inside the scale tensor.
        sa: unsafe { args.a_scale.add(g.sa) },
        sa_kb_stride: args.sa_kb_stride as usize,
        m,
        // Tile row i of the lane holds rows 16 i + 4 (l / 16) .. + 4 of the wave's rows.
        lrow: row0 + a_row + 4 * (lane / 16),
    };
    let mut c = Promote {
        tmp: Tiles16::zero(),
        frags: Frags::new(),
        a_row,
        b_row,
        lane,
        acc: [[F32x4::splat(0.0); TN]; TM],
        scales,
        raw: ([U32x4::splat(0); TM], 0),
    };
    Pipeline::new(Staged::<MAX_CHUNKS, STAGES>::new(a, b, lds_a, lds_b)).run::<TILES_PER_BLOCK, _>(&mut c, kt0, kt1, full_tiles);
    Tiles16(c.acc)
}

/// The epilogue of this wave's part of the block at `row0, col0` of group `g`: C (bf16), or
/// with `PARTIAL` split `split`'s f32 partials laid out like it. The LDS must be free.
#[inline(always)]
pub fn store<const WY: usize, const WX: usize, const PARTIAL: bool>(
    args: &BlockScaledArgs,
    g: &Group,
    row0: usize,
    col0: usize,
    split: u32,
    acc: &Tiles16<TM, TN>,
) {
    let wave = readfirstlane(workitem_id_x() / 64) as usize;
    let lane = lane_id() as usize;
    let (wy, wx) = (wave / WX, wave % WX);
    let partial = PARTIAL;
    let elem = if partial { 4 } else { 2 };
    let split_off = if partial { split as usize * args.split_stride_c as usize } else { 0 };
    // SAFETY: this block's rows of C (or of the split's partials), sized by the host.
    let c_block = unsafe { (args.c as *mut u8).add((split_off + g.c + row0 * args.ldc as usize) * elem) };
    let target = epilogue::Target {
        c: c_block,
        residual: core::ptr::null(),
        m: g.m - row0,
        n: args.n as usize,
        ldc: args.ldc as usize,
        ldr: 0,
        vector_ok: args.flags & flags::VECTOR_OK != 0 && (c_block as usize) % 16 == 0 && (args.ldc as usize * elem) % 16 == 0,
    };
    let params = epilogue::Params {
        alpha: 1.0,
        beta: 0.0,
        bias: core::ptr::null(),
        out_type: out_type::BF16,
        activation: 0,
        flags: if partial { gemm_flags::PARTIAL } else { 0 },
    };
    let strips = LdsArena::new().take::<f32>(WY * WX * epilogue::STRIP_FLOATS);
    let strip = strips.sub(wave * epilogue::STRIP_FLOATS, epilogue::STRIP_FLOATS);
    epilogue::store(&params, &target, acc, strip, wy * TM * 16, col0 + wx * TN * 16, lane);
}
