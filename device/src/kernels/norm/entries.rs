//! The norm kernels' entry points (`abi::norm`), one per element type.

use super::norm;
use super::short::norm_short;
use crate::abi::norm::NormArgs;

NormArgs! {
    NORM_F32 => norm::<f32>,
    NORM_F16 => norm::<F16>,
    NORM_BF16 => norm::<Bf16>,
    NORM_SHORT_F32 => norm_short::<f32, 4>,
    NORM_SHORT_F16 => norm_short::<F16, 4>,
    NORM_SHORT_BF16 => norm_short::<Bf16, 4>,
    NORM_SHORT_HALF_F32 => norm_short::<f32, 2>,
    NORM_SHORT_HALF_F16 => norm_short::<F16, 2>,
    NORM_SHORT_HALF_BF16 => norm_short::<Bf16, 2>,
}
