//! The elementwise kernels' entry points (`abi::elementwise`): one per input type and width.

use super::{binary, cast, fill, select, unary};
use crate::abi::elementwise::{EltArgs, FillPatternArgs};

EltArgs! {
    CAST_FROM_F32 => cast::cast_from_f32,
    CAST_FROM_F16 => cast::cast_from_f16,
    CAST_FROM_BF16 => cast::cast_from_bf16,
    CAST_FROM_FP8_E4M3 => cast::cast_from_fp8e4m3,
    CAST_FROM_FP8_E5M2 => cast::cast_from_fp8e5m2,
    CAST_FROM_I32 => cast::cast_from_i32,
    UNARY_F32 => unary::unary::<f32, 4>,
    UNARY_F16 => unary::unary::<F16, 8>,
    UNARY_BF16 => unary::unary::<Bf16, 8>,
    BINARY_F32 => binary::binary::<f32, 4>,
    BINARY_F16 => binary::binary::<F16, 8>,
    BINARY_BF16 => binary::binary::<Bf16, 8>,
    WHERE_B32 => select::where_::<u32>,
    WHERE_B16 => select::where_::<u16>,
    WHERE_B8 => select::where_::<i8>,
}

FillPatternArgs! {
    FILL_B128 => fill::fill_b128,
}
