//! Rotary position embedding (RoPE) of `[batch][seq][heads][head_dim]` tensors.
//!
//! Pair `i` (`i < rot_dim / 2`) of a head vector is rotated by the angle `pos * f_i`, where
//! `pos = offsets[b] + s` (the sequence's start offset plus the token's index) and `f_i` the
//! pair's frequency: `(x, y) -> (x cos - y sin, y cos + x sin)`. Pairs are `(2i, 2i + 1)`
//! (interleaved, GPT-J / Meta layout) or `(i, i + rot_dim / 2)` (HALF_SPLIT, GPT-NeoX /
//! Hugging Face `rotate_half`). Elements from `rot_dim` to `head_dim` are copied unchanged.
//!
//! Primary design: cos and sin are computed on the device. The host passes each frequency as an
//! f32 pair `(hi, lo)` with `hi + lo` its f64 value (`theta^(-2i / rot_dim)` by default), the
//! kernel forms `pos * f_i` exactly enough (an FMA-split product) and reduces it modulo 2pi in
//! extended precision, so the angle stays accurate to about 1e-9 rad at position 10^6, where a
//! plain f32 product is off by up to 0.06 rad. The alternative (CACHE) reads `cos` and `sin`
//! tables `[cache_rows][rot_dim / 2]` instead, for models whose tables are given.

use super::{Ptr, PtrMut};

/// Bits of `RopeArgs::flags`.
pub mod flags {
    /// Pairs `(i, i + rot_dim / 2)`; otherwise `(2i, 2i + 1)`.
    pub const HALF_SPLIT: u32 = 1 << 0;
    /// Read cos/sin from the `cos`/`sin` tables instead of computing them.
    pub const CACHE: u32 = 1 << 1;
    /// `offsets` holds a start position per batch entry (else every sequence starts at 0).
    pub const OFFSETS: u32 = 1 << 2;
    /// Head vectors may be accessed 16 bytes at a time (aligned base, `head_dim` and the
    /// rotated halves whole chunks).
    pub const VECTOR_OK: u32 = 1 << 3;
    /// With VECTOR_OK and without CACHE: the workgroup stages the frequencies in LDS
    /// ([`rope_freq_lds_bytes`](super::rope_freq_lds_bytes)) and its lanes read them there, so
    /// global memory serves them once per workgroup instead of once per lane.
    pub const FREQS_LDS: u32 = 1 << 4;
}

/// Byte stride between the frequencies of consecutive column units in LDS, for units of
/// `pairs` `(hi, lo)` pairs. Units of 32 bytes or more get 16 bytes of padding: then the 8
/// lanes of a 128-bit LDS access (8 consecutive units, or 8 consecutive units' same chunk when
/// staging) land on distinct 16-byte bank groups (the stride in groups is odd: 1, 3 or 5).
pub const fn rope_freq_stride(pairs: u32) -> u32 {
    let bytes = pairs * 8;
    if bytes >= 32 { bytes + 16 } else { bytes }
}

/// Dynamic LDS of a `rope_*` launch with FREQS_LDS: `units` rotated column units of `pairs`
/// pairs each.
pub const fn rope_freq_lds_bytes(units: u32, pairs: u32) -> u32 {
    units * rope_freq_stride(pairs)
}

/// The most LDS the frequencies may take (rotary_dim up to 1024 at the largest padding); longer
/// tables are read from global memory per lane. 16 KiB leaves room for 4 workgroups per CU.
pub const ROPE_FREQ_LDS_MAX: u32 = 16 * 1024;

/// Work-items per workgroup.
pub const ROPE_BLOCK: u32 = 256;

crate::kernel_abi! {
    /// Arguments of `rope_*`. Grid x: `ceil(rows / (rows_per_lane * (ROPE_BLOCK / tile_cols)))`
    /// with `rows = batch * seq * heads` head vectors.
    pub struct RopeArgs {
        /// Input, contiguous `[batch][seq][heads][head_dim]` of the kernel's dtype.
        pub x: Ptr<u8>,
        /// Output, same shape (may be `x`: each element is read before it is written, by the
        /// same work-item).
        pub out: PtrMut<u8>,
        /// Start position per batch entry, i32 (with OFFSETS).
        pub offsets: Ptr<i32>,
        /// Frequencies as `(hi, lo)` f32 pairs, `rot_dim / 2` of them (without CACHE).
        pub freqs: Ptr<f32>,
        /// cos table `[cache_rows][rot_dim / 2]` f32 (with CACHE).
        pub cos: Ptr<f32>,
        /// sin table, as `cos`.
        pub sin: Ptr<f32>,
        /// Batch entries.
        pub batch: u32,
        /// Tokens per sequence.
        pub seq: u32,
        /// Heads per token.
        pub heads: u32,
        /// Elements per head vector.
        pub head_dim: u32,
        /// Rotated elements at the start of each head vector (even, <= head_dim).
        pub rot_dim: u32,
        /// Rows of the cos/sin tables (positions outside them give NaN outputs).
        pub cache_rows: u32,
        /// Column units a workgroup spreads over a head vector (the rest of the block takes
        /// different head vectors); at most `ROPE_BLOCK`.
        pub tile_cols: u32,
        /// Consecutive head vectors each work-item walks (so cos/sin are reused across heads).
        pub rows_per_lane: u32,
        /// [`flags`] bits.
        pub flags: u32,
    }
    kernels {
        /// f32.
        ROPE_F32 = "rope_f32" @ 256,
        /// f16.
        ROPE_F16 = "rope_f16" @ 256,
        /// bf16.
        ROPE_BF16 = "rope_bf16" @ 256,
    }
}
