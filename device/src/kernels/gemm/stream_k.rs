//! Stream-K: a GEMM's blocks' K-tiles dealt evenly to one resident round of workgroups, for the
//! plain GEMM ([`Plain`]) and the fp8 block-scaled one ([`BlockScaled`], whose runs are cut in
//! whole 128-wide scale blocks so that every piece promotes whole blocks); one driver, [`run`],
//! over what a kernel supplies ([`Streamed`]).
//!
//! Why: with whole blocks per workgroup a launch runs in rounds of as many blocks as the GPU
//! holds, and a round that is partly empty costs a whole round (4096^3 in 128x128 blocks: 1024
//! blocks on 304 CUs x 2 resident = 608 slots, two rounds, 84% used; 2048x2048 has 256 blocks
//! for the 608 slots, where split-K's second pass cost as much as its first). Here the K-tiles
//! of all blocks (of all batches), block after block, are cut into `ceil(total / sk_per)` runs of
//! `sk_per` consecutive K-tiles, one per workgroup (host, `ops::gemm::stream_k_run`: at most one
//! per resident slot, at least 8 K-tiles, at most 8 workgroups per block; the block-scaled
//! kernel's `ops::gemm_fp8::stream_k_run`: runs of scale blocks, at least 4). A run covers the
//! end of one block, whole blocks, and the start of another; each piece ("segment") goes through
//! the whole-block kernel's pipeline ([`plain::accumulate`], [`blockscaled::accumulate`]).
//!
//! A block split between workgroups (its contributors, consecutive ranks) is finished by the
//! last of them to arrive, with no waiting: per wave, a contributor reads the block's counter
//! (before its K loop where [`Streamed::COUNT_AHEAD`], so that the read's latency passes behind
//! it); if every other contributor had already counted itself, it is last; otherwise it stores
//! its partial (the raw accumulator registers, [`RegTile::quad`], 128-bit stores of whole lines),
//! releases it, and counts itself with an atomic add, which tells it whether it came last. The
//! last one adds the others' partials and runs the epilogue ([`plain::store`]). The partials are
//! added element by element in contributor order, its own registers in their place, so C does
//! not depend on which contributor finished. Exactly one contributor finishes: one that finds
//! the count complete never counts itself, so no later one can complete it.
//!
//! Deadlock-free on any schedule (nobody waits), and so on the emulator, which runs kernels with
//! global atomics one workgroup at a time. On a GPU a run's first segment (the end of a block)
//! is reduced first, while the block's first contributor reaches it last, so each workgroup
//! typically stores one partial and finishes one block.
//!
//! Ranks: workgroup `i` takes run [`order::dispatch_rank`]`(i)`, so the workgroups of one XCD
//! reduce consecutive runs: neighbouring blocks, whose partials stay in that XCD's L2. Blocks are
//! numbered in [`order::walk`]'s compact order.

use super::blockscaled;
use super::plain::{self, At};
use crate::abi::gemm::{GemmArgs, K_TILE_BYTES, stream_k_slot};
use crate::abi::gemm_blockscaled::{BlockScaledArgs, SCALE_BLOCK};
use crate::dsl::ids::{ParkedArgs, wave_id_x, workgroup_id_x};
use crate::dsl::mem::{load_b128, store_b128};
use crate::dsl::simd::F32x4;
use crate::dsl::sync::{arrive_last, barrier};
use crate::dsl::wave::{lane_id, park, readfirstlane};
use crate::tile::mma::MmaInput;
use crate::tile::order;
use crate::tile::reg::{MAX_QUADS, RegTile, Tiles16};
use core::marker::PhantomData;
use core::sync::atomic::{AtomicU32, Ordering, fence};

/// A kernel whose blocks the stream-K driver ([`run`]) deals out as runs of K units: its
/// arguments, the sizes the runs are cut from, one block's accumulation over a range of units
/// and its epilogue.
pub trait Streamed {
    /// The kernel's argument struct.
    type Args: Copy;
    /// A wave's accumulators.
    type Acc: RegTile;
    /// Waves per workgroup.
    const WAVES: usize;
    /// Whether a split block's count is read before the K loop (its latency hidden behind
    /// it) rather than after. Only where LLVM keeps the loop's own waits exact with that load
    /// in flight: across the block-scaled loop it made every scale block wait for all of its
    /// loads (`s_waitcnt vmcnt(0)`; modeled 4096x2112x7168, 178,527 clocks on the busiest CU
    /// against 145,460 with the count read after the loop).
    const COUNT_AHEAD: bool;
    /// The launch's sizes and stream-K arguments.
    fn plan(args: &Self::Args) -> Plan;
    /// This wave's accumulators of block `at` over units `u0..u1`; ends after a barrier (the
    /// LDS is free).
    fn accumulate(args: &Self::Args, at: &At, u0: u32, u1: u32) -> Self::Acc;
    /// The epilogue of this wave's part of block `at`.
    fn store(args: &Self::Args, at: &At, acc: &Self::Acc);
}

/// What the driver needs of a launch: the blocks (`gx x gy` of `bm x bn` per batch) and their
/// units of K, the runs (`sk_per` units each of `sk_total`), and where partials and counts go.
pub struct Plan {
    units: u32,
    gx: u32,
    gy: u32,
    bm: usize,
    bn: usize,
    sk_per: u32,
    sk_total: u32,
    workspace: *mut f32,
    counters: *mut u32,
}

/// The plain GEMM for input type `E`, per-wave register tiles `W`, `WY x WX` waves: units are
/// K-tiles.
pub struct Plain<E, W, const WY: usize, const WX: usize>(PhantomData<(E, W)>);

impl<E: MmaInput, W: RegTile, const WY: usize, const WX: usize> Streamed for Plain<E, W, WY, WX> {
    type Args = GemmArgs;
    type Acc = W;
    const WAVES: usize = WY * WX;
    const COUNT_AHEAD: bool = true;

    #[inline(always)]
    fn plan(args: &GemmArgs) -> Plan {
        let (bm, bn) = (WY * W::TM * W::DIM, WX * W::TN * W::DIM);
        Plan {
            // At least 1 (it is: the host launches no work for an empty product): a division
            // that may panic is an exit from the kernel's loop, which holds SGPRs through it.
            units: plain::k_tiles::<E>(args).max(1),
            gx: (args.n as usize).div_ceil(bn) as u32,
            gy: (args.m as usize).div_ceil(bm) as u32,
            bm,
            bn,
            sk_per: args.sk_per,
            sk_total: args.sk_total,
            workspace: args.workspace,
            counters: args.counters,
        }
    }

    #[inline(always)]
    fn accumulate(args: &GemmArgs, at: &At, u0: u32, u1: u32) -> W {
        plain::accumulate::<E, W, WY, WX>(args, at, u0, u1)
    }

    #[inline(always)]
    fn store(args: &GemmArgs, at: &At, acc: &W) {
        plain::store::<W, WY, WX>(args, at, acc, 0);
    }
}

/// The fp8 block-scaled GEMM's 128x128 blocks (one problem, `group_mode::NONE`): units are
/// 128-wide scale blocks (two K-tiles; a run's pieces start and end on them, so every piece
/// promotes whole blocks).
pub struct BlockScaled;

impl Streamed for BlockScaled {
    type Args = BlockScaledArgs;
    type Acc = Tiles16<4, 4>;
    const WAVES: usize = 4;
    const COUNT_AHEAD: bool = false;

    #[inline(always)]
    fn plan(args: &BlockScaledArgs) -> Plan {
        Plan {
            units: args.k.div_ceil(SCALE_BLOCK).max(1),
            gx: args.n.div_ceil(128),
            gy: args.m.div_ceil(128),
            bm: 128,
            bn: 128,
            sk_per: args.sk_per,
            sk_total: args.sk_total,
            workspace: args.workspace,
            counters: args.counters,
        }
    }

    #[inline(always)]
    fn accumulate(args: &BlockScaledArgs, at: &At, u0: u32, u1: u32) -> Tiles16<4, 4> {
        let tiles = SCALE_BLOCK / K_TILE_BYTES;
        let kt1 = (u1 * tiles).min(args.k.div_ceil(K_TILE_BYTES));
        blockscaled::accumulate::<2, 2>(args, &blockscaled::Group::whole(args), at.row0, at.col0, u0 * tiles, kt1)
    }

    #[inline(always)]
    fn store(args: &BlockScaledArgs, at: &At, acc: &Tiles16<4, 4>) {
        blockscaled::store::<2, 2, false>(args, &blockscaled::Group::whole(args), at.row0, at.col0, 0, acc);
    }
}

/// The stream-K kernel of `S`: workgroup `i` reduces run [`order::dispatch_rank`]`(i)` of all
/// blocks' units (see the module notes).
#[inline(always)]
pub fn run<S: Streamed>(args: S::Args) {
    // No SGPR carries state across the pipeline and the epilogue, which need them all: the
    // rank, the position in the run, the kernarg address and the segment are parked in VGPRs,
    // and the arguments are read again for each phase (`ParkedArgs`). Kept in SGPRs (with what
    // LLVM hoists from them) they spilled. (The segment was recomputed after the K loop at
    // first: four integer divisions, ~100 instructions a segment.)
    let p = S::plan(&args);
    let rank = order::dispatch_rank(workgroup_id_x(), p.sk_total.div_ceil(p.sk_per.max(1)));
    // Words: the rank, the start of the next segment, and the block that segment works on when
    // the previous segment ended its block (`it` is then that block's start), else [`UNKNOWN`].
    let mut state = ParkedArgs::new([rank, rank * p.sk_per, UNKNOWN]);
    loop {
        // SAFETY (takes): the kernel's argument struct.
        let (args, [rank, it, known]) = unsafe { state.take::<S::Args>() };
        let p = S::plan(&args);
        let end = run_end(&p, rank);
        if it >= end {
            break;
        }
        let seg = Segment::new(&p, it, end, known);
        state.put(1, it + seg.u1 - seg.u0);
        // (The next segment starts the next block when this one ends its block.)
        state.put(2, seg.tile + 1);
        // The block's count of stored partials for this wave ([`last_to_arrive`]), read here so
        // that its memory latency passes behind the K loop (read after it, it was a wait of a
        // memory latency at every split block's end), where the kernel allows
        // ([`Streamed::COUNT_AHEAD`]). Unconditional (every block has its counters): a load
        // under a branch is waited for where the branch joins.
        let ahead = if S::COUNT_AHEAD { counter::<S>(&p, seg.tile, wave_id_x() as usize).load(Ordering::Relaxed) } else { 0 };
        // The previous segment's epilogue staged its strips where this one's operands go (at
        // the first segment the barrier costs a wait for the slowest wave's set-up).
        barrier();
        let mut parked = seg.park();
        let mut acc = S::accumulate(&args, &seg.at, seg.u0, seg.u1);
        // Again for the fix-up, and for the epilogue.
        let (args, [rank, _, _]) = unsafe { state.take::<S::Args>() };
        let seg = parked.take();
        let p = S::plan(&args);
        let whole = seg.u0 == 0 && seg.u1 == seg.units;
        if whole || {
            let seen = if S::COUNT_AHEAD { ahead } else { counter::<S>(&p, seg.tile, wave_id_x() as usize).load(Ordering::Relaxed) };
            last_to_arrive::<S>(&p, &mut acc, seg.tile, seg.units, rank, seen)
        } {
            let (args, _) = unsafe { state.take::<S::Args>() };
            S::store(&args, &seg.at, &acc);
        }
    }
}

/// The segment state's third word before the first segment: the block is not known.
const UNKNOWN: u32 = u32::MAX;

/// The end of the run of the workgroup of rank `rank` (units `rank * sk_per ..` of all
/// blocks).
#[inline(always)]
fn run_end(p: &Plan, rank: u32) -> u32 {
    (rank * p.sk_per + p.sk_per).min(p.sk_total)
}

/// The segment of a workgroup's run that starts at unit `it` of all blocks: units `u0..u1` of
/// block `tile` (of `units`), at `at`.
struct Segment {
    tile: u32,
    units: u32,
    u0: u32,
    u1: u32,
    at: At,
}

impl Segment {
    /// `known`: the segment's block when the caller knows it (then `it` is its start), else
    /// [`UNKNOWN`]: a segment after the first in a run starts a block, so a run divides once.
    #[inline(always)]
    fn new(p: &Plan, it: u32, end: u32, known: u32) -> Segment {
        let units = p.units;
        let (gx, gy) = (p.gx, p.gy);
        let blocks = (gx * gy).max(1);
        let tile = if known != UNKNOWN { known } else { it / units };
        let u0 = it - tile * units;
        let u1 = units.min(u0 + (end - it));
        // (Without batches, no division.)
        let batch = if tile < blocks { 0 } else { tile / blocks };
        let t = tile - batch * blocks;
        let (bx, by) = if blocks < 1 << 20 { order::walk_small(t, gx.max(1), gy) } else { order::walk(t, gx.max(1), gy) };
        Segment { tile, units, u0, u1, at: At { batch: batch as usize, row0: by as usize * p.bm, col0: bx as usize * p.bn } }
    }

    /// The segment parked in VGPRs ([`park`]), to be taken back after the K loop.
    #[inline(always)]
    fn park(&self) -> Segment {
        let at = At {
            batch: park(self.at.batch as u32) as usize,
            row0: park(self.at.row0 as u32) as usize,
            col0: park(self.at.col0 as u32) as usize,
        };
        Segment { tile: park(self.tile), units: park(self.units), u0: park(self.u0), u1: park(self.u1), at }
    }

    /// A parked segment ([`Segment::park`]) as scalars again.
    #[inline(always)]
    fn take(&mut self) -> Segment {
        let u = |v: usize| readfirstlane(v as u32) as usize;
        let at = At { batch: u(self.at.batch), row0: u(self.at.row0), col0: u(self.at.col0) };
        Segment {
            tile: readfirstlane(self.tile),
            units: readfirstlane(self.units),
            u0: readfirstlane(self.u0),
            u1: readfirstlane(self.u1),
            at,
        }
    }
}

/// Register quads of the fix-up's groups (see [`last_to_arrive`]): half a 64x64 wave tile.
#[inline(always)]
const fn gq<W: RegTile>() -> usize {
    if W::QUADS < MAX_QUADS / 2 { W::QUADS } else { MAX_QUADS / 2 }
}

/// Floats of one wave's partial in the workspace.
#[inline(always)]
const fn wave_floats<W: RegTile>() -> usize {
    W::QUADS * 64 * 4
}

/// This wave's part of contributor `rank`'s partial of a block whose first contributor is
/// `first`.
#[inline(always)]
fn partial<S: Streamed>(p: &Plan, rank: u32, first: u32, wave: usize) -> *mut f32 {
    let slot = stream_k_slot(rank, first) as usize;
    // SAFETY (of the caller's accesses): the host sized the workspace for every rank's slots.
    unsafe { p.workspace.add((slot * S::WAVES + wave) * wave_floats::<S::Acc>()) }
}

/// This wave's count of contributors to block `tile` that stored their partial.
#[inline(always)]
fn counter<S: Streamed>(p: &Plan, tile: u32, wave: usize) -> &'static AtomicU32 {
    // SAFETY: one u32 per block and wave, inside the counters the host zeroed for this launch;
    // every access to it is atomic.
    unsafe { AtomicU32::from_ptr(p.counters.add(tile as usize * S::WAVES + wave)) }
}

/// The fix-up of this wave's part of split block `tile` (see the module notes): true when this
/// contributor arrived last and `acc` now holds the whole sum, false when it stored its partial
/// for a later one.
#[inline(always)]
fn last_to_arrive<S: Streamed>(p: &Plan, acc: &mut S::Acc, tile: u32, units: u32, rank: u32, seen: u32) -> bool {
    let wave = wave_id_x() as usize;
    let lane = lane_id() as usize;
    let per = p.sk_per.max(1);
    let start = tile * units;
    let (first, last) = (start / per, (start + units - 1) / per);
    let others = last - first;
    let count = counter::<S>(p, tile, wave);
    // All lanes loaded the same word: one value for the wave. Read before this contributor's
    // K loop (or just after it), it may be behind the count now, which costs at most a store
    // of a partial that was not needed (the atomic below then tells the truth); the acquire
    // fence pairs it with the others' release when it says they all stored.
    let mut arrived_last = readfirstlane(seen) == others;
    if arrived_last {
        fence(Ordering::Acquire);
    } else {
        let mine = partial::<S>(p, rank, first, wave);
        const { assert!(<S::Acc as RegTile>::QUADS <= MAX_QUADS, "the store loop below is unrolled for MAX_QUADS groups") };
        crate::unroll_max!(q < <S::Acc as RegTile>::QUADS, 16 => {
            // SAFETY: this wave's part of this rank's slot; 16-byte aligned (the workspace is,
            // and every offset is a multiple of 4 floats).
            unsafe { store_b128(mine.add((q * 64 + lane) * 4) as *mut u32, core::mem::transmute::<F32x4, _>(acc.quad(q))) };
        });
        // The partial is released before the count says so; last, every other partial was.
        arrived_last = arrive_last(count, others);
    }
    if !arrived_last {
        return false;
    }
    // Element by element, the sum runs over the contributors in rank order, this one's
    // registers in their place: `((p0 + p1) + own) + p3`, whichever contributor finished. It is
    // taken in groups of GQ register quads, each group's loads of one contributor issued
    // together, so that a contributor costs one memory latency per group. (Contributor by
    // contributor over the whole tile, as this was first written, a separate sum of the
    // partials before this one's and the loaded partial held 192 registers beside the rest;
    // LLVM kept one quad's load in flight at a time: 16 latencies a contributor, ~11,000 of
    // the modeled 157,000 clocks of `fp8 4096x4096x4096` on its busiest CU.)
    const { assert!(<S::Acc as RegTile>::QUADS % gq::<S::Acc>() == 0) };
    // Quad q of contributor c's partial.
    let load = |c: u32, q: usize| {
        let at = partial::<S>(p, c, first, wave);
        // SAFETY: contributor c's part, stored and released before its count.
        unsafe { core::mem::transmute::<_, F32x4>(load_b128(at.add((q * 64 + lane) * 4) as *const u32)) }
    };
    let load_group = |c: u32, g: usize| {
        let mut v = [F32x4::splat(0.0); MAX_QUADS / 2];
        crate::unroll_max!(i < gq::<S::Acc>(), 8 => {
            v[i] = load(c, g * gq::<S::Acc>() + i);
        });
        v
    };
    let add = |s: &mut [F32x4; MAX_QUADS / 2], v: [F32x4; MAX_QUADS / 2]| {
        crate::unroll_max!(i < gq::<S::Acc>(), 8 => {
            // SAFETY: a lane-wise addition of two f32x4 vectors.
            s[i] = unsafe { core::intrinsics::simd::simd_add(s[i], v[i]) };
        });
    };
    if last == first + 1 {
        // Two contributors (the usual split: runs at least a block long): the other's
        // whole partial at once, one memory latency (f32 addition commutes, so `own + other`
        // is the sum in either order).
        let other = if rank == first { last } else { first };
        let mut v = [F32x4::splat(0.0); MAX_QUADS];
        crate::unroll_max!(q < <S::Acc as RegTile>::QUADS, 16 => {
            v[q] = load(other, q);
        });
        acc.add_quads(|q| v[q]);
        return true;
    }
    crate::unroll_max!(g < <S::Acc as RegTile>::QUADS / gq::<S::Acc>(), 16 => {
        let own: [F32x4; MAX_QUADS / 2] = core::array::from_fn(|i| if i < gq::<S::Acc>() { acc.quad(g * gq::<S::Acc>() + i) } else { F32x4::splat(0.0) });
        let mut s = if rank > first { load_group(first, g) } else { own };
        // (One loop: three, around this one's place, spilled a scalar register. A load under
        // the branch waits where the branch joins, which the addition does anyway.)
        for c in first + 1..=last {
            add(&mut s, if c == rank { own } else { load_group(c, g) });
        }
        acc.map_quads(|q, v| if q / gq::<S::Acc>() == g { s[q % gq::<S::Acc>()] } else { v });
    });
    true
}
