//! The smoke kernels' entry points (`abi::smoke`).

use super::{copy, fill, mfma, saxpy, tile_i8};
use crate::abi::smoke::{CopyArgs, FillArgs, MfmaTileArgs, MfmaTileI8Args, SaxpyArgs};

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

MfmaTileI8Args! {
    MFMA_TILE_32X32_I8 => tile_i8::mfma_tile_32x32_i8,
}
