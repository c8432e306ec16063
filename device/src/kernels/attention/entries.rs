//! The attention kernels' entry points (`abi::attention`): the flash forward and decode per input
//! type and head dimension, the split combination per output type, the cache write (plain, and
//! with a decode step's rotary embedding per value type).

use super::cache::{rope_write_kv, write_kv};
use super::combine::decode_combine;
use super::decode::decode;
use super::flash::{flash, flash_stream};
use crate::abi::attention::{DecodeArgs, DecodeCombineArgs, FlashArgs, RopeWriteKvArgs, WriteKvArgs};

FlashArgs! {
    FLASH_BF16_D32 => flash::<Bf16, 32>,
    FLASH_BF16_D64 => flash::<Bf16, 64>,
    FLASH_BF16_D96 => flash::<Bf16, 96>,
    FLASH_BF16_D128 => flash::<Bf16, 128>,
    FLASH_BF16_D256 => flash::<Bf16, 256>,
    FLASH_F16_D32 => flash::<F16, 32>,
    FLASH_F16_D64 => flash::<F16, 64>,
    FLASH_F16_D96 => flash::<F16, 96>,
    FLASH_F16_D128 => flash::<F16, 128>,
    FLASH_F16_D256 => flash::<F16, 256>,
    FLASH_STREAM_BF16_D32 => flash_stream::<Bf16, 32>,
    FLASH_STREAM_BF16_D64 => flash_stream::<Bf16, 64>,
    FLASH_STREAM_BF16_D96 => flash_stream::<Bf16, 96>,
    FLASH_STREAM_BF16_D128 => flash_stream::<Bf16, 128>,
    FLASH_STREAM_BF16_D256 => flash_stream::<Bf16, 256>,
    FLASH_STREAM_F16_D32 => flash_stream::<F16, 32>,
    FLASH_STREAM_F16_D64 => flash_stream::<F16, 64>,
    FLASH_STREAM_F16_D96 => flash_stream::<F16, 96>,
    FLASH_STREAM_F16_D128 => flash_stream::<F16, 128>,
    FLASH_STREAM_F16_D256 => flash_stream::<F16, 256>,
}

DecodeArgs! {
    DECODE_BF16_D32 => decode::<Bf16, 32>,
    DECODE_BF16_D64 => decode::<Bf16, 64>,
    DECODE_BF16_D96 => decode::<Bf16, 96>,
    DECODE_BF16_D128 => decode::<Bf16, 128>,
    DECODE_BF16_D256 => decode::<Bf16, 256>,
    DECODE_F16_D32 => decode::<F16, 32>,
    DECODE_F16_D64 => decode::<F16, 64>,
    DECODE_F16_D96 => decode::<F16, 96>,
    DECODE_F16_D128 => decode::<F16, 128>,
    DECODE_F16_D256 => decode::<F16, 256>,
}

DecodeCombineArgs! {
    DECODE_COMBINE_BF16 => decode_combine::<Bf16>,
    DECODE_COMBINE_F16 => decode_combine::<F16>,
}

WriteKvArgs! {
    WRITE_KV_B16 => write_kv,
}

RopeWriteKvArgs! {
    ROPE_WRITE_KV_F16 => rope_write_kv::<F16>,
    ROPE_WRITE_KV_BF16 => rope_write_kv::<Bf16>,
}
