//! The GEMM kernels' entry points (`abi::gemm`, `abi::gemm_blockscaled`): per input type, the
//! 128x128 block on 16x16 and on 32x32 MFMAs (and stream-K on 32x32), the 16x64 tall-skinny
//! block and the decode GEMV;
//! the split-K reduction; the fp8 block-scaled kernel.

use super::{blockscaled, gemv, plain, splitk, stream_k};
use crate::abi::gemm::{GemmArgs, GemmReduceArgs};
use crate::abi::gemm_blockscaled::BlockScaledArgs;
use crate::tile::mma::Xf32;
use crate::tile::reg::{Tiles16, Tiles32};

GemmArgs! {
    GEMM_BF16_128X128 => plain::gemm::<Bf16, Tiles16<4, 4>, 2, 2>,
    GEMM_F16_128X128 => plain::gemm::<F16, Tiles16<4, 4>, 2, 2>,
    GEMM_F32_128X128 => plain::gemm::<f32, Tiles16<4, 4>, 2, 2>,
    GEMM_XF32_128X128 => plain::gemm::<Xf32, Tiles16<4, 4>, 2, 2>,
    GEMM_FP8_128X128 => plain::gemm::<Fp8E4M3Fnuz, Tiles16<4, 4>, 2, 2>,
    GEMM_BF8_128X128 => plain::gemm::<Fp8E5M2Fnuz, Tiles16<4, 4>, 2, 2>,
    GEMM_BF16_128X128_M32 => plain::gemm::<Bf16, Tiles32<2, 2>, 2, 2>,
    GEMM_F16_128X128_M32 => plain::gemm::<F16, Tiles32<2, 2>, 2, 2>,
    GEMM_F32_128X128_M32 => plain::gemm::<f32, Tiles32<2, 2>, 2, 2>,
    GEMM_XF32_128X128_M32 => plain::gemm::<Xf32, Tiles32<2, 2>, 2, 2>,
    GEMM_FP8_128X128_M32 => plain::gemm::<Fp8E4M3Fnuz, Tiles32<2, 2>, 2, 2>,
    GEMM_BF8_128X128_M32 => plain::gemm::<Fp8E5M2Fnuz, Tiles32<2, 2>, 2, 2>,
    GEMM_BF16_128X128_M32_SK => stream_k::run::<stream_k::Plain<Bf16, Tiles32<2, 2>, 2, 2>>,
    GEMM_F16_128X128_M32_SK => stream_k::run::<stream_k::Plain<F16, Tiles32<2, 2>, 2, 2>>,
    GEMM_F32_128X128_M32_SK => stream_k::run::<stream_k::Plain<f32, Tiles32<2, 2>, 2, 2>>,
    GEMM_XF32_128X128_M32_SK => stream_k::run::<stream_k::Plain<Xf32, Tiles32<2, 2>, 2, 2>>,
    GEMM_FP8_128X128_M32_SK => stream_k::run::<stream_k::Plain<Fp8E4M3Fnuz, Tiles32<2, 2>, 2, 2>>,
    GEMM_BF8_128X128_M32_SK => stream_k::run::<stream_k::Plain<Fp8E5M2Fnuz, Tiles32<2, 2>, 2, 2>>,
    GEMM_BF16_16X64 => plain::gemm::<Bf16, Tiles16<1, 4>, 1, 1>,
    GEMM_F16_16X64 => plain::gemm::<F16, Tiles16<1, 4>, 1, 1>,
    GEMM_F32_16X64 => plain::gemm::<f32, Tiles16<1, 4>, 1, 1>,
    GEMM_XF32_16X64 => plain::gemm::<Xf32, Tiles16<1, 4>, 1, 1>,
    GEMM_FP8_16X64 => plain::gemm::<Fp8E4M3Fnuz, Tiles16<1, 4>, 1, 1>,
    GEMM_BF8_16X64 => plain::gemm::<Fp8E5M2Fnuz, Tiles16<1, 4>, 1, 1>,
    GEMV_BF16 => gemv::gemv::<Bf16>,
    GEMV_F16 => gemv::gemv::<F16>,
    GEMV_F32 => gemv::gemv::<f32>,
    GEMV_XF32 => gemv::gemv::<Xf32>,
    GEMV_FP8 => gemv::gemv::<Fp8E4M3Fnuz>,
    GEMV_BF8 => gemv::gemv::<Fp8E5M2Fnuz>,
}

GemmReduceArgs! {
    GEMM_SPLITK_REDUCE => splitk::splitk_reduce,
}

BlockScaledArgs! {
    GEMM_FP8_BLOCKSCALED_128X128 => blockscaled::gemm_fp8_blockscaled::<2, 2, false>,
    GEMM_FP8_BLOCKSCALED_64X64 => blockscaled::gemm_fp8_blockscaled::<1, 1, false>,
    GEMM_FP8_BLOCKSCALED_128X128_SPLITK => blockscaled::gemm_fp8_blockscaled::<2, 2, true>,
    GEMM_FP8_BLOCKSCALED_64X64_SPLITK => blockscaled::gemm_fp8_blockscaled::<1, 1, true>,
    GEMM_FP8_BLOCKSCALED_128X128_SK => stream_k::run::<stream_k::BlockScaled>,
}
