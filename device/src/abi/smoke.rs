//! The first kernels: the smallest programs that exercise each part of the path (global memory,
//! scalar arguments, 128-bit accesses, LDS, barriers, MFMA, the tile layer).

use super::{F16, Ptr, PtrMut};

/// Work-items per workgroup of the 1-D streaming kernels in this file.
pub const STREAM_BLOCK: u32 = 256;
/// 32-bit words each work-item of `copy_u32` moves per 128-bit access.
pub const COPY_WORDS_PER_ITEM: u32 = 4;

crate::kernel_abi! {
    /// Arguments of `fill_u32`: `dst[i] = value` for `i < n`.
    pub struct FillArgs {
        /// Destination, `n` words.
        pub dst: PtrMut<u32>,
        /// The word written everywhere.
        pub value: u32,
        /// Number of words.
        pub n: u32,
    }
    kernels {
        /// Fills `n` 32-bit words; launch `ceil(n / STREAM_BLOCK)` workgroups of [`STREAM_BLOCK`].
        FILL_U32 = "fill_u32" @ 256,
    }
}

crate::kernel_abi! {
    /// Arguments of `copy_u32`: `dst[i] = src[i]` for `i < n`. Both pointers 16-byte aligned.
    pub struct CopyArgs {
        /// Source, `n` words, 16-byte aligned.
        pub src: Ptr<u32>,
        /// Destination, `n` words, 16-byte aligned, not overlapping `src`.
        pub dst: PtrMut<u32>,
        /// Number of words.
        pub n: u32,
    }
    kernels {
        /// Copies with one 128-bit load and store per work-item ([`COPY_WORDS_PER_ITEM`] words);
        /// launch `ceil(n / (STREAM_BLOCK * COPY_WORDS_PER_ITEM))` workgroups of [`STREAM_BLOCK`].
        COPY_U32 = "copy_u32" @ 256,
    }
}

crate::kernel_abi! {
    /// Arguments of `saxpy_f32`: `y[i] = a * x[i] + y[i]` for `i < n`.
    pub struct SaxpyArgs {
        /// x, `n` elements.
        pub x: Ptr<f32>,
        /// y, `n` elements, updated in place.
        pub y: PtrMut<f32>,
        /// The scale.
        pub a: f32,
        /// Number of elements.
        pub n: u32,
    }
    kernels {
        /// f32 saxpy (one FMA-free multiply-add per element, as in BLAS: `a*x` rounded, then `+ y`);
        /// launch `ceil(n / STREAM_BLOCK)` workgroups of [`STREAM_BLOCK`].
        SAXPY_F32 = "saxpy_f32" @ 256,
    }
}

/// The tile product's M and N (one 32x32 output tile per wave).
pub const MFMA_TILE: u32 = 32;
/// The K step of one `v_mfma_f32_32x32x8_f16`.
pub const MFMA_TILE_K_STEP: u32 = 8;
/// Dynamic LDS the tile product needs: one 32x8 A slab and one 8x32 B slab of f16.
pub const MFMA_TILE_LDS_BYTES: u32 = 2 * MFMA_TILE * MFMA_TILE_K_STEP * 2;

crate::kernel_abi! {
    /// Arguments of `mfma_tile_32x32_f16`: `c = a * b` for one 32x32 tile.
    pub struct MfmaTileArgs {
        /// A, 32 x k, row-major f16.
        pub a: Ptr<F16>,
        /// B, k x 32, row-major f16.
        pub b: Ptr<F16>,
        /// C, 32 x 32, row-major f32 (overwritten).
        pub c: PtrMut<f32>,
        /// The inner dimension, a multiple of [`MFMA_TILE_K_STEP`].
        pub k: u32,
    }
    kernels {
        /// One wave (64 work-items, one workgroup) computes a 32x32 f32 tile with
        /// `v_mfma_f32_32x32x8_f16`, staging each 8-wide K slab of A and B through LDS.
        /// Needs [`MFMA_TILE_LDS_BYTES`] of dynamic LDS.
        MFMA_TILE_32X32_F16 = "mfma_tile_32x32_f16" @ 64,
    }
}

/// Rows and columns of the int8 tile product.
pub const TILE_I8: u32 = 32;
/// Dynamic LDS of the int8 tile product: three stages of A's and B's 32 rows of a 64-byte K-tile.
pub const TILE_I8_LDS_BYTES: u32 = 3 * 2 * TILE_I8 * 64;

crate::kernel_abi! {
    /// Arguments of `mfma_tile_32x32_i8`: `c = a * b^T` for one 32x32 i32 tile, exactly (wrapping).
    pub struct MfmaTileI8Args {
        /// A, 32 x k, row-major i8 (K-contiguous).
        pub a: Ptr<i8>,
        /// B, 32 x k, row-major i8 (K-contiguous: the product takes its transpose).
        pub b: Ptr<i8>,
        /// C, 32 x 32, row-major i32 (overwritten).
        pub c: PtrMut<i32>,
        /// The inner dimension (any; the last K-tile is zero-filled).
        pub k: u32,
    }
    kernels {
        /// One wave runs the tile layer end to end on int8: global tiles (loaded straight into LDS
        /// when `k` is a multiple of 4, through registers otherwise), swizzled LDS stages, the
        /// K-loop pipeline, a 32x32 register tile on `v_mfma_i32_32x32x16_i8`. Needs
        /// [`TILE_I8_LDS_BYTES`] of dynamic LDS.
        MFMA_TILE_32X32_I8 = "mfma_tile_32x32_i8" @ 64,
    }
}
