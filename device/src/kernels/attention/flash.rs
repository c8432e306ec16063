//! The flash-attention forward: one workgroup of 4 waves takes 128 query rows (32 per wave) of
//! one head and walks the keys in blocks of 64, never materialising the scores.
//!
//! Per block, each wave computes `S^T = K Q^T` (64 keys x its 32 queries, 16x16 MFMAs: K from the
//! block's LDS tile, Q from registers loaded once), folds it into the online softmax (`scores`),
//! and accumulates `O^T += V^T P^T` with V from the block's transposed LDS tile
//! (`tile::transposed`) and P straight from the score registers.
//!
//! The workgroup shares one K tile and one V tile (single-buffered, so two workgroups fit a CU:
//! 32 KiB at d = 128) and moves the next blocks through registers. Two barriers per block:
//!
//! 1. `S = K_j Q^T` (reads the K tile);
//! 2. barrier X: the K tile is free, and V_j (stored after the previous Y) is published;
//! 3. store K_{j+1} from registers, issue the loads of K_{j+2};
//! 4. mask (boundary blocks only), online softmax, `O += V_j P` (reads the V tile);
//! 5. barrier Y: the V tile is free, K_{j+1} is published;
//! 6. store V_{j+1}, issue the loads of V_{j+2}.
//!
//! So every global load has a whole block of MFMAs to arrive behind, and each barrier is
//! followed by work that does not depend on it finishing everywhere (the other workgroup on the
//! CU fills what remains).
//!
//! Masks are per-row key ranges (`scores::KeyRange`): a block inside every range of a wave's rows
//! runs unmasked, one outside all of them is skipped by that wave (it still loads and meets the
//! barriers), the rest are masked element by element.
//!
//! The stream kernels ([`flash_stream`]) walk the same blocks, dealt out differently: runs of key
//! blocks that may start and end inside a query block, whose pieces meet in memory.

use super::output;
use super::scores::{Half, KeyRange, Online, Scores, mask, p_chunk, scale};
use crate::abi::attention::{FLASH_BLOCK_K, FLASH_BLOCK_Q, FLASH_WAVES, FlashArgs, UNBOUNDED, flash_flags, flash_stream_wave_floats};
use crate::abi::gemm::stream_k_slot;
use crate::dsl::ids::{ParkedArgs, workgroup_id_x, workgroup_id_y, workgroup_id_z, workitem_id_x};
use crate::dsl::lds::LdsArena;
use crate::dsl::math::exp2_fast;
use crate::dsl::mem::{Buffer, load_b128, store_b128};
use crate::dsl::simd::{F32x4, U32x4};
use crate::dsl::sync::{arrive_last, barrier};
use crate::dsl::wave::{bpermute, lane_id, park, readfirstlane};
use crate::tile::global::GlobalTile;
use crate::tile::lds::LdsTile;
use crate::tile::mma::mma16;
use crate::tile::order;
use crate::tile::transposed::{QuadRole, TILE_KEYS, TransposedTile};
use core::mem::MaybeUninit;
use core::sync::atomic::AtomicU32;

const THREADS: usize = FLASH_WAVES as usize * 64;
const BK: usize = FLASH_BLOCK_K as usize;
/// 16-key tiles per block (MFMA rows of `S^T`).
const KT: usize = BK / 16;
/// 32-key transposed V tiles per block.
const VT: usize = BK / TILE_KEYS;
/// 16-query tiles per wave (MFMA columns of `S^T`).
const QT: usize = 2;
/// Chunks a thread moves per K-tile of the K block (64 rows x 4 chunks over the threads).
const K_CHUNKS: usize = BK * 4 / THREADS;
/// V quads (4 keys x 8 values) a half-wave covers per round, and rounds at most (d = 256).
const V_ROUNDS: usize = 2;

/// The key range of query row `i` (see `FlashArgs`): `lo ..= hi`.
#[derive(Clone, Copy)]
struct Rows {
    off: i32,
    wl: i32,
    wr: i32,
    kvalid: i32,
}

impl Rows {
    #[inline(always)]
    fn lo(&self, i: i32) -> i32 {
        if self.wl == UNBOUNDED { 0 } else { (i + self.off - self.wl).max(0) }
    }
    #[inline(always)]
    fn hi(&self, i: i32) -> i32 {
        let h = if self.wr == UNBOUNDED { i32::MAX } else { i + self.off + self.wr };
        h.min(self.kvalid - 1)
    }
}

/// Scalar loads of a u32 table entry (host-checked to exist).
#[inline(always)]
unsafe fn entry(p: *const u32, i: usize) -> u32 {
    // SAFETY: caller.
    readfirstlane(unsafe { p.add(i).read() })
}

/// One sequence of one head: where its rows are and which keys they may attend.
struct Sequence {
    q_row0: u32,
    lq: u32,
    k_row0: u32,
    kvalid: u32,
    rows: Rows,
}

impl Sequence {
    /// Sequence `b` of the launch.
    #[inline(always)]
    fn of(args: &FlashArgs, b: usize) -> Sequence {
        // The sequence: its rows in the packed tensors (varlen) or its batch entry.
        // SAFETY (entries): the host sized the offset and length tables to the grid's batch.
        let (q_row0, lq) = if args.cu_seqlens_q.is_null() {
            (0, args.seq_q)
        } else {
            let (s, e) = unsafe { (entry(args.cu_seqlens_q, b), entry(args.cu_seqlens_q, b + 1)) };
            (s, e - s)
        };
        let (k_row0, lk) = if args.cu_seqlens_k.is_null() {
            (0, args.seq_k)
        } else {
            let (s, e) = unsafe { (entry(args.cu_seqlens_k, b), entry(args.cu_seqlens_k, b + 1)) };
            (s, e - s)
        };
        let kvalid = if args.key_lens.is_null() { lk } else { lk.min(unsafe { entry(args.key_lens, b) }) };
        // (The host keeps lengths and windows below 2^30, so this arithmetic stays in i32.)
        let rows = Rows { off: lk as i32 - lq as i32, wl: args.window_left, wr: args.window_right, kvalid: kvalid as i32 };
        Sequence { q_row0, lq, k_row0, kvalid, rows }
    }
}

/// The flash-attention forward for inputs `E` and head dimension `D`: one query block, or with
/// `PAIRED` the blocks `x` and `n - 1 - x` (so every workgroup of a causal or windowed launch
/// has the same work: its first block's keys and the mirror block's add up to `n + 1` blocks).
#[inline(always)]
pub fn flash<E: Half, const D: usize>(args: FlashArgs) {
    let (x, head, b) = (workgroup_id_x(), workgroup_id_y(), workgroup_id_z());
    let seq = Sequence::of(&args, b as usize);
    let nqb = seq.lq.div_ceil(FLASH_BLOCK_Q);
    let (passes, mirror) = if args.flags & flash_flags::PAIRED != 0 {
        let m = nqb.wrapping_sub(1).wrapping_sub(x);
        (
            if x < nqb && x < m {
                2
            } else if x < nqb && x == m {
                1
            } else {
                0
            },
            m,
        )
    } else {
        (if x < nqb { 1 } else { 0 }, x)
    };
    // A runtime loop: one copy of the block's code whatever the pass count. The heavier (later)
    // block first. No barrier between passes: every LDS read of a pass precedes its last barrier.
    let mut pass = 0;
    while pass < passes {
        block::<E, D>(&args, &seq, if pass == 0 { mirror } else { x }, head, b);
        pass += 1;
    }
}

/// The stream flash kernel (`flash_stream_*`, see `FlashArgs`): the key blocks each query block
/// attends, query block after query block (query blocks fastest, then heads, then batch
/// entries: consecutive runs share K and V), cut into runs of `sk_per`, one per workgroup.
///
/// Why: a flash launch runs in rounds of as many query blocks as the GPU holds (304 CUs x 2),
/// and a round that is partly empty costs a whole one: batch 1, 32 heads, 4096 queries are 1024
/// blocks, two rounds of 608 slots, 84% used (causal: 512 pairs of blocks, the same). Dealt out
/// as runs of key blocks, every workgroup has the same work whatever the mask.
///
/// A run covers the end of one query block, whole blocks and the start of another; each piece
/// (a segment) walks its key blocks as the one-block kernel does ([`keys`]). A query block split
/// between workgroups (its contributors, consecutive ranks) is finished by the last of them to
/// arrive, per wave, with no waiting ([`last_to_arrive`]), which adds the others' partials in
/// rank order and runs the epilogue.
#[inline(always)]
pub fn flash_stream<E: Half, const D: usize>(args: FlashArgs) {
    // No SGPR carries state across the key loop, which needs them all (kept in SGPRs, the
    // run's state and what LLVM hoisted from it spilled some thirty): the kernarg address, the
    // rank and the position in the run are parked in VGPRs, the segment too, and the arguments
    // are read again for each phase (`ParkedArgs`), as in the stream-K GEMM.
    let per = args.sk_per.max(1);
    // Workgroups of one XCD take consecutive runs: neighbouring query blocks of one head, whose
    // keys and partials stay in that XCD's L2.
    let rank = order::dispatch_rank(workgroup_id_x(), args.sk_total.div_ceil(per));
    // Words: the rank and the start of the next segment.
    let mut state = ParkedArgs::new([rank, rank * per]);
    loop {
        // SAFETY (takes): the kernel's argument struct.
        let (args, [rank, it]) = unsafe { state.take::<FlashArgs>() };
        // (Divisors at least 1: the host launches no work for an empty attention.)
        let per = args.sk_per.max(1);
        let end = (rank * per + per).min(args.sk_total);
        if it >= end {
            break;
        }
        let seg = Segment::new(&args, it, end);
        state.put(1, it + seg.kb1 - seg.kb0);
        let seq = Sequence::of(&args, seg.b as usize);
        let mut parked = seg.park();
        let mut acc = keys::<E, D>(&args, &seq, seg.qb, seg.head, seg.b, seg.kb0, seg.kb1);
        let (args, [rank, _]) = unsafe { state.take::<FlashArgs>() };
        let seg = parked.take();
        let whole = seg.kb0 == seg.lo && seg.kb1 == seg.lo + seg.n;
        if whole || last_to_arrive::<D>(&args, &mut acc, seg.item, seg.start, seg.n, rank) {
            let seq = Sequence::of(&args, seg.b as usize);
            store::<E, D>(&args, &seq, seg.qb, seg.head, seg.b, &acc);
        }
    }
}

/// The segment of a run that starts at position `it` of the run of all key blocks: key blocks
/// `kb0..kb1` of query block `item` (block `qb` of head `head` of batch entry `b`), which
/// attends key blocks `lo..lo + n` and starts at position `start` of the run.
#[derive(Clone, Copy)]
struct Segment {
    item: u32,
    start: u32,
    lo: u32,
    n: u32,
    kb0: u32,
    kb1: u32,
    qb: u32,
    head: u32,
    b: u32,
}

impl Segment {
    /// Every (batch entry, head) has the same query blocks, whose key blocks `stream_table`
    /// gives (`FlashArgs::stream_table`): the block holding position `it` is found by a binary
    /// search of its starts.
    #[inline(always)]
    fn new(args: &FlashArgs, it: u32, end: u32) -> Segment {
        let nqb = args.seq_q.div_ceil(FLASH_BLOCK_Q).max(1);
        // Scalar loads (the table is the same for every lane).
        let table = Buffer::new(args.stream_table as *const u8, (2 * nqb + 1) * 4);
        // SAFETY: the table holds 2 nqb + 1 entries (host-made); every index below is under it.
        let at = |i: u32| unsafe { table.load_scalar_b32(4 * i) };
        let per_head = at(nqb).max(1);
        let hb = it / per_head;
        let r = it - hb * per_head;
        // The first query block whose start is past r, less one (blocks without keys, whose
        // start equals the next one's, are passed over).
        let (mut low, mut high) = (1u32, nqb);
        while low < high {
            let mid = (low + high) / 2;
            if at(mid) > r {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        let qb = low - 1;
        let (first, next, kb_lo) = (at(qb), at(qb + 1), at(nqb + 1 + qb));
        let n = next - first;
        let kb0 = kb_lo + (r - first);
        let kb1 = (kb_lo + n).min(kb0 + (end - it));
        let heads = args.heads.max(1);
        Segment { item: hb * nqb + qb, start: hb * per_head + first, lo: kb_lo, n, kb0, kb1, qb, head: hb % heads, b: hb / heads }
    }

    /// The segment parked in VGPRs, to be taken back after the key loop.
    #[inline(always)]
    fn park(&self) -> Segment {
        let p = park;
        Segment {
            item: p(self.item),
            start: p(self.start),
            lo: p(self.lo),
            n: p(self.n),
            kb0: p(self.kb0),
            kb1: p(self.kb1),
            qb: p(self.qb),
            head: p(self.head),
            b: p(self.b),
        }
    }

    /// A parked segment as scalars again.
    #[inline(always)]
    fn take(&mut self) -> Segment {
        let r = readfirstlane;
        Segment {
            item: r(self.item),
            start: r(self.start),
            lo: r(self.lo),
            n: r(self.n),
            kb0: r(self.kb0),
            kb1: r(self.kb1),
            qb: r(self.qb),
            head: r(self.head),
            b: r(self.b),
        }
    }
}

/// This wave's count of contributors to query block `item` (block `x` of head `h` of batch entry
/// `b` is `(b * heads + h) * n + x`, `n` query blocks a head) that stored their partial.
#[inline(always)]
fn counter(args: &FlashArgs, item: u32) -> &'static AtomicU32 {
    let wave = readfirstlane(workitem_id_x() / 64);
    // SAFETY: one u32 per query block and wave, inside the counters the host zeroed for this
    // launch; every access to it is atomic.
    unsafe { AtomicU32::from_ptr(args.counters.add((item * FLASH_WAVES + wave) as usize)) }
}

/// This wave's part of contributor `rank`'s partial of a query block whose first contributor
/// is `first`: quad `q` of lane `l` at `4 (64 q + l)`.
#[inline(always)]
fn partial<const D: usize>(args: &FlashArgs, rank: u32, first: u32) -> *mut f32 {
    let wave = readfirstlane(workitem_id_x() / 64);
    let slot = stream_k_slot(rank, first) * FLASH_WAVES + wave;
    // SAFETY (of the caller's accesses): the host sized the workspace for every rank's slots.
    unsafe { args.workspace.add((slot * flash_stream_wave_floats(D as u32)) as usize) }
}

/// `acc` as the quads of a partial: the accumulator tiles `(dt, t)` at `QT dt + t`, then the
/// statistics `[m0, m1, l0, l1]`.
#[inline(always)]
fn stats_quad(acc: &Acc) -> F32x4 {
    const { assert!(QT == 2, "one quad holds two query tiles' statistics") };
    F32x4::from_array([acc.on.m[0], acc.on.m[1], acc.on.l[0], acc.on.l[1]])
}

/// `a` and `b` (the accumulators and statistics of two disjoint sets of keys) as one: both
/// rescaled to the larger maximum, as the online softmax rescales a step. From the empty set
/// (`m = -inf`, zeros) it returns the other's values exactly.
#[inline(always)]
fn merge<const D: usize>(a: &mut Acc, b: &Acc) {
    crate::unroll_max!(t < QT, 2 => {
        let m = a.on.m[t].max(b.on.m[t]);
        // No key in either: factors of 0 (as the online step's `m_use`).
        let mu = if m == f32::NEG_INFINITY { 0.0 } else { m };
        let (fa, fb) = (exp2_fast(a.on.m[t] - mu), exp2_fast(b.on.m[t] - mu));
        a.on.l[t] = a.on.l[t] * fa + b.on.l[t] * fb;
        a.on.m[t] = m;
        crate::unroll_max!(dt < D / 16, 16 => {
            // SAFETY: lane-wise arithmetic of f32x4 vectors.
            a.o[dt][t] = unsafe {
                core::intrinsics::simd::simd_fma(a.o[dt][t], F32x4::splat(fa), core::intrinsics::simd::simd_mul(b.o[dt][t], F32x4::splat(fb)))
            };
        });
    });
}

/// The fix-up of this wave's part of query block `item` (its `n` key blocks at positions
/// `start..` of the run), split between workgroups: true when this contributor arrived last
/// and `acc` now holds every key's sums, false when it only left its partial for a later one. Every contributor stores its partial, releases it and counts
/// itself with an atomic add, which tells it whether it came last; the last one merges all the
/// partials from memory in rank order, its own included, so the result does not depend on which
/// contributor finished, and only two sets of accumulators are live at a time (merging its
/// registers in their place held a third: 257 registers at d = 128, one wave per SIMD).
#[inline(always)]
fn last_to_arrive<const D: usize>(args: &FlashArgs, acc: &mut Acc, item: u32, start: u32, n: u32, rank: u32) -> bool {
    let lane = lane_id() as usize;
    let per = args.sk_per.max(1);
    let (first, last) = (start / per, (start + n - 1) / per);
    let quads = D / 8;
    let mine = partial::<D>(args, rank, first);
    // SAFETY (stores): this wave's part of this rank's slot, 16-byte aligned (the workspace is,
    // and every offset is a multiple of 4 floats).
    let put =
        |q: usize, v: F32x4| unsafe { store_b128(mine.add((q * 64 + lane) * 4) as *mut u32, core::mem::transmute::<F32x4, U32x4>(v)) };
    crate::unroll_max!(dt < D / 16, 16 => {
        crate::unroll_max!(t < QT, 2 => { put(dt * QT + t, acc.o[dt][t]); });
    });
    put(quads, stats_quad(acc));
    // The partial is released before the count says so; last, every other partial was.
    if !arrive_last(counter(args, item), last - first) {
        return false;
    }
    *acc = Acc::empty();
    for c in first..=last {
        // Contributor c's whole partial at once: one memory latency.
        let p = partial::<D>(args, c, first);
        // SAFETY (loads): contributor c's part, stored and released before its count.
        let get = |q: usize| -> F32x4 { unsafe { core::mem::transmute(load_b128(p.add((q * 64 + lane) * 4) as *const u32)) } };
        let mut other = Acc::empty();
        crate::unroll_max!(dt < D / 16, 16 => {
            crate::unroll_max!(t < QT, 2 => { other.o[dt][t] = get(dt * QT + t); });
        });
        let st = get(quads).to_array();
        other.on = Online { m: [st[0], st[1]], l: [st[2], st[3]] };
        merge::<D>(acc, &other);
    }
    true
}

/// Query block `qb` of head `head` of sequence `b` (see the module notes).
#[inline(always)]
fn block<E: Half, const D: usize>(args: &FlashArgs, seq: &Sequence, qb: u32, head: u32, b: u32) {
    let (kb0, kb1) = key_blocks(seq, qb);
    let acc = keys::<E, D>(args, seq, qb, head, b, kb0, kb1);
    store::<E, D>(args, seq, qb, head, b, &acc);
}

/// The key blocks query block `qb` of `seq` attends: `kb0..kb1`, the union of its rows' ranges
/// (`lo` and `hi` grow with the row).
#[inline(always)]
fn key_blocks(seq: &Sequence, qb: u32) -> (u32, u32) {
    let q0 = qb * FLASH_BLOCK_Q;
    let last_row = seq.lq as i32 - 1;
    let (lo_wg, hi_wg) = (seq.rows.lo(q0 as i32), seq.rows.hi((q0 as i32 + FLASH_BLOCK_Q as i32 - 1).min(last_row)));
    let kb0 = (lo_wg / BK as i32) as u32;
    let kb1 = if hi_wg >= lo_wg { (hi_wg / BK as i32 + 1) as u32 } else { kb0 };
    (kb0, kb1)
}

/// What a wave holds once it has walked key blocks: its `O^T` accumulators (tiles `dt < D / 16`
/// of each of its query tiles) and the online softmax's statistics. Unnormalised: [`store`]
/// divides by the row sums.
struct Acc {
    o: [[F32x4; QT]; 16],
    on: Online<QT>,
}

impl Acc {
    /// No keys yet: zeros and `-inf` maxima, the identity of [`merge`].
    #[inline(always)]
    fn empty() -> Acc {
        Acc { o: [[F32x4::splat(0.0); QT]; 16], on: Online::new() }
    }
}

/// Walks key blocks `kb0..kb1` of query block `qb` of head `head` of sequence `b` (see the
/// module notes): the wave's accumulators and statistics over those keys.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn keys<E: Half, const D: usize>(args: &FlashArgs, seq: &Sequence, qb: u32, head: u32, b: u32, kb0: u32, kb1: u32) -> Acc {
    // K-tiles (32 values of d) of the head dimension.
    let dk: usize = D / 32;
    // The lane through a lane permute (convergent: LLVM cannot hoist what depends on it out of
    // the pass loop). Hoisted, the per-lane offsets and masks of both passes stayed live through
    // the main loop: 261 registers at d = 128, one wave per SIMD, against 240.
    let lane = bpermute(lane_id(), lane_id()) as usize;
    let wave = readfirstlane(workitem_id_x() / 64) as usize;
    let thread = wave * 64 + lane;
    let &Sequence { q_row0, lq, k_row0, kvalid, rows } = seq;
    let q0 = qb * FLASH_BLOCK_Q;
    let last_row = lq as i32 - 1;
    // This wave's rows, for skipping and masking whole blocks.
    let (wi0, wi1) = (q0 as i32 + 32 * wave as i32, (q0 as i32 + 32 * wave as i32 + 31).min(last_row));
    let wave_rows = wi0 <= last_row;
    let (lo_min, lo_max, hi_min, hi_max) = (rows.lo(wi0), rows.lo(wi1), rows.hi(wi0), rows.hi(wi1));

    let eb = 2usize;
    // Row pitches in bytes: a block's rows span under 4 GiB (host-checked), so u32.
    let (q_rb, k_rb, v_rb) = (args.q_row_stride * 2, args.k_row_stride * 2, args.v_row_stride * 2);
    let kvh = head / args.group;
    // SAFETY (all three): offsets inside the tensors, which the host checked hold every row.
    let at = |batch_stride: u64, row: u32, row_stride: u32, h: u32, head_stride: u32| {
        (b as u64 * batch_stride + row as u64 * row_stride as u64 + h as u64 * head_stride as u64) as usize * eb
    };
    let q_base = unsafe { args.q.add(at(args.q_batch_stride, q_row0 + q0, args.q_row_stride, head, args.q_head_stride)) };
    let k_base = unsafe { args.k.add(at(args.k_batch_stride, k_row0, args.k_row_stride, kvh, args.k_head_stride)) };
    let v_base = unsafe { args.v.add(at(args.v_batch_stride, k_row0, args.v_row_stride, kvh, args.v_head_stride)) };

    // Q fragments (the B operand of S^T, one query column per lane), loaded once: lane l reads
    // chunk l / 16 of K-tile kt of its row, so the four lanes of a row read a whole 64-byte line.
    let q_rows = (lq - q0).min(FLASH_BLOCK_Q);
    let qbuf = Buffer::new(q_base, (q_rows - 1) * q_rb + (D * eb) as u32);
    let mut qf = [[U32x4::splat(0); QT]; 8];
    crate::unroll_max!(t < QT, 2 => {
        // Rows past the sequence read its last row (their results are never stored).
        let row = ((32 * wave + 16 * t + lane % 16) as u32).min(q_rows - 1);
        crate::unroll_max!(kt < dk, 8 => {
            // SAFETY: inside the block's rows.
            qf[kt][t] = unsafe { qbuf.load_b128(row * q_rb + (kt * 64 + 16 * (lane / 16)) as u32, 0) };
        });
    });

    let mut lds = LdsArena::new();
    let k_lds = LdsTile::new(&mut lds, BK, dk);
    let v_lds = TransposedTile::new(&mut lds, D, VT);
    let role = QuadRole::of(lane);
    // The V quads of this half-wave: pair p = 8 round + 2 wave + half covers tile p % 2 of slab
    // p / 2 (a slab is 32 values of d).
    let pairs = 2 * dk;

    // Moving blocks: K through the tile layer's global tile, V as quads (4 keys x 8 values).
    let mut kreg = [[U32x4::splat(0); K_CHUNKS]; 8];
    let mut vreg = [[U32x4::splat(0); 4]; V_ROUNDS];
    let load_k = |kb: u32, kreg: &mut [[U32x4; K_CHUNKS]; 8]| {
        let first = kb * BK as u32;
        // SAFETY: the block's rows lie inside K (first < kvalid); rows past kvalid are clamped.
        let t = unsafe {
            GlobalTile::<K_CHUNKS>::new(
                k_base.add(first as usize * k_rb as usize),
                k_rb as usize,
                (kvalid - first) as usize,
                D * eb,
                BK,
                thread,
                THREADS,
            )
        };
        crate::unroll_max!(kt < dk, 8 => {
            t.load(kt as u32, false, &mut kreg[kt]);
        });
        t
    };
    let load_v = |kb: u32, vreg: &mut [[U32x4; 4]; V_ROUNDS]| {
        let first = kb * BK as u32;
        let last = (kvalid - first).min(BK as u32) - 1;
        // SAFETY: as for K.
        let vbuf = Buffer::new(unsafe { v_base.add(first as usize * v_rb as usize) }, last * v_rb + (D * eb) as u32);
        crate::unroll_max!(round < V_ROUNDS, 2 => {
            let p = 8 * round + 2 * wave + role.half;
            if p < pairs {
                let (tile, slab) = (p % 2, p / 2);
                crate::unroll_max!(x < 4, 4 => {
                    let row = ((TILE_KEYS * tile + 4 * role.kq + x) as u32).min(last);
                    // SAFETY: inside the block's rows.
                    vreg[round][x] = unsafe { vbuf.load_b128(row * v_rb + role.col_bytes(slab) as u32, 0) };
                });
            }
        });
    };
    let store_v = |vreg: &[[U32x4; 4]; V_ROUNDS]| {
        crate::unroll_max!(round < V_ROUNDS, 2 => {
            let p = 8 * round + 2 * wave + role.half;
            if p < pairs {
                // SAFETY: the V tile is free (caller: after barrier Y or in the prologue).
                unsafe { v_lds.store(p % 2, p / 2, &role, &vreg[round]) };
            }
        });
    };

    let mut on = Online::<QT>::new();
    let mut o = [[F32x4::splat(0.0); QT]; 16];
    let c = args.scale_log2;
    // The lane's query columns: their key ranges (for masked blocks).
    let mut ranges = [KeyRange::new(0, -1); QT];
    crate::unroll_max!(t < QT, 2 => {
        let i = wi0 + (16 * t + lane % 16) as i32;
        ranges[t] = KeyRange::new(rows.lo(i), rows.hi(i));
    });

    if kb0 < kb1 {
        // Prologue: block kb0 into LDS, kb0 + 1 into registers.
        let kt0 = load_k(kb0, &mut kreg);
        load_v(kb0, &mut vreg);
        crate::unroll_max!(kt < dk, 8 => {
            // SAFETY: nobody reads the tiles before the barrier below.
            unsafe { kt0.store(k_lds, kt, &kreg[kt]) };
        });
        store_v(&vreg);
        let mut kt_next = kt0;
        if kb0 + 1 < kb1 {
            kt_next = load_k(kb0 + 1, &mut kreg);
            load_v(kb0 + 1, &mut vreg);
        }
        barrier();

        let mut kb = kb0;
        while kb < kb1 {
            let (k_lo, k_hi) = ((kb as usize * BK) as i32, (kb as usize * BK + BK - 1) as i32);
            let active = wave_rows && k_lo <= hi_max && k_hi >= lo_min;
            // Only read where `active` wrote it: an inactive wave carries no zeros through.
            let mut s_slot = MaybeUninit::<Scores<KT, QT>>::uninit();
            if active {
                // 1. S^T = K Q^T: key tile i's fragment is row 16 i + l % 16, chunk l / 16.
                let mut s: Scores<KT, QT> = [[F32x4::splat(0.0); QT]; KT];
                crate::unroll_max!(kt < dk, 8 => {
                    crate::unroll_max!(i < KT, 4 => {
                        // SAFETY: the K tile holds block kb (published by the last barrier).
                        let a = unsafe { k_lds.read(kt, 16 * i + lane % 16, lane / 16) };
                        crate::unroll_max!(t < QT, 2 => {
                            s[i][t] = mma16::<E>(a, qf[kt][t], s[i][t]);
                        });
                    });
                });
                s_slot.write(s);
            }
            // 2. Barrier X.
            barrier();
            // 3. The next K block into the free tile, the one after into registers.
            if kb + 1 < kb1 {
                crate::unroll_max!(kt < dk, 8 => {
                    // SAFETY: every wave is past its reads of block kb (barrier X).
                    unsafe { kt_next.store(k_lds, kt, &kreg[kt]) };
                });
                if kb + 2 < kb1 {
                    kt_next = load_k(kb + 2, &mut kreg);
                }
            }
            if active {
                // SAFETY: written above under the same condition.
                let s = unsafe { s_slot.assume_init_mut() };
                // 4. Softmax and O^T += V^T P^T.
                if !(k_lo >= lo_max && k_hi <= hi_min) {
                    mask(s, k_lo + 4 * (lane / 16) as i32, &ranges);
                }
                let alpha = on.step(s, c);
                crate::unroll_max!(t < QT, 2 => {
                    // The factor is 1 for every column whose maximum did not move (most blocks
                    // past the first few): skip the multiplications when the whole wave agrees.
                    if crate::dsl::wave::ballot(alpha[t] != 1.0) != 0 {
                        crate::unroll_max!(dt < 2 * dk, 16 => {
                            o[dt][t] = scale(o[dt][t], alpha[t]);
                        });
                    }
                });
                crate::unroll_max!(vt < VT, 2 => {
                    let p = [p_chunk::<E, KT, QT>(s, vt, 0), p_chunk::<E, KT, QT>(s, vt, 1)];
                    crate::unroll_max!(dt < 2 * dk, 16 => {
                        // SAFETY: the V tile holds block kb (published by barrier X).
                        let a = unsafe { v_lds.read(vt, dt, lane) };
                        crate::unroll_max!(t < QT, 2 => {
                            o[dt][t] = mma16::<E>(a, p[t], o[dt][t]);
                        });
                    });
                });
            }
            // 5. Barrier Y.
            barrier();
            // 6. The next V block into the free tile, the one after into registers.
            if kb + 1 < kb1 {
                store_v(&vreg);
                if kb + 2 < kb1 {
                    load_v(kb + 2, &mut vreg);
                }
            }
            kb += 1;
        }
    }
    Acc { o, on }
}

/// The epilogue of query block `qb` of head `head` of sequence `b`: the wave's rows normalised,
/// rounded and stored; their log-sum-exp.
#[inline(always)]
fn store<E: Half, const D: usize>(args: &FlashArgs, seq: &Sequence, qb: u32, head: u32, b: u32, acc: &Acc) {
    let dk: usize = D / 32;
    let lane = lane_id() as usize;
    let wave = readfirstlane(workitem_id_x() / 64) as usize;
    let (q_row0, lq, q0) = (seq.q_row0, seq.lq, qb * FLASH_BLOCK_Q);
    let eb = 2usize;
    let Acc { o, on } = acc;
    let h = lane / 16;
    crate::unroll_max!(t < QT, 2 => {
        let l = on.row_sum(t);
        // No allowed key: zeros and -inf; a NaN sum stays NaN in both.
        let inv = if l == 0.0 { 0.0 } else { 1.0 / l };
        let i = 32 * wave + 16 * t + lane % 16;
        let valid = q0 + (i as u32) < lq;
        crate::unroll_max!(a < dk, 8 => {
            let (d0, v) = output::chunk::<E>(o[2 * a][t], o[2 * a + 1][t], inv, a, lane);
            if valid {
                let row = (b * args.seq_q + q_row0 + q0) as u64 + i as u64;
                let off = (row * args.heads as u64 + head as u64) * D as u64 + d0 as u64;
                // SAFETY: row i of this sequence exists (valid); O is contiguous, rows 16-byte aligned.
                unsafe { (args.o.add(off as usize * eb) as *mut U32x4).write(v) };
            }
        });
        if args.flags & flash_flags::LSE != 0 && valid && h == 0 {
            let lse = if l == 0.0 { f32::NEG_INFINITY } else { (on.m[t] + crate::dsl::math::log2(l)) * core::f32::consts::LN_2 };
            let off = (b * args.heads) as u64 * args.seq_q as u64 + (head * args.lse_rows + q_row0 + q0) as u64 + i as u64;
            // SAFETY: the LSE tensor holds every row of every head (host-checked).
            unsafe { args.lse.add(off as usize).write(lse) };
        }
    });
}
