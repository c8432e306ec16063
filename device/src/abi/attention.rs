//! Attention on the matrix cores: the flash forward (prefill, encoders) and decode over a paged
//! KV cache.
//!
//! Conventions shared by every attention kernel:
//! - tensors are addressed by element strides; the last (head) dimension is contiguous, rows
//!   are 16-byte aligned (the host copies operands that are not);
//! - `O = softmax(scale * Q K^T + mask) V` with f32 scores, statistics and accumulators; the
//!   kernels fold `scale * log2(e)` into one factor (`scale_log2`) and exponentiate with `exp2`;
//! - the log-sum-exp they write is natural: `ln(sum_j exp(scale * s_j))`, `-inf` for a row
//!   without any allowed key (whose output is all zeros);
//! - masks are ranges of keys per query row (bottom-right aligned causal/sliding windows and key
//!   padding), never materialised.

use super::{Ptr, PtrMut};

/// Waves of one flash workgroup; each owns 32 query rows.
pub const FLASH_WAVES: u32 = 4;
/// Query rows per flash workgroup.
pub const FLASH_BLOCK_Q: u32 = FLASH_WAVES * 32;
/// Keys per step of the flash main loop.
pub const FLASH_BLOCK_K: u32 = 64;
/// The head dimensions the kernels are built for.
pub const HEAD_DIMS: [u32; 5] = [32, 64, 96, 128, 256];

/// Dynamic LDS of a flash launch: one K block (`FLASH_BLOCK_K` rows of `head_dim` values) and
/// one V block stored transposed (`head_dim` rows of `FLASH_BLOCK_K` keys), 2 bytes each.
pub const fn flash_lds_bytes(head_dim: u32) -> u32 {
    2 * FLASH_BLOCK_K * head_dim * 2
}

/// "No bound" for a window side (`FlashArgs::window_left`, `window_right`).
pub const UNBOUNDED: i32 = -1;

/// Bits of `FlashArgs::flags`.
pub mod flash_flags {
    /// Write the log-sum-exp of every query row to `lse`.
    pub const LSE: u32 = 1 << 0;
    /// Grid x counts pairs of query blocks: workgroup `x` takes blocks `n - 1 - x` and `x` of
    /// its sequence (`n` blocks), so causal and windowed launches give every workgroup equal work.
    pub const PAIRED: u32 = 1 << 1;
}

crate::kernel_abi! {
    /// Arguments of `flash_*`: one workgroup computes [`FLASH_BLOCK_Q`] query rows of one head
    /// of one sequence (or two such blocks, `PAIRED`). Grid: x = query blocks of the longest
    /// sequence (half as many, rounded up, when `PAIRED`), y = query heads, z = sequences.
    ///
    /// Sequence `b`'s query rows are `cu_seqlens_q[b] .. cu_seqlens_q[b + 1]` of the row axis
    /// when `cu_seqlens_q` is set (packed variable-length batches), else `0 .. seq_q` at batch
    /// offset `b * q_batch_stride`; keys likewise. Query row `i` of a sequence with `lq` query
    /// and `lk` key rows may attend key `j` when `j < key_lens[b]` (if set), and, with
    /// `off = lk - lq` (bottom-right alignment), `i + off - window_left <= j` (unless the left
    /// side is [`UNBOUNDED`]) and `j <= i + off + window_right` (causal: `window_right = 0`).
    pub struct FlashArgs {
        /// Q, element `(b, i, h, d)` at `b * q_batch_stride + i * q_row_stride + h * q_head_stride + d`.
        pub q: Ptr<u8>,
        /// K, likewise with the `k_*` strides and key head `h / group`.
        pub k: Ptr<u8>,
        /// V, likewise with the `v_*` strides.
        pub v: Ptr<u8>,
        /// O (the input dtype), contiguous: row `r` of the row axis (`b * seq_q + i`, or the
        /// packed row) and head `h` at `(r * heads + h) * d`.
        pub o: PtrMut<u8>,
        /// Log-sum-exp per query row (`LSE`): `(b, h, r)` at `b * heads * seq_q + h * lse_rows + r`
        /// (`[batch, heads, seq_q]`, or `[heads, total_q]` when packed, `seq_q` 0).
        pub lse: PtrMut<f32>,
        /// `batch + 1` increasing row offsets of the packed query rows, or null.
        pub cu_seqlens_q: Ptr<u32>,
        /// `batch + 1` increasing row offsets of the packed key rows, or null.
        pub cu_seqlens_k: Ptr<u32>,
        /// Valid keys per sequence (key padding), or null.
        pub key_lens: Ptr<u32>,
        /// Element strides of Q's batch axis (0 when packed).
        pub q_batch_stride: u64,
        /// See `q_batch_stride`.
        pub k_batch_stride: u64,
        /// See `q_batch_stride`.
        pub v_batch_stride: u64,
        /// Element strides of the row and head axes (below 2^32, host-checked).
        pub q_row_stride: u32,
        /// See `q_row_stride`.
        pub q_head_stride: u32,
        /// See `q_row_stride`.
        pub k_row_stride: u32,
        /// See `q_row_stride`.
        pub k_head_stride: u32,
        /// See `q_row_stride`.
        pub v_row_stride: u32,
        /// See `q_row_stride`.
        pub v_head_stride: u32,
        /// Query heads (O's and LSE's head count).
        pub heads: u32,
        /// LSE's rows per head (`seq_q`, or the packed total).
        pub lse_rows: u32,
        /// Query rows per sequence (without `cu_seqlens_q`; 0 with it).
        pub seq_q: u32,
        /// Key rows per sequence (without `cu_seqlens_k`).
        pub seq_k: u32,
        /// Query heads per key/value head (GQA group; 1 for MHA).
        pub group: u32,
        /// `scale * log2(e)`, positive.
        pub scale_log2: f32,
        /// Keys before the diagonal a row may attend, or [`UNBOUNDED`].
        pub window_left: i32,
        /// Keys after the diagonal a row may attend, or [`UNBOUNDED`] (0: causal).
        pub window_right: i32,
        /// [`flash_flags`] bits.
        pub flags: u32,
    }
    kernels {
        /// bf16, head dim 32.
        FLASH_BF16_D32 = "flash_bf16_d32" @ 256,
        /// bf16, head dim 64.
        FLASH_BF16_D64 = "flash_bf16_d64" @ 256,
        /// bf16, head dim 96.
        FLASH_BF16_D96 = "flash_bf16_d96" @ 256,
        /// bf16, head dim 128.
        FLASH_BF16_D128 = "flash_bf16_d128" @ 256,
        /// bf16, head dim 256.
        FLASH_BF16_D256 = "flash_bf16_d256" @ 256,
        /// f16, head dim 32.
        FLASH_F16_D32 = "flash_f16_d32" @ 256,
        /// f16, head dim 64.
        FLASH_F16_D64 = "flash_f16_d64" @ 256,
        /// f16, head dim 96.
        FLASH_F16_D96 = "flash_f16_d96" @ 256,
        /// f16, head dim 128.
        FLASH_F16_D128 = "flash_f16_d128" @ 256,
        /// f16, head dim 256.
        FLASH_F16_D256 = "flash_f16_d256" @ 256,
    }
}
