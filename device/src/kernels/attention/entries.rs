//! The attention kernels' entry points (`abi::attention`): the flash forward per input type and
//! head dimension.

use super::flash::flash;
use crate::abi::attention::FlashArgs;

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
}
