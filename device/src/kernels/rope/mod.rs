//! Rotary position embedding (see `abi::rope` for the layouts and the cos/sin design).
//!
//! The tensor is `rows = batch * seq * heads` head vectors of `head_dim`. A workgroup is a tile
//! of `tile_cols` column units by `256 / tile_cols` lanes; lane `ty` of the tile walks
//! `rows_per_lane` consecutive head vectors, so consecutive steps mostly stay on one token and
//! reuse its cos/sin (and position) from registers: they are recomputed only when the token
//! changes. A column unit is, with 16-byte accesses, one chunk (interleaved pairs inside it) or
//! two chunks half a rotation apart (HALF_SPLIT); otherwise one pair of elements. Units past
//! the rotated part copy their chunk (or element) unchanged.

mod angle;
mod entries;

use crate::abi::rope::{ROPE_BLOCK, RopeArgs, flags, rope_freq_stride};
use crate::dsl::dtype::Chunked;
use crate::dsl::ids::{workgroup_id_x, workitem_id_x};
use crate::dsl::lds::dynamic_lds;
use crate::dsl::mem::{load_b128, store_b128};
use crate::dsl::mem::{load_chunk, store_chunk};
use crate::dsl::sync::barrier;
use angle::sincos_pos;

/// The kernel: dispatches on the access width and the pair layout.
#[inline(always)]
pub fn rope<E: Chunked>(a: RopeArgs) {
    match (a.flags & flags::VECTOR_OK != 0, a.flags & flags::HALF_SPLIT != 0) {
        (true, true) => run::<E, true, true>(&a),
        (true, false) => run::<E, true, false>(&a),
        (false, true) => run::<E, false, true>(&a),
        (false, false) => run::<E, false, false>(&a),
    }
}

/// cos and sin of the pairs (at most 8) of a rotated unit.
struct Trig {
    cos: [f32; 8],
    sin: [f32; 8],
}

/// The frequencies `(hi, lo)` of the pairs of a rotated unit (fixed per unit, so loaded once per
/// unit, not per token).
struct Freqs {
    hi: [f32; 8],
    lo: [f32; 8],
}

impl Freqs {
    /// Frequencies of the `n` pairs of unit `u` (none in CACHE mode): from the LDS copy with
    /// FREQS_LDS (128-bit reads; `n` is even there), else from global memory.
    #[inline(always)]
    fn load<const VEC: bool>(a: &RopeArgs, u: usize, n: usize) -> Freqs {
        let mut f = Freqs { hi: [0.0; 8], lo: [0.0; 8] };
        if VEC && a.flags & flags::FREQS_LDS != 0 {
            // SAFETY: unit u's slot lies inside the staged table.
            let base = unsafe { dynamic_lds::<u8>().add(u * rope_freq_stride(n as u32) as usize) };
            crate::unroll!(q < 4 => {
                if 2 * q < n {
                    // SAFETY: staged by `stage_freqs`; 16-byte aligned (the stride is a multiple of 16).
                    let w = unsafe { load_b128(base.add(16 * q) as *const u32) }.to_array();
                    (f.hi[2 * q], f.lo[2 * q]) = (f32::from_bits(w[0]), f32::from_bits(w[1]));
                    (f.hi[2 * q + 1], f.lo[2 * q + 1]) = (f32::from_bits(w[2]), f32::from_bits(w[3]));
                }
            });
        } else if a.flags & flags::CACHE == 0 {
            let i0 = u * n;
            crate::unroll!(p < 8 => {
                if p < n {
                    // SAFETY: i0 + p < rot_dim / 2 frequencies.
                    unsafe {
                        f.hi[p] = a.freqs.add(2 * (i0 + p)).read();
                        f.lo[p] = a.freqs.add(2 * (i0 + p) + 1).read();
                    }
                }
            });
        }
        f
    }
}

/// FREQS_LDS: copies the frequencies of the `units` rotated units (`pairs` pairs each, an even
/// number) to LDS at [`rope_freq_stride`] per unit, 16 bytes per work-item and step. Lanes
/// `8k .. 8k + 8` take the same chunk of 8 consecutive units, so their LDS writes fall on
/// distinct bank groups; a step's lanes still cover whole 64-byte lines of the table.
///
/// # Safety
/// Every work-item of the workgroup calls this (it ends with a barrier).
#[inline(always)]
unsafe fn stage_freqs(a: &RopeArgs, units: usize, pairs: usize) {
    let (t, chunks) = (workitem_id_x() as usize, pairs / 2);
    let stride = rope_freq_stride(pairs as u32) as usize;
    // 8 units x `chunks` chunks per round of 8 * chunks work-items.
    let per_round = 8 * chunks;
    let mut i = t;
    while i < units.div_ceil(8) * per_round {
        let (round, k, lane) = (i / per_round, (i % per_round) / 8, i % 8);
        let u = 8 * round + lane;
        if u < units {
            // SAFETY: u < units, k < chunks: inside the table (pairs * units (hi, lo) f32) and
            // inside the LDS the host sized with `rope_freq_lds_bytes`.
            unsafe {
                let c = load_b128((a.freqs.add(2 * (u * pairs + 2 * k))) as *const u32);
                store_b128(dynamic_lds::<u8>().add(u * stride + 16 * k) as *mut u32, c);
            }
        }
        i += ROPE_BLOCK as usize;
    }
    barrier();
}

#[inline(always)]
fn run<E: Chunked, const VEC: bool, const HALF: bool>(a: &RopeArgs) {
    // Elements per access, pairs per rotated unit.
    let v = if VEC { E::PER_CHUNK } else { 1 };
    let pairs = if !VEC {
        1
    } else if HALF {
        v
    } else {
        v / 2
    };
    let (d, rot) = (a.head_dim as usize, a.rot_dim as usize);
    let half = rot / 2;
    let rot_units = if VEC { if HALF { half / v } else { rot / v } } else { half };
    let pass_units = (d - rot) / v;
    let units = rot_units + pass_units;

    if VEC && a.flags & flags::FREQS_LDS != 0 {
        // SAFETY: uniform branch, before any work-item leaves: every one reaches the barrier.
        unsafe { stage_freqs(a, rot_units, pairs) };
    }
    let t = workitem_id_x() as usize;
    // max(1): the host never passes 0, and LLVM then drops the divide-by-zero panics.
    let tx_n = a.tile_cols.max(1) as usize;
    let ty_n = ROPE_BLOCK as usize / tx_n;
    let (ty, tx) = (t / tx_n, t % tx_n);
    if ty >= ty_n {
        return;
    }
    // Head-vector and token indices fit 32 bits (host-checked): 32-bit divisions are a few
    // instructions, 64-bit ones a long sequence.
    let heads = a.heads.max(1);
    let rows = a.batch * a.seq * heads;
    let k = a.rows_per_lane;
    let first = (workgroup_id_x() * ty_n as u32 + ty as u32) * k;
    let last = (first + k).min(rows);

    let mut trig = Trig { cos: [0.0; 8], sin: [0.0; 8] };
    let mut freqs = Freqs { hi: [0.0; 8], lo: [0.0; 8] };
    let mut cached = (u32::MAX, usize::MAX); // (token, unit) the trig holds
    let mut freq_unit = usize::MAX; // the unit the frequencies belong to
    let mut r = first;
    while r < last {
        let tok = r / heads;
        // SAFETY: r < rows: the head vector lies inside x and out.
        let (src, dst) = unsafe { (a.x.add(r as usize * d * E::BYTES), a.out.add(r as usize * d * E::BYTES)) };
        let mut u = tx;
        while u < units {
            if u < rot_units {
                if cached != (tok, u) {
                    if freq_unit != u {
                        freqs = Freqs::load::<VEC>(a, u, pairs);
                        freq_unit = u;
                    }
                    trig = cos_sin(a, tok, u * pairs, pairs, &freqs);
                    cached = (tok, u);
                }
                // SAFETY: the unit's elements lie inside the head vector.
                unsafe { rotate::<E, VEC, HALF>(src, dst, u, v, pairs, half, &trig) };
            } else {
                let e = rot + (u - rot_units) * v;
                // SAFETY: e + v <= head_dim.
                unsafe {
                    if VEC {
                        store_chunk(dst, e * E::BYTES, load_chunk(src, e * E::BYTES));
                    } else {
                        E::store(dst, e, E::load(src, e));
                    }
                }
            }
            u += tx_n;
        }
        r += 1;
    }
}

/// cos and sin of pairs `i0 .. i0 + n` at the position of token `tok`.
#[inline(always)]
fn cos_sin(a: &RopeArgs, tok: u32, i0: usize, n: usize, f: &Freqs) -> Trig {
    let seq = a.seq.max(1);
    let (b, s) = (tok / seq, tok % seq);
    // SAFETY: b < batch entries of offsets (with OFFSETS).
    let start = if a.flags & flags::OFFSETS != 0 { unsafe { a.offsets.add(b as usize).read() } } else { 0 };
    let pos = start.wrapping_add(s as i32);
    let mut t = Trig { cos: [0.0; 8], sin: [0.0; 8] };
    let half = a.rot_dim as usize / 2;
    if a.flags & flags::CACHE != 0 {
        let ok = pos >= 0 && (pos as u32) < a.cache_rows;
        let row = if ok { pos as usize * half } else { 0 };
        crate::unroll!(p < 8 => {
            if p < n {
                // SAFETY: pos < cache_rows and i0 + p < rot_dim / 2: inside the tables.
                let (c, sn) = if ok { unsafe { (a.cos.add(row + i0 + p).read(), a.sin.add(row + i0 + p).read()) } } else { (f32::NAN, f32::NAN) };
                t.cos[p] = c;
                t.sin[p] = sn;
            }
        });
    } else {
        crate::unroll!(p < 8 => {
            if p < n {
                let (sn, c) = sincos_pos(pos, f.hi[p], f.lo[p]);
                t.cos[p] = c;
                t.sin[p] = sn;
            }
        });
    }
    t
}

/// Rotates unit `u` of the head vector `src` into `dst`.
///
/// # Safety
/// The unit's elements lie inside both head vectors (16-byte aligned chunks with VEC).
#[inline(always)]
unsafe fn rotate<E: Chunked, const VEC: bool, const HALF: bool>(
    src: *const u8,
    dst: *mut u8,
    u: usize,
    v: usize,
    pairs: usize,
    half: usize,
    t: &Trig,
) {
    let rot2 = |x: f32, y: f32, c: f32, s: f32| (x * c - y * s, y * c + x * s);
    unsafe {
        if VEC && HALF {
            let (ea, eb) = (u * v, half + u * v);
            let xa = E::unpack(load_chunk(src, ea * E::BYTES));
            let xb = E::unpack(load_chunk(src, eb * E::BYTES));
            let (mut ya, mut yb) = ([0f32; 8], [0f32; 8]);
            crate::unroll!(p < 8 => {
                if p < pairs {
                    (ya[p], yb[p]) = rot2(xa[p], xb[p], t.cos[p], t.sin[p]);
                }
            });
            store_chunk(dst, ea * E::BYTES, E::pack(&ya));
            store_chunk(dst, eb * E::BYTES, E::pack(&yb));
        } else if VEC {
            let e = u * v;
            let x = E::unpack(load_chunk(src, e * E::BYTES));
            let mut y = [0f32; 8];
            crate::unroll!(p < 4 => {
                if p < pairs {
                    (y[2 * p], y[2 * p + 1]) = rot2(x[2 * p], x[2 * p + 1], t.cos[p], t.sin[p]);
                }
            });
            store_chunk(dst, e * E::BYTES, E::pack(&y));
        } else {
            let (ea, eb) = if HALF { (u, u + half) } else { (2 * u, 2 * u + 1) };
            let (ya, yb) = rot2(E::load(src, ea), E::load(src, eb), t.cos[0], t.sin[0]);
            E::store(dst, ea, ya);
            E::store(dst, eb, yb);
        }
    }
}
