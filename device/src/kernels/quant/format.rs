//! The GGML formats as the kernels read them from the device layout (`abi::quant`): a lane's
//! share of one chunk loaded into registers ([`Chunk`]), and from it, per group, the scale terms
//! and the codes of the lane's part.
//!
//! Every format's weight is `w = a * (u - OFFSET)` (symmetric formats) or `w = a * u + b`
//! (formats with a minimum), `u` the unsigned code, `a` and `b` per group in f32. Each of these
//! f32 operations is exact or rounds once, exactly as the f64 definition rounded to f32
//! (`reference::quant`): the products of an f16 scale with a 6- or 8-bit integer and a code of at
//! most 8 bits fit f32's 24-bit significand, and the one addition of a minimum rounds once.

use crate::abi::quant::{self as abi, CHUNK_GROUPS, MAX_LANE_WORDS, Plane, format};
use crate::dsl::convert::f16_bits_to_f32;
use crate::dsl::mem::{Buffer, load_b64, load_b128};

/// A lane's registers for one chunk: each plane's bytes of the lane's piece (codes: its part of
/// its row; scales and headers: its row), group `G` of a plane of `b` bytes per group at byte
/// `G * b` of the plane's words.
pub type Regs = [u32; MAX_LANE_WORDS];

/// Byte `i` of `r` (a constant index after unrolling).
#[inline(always)]
pub fn byte(r: &Regs, i: usize) -> u32 {
    (r[i / 4] >> (8 * (i % 4))) & 0xFF
}

/// The f16 at bytes `i`, `i + 1` of `r` as f32 (exact).
#[inline(always)]
pub fn f16_at(r: &Regs, i: usize) -> f32 {
    f16_bits_to_f32(((r[i / 4] >> (8 * (i % 4))) & 0xFFFF) as u16)
}

/// The scale terms of one group: `a` for codes 0..4 and 4..8 of a part (they differ only for
/// `Q6_K`, whose scales cover 16 weights), and the minimum term `b` (0 for symmetric formats).
#[derive(Clone, Copy)]
pub struct Scale {
    /// Scale of codes 0..4.
    pub a0: f32,
    /// Scale of codes 4..8.
    pub a1: f32,
    /// Added to every weight (formats with a minimum).
    pub b: f32,
}

/// A GGML format as a kernel reads it.
pub trait Format {
    /// The `abi::quant::format` code.
    const F: u32;
    /// Subtracted from the unsigned codes (symmetric formats).
    const OFFSET: u32;
    /// `w = a * u + b` (else `w = a * (u - OFFSET)`).
    const HAS_MIN: bool;
    /// Word offset of each plane in [`Regs`] (constants, so register indices fold before LLVM's
    /// scalar replacement of the register array).
    const WO: [usize; 4] = abi::lane_offsets(Self::F);
    /// Planes.
    const PLANES: usize = abi::planes(Self::F).len();

    /// The scale terms of group `g` (0..8) of the chunk.
    fn scale(r: &Regs, g: usize) -> Scale;

    /// Codes `2i` and `2i + 1` (i < 4) of the lane's part of group `g`, unsigned, as the low and
    /// high 16-bit halves of the result.
    fn pair(r: &Regs, g: usize, i: usize) -> u32;
}

/// The nibble pair `i` of a code word (codes `2i`, `2i + 1`; `abi::quant::nibble_shift`).
#[inline(always)]
fn nibbles(w: u32, i: usize) -> u32 {
    (w >> (4 * i)) & 0x000F_000F
}

/// The fifth bits of codes `2i`, `2i + 1` at bits 4 and 20 (`abi::quant::hi1_shift`).
#[inline(always)]
fn hi1(hb: u32, i: usize) -> u32 {
    let spread = (hb & 0x0F) | ((hb & 0xF0) << 12);
    ((spread >> i) & 0x0001_0001) << 4
}

/// The top two bits of codes `2i`, `2i + 1` at bits 4..6 and 20..22 (`abi::quant::hi2_shift`).
#[inline(always)]
fn hi2(hw: u32, i: usize) -> u32 {
    let spread = (hw & 0xFF) | ((hw & 0xFF00) << 8);
    ((spread >> (2 * i)) & 0x0003_0003) << 4
}

/// `Q4_0`.
pub struct Q4_0;
/// `Q4_1`.
pub struct Q4_1;
/// `Q5_0`.
pub struct Q5_0;
/// `Q5_1`.
pub struct Q5_1;
/// `Q8_0`.
pub struct Q8_0;
/// `Q4_K`.
pub struct Q4K;
/// `Q5_K`.
pub struct Q5K;
/// `Q6_K`.
pub struct Q6K;

#[inline(always)]
fn one(a: f32) -> Scale {
    Scale { a0: a, a1: a, b: 0.0 }
}

impl Format for Q4_0 {
    const F: u32 = format::Q4_0;
    const OFFSET: u32 = 8;
    const HAS_MIN: bool = false;
    #[inline(always)]
    fn scale(r: &Regs, g: usize) -> Scale {
        one(f16_at(r, 4 * Self::WO[1] + 2 * g))
    }
    #[inline(always)]
    fn pair(r: &Regs, g: usize, i: usize) -> u32 {
        nibbles(r[Self::WO[0] + g], i)
    }
}

impl Format for Q4_1 {
    const F: u32 = format::Q4_1;
    const OFFSET: u32 = 0;
    const HAS_MIN: bool = true;
    #[inline(always)]
    fn scale(r: &Regs, g: usize) -> Scale {
        let at = 4 * Self::WO[1] + 4 * g;
        Scale { a0: f16_at(r, at), a1: f16_at(r, at), b: f16_at(r, at + 2) }
    }
    #[inline(always)]
    fn pair(r: &Regs, g: usize, i: usize) -> u32 {
        nibbles(r[Self::WO[0] + g], i)
    }
}

impl Format for Q5_0 {
    const F: u32 = format::Q5_0;
    const OFFSET: u32 = 16;
    const HAS_MIN: bool = false;
    #[inline(always)]
    fn scale(r: &Regs, g: usize) -> Scale {
        one(f16_at(r, 4 * Self::WO[2] + 2 * g))
    }
    #[inline(always)]
    fn pair(r: &Regs, g: usize, i: usize) -> u32 {
        nibbles(r[Self::WO[0] + g], i) | hi1(byte(r, 4 * Self::WO[1] + g), i)
    }
}

impl Format for Q5_1 {
    const F: u32 = format::Q5_1;
    const OFFSET: u32 = 0;
    const HAS_MIN: bool = true;
    #[inline(always)]
    fn scale(r: &Regs, g: usize) -> Scale {
        let at = 4 * Self::WO[2] + 4 * g;
        Scale { a0: f16_at(r, at), a1: f16_at(r, at), b: f16_at(r, at + 2) }
    }
    #[inline(always)]
    fn pair(r: &Regs, g: usize, i: usize) -> u32 {
        nibbles(r[Self::WO[0] + g], i) | hi1(byte(r, 4 * Self::WO[1] + g), i)
    }
}

impl Format for Q8_0 {
    const F: u32 = format::Q8_0;
    const OFFSET: u32 = 128;
    const HAS_MIN: bool = false;
    #[inline(always)]
    fn scale(r: &Regs, g: usize) -> Scale {
        one(f16_at(r, 4 * Self::WO[1] + 2 * g))
    }
    #[inline(always)]
    fn pair(r: &Regs, g: usize, i: usize) -> u32 {
        // GGML's i8 codes, made unsigned (q + 128) by flipping the sign bit.
        let w = r[Self::WO[0] + 2 * g + i / 2] >> (16 * (i % 2));
        ((w & 0xFF) | ((w & 0xFF00) << 8)) ^ 0x0080_0080
    }
}

/// `Q4_K`/`Q5_K` scale and minimum of sub-block `g` from the 12 packed bytes after `d`, `dmin`
/// (the header's bytes 4..16; GGML's `get_scale_min_k4`).
#[inline(always)]
fn k_scale_min(r: &Regs, hdr: usize, g: usize) -> (u32, u32) {
    let s = |i: usize| byte(r, hdr + 4 + i);
    if g < 4 { (s(g) & 0x3F, s(g + 4) & 0x3F) } else { ((s(g + 4) & 0x0F) | ((s(g - 4) >> 6) << 4), (s(g + 4) >> 4) | ((s(g) >> 6) << 4)) }
}

#[inline(always)]
fn k_scale(r: &Regs, hdr: usize, g: usize) -> Scale {
    let (sc, mn) = k_scale_min(r, hdr, g);
    let a = f16_at(r, hdr) * sc as f32;
    Scale { a0: a, a1: a, b: -(f16_at(r, hdr + 2) * mn as f32) }
}

impl Format for Q4K {
    const F: u32 = format::Q4_K;
    const OFFSET: u32 = 0;
    const HAS_MIN: bool = true;
    #[inline(always)]
    fn scale(r: &Regs, g: usize) -> Scale {
        k_scale(r, 4 * Self::WO[1], g)
    }
    #[inline(always)]
    fn pair(r: &Regs, g: usize, i: usize) -> u32 {
        nibbles(r[Self::WO[0] + g], i)
    }
}

impl Format for Q5K {
    const F: u32 = format::Q5_K;
    const OFFSET: u32 = 0;
    const HAS_MIN: bool = true;
    #[inline(always)]
    fn scale(r: &Regs, g: usize) -> Scale {
        k_scale(r, 4 * Self::WO[2], g)
    }
    #[inline(always)]
    fn pair(r: &Regs, g: usize, i: usize) -> u32 {
        nibbles(r[Self::WO[0] + g], i) | hi1(byte(r, 4 * Self::WO[1] + g), i)
    }
}

impl Format for Q6K {
    const F: u32 = format::Q6_K;
    const OFFSET: u32 = 32;
    const HAS_MIN: bool = false;
    #[inline(always)]
    fn scale(r: &Regs, g: usize) -> Scale {
        let d = f16_at(r, 4 * Self::WO[3]);
        let sc = |h: usize| byte(r, 4 * Self::WO[2] + 2 * g + h) as u8 as i8 as f32;
        Scale { a0: d * sc(0), a1: d * sc(1), b: 0.0 }
    }
    #[inline(always)]
    fn pair(r: &Regs, g: usize, i: usize) -> u32 {
        let hw = (r[Self::WO[1] + g / 2] >> (16 * (g % 2))) & 0xFFFF;
        nibbles(r[Self::WO[0] + g], i) | hi2(hw, i)
    }
}

/// Loads a `w`-byte unit (1, 2, 4, 8 or 16, `p` aligned to it) into the low bytes of words.
///
/// # Safety
/// The `w` bytes are readable.
#[inline(always)]
unsafe fn load_unit(p: *const u8, w: usize) -> [u32; 4] {
    unsafe {
        match w {
            16 => load_b128(p as *const u32).to_array(),
            8 => {
                let v = load_b64(p as *const u32).to_array();
                [v[0], v[1], 0, 0]
            }
            4 => [(p as *const u32).read(), 0, 0, 0],
            2 => [(p as *const u16).read() as u32, 0, 0, 0],
            _ => [p.read() as u32, 0, 0, 0],
        }
    }
}

/// A lane's registers for the chunk at `base` holding `nb` groups (8 unless it is a row's last
/// chunk of a 32-weight format), the lane reading code part `part` of tile row `row`.
///
/// A full chunk takes one load per slice (16 bytes, 8 for a fifth-bit plane, 2 for `Q6_K`'s
/// `d`), every offset a constant. A row's last, partial chunk (once per row, when K is not a
/// multiple of 256) takes one load per group and plane of the group's bytes instead: its slices
/// are narrower, and loading them group by group keeps every load one instruction of a constant
/// width (a slice-wide load of a runtime width is a ladder of branches). Every offset into the
/// register array is an inline constant, so that it stays in registers.
///
/// # Safety
/// `base` is the start of a chunk of `nb` groups of a tile of format `F` in the device layout.
#[inline(always)]
pub unsafe fn load_chunk<F: Format>(base: *const u8, nb: usize, part: usize, row: usize) -> Regs {
    let mut r = [0u32; MAX_LANE_WORDS];
    let code_idx = abi::TILE_ROWS * part + row;
    // k-quant chunks are always full.
    if nb == CHUNK_GROUPS || abi::block_elems(F::F) == abi::CHUNK {
        crate::unroll_max!(pi < F::PLANES, 4 => {
            let idx = if const { matches!(abi::plane_at(F::F, pi), Plane::Part(_)) } { code_idx } else { row };
            crate::unroll_max!(j < 4, 4 => {
                if j < const { abi::plane_at(F::F, pi).slices(CHUNK_GROUPS) } {
                    let w = const { abi::plane_at(F::F, pi).width(CHUNK_GROUPS, j) };
                    let off = const { abi::slice_offset(F::F, CHUNK_GROUPS, pi, j) };
                    // SAFETY: the piece lies in the chunk (caller).
                    let v = unsafe { load_unit(base.add(off + idx * w), w) };
                    // Slice j starts after j full slices of the plane's registers.
                    let at = const { abi::lane_word_offset(F::F, pi) + j * abi::plane_at(F::F, pi).width(CHUNK_GROUPS, 0) / 4 };
                    crate::unroll_max!(q < 4, 4 => {
                        if 4 * q < w {
                            r[at + q] = v[q];
                        }
                    });
                }
            });
        });
    } else {
        // SAFETY: the group's bytes lie in the chunk (caller).
        r = partial_regs::<F>(nb, part, row, |off, w| unsafe { load_unit(base.add(off), w) });
    }
    r
}

/// A lane's registers for a row's partial last chunk of `nb` groups (< 8, a 32-weight format),
/// its pieces read by `load(byte offset in the chunk, width)`: one load per group and plane.
#[inline(always)]
fn partial_regs<F: Format>(nb: usize, part: usize, row: usize, load: impl Fn(usize, usize) -> [u32; 4]) -> Regs {
    let mut r = [0u32; MAX_LANE_WORDS];
    let code_idx = abi::TILE_ROWS * part + row;
    // Plane offsets of this chunk: every plane before holds nb groups.
    let mut plane_off = [0usize; 5];
    crate::unroll_max!(pi < F::PLANES, 4 => {
        plane_off[pi + 1] = plane_off[pi] + abi::plane_at(F::F, pi).chunk_bytes(nb);
    });
    crate::unroll_max!(g < CHUNK_GROUPS, 8 => {
        if g < nb {
            crate::unroll_max!(pi < F::PLANES, 4 => {
                // Header planes exist only in the k-quants, whose chunks are always full.
                let (is_code, b, gps, pieces) = const {
                    let p = abi::plane_at(F::F, pi);
                    let b = match p {
                        Plane::Part(b) | Plane::Row(b) => b,
                        Plane::Chunk(_) => 0,
                    };
                    (matches!(p, Plane::Part(_)), b, p.groups_per_slice(), p.pieces())
                };
                if b > 0 {
                    let idx = if is_code { code_idx } else { row };
                    let j = g / gps;
                    // Slices before the last are full; the last holds the rest.
                    let slice = plane_off[pi] + pieces * j * gps * b;
                    let width = if nb - j * gps < gps { (nb - j * gps) * b } else { gps * b };
                    let v = load(slice + idx * width + (g % gps) * b, b);
                    let at = const { 4 * abi::lane_word_offset(F::F, pi) } + g * b;
                    if b >= 4 {
                        crate::unroll_max!(q < 2, 2 => {
                            if 4 * q < b {
                                r[at / 4 + q] = v[q];
                            }
                        });
                    } else {
                        r[at / 4] |= v[0] << (8 * (at % 4));
                    }
                }
            });
        }
    });
    r
}

/// [`load_chunk`] of a full chunk through a range-checked buffer: the chunk at byte `off` of
/// `buf`. Past the buffer's range every load reads zero without touching memory, so a kernel can
/// prefetch "the next chunk" unconditionally (a load under a branch makes LLVM wait for every
/// outstanding load where the branch joins, which would wait for the prefetch at once).
///
/// # Safety
/// Where in range, `off` is the start of a full chunk of format `F` in the device layout.
#[inline(always)]
pub unsafe fn load_full_chunk<F: Format>(buf: &Buffer, off: u32, part: usize, row: usize) -> Regs {
    let mut r = [0u32; MAX_LANE_WORDS];
    let code_idx = (abi::TILE_ROWS * part + row) as u32;
    crate::unroll_max!(pi < F::PLANES, 4 => {
        let idx = if const { matches!(abi::plane_at(F::F, pi), Plane::Part(_)) } { code_idx } else { row as u32 };
        crate::unroll_max!(j < 4, 4 => {
            if j < const { abi::plane_at(F::F, pi).slices(CHUNK_GROUPS) } {
                let w = const { abi::plane_at(F::F, pi).width(CHUNK_GROUPS, j) };
                let at = off + const { abi::slice_offset(F::F, CHUNK_GROUPS, pi, j) } as u32 + idx * w as u32;
                // SAFETY: the piece lies in the chunk or past the range (caller).
                let v = unsafe {
                    match w {
                        16 => buf.load_b128(at, 0).to_array(),
                        8 => {
                            let v = buf.load_b64(at, 0).to_array();
                            [v[0], v[1], 0, 0]
                        }
                        4 => [buf.load_b32(at, 0), 0, 0, 0],
                        _ => [buf.load_b16(at, 0), 0, 0, 0],
                    }
                };
                let at = const { abi::lane_word_offset(F::F, pi) + j * abi::plane_at(F::F, pi).width(CHUNK_GROUPS, 0) / 4 };
                crate::unroll_max!(q < 4, 4 => {
                    if 4 * q < w {
                        r[at + q] = v[q];
                    }
                });
            }
        });
    });
    r
}

/// [`load_chunk`] of a row's partial last chunk (`nb` < 8 groups of a 32-weight format) through
/// a range-checked buffer: the chunk at byte `off` of `buf`; past the buffer's range every load
/// reads zero, so a wave can issue it unconditionally (see [`load_full_chunk`]).
///
/// # Safety
/// Where in range, `off` is the start of a chunk of `nb` groups of format `F` in the device
/// layout.
#[inline(always)]
pub unsafe fn load_partial_chunk<F: Format>(buf: &Buffer, off: u32, nb: usize, part: usize, row: usize) -> Regs {
    partial_regs::<F>(nb, part, row, |at, w| {
        let at = off + at as u32;
        // SAFETY: inside the chunk or past the range (caller).
        unsafe {
            match w {
                8 => {
                    let v = buf.load_b64(at, 0).to_array();
                    [v[0], v[1], 0, 0]
                }
                4 => [buf.load_b32(at, 0), 0, 0, 0],
                2 => [buf.load_b16(at, 0), 0, 0, 0],
                _ => [buf.load_b8(at, 0), 0, 0, 0],
            }
        }
    })
}
