//! GEMM on the matrix cores: `C = alpha * A * B^T + beta * C` with an epilogue, where A is
//! `[batch][M][K]` and B is `[batch][N][K]`, both K-contiguous ("NT" in row-major terms, the layout
//! of `X * W^T` in inference and of DeepGEMM). Other layouts are packed into this one by the host.
//!
//! One argument struct serves every input dtype; the kernel symbol fixes the dtype and the tile
//! configuration, and the host op checks the operand dtypes against it.

use super::{Ptr, PtrMut};

/// Bytes of K each row contributes to one K-tile (4 chunks of 16 bytes): 32 bf16/f16 values,
/// 64 fp8 values, 16 f32 values.
pub const K_TILE_BYTES: u32 = 64;

/// Output element types (`GemmArgs::out_type`).
pub mod out_type {
    /// f32 output.
    pub const F32: u32 = 0;
    /// f16 output (round to nearest even).
    pub const F16: u32 = 1;
    /// bf16 output (round to nearest even).
    pub const BF16: u32 = 2;
}

/// Epilogue activations (`GemmArgs::activation`), applied after bias and before the residual.
pub mod activation {
    /// None.
    pub const NONE: u32 = 0;
    /// max(x, 0).
    pub const RELU: u32 = 1;
    /// x * Phi(x) with the exact (erf) normal CDF.
    pub const GELU_ERF: u32 = 2;
    /// The tanh approximation of GELU.
    pub const GELU_TANH: u32 = 3;
    /// x * sigmoid(x).
    pub const SILU: u32 = 4;
}

/// Bits of `GemmArgs::flags`.
pub mod flags {
    /// `bias` points at N f32 values added per column.
    pub const BIAS: u32 = 1 << 0;
    /// `residual` points at an `[batch][M][ldr]` tensor of the output dtype added last.
    pub const RESIDUAL: u32 = 1 << 1;
    /// `beta != 0`: C is read and `beta * C` added (before bias).
    pub const BETA: u32 = 1 << 2;
    /// A, B, C and the leading dimensions allow 16-byte vector accesses (host-checked).
    pub const VECTOR_OK: u32 = 1 << 3;
    /// Write the f32 partial sums to `c` as f32 without the epilogue (split-K first pass).
    pub const PARTIAL: u32 = 1 << 4;
}

crate::kernel_abi! {
    /// Arguments of every `gemm_*` kernel. Grid: x = N tiles, y = M tiles, z = batch * split_k.
    pub struct GemmArgs {
        /// A, `[batch][M][lda]`, K-contiguous, of the kernel's input dtype.
        pub a: Ptr<u8>,
        /// B, `[batch][N][ldb]`, K-contiguous, of the kernel's input dtype (`B[n][k] = op(B)[k][n]`).
        pub b: Ptr<u8>,
        /// C, `[batch][M][ldc]` of `out_type`; read when `BETA` is set.
        pub c: PtrMut<u8>,
        /// N f32 values (when `BIAS`).
        pub bias: Ptr<f32>,
        /// `[batch][M][ldr]` of `out_type` (when `RESIDUAL`).
        pub residual: Ptr<u8>,
        /// Stream-K kernels: f32 partial blocks, [`SK_SLOTS_PER_WORKGROUP`] slots of
        /// `block_m * block_n` per workgroup (see [`stream_k_slot`]). Unused by the others.
        pub workspace: PtrMut<f32>,
        /// Stream-K kernels: one u32 per block and wave, zero at launch: how many of the block's
        /// contributors stored their partial. Unused by the others.
        pub counters: PtrMut<u32>,
        /// Batch strides in elements (0 broadcasts one matrix to every batch).
        pub batch_stride_a: u64,
        /// See `batch_stride_a`.
        pub batch_stride_b: u64,
        /// See `batch_stride_a`.
        pub batch_stride_c: u64,
        /// See `batch_stride_a`.
        pub batch_stride_r: u64,
        /// Elements between the f32 partial results of consecutive splits (when `PARTIAL`).
        pub split_stride_c: u64,
        /// Rows of A and C.
        pub m: u32,
        /// Rows of B, columns of C.
        pub n: u32,
        /// The reduction length.
        pub k: u32,
        /// Row strides in elements.
        pub lda: u32,
        /// See `lda`.
        pub ldb: u32,
        /// See `lda`.
        pub ldc: u32,
        /// See `lda`.
        pub ldr: u32,
        /// Scale of the product.
        pub alpha: f32,
        /// Scale of the existing C.
        pub beta: f32,
        /// An [`out_type`] value.
        pub out_type: u32,
        /// An [`activation`] value.
        pub activation: u32,
        /// [`flags`] bits.
        pub flags: u32,
        /// K-tiles each split of a split-K launch reduces (the whole K when 1 split).
        pub k_tiles_per_split: u32,
        /// Splits of K (grid z = batch * splits); partial results go to `c` as f32 `[split][batch][M][ldc]`.
        pub splits: u32,
        /// Stream-K kernels: K-tiles each workgroup reduces (see [`stream_k_slot`]). 0 for the
        /// others.
        pub sk_per: u32,
        /// Stream-K kernels: K-tiles of every block of every batch, `batches * blocks * k_tiles`
        /// (grid: x = `ceil(sk_total / sk_per)`, y = z = 1).
        pub sk_total: u32,
    }
    kernels {
        /// bf16 inputs, 128x128 block tile, 4 waves of 64x64, v_mfma_f32_16x16x16_bf16.
        GEMM_BF16_128X128 = "gemm_bf16_128x128" @ 256,
        /// f16 inputs, 128x128 block tile, 4 waves of 64x64, v_mfma_f32_16x16x16_f16.
        GEMM_F16_128X128 = "gemm_f16_128x128" @ 256,
        /// f32 inputs, 128x128 block tile, v_mfma_f32_16x16x4_f32.
        GEMM_F32_128X128 = "gemm_f32_128x128" @ 256,
        /// f32 inputs truncated to tf32 (opt-in), 128x128, v_mfma_f32_16x16x8_xf32.
        GEMM_XF32_128X128 = "gemm_xf32_128x128" @ 256,
        /// E4M3FNUZ inputs, 128x128, v_mfma_f32_16x16x32_fp8_fp8.
        GEMM_FP8_128X128 = "gemm_fp8_128x128" @ 256,
        /// E5M2FNUZ inputs, 128x128, v_mfma_f32_16x16x32_bf8_bf8.
        GEMM_BF8_128X128 = "gemm_bf8_128x128" @ 256,
        /// bf16, 128x128, 4 waves of 2x2 32x32 tiles, v_mfma_f32_32x32x8_bf16.
        GEMM_BF16_128X128_M32 = "gemm_bf16_128x128_m32" @ 256,
        /// f16, 128x128, 32x32 tiles, v_mfma_f32_32x32x8_f16.
        GEMM_F16_128X128_M32 = "gemm_f16_128x128_m32" @ 256,
        /// f32, 128x128, 32x32 tiles, v_mfma_f32_32x32x2_f32.
        GEMM_F32_128X128_M32 = "gemm_f32_128x128_m32" @ 256,
        /// xf32, 128x128, 32x32 tiles, v_mfma_f32_32x32x4_xf32.
        GEMM_XF32_128X128_M32 = "gemm_xf32_128x128_m32" @ 256,
        /// E4M3FNUZ, 128x128, 32x32 tiles, v_mfma_f32_32x32x16_fp8_fp8.
        GEMM_FP8_128X128_M32 = "gemm_fp8_128x128_m32" @ 256,
        /// E5M2FNUZ, 128x128, 32x32 tiles, v_mfma_f32_32x32x16_bf8_bf8.
        GEMM_BF8_128X128_M32 = "gemm_bf8_128x128_m32" @ 256,
        /// bf16, 128x128 blocks on 32x32 MFMAs, stream-K (workgroups share blocks' K ranges).
        GEMM_BF16_128X128_M32_SK = "gemm_bf16_128x128_m32_sk" @ 256,
        /// f16, 128x128, 32x32 tiles, stream-K.
        GEMM_F16_128X128_M32_SK = "gemm_f16_128x128_m32_sk" @ 256,
        /// f32, 128x128, 32x32 tiles, stream-K.
        GEMM_F32_128X128_M32_SK = "gemm_f32_128x128_m32_sk" @ 256,
        /// xf32, 128x128, 32x32 tiles, stream-K.
        GEMM_XF32_128X128_M32_SK = "gemm_xf32_128x128_m32_sk" @ 256,
        /// E4M3FNUZ, 128x128, 32x32 tiles, stream-K.
        GEMM_FP8_128X128_M32_SK = "gemm_fp8_128x128_m32_sk" @ 256,
        /// E5M2FNUZ, 128x128, 32x32 tiles, stream-K.
        GEMM_BF8_128X128_M32_SK = "gemm_bf8_128x128_m32_sk" @ 256,
        /// bf16, 16x64 block of one wave (tall-skinny: M <= 16), v_mfma_f32_16x16x16_bf16.
        GEMM_BF16_16X64 = "gemm_bf16_16x64" @ 64,
        /// f16, 16x64 block of one wave (tall-skinny).
        GEMM_F16_16X64 = "gemm_f16_16x64" @ 64,
        /// f32, 16x64 block of one wave (tall-skinny).
        GEMM_F32_16X64 = "gemm_f32_16x64" @ 64,
        /// xf32, 16x64 block of one wave (tall-skinny).
        GEMM_XF32_16X64 = "gemm_xf32_16x64" @ 64,
        /// E4M3FNUZ, 16x64 block of one wave (tall-skinny).
        GEMM_FP8_16X64 = "gemm_fp8_16x64" @ 64,
        /// E5M2FNUZ, 16x64 block of one wave (tall-skinny).
        GEMM_BF8_16X64 = "gemm_bf8_16x64" @ 64,
        /// bf16 decode GEMV: 16 rows of B per workgroup, K split over its waves (see [`GEMV_ROWS`]).
        GEMV_BF16 = "gemv_bf16" @ 512,
        /// f16 decode GEMV.
        GEMV_F16 = "gemv_f16" @ 512,
        /// f32 decode GEMV (exact f32 MFMA).
        GEMV_F32 = "gemv_f32" @ 512,
        /// f32 decode GEMV, inputs truncated to tf32 by the matrix cores (opt-in).
        GEMV_XF32 = "gemv_xf32" @ 512,
        /// E4M3FNUZ decode GEMV.
        GEMV_FP8 = "gemv_fp8" @ 512,
        /// E5M2FNUZ decode GEMV.
        GEMV_BF8 = "gemv_bf8" @ 512,
    }
}

/// Partial slots a stream-K workgroup owns in `GemmArgs::workspace`.
pub const SK_SLOTS_PER_WORKGROUP: u32 = 2;

/// The workspace slot where contributor `c` (a workgroup's stream-K rank) stores its partial of
/// a block whose first contributor is `first`.
///
/// A stream-K workgroup reduces a run of consecutive K-tiles of the blocks taken in order, so it
/// shares at most two blocks with other workgroups: the block its run starts in, where it is not
/// the first contributor (slot `2c`), and the block its run ends in, where it is (slot `2c + 1`).
/// A run that starts at a block's start either covers that block whole (no partial) or ends
/// inside it (one partial, slot `2c + 1`), so no slot is used twice.
pub const fn stream_k_slot(c: u32, first: u32) -> u32 {
    SK_SLOTS_PER_WORKGROUP * c + (c == first) as u32
}

/// Columns of C one work-item of `gemm_splitk_reduce` finishes.
pub const REDUCE_COLS: u32 = 4;
/// Work-items per workgroup of `gemm_splitk_reduce`.
pub const REDUCE_THREADS: u32 = 256;

crate::kernel_abi! {
    /// Arguments of `gemm_splitk_reduce`, the second pass of a split-K GEMM: sums the f32
    /// partials of the splits in split order (deterministic) and applies the epilogue.
    /// Grid: x = ceil(rows * ceil(N / REDUCE_COLS) / REDUCE_THREADS), REDUCE_THREADS work-items.
    pub struct GemmReduceArgs {
        /// The first pass's partials, f32 `[splits][batch][M][N]`.
        pub partial: Ptr<f32>,
        /// C, `[batch][M][N]` of `out_type`; read when `BETA` is set.
        pub c: PtrMut<u8>,
        /// Per-column f32 bias when `BIAS`.
        pub bias: Ptr<f32>,
        /// Residual `[batch][M][ldr]` of `out_type` when `RESIDUAL`.
        pub residual: Ptr<u8>,
        /// Elements between consecutive splits' partials (`batch * M * N`).
        pub split_stride: u64,
        /// Elements between batches of the residual (0 broadcasts it).
        pub batch_stride_r: u64,
        /// Rows of all batches (`batch * M`).
        pub rows: u32,
        /// Rows per batch.
        pub m: u32,
        /// Columns.
        pub n: u32,
        /// Residual row stride.
        pub ldr: u32,
        /// Splits to sum.
        pub splits: u32,
        /// Scale of the product.
        pub alpha: f32,
        /// Scale of the existing C (with `BETA`).
        pub beta: f32,
        /// An `out_type` value.
        pub out_type: u32,
        /// An `activation` value.
        pub activation: u32,
        /// `flags` bits: BIAS, RESIDUAL, BETA, and VECTOR_OK meaning C's base is 16-byte aligned
        /// and N a multiple of 4 (16-byte partial loads, 16- or 8-byte C stores).
        pub flags: u32,
    }
    kernels {
        /// Sums split-K partials and runs the GEMM epilogue.
        GEMM_SPLITK_REDUCE = "gemm_splitk_reduce" @ 256,
    }
}

/// Waves per workgroup of the 128x128 configurations.
pub const GEMM_128_WAVES: u32 = 4;

/// Rows of B (columns of C) one `gemv_*` workgroup computes, and rows of A per workgroup row
/// (grid: x = ceil(N / 16), y = ceil(M / 16), z = batch; `splits` is 1). The GEMV streams B
/// once per 16 rows of A without LDS staging: its waves split K, each wave reducing
/// `k_tiles_per_split` consecutive K-tiles, and needs `VECTOR_OK` (16-byte aligned operands and
/// row strides).
pub const GEMV_ROWS: u32 = 16;
/// Most waves a `gemv_*` workgroup splits K over.
pub const GEMV_MAX_WAVES: u32 = 8;
/// K-tiles a GEMV wave loads at once (its loads run one such group ahead of its arithmetic).
pub const GEMV_GROUP: u32 = 4;
/// Floats from one register's partial sums to the next in the GEMV's LDS reduction: 64 lanes
/// and 16 of padding, so that the 32-lane phases of the reading side (rows `e` and `e + 1` of
/// one column range) fall on disjoint banks.
pub const GEMV_RED_PITCH: u32 = 80;

/// Dynamic LDS of a `gemv_*` workgroup of `waves` waves: each wave's 4 registers of partial sums.
pub const fn gemv_lds_bytes(waves: u32) -> u32 {
    waves * 4 * GEMV_RED_PITCH * 4
}

/// Dynamic LDS of a configuration: two stages of an A tile and a B tile, `K_TILE_BYTES` per row.
pub const fn gemm_lds_bytes(block_m: u32, block_n: u32) -> u32 {
    2 * (block_m + block_n) * K_TILE_BYTES
}
