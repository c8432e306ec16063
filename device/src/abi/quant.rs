//! GGML block-quantized weights on the device: the layout the host writes and the kernels read,
//! and the arguments of the quantized kernels (dequantization, the decode GEMV, the prefill GEMM).
//!
//! # The device layout
//!
//! A weight `W [N, K]` in one of the GGML formats (`Q4_0`, `Q4_1`, `Q5_0`, `Q5_1`, `Q8_0`,
//! `Q4_K`, `Q5_K`, `Q6_K`) is stored as a permutation of its GGML bytes (the same byte count per
//! row), chosen so that every kernel reads it in whole 16-byte pieces with every 64-byte line of
//! a load instruction fully used, whatever the block size (18, 20, 22, 24, 34, 144, 176, 210):
//!
//! - rows are grouped in **tiles** of [`TILE_ROWS`] = 16 (N is padded to a multiple of 16 with
//!   zero rows);
//! - K is cut into **groups** of [`GROUP`] = 32 weights (a 32-weight block, or one sub-block of a
//!   256-weight super-block) and groups into **chunks** of [`CHUNK_GROUPS`] = 8 (256 weights: one
//!   super-block; the last chunk of a row of a 32-weight format may hold fewer groups);
//! - a chunk of a tile holds the fields of its 16 rows' blocks sorted into **planes** (per format,
//!   [`planes`]): code planes ([`Plane::Part`]: each row's 32 codes of a group split into
//!   [`PARTS`] = 4 parts of 8 codes), scale planes ([`Plane::Row`]: per row and group) and header
//!   planes ([`Plane::Chunk`]: per row and chunk, the k-quants' packed scales);
//! - each plane is cut into **slices** of at most [`SLICE_BYTES`] = 16 bytes per piece: a slice
//!   of a code plane is 64 pieces (piece `16 * part + row`, the lane order of the 16x16 MFMA
//!   operands), a slice of a scale or header plane 16 pieces (one per row), stored back to back.
//!   One load instruction of a wave reads one slice: 64 consecutive 16-byte pieces (1 KiB), or
//!   16 pieces that the 4 lanes of a row share (256 bytes).
//!
//! Chunks of a tile are consecutive, tiles are consecutive: the tile `t`, chunk `c` starts at
//! `t * tile_bytes(f, k) + c * chunk_bytes(f, 8)`.
//!
//! Inside a piece, group `G` of the slice occupies bytes `(G % groups_per_slice) * width ..`.
//! Part `p` of a group holds 8 codes `t = 0..8`, of the group's weights [`element`]`(f, p, t)`;
//! in a code plane of 4-bit codes (one 32-bit word per group and part) code `t` is the nibble at
//! bit [`nibble_shift`]`(t)`, so that `(word >> 4 * i) & 0x000F_000F` holds codes `2i` and
//! `2i + 1` as two 16-bit integers. The 5th bit of `Q5_*` codes is a one-byte plane (bit
//! [`hi1_shift`]`(t)`), the top 2 bits of `Q6_K` codes a two-byte plane (bits at
//! [`hi2_shift`]`(t)`), the 8-bit codes of `Q8_0` one byte per code (GGML's signed bytes, in `t`
//! order). Scales and headers keep GGML's bytes (f16 `d`, `m`, the 12-byte packed 6-bit scales of
//! `Q4_K`/`Q5_K`, the i8 scales and f16 `d` of `Q6_K`).

use super::{Ptr, PtrMut};

/// Format codes (`format` arguments, kernel instantiations), in GGUF type-id order.
pub mod format {
    /// 4-bit, one f16 scale per 32 weights; `w = d * (q - 8)`.
    pub const Q4_0: u32 = 0;
    /// 4-bit, f16 scale and minimum per 32 weights; `w = d * q + m`.
    pub const Q4_1: u32 = 1;
    /// 5-bit, one scale per 32 weights; `w = d * (q - 16)`.
    pub const Q5_0: u32 = 2;
    /// 5-bit, scale and minimum per 32 weights; `w = d * q + m`.
    pub const Q5_1: u32 = 3;
    /// 8-bit, one scale per 32 weights; `w = d * q`.
    pub const Q8_0: u32 = 4;
    /// 4-bit k-quant: 256-weight super-blocks, 6-bit scale and minimum per 32.
    pub const Q4_K: u32 = 5;
    /// 5-bit k-quant.
    pub const Q5_K: u32 = 6;
    /// 6-bit k-quant: an i8 scale per 16 weights; `w = d * sc * (q - 32)`.
    pub const Q6_K: u32 = 7;
    /// Number of formats.
    pub const COUNT: u32 = 8;
}

/// Rows per tile.
pub const TILE_ROWS: usize = 16;
/// Parts a row's group of codes is split into (the 16x16 MFMA operand's lane groups).
pub const PARTS: usize = 4;
/// Pieces of a code-plane slice: one per lane of a wave.
pub const PIECES: usize = TILE_ROWS * PARTS;
/// Weights per group (one scale).
pub const GROUP: usize = 32;
/// Codes per part of a group.
pub const PART_CODES: usize = GROUP / PARTS;
/// Groups per chunk.
pub const CHUNK_GROUPS: usize = 8;
/// Weights per chunk.
pub const CHUNK: usize = GROUP * CHUNK_GROUPS;
/// Largest piece of a slice (one 128-bit access).
pub const SLICE_BYTES: usize = 16;

/// One field of a format's blocks, as a plane of the device layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plane {
    /// Codes: this many bytes per group and part (4: 8 nibbles; 1: 8 fifth bits; 2: 8 pairs of
    /// top bits; 8: 8 bytes).
    Part(usize),
    /// Scales: this many bytes per group and row.
    Row(usize),
    /// A header: this many bytes per chunk and row.
    Chunk(usize),
}

impl Plane {
    /// Groups one slice holds (a header: the whole chunk).
    pub const fn groups_per_slice(self) -> usize {
        match self {
            Plane::Part(b) | Plane::Row(b) => {
                let g = SLICE_BYTES / b;
                if g < CHUNK_GROUPS { g } else { CHUNK_GROUPS }
            }
            Plane::Chunk(_) => CHUNK_GROUPS,
        }
    }

    /// Pieces of one slice: 64 for codes, 16 (one per row) otherwise.
    pub const fn pieces(self) -> usize {
        match self {
            Plane::Part(_) => PIECES,
            _ => TILE_ROWS,
        }
    }

    /// Slices of a chunk of `nb` groups.
    pub const fn slices(self, nb: usize) -> usize {
        match self {
            Plane::Chunk(_) => 1,
            _ => nb.div_ceil(self.groups_per_slice()),
        }
    }

    /// Bytes per piece of slice `j` of a chunk of `nb` groups.
    pub const fn width(self, nb: usize, j: usize) -> usize {
        match self {
            Plane::Part(b) | Plane::Row(b) => {
                let gps = self.groups_per_slice();
                let rest = nb.saturating_sub(j * gps);
                (if rest < gps { rest } else { gps }) * b
            }
            Plane::Chunk(b) => {
                if j == 0 {
                    b
                } else {
                    0
                }
            }
        }
    }

    /// Bytes of this plane in a chunk of `nb` groups.
    pub const fn chunk_bytes(self, nb: usize) -> usize {
        let mut total = 0;
        let mut j = 0;
        while j < self.slices(nb) {
            total += self.pieces() * self.width(nb, j);
            j += 1;
        }
        total
    }

    /// 32-bit words one lane keeps of this plane for a whole chunk (its piece of every slice).
    pub const fn lane_words(self) -> usize {
        match self {
            Plane::Part(b) | Plane::Row(b) => (CHUNK_GROUPS * b).div_ceil(4),
            Plane::Chunk(b) => b.div_ceil(4),
        }
    }
}

const Q4_0_PLANES: [Plane; 2] = [Plane::Part(4), Plane::Row(2)];
const Q4_1_PLANES: [Plane; 2] = [Plane::Part(4), Plane::Row(4)];
const Q5_0_PLANES: [Plane; 3] = [Plane::Part(4), Plane::Part(1), Plane::Row(2)];
const Q5_1_PLANES: [Plane; 3] = [Plane::Part(4), Plane::Part(1), Plane::Row(4)];
const Q8_0_PLANES: [Plane; 2] = [Plane::Part(8), Plane::Row(2)];
const Q4_K_PLANES: [Plane; 2] = [Plane::Part(4), Plane::Chunk(16)];
const Q5_K_PLANES: [Plane; 3] = [Plane::Part(4), Plane::Part(1), Plane::Chunk(16)];
const Q6_K_PLANES: [Plane; 4] = [Plane::Part(4), Plane::Part(2), Plane::Row(2), Plane::Chunk(2)];

/// The planes of format `f`, in storage order. Each GGML field maps to one plane:
/// - `Q4_0`: nibbles, `d`; `Q4_1`: nibbles, `(d, m)`; `Q5_0`: nibbles, fifth bits (`qh`), `d`;
///   `Q5_1`: nibbles, fifth bits, `(d, m)`; `Q8_0`: bytes, `d`;
/// - `Q4_K`: nibbles, header `(d, dmin, scales[12])`; `Q5_K`: nibbles, fifth bits, header;
/// - `Q6_K`: low nibbles (`ql`), top bits (`qh`), two i8 scales per group, `d`.
pub const fn planes(f: u32) -> &'static [Plane] {
    match f {
        format::Q4_0 => &Q4_0_PLANES,
        format::Q4_1 => &Q4_1_PLANES,
        format::Q5_0 => &Q5_0_PLANES,
        format::Q5_1 => &Q5_1_PLANES,
        format::Q8_0 => &Q8_0_PLANES,
        format::Q4_K => &Q4_K_PLANES,
        format::Q5_K => &Q5_K_PLANES,
        _ => &Q6_K_PLANES,
    }
}

/// Weights per GGML block.
pub const fn block_elems(f: u32) -> usize {
    if f >= format::Q4_K { CHUNK } else { GROUP }
}

/// Bytes per GGML block.
pub const fn block_bytes(f: u32) -> usize {
    match f {
        format::Q4_0 => 18,
        format::Q4_1 => 20,
        format::Q5_0 => 22,
        format::Q5_1 => 24,
        format::Q8_0 => 34,
        format::Q4_K => 144,
        format::Q5_K => 176,
        _ => 210,
    }
}

/// Bytes of a chunk of one tile holding `nb` groups (16 rows' blocks of those groups).
pub const fn chunk_bytes(f: u32, nb: usize) -> usize {
    let p = planes(f);
    let mut total = 0;
    let mut i = 0;
    while i < p.len() {
        total += p[i].chunk_bytes(nb);
        i += 1;
    }
    total
}

/// Plane `i` of format `f`, or an empty header plane past the last (so that unrolled kernel
/// code can name planes by constant index).
pub const fn plane_at(f: u32, i: usize) -> Plane {
    let p = planes(f);
    if i < p.len() { p[i] } else { Plane::Chunk(0) }
}

/// The word offsets of each plane of format `f` in a lane's registers for a chunk (4 entries;
/// planes past the last start at the end).
pub const fn lane_offsets(f: u32) -> [usize; 4] {
    [lane_word_offset(f, 0), lane_word_offset(f, 1), lane_word_offset(f, 2), lane_word_offset(f, 3)]
}

/// Byte offset of slice `j` of plane `plane` within a chunk of `nb` groups.
pub const fn slice_offset(f: u32, nb: usize, plane: usize, j: usize) -> usize {
    let mut off = 0;
    let mut i = 0;
    while i < plane {
        off += plane_at(f, i).chunk_bytes(nb);
        i += 1;
    }
    let p = plane_at(f, plane);
    let mut s = 0;
    while s < j {
        off += p.pieces() * p.width(nb, s);
        s += 1;
    }
    off
}

/// Word offset of plane `plane` in a lane's registers for a chunk.
pub const fn lane_word_offset(f: u32, plane: usize) -> usize {
    let mut off = 0;
    let mut i = 0;
    while i < plane {
        off += plane_at(f, i).lane_words();
        i += 1;
    }
    off
}

/// 32-bit words a lane keeps for one chunk of format `f` (all planes).
pub const fn lane_words(f: u32) -> usize {
    lane_word_offset(f, planes(f).len())
}

/// The largest [`lane_words`] of any format (sizes the kernels' register arrays).
pub const MAX_LANE_WORDS: usize = 20;

const _: () = {
    let mut f = 0;
    while f < format::COUNT {
        assert!(lane_words(f) <= MAX_LANE_WORDS);
        // A full chunk of a tile is exactly its 16 rows' GGML bytes.
        assert!(chunk_bytes(f, CHUNK_GROUPS) == TILE_ROWS * block_bytes(f) * (CHUNK / block_elems(f)));
        f += 1;
    }
};

/// True when format `f`'s parts take their codes split over the group's two halves ([`element`]).
pub const fn split_halves(f: u32) -> bool {
    f == format::Q6_K
}

/// The weight (0..32, within its group) of code `t` (0..8) of part `p` (0..4). Contiguous parts
/// (`8p + t`) for every format except `Q6_K`, whose scales cover 16 weights: its part `p` takes
/// weights `4p..4p + 4` of each half (`16 * (t / 4) + 4p + t % 4`), so codes 0..4 and 4..8 each
/// stay under one scale.
pub const fn element(f: u32, p: usize, t: usize) -> usize {
    if split_halves(f) { 16 * (t / 4) + 4 * p + t % 4 } else { PART_CODES * p + t }
}

/// Bit position of code `t`'s nibble in its 32-bit word: codes `2i` and `2i + 1` at `4i` and
/// `16 + 4i`, so that one shift and mask yield them as two 16-bit integers.
pub const fn nibble_shift(t: usize) -> u32 {
    (if t % 2 == 0 { 4 * (t / 2) } else { 16 + 4 * (t / 2) }) as u32
}

/// Bit position of code `t`'s fifth bit in its byte: even codes in bits 0..4, odd in 4..8
/// (`t / 2`, `4 + t / 2`), so that the byte spreads to the nibbles' halves in two operations.
pub const fn hi1_shift(t: usize) -> u32 {
    (if t % 2 == 0 { t / 2 } else { 4 + t / 2 }) as u32
}

/// Bit position of code `t`'s top two bits in its 16-bit field: even codes in the low byte, odd
/// in the high one (`2 * (t / 2)`, `8 + 2 * (t / 2)`).
pub const fn hi2_shift(t: usize) -> u32 {
    (if t % 2 == 0 { 2 * (t / 2) } else { 8 + 2 * (t / 2) }) as u32
}

/// GGML bytes of a row of `k` weights (`k` a multiple of the block).
pub const fn row_bytes(f: u32, k: usize) -> usize {
    k / block_elems(f) * block_bytes(f)
}

/// Bytes of one tile (16 rows of `k` weights).
pub const fn tile_bytes(f: u32, k: usize) -> usize {
    TILE_ROWS * row_bytes(f, k)
}

/// Groups in the last chunk of a row of `k` weights.
pub const fn tail_groups(k: usize) -> usize {
    let groups = k / GROUP;
    groups - (groups.div_ceil(CHUNK_GROUPS) - 1) * CHUNK_GROUPS
}

/// Bytes of the whole device layout of `[n, k]`.
pub const fn device_bytes(f: u32, n: usize, k: usize) -> usize {
    n.div_ceil(TILE_ROWS) * tile_bytes(f, k)
}

/// Output / activation element types (`out_type`, `x_type`).
pub mod dtype {
    /// f32.
    pub const F32: u32 = 0;
    /// f16.
    pub const F16: u32 = 1;
    /// bf16.
    pub const BF16: u32 = 2;
}

/// Threads of a dequantization workgroup (one wave: one tile's chunk).
pub const DEQUANT_THREADS: u32 = 64;
/// Floats of one staged row of a dequantized chunk (256 values plus 4 of padding, so that the
/// 16-byte writes of 8 rows land on distinct bank groups).
pub const DEQUANT_PITCH: usize = CHUNK + 4;
/// Dynamic LDS of a dequantization workgroup.
pub const DEQUANT_LDS_BYTES: u32 = (TILE_ROWS * DEQUANT_PITCH * 4) as u32;

crate::kernel_abi! {
    /// Arguments of `quant_dequant_*`: `y = W` as a row-major `[n, k]` tensor of `out_type`.
    /// Grid: x = chunks per row, y = tiles; [`DEQUANT_THREADS`] work-items, [`DEQUANT_LDS_BYTES`].
    pub struct DequantArgs {
        /// The weight in the device layout.
        pub w: Ptr<u8>,
        /// Output, `n * k` elements of `out_type`, 16-byte aligned.
        pub y: PtrMut<u8>,
        /// Rows.
        pub n: u32,
        /// Columns (a multiple of the format's block).
        pub k: u32,
        /// A [`dtype`] value.
        pub out_type: u32,
    }
    kernels {
        /// `Q4_0` weights to f32/f16/bf16.
        QUANT_DEQUANT_Q4_0 = "quant_dequant_q4_0" @ 64,
        /// `Q4_1`.
        QUANT_DEQUANT_Q4_1 = "quant_dequant_q4_1" @ 64,
        /// `Q5_0`.
        QUANT_DEQUANT_Q5_0 = "quant_dequant_q5_0" @ 64,
        /// `Q5_1`.
        QUANT_DEQUANT_Q5_1 = "quant_dequant_q5_1" @ 64,
        /// `Q8_0`.
        QUANT_DEQUANT_Q8_0 = "quant_dequant_q8_0" @ 64,
        /// `Q4_K`.
        QUANT_DEQUANT_Q4_K = "quant_dequant_q4_k" @ 64,
        /// `Q5_K`.
        QUANT_DEQUANT_Q5_K = "quant_dequant_q5_k" @ 64,
        /// `Q6_K`.
        QUANT_DEQUANT_Q6_K = "quant_dequant_q6_k" @ 64,
    }
}

/// The dequantization kernel of each format, by format code.
pub const DEQUANT_KERNELS: [crate::abi::Kernel<DequantArgs>; format::COUNT as usize] = [
    QUANT_DEQUANT_Q4_0,
    QUANT_DEQUANT_Q4_1,
    QUANT_DEQUANT_Q5_0,
    QUANT_DEQUANT_Q5_1,
    QUANT_DEQUANT_Q8_0,
    QUANT_DEQUANT_Q4_K,
    QUANT_DEQUANT_Q5_K,
    QUANT_DEQUANT_Q6_K,
];

/// Epilogue flags (`QGemvArgs::flags`); the activation and output codes are GEMM's
/// (`abi::gemm::activation`, [`dtype`]).
pub mod flags {
    /// `bias` points at N f32 values added per column.
    pub const BIAS: u32 = 1 << 0;
    /// `residual` points at an `[M][ldr]` tensor of the output dtype, added last.
    pub const RESIDUAL: u32 = 1 << 1;
    /// GEMV only, without BIAS, RESIDUAL or an activation: SwiGLU's gate in the epilogue. Each
    /// 16-row tile `t` of W holds 8 gate rows then the 8 matching up rows, and output column
    /// `8 t + i` (of `n / 2`, row stride `ldy`) is `silu(g) * u` with `g`, `u` the f32 results
    /// of tile rows `i` and `8 + i`. `n` is a multiple of 16.
    pub const SWIGLU: u32 = 1 << 2;
    /// GEMV only, f16/bf16 activations: the product takes RMSNorm of `x`'s rows (over K, with
    /// `eps`), rounded to `x`'s type, instead of `x`: a workgroup normalises its rows into LDS
    /// ([`gemv_staged_bytes`](super::gemv_staged_bytes)) before its K loop. See `ops::qmatmul`'s `RmsNorm`.
    pub const RMS_NORM: u32 = 1 << 3;
    /// With RMS_NORM: multiply by `norm_weight` (K elements of `x`'s type; else by 1).
    pub const NORM_WEIGHT: u32 = 1 << 4;
    /// GEMV only, f16/bf16 output, without BIAS, RESIDUAL, SWIGLU or an activation: a decode
    /// step's fused QKV projection with its rotary embedding and KV-cache write in the
    /// epilogue. W's `n = (heads + 2 kv_heads) head_dim` rows are query heads, then key heads,
    /// then value heads; each product is rounded to `out_type`, then query heads are rotated
    /// into `y` (`[m][ldy]`, `ldy >= heads head_dim`: only their columns are written), key heads
    /// rotated into slot `rope_slots[t]` of `k_cache`, value heads copied into the same slot
    /// of `v_cache`. The rotation and the bad-slot rule are `abi::attention::RopeWriteKvArgs`'
    /// (interleaved pairs below `rot_dim`, at position `rope_offsets[t / rope_seq] + t %
    /// rope_seq`, NaN outside the tables): the bits are those of the plain GEMV followed by
    /// `rope_write_kv`.
    pub const ROPE_KV: u32 = 1 << 5;
}

/// Bytes from one staged activation row to the next in LDS (RMS_NORM, format `f`): the row's
/// `k` elements of `elem_bytes`, padded so that the pitch is 32 bytes past a multiple of 128
/// (16 for [`split_halves`] formats). A wave's activation read has lane `l` read row `l % 16`,
/// part `l / 16` (16 bytes at `16 part`; `Q6_K`: 8 bytes); the LDS serves a 128-bit read to
/// two quads of lanes at a time, pairing quads (0, 5), (1, 4), (2, 7), (3, 6) of each half, and a
/// 64-bit read to 16 lanes: with rows 32 bytes apart (mod 128) the 8 lanes of every pair cover
/// the 32 banks once; 64-bit reads of 16 rows 16 bytes apart hit each bank twice at most.
pub const fn gemv_staged_pitch(f: u32, k: u32, elem_bytes: u32) -> u32 {
    let row = k * elem_bytes;
    let want = if split_halves(f) { 16 } else { 32 };
    row + (want + 128 - row % 128) % 128
}

/// Pieces of 16 bytes of an activation row each lane of the GEMV's RMSNorm holds.
pub const GEMV_NORM_HELD: u32 = 4;

/// Waves normalising each of the `rows` rows (`k` elements of `elem_bytes`) of a GEMV
/// workgroup of `waves` waves with RMS_NORM: `waves / rows`, but no more than the row's
/// 16-byte pieces need at one per lane, and at least 1 (waves left over idle).
pub const fn gemv_norm_waves_per_row(rows: u32, waves: u32, k: u32, elem_bytes: u32) -> u32 {
    gemv_norm_waves_capped(waves / if rows > 0 { rows } else { 1 }, k, elem_bytes)
}

/// [`gemv_norm_waves_per_row`] from the quotient `waves / rows` (the kernel divides its own
/// way: `dsl::math::SmallDiv`, amdgpu-only).
pub const fn gemv_norm_waves_capped(per_row: u32, k: u32, elem_bytes: u32) -> u32 {
    let need = (k * elem_bytes / 16).div_ceil(64);
    let wpr = if per_row < need { per_row } else { need };
    if wpr > 0 { wpr } else { 1 }
}

/// Whether a GEMV workgroup of `waves` waves can take the RMSNorm of its `rows` rows of `k`
/// elements of `elem_bytes`: a group of waves per row ([`gemv_norm_waves_per_row`]), each
/// lane holding at most [`GEMV_NORM_HELD`] pieces of 16 bytes of it (rows up to 2048 f16/bf16
/// values per wave of the group). Otherwise the host runs the norm as a launch of its own.
pub const fn gemv_norm_fits(rows: u32, k: u32, elem_bytes: u32, waves: u32) -> bool {
    rows >= 1 && rows <= waves && k * elem_bytes / 16 <= 64 * gemv_norm_waves_per_row(rows, waves, k, elem_bytes) * GEMV_NORM_HELD
}

/// LDS of the RMS_NORM prologue's reduction over waves (two phases of a 16-byte slot per wave
/// of a 1024-item workgroup).
pub const GEMV_NORM_SCRATCH_BYTES: u32 = 512;

/// Extra dynamic LDS of a GEMV workgroup with RMS_NORM: [`GEMV_NORM_SCRATCH_BYTES`], then its
/// `rows` activation rows (at most [`GEMV_ROWS`]), each [`gemv_staged_pitch`] bytes.
pub const fn gemv_staged_bytes(f: u32, rows: u32, k: u32, elem_bytes: u32) -> u32 {
    GEMV_NORM_SCRATCH_BYTES + rows * gemv_staged_pitch(f, k, elem_bytes)
}

/// Activation rows one GEMV workgroup takes (one 16x16 MFMA tile); larger M are row blocks.
pub const GEMV_ROWS: u32 = 16;
/// Most waves of a GEMV workgroup (each reduces a share of K for the workgroup's tile).
pub const GEMV_MAX_WAVES: u32 = 8;

/// True for the formats whose weights add a minimum (`w = a * u + b`): their GEMV needs the
/// activations' sums per group.
pub const fn has_min(f: u32) -> bool {
    matches!(f, format::Q4_1 | format::Q5_1 | format::Q4_K | format::Q5_K)
}

/// Floats per group in the GEMV's tables of activation sums: the 16 rows' sums and 4 of
/// padding. Lanes writing the sums of consecutive groups then hit 8 different banks (80 bytes
/// apart) where 64 bytes apart they would all hit one; the 16-byte reads of 4 rows stay aligned.
pub const GEMV_SUMS_STRIDE: usize = TILE_ROWS + 4;

/// Dynamic LDS of a GEMV workgroup of `waves` waves of `chunks_per_wave` chunks taking
/// `tiles_per_group` tiles: two regions of 16x16 f32 partial sums per wave it could have
/// ([`GEMV_MAX_WAVES`]; alternating between tiles), each tile's 16x16 results, then (formats
/// with a minimum) each wave's table of its groups' activation sums ([`GEMV_SUMS_STRIDE`]
/// floats per group).
pub const fn gemv_lds_bytes(f: u32, waves: u32, chunks_per_wave: u32, tiles_per_group: u32) -> u32 {
    let table = if has_min(f) { waves * chunks_per_wave * (CHUNK_GROUPS * GEMV_SUMS_STRIDE * 4) as u32 } else { 0 };
    2 * GEMV_MAX_WAVES * 64 * 4 * 4 + tiles_per_group * 256 * 4 + table
}

crate::kernel_abi! {
    /// Arguments of `quant_gemv_*`: `y = x W^T` (+ bias, activation, residual), `W` `[n, k]` in
    /// the device layout, `x` `[m][ldx]` f32/f16/bf16 (16-byte aligned rows), `y` `[m][ldy]` of
    /// `out_type`. Grid: x = at most the tiles (`ceil(n / 16)`; workgroup x takes tiles
    /// `x, x + grid_x, ..`), y = blocks of `m_block` activation rows (`ceil(m / m_block)`, each
    /// re-reading W: the decode shapes have one); `waves * 64` work-items, each wave
    /// `chunks_per_wave` chunks of K of every tile; [`gemv_lds_bytes`].
    pub struct QGemvArgs {
        /// The weight in the device layout.
        pub w: Ptr<u8>,
        /// Activations.
        pub x: Ptr<u8>,
        /// Output.
        pub y: PtrMut<u8>,
        /// N f32 values (with `flags::BIAS`).
        pub bias: Ptr<f32>,
        /// `[m][ldr]` of `out_type` (with `flags::RESIDUAL`).
        pub residual: Ptr<u8>,
        /// Activation rows.
        pub m: u32,
        /// Weight rows (output columns).
        pub n: u32,
        /// The reduction length (a multiple of the format's block).
        pub k: u32,
        /// Row stride of `x` in elements.
        pub ldx: u32,
        /// Row stride of `y` in elements.
        pub ldy: u32,
        /// Row stride of the residual in elements.
        pub ldr: u32,
        /// `x`'s [`dtype`] code.
        pub x_type: u32,
        /// `y`'s [`dtype`] code.
        pub out_type: u32,
        /// An `abi::gemm::activation` code.
        pub activation: u32,
        /// [`flags`] bits.
        pub flags: u32,
        /// Chunks of K each wave reduces.
        pub chunks_per_wave: u32,
        /// Activation rows per workgroup (at most [`GEMV_ROWS`]).
        pub m_block: u32,
        /// The most tiles a workgroup takes: exactly `ceil(tiles / grid_x)` (sizes its results
        /// in LDS; a workgroup's own count is this or one less, which the kernel derives from it).
        pub tiles_per_group: u32,
        /// Workgroups along x (the stride between a workgroup's tiles).
        pub grid_x: u32,
        /// K elements of `x`'s type (with `flags::NORM_WEIGHT`).
        pub norm_weight: Ptr<u8>,
        /// RMSNorm's epsilon (with `flags::RMS_NORM`).
        pub eps: f32,
        /// i32 slot of each token (activation row) in the paged KV cache (with
        /// `flags::ROPE_KV`, as every `rope_`/cache field below).
        pub rope_slots: Ptr<i32>,
        /// i32 position of each sequence's first token, `m / rope_seq` of them.
        pub rope_offsets: Ptr<i32>,
        /// cos table `[cache_rows][rot_dim / 2]` f32.
        pub rope_cos: Ptr<f32>,
        /// sin table, as `rope_cos`.
        pub rope_sin: Ptr<f32>,
        /// The layer's K cache, `[pages][kv_heads][page_size][head_dim]` of `out_type`.
        pub k_cache: PtrMut<u8>,
        /// The layer's V cache, as `k_cache`.
        pub v_cache: PtrMut<u8>,
        /// One u32 set to `token + 1` on a bad slot.
        pub rope_error: PtrMut<u32>,
        /// Tokens per sequence (activation row `t` is token `t % rope_seq` of sequence
        /// `t / rope_seq`).
        pub rope_seq: u32,
        /// Query heads.
        pub heads: u32,
        /// Key/value heads.
        pub kv_heads: u32,
        /// Values per head (a multiple of 8).
        pub head_dim: u32,
        /// Rotated values per head (a multiple of 8, at most `head_dim`).
        pub rot_dim: u32,
        /// Rows of the cos/sin tables.
        pub cache_rows: u32,
        /// Tokens per page.
        pub page_size: u32,
        /// `page_size` as an invariant divisor: `crate::num::Divisor::new(page_size).magic`.
        pub page_magic: u32,
        /// And its `shift`.
        pub page_shift: u32,
        /// `pages * page_size`.
        pub slots_total: u32,
    }
    kernels {
        /// `Q4_0` weights.
        QUANT_GEMV_Q4_0 = "quant_gemv_q4_0" @ 512,
        /// `Q4_1`.
        QUANT_GEMV_Q4_1 = "quant_gemv_q4_1" @ 512,
        /// `Q5_0`.
        QUANT_GEMV_Q5_0 = "quant_gemv_q5_0" @ 512,
        /// `Q5_1`.
        QUANT_GEMV_Q5_1 = "quant_gemv_q5_1" @ 512,
        /// `Q8_0`.
        QUANT_GEMV_Q8_0 = "quant_gemv_q8_0" @ 512,
        /// `Q4_K`.
        QUANT_GEMV_Q4_K = "quant_gemv_q4_k" @ 512,
        /// `Q5_K`.
        QUANT_GEMV_Q5_K = "quant_gemv_q5_k" @ 512,
        /// `Q6_K`.
        QUANT_GEMV_Q6_K = "quant_gemv_q6_k" @ 512,
        /// `Q4_0` weights, RMSNorm of the f16 activations first (`flags::RMS_NORM`).
        QUANT_GEMV_NORM_F16_Q4_0 = "quant_gemv_norm_f16_q4_0" @ 512,
        /// `Q4_1`, normalised f16 activations.
        QUANT_GEMV_NORM_F16_Q4_1 = "quant_gemv_norm_f16_q4_1" @ 512,
        /// `Q5_0`, normalised f16 activations.
        QUANT_GEMV_NORM_F16_Q5_0 = "quant_gemv_norm_f16_q5_0" @ 512,
        /// `Q5_1`, normalised f16 activations.
        QUANT_GEMV_NORM_F16_Q5_1 = "quant_gemv_norm_f16_q5_1" @ 512,
        /// `Q8_0`, normalised f16 activations.
        QUANT_GEMV_NORM_F16_Q8_0 = "quant_gemv_norm_f16_q8_0" @ 512,
        /// `Q4_K`, normalised f16 activations.
        QUANT_GEMV_NORM_F16_Q4_K = "quant_gemv_norm_f16_q4_k" @ 512,
        /// `Q5_K`, normalised f16 activations.
        QUANT_GEMV_NORM_F16_Q5_K = "quant_gemv_norm_f16_q5_k" @ 512,
        /// `Q6_K`, normalised f16 activations.
        QUANT_GEMV_NORM_F16_Q6_K = "quant_gemv_norm_f16_q6_k" @ 512,
        /// `Q4_0` weights, RMSNorm of the bf16 activations first (`flags::RMS_NORM`).
        QUANT_GEMV_NORM_BF16_Q4_0 = "quant_gemv_norm_bf16_q4_0" @ 512,
        /// `Q4_1`, normalised bf16 activations.
        QUANT_GEMV_NORM_BF16_Q4_1 = "quant_gemv_norm_bf16_q4_1" @ 512,
        /// `Q5_0`, normalised bf16 activations.
        QUANT_GEMV_NORM_BF16_Q5_0 = "quant_gemv_norm_bf16_q5_0" @ 512,
        /// `Q5_1`, normalised bf16 activations.
        QUANT_GEMV_NORM_BF16_Q5_1 = "quant_gemv_norm_bf16_q5_1" @ 512,
        /// `Q8_0`, normalised bf16 activations.
        QUANT_GEMV_NORM_BF16_Q8_0 = "quant_gemv_norm_bf16_q8_0" @ 512,
        /// `Q4_K`, normalised bf16 activations.
        QUANT_GEMV_NORM_BF16_Q4_K = "quant_gemv_norm_bf16_q4_k" @ 512,
        /// `Q5_K`, normalised bf16 activations.
        QUANT_GEMV_NORM_BF16_Q5_K = "quant_gemv_norm_bf16_q5_k" @ 512,
        /// `Q6_K`, normalised bf16 activations.
        QUANT_GEMV_NORM_BF16_Q6_K = "quant_gemv_norm_bf16_q6_k" @ 512,
        /// `Q4_0` weights, one f16 or bf16 activation row (the host's choice for M = 1 without
        /// the fused norm, gate or rotary epilogue).
        QUANT_GEMV_ONE_Q4_0 = "quant_gemv_one_q4_0" @ 512,
        /// `Q4_1`, one activation row.
        QUANT_GEMV_ONE_Q4_1 = "quant_gemv_one_q4_1" @ 512,
        /// `Q5_0`, one activation row.
        QUANT_GEMV_ONE_Q5_0 = "quant_gemv_one_q5_0" @ 512,
        /// `Q5_1`, one activation row.
        QUANT_GEMV_ONE_Q5_1 = "quant_gemv_one_q5_1" @ 512,
        /// `Q8_0`, one activation row.
        QUANT_GEMV_ONE_Q8_0 = "quant_gemv_one_q8_0" @ 512,
        /// `Q4_K`, one activation row.
        QUANT_GEMV_ONE_Q4_K = "quant_gemv_one_q4_k" @ 512,
        /// `Q5_K`, one activation row.
        QUANT_GEMV_ONE_Q5_K = "quant_gemv_one_q5_k" @ 512,
        /// `Q6_K`, one activation row.
        QUANT_GEMV_ONE_Q6_K = "quant_gemv_one_q6_k" @ 512,
        /// `Q4_0` weights, one f16 activation row, its RMSNorm first (`flags::RMS_NORM`).
        QUANT_GEMV_ONE_NORM_F16_Q4_0 = "quant_gemv_one_norm_f16_q4_0" @ 512,
        /// `Q4_1`, one normalised f16 row.
        QUANT_GEMV_ONE_NORM_F16_Q4_1 = "quant_gemv_one_norm_f16_q4_1" @ 512,
        /// `Q5_0`, one normalised f16 row.
        QUANT_GEMV_ONE_NORM_F16_Q5_0 = "quant_gemv_one_norm_f16_q5_0" @ 512,
        /// `Q5_1`, one normalised f16 row.
        QUANT_GEMV_ONE_NORM_F16_Q5_1 = "quant_gemv_one_norm_f16_q5_1" @ 512,
        /// `Q8_0`, one normalised f16 row.
        QUANT_GEMV_ONE_NORM_F16_Q8_0 = "quant_gemv_one_norm_f16_q8_0" @ 512,
        /// `Q4_K`, one normalised f16 row.
        QUANT_GEMV_ONE_NORM_F16_Q4_K = "quant_gemv_one_norm_f16_q4_k" @ 512,
        /// `Q5_K`, one normalised f16 row.
        QUANT_GEMV_ONE_NORM_F16_Q5_K = "quant_gemv_one_norm_f16_q5_k" @ 512,
        /// `Q6_K`, one normalised f16 row.
        QUANT_GEMV_ONE_NORM_F16_Q6_K = "quant_gemv_one_norm_f16_q6_k" @ 512,
        /// `Q4_0` weights, one bf16 activation row, its RMSNorm first (`flags::RMS_NORM`).
        QUANT_GEMV_ONE_NORM_BF16_Q4_0 = "quant_gemv_one_norm_bf16_q4_0" @ 512,
        /// `Q4_1`, one normalised bf16 row.
        QUANT_GEMV_ONE_NORM_BF16_Q4_1 = "quant_gemv_one_norm_bf16_q4_1" @ 512,
        /// `Q5_0`, one normalised bf16 row.
        QUANT_GEMV_ONE_NORM_BF16_Q5_0 = "quant_gemv_one_norm_bf16_q5_0" @ 512,
        /// `Q5_1`, one normalised bf16 row.
        QUANT_GEMV_ONE_NORM_BF16_Q5_1 = "quant_gemv_one_norm_bf16_q5_1" @ 512,
        /// `Q8_0`, one normalised bf16 row.
        QUANT_GEMV_ONE_NORM_BF16_Q8_0 = "quant_gemv_one_norm_bf16_q8_0" @ 512,
        /// `Q4_K`, one normalised bf16 row.
        QUANT_GEMV_ONE_NORM_BF16_Q4_K = "quant_gemv_one_norm_bf16_q4_k" @ 512,
        /// `Q5_K`, one normalised bf16 row.
        QUANT_GEMV_ONE_NORM_BF16_Q5_K = "quant_gemv_one_norm_bf16_q5_k" @ 512,
        /// `Q6_K`, one normalised bf16 row.
        QUANT_GEMV_ONE_NORM_BF16_Q6_K = "quant_gemv_one_norm_bf16_q6_k" @ 512,
    }
}

/// The GEMV kernel of each format, by format code.
pub const GEMV_KERNELS: [crate::abi::Kernel<QGemvArgs>; format::COUNT as usize] = [
    QUANT_GEMV_Q4_0,
    QUANT_GEMV_Q4_1,
    QUANT_GEMV_Q5_0,
    QUANT_GEMV_Q5_1,
    QUANT_GEMV_Q8_0,
    QUANT_GEMV_Q4_K,
    QUANT_GEMV_Q5_K,
    QUANT_GEMV_Q6_K,
];

/// The GEMV kernel of one activation row of each format, by format code.
pub const GEMV_ONE_KERNELS: [crate::abi::Kernel<QGemvArgs>; format::COUNT as usize] = [
    QUANT_GEMV_ONE_Q4_0,
    QUANT_GEMV_ONE_Q4_1,
    QUANT_GEMV_ONE_Q5_0,
    QUANT_GEMV_ONE_Q5_1,
    QUANT_GEMV_ONE_Q8_0,
    QUANT_GEMV_ONE_Q4_K,
    QUANT_GEMV_ONE_Q5_K,
    QUANT_GEMV_ONE_Q6_K,
];

/// The one-row GEMV kernels with the RMSNorm prologue (`flags::RMS_NORM`): `[f16, bf16][format
/// code]`.
pub const GEMV_ONE_NORM_KERNELS: [[crate::abi::Kernel<QGemvArgs>; format::COUNT as usize]; 2] = [
    [
        QUANT_GEMV_ONE_NORM_F16_Q4_0,
        QUANT_GEMV_ONE_NORM_F16_Q4_1,
        QUANT_GEMV_ONE_NORM_F16_Q5_0,
        QUANT_GEMV_ONE_NORM_F16_Q5_1,
        QUANT_GEMV_ONE_NORM_F16_Q8_0,
        QUANT_GEMV_ONE_NORM_F16_Q4_K,
        QUANT_GEMV_ONE_NORM_F16_Q5_K,
        QUANT_GEMV_ONE_NORM_F16_Q6_K,
    ],
    [
        QUANT_GEMV_ONE_NORM_BF16_Q4_0,
        QUANT_GEMV_ONE_NORM_BF16_Q4_1,
        QUANT_GEMV_ONE_NORM_BF16_Q5_0,
        QUANT_GEMV_ONE_NORM_BF16_Q5_1,
        QUANT_GEMV_ONE_NORM_BF16_Q8_0,
        QUANT_GEMV_ONE_NORM_BF16_Q4_K,
        QUANT_GEMV_ONE_NORM_BF16_Q5_K,
        QUANT_GEMV_ONE_NORM_BF16_Q6_K,
    ],
];

/// Dynamic LDS of a `quant_gemv_one_*` workgroup: a slot of 16 f32 sums per wave it could have
/// and the tile's 16 results (the rotary epilogue's); `quant_gemv_one_norm_*` then the staged
/// row, [`gemv_staged_bytes`] of one row.
pub const GEMV_ONE_LDS_BYTES: u32 = (GEMV_MAX_WAVES + 1) * TILE_ROWS as u32 * 4;

/// The GEMV kernels with the RMSNorm prologue (`flags::RMS_NORM`): `[f16, bf16][format code]`.
pub const GEMV_NORM_KERNELS: [[crate::abi::Kernel<QGemvArgs>; format::COUNT as usize]; 2] = [
    [
        QUANT_GEMV_NORM_F16_Q4_0,
        QUANT_GEMV_NORM_F16_Q4_1,
        QUANT_GEMV_NORM_F16_Q5_0,
        QUANT_GEMV_NORM_F16_Q5_1,
        QUANT_GEMV_NORM_F16_Q8_0,
        QUANT_GEMV_NORM_F16_Q4_K,
        QUANT_GEMV_NORM_F16_Q5_K,
        QUANT_GEMV_NORM_F16_Q6_K,
    ],
    [
        QUANT_GEMV_NORM_BF16_Q4_0,
        QUANT_GEMV_NORM_BF16_Q4_1,
        QUANT_GEMV_NORM_BF16_Q5_0,
        QUANT_GEMV_NORM_BF16_Q5_1,
        QUANT_GEMV_NORM_BF16_Q8_0,
        QUANT_GEMV_NORM_BF16_Q4_K,
        QUANT_GEMV_NORM_BF16_Q5_K,
        QUANT_GEMV_NORM_BF16_Q6_K,
    ],
];

/// Rows of activations (M) per prefill GEMM workgroup.
pub const GEMM_BLOCK_M: u32 = 128;
/// Weight rows (N) per prefill GEMM workgroup: 4 tiles.
pub const GEMM_BLOCK_N: u32 = 64;
/// Waves of a prefill GEMM workgroup: two groups of 4, each taking half of K, a group's waves
/// stacked along M, each 32 x 64 on 16x16 MFMAs.
pub const GEMM_WAVES: u32 = 8;
/// Dynamic LDS of a prefill GEMM workgroup: the larger of the two groups' two stages of B
/// K-tiles (64 bytes a row) and the second group's f32 sums handed to the first (128 x 64).
pub const GEMM_LDS_BYTES: u32 = {
    let stages = 2 * 2 * GEMM_BLOCK_N * 64;
    let sums = GEMM_BLOCK_M * GEMM_BLOCK_N * 4;
    if stages > sums { stages } else { sums }
};

crate::kernel_abi! {
    /// Arguments of `quant_gemm_*`: `y = x W^T` (+ bias, activation, residual) on the matrix
    /// cores for prefill shapes: `W` `[n, k]` in the device layout, dequantized one group of 32
    /// weights at a time into LDS in `x`'s type (f16 or bf16, rounded to nearest even), `x`
    /// `[m][ldx]` f16/bf16, `y` `[m][ldy]` of `out_type`. Grid: x = `ceil(n / 64)`, y =
    /// `ceil(m / 128)`, z = splits of K; [`GEMM_WAVES`] waves; [`GEMM_LDS_BYTES`]. With z > 1,
    /// split `s` sums chunks `s * split_chunks ..` (256 values of K each) into f32 `y` rows
    /// `s * m ..` (`out_type` f32, no epilogue flags: a second pass adds the splits).
    pub struct QGemmArgs {
        /// The weight in the device layout.
        pub w: Ptr<u8>,
        /// Activations (f16 or bf16).
        pub x: Ptr<u8>,
        /// Output.
        pub y: PtrMut<u8>,
        /// N f32 values (with `flags::BIAS`).
        pub bias: Ptr<f32>,
        /// `[m][ldr]` of `out_type` (with `flags::RESIDUAL`).
        pub residual: Ptr<u8>,
        /// Activation rows.
        pub m: u32,
        /// Weight rows.
        pub n: u32,
        /// The reduction length (a multiple of 32).
        pub k: u32,
        /// Row stride of `x` in elements.
        pub ldx: u32,
        /// Row stride of `y` in elements.
        pub ldy: u32,
        /// Row stride of the residual in elements.
        pub ldr: u32,
        /// `x`'s [`dtype`] code (f16 or bf16).
        pub x_type: u32,
        /// `y`'s [`dtype`] code.
        pub out_type: u32,
        /// An `abi::gemm::activation` code.
        pub activation: u32,
        /// [`flags`] bits.
        pub flags: u32,
        /// Chunks of K per split (grid z); at least the chunk count without splits.
        pub split_chunks: u32,
    }
    kernels {
        /// `Q4_0` weights.
        QUANT_GEMM_Q4_0 = "quant_gemm_q4_0" @ 512,
        /// `Q4_1`.
        QUANT_GEMM_Q4_1 = "quant_gemm_q4_1" @ 512,
        /// `Q5_0`.
        QUANT_GEMM_Q5_0 = "quant_gemm_q5_0" @ 512,
        /// `Q5_1`.
        QUANT_GEMM_Q5_1 = "quant_gemm_q5_1" @ 512,
        /// `Q8_0`.
        QUANT_GEMM_Q8_0 = "quant_gemm_q8_0" @ 512,
        /// `Q4_K`.
        QUANT_GEMM_Q4_K = "quant_gemm_q4_k" @ 512,
        /// `Q5_K`.
        QUANT_GEMM_Q5_K = "quant_gemm_q5_k" @ 512,
        /// `Q6_K`.
        QUANT_GEMM_Q6_K = "quant_gemm_q6_k" @ 512,
    }
}

/// The prefill GEMM kernel of each format, by format code.
pub const GEMM_KERNELS: [crate::abi::Kernel<QGemmArgs>; format::COUNT as usize] = [
    QUANT_GEMM_Q4_0,
    QUANT_GEMM_Q4_1,
    QUANT_GEMM_Q5_0,
    QUANT_GEMM_Q5_1,
    QUANT_GEMM_Q8_0,
    QUANT_GEMM_Q4_K,
    QUANT_GEMM_Q5_K,
    QUANT_GEMM_Q6_K,
];
