//! Softmax and log-softmax over the last axis (numerically stable, f32 arithmetic).
//!
//! A row is read once and written once when it fits one workgroup ([`SOFTMAX_MAX_FUSED`]
//! elements): each lane takes the maximum of its elements, keeps `exp(x - m_lane)` and their
//! sum, and the group combines `(max, sum)` pairs with the online-softmax rule
//! `(m, s) + (m', s') = (M, s e^(m - M) + s' e^(m' - M))` in a single reduction. Longer rows
//! take two passes (STATS then APPLY, see [`super::rowwise::mode`]).

use super::rowwise::ROW_SLOTS;
use super::{Ptr, PtrMut};

/// Largest group of lanes per row: a 1024-item workgroup (the kernels' launch bound, so LLVM
/// gives them at most 128 VGPRs; a lane's 32 values of `exp(x - m)` and temporaries fit).
pub const SOFTMAX_MAX_LANES: u32 = 1024;
/// The longest row read once: [`SOFTMAX_MAX_LANES`] x `ROW_SLOTS`.
pub const SOFTMAX_MAX_FUSED: u32 = SOFTMAX_MAX_LANES * ROW_SLOTS;

/// Bits of `SoftmaxArgs::flags`.
pub mod flags {
    /// log-softmax instead of softmax.
    pub const LOG: u32 = 1 << 0;
    /// Rows may be read and written 16 bytes at a time (aligned base and row pitch).
    pub const VECTOR_OK: u32 = 1 << 1;
}

crate::kernel_abi! {
    /// Arguments of `softmax_*`.
    pub struct SoftmaxArgs {
        /// Input, `rows * len` contiguous elements of the kernel's dtype.
        pub x: Ptr<u8>,
        /// Output, same shape and dtype (may not alias `x`).
        pub out: PtrMut<u8>,
        /// Per-segment `(max, sum)` statistics, `ROW_STAT_FLOATS` floats each (STATS, APPLY).
        pub stats: PtrMut<f32>,
        /// Rows.
        pub rows: u32,
        /// Elements per row.
        pub len: u32,
        /// Lanes per row (FUSED) or per segment (STATS, APPLY): a power of two up to 1024.
        pub lanes: u32,
        /// Segments per row (1 in FUSED).
        pub segs: u32,
        /// Elements per segment (`lanes * ROW_SLOTS` for STATS/APPLY).
        pub seg_len: u32,
        /// A `rowwise::mode` value.
        pub mode: u32,
        /// [`flags`] bits.
        pub flags: u32,
    }
    kernels {
        /// f32 rows.
        SOFTMAX_F32 = "softmax_f32" @ 1024,
        /// f16 rows.
        SOFTMAX_F16 = "softmax_f16" @ 1024,
        /// bf16 rows.
        SOFTMAX_BF16 = "softmax_bf16" @ 1024,
    }
}
