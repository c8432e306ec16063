//! Decode attention over a paged KV cache (see `abi::attention::DecodeArgs`).
//!
//! A workgroup takes one sequence, one key/value head and up to 16 query columns (the rows of
//! that head's query heads: GQA shares every K and V read among them) over one split of the
//! keys; its 4 waves walk interleaved 32-key steps (wave `w` takes steps `w, w + 4, ...`), each
//! with its own online softmax; at the end (through LDS) each pair of 16-wide output tiles is
//! folded by one wave from the four waves' accumulators and written, the output or the split's
//! normalised output and log-sum-exp.
//!
//! Decode streams the cache once: the design goal is bytes in flight, not MFMA rate. Per step a
//! wave loads 32 keys of K straight into MFMA fragments (16x16 layout: the four lanes of a key
//! row read one 64-byte line) and 32 keys of V as quads (`tile::transposed`), and issues the
//! next step's loads before computing this one (two register buffers, the loop unrolled by two),
//! so every wave always has a step in flight. V goes through the wave's own transposed LDS tile;
//! LDS executes a wave's accesses in order, so no barrier is needed between steps.

use super::output;
use super::scores::{Half, KeyRange, Online, Scores, mask, p_chunk, scale};
use crate::abi::attention::{DECODE_COLS, DECODE_STEP, DECODE_WAVES, DecodeArgs, decode_lds_bytes};
use crate::dsl::ids::{workgroup_id_x, workgroup_id_y, workgroup_id_z, workitem_id_x};
use crate::dsl::lds::LdsArena;
use crate::dsl::math::{SmallDiv, exp2_fast};
use crate::dsl::mem::Buffer;
use crate::dsl::simd::{F32x4, U32x4};
use crate::dsl::sync::barrier;
use crate::dsl::wave::{ballot, lane_id, readfirstlane};
use crate::num::Divisor;
use crate::tile::mma::mma16;
use crate::tile::transposed::{QuadRole, TransposedTile};
use core::intrinsics::simd::simd_fma;

/// 16-key tiles per step.
const KT: usize = DECODE_STEP as usize / 16;
const WAVES: usize = DECODE_WAVES as usize;
/// Slab rounds of a half-wave per step at most (d = 256: 8 slabs over two half-waves).
const V_ROUNDS: usize = 4;

/// One step's data in registers: K fragments per 16-key tile and K-tile of `d`, V quads per
/// slab round.
#[derive(Clone, Copy)]
struct Step {
    k: [[U32x4; 8]; KT],
    v: [[U32x4; 4]; V_ROUNDS],
}

impl Step {
    #[inline(always)]
    fn new() -> Step {
        Step { k: [[U32x4::splat(0); 8]; KT], v: [[U32x4::splat(0); 4]; V_ROUNDS] }
    }
}

/// Where one sequence's keys of one key/value head are.
struct Keys {
    k_cache: *const u8,
    v_cache: *const u8,
    /// The sequence's block-table row (read with scalar loads).
    table: Buffer,
    /// Its position in the table (for error reports).
    table_row: u32,
    error: *mut u32,
    pages: u32,
    /// Tokens per page: positions reach 2^30, past [`SmallDiv`]'s range.
    page: Divisor,
    /// Bytes of a page, and of this head's part of a page (`page_size` rows) and its offset.
    page_bytes: usize,
    head_off: usize,
    ctx: u32,
}

impl Keys {
    /// Byte offset in a cache of the first row of the 16 keys from `t0` (< ctx). A block-table
    /// entry outside the cache is reported and read as page 0 (the op then fails).
    #[inline(always)]
    fn tile<const D: usize>(&self, t0: u32) -> usize {
        let (idx, off) = self.page.div_rem(t0);
        // SAFETY: idx < ceil(ctx / page_size), within the row (host-checked); uniform.
        let page = unsafe { self.table.load_scalar_b32(readfirstlane(4 * idx)) };
        let page = if page < self.pages {
            page
        } else {
            // SAFETY: one u32; racing writers store offending positions, whichever lands.
            unsafe { self.error.write(self.table_row + idx + 1) };
            0
        };
        page as usize * self.page_bytes + self.head_off + off as usize * D * 2
    }

    /// The cache offsets of the two 16-key tiles from `k0` (0 for a tile past the context).
    #[inline(always)]
    fn bases<const D: usize>(&self, k0: u32) -> [usize; KT] {
        let mut base = [0usize; KT];
        crate::unroll_max!(i < KT, 2 => {
            let t0 = k0 + 16 * i as u32;
            base[i] = if t0 < self.ctx { self.tile::<D>(t0) } else { 0 };
        });
        base
    }

    /// Issues the loads of the K fragments of the 32 keys from `k0` (tiles at `base`): lane `l`
    /// reads key `l % 16`, chunk `l / 16` of each K-tile. Keys at or past `ctx` read their tile's
    /// first row (any row of a page is readable; their scores are masked).
    #[inline(always)]
    fn load_k<const D: usize>(&self, k0: u32, base: &[usize; KT], lane: usize, s: &mut Step) {
        crate::unroll_max!(i < KT, 2 => {
            let key = k0 + (16 * i + lane % 16) as u32;
            let row = if key < self.ctx { lane % 16 } else { 0 };
            crate::unroll_max!(kt < D / 32, 8 => {
                // SAFETY: a row of a cache page (offsets from a valid or zeroed entry).
                s.k[i][kt] = unsafe { (self.k_cache.add(base[i] + row * D * 2 + kt * 64 + 16 * (lane / 16)) as *const U32x4).read() };
            });
        });
    }

    /// Issues the loads of the lane's V quads of the same keys (keys `4 kq .. 4 kq + 4` of slabs
    /// `2 round + half`); keys past `ctx` read their tile's rows as they are, which
    /// [`Keys::valid_v`] zeroes where they are used.
    #[inline(always)]
    fn load_v<const D: usize>(&self, base: &[usize; KT], role: &QuadRole, s: &mut Step) {
        // The lane's keys are in tile kq / 4.
        let vbase = if role.kq < 4 { base[0] } else { base[1] };
        crate::unroll_max!(round < V_ROUNDS, 4 => {
            let slab = 2 * round + role.half;
            if slab < D / 32 {
                crate::unroll_max!(x < 4, 4 => {
                    let r = 4 * (role.kq % 4) + x;
                    // SAFETY: as for K.
                    s.v[round][x] = unsafe { (self.v_cache.add(vbase + r * D * 2 + role.col_bytes(slab)) as *const U32x4).read() };
                });
            }
        });
    }

    /// Zeroes the V quads `v` of the keys from `k0` (from [`Keys::load_v`]) past `ctx` (their
    /// P is 0, but 0 * garbage could be NaN). Applied where the quads are stored, not where
    /// they are loaded: a select beside the loads made each wave wait for them there (~640
    /// clocks before the first step's scores in `cargo xtask profile attention_decode --shape
    /// "bf16 b1 h9 kv3 c64 d64 p16"`).
    #[inline(always)]
    fn valid_v(&self, k0: u32, role: &QuadRole, v: &mut [U32x4; 4]) {
        // Uniform: only a step reaching past the context has such keys.
        if k0 + DECODE_STEP > self.ctx {
            crate::unroll_max!(x < 4, 4 => {
                let key = k0 + (4 * role.kq + x) as u32;
                if key >= self.ctx {
                    v[x] = U32x4::splat(0);
                }
            });
        }
    }
}

/// The decode kernel for inputs `E` and head dimension `D`.
#[inline(always)]
pub fn decode<E: Half, const D: usize>(args: DecodeArgs) {
    let dk = D / 32;
    let lane = lane_id() as usize;
    let wave = readfirstlane(workitem_id_x() / 64) as usize;
    let (split, y, b) = (workgroup_id_x(), workgroup_id_y(), workgroup_id_z());
    // (The host keeps the query columns, 16 per grid y, below `SmallDiv`'s 2^20.)
    let (kvh, cg) = SmallDiv::new(args.col_groups).div_rem(y);
    // The lane's query column first (its loads open the chain to the first scores): head
    // `kvh * group + g`, row `n` (columns past the group's duplicate the last one; never
    // stored).
    let ncols = args.group * args.rows;
    let col = (cg * DECODE_COLS + (lane % 16) as u32).min(ncols - 1);
    let (g, n) = SmallDiv::new(args.rows).div_rem(col);
    let head = kvh * args.group + g;
    let qrow = b as u64 * args.q_batch_stride + n as u64 * args.q_row_stride as u64 + head as u64 * args.q_head_stride as u64;
    let mut qf = [U32x4::splat(0); 8];
    crate::unroll_max!(kt < dk, 8 => {
        // SAFETY: a row of Q (host-checked shape), 16-byte aligned.
        qf[kt] = unsafe { (args.q.add(qrow as usize * 2 + kt * 64 + 16 * (lane / 16)) as *const U32x4).read() };
    });
    // SAFETY: the host sized the length table to the grid's batch.
    let ctx = readfirstlane(unsafe { args.context_lens.add(b as usize).read() });
    let (ks, ke) = (split * args.split_keys, ((split + 1) * args.split_keys).min(ctx));
    let steps = if ke > ks { (ke - ks).div_ceil(DECODE_STEP) } else { 0 };

    let page_bytes = args.kv_heads as usize * args.page_size as usize * D * 2;
    let keys = Keys {
        k_cache: args.k_cache,
        v_cache: args.v_cache,
        // SAFETY: the sequence's row of the table (host-checked shape).
        table: Buffer::new(unsafe { args.block_table.add(b as usize * args.table_stride as usize) } as *const u8, 4 * args.table_stride),
        table_row: b * args.table_stride,
        error: args.error,
        pages: args.pages,
        page: Divisor { d: args.page_size, magic: args.page_magic, shift: args.page_shift },
        page_bytes,
        head_off: kvh as usize * args.page_size as usize * D * 2,
        ctx,
    };
    let role = QuadRole::of(lane);

    // Then the wave's first step's loads, so that everything below runs beside their latency.
    // Unconditional: a wave without steps reads some page of the cache (there is at least
    // one) for nothing; under its test, the first step's K and V registers were zeroed
    // before it and the loads issued some 200 instructions into the launch (modeled
    // `attention_decode bf16 b1 h9 kv3 c64 d64 p16`).
    let mut cur = Step::new();
    let mut st = wave as u32;
    {
        let k0 = ks + st * DECODE_STEP;
        let base = keys.bases::<D>(k0);
        keys.load_k::<D>(k0, &base, lane, &mut cur);
        keys.load_v::<D>(&base, &role, &mut cur);
    }

    // Row n sits at position ctx - rows + n: it attends keys up to there.
    let range = [KeyRange::new(0, (ctx + n) as i32 - args.rows as i32)];

    let mut arena = LdsArena::new();
    let vt = TransposedTile::new(&mut arena, D, WAVES);
    let c = args.scale_log2;
    let mut on = Online::<1>::new();
    let mut o = [F32x4::splat(0.0); 16];

    // The wave's steps w, w + 4, ...: one register buffer, refilled as soon as each half is
    // consumed (K after the scores, V after its LDS store), so the next step's loads are in
    // flight behind this one's softmax and P V. (Two buffers took 276 registers at d = 128.)
    while st < steps {
        let k0 = ks + st * DECODE_STEP;
        let next = st + WAVES as u32;
        let k1 = ks + next * DECODE_STEP;
        let mut s: Scores<KT, 1> = [[F32x4::splat(0.0)]; KT];
        crate::unroll_max!(kt < dk, 8 => {
            crate::unroll_max!(i < KT, 2 => {
                s[i][0] = mma16::<E>(cur.k[i][kt], qf[kt], s[i][0]);
            });
        });
        let base = if next < steps { keys.bases::<D>(k1) } else { [0; KT] };
        if next < steps {
            keys.load_k::<D>(k1, &base, lane, &mut cur);
        }
        // Masked: keys past the context, and the newest rows' causal corner.
        if k0 + DECODE_STEP + args.rows > ctx + 1 {
            mask(&mut s, (k0 + 4 * (lane / 16) as u32) as i32, &range);
        }
        let alpha = on.step(&mut s, c);
        if ballot(alpha[0] != 1.0) != 0 {
            crate::unroll_max!(dt < 2 * dk, 16 => {
                o[dt] = scale(o[dt], alpha[0]);
            });
        }
        crate::unroll_max!(round < V_ROUNDS, 4 => {
            let slab = 2 * round + role.half;
            if slab < dk {
                keys.valid_v(k0, &role, &mut cur.v[round]);
                // SAFETY: the wave's own tile; its earlier reads precede this in LDS order.
                unsafe { vt.store(wave, slab, &role, &cur.v[round]) };
            }
        });
        if next < steps {
            keys.load_v::<D>(&base, &role, &mut cur);
        }
        let p = p_chunk::<E, KT, 1>(&s, 0, 0);
        crate::unroll_max!(dt < 2 * dk, 16 => {
            // SAFETY: written by this wave just above (LDS is in order within a wave).
            let a = unsafe { vt.read(wave, dt, lane) };
            o[dt] = mma16::<E>(a, p, o[dt]);
        });
        st = next;
    }

    // Combine, tile pair by tile pair: pair `a` (tiles 2a, 2a + 1) belongs to wave `a % 4`,
    // which folds the other waves' accumulators of it into its own and writes it. Every wave
    // leaves in LDS its statistics and the tiles of the pairs it does not own (tile dt of the
    // w-th other wave of the owner at 16-byte slot (w * 2dk + dt) * 64 + lane: consecutive
    // per lane, in the owner's registers' layout). Why not one wave for all: the fold and the
    // output were a quarter of a short decode's launch, on one wave while three idled
    // (modeled `attention_decode bf16 b1 h9 kv3 c64 d64 p16`).
    let l_own = on.row_sum(0);
    barrier();
    let mut ar = LdsArena::new();
    let region = ar.take::<F32x4>((WAVES - 1) * 2 * dk * 64);
    let stats = ar.take::<[f32; 2]>(WAVES * 64);
    const { assert!((WAVES - 1) * 2 * (D / 32) * 64 * 16 + WAVES * 64 * 8 <= decode_lds_bytes(D as u32) as usize) };
    let owner = |dt: usize| (dt / 2) % WAVES;
    // The place of wave `w` among the other waves of `owner`.
    let other = |w: usize, owner: usize| if w > owner { w - 1 } else { w };
    crate::unroll_max!(dt < 2 * dk, 16 => {
        if owner(dt) != wave {
            // SAFETY: this wave's slot of tile dt (every V tile is done: barrier above).
            unsafe { region.write((other(wave, owner(dt)) * 2 * dk + dt) * 64 + lane, o[dt]) };
        }
    });
    // SAFETY: the wave's statistics slot of the lane.
    unsafe { stats.write(wave * 64 + lane, [on.m[0], l_own]) };
    barrier();
    if wave >= dk {
        // Owns no pair (there are D / 32).
        return;
    }
    let mut st_w = [[0.0f32; 2]; WAVES];
    let mut mx = f32::NEG_INFINITY;
    crate::unroll_max!(w < WAVES, 4 => {
        // SAFETY: written before the barrier (this wave's own too).
        st_w[w] = unsafe { stats.read(w * 64 + lane) };
        mx = mx.max(st_w[w][0]);
    });
    let m_use = if mx == f32::NEG_INFINITY { 0.0 } else { mx };
    let mut l = 0.0f32;
    let mut f = [0.0f32; WAVES];
    crate::unroll_max!(w < WAVES, 4 => {
        f[w] = exp2_fast(st_w[w][0] - m_use);
        l += st_w[w][1] * f[w];
    });
    crate::unroll_max!(dt < 2 * dk, 16 => {
        if owner(dt) == wave {
            o[dt] = scale(o[dt], f[wave]);
            crate::unroll_max!(w < WAVES, 4 => {
                if w != wave {
                    // SAFETY: written before the barrier.
                    let x = unsafe { region.read((other(w, wave) * 2 * dk + dt) * 64 + lane) };
                    // SAFETY: lane-wise arithmetic of plain f32 vectors.
                    o[dt] = unsafe { simd_fma(x, F32x4::splat(f[w]), o[dt]) };
                }
            });
        }
    });

    // Output: the columns of real query rows; a split without keys gives 0 and -inf.
    let valid = cg * DECODE_COLS + ((lane % 16) as u32) < ncols;
    let out_row = ((b * args.rows + n) * args.heads + head) as usize;
    let inv = if l == 0.0 { 0.0 } else { 1.0 / l };
    if args.splits == 1 {
        crate::unroll_max!(a < dk, 8 => {
            if a % WAVES == wave {
                let (d0, v) = output::chunk::<E>(o[2 * a], o[2 * a + 1], inv, a, lane);
                if valid {
                    // SAFETY: a row of O (`[batch, rows, heads, d]`, host-sized), 16-byte aligned.
                    unsafe { (args.o.add((out_row * D + d0) * 2) as *mut U32x4).write(v) };
                }
            }
        });
    } else {
        let at = split as usize * args.split_rows as usize + out_row;
        if valid {
            crate::unroll_max!(dt < 2 * dk, 16 => {
                if owner(dt) == wave {
                    // SAFETY: the split's row of the partials (host-sized), 16-byte aligned.
                    unsafe { (args.partial_o.add(at * D + 16 * dt + 4 * (lane / 16)) as *mut F32x4).write(scale(o[dt], inv)) };
                }
            });
            // (Every owner has the same statistics: pair 0's writes the log-sum-exp.)
            if lane < 16 && wave == 0 {
                let lse = if l == 0.0 { f32::NEG_INFINITY } else { (m_use + crate::dsl::math::log2(l)) * core::f32::consts::LN_2 };
                // SAFETY: as above.
                unsafe { args.partial_lse.add(at).write(lse) };
            }
        }
    }
}
