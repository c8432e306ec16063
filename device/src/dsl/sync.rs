//! Synchronisation of a workgroup's waves.
//!
//! Why not `core::sync::atomic::fence` around `s_barrier`: Rust fences are system-scope, which on
//! gfx942 costs an L2 write-back (`buffer_wbl2 sc0 sc1`) and an invalidate (`buffer_inv sc0 sc1`)
//! per barrier. A workgroup barrier only needs the wave's own LDS (and, for global data shared
//! within the workgroup, vector memory) traffic to have completed, which is an `s_waitcnt` (gfx942
//! has back-off barriers, so LLVM does not insert that wait itself). Compiler fences keep LLVM
//! from moving memory accesses across the sequence; rustc has no inline asm for amdgpu.

use core::arch::amdgpu;
use core::sync::atomic::{AtomicU32, Ordering, compiler_fence, fence};

unsafe extern "C" {
    #[link_name = "llvm.amdgcn.s.waitcnt"]
    fn s_waitcnt(encoded: i32);
    #[link_name = "llvm.amdgcn.s.setprio"]
    fn s_setprio(priority: i16);
}

/// `s_waitcnt lgkmcnt(0)` in the gfx9 encoding: vmcnt and expcnt left at their maxima (no wait).
const WAIT_LGKM: i32 = 0xC07F;
/// `s_waitcnt vmcnt(0) expcnt(0) lgkmcnt(0)`.
const WAIT_ALL: i32 = 0;

/// Workgroup barrier for LDS: every wave's LDS writes before it are visible to every wave after it
/// (`s_waitcnt lgkmcnt(0); s_barrier`, HIP's `__syncthreads()` for shared memory).
#[inline(always)]
pub fn barrier() {
    compiler_fence(Ordering::SeqCst);
    // SAFETY: a wait on the wave's own counters has no other effect.
    unsafe { s_waitcnt(WAIT_LGKM) };
    amdgpu::s_barrier();
    compiler_fence(Ordering::SeqCst);
}

/// Workgroup barrier that also completes the wave's vector-memory accesses (global stores, loads
/// straight into LDS) before the waves meet: `s_waitcnt vmcnt(0) lgkmcnt(0); s_barrier`.
/// Within one workgroup all waves share the CU's L1, so completion is visibility.
#[inline(always)]
pub fn barrier_with_global() {
    compiler_fence(Ordering::SeqCst);
    // SAFETY: as above.
    unsafe { s_waitcnt(WAIT_ALL) };
    amdgpu::s_barrier();
    compiler_fence(Ordering::SeqCst);
}

/// A compiler-only fence: stops the scheduler moving instructions across this point (used to
/// keep a main loop's phases in the order the kernel author chose).
#[inline(always)]
pub fn sched_fence() {
    // SAFETY: mask 0 means "nothing may be scheduled across"; it only constrains the compiler.
    unsafe { amdgpu::sched_barrier::<0>() }
}

/// `s_setprio P`: the wave's issue priority (0-3) when the SIMD's arbiter picks among waves
/// ready to issue (CDNA3 ISA, S_SETPRIO). A wave raises it around a burst of MFMAs so that the
/// matrix core is fed before other waves' memory and LDS instructions; the cycle model ignores
/// it (emu/src/model/README.md, "Not modeled").
#[inline(always)]
pub fn set_priority<const P: i16>() {
    const { assert!(P >= 0 && P <= 3) };
    // SAFETY: changes only this wave's arbitration priority.
    unsafe { s_setprio(P) }
}

/// Counts this wave in at `count` (lane 0 adds 1) once its global stores are visible at every CU
/// (release): true when `others` waves had counted themselves before it, so that it is the last
/// of them, and then their stores, released before their counts, are visible to it (acquire).
/// The arrival of the stream kernels' contributors (the GEMM's blocks, flash attention's query
/// blocks): the last one to arrive finishes the work, nobody waits.
#[inline(always)]
pub fn arrive_last(count: &AtomicU32, others: u32) -> bool {
    fence(Ordering::Release);
    let before = if super::wave::lane_id() == 0 { count.fetch_add(1, Ordering::Relaxed) } else { 0 };
    let last = super::wave::readfirstlane(before) == others;
    if last {
        fence(Ordering::Acquire);
    }
    last
}
