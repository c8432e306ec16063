//! The 64-byte AMDHSA kernel descriptor (`<kernel>.kd`): what the hardware dispatcher reads to set
//! up a wave. Field offsets and bit positions: LLVM `AMDHSAKernelDescriptor.h` / AMDGPUUsage.

use super::CodeObjectError;

/// Size of a kernel descriptor in bytes.
pub const KERNEL_DESCRIPTOR_SIZE: usize = 64;

fn bits(v: u32, shift: u32, width: u32) -> u32 {
    (v >> shift) & ((1 << width) - 1)
}

/// A decoded kernel descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelDescriptor {
    /// Static LDS bytes.
    pub group_segment_fixed_size: u32,
    /// Scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// Kernarg segment bytes (explicit plus hidden).
    pub kernarg_size: u32,
    /// Offset of the first instruction from the descriptor's address.
    pub kernel_code_entry_byte_offset: i64,
    /// COMPUTE_PGM_RSRC1.
    pub rsrc1: u32,
    /// COMPUTE_PGM_RSRC2.
    pub rsrc2: u32,
    /// COMPUTE_PGM_RSRC3 (gfx90a+: ACCUM_OFFSET, TG_SPLIT).
    pub rsrc3: u32,
    /// Which user SGPRs are initialised, wave size, dynamic stack.
    pub kernel_code_properties: u16,
    /// Kernarg preload (gfx940+): length (bits 6:0) and offset in dwords (15:7).
    pub kernarg_preload: u16,
}

/// The user SGPRs a descriptor enables, in the fixed order they are laid out from s0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct UserSgprs {
    /// Private segment buffer descriptor (4 SGPRs).
    pub private_segment_buffer: bool,
    /// Dispatch packet address (2).
    pub dispatch_ptr: bool,
    /// Queue address (2).
    pub queue_ptr: bool,
    /// Kernarg segment address (2).
    pub kernarg_segment_ptr: bool,
    /// Dispatch id (2).
    pub dispatch_id: bool,
    /// Flat scratch init (2).
    pub flat_scratch_init: bool,
    /// Private segment size (1).
    pub private_segment_size: bool,
}

impl KernelDescriptor {
    /// Decodes the 64 bytes at the start of `b`.
    pub fn parse(b: &[u8]) -> Result<Self, CodeObjectError> {
        if b.len() < KERNEL_DESCRIPTOR_SIZE {
            return Err(CodeObjectError::Truncated {
                what: "kernel descriptor",
                need: KERNEL_DESCRIPTOR_SIZE as u64,
                have: b.len() as u64,
            });
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4"));
        let u16_at = |o: usize| u16::from_le_bytes(b[o..o + 2].try_into().expect("2"));
        Ok(KernelDescriptor {
            group_segment_fixed_size: u32_at(0),
            private_segment_fixed_size: u32_at(4),
            kernarg_size: u32_at(8),
            kernel_code_entry_byte_offset: i64::from_le_bytes(b[16..24].try_into().expect("8")),
            rsrc3: u32_at(44),
            rsrc1: u32_at(48),
            rsrc2: u32_at(52),
            kernel_code_properties: u16_at(56),
            kernarg_preload: u16_at(58),
        })
    }

    /// VGPRs allocated per work-item from RSRC1 (granule 8 on gfx90a/gfx942, unified VGPR+AGPR).
    pub fn allocated_vgprs(&self) -> u32 {
        (bits(self.rsrc1, 0, 6) + 1) * 8
    }
    /// The first AGPR's index in the unified register file ((ACCUM_OFFSET + 1) * 4).
    pub fn accum_offset(&self) -> u32 {
        (bits(self.rsrc3, 0, 6) + 1) * 4
    }
    /// f32 rounding mode (0 nearest even, 1 +inf, 2 -inf, 3 zero).
    pub fn float_round_mode_32(&self) -> u32 {
        bits(self.rsrc1, 12, 2)
    }
    /// f16/f64 rounding mode.
    pub fn float_round_mode_16_64(&self) -> u32 {
        bits(self.rsrc1, 14, 2)
    }
    /// f32 denormal mode (3 = keep denormals on input and output).
    pub fn float_denorm_mode_32(&self) -> u32 {
        bits(self.rsrc1, 16, 2)
    }
    /// f16/f64 denormal mode.
    pub fn float_denorm_mode_16_64(&self) -> u32 {
        bits(self.rsrc1, 18, 2)
    }
    /// DX10 clamp: clamp modifiers map NaN to 0.
    pub fn dx10_clamp(&self) -> bool {
        bits(self.rsrc1, 21, 1) == 1
    }
    /// IEEE mode: signalling NaNs are quieted by min/max.
    pub fn ieee_mode(&self) -> bool {
        bits(self.rsrc1, 23, 1) == 1
    }
    /// FP16_OVFL (gfx9+): fp8/bf8 conversions saturate on overflow.
    pub fn fp16_overflow(&self) -> bool {
        bits(self.rsrc1, 26, 1) == 1
    }
    /// Whether a private (scratch) segment is set up.
    pub fn enable_private_segment(&self) -> bool {
        bits(self.rsrc2, 0, 1) == 1
    }
    /// User SGPRs the dispatcher loads.
    pub fn user_sgpr_count(&self) -> u32 {
        bits(self.rsrc2, 1, 5)
    }
    /// Workgroup id x/y/z SGPRs enabled.
    pub fn workgroup_id_enabled(&self) -> [bool; 3] {
        [bits(self.rsrc2, 7, 1) == 1, bits(self.rsrc2, 8, 1) == 1, bits(self.rsrc2, 9, 1) == 1]
    }
    /// Workgroup info SGPR enabled.
    pub fn workgroup_info_enabled(&self) -> bool {
        bits(self.rsrc2, 10, 1) == 1
    }
    /// Work-item id dimensions in v0: 0 = x, 1 = x and y, 2 = x, y and z.
    pub fn workitem_id_dims(&self) -> u32 {
        bits(self.rsrc2, 11, 2)
    }
    /// Static LDS granules from RSRC2 (informational; the dispatcher uses the launch's total).
    pub fn granulated_lds_size(&self) -> u32 {
        bits(self.rsrc2, 15, 9)
    }
    /// Which user SGPRs are enabled.
    pub fn user_sgprs(&self) -> UserSgprs {
        let p = self.kernel_code_properties;
        UserSgprs {
            private_segment_buffer: p & 1 != 0,
            dispatch_ptr: p & 2 != 0,
            queue_ptr: p & 4 != 0,
            kernarg_segment_ptr: p & 8 != 0,
            dispatch_id: p & 16 != 0,
            flat_scratch_init: p & 32 != 0,
            private_segment_size: p & 64 != 0,
        }
    }
    /// Wave32 (gfx10+ only; always false for gfx9 code).
    pub fn wavefront_size32(&self) -> bool {
        self.kernel_code_properties & (1 << 10) != 0
    }
    /// The kernel uses a dynamically sized stack.
    pub fn uses_dynamic_stack(&self) -> bool {
        self.kernel_code_properties & (1 << 11) != 0
    }
    /// Kernarg preload: (dwords preloaded into SGPRs, offset in dwords).
    pub fn kernarg_preload(&self) -> (u32, u32) {
        ((self.kernarg_preload & 0x7f) as u32, (self.kernarg_preload >> 7) as u32)
    }
}
