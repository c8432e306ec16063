//! The rotary-embedding kernels' entry points (`abi::rope`), one per element type.

use super::rope;
use crate::abi::rope::RopeArgs;

RopeArgs! {
    ROPE_F32 => rope::<f32>,
    ROPE_F16 => rope::<F16>,
    ROPE_BF16 => rope::<Bf16>,
}
