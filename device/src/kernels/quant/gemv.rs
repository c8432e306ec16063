//! The decode GEMV / skinny GEMM: `y = x W^T` for up to 16 activation rows, `W` quantized.
//!
//! A workgroup owns one tile (16 weight rows) and splits its chunks of K between its waves. A
//! wave walks its chunks: lane `l` loads its piece of every slice (code part `l / 16` of row
//! `l % 16`; one 128-bit load per slice, the wave's loads 1 KiB contiguous) and the 8 activations
//! of activation row `l % 16` its codes pair with, and per group of 32 weights runs the matrix
//! cores on the codes themselves:
//!
//! - the codes, unsigned integers below 256 (minus the format's offset), are exact in f16 and
//!   bf16, so `C = x . u` over the group is an MFMA (`v_mfma_f32_16x16x16`, f32 accumulation,
//!   products exact) with the activations as A (rows m) and the codes as B (columns n);
//! - the group's scale is per weight row, which is the accumulator's column, so it applies
//!   after the MFMA: `acc += a * C` (per half for `Q6_K`, whose scales cover 16 weights), and for
//!   formats with a minimum `acc += b * X`, `X` the group's activation sums (an MFMA with B = 1).
//!
//! The matrix cores cost the same for 1 and for 16 activation rows, which is the point: the
//! time of a memory-bound GEMV should not grow with the decode batch. Activations: f16 feed the
//! f16 MFMA, bf16 the bf16 MFMA, and f32 are split exactly into three bf16 terms
//! (`x = hi + mid + lo` by truncation), three bf16 MFMAs each.
//!
//! The waves' partial sums meet in LDS; the workgroup adds them in wave order (deterministic)
//! and runs GEMM's per-element epilogue (bias, activation, residual, conversion), SwiGLU's
//! gate, or a fused QKV projection's rotary embedding and KV-cache write ([`rope_kv`]).

use super::activations::{ActRows, GlobalRows, NormedRows};
use super::format::{Format, Regs, load_full_chunk, load_partial_chunk};
use super::rope_kv;
use crate::abi::Bf16;
use crate::abi::quant::{
    self as abi, CHUNK_GROUPS, GEMV_MAX_WAVES, GEMV_SUMS_STRIDE, GROUP, QGemvArgs, TILE_ROWS, dtype, element, flags, gemv_staged_bytes,
    split_halves,
};
use crate::dsl::dtype::{Chunked, Element};
use crate::dsl::ids::{kernarg_address, kernargs_at, workgroup_id_x, workgroup_id_y, workgroup_size_x, workitem_id_x};
use crate::dsl::lds::{LdsArena, LdsSlice};
use crate::dsl::math::{self, F16_ONES, SmallDiv, dot2_f16};
use crate::dsl::mem::Buffer;
use crate::dsl::mfma::{mfma_16x16x16_bf16, mfma_16x16x16_f16};
use crate::dsl::simd::{Bf16x4, F16x4, F32x4, U32x4};
use crate::dsl::sync::barrier;
use crate::dsl::wave::{lane_id, readfirstlane, vector_copy};
use crate::kernels::gemm::epilogue::{self, Target};
use core::sync::atomic::{Ordering, compiler_fence};

/// The f16 bits of the integer `v`, `1024 <= v < 2048` (exponent 10, mantissa `v - 1024`).
const fn f16_int(v: u32) -> u16 {
    assert!(v >= 1024 && v < 2048);
    0x6400 | (v - 1024) as u16
}

/// Codes `4h..4h + 4` of the lane's part of group `g`, minus the format's offset, as f16
/// (exact): `0x6400 | u` is the f16 `1024 + u`; one packed subtraction of `1024 + OFFSET`.
/// `magic` is `0x6400_6400` held in a register (see [`magic`]).
#[inline(always)]
pub(super) fn codes_f16<F: Format>(r: &Regs, g: usize, h: usize, magic: u32) -> F16x4 {
    let p = [F::pair(r, g, 2 * h) | magic, F::pair(r, g, 2 * h + 1) | magic];
    // SAFETY: 8 bytes of f16 bits either way.
    let v: F16x4 = unsafe { core::mem::transmute(p) };
    let bias = f16::from_bits(const { f16_int(1024 + F::OFFSET) });
    // SAFETY: a lane-wise subtraction of two f16x4 vectors.
    unsafe { core::intrinsics::simd::simd_sub(v, F16x4::splat(bias)) }
}

/// `0x6400_6400` (two f16 1024.0) in a vector register the compiler cannot fold:
/// `(w & mask) | magic` then becomes one `v_and_or_b32`. gfx942's three-operand forms take no
/// literal constants and at most one scalar operand, so with both constants literal (or scalar)
/// LLVM emits an AND and an OR. So the constant goes through [`vector_copy`] (every quantized
/// kernel's workgroup is one-dimensional; a cross-lane move of the constant, which this
/// replaced, LLVM now folds back into a literal).
#[inline(always)]
pub(super) fn magic() -> u32 {
    vector_copy(0x6400_6400)
}

/// Codes `4h..4h + 4` of the lane's part of group `g`, minus the offset, as bf16 (exact: small
/// integers have no bits below bf16's 8).
#[inline(always)]
fn codes_bf16<F: Format>(r: &Regs, g: usize, h: usize) -> Bf16x4 {
    let mut w = [0u32; 2];
    crate::unroll_max!(i < 2, 2 => {
        let p = F::pair(r, g, 2 * h + i);
        let lo = ((p & 0xFFFF) as i32 - F::OFFSET as i32) as f32;
        let hi = ((p >> 16) as i32 - F::OFFSET as i32) as f32;
        w[i] = (lo.to_bits() >> 16) | (hi.to_bits() & 0xFFFF_0000);
    });
    // SAFETY: 8 bytes of bf16 bits either way.
    unsafe { core::mem::transmute(w) }
}

/// f32 `x` as `hi + mid + lo`, three bf16 values (truncation: each remainder is exact in f32 and
/// the last has at most 8 significant bits), for 4 values.
#[inline(always)]
fn split3(x: [u32; 4]) -> [Bf16x4; 3] {
    let mut t = [[0u32; 2]; 3];
    crate::unroll_max!(i < 4, 4 => {
        let v = f32::from_bits(x[i]);
        let hi = x[i] & 0xFFFF_0000;
        let r1 = v - f32::from_bits(hi);
        let mid = r1.to_bits() & 0xFFFF_0000;
        let r2 = r1 - f32::from_bits(mid);
        let parts = [hi >> 16, mid >> 16, r2.to_bits() >> 16];
        crate::unroll_max!(j < 3, 3 => {
            t[j][i / 2] |= parts[j] << (16 * (i % 2));
        });
    });
    // SAFETY: 8 bytes of bf16 bits either way.
    unsafe { [core::mem::transmute(t[0]), core::mem::transmute(t[1]), core::mem::transmute(t[2])] }
}

/// The activation words of one group for one lane: half `h` (codes `4h..4h + 4`) in words
/// `2h, 2h + 1` (16-bit types) or `4h..4h + 4` (f32).
pub(super) type XWords = [u32; 8];

/// Loads the lane's activations of group `g` of a chunk (its part's 8 weights of the group),
/// the lane's first activation of the chunk at byte `lane_at` of `xb`'s rows; rows past M read
/// as zero (or, staged, are never stored). The offsets from `lane_at` are constants, which the
/// loads take as their immediate offsets.
///
/// # Safety
/// `xb` is readable (`ActRows::finish` done); `lane_at` comes from [`load_xs`].
#[inline(always)]
unsafe fn load_x<F: Format, const X: u32, R: ActRows>(xb: &R, lane_at: u32, g: usize) -> XWords {
    let es = if X == dtype::F32 { 4 } else { 2 };
    let mut out = [0u32; 8];
    crate::unroll_max!(h < 2, 2 => {
        // (element(f, p, t) is element(f, p, 0) + element(f, 0, t).)
        let at = lane_at + ((GROUP * g + element(F::F, 0, 4 * h)) * es) as u32;
        // SAFETY: inside the activation rows (or past them: zeros), inside the chunk `lane_at`
        // was made safe for.
        unsafe {
            if X == dtype::F32 {
                let v = xb.b128(at);
                crate::unroll_max!(q < 4, 4 => { out[4 * h + q] = v[q]; });
            } else if !split_halves(F::F) && h == 0 {
                // Contiguous parts: both halves are one 16-byte run.
                let v = xb.b128(at);
                crate::unroll_max!(q < 4, 4 => { out[q] = v[q]; });
            } else if split_halves(F::F) {
                let v = xb.b64(at);
                out[2 * h] = v[0];
                out[2 * h + 1] = v[1];
            }
        }
    });
    out
}

/// The lane's activations of the `nb` groups of chunk `c` of the row at byte `row_off`.
///
/// # Safety
/// `xb` is readable; `nb` groups of chunk `c` are inside K, or the chunk is read for nothing
/// (a wave without full chunks loads chunk 0 ahead, unused).
#[inline(always)]
pub(super) unsafe fn load_xs<F: Format, const X: u32, R: ActRows>(
    xb: &R,
    row_off: u32,
    c: usize,
    nb: usize,
    part: usize,
) -> [XWords; CHUNK_GROUPS] {
    let es = if X == dtype::F32 { 4 } else { 2 };
    let chunk = (abi::CHUNK * es) as u32;
    // (The bytes of the groups read: a row's partial last chunk ends with the row.)
    let lane_at = xb.chunk_at(row_off + c as u32 * chunk, (nb * GROUP * es) as u32) + (element(F::F, part, 0) * es) as u32;
    let mut x = [[0u32; 8]; CHUNK_GROUPS];
    crate::unroll_max!(g < CHUNK_GROUPS, 8 => {
        if g < nb {
            // SAFETY: as above.
            x[g] = unsafe { load_x::<F, X, R>(xb, lane_at, g) };
        }
    });
    x
}

/// Adds group `g`'s contribution to the accumulators `acc` (C layout: register `e` of lane `l`
/// is activation row `4 (l / 16) + e`, weight row `l % 16`); `sums` are the group's activation
/// sums of the lane's 4 rows (formats with a minimum).
#[inline(always)]
pub(super) fn group<F: Format, const X: u32>(acc: &mut F32x4, r: &Regs, g: usize, x: &XWords, sums: F32x4, magic: u32) {
    let s = F::scale(r, g);
    let zero = F32x4::splat(0.0);
    // Per half h: the products with the codes (one C unless the halves' scales differ: Q6_K).
    let mut c = [zero; 2];
    crate::unroll_max!(h < 2, 2 => {
        let into = if split_halves(F::F) { h } else { 0 };
        if X == dtype::F16 {
            // SAFETY (transmute): 8 bytes of f16 bits.
            let xa: F16x4 = unsafe { core::mem::transmute([x[2 * h], x[2 * h + 1]]) };
            c[into] = mfma_16x16x16_f16(xa, codes_f16::<F>(r, g, h, magic), c[into]);
        } else {
            let terms: [Bf16x4; 3] = if X == dtype::BF16 {
                // SAFETY: 8 bytes of bf16 bits.
                let xa: Bf16x4 = unsafe { core::mem::transmute([x[2 * h], x[2 * h + 1]]) };
                [xa, xa, xa]
            } else {
                split3([x[4 * h], x[4 * h + 1], x[4 * h + 2], x[4 * h + 3]])
            };
            let n_terms = if X == dtype::BF16 { 1 } else { 3 };
            let codes = codes_bf16::<F>(r, g, h);
            crate::unroll_max!(j < 3, 3 => {
                if j < n_terms {
                    c[into] = mfma_16x16x16_bf16(terms[j], codes, c[into]);
                }
            });
        }
    });
    // acc += a * C (+ a1 * C1) (+ b * sums), two packed FMAs each.
    // SAFETY (simd_fma): lane-wise fused multiply-adds of f32x4 vectors.
    unsafe {
        use core::intrinsics::simd::simd_fma;
        let mut v = simd_fma(F32x4::splat(s.a0), c[0], *acc);
        if split_halves(F::F) {
            v = simd_fma(F32x4::splat(s.a1), c[1], v);
        }
        if F::HAS_MIN {
            v = simd_fma(F32x4::splat(s.b), sums, v);
        }
        *acc = v;
    }
}

/// Table tasks (one group of one activation row: a sum of 32 activations) a lane loads in the
/// straight-line part of a wave's table; more go through a loop after the weight loads.
const TABLE_ROUNDS: usize = 2;

/// The raw activations of table task `task` of a wave's `tasks` (one group of one activation
/// row, a sum of 32 activations: row `task % m`, group `g0 + task / m`, `tasks_of` dividing by
/// the block's `m` rows): 32 values, 4 words per 16-byte piece (2 pieces per 8 words for f32). A task
/// past the last reads nothing (an offset past the buffer).
///
/// # Safety
/// `xb` is global rows (staged rows come with their sums), readable.
#[inline(always)]
unsafe fn table_load<const X: u32, R: ActRows>(xb: &R, tasks_of: SmallDiv, g0: u32, task: u32, tasks: u32) -> [[u32; 4]; 8] {
    let es = if X == dtype::F32 { 4u32 } else { 2 };
    let (g, row) = tasks_of.div_rem(task);
    let at = if task < tasks { row * xb.pitch() + (g0 + g) * GROUP as u32 * es } else { Buffer::PAST };
    let mut raw = [[0u32; 4]; 8];
    crate::unroll_max!(q < 8, 8 => {
        if q < (if X == dtype::F32 { 8 } else { 4 }) {
            // SAFETY: inside the row, or past the buffer (zeros).
            raw[q] = unsafe { xb.b128(at + 16 * q as u32) };
        }
    });
    raw
}

/// The f32 sum of a task's 32 activations (left to right; f16 pairs through `v_dot2_f32_f16`).
#[inline(always)]
fn table_sum<const X: u32>(raw: &[[u32; 4]; 8]) -> f32 {
    let mut sum = 0.0f32;
    crate::unroll_max!(q < 8, 8 => {
        if q < (if X == dtype::F32 { 8 } else { 4 }) {
            crate::unroll_max!(e < 4, 4 => {
                let w = raw[q][e];
                if X == dtype::F32 {
                    sum += f32::from_bits(w);
                } else if X == dtype::BF16 {
                    sum += f32::from_bits(w << 16);
                    sum += f32::from_bits(w & 0xFFFF_0000);
                } else {
                    sum = dot2_f16(w, F16_ONES, sum);
                }
            });
        }
    });
    sum
}

/// The workgroup's tiles `first, first + stride, ..` (below `tiles`), the wave reducing chunks
/// `c0..c1` of each, activations of type `X`.
///
/// The loads run one chunk ahead across the whole sequence, tiles included: the next chunk's
/// loads (weights through a range-checked buffer over all of W, so that past the wave's last
/// chunk an out-of-range offset reads nothing; activations past K read another row or nothing)
/// go out before this chunk's arithmetic, unconditionally (a load under a branch makes LLVM wait
/// for all loads where the branch joins). A row's partial last chunk (32-weight formats with K
/// not a multiple of 256) is a wave's whole share ([`setup`]): that wave computes it per tile
/// and hands it to the tile's reduction like any wave's sum ([`partial_chunk`]). The table of
/// activation sums depends on the wave's groups only: it is built once. Each tile's sums are
/// reduced over the waves as it ends ([`reduce`]). `held` is what the staged rows' loads
/// brought ([`NormedRows::issue`]) and `ahead` the rotary epilogue's first loads
/// ([`rope_ahead`]) when the kernel issued them before its set-up (with staged rows), else
/// `None`: they go out here, first. Returns what the rotary epilogue
/// (flags::ROPE_KV) and the plain one (flags::RESIDUAL) fetched for the lane's first entry
/// before the K loop ([`rope_kv`], [`residual_ahead`]).
#[inline(always)]
fn run<F: Format, const X: u32, R: ActRows>(a: &QGemvArgs, xb: R, held: R::Held, ahead: Option<rope_kv::Ahead>, s: &Share) -> Prefetched {
    let Share { c0, c1, first, stride, table, tables, red, results, .. } = *s;
    let count = tile_count(a, first, stride);
    let rope = a.flags & flags::ROPE_KV != 0;
    // (Global rows issue it here, first: issued at the kernel's entry, its registers held
    // across the set-up put `quant_gemv_q4_k` at 170 VGPRs, two waves per SIMD, not three.)
    let ahead = ahead.unwrap_or_else(|| rope_ahead(a));
    let lane = lane_id() as usize;
    let (part, row) = (lane / TILE_ROWS, lane % TILE_ROWS);
    let k = a.k as usize;
    let chunks = (k / GROUP).div_ceil(CHUNK_GROUPS) as u32;
    let tail = abi::tail_groups(k) as u32;
    let full_chunks = if tail == CHUNK_GROUPS as u32 { chunks } else { chunks - 1 };
    let row_off = xb.row_offset(row as u32, a.m);
    let full = abi::chunk_bytes(F::F, CHUNK_GROUPS) as u32;
    let tile_bytes = abi::tile_bytes(F::F, k) as u32;
    let tiles = a.n.div_ceil(TILE_ROWS as u32);
    let tasks_of = SmallDiv::new(a.m);
    // The k-quants' chunks are whole super-blocks: no partial chunks (a constant, so that
    // their kernels have no such path).
    let kquant = const { abi::block_elems(F::F) == abi::CHUNK };

    // The wave's table of activation sums (formats with a minimum): for each of its groups
    // (from g0), the sums of the block's rows, GEMV_SUMS_STRIDE floats per group whatever the
    // block's rows (constant offsets in the loop); the lane reads its 4 rows' (rows past the
    // block read other rows' sums: their outputs are never stored).
    let mp = GEMV_SUMS_STRIDE as u32;
    let g0 = c0 * CHUNK_GROUPS as u32;
    let gw = (c1 * CHUNK_GROUPS as u32).min(a.k / GROUP as u32).saturating_sub(g0);
    // Group g of chunk c: the chunk's place in the table, then a constant offset per group
    // (which the read takes as its immediate offset; computed per group from the group's
    // index, it cost four instructions a group).
    // (`move`: captured by reference, their variables lived in scratch memory in the kernels
    // whose partial chunks take `sums` by reference.)
    let sums_at = move |c: u32, g: usize| ((c * CHUNK_GROUPS as u32 - g0) * mp + 4 * part as u32) as usize + g * mp as usize;
    // SAFETY (reads): inside the wave's table, written by this wave before.
    let sums = move |c: u32, g: usize| if F::HAS_MIN { unsafe { table.read_as::<F32x4>(sums_at(c, g)) } } else { F32x4::splat(0.0) };
    // (Staged rows come with their sums: `finish` writes every group's into the waves' tables.)
    let tasks = if F::HAS_MIN && !R::STAGED { a.m * gw } else { 0 };
    // f32 activations take one straight-line round (their raw words are twice as many).
    let rounds = if X == dtype::F32 { 1 } else { TABLE_ROUNDS };
    let fast = tasks <= 64 * rounds as u32;
    // The table's activations go out first (unconditionally: past the tasks, nothing is read),
    // so that their sums can wait for them alone while the weights are in flight. Staged rows
    // have no tasks: nothing to load.
    let lane32 = lane as u32;
    let t_raw: [[[u32; 4]; 8]; TABLE_ROUNDS] = core::array::from_fn(|r| {
        if r < rounds && !R::STAGED {
            // SAFETY: global rows need no `finish`.
            unsafe { table_load::<X, R>(&xb, tasks_of, g0, lane32 + 64 * r as u32, if fast { tasks } else { 0 }) }
        } else {
            [[0; 4]; 8]
        }
    });

    let mg = magic();
    let f_end = c1.min(full_chunks);
    // W as one buffer (the host keeps it under 4 GiB); the chunk of tile index `ti` (of this
    // workgroup's) and chunk `c`, or an offset past it when `ti` is past the last.
    let wb = Buffer::new(a.w, tiles * tile_bytes);
    let at = |ti: u32, c: u32| if ti < count { (first + ti * stride) * tile_bytes + c * full } else { Buffer::PAST };
    let has_full = c0 < f_end;
    // The first chunk's loads go out before the table is built, so their latency overlaps it.
    // SAFETY (loads): chunk offsets inside W or past it (zeros); activation offsets inside x's
    // rows or past them (zeros).
    let mut regs = unsafe { load_full_chunk::<F>(&wb, at(if has_full { 0 } else { count }, c0), part, row) };
    // The rotary tables' loads go out before the staged rows' norm, which waits for the rows
    // (loaded after `ahead`'s loads, so its wait covers theirs): issued after it, they were
    // still in flight where the K loop starts, and LLVM waits for every load there.
    // SAFETY: as for `ahead`.
    let fetched = if rope { unsafe { rope_kv::tables(a, first, stride, count, workitem_id_x(), ahead) } } else { rope_kv::Fetched::NONE };
    // SAFETY: as for `issue`; the tables hold GEMV_SUMS_STRIDE floats per group of K.
    unsafe { xb.finish(a, held, if F::HAS_MIN { tables } else { tables.sub(0, 0) }) };
    let mut xs = if X == dtype::F32 {
        [[0u32; 8]; CHUNK_GROUPS]
    } else {
        // (A wave without full chunks, whose first chunk may be a partial one, reads chunk 0
        // instead: inside K, and staged rows read no padding.)
        // SAFETY: as above.
        unsafe { load_xs::<F, X, R>(&xb, row_off, if has_full { c0 as usize } else { 0 }, CHUNK_GROUPS, part) }
    };
    // The residual of the lane's first output (flags::RESIDUAL), its latency behind the K
    // loop: loaded in the epilogue, it added a memory latency to the kernel's end (modeled
    // `Q4_1 1x576x1536 residual`, a decode step's down projection: 6093 cycles against 5329
    // without the residual). Here, after the first loads, which it would delay, and before
    // the activation sums, whose wait for their loads hides its address arithmetic (after
    // them it delayed the K loop). Under the flag's branch, so that the other GEMVs pay only
    // the test (4-76 modeled cycles on the registry's shapes; unconditional and after the
    // sums, 492 on the plain down projection).
    let residual = if a.flags & flags::RESIDUAL != 0 {
        // SAFETY: with RESIDUAL the arguments describe the residual rows.
        unsafe { residual_ahead(a, first, stride, count) }
    } else {
        Residual { bits: 0, loaded: 0 }
    };
    if F::HAS_MIN {
        let write = |task: u32, sum: f32| {
            if task < tasks {
                let (g, row) = tasks_of.div_rem(task);
                // SAFETY: inside the wave's table (host-sized: its groups * 16 floats).
                unsafe { table.write((g * mp + row) as usize, sum) };
            }
        };
        if fast {
            crate::unroll_max!(r < TABLE_ROUNDS, 2 => {
                if r < rounds && (64 * r as u32) < tasks {
                    write(lane32 + 64 * r as u32, table_sum::<X>(&t_raw[r]));
                }
            });
        } else {
            let mut task = lane32;
            while task < tasks {
                // SAFETY: xb covers the rows.
                let raw = unsafe { table_load::<X, R>(&xb, tasks_of, g0, task, tasks) };
                write(task, table_sum::<X>(&raw));
                task += 64;
            }
        }
        // The wave's own LDS writes complete before its reads (LDS is in order within a wave);
        // this keeps the compiler from moving the reads above them.
        compiler_fence(Ordering::SeqCst);
    }

    // The chunk sequence (tile index ti, chunk c), one chunk's loads ahead, unrolled by two so
    // that the two register sets swap roles instead of being copied at the back edge (LLVM
    // copies loop-carried registers: 44 moves per chunk). A tile's last chunk reduces the tile.
    let mut acc = F32x4::splat(0.0);
    let (mut ti, mut c) = (0u32, c0);
    let mut regs_b: Regs;
    let mut xs_b = [[0u32; 8]; CHUNK_GROUPS];
    macro_rules! step {
        ($cur_r:ident, $cur_x:ident, $nxt_r:ident, $nxt_x:ident) => {{
            // The next chunk: the following one of this tile, or the first of the next tile.
            let (nt, nc) = if c + 1 < f_end { (ti, c + 1) } else { (ti + 1, c0) };
            // SAFETY: as above.
            $nxt_r = unsafe { load_full_chunk::<F>(&wb, at(nt, nc), part, row) };
            if X == dtype::F32 {
                // f32 activations (twice the registers) are loaded per chunk, not a chunk ahead.
                // SAFETY: as above.
                $cur_x = unsafe { load_xs::<F, X, R>(&xb, row_off, c as usize, CHUNK_GROUPS, part) };
            } else {
                // SAFETY: as above.
                $nxt_x = unsafe { load_xs::<F, X, R>(&xb, row_off, nc as usize, CHUNK_GROUPS, part) };
            }
            crate::unroll_max!(g < CHUNK_GROUPS, 8 => {
                group::<F, X>(&mut acc, &$cur_r, g, &$cur_x[g], sums(c, g), mg);
            });
            if c + 1 == f_end {
                // (A select, not an index: an indexed pair of slices would live in scratch.)
                reduce(a, ti, acc, if ti % 2 == 0 { red[0] } else { red[1] }, results);
                acc = F32x4::splat(0.0);
                ti += 1;
                c = c0;
            } else {
                c += 1;
            }
        }};
    }
    if has_full {
        while ti < count {
            step!(regs, xs, regs_b, xs_b);
            if ti >= count {
                break;
            }
            step!(regs_b, xs_b, regs, xs);
        }
    } else {
        // No full chunks: the wave still takes part in every tile's reduction, with the row's
        // partial last chunk if it holds it (32-weight formats with K not a multiple of 256;
        // the last wave, which holds nothing else: `setup`) as its part of the sum, computed
        // while the other waves run their full chunks.
        let partial = !kquant && c1 > full_chunks;
        while ti < count {
            let off = (first + ti * stride) * tile_bytes + full_chunks * full;
            // The lane's place computed per tile, so that what depends on it stays in the loop:
            // LLVM hoisted every per-lane offset of the chunk and the reduction out of it, ~130
            // instructions before the first tile's loads, while this wave is the one the others
            // wait for at the tile's reduction. `ti >> 31` is 0 (a workgroup's tiles number
            // below 2^28), which LLVM cannot prove. Modeled: `Q4_1 1x576x576`, one tile a
            // workgroup, 4677 -> 4509 cycles; computed per tile, the offsets cost shapes with
            // several tiles a workgroup, `Q5_1 3x100x800` 4913 -> 5145. (The first tile peeled
            // off the loop instead spilled a scalar register and added 270 KB of code; a lane
            // permute in place of the shift also waited for LDS per tile, 5173.)
            let lane_i = lane + (ti >> 31) as usize;
            let (part_i, row_i) = (lane_i / TILE_ROWS, lane_i % TILE_ROWS);
            macro_rules! partial {
                ($($nb:literal)*) => {
                    match tail {
                        $($nb => partial_chunk::<F, X, R, $nb>(&wb, off, &xb, full_chunks, row_off, part_i, row_i, &sums),)*
                        _ => F32x4::splat(0.0),
                    }
                };
            }
            let acc = if partial { partial!(1 2 3 4 5 6 7) } else { F32x4::splat(0.0) };
            reduce(a, ti, acc, if ti % 2 == 0 { red[0] } else { red[1] }, results);
            ti += 1;
        }
    }
    Prefetched { rope: fetched, residual }
}

/// What a lane fetched before the K loop for its first output: the rotary epilogue's loads
/// ([`rope_kv::Fetched`]) and the residual ([`residual_ahead`]).
#[derive(Clone, Copy)]
struct Prefetched {
    rope: rope_kv::Fetched,
    residual: Residual,
}

/// The residual of a lane's first output, loaded before the K loop ([`residual_ahead`]) when
/// there is one (flags::RESIDUAL) of a 16-bit type.
#[derive(Clone, Copy)]
struct Residual {
    /// Its bits as the load gave them (zero-extended), untouched until the epilogue: anything
    /// computed from them before the K loop would wait for the load there.
    bits: u32,
    /// 1 when the lane loaded it, else 0. A value in a vector register: the epilogue's own test
    /// (its first entry an output, the type not f32) put one more scalar register across the
    /// K loop, which spilled.
    loaded: u32,
}

/// The plain epilogue's entries (every output of the workgroup's tiles): entry `idx` is entry
/// `idx % span` of tile index `idx / span`, `span` the entries per tile rounded up to a power
/// of two (a shift and a mask, where the exact count divided: a 64-bit division per entry).
#[derive(Clone, Copy)]
struct Outputs {
    shift: u32,
    /// log2 of the outputs per row of a tile: 16, or 8 with SwiGLU (gate row i with up row
    /// 8 + i). (A shift: divided by the run-time width, an entry took an integer division.)
    wshift: u32,
    /// Activation rows of the block (at least 1).
    rows: u32,
}

impl Outputs {
    /// The entries of the block's `a.m` rows.
    #[inline(always)]
    fn new(a: &QGemvArgs) -> Outputs {
        Outputs::of(a, a.m.max(1))
    }

    /// The entries of `rows` activation rows (at least 1) in `a`'s tiles.
    #[inline(always)]
    fn of(a: &QGemvArgs, rows: u32) -> Outputs {
        let wshift = if a.flags & flags::SWIGLU != 0 { 3 } else { 4 };
        const { assert!(TILE_ROWS == 16) };
        Outputs { shift: wshift + rows.next_power_of_two().trailing_zeros(), wshift, rows }
    }

    /// Outputs per row of a tile.
    #[inline(always)]
    fn width(&self) -> u32 {
        1 << self.wshift
    }

    /// One past the last entry of `count` tiles.
    #[inline(always)]
    fn end(&self, count: u32) -> u32 {
        count << self.shift
    }

    /// Entry `idx`: (tile index, index in the tile's span, activation row, output of the row).
    /// It is an output when its index in the span is below [`Outputs::span_end`] and its
    /// column inside N.
    #[inline(always)]
    fn at(&self, idx: u32) -> (u32, u32, u32, u32) {
        let (ti, r) = (idx >> self.shift, idx & ((1 << self.shift) - 1));
        (ti, r, r >> self.wshift, r & (self.width() - 1))
    }

    /// One past the last output's index in a tile's span: `rows * width`.
    #[inline(always)]
    fn span_end(&self) -> u32 {
        self.rows << self.wshift
    }
}

/// Issues the load of the residual of the lane's first entry of the plain epilogue
/// ([`epilogue_all`]: entry `workitem_id_x()`) when it is of a 16-bit type (f32 outputs load
/// theirs in the epilogue) and the lane has a first entry. The load goes out on every lane (a
/// lane without an entry reads the residual's first element, ignored): a load under a per-lane
/// branch makes LLVM wait for it where the branch joins, here before the K loop.
///
/// # Safety
/// flags::RESIDUAL: `a.residual` holds the block's `m` rows of `ldr` elements of the output
/// type (the last row's first `n`); `a` is the block's (after `setup`).
#[inline(always)]
unsafe fn residual_ahead(a: &QGemvArgs, first: u32, stride: u32, count: u32) -> Residual {
    // Everything per lane, from copies of the arguments in vector registers: computed from the
    // scalar ones, the entries' shift and the type's test would be merged with the epilogue's
    // and held in scalar registers across the K loop, which has none to spare (they spilled).
    let o = Outputs::of(a, vector_copy(a.m.max(1)));
    let idx = workitem_id_x();
    let (ti, r, mi, i) = o.at(idx);
    let col = (first + ti * stride) * o.width() + i;
    let ok = vector_copy(a.out_type) != dtype::F32 && idx < o.end(count) && r < o.span_end() && col < a.n;
    let at = if ok { mi as usize * vector_copy(a.ldr) as usize + col as usize } else { 0 };
    // SAFETY: the lane's element or the first, inside the residual either way.
    Residual { bits: unsafe { (a.residual as *const u16).add(at).read() } as u32, loaded: ok as u32 }
}

/// The sums of a row's partial last chunk (`NB` < 8 groups of a 32-weight format; the chunk at
/// byte `off` of `wb`) for the lane's four (activation row, weight row) entries. `NB` is a
/// constant (the caller dispatches on the launch's): every offset and group test then folds,
/// where a run-time count kept a dozen scalar registers live across the wave's tile loop.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn partial_chunk<F: Format, const X: u32, R: ActRows, const NB: usize>(
    wb: &Buffer,
    off: u32,
    xb: &R,
    full_chunks: u32,
    row_off: u32,
    part: usize,
    row: usize,
    sums: &impl Fn(u32, usize) -> F32x4,
) -> F32x4 {
    let mut acc = F32x4::splat(0.0);
    // SAFETY: the row's last chunk of the tile, of `NB` groups inside K.
    let (tregs, txs) =
        unsafe { (load_partial_chunk::<F>(wb, off, NB, part, row), load_xs::<F, X, R>(xb, row_off, full_chunks as usize, NB, part)) };
    crate::unroll_max!(g < CHUNK_GROUPS, 8 => {
        if g < NB {
            group::<F, X>(&mut acc, &tregs, g, &txs[g], sums(full_chunks, g), magic());
        }
    });
    acc
}

/// The waves' partial sums of the workgroup's tile `ti` meet in `red` (`[slot][e][lane]`, a slot
/// per wave up to `GEMV_MAX_WAVES`); after the barrier the workgroup adds them in wave order
/// (deterministic) into the tile's results (`results[ti * 256 + m * 16 + n]`). The caller
/// alternates two regions between tiles, so a fast wave's next tile cannot overwrite sums still
/// being read. The epilogue runs once all tiles are done ([`epilogue_all`]): inside the K loop
/// its registers would crowd the loop's.
#[inline(always)]
fn reduce(a: &QGemvArgs, ti: u32, acc: F32x4, red: LdsSlice<f32>, results: LdsSlice<f32>) {
    const MAX: usize = GEMV_MAX_WAVES as usize;
    let thread = workitem_id_x() as usize;
    let wave = thread / 64;
    let lane = lane_id() as usize;
    let waves = (workgroup_size_x() / 64) as usize;
    let v = acc.to_array();
    crate::unroll_max!(e < 4, 4 => {
        // SAFETY: this wave's slot of the region.
        unsafe { red.write((wave * 4 + e) * 64 + lane, v[e]) };
    });
    // The slots of waves the workgroup does not have hold +0.0 (wave w writes those of w +
    // waves, w + 2 waves, ..), so that every reader reads all of them at constant offsets
    // and adds them last, which leaves the sum as it is. Masking instead (offsets clamped to
    // the last wave's slot, the values to +0.0) took some forty instructions, which LLVM set
    // up before the K loop, on every short launch's critical path.
    let mut slot = wave + waves;
    while slot < MAX {
        crate::unroll_max!(e < 4, 4 => {
            // SAFETY: a slot no wave writes, inside the region (host-sized for MAX waves).
            unsafe { red.write((slot * 4 + e) * 64 + lane, 0.0) };
        });
        slot += waves;
    }
    barrier();
    // Every slot's value of an entry is read before any is added (one LDS wait, not one per
    // wave: modeled `Q4_1 1x4096x4096`, 8 waves, 9648 -> 9136 cycles).
    let mut t = thread;
    while t < a.m as usize * TILE_ROWS {
        let (mi, ni) = (t / TILE_ROWS, t % TILE_ROWS);
        let at = (mi % 4) * 64 + (mi / 4) * TILE_ROWS + ni;
        let mut x = [0.0f32; MAX];
        crate::unroll_max!(w < MAX, 8 => {
            // SAFETY: written before the barrier (a wave's sums, or +0.0).
            x[w] = unsafe { red.read(w * 256 + at) };
        });
        let mut sum = 0.0f32;
        crate::unroll_max!(w < MAX, 8 => {
            sum += x[w];
        });
        // SAFETY: inside the results (host-sized: 256 floats per tile).
        unsafe { results.write(ti as usize * 256 + t, sum) };
        t += waves * 64;
    }
}

/// GEMM's per-element epilogue (bias, activation, residual, conversion) of every tile's results
/// and the stores to `y`, after the last tile's reduction; `pre` is what the lane fetched for
/// its first entry before the K loop.
#[inline(always)]
fn epilogue_all(a: &QGemvArgs, first: u32, stride: u32, results: LdsSlice<f32>, pre: Prefetched) {
    barrier();
    if a.flags & flags::ROPE_KV != 0 {
        // Its arguments read again, here: loaded at the kernel's entry, they would hold a
        // dozen scalar registers across the K loop, which has none to spare.
        // SAFETY: the kernel's own kernarg segment and argument struct.
        let mut r = unsafe { kernargs_at::<QGemvArgs>(kernarg_address()) };
        to_block(&mut r);
        // SAFETY: the host gives ROPE_KV its buffers; the reductions wrote every tile's results.
        unsafe { rope_kv::epilogue(&r, first, stride, tile_count(&r, first, stride), results, pre.rope) };
        return;
    }
    let count = tile_count(a, first, stride);
    // One flat loop over every tile's entries, 32-bit ([`Outputs`]).
    let thread = workitem_id_x();
    let threads = workgroup_size_x();
    let (m, n) = (a.m as usize, a.n as usize);
    let params = super::epilogue_params(a.bias, a.out_type, a.activation, a.flags);
    let target = Target { c: a.y, residual: a.residual, m, n, ldc: a.ldy as usize, ldr: a.ldr as usize, vector_ok: false };
    let o = Outputs::new(a);
    let mut idx = thread;
    if a.flags & flags::SWIGLU != 0 {
        while idx < o.end(count) {
            let (ti, r, mi, i) = o.at(idx);
            if r < o.span_end() {
                let res = ti as usize * 256 + mi as usize * TILE_ROWS + i as usize;
                let col = (first + ti * stride) as usize * o.width() as usize + i as usize;
                // SAFETY: written by the reductions before the barrier (row mi of tile ti).
                let (g, u) = unsafe { (results.read(res), results.read(res + TILE_ROWS / 2)) };
                // SAFETY: mi < m, col < n / 2 (n a multiple of 16): inside y.
                unsafe { epilogue::store_out(a.y, a.out_type, mi as usize * target.ldc + col, math::silu(g) * u) };
            }
            idx += threads;
        }
        return;
    }
    // The residual goes in last, as `epilogue::element` adds it: for the lane's first entry
    // what it fetched before the K loop, if it did ([`residual_ahead`]), else loaded here.
    let params = epilogue::Params { flags: params.flags & !flags::RESIDUAL, ..params };
    // The projections a decode step runs (no bias, no activation, maybe the residual) take the
    // linear form (see `epilogue::element_linear`), the others the whole epilogue.
    if epilogue::linear(&params) {
        store_plain(a, &params, &target, o, count, first, stride, results, pre, epilogue::element_linear);
    } else {
        store_plain(a, &params, &target, o, count, first, stride, results, pre, epilogue::element);
    }
}

/// The plain epilogue's outputs ([`epilogue_all`] without SwiGLU or the rotary epilogue): every
/// output through `element` (`epilogue::element` or its linear form, `params` without the
/// residual), plus the residual (flags::RESIDUAL), stored to `y`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn store_plain(
    a: &QGemvArgs,
    params: &epilogue::Params,
    target: &Target,
    o: Outputs,
    count: u32,
    first: u32,
    stride: u32,
    results: LdsSlice<f32>,
    pre: Prefetched,
    element: impl Fn(&epilogue::Params, &Target, f32, usize, usize) -> f32,
) {
    let residual = a.flags & flags::RESIDUAL != 0;
    let (thread, threads) = (workitem_id_x(), workgroup_size_x());
    let mut idx = thread;
    while idx < o.end(count) {
        let (ti, r, mi, i) = o.at(idx);
        let (mi, col) = (mi as usize, (first + ti * stride) as usize * o.width() as usize + i as usize);
        if r < o.span_end() && col < a.n as usize {
            // SAFETY: written by the reductions before the barrier.
            let sum = unsafe { results.read(ti as usize * 256 + r as usize) };
            let mut y = element(params, target, sum, mi, col);
            if residual {
                y += if idx == thread && pre.residual.loaded != 0 {
                    epilogue::out_bits_to_f32(a.out_type, pre.residual.bits)
                } else {
                    // SAFETY: mi < m, col < n: inside the residual.
                    unsafe { epilogue::load_out(a.residual, a.out_type, mi * target.ldr + col) }
                };
            }
            // SAFETY: mi < m, col < n: inside y.
            unsafe { epilogue::store_out(a.y, a.out_type, mi * target.ldc + col, y) };
        }
        idx += threads;
    }
}

/// How many tiles the workgroup takes: `ceil((tiles - first) / stride)` for its first tile
/// `first < stride` (`grid_x`), which is `tiles_per_group` (`ceil(tiles / grid_x)`) or one less,
/// whichever puts the last inside the tiles: a comparison, where the division by the run-time
/// stride was some twenty scalar instructions on the prologue's critical path (twice: the
/// epilogue needs the count too). It is never more than `tiles_per_group`, which sizes the
/// results in LDS, whatever the arguments.
#[inline(always)]
fn tile_count(a: &QGemvArgs, first: u32, stride: u32) -> u32 {
    let tiles = a.n.div_ceil(TILE_ROWS as u32);
    let most = a.tiles_per_group;
    if most > 0 && first + (most - 1) * stride < tiles { most } else { most.saturating_sub(1) }
}

/// A workgroup's share of a GEMV launch, set up by [`setup`].
#[derive(Clone, Copy)]
struct Share {
    c0: u32,
    c1: u32,
    first: u32,
    stride: u32,
    /// The wave's table of activation sums.
    table: LdsSlice<f32>,
    /// All the waves' tables, back to back: one table of every group of K.
    tables: LdsSlice<f32>,
    red: [LdsSlice<f32>; 2],
    results: LdsSlice<f32>,
    /// The staged rows' LDS (RMS_NORM; empty otherwise).
    staged: LdsSlice<U32x4>,
}

/// Carves the LDS of `a`'s workgroup (`a` moved to its block of rows by [`to_block`]): two
/// regions of the waves' partial sums, the tiles' results, each wave's table of activation
/// sums, then (RMS_NORM) the staged rows; and the wave's share of K.
#[inline(always)]
fn setup<F: Format>(a: &QGemvArgs) -> Share {
    let wave = readfirstlane(workitem_id_x() / 64);
    let waves = workgroup_size_x() / 64;
    let chunks = (a.k / GROUP as u32).div_ceil(CHUNK_GROUPS as u32);
    let per = a.chunks_per_wave;
    let mut arena = LdsArena::new();
    // (A slot for every wave a workgroup can have: `reduce` reads them all.)
    let slots = GEMV_MAX_WAVES as usize * 4 * 64;
    let red = [arena.take::<f32>(slots), arena.take::<f32>(slots)];
    let results = arena.take::<f32>(a.tiles_per_group as usize * 256);
    // (Formats without a minimum have no table: the host sizes none.)
    let per_wave = if F::HAS_MIN { per as usize * CHUNK_GROUPS * GEMV_SUMS_STRIDE } else { 0 };
    let tables = arena.take::<f32>(waves as usize * per_wave);
    // Waves take `per` full chunks each; a row's partial last chunk (32-weight formats with K
    // not a multiple of 256) is the last wave's alone (the host adds a wave for it), so that it
    // runs beside the full chunks instead of after them.
    let full_chunks = a.k / (GROUP * CHUNK_GROUPS) as u32;
    let (c0, c1) = if full_chunks < chunks && wave == waves - 1 {
        (full_chunks, chunks)
    } else {
        ((wave * per).min(full_chunks), ((wave + 1) * per).min(full_chunks))
    };
    // A wave's table starts at its first group's place in one table of every group of K (where
    // staged rows write their sums).
    let table = tables.sub(c0 as usize * CHUNK_GROUPS * GEMV_SUMS_STRIDE, per_wave);
    let staged_len = if a.flags & flags::RMS_NORM != 0 { gemv_staged_bytes(F::F, a.m, a.k, 2) as usize / 16 } else { 0 };
    Share { c0, c1, first: workgroup_id_x(), stride: a.grid_x.max(1), table, tables, red, results, staged: arena.take::<U32x4>(staged_len) }
}

/// The rotary epilogue's first loads (flags::ROPE_KV; nothing otherwise), before any other:
/// its table loads depend on them and go out once the rows are in. With staged rows, ahead
/// of their loads too: the join of its flag's branch waits for every load issued before it
/// (the lanes' loads under it write registers the other path zeroes), which after the rows'
/// loads was a whole memory latency at the kernel's start.
#[inline(always)]
fn rope_ahead(a: &QGemvArgs) -> rope_kv::Ahead {
    if a.flags & flags::ROPE_KV != 0 {
        let count = tile_count(a, workgroup_id_x(), a.grid_x.max(1));
        // SAFETY: with ROPE_KV the arguments describe the rope buffers; `a` is the block's.
        unsafe { rope_kv::ahead(a, count, workitem_id_x()) }
    } else {
        rope_kv::Ahead::NONE
    }
}

/// Moves `a` to the workgroup's block of activation rows (a skinny GEMM with M > m_block
/// re-reads W per block): `x`, `y` and the residual to its first row, `m` to its rows.
#[inline(always)]
fn to_block(a: &mut QGemvArgs) {
    let m0 = (workgroup_id_y() * a.m_block) as usize;
    let (xs, os) = (if a.x_type == dtype::F32 { 4 } else { 2 }, if a.out_type == dtype::F32 { 4 } else { 2 });
    // SAFETY: the host launched ceil(m / m_block) row blocks; offsets inside x, y, residual.
    unsafe {
        a.x = a.x.add(m0 * a.ldx as usize * xs);
        a.y = a.y.add(m0 * a.ldy as usize * os);
        a.residual = a.residual.add(m0 * a.ldr as usize * os);
    }
    a.m = (a.m - m0 as u32).min(a.m_block);
}

/// The `quant_gemv_*` kernel for format `F`: workgroup (x, y) computes activation rows
/// `m_block * y ..` of tiles `x, x + grid_x, ..` (16 columns of `y` each).
#[inline(always)]
pub fn gemv<F: Format>(mut a: QGemvArgs) {
    to_block(&mut a);
    let s = setup::<F>(&a);
    let pre = match a.x_type {
        dtype::F16 => run::<F, { dtype::F16 }, _>(&a, GlobalRows::new(&a, 2), (), None, &s),
        dtype::BF16 => run::<F, { dtype::BF16 }, _>(&a, GlobalRows::new(&a, 2), (), None, &s),
        _ => run::<F, { dtype::F32 }, _>(&a, GlobalRows::new(&a, 4), (), None, &s),
    };
    epilogue_all(&a, s.first, s.stride, s.results, pre);
}

/// The `quant_gemv_norm_*` kernel for format `F` and activations of type `E` (f16 or bf16;
/// `flags::RMS_NORM`): as [`gemv`], on the RMSNorm of the workgroup's rows staged in LDS. One
/// kernel per activation type: as more paths of one kernel, their registers made the other
/// paths spill.
#[inline(always)]
pub fn gemv_norm<F: Format, E: Chunked>(mut a: QGemvArgs) {
    to_block(&mut a);
    let ahead = rope_ahead(&a);
    // The rows' loads go out next, before the LDS and the waves' shares are worked out: the
    // norm waits for them, and the K loop for the norm (modeled `Q4_1 1x3072x576 norm`, a
    // decode step's gate/up projection: 5600 cycles with them issued after that set-up, 5456
    // before it).
    let place = NormedRows::<E>::place(&a);
    // SAFETY: the arguments describe the buffers; every wave issues them once.
    let held = unsafe { NormedRows::<E>::issue(&a, place) };
    let s = setup::<F>(&a);
    let rows = NormedRows::<E>::new(&a, F::F, s.staged, place);
    let pre = if E::CODE == Bf16::CODE {
        run::<F, { dtype::BF16 }, _>(&a, rows, held, Some(ahead), &s)
    } else {
        run::<F, { dtype::F16 }, _>(&a, rows, held, Some(ahead), &s)
    };
    epilogue_all(&a, s.first, s.stride, s.results, pre);
}
