//! Data-movement kernels: row gathers (embedding lookup / index_select, and the block copies of
//! concat) and the LDS-tiled transpose of the last two axes.

use super::{Ptr, PtrMut};

/// Work-items per workgroup of the movement kernels.
pub const MOVE_BLOCK: u32 = 256;

/// Input rows of one transpose tile (and output columns).
pub const TRANSPOSE_TILE_ROWS: u32 = 64;
/// Bytes of one input row of a transpose tile: 64 32-bit words (64 f32, 128 f16, 256 fp8 values).
pub const TRANSPOSE_TILE_ROW_BYTES: u32 = 256;
/// Dynamic LDS of a transpose launch: one 64 x 64-word tile.
pub const TRANSPOSE_LDS_BYTES: u32 = TRANSPOSE_TILE_ROWS * TRANSPOSE_TILE_ROW_BYTES;

/// Bits of `TransposeArgs::flags`.
pub mod transpose_flags {
    /// Input rows can be read with 128-bit loads: column stride 1, base and row stride 16-byte
    /// aligned.
    pub const SRC_VEC: u32 = 1 << 0;
    /// Output rows can be written with 128-bit stores: base and `rows * bytes` 16-byte aligned.
    pub const DST_VEC: u32 = 1 << 1;
}

crate::kernel_abi! {
    /// Arguments of `copy_rows`: for every output row `r = p * inner_rows + j` (`p < outer`,
    /// `j < inner_rows`), copy `chunks_per_row * unit` bytes from source row
    /// `src + p * src_outer_pitch + s * src_row_pitch`, where `s = index[j]` (gather) or `s = j`
    /// (`index` null: a block copy), to `dst + p * dst_outer_pitch + j * dst_row_pitch`.
    ///
    /// A gather index outside `0..index_limit` is not followed: the row is zero-filled and
    /// `error[0]` is set to the output row position `j` plus one (some offending position when
    /// there are several), for the host to report as a typed error.
    pub struct CopyRowsArgs {
        /// Source base.
        pub src: Ptr<u8>,
        /// Destination base.
        pub dst: PtrMut<u8>,
        /// i32 source row per output row `j`, or null for the identity.
        pub index: Ptr<i32>,
        /// One u32 the kernel sets on a bad index (null when `index` is null).
        pub error: PtrMut<u32>,
        /// Total chunks: `outer * inner_rows * chunks_per_row` (one per work-item).
        pub chunks: u32,
        /// Chunks of `unit` bytes per row.
        pub chunks_per_row: u32,
        /// [`FastDivisor`](super::elementwise::FastDivisor) magic of `chunks_per_row`.
        pub cpr_magic: u32,
        /// Its shift.
        pub cpr_shift: u32,
        /// Output rows per outer block.
        pub inner_rows: u32,
        /// [`FastDivisor`](super::elementwise::FastDivisor) magic of `inner_rows`.
        pub inner_magic: u32,
        /// Its shift.
        pub inner_shift: u32,
        /// Valid gather indices are `0..index_limit`.
        pub index_limit: u32,
        /// Bytes per chunk: 16, 8, 4, 2 or 1 (the host picks the widest that every address and
        /// pitch is aligned to).
        pub unit: u32,
        /// Bytes between source outer blocks.
        pub src_outer_pitch: u64,
        /// Bytes between source rows.
        pub src_row_pitch: u64,
        /// Bytes between destination outer blocks.
        pub dst_outer_pitch: u64,
        /// Bytes between destination rows.
        pub dst_row_pitch: u64,
    }
    kernels {
        /// One `unit`-byte chunk per work-item: launch `ceil(chunks / MOVE_BLOCK)` workgroups of
        /// [`MOVE_BLOCK`].
        COPY_ROWS = "copy_rows" @ 256,
    }
}

crate::kernel_abi! {
    /// Arguments of `transpose_b*`: `dst[b][c][r] = src[b][r][c]` for a batch of `rows x cols`
    /// matrices; `dst` is contiguous `[batch][cols][rows]`.
    ///
    /// Grid: x = `ceil(cols / tile_cols)` with `tile_cols = 256 / element bytes`, y =
    /// `ceil(rows / 64)`, z = batch; workgroups of [`MOVE_BLOCK`]; [`TRANSPOSE_LDS_BYTES`] of
    /// dynamic LDS.
    pub struct TransposeArgs {
        /// Source, element `(b, r, c)` at `b * src_batch_stride + r * src_row_stride + c * src_col_stride`.
        pub src: Ptr<u8>,
        /// Contiguous destination.
        pub dst: PtrMut<u8>,
        /// Source batch stride in elements.
        pub src_batch_stride: u64,
        /// Source row stride in elements.
        pub src_row_stride: u64,
        /// Source column stride in elements.
        pub src_col_stride: u64,
        /// Rows of each source matrix.
        pub rows: u32,
        /// Columns of each source matrix.
        pub cols: u32,
        /// [`transpose_flags`] bits.
        pub flags: u32,
    }
    kernels {
        /// 1-byte elements (fp8, i8): tiles of 64 x 256.
        TRANSPOSE_B8 = "transpose_b8" @ 256,
        /// 2-byte elements (f16, bf16): tiles of 64 x 128.
        TRANSPOSE_B16 = "transpose_b16" @ 256,
        /// 4-byte elements (f32, i32, u32): tiles of 64 x 64.
        TRANSPOSE_B32 = "transpose_b32" @ 256,
    }
}
