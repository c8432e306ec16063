//! The norm kernels' entry points (`abi::norm`), one per element type.

use super::norm;
use crate::abi::norm::NormArgs;

NormArgs! {
    NORM_F32 => norm::<f32>,
    NORM_F16 => norm::<F16>,
    NORM_BF16 => norm::<Bf16>,
}
