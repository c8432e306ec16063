//! The GEMM epilogue: from the f32 accumulators to C.
//!
//! Order per element: `alpha * acc`, `+ beta * C_old` (BETA), `+ bias[col]` (BIAS), activation,
//! `+ residual` (RESIDUAL), conversion to the output type (nearest even). With PARTIAL the raw
//! accumulators are written as f32 for a split-K reduction instead.
//!
//! Why through LDS: in the accumulator layout (GFX942.md: register e of lane l holds
//! C[4 * (l / 16) + e][l % 16] of a 16x16 tile) a lane's values lie in one column, so direct
//! stores are 2-4 bytes wide and 16 lanes share a row. Each wave instead writes one 16-row strip
//! of its tile row into its own LDS region (free once the main loop's last barrier passed; waves
//! never touch each other's region, and LDS is in order within a wave), then reads it back so
//! lane l owns 16 consecutive columns of row l % 16: 16-byte stores, every 64-byte line fully
//! written, and the per-element epilogue exists once in a loop instead of unrolled per element.
//!
//! Strip layout: rows of 64 floats, the 4-float groups of row r permuted by an XOR (see
//! [`strip_index`]), so that neither side has bank conflicts under MI300X's measured LDS lane
//! phases: the 32-bit writes of a 32-lane phase (rows e and e + 4, 16 columns each) and the
//! 128-bit reads, whose 8-lane phases pair lane quads (0,5), (1,4), (2,7), (3,6) of each half
//! (rows r and r + 2 for half outputs, r and r + 1 for f32). A padded pitch cannot serve both:
//! the reads need rows r and r + 2 on opposite 4-bank-group parity, which 16-byte-aligned rows
//! never are.

use crate::abi::Bf16;
use crate::abi::gemm::{activation, flags, out_type};
use crate::dsl::convert::{bf16_pair, bf16_to_f32, f16_bits_to_f32, f32_to_bf16, f32_to_f16_bits};
use crate::dsl::lds::LdsSlice;
use crate::dsl::math;
use crate::dsl::mem::{store_b64, store_b128};
use crate::dsl::simd::{F32x4, U32x2, U32x4};
use crate::tile::reg::RegTile;
use core::sync::atomic::{Ordering, compiler_fence};

/// Floats per staged row (64 columns, no padding: see [`strip_index`]).
pub const STRIP_PITCH: usize = 64;

/// Position of (`row`, `col`) in a strip: column bits 2 and 4 flipped by row bits 1 and 2.
/// Aligned groups of 4 columns stay contiguous (16-byte accesses keep working); rows e and
/// e + 4 land 16 banks apart; rows r and r + 2 (r % 4 < 2) on opposite 4-bank-group parity.
#[inline(always)]
pub fn strip_index(row: usize, col: usize) -> usize {
    row * STRIP_PITCH + (col ^ (((row >> 1) & 1) << 2) ^ (((row >> 2) & 1) << 4))
}
/// Floats of LDS one wave needs for its strip (16 rows).
pub const STRIP_FLOATS: usize = 16 * STRIP_PITCH;

/// Reads element `idx` of an output-typed tensor as f32.
///
/// # Safety
/// `idx` is inside the tensor.
#[inline(always)]
pub unsafe fn load_out(p: *const u8, ty: u32, idx: usize) -> f32 {
    unsafe {
        match ty {
            out_type::F32 => (p as *const f32).add(idx).read(),
            out_type::F16 => f16_bits_to_f32((p as *const u16).add(idx).read()),
            _ => bf16_to_f32(Bf16((p as *const u16).add(idx).read())),
        }
    }
}

/// The value of an element of output type `ty` from its raw bits (the low 16 for f16 and
/// bf16), as [`load_out`] reads it: for kernels that load an element early, as bits.
/// (`load_out` keeps its own conversions: written through this function, its code in the
/// Q4_1/Q5_1 GEMV epilogues took two more scalar registers, which spilled.)
#[inline(always)]
pub fn out_bits_to_f32(ty: u32, bits: u32) -> f32 {
    match ty {
        out_type::F32 => f32::from_bits(bits),
        out_type::F16 => f16_bits_to_f32(bits as u16),
        _ => bf16_to_f32(Bf16(bits as u16)),
    }
}

/// Stores `v` rounded to output type `ty` as element `idx` of the array at `p` (the
/// counterpart of [`load_out`], for kernels that write single elements).
///
/// # Safety
/// Element `idx` is writable device memory of type `ty`.
#[inline(always)]
pub unsafe fn store_out(p: *mut u8, ty: u32, idx: usize, v: f32) {
    unsafe {
        match ty {
            out_type::F32 => (p as *mut f32).add(idx).write(v),
            out_type::F16 => (p as *mut u16).add(idx).write(f32_to_f16_bits(v)),
            _ => (p as *mut u16).add(idx).write(f32_to_bf16(v).0),
        }
    }
}

#[inline(always)]
fn convert(ty: u32, v: f32) -> u32 {
    match ty {
        out_type::F16 => f32_to_f16_bits(v) as u32,
        _ => f32_to_bf16(v).0 as u32,
    }
}

#[inline(always)]
fn activate(kind: u32, x: f32) -> f32 {
    match kind {
        activation::RELU => {
            if x > 0.0 || x.is_nan() {
                x
            } else {
                0.0
            }
        }
        activation::GELU_ERF => math::gelu_erf(x),
        activation::GELU_TANH => math::gelu_tanh(x),
        activation::SILU => math::silu(x),
        _ => x,
    }
}

/// The elementwise part of the epilogue (from the kernel's arguments).
#[derive(Clone, Copy)]
pub struct Params {
    /// Scale of the product.
    pub alpha: f32,
    /// Scale of the existing C.
    pub beta: f32,
    /// Per-column f32 bias.
    pub bias: *const f32,
    /// An `out_type` value.
    pub out_type: u32,
    /// An `activation` value.
    pub activation: u32,
    /// `flags` bits (BETA, BIAS, RESIDUAL, PARTIAL).
    pub flags: u32,
}

/// Everything the epilogue needs besides the accumulators.
pub struct Target {
    /// C (or the f32 partials), at this batch/split.
    pub c: *mut u8,
    /// Residual at this batch.
    pub residual: *const u8,
    /// Rows and columns of C.
    pub m: usize,
    /// See `m`.
    pub n: usize,
    /// Row strides.
    pub ldc: usize,
    /// See `ldc`.
    pub ldr: usize,
    /// 16-byte stores of C are allowed (aligned base and row stride).
    pub vector_ok: bool,
}

/// True when C takes f32: raw partials (PARTIAL) or an f32 output.
#[inline(always)]
fn f32_out(args: &Params) -> bool {
    args.flags & flags::PARTIAL != 0 || args.out_type == out_type::F32
}

/// True when the epilogue is `alpha * acc` alone (or raw partials): no per-element reads.
#[inline(always)]
fn bare(args: &Params) -> bool {
    args.flags & flags::PARTIAL != 0
        || (args.flags & (flags::BETA | flags::BIAS | flags::RESIDUAL) == 0 && args.activation == activation::NONE)
}

/// True when the epilogue is linear in the accumulator: no old C (BETA), no bias, no
/// activation; [`element_linear`] computes it.
#[inline(always)]
pub fn linear(args: &Params) -> bool {
    args.flags & (flags::BETA | flags::BIAS) == 0 && args.activation == activation::NONE
}

/// [`element`] of a [`linear`] epilogue: `alpha * acc`, plus the residual (RESIDUAL); the same
/// value. For the short epilogues of latency-bound launches (the decode GEMVs): in a loop
/// around [`element`], the activations' constants (some twenty of them) are set up before
/// the loop whether an activation runs or not.
#[inline(always)]
pub fn element_linear(args: &Params, t: &Target, acc: f32, row: usize, col: usize) -> f32 {
    let mut x = args.alpha * acc;
    if args.flags & flags::RESIDUAL != 0 {
        // SAFETY: row < m, col < n: inside the residual.
        x += unsafe { load_out(t.residual, args.out_type, row * t.ldr + col) };
    }
    x
}

/// The per-element epilogue of the accumulator `acc` at (`row`, `col`) of C (inside C): alpha,
/// beta * C, bias, activation, residual.
#[inline(always)]
pub fn element(args: &Params, t: &Target, acc: f32, row: usize, col: usize) -> f32 {
    let ty = args.out_type;
    let mut x = args.alpha * acc;
    // SAFETY: row < m, col < n: inside C, bias and residual.
    unsafe {
        if args.flags & flags::BETA != 0 {
            x += args.beta * load_out(t.c, ty, row * t.ldc + col);
        }
        if args.flags & flags::BIAS != 0 {
            x += args.bias.add(col).read();
        }
        x = activate(args.activation, x);
        if args.flags & flags::RESIDUAL != 0 {
            x += load_out(t.residual, ty, row * t.ldr + col);
        }
    }
    x
}

/// `V` consecutive finished values of row `row` from column `col`, from the strip (row `srow`,
/// column `scol`) to C; `alpha` applied here when the epilogue is bare.
#[inline(always)]
fn process<const V: usize>(args: &Params, t: &Target, strip: LdsSlice<f32>, srow: usize, scol: usize, row: usize, col: usize) {
    let scale = if bare(args) && args.flags & flags::PARTIAL == 0 { args.alpha } else { 1.0 };
    if t.vector_ok && col + V <= t.n {
        let mut v = [0f32; 8];
        crate::unroll!(q < 2 => {
            if q * 4 < V {
                // SAFETY: inside the strip.
                let x: F32x4 = unsafe { strip.read_as(strip_index(srow, scol + 4 * q)) };
                let x = x.to_array();
                crate::unroll!(e < 4 => {
                    v[4 * q + e] = x[e] * scale;
                });
            }
        });
        store_row::<V>(args, t, v, row, col);
    } else {
        // Element stores (an unaligned C or the columns at its edge), a runtime loop over the
        // strip: unrolled, its per-column masks were hoisted out of the loops into SGPRs and
        // spilled.
        let ty = if args.flags & flags::PARTIAL != 0 { out_type::F32 } else { args.out_type };
        let mut e = 0;
        while e < V && col + e < t.n {
            // SAFETY: inside the strip; row < m, col + e < n: inside C.
            unsafe {
                let x = strip.read(strip_index(srow, scol + e)) * scale;
                let at = row * t.ldc + col + e;
                if ty == out_type::F32 {
                    (t.c as *mut f32).add(at).write(x);
                } else {
                    (t.c as *mut u16).add(at).write(convert(ty, x) as u16);
                }
            }
            e += 1;
        }
    }
}

/// The epilogue of the accumulators `v[..V]` of row `row`, columns `col..col + V`, stored to C
/// (`V` = 8 or 4 for half outputs, 4 for f32: one 16-byte, or for 4 halves 8-byte, store when
/// the columns are inside C and `t.vector_ok`; columns past N are dropped). Shared with the
/// split-K reduction.
#[inline(always)]
pub fn finish<const V: usize>(args: &Params, t: &Target, mut v: [f32; 8], row: usize, col: usize) {
    let partial = args.flags & flags::PARTIAL != 0;
    if !partial && bare(args) {
        // The common case (a bare product): no per-element reads or branches.
        crate::unroll!(e < 8 => {
            if e < V {
                v[e] *= args.alpha;
            }
        });
    } else if !partial {
        crate::unroll!(e < 8 => {
            if e < V && col + e < t.n {
                v[e] = element(args, t, v[e], row, col + e);
            }
        });
    }
    store_row::<V>(args, t, v, row, col);
}

/// Stores the finished values `v[..V]` of row `row`, columns `col..` (see [`finish`]).
#[inline(always)]
fn store_row<const V: usize>(args: &Params, t: &Target, v: [f32; 8], row: usize, col: usize) {
    let ty = if args.flags & flags::PARTIAL != 0 { out_type::F32 } else { args.out_type };
    let full = col + V <= t.n;
    let vector = full && t.vector_ok;
    let base = row * t.ldc + col;
    // SAFETY: every element written is inside C (row < m, col + e < n); the vector store only when
    // all V are and the address is 16-byte aligned.
    unsafe {
        if ty == out_type::F32 {
            let p = (t.c as *mut f32).add(base);
            if vector {
                store_b128(p as *mut u32, U32x4::from_array([v[0].to_bits(), v[1].to_bits(), v[2].to_bits(), v[3].to_bits()]));
            } else {
                crate::unroll!(e < 4 => {
                    if e < V && col + e < t.n {
                        p.add(e).write(v[e]);
                    }
                });
            }
        } else {
            let p = (t.c as *mut u16).add(base);
            let h = |k: usize| half_pair(ty, v[k], v[k + 1]);
            if vector && V == 4 {
                store_b64(p as *mut u32, U32x2::from_array([h(0), h(2)]));
            } else if vector {
                store_b128(p as *mut u32, U32x4::from_array([h(0), h(2), h(4), h(6)]));
            } else {
                crate::unroll!(e < 8 => {
                    if e < V && col + e < t.n {
                        p.add(e).write(convert(ty, v[e]) as u16);
                    }
                });
            }
        }
    }
}

/// Writes this wave's accumulators, whose top-left element is (`row0`, `col0`) of C, staging each
/// 16-row band through `strip` (this wave's [`STRIP_FLOATS`] of LDS). Every configuration gives
/// a wave 64 columns.
///
/// A tile wholly inside C with a bare epilogue takes [`store_whole`]. Otherwise the bands, the
/// element pass and the strip-to-C steps are runtime loops, not unrolled: the per-element
/// epilogue (beta, bias, five activations, residual, three output types) is large: unrolled per
/// band and step it made each 128x128 kernel 45k instructions and the code object 4.3 MB. Only
/// the accumulator-to-strip writes need constant register indices; `RegTile::band` keeps them
/// constant behind a branch per band.
#[inline(always)]
pub fn store<W: RegTile>(args: &Params, t: &Target, acc: &W, strip: LdsSlice<f32>, row0: usize, col0: usize, lane: usize) {
    // (The whole-tile path's offsets are 32-bit: the tile's last row ends below 4 GiB of C.)
    let rows_end = row0 + 16 * W::BANDS;
    if bare(args) && t.vector_ok && rows_end <= t.m && col0 + 64 <= t.n && (rows_end as u64 * t.ldc as u64 * 4) >> 32 == 0 {
        store_whole(args, t, acc, strip, row0, col0, lane);
        return;
    }
    let f32_out = f32_out(args);
    let mut band = 0;
    while band < W::BANDS {
        // Accumulators -> strip (the accumulator layout's writes: 32 consecutive columns of one
        // row per 32-lane phase for 32x32 tiles, rows e and e + 4 for 16x16 ones; see
        // [`strip_index`]).
        acc.band(band, lane, |row, col, v| {
            // SAFETY: inside the wave's strip (16 rows, 64 columns).
            unsafe { strip.write(strip_index(row, col), v) };
        });
        // LDS executes a wave's accesses in order; this only stops the compiler moving them.
        compiler_fence(Ordering::SeqCst);
        if !bare(args) {
            // The per-element epilogue, in place in the strip: lane l takes column l of each of
            // the 16 rows (a runtime loop: the element code (five activations, three types of C
            // and residual) exists once per kernel; unrolled over a lane's registers it was 12
            // copies, most of each GEMM kernel's code). 32 lanes touch 32 consecutive columns
            // of a row: all banks, and whole lines of C, bias and residual.
            let (row, col) = (row0 + 16 * band, col0 + lane);
            // The band's rows inside C (a uniform bound: one divergent branch, for the column).
            let rows = t.m.saturating_sub(row).min(16);
            if col < t.n {
                let mut r = 0;
                while r < rows {
                    let idx = strip_index(r, lane);
                    // SAFETY: inside the wave's strip; row + r, col inside C.
                    unsafe { strip.write(idx, element(args, t, strip.read(idx), row + r, col)) };
                    r += 1;
                }
            }
            compiler_fence(Ordering::SeqCst);
        }
        // Strip -> C: consecutive lanes take consecutive 16-byte chunks of a row, so each store
        // instruction writes whole 64-byte lines (4 rows of f32 or 8 rows of a half type).
        if f32_out {
            let mut step = 0;
            while step < 4 {
                let (srow, scol) = (4 * step + lane / 16, 4 * (lane % 16));
                let row = row0 + 16 * band + srow;
                if row < t.m {
                    process::<4>(args, t, strip, srow, scol, row, col0 + scol);
                }
                step += 1;
            }
        } else {
            let mut step = 0;
            while step < 2 {
                let (srow, scol) = (8 * step + lane / 8, 8 * (lane % 8));
                let row = row0 + 16 * band + srow;
                if row < t.m {
                    process::<8>(args, t, strip, srow, scol, row, col0 + scol);
                }
                step += 1;
            }
        }
        // The next band overwrites this one after every lane has read its part.
        compiler_fence(Ordering::SeqCst);
        band += 1;
    }
}

/// [`store`] of a tile that lies wholly inside C, with a bare epilogue (`alpha * acc` or raw
/// partials) and 16-byte stores allowed: every tile of a bare product but those at C's edges.
/// The same strip round trip with the bands and steps unrolled: the accumulator-to-strip writes
/// name their registers (the runtime band loop selects them behind a branch per band, ~70
/// register moves a tile), no step tests a bound, and each store's address is C's (uniform)
/// base plus a 32-bit lane offset (the general path's 64-bit per-lane arithmetic took two
/// quarter-rate multiplies a store). Its code, 4-16 KB a kernel (a copy per output type and
/// band), is the price: modeled, fp8 block-scaled 4096x7168x2048 1696 -> 1743 TFLOP/s, the
/// stream-K bf16 4096^3 1093 -> 1105.
#[inline(always)]
fn store_whole<W: RegTile>(args: &Params, t: &Target, acc: &W, strip: LdsSlice<f32>, row0: usize, col0: usize, lane: usize) {
    const { assert!(W::BANDS <= 4) };
    let f32_out = f32_out(args);
    let scale = if args.flags & flags::PARTIAL == 0 { args.alpha } else { 1.0 };
    let (ty, ldc) = (args.out_type, t.ldc as u32);
    let (row0, col0, lane) = (row0 as u32, col0 as u32, lane as u32);
    // A store's address: C's base plus a 32-bit byte offset (the caller checked the tile's
    // fit), the band's first row plus the lane's place in the band (the same in every band).
    // One base for every store: a base per band took scalar registers the stream-K kernels
    // did not have (two spilled).
    let band_at = |band: usize, elem: u32| (row0 + 16 * band as u32) * ldc * elem;
    let lane_at = |srow: u32, scol: u32, elem: u32| (srow * ldc + col0 + scol) * elem;
    crate::unroll_max!(band < W::BANDS, 4 => {
        acc.band(band, lane as usize, |row, col, v| {
            // SAFETY: inside the wave's strip (16 rows, 64 columns).
            unsafe { strip.write(strip_index(row, col), v) };
        });
        // LDS executes a wave's accesses in order; this only stops the compiler moving them.
        compiler_fence(Ordering::SeqCst);
        // SAFETY (reads): inside the strip. (Stores): the band's rows and the wave's 64 columns
        // lie inside C (the caller's test), 16-byte aligned (vector_ok: base and row stride).
        if f32_out {
            crate::unroll_max!(step < 4, 4 => {
                let (srow, scol) = (4 * step as u32 + lane / 16, 4 * (lane % 16));
                let x: F32x4 = unsafe { strip.read_as(strip_index(srow as usize, scol as usize)) };
                let x = x.to_array();
                let w = U32x4::from_array(core::array::from_fn(|e| (x[e] * scale).to_bits()));
                unsafe { store_b128(t.c.add((band_at(band, 4) + lane_at(srow, scol, 4)) as usize) as *mut u32, w) };
            });
        } else {
            crate::unroll_max!(step < 2, 2 => {
                let (srow, scol) = (8 * step as u32 + lane / 8, 8 * (lane % 8));
                let lo: F32x4 = unsafe { strip.read_as(strip_index(srow as usize, scol as usize)) };
                let hi: F32x4 = unsafe { strip.read_as(strip_index(srow as usize, scol as usize + 4)) };
                let (lo, hi) = (lo.to_array(), hi.to_array());
                let pair = |a: f32, b: f32| half_pair(ty, a * scale, b * scale);
                let w = U32x4::from_array([pair(lo[0], lo[1]), pair(lo[2], lo[3]), pair(hi[0], hi[1]), pair(hi[2], hi[3])]);
                unsafe { store_b128(t.c.add((band_at(band, 2) + lane_at(srow, scol, 2)) as usize) as *mut u32, w) };
            });
        }
        // The next band overwrites this one after every lane has read its part.
        compiler_fence(Ordering::SeqCst);
    });
}

/// `a` and `b` converted to the half output type `ty` (f16 or bf16), `a` in the low 16 bits.
#[inline(always)]
fn half_pair(ty: u32, a: f32, b: f32) -> u32 {
    if ty == out_type::F16 { f32_to_f16_bits(a) as u32 | (f32_to_f16_bits(b) as u32) << 16 } else { bf16_pair(a, b) }
}
