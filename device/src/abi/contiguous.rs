//! Contiguous copies: strided gathers into contiguous memory (the "make contiguous" of views, and
//! the packing GEMM uses for operands whose K is not the contiguous dimension).

use super::{Ptr, PtrMut};

/// Largest rank a strided copy handles (more dimensions are merged or refused by the host).
pub const MAX_RANK: usize = 6;
/// Work-items per workgroup of the contiguous-copy kernels.
pub const CONTIGUOUS_BLOCK: u32 = 256;

crate::kernel_abi! {
    /// Arguments of `copy_strided_*`: `dst[i] = src[offset(i)]` for the row-major index `i` of a
    /// `shape` tensor, where `offset` is the dot product of the multi-index with `src_strides`.
    pub struct CopyStridedArgs {
        /// Source, any strides (elements).
        pub src: Ptr<u8>,
        /// Destination, contiguous.
        pub dst: PtrMut<u8>,
        /// Sizes of the (up to 6) dimensions, outermost first; unused leading ones are 1. Scalars,
        /// not an array: aggregates are passed indirectly by the `gpu-kernel` ABI.
        pub shape0: u32,
        /// See `shape0`.
        pub shape1: u32,
        /// See `shape0`.
        pub shape2: u32,
        /// See `shape0`.
        pub shape3: u32,
        /// See `shape0`.
        pub shape4: u32,
        /// See `shape0`.
        pub shape5: u32,
        /// Source strides in elements, matching the shape.
        pub stride0: u64,
        /// See `stride0`.
        pub stride1: u64,
        /// See `stride0`.
        pub stride2: u64,
        /// See `stride0`.
        pub stride3: u64,
        /// See `stride0`.
        pub stride4: u64,
        /// See `stride0`.
        pub stride5: u64,
        /// Element count (the product of `shape`).
        pub n: u64,
    }
    kernels {
        /// 1-byte elements.
        COPY_STRIDED_B8 = "copy_strided_b8" @ 256,
        /// 2-byte elements.
        COPY_STRIDED_B16 = "copy_strided_b16" @ 256,
        /// 4-byte elements.
        COPY_STRIDED_B32 = "copy_strided_b32" @ 256,
        /// 8-byte elements.
        COPY_STRIDED_B64 = "copy_strided_b64" @ 256,
    }
}

impl CopyStridedArgs {
    /// The shape as an array (outermost first).
    pub fn shape(&self) -> [u32; MAX_RANK] {
        [self.shape0, self.shape1, self.shape2, self.shape3, self.shape4, self.shape5]
    }

    /// The strides as an array (outermost first).
    pub fn strides(&self) -> [u64; MAX_RANK] {
        [self.stride0, self.stride1, self.stride2, self.stride3, self.stride4, self.stride5]
    }
}
