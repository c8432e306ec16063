//! Per-kernel resources and the occupancy they allow on gfx90a/gfx942 (CDNA2/3).
//!
//! Register file (GFX942.md, "registers"): 512 unified VGPR+AGPR per lane per SIMD, allocated in
//! granules of 8; AGPRs start at ACCUM_OFFSET (the VGPR count rounded up to 4). At most 8 waves
//! per SIMD. SGPRs: LLVM's gfx8+ occupancy steps (`getOccupancyWithNumSGPRs`: <=80 -> 10, <=88 -> 9,
//! <=100 -> 8, ...), capped at 8. LDS limits depend on the launch (workgroup size and dynamic
//! LDS), so they are not part of this static figure.

use super::KernelInfo;

/// The hardware limit of resident waves per SIMD on gfx90a/gfx942.
pub const MAX_WAVES_PER_SIMD: u32 = 8;
/// Unified VGPR+AGPR registers per lane per SIMD.
const UNIFIED_REGS: u32 = 512;
/// VGPR allocation granule.
const VGPR_GRANULE: u32 = 8;

/// What a kernel uses, from its metadata and descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelResources {
    /// Kernel name.
    pub name: String,
    /// Architectural VGPRs.
    pub vgprs: u32,
    /// Accumulation VGPRs.
    pub agprs: u32,
    /// SGPRs (including VCC, flat scratch, XNACK).
    pub sgprs: u32,
    /// Static LDS bytes.
    pub lds_static: u32,
    /// Scratch bytes per work-item, from the kernel descriptor (what the dispatcher allocates;
    /// the metadata's `.private_segment_fixed_size` is informational and may disagree).
    pub scratch: u32,
    /// VGPRs spilled to scratch.
    pub vgpr_spills: u32,
    /// SGPRs spilled.
    pub sgpr_spills: u32,
    /// Waves per SIMD the registers allow (1..=8), 0 if the kernel cannot run at all.
    pub max_waves_per_simd: u32,
}

impl KernelResources {
    /// The figures for one kernel.
    pub fn of(k: &KernelInfo) -> KernelResources {
        let m = &k.meta;
        KernelResources {
            name: m.name.clone(),
            vgprs: m.vgpr_count,
            agprs: m.agpr_count,
            sgprs: m.sgpr_count,
            lds_static: m.group_segment_fixed_size,
            scratch: k.descriptor.private_segment_fixed_size,
            vgpr_spills: m.vgpr_spill_count,
            sgpr_spills: m.sgpr_spill_count,
            max_waves_per_simd: k.waves_per_simd(),
        }
    }

    /// Registers spilled (VGPR or SGPR).
    pub fn spills(&self) -> bool {
        self.vgpr_spills > 0 || self.sgpr_spills > 0
    }

    /// The unified register allocation per lane (`.vgpr_count`, which includes the AGPRs,
    /// rounded to the granule).
    /// (Saturating at `u32::MAX` for counts no kernel can have.)
    pub fn unified_regs(&self) -> u32 {
        u32::try_from(unified_regs(self.vgprs)).unwrap_or(u32::MAX)
    }
}

/// In u64: the counts come from the file, and `0xffffffff` VGPRs must round up to more than
/// the register file, not wrap to 0 (which divided by zero).
///
/// `vgprs` is the metadata's `.vgpr_count`, which on gfx90a and later already counts the AGPRs:
/// LLVM writes `align(ArchVGPRs, 4) + AGPRs` there (a kernel with 256 ArchVGPRs and 36 AGPRs has
/// `.vgpr_count` 292 and `.agpr_count` 36), so the AGPRs are not added a second time.
fn unified_regs(vgprs: u32) -> u64 {
    (vgprs as u64).max(1).div_ceil(VGPR_GRANULE as u64) * VGPR_GRANULE as u64
}

/// Waves per SIMD allowed by a kernel's register use: `vgprs` unified registers (ArchVGPRs and
/// AGPRs together, as the descriptor allocates them) and `sgprs` SGPRs.
pub fn waves_per_simd(vgprs: u32, sgprs: u32) -> u32 {
    let regs = unified_regs(vgprs);
    if regs > UNIFIED_REGS as u64 {
        return 0;
    }
    // 1 <= regs <= 512 here.
    let by_vgpr = UNIFIED_REGS / regs as u32;
    let by_sgpr = match sgprs {
        0..=80 => 10,
        81..=88 => 9,
        89..=100 => 8,
        101..=112 => 7,
        113..=128 => 6,
        129..=144 => 5,
        145..=168 => 4,
        169..=200 => 3,
        201..=400 => 2,
        _ => 1,
    };
    by_vgpr.min(by_sgpr).min(MAX_WAVES_PER_SIMD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupancy_follows_the_unified_register_file() {
        assert_eq!(waves_per_simd(4, 14), 8);
        assert_eq!(waves_per_simd(64, 14), 8);
        assert_eq!(waves_per_simd(65, 14), 7); // 72 regs -> 512/72 = 7
        assert_eq!(waves_per_simd(128, 14), 4);
        assert_eq!(waves_per_simd(512, 14), 1); // 256 ArchVGPRs + 256 AGPRs
        assert_eq!(waves_per_simd(136, 14), 3); // 8 ArchVGPRs + 128 AGPRs -> 512/136 = 3
        assert_eq!(waves_per_simd(288, 14), 1); // 256 + 32: gemm_fp8_blockscaled_64x64
        assert_eq!(waves_per_simd(513, 14), 0);
        assert_eq!(waves_per_simd(4, 102), 7);
    }

    #[test]
    fn register_counts_from_a_corrupt_file_do_not_wrap() {
        // 0xffffffff rounded up to the granule wrapped to 0 in u32 and divided by zero.
        assert_eq!(waves_per_simd(u32::MAX, 14), 0);
        assert_eq!(waves_per_simd(u32::MAX, u32::MAX), 0);
        assert_eq!(waves_per_simd(0xffff_fff8, 14), 0);
    }
}
