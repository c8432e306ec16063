//! Indices and sizes of the launch, and its kernel arguments read again ([`kernargs_at`]).
//!
//! Ids come from the hardware-initialised registers (v0 for work-item ids, system SGPRs for
//! workgroup ids). Sizes are read from the HSA kernel dispatch packet, which every launch (HIP or
//! the emulator) provides; reading it costs one scalar load, which LLVM hoists and shares.

use super::mem::Buffer;
use core::arch::amdgpu;

/// Work-items per wave on gfx9 (wave64).
pub const WAVE_SIZE: u32 = 64;

/// The HSA kernel dispatch packet (hsa.h `hsa_kernel_dispatch_packet_t`), 64 bytes.
#[repr(C)]
struct DispatchPacket {
    header: u16,
    setup: u16,
    workgroup_size: [u16; 3],
    reserved0: u16,
    grid_size: [u32; 3],
    private_segment_size: u32,
    group_segment_size: u32,
    kernel_object: u64,
    kernarg_address: u64,
    reserved2: u64,
    completion_signal: u64,
}

#[inline(always)]
fn packet() -> &'static DispatchPacket {
    // SAFETY: the packet outlives the kernel and is never written while it runs.
    unsafe { &*(core::intrinsics::gpu::amdgpu_dispatch_ptr() as *const DispatchPacket) }
}

/// The work-item's index within its workgroup along x.
#[inline(always)]
pub fn workitem_id_x() -> u32 {
    amdgpu::workitem_id_x()
}
/// The work-item's index within its workgroup along y.
#[inline(always)]
pub fn workitem_id_y() -> u32 {
    amdgpu::workitem_id_y()
}
/// The work-item's index within its workgroup along z.
#[inline(always)]
pub fn workitem_id_z() -> u32 {
    amdgpu::workitem_id_z()
}
/// The workgroup's index in the grid along x.
#[inline(always)]
pub fn workgroup_id_x() -> u32 {
    amdgpu::workgroup_id_x()
}
/// The workgroup's index in the grid along y.
#[inline(always)]
pub fn workgroup_id_y() -> u32 {
    amdgpu::workgroup_id_y()
}
/// The workgroup's index in the grid along z.
#[inline(always)]
pub fn workgroup_id_z() -> u32 {
    amdgpu::workgroup_id_z()
}

/// Work-items per workgroup along x (the launch's block size).
#[inline(always)]
pub fn workgroup_size_x() -> u32 {
    packet().workgroup_size[0] as u32
}
/// Work-items per workgroup along y.
#[inline(always)]
pub fn workgroup_size_y() -> u32 {
    packet().workgroup_size[1] as u32
}
/// Work-items per workgroup along z.
#[inline(always)]
pub fn workgroup_size_z() -> u32 {
    packet().workgroup_size[2] as u32
}

/// Work-items in the whole grid along x (HSA counts work-items, not workgroups).
#[inline(always)]
pub fn grid_size_x() -> u32 {
    packet().grid_size[0]
}
/// Work-items in the whole grid along y.
#[inline(always)]
pub fn grid_size_y() -> u32 {
    packet().grid_size[1]
}
/// Work-items in the whole grid along z.
#[inline(always)]
pub fn grid_size_z() -> u32 {
    packet().grid_size[2]
}

/// Workgroups in the grid along x.
#[inline(always)]
pub fn num_workgroups_x() -> u32 {
    grid_size_x().div_ceil(workgroup_size_x())
}

/// Total LDS of the launch in bytes (static plus launch-sized).
#[inline(always)]
pub fn group_segment_size() -> u32 {
    packet().group_segment_size
}

/// The global linear index along x: `workgroup_id_x * workgroup_size_x + workitem_id_x`.
#[inline(always)]
pub fn global_id_x() -> u32 {
    workgroup_id_x() * workgroup_size_x() + workitem_id_x()
}

/// The wave's index within its workgroup for a 1-D workgroup (`workitem_id_x / 64`), made
/// wave-uniform so it lives in an SGPR.
#[inline(always)]
pub fn wave_id_x() -> u32 {
    amdgpu::readfirstlane_u32(workitem_id_x() / WAVE_SIZE)
}

/// The address of the launch's kernarg segment (the dispatch packet's `kernarg_address`).
#[inline(always)]
pub fn kernarg_address() -> u64 {
    packet().kernarg_address
}

/// A fresh copy of the launch's kernel arguments, read from the kernarg segment at `address`
/// ([`kernarg_address`]) here, with scalar loads (`s_buffer_load`, through the scalar cache).
///
/// Why: LLVM loads a kernel's arguments once, at its entry, so every argument a loop body uses
/// stays in an SGPR across the whole loop. A kernel whose loop body runs a register-hungry
/// phase between uses of many arguments (the stream-K GEMM: the pipeline, then the epilogue)
/// reads them again after the phase instead. LLVM takes scalar buffer loads for pure functions
/// of their operands: it may merge two reads at the same address or hoist one out of a loop,
/// so each phase passes an address LLVM cannot prove equal to another's (`wave::park`).
///
/// # Safety
/// `address` is the kernarg segment's and `T` is the kernel's argument struct (its `repr(C)`
/// layout is the kernarg layout: `abi`), a multiple of 4 bytes long.
#[inline(always)]
pub unsafe fn kernargs_at<T: Copy>(address: u64) -> T {
    const { assert!(core::mem::size_of::<T>() % 4 == 0) };
    let words = core::mem::size_of::<T>() / 4;
    let segment = Buffer::new(address as *const u8, core::mem::size_of::<T>() as u32);
    let mut out = core::mem::MaybeUninit::<T>::uninit();
    let dst = out.as_mut_ptr() as *mut u32;
    let mut i = 0;
    while i < words {
        // SAFETY: word i of the kernarg segment, read-only while the kernel runs; word i of
        // `out`.
        unsafe { dst.add(i).write(segment.load_scalar_b32(4 * i as u32)) };
        i += 1;
    }
    // SAFETY: every word written; `T`'s fields are plain scalars and pointers (caller).
    unsafe { out.assume_init() }
}

/// A kernel's way back to its arguments, and a few wave-uniform words of its own state, parked
/// in VGPRs ([`park`](super::wave::park)) across a phase that needs every SGPR: the stream-K
/// GEMM's K loop and the stream flash kernel's key loop, between which the arguments are read
/// again ([`kernargs_at`]). Kept in SGPRs, that state and what LLVM hoists from it spilled.
pub struct ParkedArgs<const N: usize> {
    address: [u32; 2],
    words: [u32; N],
}

impl<const N: usize> ParkedArgs<N> {
    /// The launch's kernarg address and `words`, parked.
    #[inline(always)]
    pub fn new(words: [u32; N]) -> ParkedArgs<N> {
        let address = kernarg_address();
        Self::parked([address as u32, (address >> 32) as u32], words)
    }

    #[inline(always)]
    fn parked(address: [u32; 2], words: [u32; N]) -> ParkedArgs<N> {
        ParkedArgs { address: address.map(super::wave::park), words: words.map(super::wave::park) }
    }

    /// Parks `v` as word `i`.
    #[inline(always)]
    pub fn put(&mut self, i: usize, v: u32) {
        self.words[i] = super::wave::park(v);
    }

    /// The arguments, read again, and the words as scalars. The state is parked again, so that
    /// the next phase's reads have an address LLVM cannot prove equal to this one's (see
    /// [`kernargs_at`]).
    ///
    /// # Safety
    /// `T` is the kernel's argument struct (as for [`kernargs_at`]).
    #[inline(always)]
    pub unsafe fn take<T: Copy>(&mut self) -> (T, [u32; N]) {
        let address = self.address.map(super::wave::readfirstlane);
        let words = self.words.map(super::wave::readfirstlane);
        *self = Self::parked(address, words);
        // SAFETY: the launch's kernarg address; the caller names the struct.
        (unsafe { kernargs_at::<T>(address[0] as u64 | (address[1] as u64) << 32) }, words)
    }
}
