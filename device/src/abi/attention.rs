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

/// Partial slots a workgroup of a `flash_stream_*` launch owns in `FlashArgs::workspace`, each
/// [`FLASH_WAVES`] times [`flash_stream_wave_floats`] floats: a run of key blocks shares at most
/// two query blocks with other workgroups, the one it starts in and the one it ends in (slot
/// rule: [`stream_k_slot`](super::gemm::stream_k_slot), the stream-K GEMM's).
pub const FLASH_STREAM_SLOTS: u32 = super::gemm::SK_SLOTS_PER_WORKGROUP;

/// Floats of one wave's partial in a `flash_stream_*` workspace slot for head dimension
/// `head_dim`: its `O^T` accumulators (`head_dim / 8` quads of 64 lanes) and one quad of
/// statistics (each lane's two running maxima and row sums).
pub const fn flash_stream_wave_floats(head_dim: u32) -> u32 {
    (head_dim / 8 + 1) * 64 * 4
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
    ///
    /// `flash_stream_*` compute the same attention for batched launches without key lengths
    /// (`cu_seqlens_*`, `key_lens` null, not `PAIRED`; masks and windows allowed) where every
    /// query block attends at least one key block, with the key blocks of every query block,
    /// query block after query block, dealt out in runs of `sk_per` to a one-dimensional grid: a
    /// query block split between workgroups is finished by the last of them to arrive, from the
    /// others' partials in `workspace`.
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
        /// `flash_stream_*`: the contributors' partials, [`FLASH_STREAM_SLOTS`] slots per
        /// workgroup. Unused by `flash_*`.
        pub workspace: PtrMut<f32>,
        /// `flash_stream_*`: for the `n = ceil(seq_q / FLASH_BLOCK_Q)` query blocks of a
        /// (batch entry, head), `2 n + 1` entries: where each block's key blocks start in the
        /// run of one head's (entries `0..=n`, non-decreasing from 0, entry `n` the head's total),
        /// then the first key block each attends (entries `n + 1 ..`). Unused by `flash_*`.
        pub stream_table: Ptr<u32>,
        /// `flash_stream_*`: one u32 per query block and wave (query block `x` of head `h` of
        /// batch entry `b` is number `(b * heads + h) * ceil(seq_q / FLASH_BLOCK_Q) + x`), zero at
        /// launch: how many of the block's contributors stored their partial. Unused by `flash_*`.
        pub counters: PtrMut<u32>,
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
        /// `flash_stream_*`: key blocks ([`FLASH_BLOCK_K`] keys) each workgroup takes. 0 for
        /// `flash_*`.
        pub sk_per: u32,
        /// `flash_stream_*`: key blocks of every query block, `batch * heads` times the
        /// `stream_table`'s total (grid: x = `ceil(sk_total / sk_per)`, y = z = 1). 0 for
        /// `flash_*`.
        pub sk_total: u32,
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
        /// Stream (see `FlashArgs::sk_per`): bf16, head dim 32.
        FLASH_STREAM_BF16_D32 = "flash_stream_bf16_d32" @ 256,
        /// Stream: bf16, head dim 64.
        FLASH_STREAM_BF16_D64 = "flash_stream_bf16_d64" @ 256,
        /// Stream: bf16, head dim 96.
        FLASH_STREAM_BF16_D96 = "flash_stream_bf16_d96" @ 256,
        /// Stream: bf16, head dim 128.
        FLASH_STREAM_BF16_D128 = "flash_stream_bf16_d128" @ 256,
        /// Stream: bf16, head dim 256.
        FLASH_STREAM_BF16_D256 = "flash_stream_bf16_d256" @ 256,
        /// Stream: f16, head dim 32.
        FLASH_STREAM_F16_D32 = "flash_stream_f16_d32" @ 256,
        /// Stream: f16, head dim 64.
        FLASH_STREAM_F16_D64 = "flash_stream_f16_d64" @ 256,
        /// Stream: f16, head dim 96.
        FLASH_STREAM_F16_D96 = "flash_stream_f16_d96" @ 256,
        /// Stream: f16, head dim 128.
        FLASH_STREAM_F16_D128 = "flash_stream_f16_d128" @ 256,
        /// Stream: f16, head dim 256.
        FLASH_STREAM_F16_D256 = "flash_stream_f16_d256" @ 256,
    }
}

/// Waves of one decode workgroup; each walks its own 32-key steps of the workgroup's keys.
pub const DECODE_WAVES: u32 = 4;
/// Keys per decode step (two 16-key MFMA tiles; a step's 16-key tiles never straddle a page,
/// whose size is a multiple of 16).
pub const DECODE_STEP: u32 = 32;
/// Query columns of one decode workgroup: the rows of its query heads (one 16-column MFMA tile).
pub const DECODE_COLS: u32 = 16;
/// Page sizes are multiples of this.
pub const PAGE_QUANTUM: u32 = 16;

/// Dynamic LDS of a decode launch: each wave's V step stored transposed (`head_dim` rows of
/// [`DECODE_STEP`] keys, 2 bytes each), reused at the end for the cross-wave combination (each
/// output tile's f32 accumulators of the three waves that do not fold it, and every wave's
/// statistics: as large for `head_dim` 32, smaller above).
pub const fn decode_lds_bytes(head_dim: u32) -> u32 {
    DECODE_WAVES * DECODE_STEP * head_dim * 2
}

crate::kernel_abi! {
    /// Arguments of `decode_*`: attention of a few new query rows per sequence over its paged
    /// KV cache. One workgroup takes one sequence, one key/value head and the query columns
    /// `16 y' ..` of its group (`(g, n)` = query head `kv_head * group + g`, row `n`, as column
    /// `g * rows + n`), over split `x` of the sequence's keys. Grid: x = splits, y = kv_heads *
    /// column groups, z = sequences.
    ///
    /// The cache of each of K and V is `[pages, kv_heads, page_size, d]`; token `t` of sequence
    /// `b` is slot `t % page_size` of page `block_table[b * table_stride + t / page_size]`. Query
    /// row `n` of sequence `b` sits at position `context_lens[b] - rows + n` and attends the keys
    /// up to it (causal among the new rows). A block-table entry outside `0..pages` is not
    /// followed: its keys count as masked and `error[0]` is set to its position in the table plus
    /// one (some offending position if several).
    ///
    /// With one split the output goes to `o` (`[batch, rows, heads, d]`, the input dtype);
    /// otherwise each split writes its normalised f32 output and log-sum-exp to `partial_o`
    /// (`[split][batch][rows][heads][d]`) and `partial_lse` (`[split][batch][rows][heads]`) for
    /// `decode_combine`.
    pub struct DecodeArgs {
        /// Q, element `(b, n, h, d)` at `b * q_batch_stride + n * q_row_stride + h * q_head_stride + d`.
        pub q: Ptr<u8>,
        /// The K cache of the layer.
        pub k_cache: Ptr<u8>,
        /// The V cache of the layer.
        pub v_cache: Ptr<u8>,
        /// i32 page numbers, `table_stride` per sequence.
        pub block_table: Ptr<i32>,
        /// Tokens per sequence (including the new rows).
        pub context_lens: Ptr<u32>,
        /// The output (one split).
        pub o: PtrMut<u8>,
        /// Per-split outputs (several splits).
        pub partial_o: PtrMut<f32>,
        /// Per-split log-sum-exp (several splits).
        pub partial_lse: PtrMut<f32>,
        /// One u32 set on a bad block-table entry.
        pub error: PtrMut<u32>,
        /// Element strides of Q's batch axis.
        pub q_batch_stride: u64,
        /// Element strides of Q's row and head axes.
        pub q_row_stride: u32,
        /// See `q_row_stride`.
        pub q_head_stride: u32,
        /// Block-table entries per sequence.
        pub table_stride: u32,
        /// Pages of the cache.
        pub pages: u32,
        /// Tokens per page (a multiple of [`PAGE_QUANTUM`]).
        pub page_size: u32,
        /// `page_size` as an invariant divisor: `crate::num::Divisor::new(page_size).magic`.
        pub page_magic: u32,
        /// And its `shift`.
        pub page_shift: u32,
        /// Key/value heads.
        pub kv_heads: u32,
        /// Query heads.
        pub heads: u32,
        /// Query heads per key/value head.
        pub group: u32,
        /// New query rows per sequence.
        pub rows: u32,
        /// Column groups per key/value head (`ceil(group * rows / 16)`).
        pub col_groups: u32,
        /// Output rows per split of the partials (`batch * rows * heads`).
        pub split_rows: u32,
        /// Splits of each sequence's keys.
        pub splits: u32,
        /// Keys per split (a multiple of [`DECODE_STEP`]).
        pub split_keys: u32,
        /// `scale * log2(e)`, positive.
        pub scale_log2: f32,
    }
    kernels {
        /// bf16, head dim 32.
        DECODE_BF16_D32 = "decode_bf16_d32" @ 256,
        /// bf16, head dim 64.
        DECODE_BF16_D64 = "decode_bf16_d64" @ 256,
        /// bf16, head dim 96.
        DECODE_BF16_D96 = "decode_bf16_d96" @ 256,
        /// bf16, head dim 128.
        DECODE_BF16_D128 = "decode_bf16_d128" @ 256,
        /// bf16, head dim 256.
        DECODE_BF16_D256 = "decode_bf16_d256" @ 256,
        /// f16, head dim 32.
        DECODE_F16_D32 = "decode_f16_d32" @ 256,
        /// f16, head dim 64.
        DECODE_F16_D64 = "decode_f16_d64" @ 256,
        /// f16, head dim 96.
        DECODE_F16_D96 = "decode_f16_d96" @ 256,
        /// f16, head dim 128.
        DECODE_F16_D128 = "decode_f16_d128" @ 256,
        /// f16, head dim 256.
        DECODE_F16_D256 = "decode_f16_d256" @ 256,
    }
}

/// Work-items per workgroup of `decode_combine` and `write_kv`.
pub const ATTENTION_SMALL_BLOCK: u32 = 256;

crate::kernel_abi! {
    /// Arguments of `decode_combine_*`: `o[r] = sum_s w_s partial_o[s][r] / sum_s w_s` with
    /// `w_s = exp(partial_lse[s][r] - max_s partial_lse[s][r])` (splits without keys, `-inf`,
    /// weigh 0; rows without any key are 0). One work-item per 8 values of `d` of an output row
    /// `r` (`[batch][rows][heads]` flattened). Grid: `ceil(out_rows * d / 8 / 256)` workgroups.
    pub struct DecodeCombineArgs {
        /// `[splits][out_rows][d]` f32.
        pub partial_o: Ptr<f32>,
        /// `[splits][out_rows]` f32.
        pub partial_lse: Ptr<f32>,
        /// `[out_rows][d]` of the kernel's dtype.
        pub o: PtrMut<u8>,
        /// Output rows.
        pub out_rows: u32,
        /// Values per row (a multiple of 8).
        pub d: u32,
        /// Splits.
        pub splits: u32,
    }
    kernels {
        /// bf16 output.
        DECODE_COMBINE_BF16 = "decode_combine_bf16" @ 256,
        /// f16 output.
        DECODE_COMBINE_F16 = "decode_combine_f16" @ 256,
    }
}

crate::kernel_abi! {
    /// Arguments of `write_kv`: rows `t` of `k` and `v` (`[tokens, kv_heads, d]`, 2-byte values)
    /// go to slot `slots[t]` (= `page * page_size + offset`) of the caches (`[pages, kv_heads,
    /// page_size, d]`). A slot outside `0..slots_total` is not written and `error[0]` is set to
    /// `t + 1` (some offending `t` if several). One work-item per 16 bytes of a K row and the same
    /// of the V row. Grid: `ceil(tokens * kv_heads * d / 8 / 256)` workgroups.
    pub struct WriteKvArgs {
        /// New keys, element `(t, h, d)` at `t * k_row_stride + h * k_head_stride + d`.
        pub k: Ptr<u8>,
        /// New values, likewise with the `v_*` strides.
        pub v: Ptr<u8>,
        /// i32 slot per token.
        pub slots: Ptr<i32>,
        /// The layer's K cache.
        pub k_cache: PtrMut<u8>,
        /// The layer's V cache.
        pub v_cache: PtrMut<u8>,
        /// One u32 set on a bad slot.
        pub error: PtrMut<u32>,
        /// Element strides of `k`'s token and head axes.
        pub k_row_stride: u64,
        /// See `k_row_stride`.
        pub k_head_stride: u64,
        /// Element strides of `v`.
        pub v_row_stride: u64,
        /// See `v_row_stride`.
        pub v_head_stride: u64,
        /// Tokens.
        pub tokens: u32,
        /// Key/value heads.
        pub kv_heads: u32,
        /// Values per row (a multiple of 8).
        pub d: u32,
        /// Tokens per page.
        pub page_size: u32,
        /// `pages * page_size`.
        pub slots_total: u32,
        /// `d / 8` (work-items per row), `kv_heads` and `page_size` as invariant divisors
        /// (`crate::num::Divisor::new(..)`'s `magic` and `shift`): the kernel divides work-item
        /// indices and slots by them without a run-time division.
        pub row_magic: u32,
        /// See `row_magic`.
        pub row_shift: u32,
        /// See `row_magic`.
        pub heads_magic: u32,
        /// See `row_magic`.
        pub heads_shift: u32,
        /// See `row_magic`.
        pub page_magic: u32,
        /// See `row_magic`.
        pub page_shift: u32,
    }
    kernels {
        /// 2-byte values (f16, bf16).
        WRITE_KV_B16 = "write_kv_b16" @ 256,
    }
}

crate::kernel_abi! {
    /// Arguments of `rope_write_kv_*`, a decode step's rotary embedding and cache write in one
    /// launch: token `t`'s row of `qkv` holds `heads` query heads, then `kv_heads` key heads,
    /// then `kv_heads` value heads, `d` values each (a fused QKV projection's output). Query
    /// heads are rotated into `q` (`[tokens][heads][d]`, contiguous), key heads rotated into
    /// slot `slots[t]` of the K cache, value heads copied into the same slot of the V cache
    /// (caches as in `WriteKvArgs`). Rotation as `rope`'s interleaved layout with cos/sin
    /// tables: pairs `(2i, 2i + 1)` for `2i < rot_dim`, at position `offsets[t / seq] + t % seq`
    /// (NaN outputs for a position outside the tables); the rest of a head is copied. A bad slot
    /// is not written and sets `error[0] = t + 1`. One work-item per 16 bytes of one head of one
    /// token. Grid: `ceil(tokens * (heads + 2 kv_heads) * d / 8 / 256)` workgroups.
    pub struct RopeWriteKvArgs {
        /// The fused projection's output, element `(t, head, i)` at `t * row_stride + head * d + i`.
        pub qkv: Ptr<u8>,
        /// Rotated queries, `[tokens][heads][d]`.
        pub q: PtrMut<u8>,
        /// i32 slot per token.
        pub slots: Ptr<i32>,
        /// i32 position of each sequence's first token, `tokens / seq` of them.
        pub offsets: Ptr<i32>,
        /// cos table `[cache_rows][rot_dim / 2]` f32.
        pub cos: Ptr<f32>,
        /// sin table, as `cos`.
        pub sin: Ptr<f32>,
        /// The layer's K cache.
        pub k_cache: PtrMut<u8>,
        /// The layer's V cache.
        pub v_cache: PtrMut<u8>,
        /// One u32 set on a bad slot.
        pub error: PtrMut<u32>,
        /// Element stride of `qkv`'s token axis (a multiple of 8).
        pub row_stride: u64,
        /// Tokens.
        pub tokens: u32,
        /// Tokens per sequence.
        pub seq: u32,
        /// Query heads.
        pub heads: u32,
        /// Key/value heads.
        pub kv_heads: u32,
        /// Values per head (a multiple of 8).
        pub d: u32,
        /// Rotated values per head (a multiple of 8, at most `d`).
        pub rot_dim: u32,
        /// Rows of the cos/sin tables.
        pub cache_rows: u32,
        /// Tokens per page.
        pub page_size: u32,
        /// `pages * page_size`.
        pub slots_total: u32,
        /// `d / 8` (work-items per head), `heads + 2 kv_heads`, `seq` (at least 1) and
        /// `page_size` as invariant divisors (`crate::num::Divisor::new(..)`'s `magic` and
        /// `shift`): the kernel divides work-item indices, tokens and slots by them without a
        /// run-time division.
        pub row_magic: u32,
        /// See `row_magic`.
        pub row_shift: u32,
        /// See `row_magic`.
        pub all_magic: u32,
        /// See `row_magic`.
        pub all_shift: u32,
        /// See `row_magic`.
        pub seq_magic: u32,
        /// See `row_magic`.
        pub seq_shift: u32,
        /// See `row_magic`.
        pub page_magic: u32,
        /// See `row_magic`.
        pub page_shift: u32,
    }
    kernels {
        /// f16 values.
        ROPE_WRITE_KV_F16 = "rope_write_kv_f16" @ 256,
        /// bf16 values.
        ROPE_WRITE_KV_BF16 = "rope_write_kv_bf16" @ 256,
    }
}
