//! The prefill GEMM: `y = x W^T` for many activation rows, on the tile layer's pipeline with
//! the weight tiles dequantized into LDS.
//!
//! A workgroup computes a 128 x 64 block of `y` with two groups of 4 waves, each group taking
//! half of K's chunks through a K loop of its own; a group's waves are stacked along M, each 32
//! x 64 on 16x16 MFMAs (`Tiles16<2, 4>`). The K loop is the tile layer's ([`Pipeline`]):
//! K-tiles of 32 elements (64 bytes of f16/bf16 a row), two LDS stages of B per group, one step
//! per K-tile, in units of one chunk (8 steps, so each step's group of weights is a constant). A
//! K-tile of K is exactly one group of 32 weights. The producer (`QStaged`) moves the weights
//! as quantized chunks: each work-item of a group holds one 16-byte piece per slice of a chunk
//! (code part `(t / 16) % 4` of row `t % 16` of weight tile `t / 64`: every wave's loads are one
//! tile's contiguous KiB), loads the next chunk 7 steps before it is needed, and at each step
//! dequantizes its 8 weights of the step's group into the B stage, where the MFMA fragments read
//! them as the dense GEMM's: for bf16 activations the f32 weights of the dequantization kernel
//! rounded to nearest even; for f16 ones packed f16 arithmetic (`weights_f16`, 2 VALU
//! instructions a weight instead of 5). The activations skip LDS: each wave loads its own A
//! fragments from global memory, three K-tiles ahead ([`Mma`]). At the end the second group
//! hands its sums to the first through LDS, which adds them (in that order: deterministic) and
//! runs the epilogue. With few blocks the host splits K over grid z too (whole chunks): each
//! split writes its f32 sums, and the dense GEMM's split-K reduction adds them and runs the
//! epilogue (`ops::qmatmul::gemm_splits`).
//!
//! Why two groups: the 256 workgroups of the benchmark's shape (M = 512, N = K = 4096) fill
//! 256 of 304 CUs, one workgroup each; with one wave per SIMD, its own VALU work and waits sat
//! between its MFMAs (a step ~440 clocks against its MFMAs' 256). Two waves per SIMD, each on
//! its half of K, share the matrix core instead. The barriers are the workgroup's: both groups
//! run the same number (the shorter one meets the longer one's extra steps first), and group 1
//! dequantizes after each barrier where group 0 does before it (`Pipeline::run_as`), so that
//! one wave's dequantization runs beside the other's MFMAs, not both at once.
//!
//! Measured (modeled MI300X, `cargo xtask bench --filter "qmatmul Q4_K 512"`): 34.4 us, 675
//! TFLOP/s at the peak clock (the clock the targets are stated at: 52% of the bf16 peak, the
//! issue's target 50%), 38.2% in the report's "% roof" (the modeled clock under load); 40.5 us
//! before this layout. Modeled clocks of `cargo xtask profile qmatmul --shape "Q4_K
//! 512x4096x4096"`: 67,508 with one group of waves and A staged through LDS on 32x32 MFMAs (the
//! step's LDS traffic, 36 KiB or 288 clocks, outran its MFMAs' 256); 64,574 with A straight from
//! memory; 58,129 with two groups; 53,429 with group 1's producer after the barrier (MFMA busy
//! 61%); 52,664 with the A loads' clamp on the scalar unit; 53,460 with the split-K plumbing
//! (one split here; group 1 reaches the sums' barrier ~600 clocks later, not yet understood).
//! Tried and dropped: 64 x 64 blocks (512 workgroups, two per CU:
//! LDS-bound, 45 us); units of two chunks (LLVM moves all MFMAs of a basic block after its last
//! barrier: 270 VGPRs, 52 us); the dequantization issued between group 0's MFMAs with one group
//! of waves (ordered by `llvm.amdgcn.sched.group.barrier`: within noise), or scheduled with
//! them (the step's check keeps them in separate basic blocks: the same code); one copy of the
//! K loop for both groups, the producer's place a run-time flag (56,144 clocks against 52,664;
//! it would have saved 76 of the 204 KB the two copies add to the code object).
//!
//! Why dequantized weights on f16/bf16 MFMAs and not int8 activations (llama.cpp's MMQ): the
//! activations stay exactly what the caller gave (no per-block 8-bit quantization error) and the
//! dequantization is 8 weights per work-item per K-tile next to 16 MFMAs of 16 cycles per wave;
//! the int8 route (twice the MFMA rate) was not built, so this choice is not a measured one.

use super::dequant::weights;
use super::format::{Format, Regs, load_chunk, load_full_chunk};
use super::gemv::{codes_f16, magic};
use crate::abi::quant::{self as abi, CHUNK_GROUPS, GEMM_BLOCK_M, GEMM_BLOCK_N, GROUP, MAX_LANE_WORDS, QGemmArgs, TILE_ROWS, dtype};
use crate::abi::{Bf16, F16};
use crate::dsl::convert::f32_to_bf16;
use crate::dsl::ids::{kernarg_address, kernargs_at, workgroup_id_x, workgroup_id_y, workgroup_id_z, workitem_id_x};
use crate::dsl::lds::LdsArena;
use crate::dsl::mem::Buffer;
use crate::dsl::simd::{F16x4, F32x4, U32x2, U32x4};
use crate::dsl::sync::barrier;
use crate::dsl::wave::{lane_id, readfirstlane};
use crate::kernels::gemm::epilogue;
use crate::tile::lds::LdsTile;
use crate::tile::mma::{MmaInput, mma16};
use crate::tile::order;
use crate::tile::pipeline::{Consumer, Pipeline, Producer};
use crate::tile::reg::{RegTile, Tiles16};
use core::intrinsics::simd::{simd_fma, simd_mul};

/// A wave's accumulators: 32 x 64 on 16x16 MFMAs (whose A fragments are whole 64-byte lines of
/// 16 rows, so they load straight from global memory: see [`Mma`]).
type W = Tiles16<2, 4>;
/// Waves along M in a group.
const WY: usize = 4;
/// Groups of waves, each taking a share of K (whole chunks) through a pipeline of its own.
const GROUPS_K: usize = abi::GEMM_WAVES as usize / WY;
/// A's register ring: K-tile t's fragments in set t % 4, loaded 3 steps before their MFMAs.
const A_RING: usize = 4;
/// Steps between the loads of a K-tile's A fragments and its MFMAs.
const A_AHEAD: u32 = A_RING as u32 - 1;
/// Pipeline stages.
const STAGES: usize = 2;
/// Steps per unit of the hot loop: one chunk. The loop starts at K-tile 0 and runs whole units
/// (the tail too), so a step's position in the unit fixes its group in the chunk. (Units of two
/// chunks, with two register sets in fixed roles: LLVM then schedules all MFMAs of a chunk
/// after its last barrier, holding every fragment: 300 registers, measured.)
const UNIT: usize = CHUNK_GROUPS;

/// A wave's MFMAs on inputs `E` (f16 or bf16: the kernel runs one pipeline per type; choosing
/// the instruction per MFMA group at run time makes LLVM move the 32 accumulator registers
/// between the branches' allocations, 16 moves per group), its A fragments straight from
/// global memory.
///
/// Why A skips LDS: with the block's 256 work-items on 256 of 304 CUs (M = 512, N = 4096) each
/// SIMD has one wave, and the step's LDS traffic was its limit: 4 waves reading their A rows
/// and all 64 B rows, plus both stores, 36 KiB a step (288 LDS clocks against the MFMAs' 256).
/// A 16x16 tile's A fragment is chunk `l / 16` of row `l % 16` (GFX942.md), so a wave's load of
/// it is 16 whole 64-byte rows of the K-tile: the same global traffic as the staged copy
/// (every A row is one wave's), with no LDS store or read. Only B, which every wave reads
/// whole, goes through LDS.
struct Mma<E> {
    acc: W,
    /// B's fragments, by K-tile parity.
    b: [[U32x4; 4]; 2],
    /// A's fragments (16-row tiles 0 and 1 of the wave), K-tile t in set t % A_RING.
    a: [[U32x4; 2]; A_RING],
    /// x from the block's first row (range-checked).
    xb: Buffer,
    /// The lane's byte offset in `xb` per 16-row tile: its row (clamped to the last) and chunk.
    a_off: [u32; 2],
    /// The last K-tile.
    last_kt: u32,
    lane: usize,
    _e: core::marker::PhantomData<E>,
}

impl<E: MmaInput> Mma<E> {
    /// Loads K-tile `kt`'s A fragments (64 bytes a row) into ring set `set` (past the last
    /// K-tile, the last one again: loads nobody uses, kept unconditional so that LLVM counts them
    /// in order).
    #[inline(always)]
    fn load_a(&mut self, kt: u32, set: usize) {
        // (The clamp on the scalar unit: in a vector register, its result took a register an
        // MFMA had just used, and the hazard a 6-cycle s_nop.)
        let kb = kt.min(readfirstlane(self.last_kt)) * (GROUP * 2) as u32;
        crate::unroll_max!(i < 2, 2 => {
            // SAFETY: a row of the block's rows (clamped), inside K.
            self.a[set][i] = unsafe { self.xb.load_b128(self.a_off[i], kb) };
        });
    }
}

impl<E: MmaInput> Consumer for Mma<E> {
    #[inline(always)]
    unsafe fn read(&mut self, g: usize, slot: usize, _a: LdsTile, b: LdsTile, stage: usize) {
        // All of a K-tile's B fragments in group 0 (a 16x16 lane's chunk feeds both groups).
        if g != 0 {
            return;
        }
        let (r, q) = (self.lane % 16, self.lane / 16);
        crate::unroll_max!(j < 4, 4 => {
            // SAFETY: inside the stage (caller).
            self.b[slot][j] = unsafe { b.read(stage, 16 * j + r, q) };
        });
    }

    #[inline(always)]
    fn mma(&mut self, g: usize, slot: usize, j: usize, kt: u32, _last: bool) {
        // Group g: the wave's 16-row tile g against the 4 B tiles. Before group 0, the loads of
        // K-tile kt + 3 into the set K-tile kt - 1 used.
        if g == 0 {
            self.load_a(kt + A_AHEAD, (j + A_AHEAD as usize) % A_RING);
        }
        let a = self.a[j % A_RING][g];
        crate::unroll_max!(n < 4, 4 => {
            self.acc.0[g][n] = mma16::<E>(a, self.b[slot][n], self.acc.0[g][n]);
        });
    }
}

/// The work-item's 8 weights of group `g` as packed f16 (for f16 activations): the codes exact
/// in f16 (`gemv::codes_f16`), then one packed multiply by the group's scale (symmetric formats)
/// or fused multiply-add with its minimum, both rounded to f16 first. Why not the f32 weights
/// rounded to f16: that is 5 VALU instructions a weight against 2 here, and the dequantization
/// competes with the MFMAs for the wave's issue (measured: as many VALU cycles as MFMA cycles in
/// the main loop). The price is precision: the k-quants' scale `d * sc` and minimum `dmin * m`
/// round to f16 (half an ulp each, relative to the weight's two terms) before the weight's own
/// rounding; `Q4_0`, `Q5_0`, `Q8_0` (scale `d` exact in f16) get the f32 path's result exactly.
#[inline(always)]
fn weights_f16<F: Format>(r: &Regs, g: usize, magic: u32) -> [u32; 4] {
    let s = F::scale(r, g);
    let (a0, a1, b) = (s.a0 as f16, s.a1 as f16, s.b as f16);
    let mut out = [0u32; 4];
    crate::unroll_max!(h < 2, 2 => {
        let c = codes_f16::<F>(r, g, h, magic);
        let a = F16x4::splat(if h == 0 { a0 } else { a1 });
        // SAFETY: lane-wise f16x4 arithmetic.
        let w = unsafe { if F::HAS_MIN { simd_fma(c, a, F16x4::splat(b)) } else { simd_mul(c, a) } };
        // SAFETY: 8 bytes of f16 bits either way.
        let bits: [u32; 2] = unsafe { core::mem::transmute(w) };
        out[2 * h] = bits[0];
        out[2 * h + 1] = bits[1];
    });
    out
}

/// The producer of B: quantized chunks dequantized a group (one K-tile) per step into its LDS
/// stage (A skips LDS: [`Mma`]).
struct QStaged<F: Format> {
    lds_b: LdsTile,
    /// All of W (range-checked: past the layout, zeros).
    wb: Buffer,
    /// Byte offset of this work-item's weight tile.
    tile_off: u32,
    /// The tile's partial last chunk (32-weight formats with K not a multiple of 256), loaded
    /// once at the start: its pointer-based loads would keep a 64-bit address live in the loop.
    tail_regs: Regs,
    /// Bytes of a full chunk.
    full: u32,
    /// Full chunks of a row, and all chunks.
    full_chunks: u32,
    chunks: u32,
    /// The chunk being dequantized, and the next one's loads while they are in flight.
    cur: Regs,
    next: (Regs, bool),
    /// This work-item's code part and tile row, and its row of the B tile.
    part: usize,
    row: usize,
    brow: usize,
    /// f16 (else bf16) activations.
    half: bool,
    /// `gemv::magic()`: two f16 1024.0 in a register.
    magic: u32,
    _f: core::marker::PhantomData<F>,
}

impl<F: Format> QStaged<F> {
    /// The loads of chunk `c` of this work-item's tile, and whether it is the partial last
    /// chunk, whose registers are [`QStaged::tail_regs`] instead (see [`QStaged::chunk`]).
    ///
    /// The loads go out unconditionally: the partial last chunk's from [`Buffer::PAST`], which
    /// reads zeros (a chunk is at most 4.3 KiB, so its offsets do not wrap around), and a chunk
    /// past the last from where the next tile starts (or past W), unused. Loads under a branch
    /// make LLVM count none of them where the branch joins, so a later wait for older loads
    /// waited for these too (measured on the Q4_K prefill benchmark: a 380-clock wait per
    /// chunk; the kernel 70,740 -> 67,508 modeled clocks with this and the call outside the
    /// step's check).
    #[inline(always)]
    fn load_chunk_regs(&self, c: u32) -> (Regs, bool) {
        const { assert!(abi::chunk_bytes(F::F, CHUNK_GROUPS) < 65536, "a chunk's loads from Buffer::PAST must not wrap") };
        let full = c < self.full_chunks || self.full_chunks == self.chunks;
        let off = if full { self.tile_off + c * self.full } else { Buffer::PAST };
        // SAFETY: a full chunk of the tile, or past it (another tile's bytes, or zeros).
        (unsafe { load_full_chunk::<F>(&self.wb, off, self.part, self.row) }, !full && c < self.chunks)
    }

    /// The registers of a chunk from [`QStaged::load_chunk_regs`], chosen where they are used
    /// (a select next to the loads waits for them there).
    #[inline(always)]
    fn chunk(&self, (r, tail): (Regs, bool)) -> Regs {
        core::array::from_fn(|i| if tail { self.tail_regs[i] } else { r[i] })
    }

    /// Dequantizes group `g` (a constant) of the current chunk into stage `stage` of B: the work-item's 8 weights, rounded to the activations' type.
    ///
    /// # Safety
    /// Nobody reads the stage until the next barrier.
    #[inline(always)]
    unsafe fn dequant(&self, g: usize, stage: usize) {
        let p = if self.half {
            weights_f16::<F>(&self.cur, g, self.magic)
        } else {
            let w = weights::<F>(&self.cur, g);
            let h = |x: f32| f32_to_bf16(x).0 as u32;
            [h(w[0]) | h(w[1]) << 16, h(w[2]) | h(w[3]) << 16, h(w[4]) | h(w[5]) << 16, h(w[6]) | h(w[7]) << 16]
        };
        if abi::split_halves(F::F) {
            // Codes 0..4 are weights 4 part.., codes 4..8 weights 16 + 4 part..: two 8-byte
            // halves of the K-tile's rows.
            crate::unroll_max!(half < 2, 2 => {
                let e = 16 * half + 4 * self.part;
                let at = self.lds_b.index(stage, self.brow, e / 8) * 16 + (e % 8) * 2;
                // SAFETY: inside the stage (caller).
                unsafe { (self.lds_b.as_ptr().add(at) as *mut U32x2).write(U32x2::from_array([p[2 * half], p[2 * half + 1]])) };
            });
        } else {
            // Codes 0..8 are weights 8 part..: chunk `part` of the K-tile's row.
            // SAFETY: inside the stage (caller).
            unsafe { self.lds_b.write(stage, self.brow, self.part, U32x4::from_array(p)) };
        }
    }
}

impl<F: Format> Producer for QStaged<F> {
    const STAGES: usize = STAGES;
    /// Step kt dequantizes K-tile kt + 1.
    const AHEAD: u32 = 1;
    const HOT_PROLOGUE: bool = false;

    /// B's tile twice: A does not go through LDS ([`Mma`] reads only B).
    #[inline(always)]
    fn lds(&self) -> (LdsTile, LdsTile) {
        (self.lds_b, self.lds_b)
    }

    /// `kt0` is a chunk's first K-tile (the unit positions are K-tile numbers modulo `UNIT`).
    #[inline(always)]
    unsafe fn prologue(&mut self, kt0: u32, _kt1: u32, _full: u32, _hot: bool) {
        // Chunk 0, then group 0 into stage 0 (which waits for it here, before the loop:
        // registers of a load still in flight where the loop starts make LLVM wait for every
        // load (vmcnt(0)) at their first use in each iteration; measured: 8% of the time).
        // Unconditionally: after a branch around it, one path still has the load in flight.
        // (With no K-tile nobody reads the stage.)
        self.cur = self.chunk(self.load_chunk_regs(kt0 / CHUNK_GROUPS as u32));
        // SAFETY: caller.
        unsafe { self.dequant(0, 0) };
    }

    #[inline(always)]
    unsafe fn produce(&mut self, kt: u32, pos: usize, hot: bool, kt1: u32, _full: u32) {
        // K-tile t = kt + 1 into its stage; t is `pos + 1` modulo the unit, so its group g in
        // its chunk c is a constant.
        let t = kt + 1;
        let p1 = pos + 1;
        let stage = p1 % STAGES;
        let g = p1 % CHUNK_GROUPS;
        // A runtime check even in the hot loop (`hot` unused): the branch ends a basic block
        // per step, which keeps each step's MFMAs in it. In one block spanning the unit, LLVM
        // schedules all its MFMAs after the last barrier (measured: 270 registers, 1 wave per
        // SIMD, 52 us against 44 us on the Q4_K prefill benchmark).
        let _ = hot;
        if t < kt1 {
            if g == 0 {
                self.cur = self.chunk(self.next);
            }
            // SAFETY: the stage held K-tile kt - 1 (caller).
            unsafe { self.dequant(g, stage) };
        }
        // The next chunk is loaded at group 1 and becomes the current one at group 0 of the
        // next chunk, 7 steps later and in the same loop iteration: only `cur` lives across
        // the back edge, and its copy from `next` finds the loads complete. (Loaded at group 0
        // into a register set carried over the back edge, LLVM copies it there and the copy
        // waits for the loads at once: measured, 11% of the wave time.) Outside the check
        // above: see `load_chunk_regs`.
        if g == 1 {
            self.next = self.load_chunk_regs(t / CHUNK_GROUPS as u32 + 1);
        }
    }

    #[inline(always)]
    fn publish(&self) {
        barrier();
    }
}

/// The `quant_gemm_*` kernel for format `F`: one pipeline per activation type.
#[inline(always)]
pub fn gemm<F: Format>(a: QGemmArgs) {
    if a.x_type == dtype::F16 {
        run::<F, F16>(&a);
    } else {
        run::<F, Bf16>(&a);
    }
}

/// The kernel's body for activations of type `E`.
#[inline(always)]
fn run<F: Format, E: MmaInput>(a: &QGemmArgs) {
    let thread = workitem_id_x() as usize;
    let wave = readfirstlane(thread as u32 / 64) as usize;
    // The wave's group (its share of K) and its place in the group; the work-item's in it.
    let (group, gw, gt) = (wave / WY, wave % WY, thread % (WY * 64));
    let lane = lane_id() as usize;
    let (m, n, k) = (a.m as usize, a.n as usize, a.k as usize);
    let (bm, bn) = (GEMM_BLOCK_M as usize, GEMM_BLOCK_N as usize);
    let (bx, by) = order::block(workgroup_id_x(), workgroup_id_y(), n.div_ceil(bn) as u32, m.div_ceil(bm) as u32);
    let (row0, col0) = (by as usize * bm, bx as usize * bn);
    let k_tiles = (k / GROUP) as u32;
    let chunks = (k / GROUP).div_ceil(CHUNK_GROUPS) as u32;
    // This split's chunks c0 .. c1 (grid z; one split: all of them) and their K-tiles.
    let z = workgroup_id_z();
    let c0 = (z * a.split_chunks).min(chunks);
    let c1 = (c0 + a.split_chunks).min(chunks);
    let (s0, s1) = (c0 * CHUNK_GROUPS as u32, (c1 * CHUNK_GROUPS as u32).min(k_tiles));
    // Group 0 takes the first half of them (rounded down), group 1 the rest (with the partial
    // last chunk, if any): K-tiles kt0 .. kt1; `steps`, the longer group's count.
    let split = (s0 + ((c1 - c0) / GROUPS_K as u32) * CHUNK_GROUPS as u32).min(s1);
    let (kt0, kt1) = if group == 0 { (s0, split) } else { (split, s1) };
    let steps = (split - s0).max(s1 - split);
    let mut lds = LdsArena::new();
    let lds_b: [LdsTile; GROUPS_K] = core::array::from_fn(|_| LdsTile::new(&mut lds, bn, STAGES));

    // B: work-item t of a group dequantizes code part (t / 16) % 4 of row t % 16 of the block's
    // weight tile t / 64 (tiles past the layout's last read its last: their outputs are never
    // stored). Any permutation of (part, row) over a wave's lanes keeps each slice load one
    // whole KiB; Q6_K's parts write two 8-byte halves, served 16 lanes a phase, where rows r and
    // r + 8 land on the same 4 banks (the swizzle repeats every 8 rows): flipping the part's low
    // bit for rows 8..16 puts them on the other two of those banks, free of conflicts.
    let row = gt % TILE_ROWS;
    let flip = if abi::split_halves(F::F) { (row / 8) & 1 } else { 0 };
    let (tile_i, part) = (gt / 64, ((gt / TILE_ROWS) % 4) ^ flip);
    let tiles = n.div_ceil(TILE_ROWS);
    let tile = (col0 / TILE_ROWS + tile_i).min(tiles - 1);
    let tile_bytes = abi::tile_bytes(F::F, k);
    let tail = abi::tail_groups(k) as u32;
    let producer = QStaged::<F> {
        lds_b: if group == 0 { lds_b[0] } else { lds_b[1] },
        wb: Buffer::new(a.w, (tiles * tile_bytes) as u32),
        tile_off: (tile * tile_bytes) as u32,
        tail_regs: if tail < CHUNK_GROUPS as u32 {
            // SAFETY: the tile's last chunk, of `tail` groups.
            unsafe {
                load_chunk::<F>(
                    a.w.add(tile * tile_bytes + (chunks as usize - 1) * abi::chunk_bytes(F::F, CHUNK_GROUPS)),
                    tail as usize,
                    part,
                    row,
                )
            }
        } else {
            [0; MAX_LANE_WORDS]
        },
        full: abi::chunk_bytes(F::F, CHUNK_GROUPS) as u32,
        full_chunks: if tail == CHUNK_GROUPS as u32 { chunks } else { chunks - 1 },
        chunks,
        cur: [0; MAX_LANE_WORDS],
        next: ([0; MAX_LANE_WORDS], false),
        part,
        row,
        brow: tile_i * TILE_ROWS + row,
        half: E::CODE == <F16 as crate::dsl::dtype::Element>::CODE,
        magic: magic(),
        _f: core::marker::PhantomData,
    };
    let a_row = gw * 32;
    // A: the lane's rows of its two 16-row tiles (rows past M read the last: their outputs are
    // never stored), chunk l / 16 of each K-tile. Row pitches of 16 bytes (host-checked).
    let (pitch, last) = (a.ldx as usize * 2, m.saturating_sub(row0).min(bm).max(1) - 1);
    // SAFETY: x holds m rows of ldx elements; the buffer covers the block's rows up to K.
    let xb = Buffer::new(unsafe { a.x.add(row0 * pitch) }, (last * pitch + k * 2) as u32);
    let a_off: [u32; 2] = core::array::from_fn(|i| ((a_row + 16 * i + lane % 16).min(last) * pitch + 16 * (lane / 16)) as u32);
    let mut acc = Mma::<E> {
        acc: W::zero(),
        b: [[U32x4::splat(0); 4]; 2],
        a: [[U32x4::splat(0); 2]; A_RING],
        xb,
        a_off,
        last_kt: k_tiles.saturating_sub(1),
        lane,
        _e: core::marker::PhantomData,
    };
    // The group's first K-tiles into their sets (the K loop loads the rest, A_AHEAD steps ahead).
    crate::unroll_max!(t < A_RING, 4 => {
        if t < A_AHEAD as usize {
            acc.load_a(kt0 + t as u32, t);
        }
    });
    // The shorter group first meets the longer one's extra barriers (a barrier is the whole
    // workgroup's: both must count the same; each group's stages are its own, so which of the
    // other's steps they pair with does not matter). Before the K loop, not after it: there,
    // the count lived through the loop in a scalar register, which spilled.
    let mut pad = kt1 - kt0;
    while pad < steps {
        barrier();
        pad += 1;
    }
    // Group 0's producer works before each step's barrier, group 1's after it: see
    // `Pipeline::run_as`.
    let mut pipeline = Pipeline::new(producer);
    if group == 0 {
        pipeline.run_as::<UNIT, false, _>(&mut acc, kt0, kt1, kt1);
    } else {
        pipeline.run_as::<UNIT, true, _>(&mut acc, kt0, kt1, kt1);
    }

    // Group 1 hands its sums to group 0 through LDS (the stages are free: both groups are past
    // their last barrier), wave by wave in the accumulators' raw layout; group 0 adds them and
    // runs the epilogue, through each wave's strip of the (again free) LDS.
    let sums = LdsArena::new().take::<F32x4>(WY * W::QUADS * 64);
    let mine = |q: usize| (gw * W::QUADS + q) * 64 + lane;
    if group != 0 {
        crate::unroll_max!(q < 16, 16 => {
            if q < W::QUADS {
                // SAFETY: this wave's slots.
                unsafe { sums.write(mine(q), acc.acc.quad(q)) };
            }
        });
    }
    barrier();
    if group == 0 {
        // SAFETY: written by group 1's wave of the same rows before the barrier.
        acc.acc.add_quads(|q| unsafe { sums.read(mine(q)) });
    }
    barrier();
    if group != 0 {
        return;
    }
    // The epilogue's arguments read again, here: loaded at the kernel's entry, they held scalar
    // registers across the K loop, which spilled two.
    // SAFETY: the kernel's own kernarg segment and argument struct.
    let a = unsafe { kernargs_at::<QGemmArgs>(kernarg_address()) };
    let c_elem = if a.out_type == dtype::F32 { 4 } else { 2 };
    // A split's f32 sums go to its own rows of y (the host passes f32 and no epilogue flags).
    // SAFETY: y holds m rows of ldy per split (host-sized).
    let y = unsafe { a.y.add(z as usize * m * a.ldy as usize * c_elem) };
    let target = epilogue::Target {
        c: y,
        residual: a.residual,
        m,
        n,
        ldc: a.ldy as usize,
        ldr: a.ldr as usize,
        vector_ok: (y as usize) % 16 == 0 && (a.ldy as usize * c_elem) % 16 == 0,
    };
    let strips = LdsArena::new().take::<f32>(WY * epilogue::STRIP_FLOATS);
    let strip = strips.sub(gw * epilogue::STRIP_FLOATS, epilogue::STRIP_FLOATS);
    let params = super::epilogue_params(a.bias, a.out_type, a.activation, a.flags);
    epilogue::store(&params, &target, &acc.acc, strip, row0 + a_row, col0, lane);
}
