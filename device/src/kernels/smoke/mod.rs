//! The first kernels (`abi::smoke`): the smallest programs that exercise each part of the path —
//! global memory and scalar arguments ([`fill`]), 128-bit accesses ([`copy`]), arithmetic
//! ([`saxpy`]), LDS, barriers and one MFMA tile ([`mfma`]).

pub mod copy;
mod entries;
pub mod fill;
pub mod mfma;
pub mod saxpy;
