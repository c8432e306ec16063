//! fp8 GEMM with block scales, as in DeepSeek's DeepGEMM, and its grouped (mixture-of-experts)
//! forms: `C[m][n] = sum over 128-wide K blocks kb of sa[m][kb] * sb[n / 128][kb] *
//! sum_{k in kb} A[m][k] * B[n][k]`, A and B E4M3FNUZ, scales f32, C bf16.
//!
//! gfx942's fp8 is FNUZ (bias 8, max 240), not DeepGEMM's OCP E4M3FN (bias 7, max 448): data
//! quantised for NVIDIA/gfx950 must be converted at the boundary (the same bits mean half the
//! value here), with its scales adjusted accordingly.

use super::{Bf16, Fp8E4M3Fnuz, Ptr, PtrMut};

/// K elements per scale block (and N rows per B scale block).
pub const SCALE_BLOCK: u32 = 128;

/// How rows map to groups (`BlockScaledArgs::group_mode`).
pub mod group_mode {
    /// One problem (B has one group).
    pub const NONE: u32 = 0;
    /// "Contiguous": A's rows are the experts' rows concatenated; `group_info[row]` is the expert
    /// of each row (-1 = padding). Every 128-row block of A holds one expert (or padding).
    pub const CONTIGUOUS: u32 = 1;
    /// "Masked": A and C are `[groups][m][..]` slabs (`a_group_stride`, `c_group_stride`, A's
    /// scales `sa_group_stride` apart); `group_info[g]` is how many rows of slab g are valid.
    pub const MASKED: u32 = 2;
}

/// Bits of `BlockScaledArgs::flags`.
pub mod flags {
    /// C takes 16-byte stores where aligned (the kernel checks alignment itself); without it,
    /// element stores.
    pub const VECTOR_OK: u32 = 1 << 0;
}

/// Rows of C per workgroup of the small-M kernel (one wave of 64x64).
pub const SMALL_BLOCK: u32 = 64;

crate::kernel_abi! {
    /// Arguments of `gemm_fp8_blockscaled_*`. Grid: x = N blocks, y = M blocks,
    /// z = (groups in masked mode, else 1) x splits, group-major.
    pub struct BlockScaledArgs {
        /// A, rows of `lda` elements (K-contiguous).
        pub a: Ptr<Fp8E4M3Fnuz>,
        /// B, `[groups][N][ldb]` (K-contiguous).
        pub b: Ptr<Fp8E4M3Fnuz>,
        /// C, rows of `ldc` bf16, one row per row of A (for the `*_splitk` kernels: the f32
        /// partials, each split's laid out like C, `split_stride_c` elements apart).
        pub c: PtrMut<Bf16>,
        /// A's scales: `sa[g * sa_group_stride + kb * sa_kb_stride + row]` (each K block's rows
        /// contiguous, DeepGEMM's layout; the host repacks others).
        pub a_scale: Ptr<f32>,
        /// B's scales: `sb[g * sb_group_stride + nb * sb_nb_stride + kb * sb_kb_stride]`.
        pub b_scale: Ptr<f32>,
        /// Per-row expert ids (contiguous) or per-group valid row counts (masked); unused otherwise.
        pub group_info: Ptr<i32>,
        /// Elements between consecutive groups' A (masked mode).
        pub a_group_stride: u64,
        /// Elements between consecutive groups' B.
        pub b_group_stride: u64,
        /// Elements between consecutive groups' C (masked mode).
        pub c_group_stride: u64,
        /// Elements between consecutive splits' f32 partials (`*_splitk` kernels).
        pub split_stride_c: u64,
        /// Elements between consecutive groups' A scales (masked mode).
        pub sa_group_stride: u64,
        /// Elements between consecutive groups' B scales.
        pub sb_group_stride: u64,
        /// Rows of A and C (masked: rows per slab).
        pub m: u32,
        /// Columns of C.
        pub n: u32,
        /// The reduction length.
        pub k: u32,
        /// Row strides in elements.
        pub lda: u32,
        /// See `lda`.
        pub ldb: u32,
        /// See `lda`.
        pub ldc: u32,
        /// Elements between K blocks of A's scales (at least the rows of a group).
        pub sa_kb_stride: u32,
        /// Elements between B's scale rows (128-row blocks of N).
        pub sb_nb_stride: u32,
        /// Elements between B's scale columns (128-wide blocks of K).
        pub sb_kb_stride: u32,
        /// A [`group_mode`] value.
        pub group_mode: u32,
        /// [`flags`] bits.
        pub flags: u32,
        /// K-tiles (64 K values) each split reduces: a multiple of 2, whole scale blocks (the
        /// whole K when 1 split).
        pub k_tiles_per_split: u32,
        /// Splits of K.
        pub splits: u32,
        /// The stream-K kernel: `stream_k_slot` slots per workgroup of one 128x128 block's f32
        /// partial each (`abi::gemm::SK_SLOTS_PER_WORKGROUP`). Unused by the others.
        pub workspace: PtrMut<f32>,
        /// The stream-K kernel: one u32 per block and wave, zero at launch: how many of the
        /// block's contributors stored their partial. Unused by the others.
        pub counters: PtrMut<u32>,
        /// The stream-K kernel: scale blocks (128 K values) per workgroup's run.
        pub sk_per: u32,
        /// The stream-K kernel: scale blocks of every block, `blocks * ceil(K / 128)` (grid:
        /// x = `ceil(sk_total / sk_per)`, y = z = 1).
        pub sk_total: u32,
    }
    kernels {
        /// 128x128 blocks, 4 waves of 64x64, v_mfma_f32_16x16x32_fp8_fp8, scales applied every
        /// 128 K with packed FMAs.
        GEMM_FP8_BLOCKSCALED_128X128 = "gemm_fp8_blockscaled_128x128" @ 256,
        /// The small-M block (decode-time mixture of experts, M <= 64 per group): 64x64, one wave.
        GEMM_FP8_BLOCKSCALED_64X64 = "gemm_fp8_blockscaled_64x64" @ 64,
        /// The split-K first pass of the 128x128 kernel: each split's promoted f32 sums to `c`
        /// (f32), for `gemm_splitk_reduce` to add in split order and round to bf16.
        GEMM_FP8_BLOCKSCALED_128X128_SPLITK = "gemm_fp8_blockscaled_128x128_splitk" @ 256,
        /// The split-K first pass of the 64x64 kernel.
        GEMM_FP8_BLOCKSCALED_64X64_SPLITK = "gemm_fp8_blockscaled_64x64_splitk" @ 64,
        /// Stream-K over 128x128 blocks (one problem, `group_mode::NONE`): every block's scale
        /// blocks, block after block, in runs of `sk_per`, one per workgroup; a block split
        /// between workgroups is finished by the last of them to arrive (as the plain GEMM's
        /// `GEMM_*_128X128_M32_SK`).
        GEMM_FP8_BLOCKSCALED_128X128_SK = "gemm_fp8_blockscaled_128x128_sk" @ 256,
    }
}
