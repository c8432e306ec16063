//! Reductions over one axis: sum, mean, max, min, argmax, argmin.
//!
//! The host views the input as `[outer][len][inner]` (the reduced axis in the middle) and picks:
//! - `reduce_rows_*` when `inner == 1` (the contiguous axis, and "reduce everything" as one row):
//!   a group of lanes per row, 128-bit loads along the row; long rows are split over several
//!   workgroups that write f32 partials;
//! - `reduce_cols_*` when `inner > 1` (a strided axis): lanes along `inner` (128-bit loads when
//!   `inner` allows), rows of `len` spread over the workgroup and combined through LDS; `len`
//!   may be split over workgroups the same way;
//! - `reduce_partials` to combine split partials into the output.
//!
//! One kernel per input dtype; the operation and the output type are arguments.

use super::{Ptr, PtrMut};

/// Work-items per workgroup of every reduction kernel.
pub const REDUCE_BLOCK: u32 = 256;

/// The operation (`op` fields).
pub mod op {
    /// Sum.
    pub const SUM: u32 = 0;
    /// Sum divided by the length (`mean_div`).
    pub const MEAN: u32 = 1;
    /// Maximum; NaN if any element is NaN.
    pub const MAX: u32 = 2;
    /// Minimum; NaN if any element is NaN.
    pub const MIN: u32 = 3;
    /// Index of the first maximum (of the first NaN if there is one).
    pub const ARGMAX: u32 = 4;
    /// Index of the first minimum (of the first NaN if there is one).
    pub const ARGMIN: u32 = 5;
}

/// Output element types (`out_type` fields).
pub mod out_type {
    /// f32.
    pub const F32: u32 = 0;
    /// f16 (nearest even).
    pub const F16: u32 = 1;
    /// bf16 (nearest even).
    pub const BF16: u32 = 2;
    /// i32 indices (argmax/argmin).
    pub const I32: u32 = 3;
}

/// Bits of the `flags` fields.
pub mod flags {
    /// The input rows (`reduce_rows`) or the `inner` runs (`reduce_cols`) may be read 16 bytes at
    /// a time: 16-byte aligned base and row pitch (host-checked).
    pub const VECTOR_OK: u32 = 1 << 0;
    /// Write f32 partials (and u32 indices) to `part_val`/`part_idx` instead of the output.
    pub const PARTIAL: u32 = 1 << 1;
}

/// Dynamic LDS of `reduce_cols_*`: per work-item, 8 values and 8 indices of 4 bytes (16-bit
/// inputs read 8 columns per 128-bit load).
pub const REDUCE_COLS_LDS_BYTES: u32 = REDUCE_BLOCK * 8 * 4 * 2;

/// Dynamic LDS of `reduce_rows_*`: the cross-wave slots of `dsl::group::reduce_waves` (512
/// bytes), then one staged result word per row of the workgroup (so the results leave in one
/// contiguous store).
pub const REDUCE_ROWS_LDS_BYTES: u32 = 512 + REDUCE_BLOCK * 4;

crate::kernel_abi! {
    /// Arguments of `reduce_rows_*`: reduce each of `rows` contiguous rows of `len` elements.
    /// Grid: x = row groups (`REDUCE_BLOCK / lanes` rows each) * splits, splits fastest.
    pub struct ReduceRowsArgs {
        /// Input, `rows * len` elements of the kernel's dtype, rows contiguous.
        pub x: Ptr<u8>,
        /// Output, `rows` elements of `out_type` (unless PARTIAL).
        pub out: PtrMut<u8>,
        /// Partial values `[rows][splits]` (with PARTIAL).
        pub part_val: PtrMut<f32>,
        /// Partial indices `[rows][splits]` (with PARTIAL, arg ops).
        pub part_idx: PtrMut<u32>,
        /// Rows.
        pub rows: u32,
        /// Elements per row.
        pub len: u32,
        /// Lanes per row: a power of two from 1 to 256.
        pub lanes: u32,
        /// Elements per split of a row (a multiple of 8 when VECTOR_OK); `len` when unsplit.
        pub seg_len: u32,
        /// Splits per row.
        pub splits: u32,
        /// An [`op`] code.
        pub op: u32,
        /// An [`out_type`] code.
        pub out_type: u32,
        /// [`flags`] bits.
        pub flags: u32,
        /// The divisor of MEAN (the full length as f32).
        pub mean_div: f32,
    }
    kernels {
        /// f32 input.
        REDUCE_ROWS_F32 = "reduce_rows_f32" @ 256,
        /// f16 input, f32 accumulation.
        REDUCE_ROWS_F16 = "reduce_rows_f16" @ 256,
        /// bf16 input, f32 accumulation.
        REDUCE_ROWS_BF16 = "reduce_rows_bf16" @ 256,
    }
}

crate::kernel_abi! {
    /// Arguments of `reduce_cols_*`: reduce `[outer][len][inner]` over `len`.
    /// Grid: x = outer * column tiles (`tile_cols` column units each, tiles fastest), y = splits
    /// of `len`.
    pub struct ReduceColsArgs {
        /// Input, contiguous `[outer][len][inner]` of the kernel's dtype.
        pub x: Ptr<u8>,
        /// Output `[outer][inner]` of `out_type` (unless PARTIAL).
        pub out: PtrMut<u8>,
        /// Partial values `[splits][outer][inner]` (with PARTIAL).
        pub part_val: PtrMut<f32>,
        /// Partial indices `[splits][outer][inner]` (with PARTIAL, arg ops).
        pub part_idx: PtrMut<u32>,
        /// Size of the leading (kept) dimension.
        pub outer: u32,
        /// Size of the reduced dimension.
        pub len: u32,
        /// Size of the trailing (kept) dimension, > 1.
        pub inner: u32,
        /// Column units per workgroup tile (a unit is one 16-byte chunk with VECTOR_OK, else one
        /// element), at most [`REDUCE_BLOCK`]; the rest of the block spreads over `len`.
        pub tile_cols: u32,
        /// Entries of `len` per split.
        pub seg_len: u32,
        /// Splits of `len` (grid y).
        pub splits: u32,
        /// An [`op`] code.
        pub op: u32,
        /// An [`out_type`] code.
        pub out_type: u32,
        /// [`flags`] bits.
        pub flags: u32,
        /// The divisor of MEAN.
        pub mean_div: f32,
    }
    kernels {
        /// f32 input.
        REDUCE_COLS_F32 = "reduce_cols_f32" @ 256,
        /// f16 input, f32 accumulation.
        REDUCE_COLS_F16 = "reduce_cols_f16" @ 256,
        /// bf16 input, f32 accumulation.
        REDUCE_COLS_BF16 = "reduce_cols_bf16" @ 256,
    }
}

crate::kernel_abi! {
    /// Arguments of `reduce_partials`: output `o` combines the partials at
    /// `o * stride_out + s * stride_part` for `s < parts`.
    /// Grid: x = `ceil(outputs / (REDUCE_BLOCK / lanes))`.
    pub struct ReducePartialsArgs {
        /// Partial values.
        pub part_val: Ptr<f32>,
        /// Partial indices (arg ops).
        pub part_idx: Ptr<u32>,
        /// Output, `outputs` elements of `out_type`.
        pub out: PtrMut<u8>,
        /// Outputs.
        pub outputs: u32,
        /// Partials per output.
        pub parts: u32,
        /// Lanes per output: 1 (partials of neighbouring outputs adjacent) or 64 (partials of one
        /// output adjacent).
        pub lanes: u32,
        /// Distance between the first partials of consecutive outputs.
        pub stride_out: u32,
        /// Distance between consecutive partials of one output.
        pub stride_part: u32,
        /// An [`op`] code.
        pub op: u32,
        /// An [`out_type`] code.
        pub out_type: u32,
        /// The divisor of MEAN.
        pub mean_div: f32,
    }
    kernels {
        /// Combines f32 partials of any input dtype.
        REDUCE_PARTIALS = "reduce_partials" @ 256,
    }
}
