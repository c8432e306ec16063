//! The first kernels (`abi::smoke`): the smallest programs that exercise each part of the path —
//! global memory and scalar arguments ([`fill`]), 128-bit accesses ([`copy`]), arithmetic
//! ([`saxpy`]), LDS, barriers and one MFMA tile ([`mfma`]), and the tile layer end to end on the
//! int8 matrix core ([`tile_i8`]).

pub mod copy;
mod entries;
pub mod fill;
pub mod mfma;
pub mod saxpy;
pub mod tile_i8;
