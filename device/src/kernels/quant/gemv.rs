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
//! and runs GEMM's per-element epilogue (bias, activation, residual, conversion).

use super::format::{Format, Regs, load_chunk};
use crate::abi::gemm::flags as gflags;
use crate::abi::quant::{self as abi, CHUNK_GROUPS, GROUP, QGemvArgs, TILE_ROWS, dtype, element, split_halves};
use crate::dsl::convert::{f32_to_bf16, f32_to_f16_bits};
use crate::dsl::ids::{workgroup_id_x, workgroup_id_y, workitem_id_x};
use crate::dsl::lds::LdsArena;
use crate::dsl::mem::Buffer;
use crate::dsl::mfma::{mfma_16x16x16_bf16, mfma_16x16x16_f16};
use crate::dsl::simd::{Bf16x4, F16x4, F32x4};
use crate::dsl::sync::barrier;
use crate::dsl::wave::{lane_id, readfirstlane};
use crate::kernels::gemm::epilogue::{self, Params, Target};

/// The f16 bits of the integer `v`, `1024 <= v < 2048` (exponent 10, mantissa `v - 1024`).
const fn f16_int(v: u32) -> u16 {
    assert!(v >= 1024 && v < 2048);
    0x6400 | (v - 1024) as u16
}

/// Codes `4h..4h + 4` of the lane's part of group `g`, minus the format's offset, as f16
/// (exact): `0x6400 | u` is the f16 `1024 + u`; one packed subtraction of `1024 + OFFSET`.
#[inline(always)]
fn codes_f16<F: Format>(r: &Regs, g: usize, h: usize) -> F16x4 {
    let p = [F::pair(r, g, 2 * h) | 0x6400_6400, F::pair(r, g, 2 * h + 1) | 0x6400_6400];
    // SAFETY: 8 bytes of f16 bits either way.
    let v: F16x4 = unsafe { core::mem::transmute(p) };
    let bias = f16::from_bits(const { f16_int(1024 + F::OFFSET) });
    // SAFETY: a lane-wise subtraction of two f16x4 vectors.
    unsafe { core::intrinsics::simd::simd_sub(v, F16x4::splat(bias)) }
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

/// One bf16 1.0 in each of 4 lanes of an operand.
const BF16_ONES: u32 = 0x3F80_3F80;
/// One f16 1.0 in each half.
const F16_ONES: u32 = 0x3C00_3C00;

/// The activation words of one group for one lane: half `h` (codes `4h..4h + 4`) in words
/// `2h, 2h + 1` (16-bit types) or `4h..4h + 4` (f32).
type XWords = [u32; 8];

/// Loads the lane's activations of global group `kg` (its part's 8 weights of the group) from
/// the row at byte `row_off` of `xb`; rows past M read as zero (the buffer's range check).
///
/// # Safety
/// `xb` covers the activation rows; `kg` is a group inside K.
#[inline(always)]
unsafe fn load_x<F: Format, const X: u32>(xb: &Buffer, row_off: u32, kg: usize, part: usize) -> XWords {
    let es = if X == dtype::F32 { 4 } else { 2 };
    let mut out = [0u32; 8];
    crate::unroll_max!(h < 2, 2 => {
        let e = (GROUP * kg + element(F::F, part, 4 * h)) as u32;
        let at = row_off + e * es;
        // SAFETY: inside the activation rows (or past them: zeros).
        unsafe {
            if X == dtype::F32 {
                let v = xb.load_b128(at, 0).to_array();
                crate::unroll_max!(q < 4, 4 => { out[4 * h + q] = v[q]; });
            } else if !split_halves(F::F) && h == 0 {
                // Contiguous parts: both halves are one 16-byte run.
                let v = xb.load_b128(at, 0).to_array();
                crate::unroll_max!(q < 4, 4 => { out[q] = v[q]; });
            } else if split_halves(F::F) {
                let v = xb.load_b64(at, 0).to_array();
                out[2 * h] = v[0];
                out[2 * h + 1] = v[1];
            }
        }
    });
    out
}

/// The lane's activations of the `nb` groups of chunk `c`.
///
/// # Safety
/// As [`load_x`].
#[inline(always)]
unsafe fn load_xs<F: Format, const X: u32>(xb: &Buffer, row_off: u32, c: usize, nb: usize, part: usize) -> [XWords; CHUNK_GROUPS] {
    let mut x = [[0u32; 8]; CHUNK_GROUPS];
    crate::unroll_max!(g < CHUNK_GROUPS, 8 => {
        if g < nb {
            // SAFETY: group c * 8 + g is inside K (caller).
            x[g] = unsafe { load_x::<F, X>(xb, row_off, c * CHUNK_GROUPS + g, part) };
        }
    });
    x
}

/// Adds group `g`'s contribution to the accumulators `acc` (C layout: register `e` of lane `l`
/// is activation row `4 (l / 16) + e`, weight row `l % 16`).
#[inline(always)]
fn group<F: Format, const X: u32>(acc: &mut F32x4, r: &Regs, g: usize, x: &XWords) {
    let s = F::scale(r, g);
    let zero = F32x4::splat(0.0);
    // Per half h: the products with the codes (and with ones for the activation sums).
    let mut c = [zero; 2];
    let mut sums = [zero; 2];
    crate::unroll_max!(h < 2, 2 => {
        // Both halves accumulate into one C unless their scales differ (Q6_K).
        let into = if split_halves(F::F) { h } else { 0 };
        if X == dtype::F16 {
            // SAFETY (transmutes): 8 bytes of f16 bits.
            let xa: F16x4 = unsafe { core::mem::transmute([x[2 * h], x[2 * h + 1]]) };
            c[into] = mfma_16x16x16_f16(xa, codes_f16::<F>(r, g, h), c[into]);
            if F::HAS_MIN {
                let ones: F16x4 = unsafe { core::mem::transmute([F16_ONES, F16_ONES]) };
                sums[0] = mfma_16x16x16_f16(xa, ones, sums[0]);
            }
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
            let ones: Bf16x4 = unsafe { core::mem::transmute([BF16_ONES, BF16_ONES]) };
            crate::unroll_max!(j < 3, 3 => {
                if j < n_terms {
                    c[into] = mfma_16x16x16_bf16(terms[j], codes, c[into]);
                    if F::HAS_MIN {
                        sums[0] = mfma_16x16x16_bf16(terms[j], ones, sums[0]);
                    }
                }
            });
        }
    });
    let (c0, c1, x0) = (c[0].to_array(), c[1].to_array(), sums[0].to_array());
    let mut v = acc.to_array();
    crate::unroll_max!(e < 4, 4 => {
        v[e] += s.a0 * c0[e];
        if split_halves(F::F) {
            v[e] += s.a1 * c1[e];
        }
        if F::HAS_MIN {
            v[e] += s.b * x0[e];
        }
    });
    *acc = F32x4::from_array(v);
}

/// A wave's share: chunks `c0..c1` of tile `tile`, activations of type `X`.
#[inline(always)]
fn wave_sum<F: Format, const X: u32>(a: &QGemvArgs, tile: usize, c0: usize, c1: usize) -> F32x4 {
    let lane = lane_id() as usize;
    let (part, row) = (lane / TILE_ROWS, lane % TILE_ROWS);
    let k = a.k as usize;
    let chunks = (k / GROUP).div_ceil(CHUNK_GROUPS);
    let tail = abi::tail_groups(k);
    let es = if X == dtype::F32 { 4u32 } else { 2 };
    // The activation rows as one range-checked buffer: rows m >= M read as zero.
    let xb = Buffer::new(a.x, a.m * a.ldx * es);
    let row_off = (row as u32) * a.ldx * es;
    // SAFETY: the tile lies inside the layout the host sized.
    let tile_base = unsafe { a.w.add(tile * abi::tile_bytes(F::F, k)) };
    let full = abi::chunk_bytes(F::F, CHUNK_GROUPS);
    let nb_of = |c: usize| if c + 1 == chunks { tail } else { CHUNK_GROUPS };

    let mut acc = F32x4::splat(0.0);
    if c0 >= c1 {
        return acc;
    }
    // SAFETY (fetches): chunk c of the tile; its groups are inside K.
    let mut regs = unsafe { load_chunk::<F>(tile_base.add(c0 * full), nb_of(c0), part, row) };
    let mut xs = unsafe { load_xs::<F, X>(&xb, row_off, c0, nb_of(c0), part) };
    let mut c = c0;
    loop {
        // The next chunk's loads are issued before this chunk's arithmetic.
        let more = c + 1 < c1;
        let mut next_regs = [0u32; abi::MAX_LANE_WORDS];
        let mut next_xs = [[0u32; 8]; CHUNK_GROUPS];
        if more {
            // SAFETY: as above.
            unsafe {
                next_regs = load_chunk::<F>(tile_base.add((c + 1) * full), nb_of(c + 1), part, row);
                next_xs = load_xs::<F, X>(&xb, row_off, c + 1, nb_of(c + 1), part);
            }
        }
        let nb = nb_of(c);
        crate::unroll_max!(g < CHUNK_GROUPS, 8 => {
            if g < nb {
                group::<F, X>(&mut acc, &regs, g, &xs[g]);
            }
        });
        if !more {
            break;
        }
        regs = next_regs;
        xs = next_xs;
        c += 1;
    }
    acc
}

/// The `quant_gemv_*` kernel for format `F`: workgroup (x, y) computes rows `16 y ..` of
/// `y`, columns `16 x ..`.
#[inline(always)]
pub fn gemv<F: Format>(mut a: QGemvArgs) {
    // This workgroup's 16 activation rows (a skinny GEMM with M > 16 re-reads W per 16 rows).
    let m0 = workgroup_id_y() as usize * TILE_ROWS;
    let (xs, os) = (if a.x_type == dtype::F32 { 4 } else { 2 }, if a.out_type == dtype::F32 { 4 } else { 2 });
    // SAFETY: the host launched ceil(m / 16) row blocks; these are offsets inside x, y, residual.
    unsafe {
        a.x = a.x.add(m0 * a.ldx as usize * xs);
        a.y = a.y.add(m0 * a.ldy as usize * os);
        a.residual = a.residual.add(m0 * a.ldr as usize * os);
    }
    a.m = (a.m - m0 as u32).min(TILE_ROWS as u32);
    let tile = workgroup_id_x() as usize;
    let thread = workitem_id_x() as usize;
    let wave = readfirstlane(thread as u32 / 64) as usize;
    let lane = lane_id() as usize;
    let waves = (crate::dsl::ids::workgroup_size_x() / 64) as usize;
    let chunks = (a.k as usize / GROUP).div_ceil(CHUNK_GROUPS);
    let per = a.chunks_per_wave as usize;
    let (c0, c1) = ((wave * per).min(chunks), ((wave + 1) * per).min(chunks));
    let acc = match a.x_type {
        dtype::F16 => wave_sum::<F, { dtype::F16 }>(&a, tile, c0, c1),
        dtype::BF16 => wave_sum::<F, { dtype::BF16 }>(&a, tile, c0, c1),
        _ => wave_sum::<F, { dtype::F32 }>(&a, tile, c0, c1),
    };

    // The waves' partial sums, [wave][e][lane], then summed in wave order.
    let lds = LdsArena::new().take::<f32>(waves * 4 * 64);
    let v = acc.to_array();
    crate::unroll_max!(e < 4, 4 => {
        // SAFETY: this wave's region.
        unsafe { lds.write((wave * 4 + e) * 64 + lane, v[e]) };
    });
    barrier();
    let (m, n) = (a.m as usize, a.n as usize);
    let params = Params {
        alpha: 1.0,
        beta: 0.0,
        bias: a.bias,
        out_type: a.out_type,
        activation: a.activation,
        flags: a.flags & (gflags::BIAS | gflags::RESIDUAL),
    };
    let target = Target { c: a.y, residual: a.residual, m, n, ldc: a.ldy as usize, ldr: a.ldr as usize, vector_ok: false };
    let mut t = thread;
    while t < m * TILE_ROWS {
        let (mi, ni) = (t / TILE_ROWS, t % TILE_ROWS);
        let col = tile * TILE_ROWS + ni;
        if col < n {
            let mut sum = 0.0f32;
            let mut w = 0;
            while w < waves {
                // SAFETY: written before the barrier.
                sum += unsafe { lds.read((w * 4 + mi % 4) * 64 + (mi / 4) * TILE_ROWS + ni) };
                w += 1;
            }
            let y = epilogue::element(&params, &target, sum, mi, col);
            let at = mi * target.ldc + col;
            // SAFETY: mi < m, col < n: inside y.
            unsafe {
                match a.out_type {
                    dtype::F32 => (a.y as *mut f32).add(at).write(y),
                    dtype::F16 => (a.y as *mut u16).add(at).write(f32_to_f16_bits(y)),
                    _ => (a.y as *mut u16).add(at).write(f32_to_bf16(y).0),
                }
            }
        }
        t += waves * 64;
    }
}
