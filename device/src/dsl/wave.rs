//! Wave-level (64-lane) operations.

use core::arch::amdgpu;

/// This lane's index within its wave, 0..64 (`v_mbcnt_lo/hi` over all lanes).
#[inline(always)]
pub fn lane_id() -> u32 {
    amdgpu::mbcnt_hi(u32::MAX, amdgpu::mbcnt_lo(u32::MAX, 0))
}

/// The value of the first active lane, as a wave-uniform (SGPR) value.
#[inline(always)]
pub fn readfirstlane(v: u32) -> u32 {
    amdgpu::readfirstlane_u32(v)
}

/// A 64-bit mask with bit `l` set when lane `l` is active and `b` is true there.
#[inline(always)]
pub fn ballot(b: bool) -> u64 {
    amdgpu::ballot(b)
}

/// Returns `v` as held by lane `src_lane` (0..64). Inactive source lanes give 0.
#[inline(always)]
pub fn bpermute(v: u32, src_lane: u32) -> u32 {
    // SAFETY: ds_bpermute reads no memory; the byte address selects the lane (lane * 4).
    unsafe { amdgpu::ds_bpermute(src_lane << 2, v) }
}

/// `v` computed in a vector register: `v + (workitem id mod 64) - lane id`, which is `v` in a
/// one-dimensional workgroup but which LLVM can prove neither constant nor uniform. So the
/// value, and what is computed from it, lives in vector registers (not in a scarce SGPR, not
/// folded into a literal) and is never merged with the same expression of scalar operands
/// elsewhere in the kernel. Two VALU instructions; unlike [`park`], no LDS round trip. For
/// one-dimensional workgroups only (in others the result is not `v`).
#[inline(always)]
pub fn vector_copy(v: u32) -> u32 {
    (v + (crate::dsl::ids::workitem_id_x() & 63)).wrapping_sub(lane_id())
}

/// A wave-uniform value parked in a VGPR: LLVM cannot see that the result is uniform, so it
/// keeps it in a vector register (one of 512 per SIMD) rather than an SGPR (at most 102 per
/// wave). For state that must survive a phase that needs every SGPR (the stream-K GEMM's loop
/// counter across its pipeline and epilogue); [`readfirstlane`] brings it back. One
/// `ds_bpermute` (no memory access).
#[inline(always)]
pub fn park(v: u32) -> u32 {
    bpermute(v, 0)
}

/// Returns `v` from lane `lane_id() ^ mask`, the butterfly step of reductions.
#[inline(always)]
pub fn shuffle_xor(v: u32, mask: u32) -> u32 {
    bpermute(v, lane_id() ^ mask)
}

/// `v` from lane `lane_id() ^ mask` for an f32.
#[inline(always)]
pub fn shuffle_xor_f32(v: f32, mask: u32) -> f32 {
    f32::from_bits(shuffle_xor(v.to_bits(), mask))
}

/// The sum of `v` over all 64 lanes of the wave (every lane gets the result). All lanes must be
/// active. The butterfly order is fixed, so the result is deterministic.
#[inline(always)]
pub fn reduce_sum_f32(mut v: f32) -> f32 {
    let mut mask = 32;
    while mask > 0 {
        v += shuffle_xor_f32(v, mask);
        mask >>= 1;
    }
    v
}

/// The maximum of `v` over all 64 lanes (NaN-ignoring like `f32::max`). All lanes must be active.
#[inline(always)]
pub fn reduce_max_f32(mut v: f32) -> f32 {
    let mut mask = 32;
    while mask > 0 {
        v = v.max(shuffle_xor_f32(v, mask));
        mask >>= 1;
    }
    v
}
