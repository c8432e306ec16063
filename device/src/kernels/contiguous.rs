//! Strided gather into contiguous memory.

use crate::abi::contiguous::{CopyStridedArgs, MAX_RANK};
use crate::dsl::ids::{global_id_x, grid_size_x};

/// One element per work-item, grid-strided so any size fits a bounded grid. The destination is
/// written contiguously (coalesced); the source is read wherever the strides say.
#[inline(always)]
pub fn copy_strided<T: Copy>(args: CopyStridedArgs) {
    let (shape, strides) = (args.shape(), args.strides());
    let mut i = global_id_x() as u64;
    let step = grid_size_x() as u64;
    while i < args.n {
        // Multi-index of i, innermost dimension first.
        let mut rem = i;
        let mut off = 0u64;
        crate::unroll!(d < MAX_RANK - 1 => {
            let dim = MAX_RANK - 1 - d;
            let size = shape[dim] as u64;
            off += (rem % size) * strides[dim];
            rem /= size;
        });
        // What is left indexes the outermost dimension (i < n keeps it in range).
        off += rem * strides[0];
        // SAFETY: the host checked every index of the view lies inside the source buffer and
        // that dst holds n elements.
        unsafe {
            let v = (args.src as *const T).add(off as usize).read();
            (args.dst as *mut T).add(i as usize).write(v);
        }
        i += step;
    }
}

CopyStridedArgs! {
    COPY_STRIDED_B8 => copy_strided::<u8>,
    COPY_STRIDED_B16 => copy_strided::<u16>,
    COPY_STRIDED_B32 => copy_strided::<u32>,
    COPY_STRIDED_B64 => copy_strided::<u64>,
}
