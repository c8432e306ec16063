//! Global-memory accesses that must be a single wide instruction.
//!
//! A `U32x4` read through an aligned pointer becomes one `global_load_dwordx4` (128 bits per lane),
//! the access width HBM streaming wants. The helpers make the alignment requirement explicit.

use super::dtype::Chunk;
use super::simd::{I32x2, I32x4, U32x2, U32x4};

/// Loads 16 bytes at `p`.
///
/// # Safety
/// `p` is 16-byte aligned and the 16 bytes are readable device memory.
#[inline(always)]
pub unsafe fn load_b128(p: *const u32) -> U32x4 {
    unsafe { (p as *const U32x4).read() }
}

/// Stores 16 bytes at `p`.
///
/// # Safety
/// `p` is 16-byte aligned and the 16 bytes are writable device memory.
#[inline(always)]
pub unsafe fn store_b128(p: *mut u32, v: U32x4) {
    unsafe { (p as *mut U32x4).write(v) }
}

/// Loads 8 bytes at `p`.
///
/// # Safety
/// `p` is 8-byte aligned and readable.
#[inline(always)]
pub unsafe fn load_b64(p: *const u32) -> U32x2 {
    unsafe { (p as *const U32x2).read() }
}

/// Stores 8 bytes at `p`.
///
/// # Safety
/// `p` is 8-byte aligned and writable.
#[inline(always)]
pub unsafe fn store_b64(p: *mut u32, v: U32x2) {
    unsafe { (p as *mut U32x2).write(v) }
}

/// Loads the 16-byte chunk at byte offset `off` from `p` as words.
///
/// # Safety
/// `p + off` is 16-byte aligned and the 16 bytes are readable.
#[inline(always)]
pub unsafe fn load_chunk(p: *const u8, off: usize) -> Chunk {
    unsafe { load_b128(p.add(off) as *const u32).to_array() }
}

/// Stores a chunk at byte offset `off` from `p`.
///
/// # Safety
/// `p + off` is 16-byte aligned and the 16 bytes are writable.
#[inline(always)]
pub unsafe fn store_chunk(p: *mut u8, off: usize, c: Chunk) {
    unsafe { store_b128(p.add(off) as *mut u32, U32x4::from_array(c)) }
}

unsafe extern "unadjusted" {
    /// `llvm.amdgcn.raw.buffer.load.lds` with a 4-byte size, through a wrapper the device build
    /// defines (`ferrocm_device_build::pipeline::LDS_LOAD_SYMBOL`): rustc cannot declare the
    /// intrinsic itself, whose LDS pointer is a `ptr addrspace(3)`, a type Rust has no name for.
    #[link_name = "ferrocm.buffer.load.lds.b32"]
    fn buffer_load_lds_b32(rsrc: I32x4, lds: *mut u8, voffset: i32, soffset: i32);
    #[link_name = "llvm.amdgcn.raw.buffer.load.v4i32"]
    fn raw_buffer_load_v4(rsrc: I32x4, voffset: i32, soffset: i32, aux: i32) -> I32x4;
    #[link_name = "llvm.amdgcn.raw.buffer.load.v2i32"]
    fn raw_buffer_load_v2(rsrc: I32x4, voffset: i32, soffset: i32, aux: i32) -> I32x2;
    #[link_name = "llvm.amdgcn.raw.buffer.load.i32"]
    fn raw_buffer_load_b32(rsrc: I32x4, voffset: i32, soffset: i32, aux: i32) -> i32;
    #[link_name = "llvm.amdgcn.s.buffer.load.i32"]
    fn s_buffer_load_b32(rsrc: I32x4, offset: i32, aux: i32) -> i32;
    #[link_name = "llvm.amdgcn.raw.buffer.load.i16"]
    fn raw_buffer_load_b16(rsrc: I32x4, voffset: i32, soffset: i32, aux: i32) -> i16;
    #[link_name = "llvm.amdgcn.raw.buffer.load.i8"]
    fn raw_buffer_load_b8(rsrc: I32x4, voffset: i32, soffset: i32, aux: i32) -> i8;
}

/// A raw buffer (a V# over `bytes` bytes from `base`) for loads addressed as
/// `base + voffset (per lane) + soffset (wave-uniform)`.
///
/// A load that must be clipped at the buffer's end uses a buffer re-based with [`Buffer::skip`]
/// and a zero `soffset`. The hardware checks each dword's *end* against the descriptor's
/// NUM_RECORDS, counting `soffset` (ROCm/rocm-systems PR #10928, measured on hardware), so the
/// descriptor covers [`PARTIAL_DWORD`] bytes past `bytes`: a dword that starts inside the range
/// is read whole (device allocations carry 15 readable bytes of slack, so that never leaves the
/// allocation; the bytes past `bytes` are never used).
///
/// Why: in a loop that walks memory, plain pointers become one 64-bit VGPR pointer per stream
/// that LLVM increments with a VALU add every iteration. With a buffer, the per-lane part is a
/// loop-invariant 32-bit VGPR and the advancing part a scalar register: no VALU at all
/// (`buffer_load_dwordx4 v, v_off, s[rsrc], s_off offen`). Offsets past `bytes` read as 0.
#[derive(Clone, Copy)]
pub struct Buffer {
    rsrc: I32x4,
    base: u64,
    bytes: u32,
}

/// Bytes past a buffer's end its descriptor covers, so a dword starting in the last 3 bytes
/// passes the hardware's end-of-dword range check (see [`Buffer`]).
const PARTIAL_DWORD: u32 = 3;

/// V# word 3 for raw 32-bit-element buffers on gfx9: DATA_FORMAT 32 (a data format of 0 would
/// make the buffer unbound), default selects.
const RAW_BUFFER_WORD3: i32 = 0x0002_0000;

impl Buffer {
    /// An offset past the range of every buffer shorter than 4 GiB - 64 KiB (every buffer a
    /// kernel makes): a load there, or up to 64 KiB further, returns zeros without a memory
    /// access, so a kernel can issue a load it does not need instead of branching around it
    /// (a load under a branch makes LLVM wait for it where the branch joins).
    pub const PAST: u32 = u32::MAX - 65536;

    /// A buffer of `bytes` bytes at `base` (stride 0: raw, range-checked per access). `base` and
    /// `bytes` must be wave-uniform.
    #[inline(always)]
    pub fn new(base: *const u8, bytes: u32) -> Buffer {
        let a = base as u64;
        // A descriptor must live in SGPRs. If LLVM cannot prove the words uniform it wraps every
        // access in a "waterfall" loop (readfirstlane, compare, repeat); saying so once here is
        // free and removes that.
        let u = |x: u32| core::arch::amdgpu::readfirstlane_u32(x);
        let (a, bytes) = (u(a as u32) as u64 | (u((a >> 32) as u32) as u64) << 32, u(bytes));
        let records = u(bytes.saturating_add(PARTIAL_DWORD));
        Buffer { rsrc: I32x4::from_array([a as u32 as i32, ((a >> 32) & 0xffff) as i32, records as i32, RAW_BUFFER_WORD3]), base: a, bytes }
    }

    /// The same memory starting `skip` bytes later (its range shrinks by as much; an empty
    /// range past the end). For range-checked loads at a wave-uniform offset.
    #[inline(always)]
    pub fn skip(&self, skip: u32) -> Buffer {
        // SALU has no clamping subtract, so LLVM computes the new range on the VALU and then
        // thinks the descriptor divergent (a waterfall loop per load); it is not.
        let u = |x: u32| core::arch::amdgpu::readfirstlane_u32(x);
        let a = self.base + skip as u64;
        let bytes = u(self.bytes.saturating_sub(skip));
        let records = u(bytes.saturating_add(PARTIAL_DWORD));
        Buffer { rsrc: I32x4::from_array([a as u32 as i32, ((a >> 32) & 0xffff) as i32, records as i32, RAW_BUFFER_WORD3]), base: a, bytes }
    }

    /// 16 bytes at `voffset + soffset`.
    ///
    /// # Safety
    /// The 16 bytes lie inside the buffer and are readable (past `bytes` they read as zero).
    #[inline(always)]
    pub unsafe fn load_b128(&self, voffset: u32, soffset: u32) -> U32x4 {
        // SAFETY: same size; the caller guarantees the access.
        unsafe { core::mem::transmute(raw_buffer_load_v4(self.rsrc, voffset as i32, soffset as i32, 0)) }
    }

    /// 8 bytes at `voffset + soffset`.
    ///
    /// # Safety
    /// As [`Buffer::load_b128`].
    #[inline(always)]
    pub unsafe fn load_b64(&self, voffset: u32, soffset: u32) -> U32x2 {
        // SAFETY: same size; the caller guarantees the access.
        unsafe { core::mem::transmute(raw_buffer_load_v2(self.rsrc, voffset as i32, soffset as i32, 0)) }
    }

    /// 4 bytes at `voffset + soffset`.
    ///
    /// # Safety
    /// As [`Buffer::load_b128`].
    #[inline(always)]
    pub unsafe fn load_b32(&self, voffset: u32, soffset: u32) -> u32 {
        unsafe { raw_buffer_load_b32(self.rsrc, voffset as i32, soffset as i32, 0) as u32 }
    }

    /// 4 bytes at the wave-uniform byte offset `offset`, as a scalar load (`s_buffer_load_dword`:
    /// one load per wave, in an SGPR). Why not a plain read of a uniform address: LLVM makes a
    /// global load scalar only when it can prove no store of the kernel may have written the
    /// memory before, which it cannot once the kernel has stored through any pointer; it then
    /// loads the same 4 bytes in all 64 lanes.
    ///
    /// # Safety
    /// The 4 bytes lie inside the buffer and are readable; nobody writes them during the kernel.
    #[inline(always)]
    pub unsafe fn load_scalar_b32(&self, offset: u32) -> u32 {
        unsafe { s_buffer_load_b32(self.rsrc, offset as i32, 0) as u32 }
    }

    /// 2 bytes at `voffset + soffset`, zero-extended.
    ///
    /// # Safety
    /// As [`Buffer::load_b128`].
    #[inline(always)]
    pub unsafe fn load_b16(&self, voffset: u32, soffset: u32) -> u32 {
        unsafe { raw_buffer_load_b16(self.rsrc, voffset as i32, soffset as i32, 0) as u16 as u32 }
    }

    /// 1 byte at `voffset + soffset`, zero-extended.
    ///
    /// # Safety
    /// As [`Buffer::load_b128`].
    #[inline(always)]
    pub unsafe fn load_b8(&self, voffset: u32, soffset: u32) -> u32 {
        unsafe { raw_buffer_load_b8(self.rsrc, voffset as i32, soffset as i32, 0) as u8 as u32 }
    }

    /// Loads 4 bytes per lane at `voffset + soffset` straight into LDS: lane l's dword lands at
    /// `lds + 4 l` (`buffer_load_dword ... lds`, M0 = `lds`; CDNA3 ISA, MUBUF loads to LDS). A lane
    /// out of range writes zero. Completion is counted by `vmcnt`, not `lgkmcnt`.
    ///
    /// # Safety
    /// `lds` is a wave-uniform LDS address with 256 writable bytes that nobody else accesses until
    /// the loads are complete and published; in-range bytes are readable.
    #[inline(always)]
    pub unsafe fn load_lds_b32(&self, lds: *mut u8, voffset: u32, soffset: u32) {
        unsafe { buffer_load_lds_b32(self.rsrc, lds, voffset as i32, soffset as i32) }
    }
}
