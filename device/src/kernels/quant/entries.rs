//! The quantized kernels' entry points (`abi::quant`), one per format.

use super::dequant::dequant;
use super::format::{Q4_0, Q4_1, Q4K, Q5_0, Q5_1, Q5K, Q6K, Q8_0};
use crate::abi::quant::DequantArgs;

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
