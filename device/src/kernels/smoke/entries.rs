//! The smoke kernels' entry points (`abi::smoke`).

use super::{copy, fill, mfma, saxpy};
use crate::abi::smoke::{CopyArgs, FillArgs, MfmaTileArgs, SaxpyArgs};

FillArgs! {
    FILL_U32 => fill::fill_u32,
}

CopyArgs! {
    COPY_U32 => copy::copy_u32,
}

SaxpyArgs! {
    SAXPY_F32 => saxpy::saxpy_f32,
}

MfmaTileArgs! {
    MFMA_TILE_32X32_F16 => mfma::mfma_tile_32x32_f16,
}
