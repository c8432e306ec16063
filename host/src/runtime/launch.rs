//! Launch shapes and the checks every launch passes before anything runs.
//!
//! Like tinygrad's runtime, ferrocm refuses a launch the device would reject (or, worse, run
//! wrongly) by reading the code object itself: kernel present, argument layout equal to the
//! metadata's, workgroup size within the kernel's limit, LDS within 64 KiB, grid non-empty.

use crate::backend::RawFunction;
use crate::error::{Error, Result};
use ferrocm_codeobj::{CodeObject, KernelInfo};
use ferrocm_device::abi::{Kernel, KernelArgs};
use std::any::TypeId;

/// LDS a workgroup can have on gfx9 (CDNA3 included): 64 KiB.
pub const LDS_LIMIT_BYTES: u32 = 64 * 1024;

/// Grid (in workgroups), workgroup size and dynamic LDS of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Workgroups along x, y, z.
    pub grid: [u32; 3],
    /// Work-items per workgroup along x, y, z.
    pub block: [u32; 3],
    /// Launch-sized LDS in bytes (HIP's `sharedMemBytes`).
    pub dynamic_lds_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch of `grid_x` workgroups of `block_x` work-items, no dynamic LDS.
    pub const fn linear(grid_x: u32, block_x: u32) -> Self {
        LaunchConfig { grid: [grid_x, 1, 1], block: [block_x, 1, 1], dynamic_lds_bytes: 0 }
    }

    /// Enough workgroups of `block_x` work-items to cover `n` items, one per work-item.
    pub const fn for_items(n: u32, block_x: u32) -> Self {
        Self::linear(n.div_ceil(block_x), block_x)
    }

    /// The same launch with `bytes` of dynamic LDS.
    pub const fn with_lds(mut self, bytes: u32) -> Self {
        self.dynamic_lds_bytes = bytes;
        self
    }
}

/// A kernel resolved for one device: the checks that depend only on the kernel and its argument
/// struct are done once (by [`Device`](crate::Device)'s kernel cache), the launch-shape checks on
/// every launch.
pub(crate) struct ResolvedKernel {
    /// The symbol.
    pub name: &'static str,
    /// The backend's handle.
    pub function: RawFunction,
    /// The argument struct the layout was checked for.
    pub args: TypeId,
    /// `.max_flat_workgroup_size`.
    pub max_threads: u32,
    /// Static LDS bytes.
    pub static_lds: u32,
}

/// The kernel exists in `co` and `A` matches its explicit kernarg layout field by field.
pub(crate) fn validate_args<'c, A: KernelArgs>(co: &'c CodeObject, kernel: Kernel<A>) -> Result<&'c KernelInfo> {
    let name = kernel.name();
    let info = co.kernel(name).ok_or_else(|| Error::KernelNotFound { kernel: name.to_string(), arch: co.arch.to_string() })?;
    let meta = &info.meta;

    // Argument layout: size first, then field by field against the explicit arguments.
    let align = std::mem::align_of::<A>();
    let expected = (meta.explicit_args_end() as usize).div_ceil(align) * align;
    let struct_size = std::mem::size_of::<A>();
    if struct_size != expected {
        return Err(Error::KernargSizeMismatch { kernel: name.to_string(), args: A::NAME, struct_size, expected });
    }
    let mut explicit = meta.explicit_args();
    for f in A::FIELDS {
        let m = explicit.next();
        if m.map(|m| (m.offset as usize, m.size as usize)) != Some((f.offset, f.size)) {
            return Err(Error::KernargLayoutMismatch {
                kernel: name.to_string(),
                args: A::NAME,
                field: f.name,
                offset: f.offset,
                size: f.size,
                expected: m.map_or("no argument".to_string(), |m| format!("offset {} size {}", m.offset, m.size)),
            });
        }
    }
    if let Some(m) = explicit.next() {
        return Err(Error::KernargLayoutMismatch {
            kernel: name.to_string(),
            args: A::NAME,
            field: "(end of struct)",
            offset: struct_size,
            size: 0,
            expected: format!("an argument at offset {} size {}", m.offset, m.size),
        });
    }
    Ok(info)
}

/// Block, LDS and grid of `cfg` are valid for a kernel allowing `max_threads` work-items per
/// workgroup with `static_lds` bytes of LDS.
pub(crate) fn validate_shape(name: &str, max_threads: u32, static_lds: u32, cfg: &LaunchConfig) -> Result<()> {
    if cfg.block.contains(&0) {
        return Err(Error::EmptyBlock { kernel: name.to_string(), block: cfg.block });
    }
    // Checked: [2^31, 2^31, 4] wrapped to 0 work-items in u64 and passed. A volume past u64 is
    // reported as u64::MAX (the block is in the error too).
    let threads = cfg.block.iter().try_fold(1u64, |v, &d| v.checked_mul(d as u64)).unwrap_or(u64::MAX);
    if threads > max_threads as u64 {
        return Err(Error::BlockTooLarge { kernel: name.to_string(), block: cfg.block, threads, max: max_threads });
    }
    if static_lds as u64 + cfg.dynamic_lds_bytes as u64 > LDS_LIMIT_BYTES as u64 {
        return Err(Error::LdsTooLarge {
            kernel: name.to_string(),
            static_lds,
            dynamic_lds: cfg.dynamic_lds_bytes,
            limit: LDS_LIMIT_BYTES,
        });
    }
    if cfg.grid.contains(&0) {
        return Err(Error::EmptyGrid { kernel: name.to_string(), grid: cfg.grid });
    }
    if cfg.grid.iter().zip(cfg.block).any(|(&g, b)| g as u64 * b as u64 > u32::MAX as u64) {
        return Err(Error::GridTooLarge { kernel: name.to_string(), grid: cfg.grid, block: cfg.block });
    }
    Ok(())
}

/// Both checks (for [`Device::validate_launch`](crate::Device::validate_launch)).
pub(crate) fn validate<'c, A: KernelArgs>(co: &'c CodeObject, kernel: Kernel<A>, cfg: &LaunchConfig) -> Result<&'c KernelInfo> {
    let info = validate_args(co, kernel)?;
    validate_shape(kernel.name(), info.meta.max_flat_workgroup_size, info.meta.group_segment_fixed_size, cfg)?;
    Ok(info)
}
