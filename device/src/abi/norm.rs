//! RMSNorm and LayerNorm over the last axis, optionally fused with a residual add.
//!
//! - RMSNorm: `y = x / sqrt(mean(x^2) + eps) * w`;
//! - LayerNorm: `y = (x - mean) / sqrt(var + eps) * w + b` (biased variance);
//! - with RESIDUAL, `h = x + residual` (rounded to the dtype) is written to `h_out` and
//!   normalised instead of `x`, the "fused add + norm" of inference stacks.
//!
//! Statistics in f32: RMSNorm sums squares; LayerNorm keeps `(count, mean, M2)` per lane (two
//! passes over the lane's registers) and merges them with Chan's rule, so one reduction gives
//! a variance without the cancellation of `E[x^2] - E[x]^2`. Rows up to [`NORM_MAX_FUSED`]
//! elements are read once; longer ones take STATS then APPLY passes (see [`super::rowwise::mode`]).

use super::rowwise::ROW_SLOTS;
use super::{Ptr, PtrMut};

/// Largest group of lanes per row: a 256-item workgroup. The kernels keep a row's 32 values per
/// lane plus the weight and bias of those columns in registers (~100 VGPRs), more than the 128
/// a 1024-item launch bound allows.
pub const NORM_MAX_LANES: u32 = 256;
/// The longest row read once: [`NORM_MAX_LANES`] x `ROW_SLOTS`.
pub const NORM_MAX_FUSED: u32 = NORM_MAX_LANES * ROW_SLOTS;

/// Bits of `NormArgs::flags`.
pub mod flags {
    /// LayerNorm (else RMSNorm).
    pub const LAYER: u32 = 1 << 0;
    /// Multiply by `weight` (`len` elements of the dtype).
    pub const WEIGHT: u32 = 1 << 1;
    /// Add `bias` (`len` elements of the dtype; LayerNorm).
    pub const BIAS: u32 = 1 << 2;
    /// Normalise `x + residual` and write that sum to `h_out`.
    pub const RESIDUAL: u32 = 1 << 3;
    /// Rows (and weight, bias, residual, outputs) may be accessed 16 bytes at a time.
    pub const VECTOR_OK: u32 = 1 << 4;
}

crate::kernel_abi! {
    /// Arguments of `norm_*`.
    pub struct NormArgs {
        /// Input, `rows * len` contiguous elements of the kernel's dtype.
        pub x: Ptr<u8>,
        /// Residual, same shape (with RESIDUAL).
        pub residual: Ptr<u8>,
        /// Weight, `len` elements (with WEIGHT).
        pub weight: Ptr<u8>,
        /// Bias, `len` elements (with BIAS).
        pub bias: Ptr<u8>,
        /// Output, same shape as `x`.
        pub out: PtrMut<u8>,
        /// `x + residual`, same shape (with RESIDUAL).
        pub h_out: PtrMut<u8>,
        /// Per-segment statistics, `ROW_STAT_FLOATS` floats each (STATS, APPLY).
        pub stats: PtrMut<f32>,
        /// Rows.
        pub rows: u32,
        /// Elements per row (the normalised length).
        pub len: u32,
        /// Lanes per row (FUSED) or per segment: a power of two up to [`NORM_MAX_LANES`].
        pub lanes: u32,
        /// Segments per row (1 in FUSED).
        pub segs: u32,
        /// Elements per segment.
        pub seg_len: u32,
        /// A `rowwise::mode` value.
        pub mode: u32,
        /// [`flags`] bits.
        pub flags: u32,
        /// Added to the mean square (RMSNorm) or the variance (LayerNorm).
        pub eps: f32,
    }
    kernels {
        /// f32 rows.
        NORM_F32 = "norm_f32" @ 256,
        /// f16 rows.
        NORM_F16 = "norm_f16" @ 256,
        /// bf16 rows.
        NORM_BF16 = "norm_bf16" @ 256,
        /// Short f32 rows, one wave each (see [`SHORT_ROW_BYTES`]).
        NORM_SHORT_F32 = "norm_short_f32" @ 256,
        /// Short f16 rows.
        NORM_SHORT_F16 = "norm_short_f16" @ 256,
        /// Short bf16 rows.
        NORM_SHORT_BF16 = "norm_short_bf16" @ 256,
        /// Short f32 rows of at most half [`SHORT_ROW_BYTES`] (half the chunks per lane).
        NORM_SHORT_HALF_F32 = "norm_short_half_f32" @ 256,
        /// Short f16 rows of at most half [`SHORT_ROW_BYTES`].
        NORM_SHORT_HALF_F16 = "norm_short_half_f16" @ 256,
        /// Short bf16 rows of at most half [`SHORT_ROW_BYTES`].
        NORM_SHORT_HALF_BF16 = "norm_short_half_bf16" @ 256,
    }
}

/// 16-byte chunks of its row a lane of `norm_short_*` holds at most (`norm_short_half_*`: half
/// as many, and half the unrolled work for the rows a decode step normalises).
pub const SHORT_CHUNKS: u32 = 4;
/// The longest row `norm_short_*` takes: 64 lanes of [`SHORT_CHUNKS`] chunks (2048 f16/bf16
/// values, 1024 f32), with 16-byte accesses (`VECTOR_OK`). `lanes`, `segs`, `seg_len`, `mode`
/// and `stats` are unused there: a wave holds a whole row, rows `workgroup * waves + wave`.
pub const SHORT_ROW_BYTES: u32 = 64 * SHORT_CHUNKS * 16;
/// Waves (rows) per `norm_short_*` workgroup at most.
pub const SHORT_WAVES: u32 = 4;

/// Dynamic LDS of a `norm_*` launch: the row kernels' slots, plus (FUSED with several rows per
/// workgroup) room for the weight and the bias of a row, each rounded up to 16 bytes.
pub const fn norm_lds_bytes(len: u32, elem_bytes: u32, shared_affine: bool) -> u32 {
    let row = (len * elem_bytes).div_ceil(16) * 16;
    super::rowwise::ROW_LDS_BYTES + if shared_affine { 2 * row } else { 0 }
}
