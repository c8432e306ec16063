//! The decode GEMV of one activation row: `y = x W^T` for `M = 1`, 16-bit activations, with
//! GEMM's per-element epilogue (bias, activation, residual, conversion).
//!
//! A decode step's projections are short launches whose time is the chain of one wave's
//! instructions, not the weights' bytes (SmolLM2's `576 x 576` output projection streams 207 KB
//! over 36 workgroups). The general GEMV ([`super::gemv`]) pays for its generality on that
//! chain: row blocks, several tiles per workgroup with loads running ahead across them, a
//! table of activation sums built in LDS from its own loads, an epilogue that loops over tiles
//! and rows with the output type and the flags tested per entry. This kernel keeps only what
//! one row needs, with the same device layout and the same per-group arithmetic
//! ([`super::gemv::group`]):
//!
//! - one tile (16 weight rows) per workgroup on the GPU (on the emulator's launch shape,
//!   tiles `x, x + grid, ..`: [`run`]), whose waves split K, as few chunks each as 8
//!   waves allow (the host's plan; a row's partial last chunk is a wave's alone); each wave's
//!   first chunk's weight and activation loads are its first vector instructions;
//! - a group's activation sums (formats with a minimum) come from the matrix cores
//!   (`x . 1`: two more MFMAs a group, on the activations already in registers), not from a
//!   table: no loads, no LDS, no waits of their own;
//! - the waves meet once in LDS (16 floats each: activation row 0 of the accumulators); after
//!   the barrier, the first wave's lanes add them in wave order and run the epilogue for the
//!   tile's outputs: GEMM's (the residual loaded before the K loop), SwiGLU's gate, or (the
//!   kernels with the norm) a fused QKV projection's rotary epilogue ([`rope_kv`]).
//!
//! `quant_gemv_one_norm_*` read the row's RMSNorm staged in LDS by the workgroup, as the
//! general GEMV's norm kernels ([`NormedRows`]). The host takes these kernels for `M = 1` with
//! f16 or bf16 activations when W has no more tiles than the GPU has compute units. Their sums
//! differ from the general GEMV's in their order only (both f32, of exact products).

use super::activations::{ActRows, GlobalRows, NormedRows};
use super::format::{Format, load_full_chunk, load_partial_chunk};
use super::gemv::{XWords, group, load_xs, magic};
use super::rope_kv;
use crate::abi::Bf16;
use crate::abi::quant::{self as abi, CHUNK_GROUPS, GEMV_MAX_WAVES, GROUP, QGemvArgs, TILE_ROWS, dtype, flags, gemv_staged_bytes};
use crate::dsl::dtype::{Chunked, Element};
use crate::dsl::ids::{ParkedArgs, kernarg_address, kernargs_at, workgroup_id_x, workgroup_size_x, workitem_id_x};
use crate::dsl::lds::{LdsArena, LdsSlice};
use crate::dsl::math;
use crate::dsl::mem::Buffer;
use crate::dsl::mfma::{mfma_16x16x16_bf16, mfma_16x16x16_f16};
use crate::dsl::simd::{Bf16x4, F16x4, F32x4, U32x4};
use crate::dsl::sync::barrier;
use crate::dsl::wave::{lane_id, readfirstlane};
use crate::kernels::gemm::epilogue::{self, Target};
use core::sync::atomic::{Ordering, compiler_fence};

/// Group `g`'s activation sums for the lane's accumulator entries (those of activation row 0
/// are the sum of the group's 32 activations; the other rows' are zero): `x . 1` on the matrix
/// cores, f32 sums of exact products.
#[inline(always)]
fn sums<const X: u32>(x: &XWords) -> F32x4 {
    let mut s = F32x4::splat(0.0);
    crate::unroll_max!(h < 2, 2 => {
        // SAFETY (transmutes): 8 bytes of 16-bit floats either way; 0x3C00 is f16 1.0 and
        // 0x3F80 bf16 1.0.
        if X == dtype::F16 {
            let xa: F16x4 = unsafe { core::mem::transmute([x[2 * h], x[2 * h + 1]]) };
            let ones: F16x4 = unsafe { core::mem::transmute([0x3C00_3C00u32; 2]) };
            s = mfma_16x16x16_f16(xa, ones, s);
        } else {
            let xa: Bf16x4 = unsafe { core::mem::transmute([x[2 * h], x[2 * h + 1]]) };
            let ones: Bf16x4 = unsafe { core::mem::transmute([0x3F80_3F80u32; 2]) };
            s = mfma_16x16x16_bf16(xa, ones, s);
        }
    });
    s
}

/// Adds the groups of one chunk (`NB` of them, in registers `r`, activations `xs`) to `acc`.
#[inline(always)]
fn chunk<F: Format, const X: u32, const NB: usize>(acc: &mut F32x4, r: &super::format::Regs, xs: &[XWords; CHUNK_GROUPS], mg: u32) {
    crate::unroll_max!(g < CHUNK_GROUPS, 8 => {
        if g < NB {
            let s = if F::HAS_MIN { sums::<X>(&xs[g]) } else { F32x4::splat(0.0) };
            group::<F, X>(acc, r, g, &xs[g], s, mg);
        }
    });
}

/// The lane's sums of the row's partial last chunk of tile `tile` (`NB` < 8 groups of a
/// 32-weight format, at byte `off` of `wb`; chunk `c` of the activations), and the residual's
/// bits ([`residual_bits`], loaded after the chunk). Makes the rows readable first (`ready`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn partial<F: Format, const X: u32, const ROPE: bool, R: ActRows, const FIRST: bool, const NB: usize>(
    a: &QGemvArgs,
    tile: u32,
    wb: &Buffer,
    off: u32,
    xb: &R,
    held: R::Held,
    ahead: rope_kv::Ahead,
    c: usize,
    part: usize,
    row: usize,
) -> (F32x4, u32, rope_kv::Fetched) {
    let mut acc = F32x4::splat(0.0);
    // SAFETY: the chunk holds NB groups inside W (or `off` is past it: zeros); the rows are
    // made readable before their reads, the activations' NB groups of chunk c lie inside K
    // (every lane reads row 0's, as in `run`); the arguments describe the residual.
    let (r, xs, residual, fetched) = unsafe {
        let r = load_partial_chunk::<F>(wb, off, NB, part, row);
        let (residual, fetched) = (residual_bits(a, tile), rope_tables::<ROPE>(a, tile, ahead));
        ready::<FIRST, R>(xb, a, held);
        (r, load_xs::<F, X, R>(xb, 0, c, NB, part), residual, fetched)
    };
    chunk::<F, X, NB>(&mut acc, &r, &xs, magic());
    (acc, residual, fetched)
}

/// The workgroup's tiles for activations of type `X` read from `xb` (`held` what the kernel
/// loaded for them ahead: [`NormedRows::issue`]; `ahead` the rotary epilogue's first loads
/// when `ROPE`): per tile ([`one_tile`]), every wave's sum of its chunks, then the outputs.
///
/// On the GPU's launch shape a workgroup has one tile (the host's grid is the tiles). On a
/// shape with fewer workgroups (the emulator's) it takes tiles `x, x + grid, ..` in turn on
/// the rows made readable once: per tile, the norm staged again was most of the emulator's
/// time on a decode step's normed projections. Every tile's bits are the same either way. The
/// two are separate copies of the tile's code: followed by the loop, the one tile's code
/// issued its first chunk's loads after the norm (`Q4_1 1x3072x576 norm` 4492 -> 4604 modeled
/// cycles), and one loop for both kept the norm's state live across it, which spilled. The
/// copy still costs the GPU's path some 40 modeled cycles (4532 against 4492 without it).
#[inline(always)]
fn run<F: Format, const X: u32, const ROPE: bool, R: ActRows>(
    a: &QGemvArgs,
    xb: R,
    held: R::Held,
    ahead: rope_kv::Ahead,
    lds: Lds,
    remake: impl Fn(&QGemvArgs) -> R,
) {
    let wave = readfirstlane(workitem_id_x() / 64);
    let waves = workgroup_size_x() / 64;
    let first = workgroup_id_x();
    if first + a.grid_x.max(1) >= a.n.div_ceil(TILE_ROWS as u32) {
        one_tile::<F, X, ROPE, R, true>(a, &xb, held, ahead, lds, wave, waves, first);
        return;
    }
    // SAFETY: every wave makes the rows readable once, with what `issue` loaded.
    unsafe { xb.finish(a, held, LdsSlice::empty()) };
    // The arguments are read again per tile, the loop's state parked ([`ParkedArgs`]) and the
    // rows' description and the rotary epilogue's first loads made again from them: held
    // across a tile, they spilled.
    let mut state = ParkedArgs::new([wave, waves, first]);
    loop {
        // SAFETY: the kernel's argument struct.
        let (args, [wave, waves, tile]) = unsafe { state.take::<QGemvArgs>() };
        let a = QGemvArgs { m: 1, ..args };
        let (xb, ahead) = (remake(&a), rope_ahead::<ROPE>(&a));
        one_tile::<F, X, ROPE, R, false>(&a, &xb, held, ahead, lds, wave, waves, tile);
        let next = tile + a.grid_x.max(1);
        if next >= a.n.div_ceil(TILE_ROWS as u32) {
            break;
        }
        state.put(2, next);
        // The first wave has read the waves' slots (and, with the rotary epilogue, the
        // tile's results) before the next tile's writes.
        barrier();
    }
}

/// Tile `tile` of the workgroup: the sum of wave `wave`'s chunks (of `waves`), then the tile's
/// outputs ([`store`]). `FIRST`: the workgroup's first tile, which makes the rows readable.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn one_tile<F: Format, const X: u32, const ROPE: bool, R: ActRows, const FIRST: bool>(
    a: &QGemvArgs,
    xb: &R,
    held: R::Held,
    ahead: rope_kv::Ahead,
    lds: Lds,
    wave: u32,
    waves: u32,
    tile: u32,
) {
    let lane = lane_id() as usize;
    let (part, row) = (lane / TILE_ROWS, lane % TILE_ROWS);
    // Every lane reads row 0 (the lanes of a piece the same bytes: one broadcast), so the
    // MFMAs' other rows, whose outputs are never stored, repeat row 0: the emulator then
    // computes only row 0 of each (`emu`'s `mfma::simd::core`), which zero rows would not
    // allow.
    let row_off = 0;
    let kquant = const { abi::block_elems(F::F) == abi::CHUNK };
    let k = a.k;
    let chunks = (k / GROUP as u32).div_ceil(CHUNK_GROUPS as u32);
    let full_chunks = k / abi::CHUNK as u32;
    // Waves take `chunks_per_wave` full chunks each; a row's partial last chunk is the last
    // wave's alone (as the general GEMV's `setup`).
    let per = a.chunks_per_wave;
    let (c0, c1) = if full_chunks < chunks && wave == waves - 1 {
        (full_chunks, chunks)
    } else {
        ((wave * per).min(full_chunks), ((wave + 1) * per).min(full_chunks))
    };
    let f_end = c1.min(full_chunks);
    let tiles = a.n.div_ceil(TILE_ROWS as u32);
    let tile_bytes = abi::tile_bytes(F::F, k as usize) as u32;
    let full = abi::chunk_bytes(F::F, CHUNK_GROUPS) as u32;
    // W as one range-checked buffer (the host keeps it under 4 GiB): past the wave's
    // chunks, or for a workgroup past the tiles, loads read zeros.
    let wb = Buffer::new(a.w, tiles * tile_bytes);
    let base = tile * tile_bytes;
    // A wave holds full chunks or the row's partial last chunk, never both: each path
    // issues its own loads first (a wave of the partial chunk that issued the full path's
    // loads for nothing waited for them before its own).
    let (acc, residual, fetched) = if c0 < f_end {
        let at = |c: u32| if c < f_end { base + c * full } else { Buffer::PAST };
        let mg = magic();
        let mut acc = F32x4::splat(0.0);
        // One chunk's loads ahead, unconditionally (past the wave's chunks they read
        // zeros; a load under a branch waits where the branch joins), unrolled by two so
        // that the register sets swap roles instead of being copied at the back edge (a
        // copy waits for the loads).
        // SAFETY (loads): offsets inside W or past it; chunks of activations inside K.
        let mut regs = unsafe { load_full_chunk::<F>(&wb, at(c0), part, row) };
        // Global rows' loads next, then the residual's; staged rows are read once the
        // norm has written them (`ready`, which waits for their loads and the residual's).
        // SAFETY: the arguments describe the residual (flags::RESIDUAL), and the rows.
        let (mut xs, residual, fetched) = unsafe {
            let xs = if R::STAGED { [[0u32; 8]; CHUNK_GROUPS] } else { load_xs::<F, X, R>(xb, row_off, c0 as usize, CHUNK_GROUPS, part) };
            let (residual, fetched) = (residual_bits(a, tile), rope_tables::<ROPE>(a, tile, ahead));
            ready::<FIRST, R>(xb, a, held);
            (if R::STAGED { load_xs::<F, X, R>(xb, row_off, c0 as usize, CHUNK_GROUPS, part) } else { xs }, residual, fetched)
        };
        let (mut regs_b, mut xs_b);
        let mut c = c0;
        macro_rules! step {
            ($cur_r:ident, $cur_x:ident, $nxt_r:ident, $nxt_x:ident) => {{
                // SAFETY: as above.
                $nxt_r = unsafe { load_full_chunk::<F>(&wb, at(c + 1), part, row) };
                $nxt_x = unsafe { load_xs::<F, X, R>(xb, row_off, (c + 1).min(f_end - 1) as usize, CHUNK_GROUPS, part) };
                chunk::<F, X, CHUNK_GROUPS>(&mut acc, &$cur_r, &$cur_x, mg);
                c += 1;
            }};
        }
        loop {
            step!(regs, xs, regs_b, xs_b);
            if c >= f_end {
                break;
            }
            step!(regs_b, xs_b, regs, xs);
            if c >= f_end {
                break;
            }
        }
        (acc, residual, fetched)
    } else if !kquant && c1 > full_chunks {
        // The k-quants' chunks are whole super-blocks: no partial chunks (a constant, so
        // that their kernels have no such path).
        let off = base + full_chunks * full;
        let fc = full_chunks as usize;
        macro_rules! partial {
            ($($nb:literal)*) => {
                match abi::tail_groups(k as usize) {
                    $($nb => partial::<F, X, ROPE, R, FIRST, $nb>(a, tile, &wb, off, xb, held, ahead, fc, part, row),)*
                    // SAFETY: as `partial`'s.
                    _ => unsafe {
                        let (residual, fetched) = (residual_bits(a, tile), rope_tables::<ROPE>(a, tile, ahead));
                        ready::<FIRST, R>(xb, a, held);
                        (F32x4::splat(0.0), residual, fetched)
                    },
                }
            };
        }
        partial!(1 2 3 4 5 6 7)
    } else {
        // SAFETY: as above.
        unsafe {
            let (residual, fetched) = (residual_bits(a, tile), rope_tables::<ROPE>(a, tile, ahead));
            ready::<FIRST, R>(xb, a, held);
            (F32x4::splat(0.0), residual, fetched)
        }
    };
    store::<ROPE>(a, tile, wave as usize, waves as usize, acc, lds, residual, fetched);
}

/// Makes the rows readable ([`ActRows::finish`]) on the workgroup's first tile (`FIRST`); the
/// later tiles read what it staged.
///
/// # Safety
/// As `finish`'s: every wave calls it on its first tile, with what `issue` loaded.
#[inline(always)]
unsafe fn ready<const FIRST: bool, R: ActRows>(xb: &R, a: &QGemvArgs, held: R::Held) {
    if FIRST {
        // SAFETY: as the caller's.
        unsafe { xb.finish(a, held, LdsSlice::empty()) };
    }
}

/// The waves' sums meet in `red` (a slot of 16 floats per wave a workgroup can have; the slots
/// of waves it does not have hold +0.0, so that the reader reads all of them at constant
/// offsets with one wait); the first wave's lanes add them in wave order (deterministic) and
/// store the tile's outputs: with the rotary epilogue (flags::ROPE_KV) the sums go to the
/// tile's results in LDS and the wave's first lanes run [`rope_kv::epilogue`] (`fetched`
/// what they loaded for it before the K loop); with SwiGLU's gate (flags::SWIGLU) lanes 0..8
/// store `silu(gate) * up` of tile rows `i` and `8 + i`; else lanes 0..16 store through
/// GEMM's epilogue, adding the `residual` bits loaded before the K loop (16-bit outputs) or
/// loading it here (f32).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn store<const ROPE: bool>(
    a: &QGemvArgs,
    tile: u32,
    wave: usize,
    waves: usize,
    acc: F32x4,
    lds: Lds,
    residual: u32,
    fetched: rope_kv::Fetched,
) {
    const MAX: usize = GEMV_MAX_WAVES as usize;
    let red = lds.red;
    let lane = lane_id() as usize;
    if lane < TILE_ROWS {
        // SAFETY: this wave's slot, and slots no wave writes, inside the region.
        unsafe {
            red.write(wave * TILE_ROWS + lane, acc.to_array()[0]);
            let mut slot = wave + waves;
            while slot < MAX {
                red.write(slot * TILE_ROWS + lane, 0.0);
                slot += waves;
            }
        }
    }
    barrier();
    // The sum of tile row `i` (< 16), in wave order.
    let total = |i: usize| {
        let mut x = [0.0f32; MAX];
        crate::unroll_max!(w < MAX, 8 => {
            // SAFETY: written before the barrier.
            x[w] = unsafe { red.read(w * TILE_ROWS + i) };
        });
        let mut sum = 0.0f32;
        crate::unroll_max!(w < MAX, 8 => {
            sum += x[w];
        });
        sum
    };
    if wave != 0 {
        return;
    }
    if ROPE && a.flags & flags::ROPE_KV != 0 {
        if lane < TILE_ROWS {
            // SAFETY: inside the tile's results (16 floats: activation row 0).
            unsafe { lds.results.write(lane, total(lane)) };
        }
        // Read by this wave's own lanes only (the epilogue's entries, 8 pairs of the one
        // row, are its first 8 threads'): LDS is in order within a wave; this keeps the
        // compiler from moving the reads above the writes.
        compiler_fence(Ordering::SeqCst);
        // Its arguments read again, here: held from the kernel's entry, a dozen scalar
        // registers across the K loop spilled.
        // SAFETY: the kernel's own kernarg segment and argument struct; with ROPE_KV the host
        // gives the rotary epilogue its buffers; the results hold the tile's sums (row 0,
        // `ti * 256 + mi * 16 + n` with ti = mi = 0).
        unsafe {
            let r = QGemvArgs { m: 1, ..kernargs_at::<QGemvArgs>(kernarg_address()) };
            rope_kv::epilogue(&r, tile, r.grid_x.max(1), 1, lds.results, fetched)
        };
        return;
    }
    if a.flags & flags::SWIGLU != 0 {
        let col = tile as usize * (TILE_ROWS / 2) + lane;
        if lane < TILE_ROWS / 2 && col < a.n as usize / 2 {
            let (g, u) = (total(lane), total(lane + TILE_ROWS / 2));
            // SAFETY: col < n / 2: inside y's row.
            unsafe { epilogue::store_out(a.y, a.out_type, col, math::silu(g) * u) };
        }
        return;
    }
    let col = tile as usize * TILE_ROWS + lane;
    if lane < TILE_ROWS && col < a.n as usize {
        let sum = total(lane);
        let p = super::epilogue_params(a.bias, a.out_type, a.activation, a.flags);
        // The residual goes in last, as `epilogue::element` adds it.
        let params = epilogue::Params { flags: p.flags & !flags::RESIDUAL, ..p };
        let target = Target { c: a.y, residual: a.residual, m: 1, n: a.n as usize, ldc: 0, ldr: 0, vector_ok: false };
        let mut y = if epilogue::linear(&params) {
            epilogue::element_linear(&params, &target, sum, 0, col)
        } else {
            epilogue::element(&params, &target, sum, 0, col)
        };
        if a.flags & flags::RESIDUAL != 0 {
            y += if a.out_type == dtype::F32 {
                // SAFETY: col < n: inside the residual row.
                unsafe { epilogue::load_out(a.residual, a.out_type, col) }
            } else {
                epilogue::out_bits_to_f32(a.out_type, residual)
            };
        }
        // SAFETY: col < n: inside y's row.
        unsafe { epilogue::store_out(a.y, a.out_type, col, y) };
    }
}

/// The workgroup's LDS: the waves' slots of sums, and the tile's results for the rotary
/// epilogue (16 floats, its `ti * 256 + mi * 16 + n` layout at tile and row 0).
#[derive(Clone, Copy)]
struct Lds {
    red: LdsSlice<f32>,
    results: LdsSlice<f32>,
}

impl Lds {
    /// Carves them from the start of the launch's LDS (`abi::quant::GEMV_ONE_LDS_BYTES`),
    /// leaving the arena after them.
    #[inline(always)]
    fn take(arena: &mut LdsArena) -> Lds {
        let red = arena.take::<f32>(GEMV_MAX_WAVES as usize * TILE_ROWS);
        Lds { red, results: arena.take::<f32>(TILE_ROWS) }
    }
}

/// The rotary epilogue's first loads for the thread's entry (flags::ROPE_KV in a kernel with
/// the epilogue, `ROPE`; nothing otherwise), issued at the kernel's entry: the tables' loads
/// depend on them. Only the kernels with the norm have the epilogue (a fused QKV projection
/// follows a norm): in the plain ones, its flag's tests and the epilogue's code cost some 100
/// modeled cycles (`Q4_1 1x576x576 residual` 3141 -> 3241).
#[inline(always)]
fn rope_ahead<const ROPE: bool>(a: &QGemvArgs) -> rope_kv::Ahead {
    if ROPE && a.flags & flags::ROPE_KV != 0 {
        // SAFETY: with ROPE_KV the arguments describe the rope buffers.
        unsafe { rope_kv::ahead(a, 1, workitem_id_x()) }
    } else {
        rope_kv::Ahead::NONE
    }
}

/// The rotary tables' loads for the thread's entry (flags::ROPE_KV; nothing otherwise),
/// after the first chunk's loads.
///
/// # Safety
/// With ROPE_KV the arguments describe the rope buffers; `ahead` is [`rope_ahead`]'s.
#[inline(always)]
unsafe fn rope_tables<const ROPE: bool>(a: &QGemvArgs, tile: u32, ahead: rope_kv::Ahead) -> rope_kv::Fetched {
    if ROPE && a.flags & flags::ROPE_KV != 0 {
        // SAFETY: as the caller's.
        unsafe { rope_kv::tables(a, tile, a.grid_x.max(1), 1, workitem_id_x(), ahead) }
    } else {
        rope_kv::Fetched::NONE
    }
}

/// The bits of the residual of the lane's output (lanes 0..16 with flags::RESIDUAL and a
/// 16-bit output type; f32 outputs load theirs in the epilogue), issued after the first
/// chunk's loads and used only in the epilogue. Every lane loads, from the residual or from
/// `x` (a lane without an output reads the first element): a load under a branch, even a
/// uniform one, waits where the branch joins.
///
/// # Safety
/// With flags::RESIDUAL, `a.residual` holds the row's `n` elements of the output type.
#[inline(always)]
unsafe fn residual_bits(a: &QGemvArgs, tile: u32) -> u32 {
    let lane = lane_id();
    let col = tile * TILE_ROWS as u32 + lane;
    let ok = a.flags & flags::RESIDUAL != 0 && a.out_type != dtype::F32 && lane < TILE_ROWS as u32 && col < a.n;
    let p = if ok { a.residual } else { a.x as *const u8 };
    // SAFETY: element `col` of the residual, or x's first.
    (unsafe { (p as *const u16).add(if ok { col as usize } else { 0 }).read() }) as u32
}

/// The `quant_gemv_one_*` kernel for format `F`: workgroup `x` computes outputs `16 x ..
/// 16 x + 16` (8 with SwiGLU) of the one activation row (`a.m` = 1, `a.x_type` f16 or bf16).
#[inline(always)]
pub fn gemv_one<F: Format>(a: QGemvArgs) {
    let a = QGemvArgs { m: 1, ..a };
    let lds = Lds::take(&mut LdsArena::new());
    // Row 0 alone (every lane reads it: `run`).
    let xb = GlobalRows::new(&a, 2);
    let remake = |a: &QGemvArgs| GlobalRows::new(a, 2);
    if a.x_type == dtype::BF16 {
        run::<F, { dtype::BF16 }, false, _>(&a, xb, (), rope_kv::Ahead::NONE, lds, remake);
    } else {
        run::<F, { dtype::F16 }, false, _>(&a, xb, (), rope_kv::Ahead::NONE, lds, remake);
    }
}

/// The `quant_gemv_one_norm_*` kernel for format `F` and activations of type `E` (f16 or bf16;
/// flags::RMS_NORM): as [`gemv_one`], on the RMSNorm of the row staged in LDS by the
/// workgroup ([`NormedRows`]: its waves share the row, their loads the kernel's first).
#[inline(always)]
pub fn gemv_one_norm<F: Format, E: Chunked>(a: QGemvArgs) {
    let a = QGemvArgs { m: 1, ..a };
    // The rotary epilogue's first loads go out first: the join of its flag's branch waits
    // for every load issued before it.
    let ahead = rope_ahead::<true>(&a);
    let place = NormedRows::<E>::place(&a);
    // SAFETY: the arguments describe the row and the norm's weight; every wave issues them once.
    let held = unsafe { NormedRows::<E>::issue(&a, place) };
    let mut arena = LdsArena::new();
    let lds = Lds::take(&mut arena);
    let staged = arena.take::<U32x4>(gemv_staged_bytes(F::F, 1, a.k, E::BYTES as u32) as usize / 16);
    let rows = NormedRows::<E>::new(&a, F::F, staged, place);
    let remake = |a: &QGemvArgs| NormedRows::<E>::new(a, F::F, staged, NormedRows::<E>::place(a));
    if E::CODE == Bf16::CODE {
        run::<F, { dtype::BF16 }, true, _>(&a, rows, held, ahead, lds, remake);
    } else {
        run::<F, { dtype::F16 }, true, _>(&a, rows, held, ahead, lds, remake);
    }
}
