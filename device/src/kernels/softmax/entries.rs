//! The softmax kernels' entry points (`abi::softmax`), one per element type.

use super::softmax;
use crate::abi::softmax::SoftmaxArgs;

SoftmaxArgs! {
    SOFTMAX_F32 => softmax::<f32>,
    SOFTMAX_F16 => softmax::<F16>,
    SOFTMAX_BF16 => softmax::<Bf16>,
}
