//! The quantized kernels' entry points (`abi::quant`), one per format.

use super::dequant::dequant;
use super::format::{Q4_0, Q4_1, Q4K, Q5_0, Q5_1, Q5K, Q6K, Q8_0};
use super::gemm::gemm;
use super::gemv::{gemv, gemv_norm};
use super::gemv_one::{gemv_one, gemv_one_norm};
use crate::abi::quant::{DequantArgs, QGemmArgs, QGemvArgs};

DequantArgs! {
    QUANT_DEQUANT_Q4_0 => dequant::<Q4_0>,
    QUANT_DEQUANT_Q4_1 => dequant::<Q4_1>,
    QUANT_DEQUANT_Q5_0 => dequant::<Q5_0>,
    QUANT_DEQUANT_Q5_1 => dequant::<Q5_1>,
    QUANT_DEQUANT_Q8_0 => dequant::<Q8_0>,
    QUANT_DEQUANT_Q4_K => dequant::<Q4K>,
    QUANT_DEQUANT_Q5_K => dequant::<Q5K>,
    QUANT_DEQUANT_Q6_K => dequant::<Q6K>,
}

QGemvArgs! {
    QUANT_GEMV_Q4_0 => gemv::<Q4_0>,
    QUANT_GEMV_Q4_1 => gemv::<Q4_1>,
    QUANT_GEMV_Q5_0 => gemv::<Q5_0>,
    QUANT_GEMV_Q5_1 => gemv::<Q5_1>,
    QUANT_GEMV_Q8_0 => gemv::<Q8_0>,
    QUANT_GEMV_Q4_K => gemv::<Q4K>,
    QUANT_GEMV_Q5_K => gemv::<Q5K>,
    QUANT_GEMV_Q6_K => gemv::<Q6K>,
    QUANT_GEMV_NORM_F16_Q4_0 => gemv_norm::<Q4_0, F16>,
    QUANT_GEMV_NORM_F16_Q4_1 => gemv_norm::<Q4_1, F16>,
    QUANT_GEMV_NORM_F16_Q5_0 => gemv_norm::<Q5_0, F16>,
    QUANT_GEMV_NORM_F16_Q5_1 => gemv_norm::<Q5_1, F16>,
    QUANT_GEMV_NORM_F16_Q8_0 => gemv_norm::<Q8_0, F16>,
    QUANT_GEMV_NORM_F16_Q4_K => gemv_norm::<Q4K, F16>,
    QUANT_GEMV_NORM_F16_Q5_K => gemv_norm::<Q5K, F16>,
    QUANT_GEMV_NORM_F16_Q6_K => gemv_norm::<Q6K, F16>,
    QUANT_GEMV_NORM_BF16_Q4_0 => gemv_norm::<Q4_0, Bf16>,
    QUANT_GEMV_NORM_BF16_Q4_1 => gemv_norm::<Q4_1, Bf16>,
    QUANT_GEMV_NORM_BF16_Q5_0 => gemv_norm::<Q5_0, Bf16>,
    QUANT_GEMV_NORM_BF16_Q5_1 => gemv_norm::<Q5_1, Bf16>,
    QUANT_GEMV_NORM_BF16_Q8_0 => gemv_norm::<Q8_0, Bf16>,
    QUANT_GEMV_NORM_BF16_Q4_K => gemv_norm::<Q4K, Bf16>,
    QUANT_GEMV_NORM_BF16_Q5_K => gemv_norm::<Q5K, Bf16>,
    QUANT_GEMV_NORM_BF16_Q6_K => gemv_norm::<Q6K, Bf16>,
    QUANT_GEMV_ONE_Q4_0 => gemv_one::<Q4_0>,
    QUANT_GEMV_ONE_Q4_1 => gemv_one::<Q4_1>,
    QUANT_GEMV_ONE_Q5_0 => gemv_one::<Q5_0>,
    QUANT_GEMV_ONE_Q5_1 => gemv_one::<Q5_1>,
    QUANT_GEMV_ONE_Q8_0 => gemv_one::<Q8_0>,
    QUANT_GEMV_ONE_Q4_K => gemv_one::<Q4K>,
    QUANT_GEMV_ONE_Q5_K => gemv_one::<Q5K>,
    QUANT_GEMV_ONE_Q6_K => gemv_one::<Q6K>,
    QUANT_GEMV_ONE_NORM_F16_Q4_0 => gemv_one_norm::<Q4_0, F16>,
    QUANT_GEMV_ONE_NORM_F16_Q4_1 => gemv_one_norm::<Q4_1, F16>,
    QUANT_GEMV_ONE_NORM_F16_Q5_0 => gemv_one_norm::<Q5_0, F16>,
    QUANT_GEMV_ONE_NORM_F16_Q5_1 => gemv_one_norm::<Q5_1, F16>,
    QUANT_GEMV_ONE_NORM_F16_Q8_0 => gemv_one_norm::<Q8_0, F16>,
    QUANT_GEMV_ONE_NORM_F16_Q4_K => gemv_one_norm::<Q4K, F16>,
    QUANT_GEMV_ONE_NORM_F16_Q5_K => gemv_one_norm::<Q5K, F16>,
    QUANT_GEMV_ONE_NORM_F16_Q6_K => gemv_one_norm::<Q6K, F16>,
    QUANT_GEMV_ONE_NORM_BF16_Q4_0 => gemv_one_norm::<Q4_0, Bf16>,
    QUANT_GEMV_ONE_NORM_BF16_Q4_1 => gemv_one_norm::<Q4_1, Bf16>,
    QUANT_GEMV_ONE_NORM_BF16_Q5_0 => gemv_one_norm::<Q5_0, Bf16>,
    QUANT_GEMV_ONE_NORM_BF16_Q5_1 => gemv_one_norm::<Q5_1, Bf16>,
    QUANT_GEMV_ONE_NORM_BF16_Q8_0 => gemv_one_norm::<Q8_0, Bf16>,
    QUANT_GEMV_ONE_NORM_BF16_Q4_K => gemv_one_norm::<Q4K, Bf16>,
    QUANT_GEMV_ONE_NORM_BF16_Q5_K => gemv_one_norm::<Q5K, Bf16>,
    QUANT_GEMV_ONE_NORM_BF16_Q6_K => gemv_one_norm::<Q6K, Bf16>,
}

QGemmArgs! {
    QUANT_GEMM_Q4_0 => gemm::<Q4_0>,
    QUANT_GEMM_Q4_1 => gemm::<Q4_1>,
    QUANT_GEMM_Q5_0 => gemm::<Q5_0>,
    QUANT_GEMM_Q5_1 => gemm::<Q5_1>,
    QUANT_GEMM_Q8_0 => gemm::<Q8_0>,
    QUANT_GEMM_Q4_K => gemm::<Q4K>,
    QUANT_GEMM_Q5_K => gemm::<Q5K>,
    QUANT_GEMM_Q6_K => gemm::<Q6K>,
}
