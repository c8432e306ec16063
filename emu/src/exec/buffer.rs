//! Buffer resources (V#) and MUBUF addressing on gfx942: linear and swizzled addressing, the
//! range checks of the three buffer types, typed (`_format_`) data conversion, and the private
//! (scratch) window that older compiler output reaches through a V#.
//!
//! Sources, all in the CDNA ISA reference guide (section numbers of the CDNA4 edition, the one at
//! hand; its buffer chapter is the gfx9 design gfx942 shares):
//! - 9.1.5 "Buffer Addressing": index = (idxen ? vgpr_index : 0) + (add_tid ? lane : 0), offset
//!   = (offen ? vgpr_offset : 0) + inst_offset; linear: `base + soffset + offset + stride *
//!   index`; swizzled: `base + soffset + (index_msb * stride + offset_msb * elem) * idx_stride +
//!   index_lsb * elem + offset_lsb` with index split by the index stride and offset by the
//!   element size.
//! - Range checking, as the hardware does it (AMD's own simulator modelling GFX9/CDNA1-4 after
//!   gfx950 measurements, ROCm/rocm-systems PR #10928; GFX942.md, "Things hand-written code
//!   objects rely on"): a buffer with add_tid and no idxen (private) is not checked; with idxen
//!   and a nonzero stride (structured) a lane is out of range when `index >= num_records`; every
//!   other access is checked by bytes: `(vgpr_offset + inst_offset) mod 2^32 + soffset` plus the
//!   end of each unit must not pass `num_records`, *including* SOFFSET and the instruction
//!   offset, and also for OFFEN-only accesses of a strided buffer. Dword-multiple loads and stores
//!   are checked per dword, format instructions and atomics all or nothing. Out-of-range reads
//!   return 0 (a load to LDS writes those zeros into LDS), writes and atomics are dropped. The
//!   CDNA guide (9.1.5.1) states the older rule without SOFFSET; AITER's attention kernels walk
//!   K and V by bumping SOFFSET against an unmoved `num_records` and need the measured one.
//! - Table 45: with add_tid, non-format MUBUF instructions take an 18-bit stride whose top four
//!   bits are the DATA_FORMAT field.
//! - 9.1.4: a resource whose DATA_FORMAT is 0 (INVALID) is unbound: loads return 0, stores are
//!   dropped, whatever the instruction. (This is why every gfx9 V# builder sets format 32.)
//! - Table 48 for the field positions. Bits 115-116 are ELEMENT_SIZE in the gfx9 register
//!   layout the ROCm runtime uses for gfx94x (`SQ_BUF_RSRC_WORD3`, "ELEMENT_SIZE = 1 // 4" in
//!   ROCR's `InitScratchSRD`); the CDNA4 guide renames them.

use super::cpu::multiversion;
use super::error::FaultKind;
use super::wave::{LANES, Ty, VReg, Wave, ZERO_VREG};
use crate::isa::{Inst, flags};

/// A gfx9 buffer resource, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Vsharp {
    /// Base byte address (48 bits).
    pub base: u64,
    /// Record stride in bytes (14 bits; see [`Vsharp::stride_for`]).
    pub stride: u64,
    /// Swizzled addressing.
    pub swizzle: bool,
    /// Records (raw buffers: bytes; structured: records).
    pub num_records: u64,
    /// Destination selects for x, y, z, w (0: 0, 1: 1, 4-7: channel x-w).
    pub dst_sel: [u8; 4],
    /// Number format.
    pub nfmt: u8,
    /// Data format (0 = invalid, an unbound resource).
    pub dfmt: u8,
    /// Swizzle element size in bytes (2, 4, 8, 16).
    pub elem: u64,
    /// Swizzle index stride (8, 16, 32, 64).
    pub index_stride: u64,
    /// Add the lane id to the index.
    pub add_tid: bool,
}

impl Vsharp {
    /// Decodes four SGPRs.
    pub fn from_words(v: [u32; 4]) -> Vsharp {
        Vsharp {
            base: v[0] as u64 | ((v[1] & 0xffff) as u64) << 32,
            stride: ((v[1] >> 16) & 0x3fff) as u64,
            swizzle: v[1] >> 31 & 1 == 1,
            num_records: v[2] as u64,
            dst_sel: [(v[3] & 7) as u8, (v[3] >> 3 & 7) as u8, (v[3] >> 6 & 7) as u8, (v[3] >> 9 & 7) as u8],
            nfmt: (v[3] >> 12 & 7) as u8,
            dfmt: (v[3] >> 15 & 0xf) as u8,
            elem: 2 << (v[3] >> 19 & 3),
            index_stride: 8 << (v[3] >> 21 & 3),
            add_tid: v[3] >> 23 & 1 == 1,
        }
    }

    /// The stride an instruction uses: 18 bits (DATA_FORMAT on top) for non-format instructions
    /// with add_tid (table 45), else the 14-bit field.
    pub fn stride_for(&self, format_op: bool) -> u64 {
        if self.add_tid && !format_op { (self.dfmt as u64) << 14 | self.stride } else { self.stride }
    }
}

/// The range check a resource gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RangeCheck {
    /// Private (scratch) buffer: none.
    None,
    /// By bytes: `offset + soffset + unit end > num_records` is out of range.
    Bytes,
    /// Structured buffer: `index >= num_records` is out of range.
    Index,
}

/// The range check of an access with `idxen` through `v` using `stride` (module docs).
pub(crate) fn range_check(v: &Vsharp, idxen: bool, stride: u64) -> RangeCheck {
    if v.add_tid && !idxen {
        RangeCheck::None
    } else if idxen && stride != 0 {
        RangeCheck::Index
    } else {
        RangeCheck::Bytes
    }
}

/// Byte offset of `(index, offset)` from `base + soffset` (linear or swizzled, ISA 9.1.5).
#[inline]
pub(crate) fn buffer_offset(v: &Vsharp, stride: u64, index: u64, offset: u64) -> u64 {
    if v.swizzle {
        let (is, e) = (v.index_stride, v.elem);
        (index / is * stride + offset / e * e) * is + index % is * e + offset % e
    } else {
        offset.wrapping_add(stride.wrapping_mul(index))
    }
}

/// One MUBUF instruction's addressing (ISA 9.1.5), worked out once: the resource, SOFFSET, the
/// stride and range check it gets, and the index/offset VGPRs; per lane, [`Addressing::lane`]
/// and, on a linear resource, [`Addressing::linear`]. Shared by the general path
/// (`vmem::mubuf_targets`) and the one-pass load (`linear_load`).
pub(crate) struct Addressing<'a> {
    pub v: Vsharp,
    pub soff: u64,
    pub stride: u64,
    pub check: RangeCheck,
    /// A DATA_FORMAT of 0 marks an unbound resource (ISA 9.1.4) unless those bits are the top of
    /// an 18-bit add_tid stride.
    pub unbound: bool,
    idxen: bool,
    offen: bool,
    inst_off: u32,
    r0: &'a VReg,
    r1: &'a VReg,
}

impl<'a> Addressing<'a> {
    /// The addressing of `inst` (`format`: a `_format_` instruction). The VGPRs are read only
    /// when some lane is active (with none, a missing one is no fault, as the lanes would have
    /// read them).
    pub fn new(w: &'a Wave, inst: &Inst, format: bool) -> Result<Addressing<'a>, FaultKind> {
        let v = Vsharp::from_words(w.sregs(inst.src[2])?);
        let soff = if inst.src[3].is_none() { 0 } else { w.sval32(inst.src[3], inst.literal, Ty::B32)? as u64 };
        let (offen, idxen) = (inst.flags & flags::OFFEN != 0, inst.flags & flags::IDXEN != 0);
        let stride = v.stride_for(format);
        let check = range_check(&v, idxen, stride);
        let unbound = v.dfmt == 0 && (format || !v.add_tid);
        let any = w.exec() != 0;
        let r0 = if any && (idxen || offen) { w.vreg_at(inst.src[0], 0)? } else { &ZERO_VREG };
        let r1 = if any && idxen && offen { w.vreg_at(inst.src[0], 1)? } else { &ZERO_VREG };
        Ok(Addressing { v, soff, stride, check, unbound, idxen, offen, inst_off: inst.imm as u32 & 0xfff, r0, r1 })
    }

    /// Lane `l`'s index and offset. The VGPR offset and the instruction offset add in 32 bits
    /// (only they wrap); SOFFSET joins them unwrapped for the range check (module docs).
    #[inline(always)]
    pub fn lane(&self, l: usize) -> (u64, u64) {
        let (vidx, voff) = match (self.idxen, self.offen) {
            (true, true) => (self.r0[l], self.r1[l]),
            (true, false) => (self.r0[l], 0),
            (false, true) => (0, self.r0[l]),
            (false, false) => (0, 0),
        };
        let index = vidx as u64 + if self.v.add_tid { l as u64 } else { 0 };
        (index, voff.wrapping_add(self.inst_off) as u64)
    }

    /// On a linear resource, lane `l`'s access of `units` units of `unit` bytes: how many of
    /// them pass the range check (a prefix: unit k is at the first's address + k * unit), and
    /// the first's address. (Inlined: called per lane, and with the unit a constant the range
    /// check's division is a shift; as a call, it was 4% of a model decode step.)
    #[inline(always)]
    pub fn linear(&self, l: usize, units: u32, unit: u32) -> (u32, u64) {
        let (index, offset) = self.lane(l);
        let in_range = if self.unbound {
            0
        } else {
            match self.check {
                RangeCheck::None => units,
                RangeCheck::Index => {
                    if index >= self.v.num_records {
                        0
                    } else {
                        units
                    }
                }
                RangeCheck::Bytes => {
                    let start = offset + self.soff;
                    if start >= self.v.num_records { 0 } else { ((self.v.num_records - start) / unit as u64).min(units as u64) as u32 }
                }
            }
        };
        (in_range, self.v.base.wrapping_add(self.soff).wrapping_add(buffer_offset(&self.v, self.stride, index, offset)))
    }

    /// [`Addressing::linear`] for every lane at once in the common case of a VGPR offset alone
    /// (OFFEN, no index, no add_tid) on a linear resource checked in bytes, for accesses of
    /// `bytes` bytes: each lane's address into `addrs`, and the lanes wholly in range and those
    /// partly in range (bit per lane, before EXEC). `None` for any other addressing. Per lane,
    /// `linear` was most of a 128-bit load: here one pass computes the addresses and the
    /// offsets' extremes (it vectorises), and lanes are told apart only when the extremes are
    /// not all in range.
    #[inline]
    pub fn offsets_in_bytes(&self, bytes: u32, addrs: &mut [u64; LANES]) -> Option<(u64, u64)> {
        if !self.offen || self.idxen || self.v.add_tid || self.v.swizzle || self.unbound || self.check != RangeCheck::Bytes {
            return None;
        }
        let (records, base) = (self.v.num_records, self.v.base.wrapping_add(self.soff));
        // The offsets add in 32 bits, SOFFSET unwrapped (`lane`).
        let (lo, hi) = lane_offsets(self.r0, self.inst_off, base, addrs);
        if hi as u64 + self.soff + bytes as u64 <= records {
            return Some((u64::MAX, 0));
        }
        // A dword is in range only whole (`linear`'s units of 4 bytes).
        if lo as u64 + self.soff + 4 > records {
            return Some((0, 0));
        }
        let (mut whole, mut part) = (0u64, 0u64);
        for (l, &a) in addrs.iter().enumerate() {
            let start = (a - base) + self.soff;
            let all_in = start + bytes as u64 <= records;
            let none_in = start + 4 > records;
            whole |= (all_in as u64) << l;
            part |= ((!all_in && !none_in) as u64) << l;
        }
        Some((whole, part))
    }
}

multiversion! {
    /// `addrs[l] = base + (r0[l] + inst_off)` (the offsets add in 32 bits), and the smallest and
    /// largest offset.
    fn lane_offsets(r0: &VReg, inst_off: u32, base: u64, addrs: &mut [u64; LANES]) -> (u32, u32) {
        let (mut lo, mut hi) = (u32::MAX, 0u32);
        for (a, &r) in addrs.iter_mut().zip(r0) {
            let offset = r.wrapping_add(inst_off);
            *a = base.wrapping_add(offset as u64);
            lo = lo.min(offset);
            hi = hi.max(offset);
        }
        (lo, hi)
    }
}

// ---- the private window ----------------------------------------------------------------------

/// Base of the window of 48-bit addresses that stands for the wave's private (scratch) memory in
/// buffer resources. A V# cannot hold the flat private aperture (`PRIVATE_APERTURE` is above
/// 2^48), so the emulator gives scratch V#s this base instead; it lies far above any allocation
/// (the heap starts at 2^44 and is capped at the memory limit).
pub const SCRATCH_WINDOW: u64 = 0x0000_F000_0000_0000;
/// Size of the window.
pub const SCRATCH_WINDOW_SIZE: u64 = 1 << 32;

/// Where a window address lives in the wave's scratch: `(lane, byte offset)`. The window is laid
/// out as the hardware lays out a wave's scratch for the runtime's scratch V# (swizzled, element
/// 4 bytes, index stride 64, add_tid): dword `d` of lane `l` is at `d * 256 + l * 4`. Accesses
/// through any V# (or `s_scratch_*`) whose address falls in the window see the same bytes.
#[inline]
pub(crate) fn window_to_lane(p: u64) -> (usize, u64) {
    (((p / 4) % 64) as usize, (p / 256) * 4 + p % 4)
}

/// The private segment buffer V# a launch hands to kernels that ask for one (user SGPRs 0-3), in
/// the format of the ROCm runtime's (ROCR `AqlQueue::InitScratchSRD`, gfx9 branch): base in the
/// scratch window, stride 0, swizzle on, num_records the wave's scratch bytes, dst_sel XYZW,
/// UINT / format 32, element size 4, index stride 64, add_tid on.
pub fn private_segment_vsharp(scratch_per_lane: u32) -> [u32; 4] {
    let records = (scratch_per_lane as u64 * 64).min(u32::MAX as u64) as u32;
    let word3 = 4 | 5 << 3 | 6 << 6 | 7 << 9 // dst_sel x, y, z, w
        | 4 << 12 // NUM_FORMAT_UINT
        | 4 << 15 // DATA_FORMAT_32
        | 1 << 19 // ELEMENT_SIZE 4
        | 3 << 21 // INDEX_STRIDE 64
        | 1 << 23; // ADD_TID_ENABLE
    [SCRATCH_WINDOW as u32, (SCRATCH_WINDOW >> 32) as u32 | 1 << 31, records, word3]
}

// ---- typed (format) data -----------------------------------------------------------------------

/// Component bit widths, lowest bits first, of a data format (ISA table 41; AMD names list the
/// most significant field first, so 10_11_11 is x:11 y:11 z:10).
fn components(dfmt: u8) -> Option<&'static [u32]> {
    Some(match dfmt {
        1 => &[8],
        2 => &[16],
        3 => &[8, 8],
        4 => &[32],
        5 => &[16, 16],
        6 => &[11, 11, 10],
        7 => &[10, 11, 11],
        8 => &[2, 10, 10, 10],
        9 => &[10, 10, 10, 2],
        10 => &[8, 8, 8, 8],
        11 => &[32, 32],
        12 => &[16, 16, 16, 16],
        13 => &[32, 32, 32],
        14 => &[32, 32, 32, 32],
        _ => return None,
    })
}

/// Bytes of one element of a data format.
pub(crate) fn format_bytes(dfmt: u8) -> Option<u32> {
    components(dfmt).map(|c| c.iter().sum::<u32>() / 8)
}

/// Number formats.
const UNORM: u8 = 0;
const SNORM: u8 = 1;
const USCALED: u8 = 2;
const SSCALED: u8 = 3;
const UINT: u8 = 4;
const SINT: u8 = 5;
const FLOAT: u8 = 7;

fn nfmt_is_float(nfmt: u8) -> bool {
    !matches!(nfmt, UINT | SINT)
}

fn unsupported(v: &Vsharp, op: &str, why: &str) -> FaultKind {
    FaultKind::NotImplemented(format!("{op} with data format {} / number format {}: {why}", v.dfmt, v.nfmt))
}

/// Converts one element read from memory to its four channels as 32-bit values (floats as f32
/// bits, integers as integers), after the resource's dst_sel. Missing channels read 0, missing
/// alpha 1.
pub(crate) fn load_format(v: &Vsharp, raw: &[u8], op: &str) -> Result<[u32; 4], FaultKind> {
    let comps = components(v.dfmt).ok_or_else(|| FaultKind::Invalid(format!("{op}: data format {} is reserved", v.dfmt)))?;
    let mut bits = 0u128;
    for (i, b) in raw.iter().enumerate() {
        bits |= (*b as u128) << (8 * i);
    }
    let one = if nfmt_is_float(v.nfmt) { 1.0f32.to_bits() } else { 1 };
    let mut ch = [0, 0, 0, one];
    let mut shift = 0;
    for (i, &n) in comps.iter().enumerate() {
        let x = ((bits >> shift) as u64 & ((1u64 << n) - 1)) as u32;
        shift += n;
        let sext = ((x << (32 - n)) as i32) >> (32 - n);
        let max_u = ((1u64 << n) - 1) as f32;
        let max_s = ((1u64 << (n - 1)) - 1) as f32;
        ch[i] = match (v.nfmt, n) {
            (UINT, _) => x,
            (SINT, _) => sext as u32,
            (FLOAT, 32) => x,
            (FLOAT, 16) => half::f16::from_bits(x as u16).to_f32().to_bits(),
            (FLOAT, _) => return Err(unsupported(v, op, "10- and 11-bit float components")),
            (UNORM, n) if n < 32 => (x as f32 / max_u).to_bits(),
            (SNORM, n) if n < 32 => (sext as f32 / max_s).max(-1.0).to_bits(),
            (USCALED, _) => (x as f32).to_bits(),
            (SSCALED, _) => (sext as f32).to_bits(),
            (UNORM | SNORM, _) => return Err(unsupported(v, op, "normalised 32-bit components")),
            _ => return Err(FaultKind::Invalid(format!("{op}: number format {} is reserved", v.nfmt))),
        };
    }
    let mut out = [0u32; 4];
    for (o, &sel) in out.iter_mut().zip(&v.dst_sel) {
        *o = match sel {
            0 => 0,
            1 => one,
            4..=7 => ch[sel as usize - 4],
            _ => return Err(FaultKind::Invalid(format!("{op}: dst_sel {sel} is reserved"))),
        };
    }
    Ok(out)
}

/// What a typed load returns for an out-of-range element: 0 in every channel except those
/// whose dst_sel is 1 (ISA 9.1.5.1, note 1). An unbound resource returns all zeros (9.1.8).
pub(crate) fn out_of_range_format(v: &Vsharp) -> [u32; 4] {
    if v.dfmt == 0 {
        return [0; 4];
    }
    let one = if nfmt_is_float(v.nfmt) { 1.0f32.to_bits() } else { 1 };
    v.dst_sel.map(|s| if s == 1 { one } else { 0 })
}

/// The bits of an element of format `dfmt` that its first `comps` channels occupy.
pub(crate) fn channel_mask(dfmt: u8, comps: u32) -> u128 {
    let widths = components(dfmt).unwrap_or(&[]);
    let lo: u32 = widths.iter().take(comps as usize).sum();
    if lo >= 128 { u128::MAX } else { (1u128 << lo) - 1 }
}

/// Converts up to four channel values (f32 bits or integers, as the VGPRs hold them) to one
/// element of the resource's format. Stores take channels in order (dst_sel applies to loads
/// only). Normalised formats clamp and round to nearest even, integer formats keep the low bits,
/// scaled formats convert with round to nearest even (an inference: the guide gives no rule).
pub(crate) fn store_format(v: &Vsharp, ch: &[u32; 4], op: &str) -> Result<Vec<u8>, FaultKind> {
    let comps = components(v.dfmt).ok_or_else(|| FaultKind::Invalid(format!("{op}: data format {} is reserved", v.dfmt)))?;
    let mut bits = 0u128;
    let mut shift = 0;
    for (i, &n) in comps.iter().enumerate() {
        let mask = ((1u64 << n) - 1) as u32;
        let f = f32::from_bits(ch[i]);
        let max_u = ((1u64 << n) - 1) as f32;
        let max_s = ((1u64 << (n - 1)) - 1) as f32;
        let x: u32 = match (v.nfmt, n) {
            (UINT | SINT, _) => ch[i] & mask,
            (FLOAT, 32) => ch[i],
            (FLOAT, 16) => half::f16::from_f32(f).to_bits() as u32,
            (FLOAT, _) => return Err(unsupported(v, op, "10- and 11-bit float components")),
            (UNORM, n) if n < 32 => (f.clamp(0.0, 1.0) * max_u).round_ties_even() as u32,
            (SNORM, n) if n < 32 => ((f.clamp(-1.0, 1.0) * max_s).round_ties_even() as i32 as u32) & mask,
            (USCALED, _) => (f.round_ties_even().clamp(0.0, max_u) as u64 as u32) & mask,
            (SSCALED, _) => (f.round_ties_even().clamp(-max_s - 1.0, max_s) as i64 as u32) & mask,
            (UNORM | SNORM, _) => return Err(unsupported(v, op, "normalised 32-bit components")),
            _ => return Err(FaultKind::Invalid(format!("{op}: number format {} is reserved", v.nfmt))),
        };
        bits |= (x as u128) << shift;
        shift += n;
    }
    Ok((0..shift / 8).map(|i| (bits >> (8 * i)) as u8).collect())
}

/// A channel value (as [`load_format`] returns it) narrowed to 16 bits for the D16 forms: f16 for
/// float number formats, the low 16 bits for integers.
pub(crate) fn to_d16(v: &Vsharp, x: u32) -> u16 {
    if nfmt_is_float(v.nfmt) { half::f16::from_f32(f32::from_bits(x)).to_bits() } else { x as u16 }
}

/// A 16-bit VGPR half widened to a channel value for a D16 store.
pub(crate) fn from_d16(v: &Vsharp, x: u16) -> u32 {
    match v.nfmt {
        UINT => x as u32,
        SINT => x as i16 as i32 as u32,
        _ => half::f16::from_bits(x).to_f32().to_bits(),
    }
}

/// A MUBUF load for the tests: VGPR address v0 (v[0:1] with IDXEN and OFFEN), resource
/// s[0:3], SOFFSET s4 when `soffset`, data into v2 on; `flags` its addressing bits.
#[cfg(test)]
pub(crate) fn mubuf_load(op: crate::isa::Op, soffset: bool, imm: i32, flags: u16) -> Inst {
    use crate::isa::{Enc, Opnd};
    Inst {
        op,
        enc: Enc::Mubuf,
        size: 8,
        dst: Opnd::vgpr(2),
        sdst: Opnd::NONE,
        src: [Opnd::vgpr(0), Opnd::NONE, Opnd::sgpr(0), if soffset { Opnd::sgpr(4) } else { Opnd::NONE }],
        literal: 0,
        imm,
        mods: Default::default(),
        ext: Default::default(),
        flags,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::flags;

    #[test]
    fn swizzled_offsets_follow_the_isa_formula() {
        // The runtime's scratch V#: element 4, index stride 64, add_tid, stride 0.
        let v = Vsharp::from_words(private_segment_vsharp(16));
        assert!(v.swizzle && v.add_tid);
        assert_eq!((v.elem, v.index_stride), (4, 64));
        // Dword d of lane l lands at d * 256 + l * 4; bytes within the dword stay together.
        assert_eq!(buffer_offset(&v, 0, 5, 8), 2 * 256 + 5 * 4);
        assert_eq!(buffer_offset(&v, 0, 5, 9), 2 * 256 + 5 * 4 + 1);
        assert_eq!(window_to_lane(2 * 256 + 5 * 4 + 1), (5, 9));
        // A structured swizzled buffer: stride 32, element 8, index stride 16.
        let w = Vsharp::from_words([0x1000, 32 << 16 | 1 << 31, 100, 4 << 15 | 2 << 19 | 1 << 21]);
        assert_eq!((w.elem, w.index_stride, w.stride), (8, 16, 32));
        // index 17 = msb 1, lsb 1; offset 12 = msb 1, lsb 4: (1*32 + 1*8)*16 + 1*8 + 4.
        assert_eq!(buffer_offset(&w, 32, 17, 12), (32 + 8) * 16 + 8 + 4);
    }

    #[test]
    fn buffer_types_and_their_range_checks() {
        let raw = Vsharp::from_words([0, 0, 64, 4 << 15]);
        assert_eq!(range_check(&raw, false, 0), RangeCheck::Bytes);
        let structured = Vsharp::from_words([0, 16 << 16, 64, 4 << 15]);
        assert_eq!(range_check(&structured, true, 16), RangeCheck::Index);
        // OFFEN-only through a strided buffer is checked by bytes (PR #10928), as is an index
        // with a zero stride.
        assert_eq!(range_check(&structured, false, 16), RangeCheck::Bytes);
        assert_eq!(range_check(&raw, true, 0), RangeCheck::Bytes);
        let scratch = Vsharp::from_words(private_segment_vsharp(4));
        assert_eq!(range_check(&scratch, false, 0), RangeCheck::None);
        // add_tid widens the stride of non-format instructions with the data-format bits.
        let tid = Vsharp::from_words([0, 4 << 16, 0, 3 << 15 | 1 << 23]);
        assert_eq!(tid.stride_for(false), 3 << 14 | 4);
        assert_eq!(tid.stride_for(true), 4);
    }

    /// `Addressing::offsets_in_bytes` gives every lane `linear`'s address and range (wholly in,
    /// partly in, out), over random offsets, record counts, SOFFSETs and instruction offsets
    /// (inside, across and past the end), and declines what it does not handle.
    #[test]
    fn offsets_in_bytes_match_linear_lane_by_lane() {
        use crate::isa::Op;
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut fast_rounds = 0;
        for round in 0..3000 {
            let mut w = Wave::new(4, 0);
            let base = 0x1000_0000_0000 + next() % 4096 * 4;
            let records = match next() % 4 {
                0 => u32::MAX,
                1 => 64 * 16,
                _ => (next() % 6000) as u32,
            };
            // Word 3: a data format (bound), sometimes add_tid or a swizzle in word 1.
            let word3 = 4 << 15 | if next() % 8 == 0 { 1 << 23 } else { 0 };
            let word1 = (base >> 32) as u32 & 0xffff | if next() % 8 == 0 { 1 << 31 } else { 0 } | ((next() % 4) as u32 * 16) << 16;
            w.s[..4].copy_from_slice(&[base as u32, word1, records, word3]);
            w.s[4] = (next() % 300) as u32;
            for l in 0..LANES {
                w.v[0][l] = match next() % 3 {
                    0 => 16 * l as u32,
                    1 => (next() % 6000) as u32,
                    _ => u32::MAX - (next() % 64) as u32,
                };
            }
            let bytes = [4, 8, 12, 16][round % 4];
            let (soffset, imm) = (next() % 2 == 0, (next() % 4096) as i32);
            let addressing = if next() % 8 == 0 { flags::IDXEN } else { 0 } | if next() % 8 == 0 { 0 } else { flags::OFFEN };
            let inst = mubuf_load(Op::BufferLoadDwordx4, soffset, imm, addressing);
            let ad = Addressing::new(&w, &inst, false).unwrap();
            let mut addrs = [0u64; LANES];
            let Some((whole, part)) = ad.offsets_in_bytes(bytes, &mut addrs) else {
                assert!(ad.idxen || !ad.offen || ad.v.add_tid || ad.v.swizzle || ad.check != RangeCheck::Bytes, "declined round {round}");
                continue;
            };
            fast_rounds += 1;
            for (l, &a) in addrs.iter().enumerate() {
                let (n, addr) = ad.linear(l, bytes / 4, 4);
                assert_eq!(whole >> l & 1 == 1, n == bytes / 4, "round {round} lane {l}: wholly in range");
                assert_eq!(part >> l & 1 == 1, n > 0 && n < bytes / 4, "round {round} lane {l}: partly in range");
                if n > 0 {
                    assert_eq!(a, addr, "round {round} lane {l}: address");
                }
            }
        }
        assert!(fast_rounds > 1000, "{fast_rounds} rounds took the fast addressing");
    }

    #[test]
    fn typed_loads_convert_and_apply_dst_sel() {
        // 8_8_8_8 unorm read as (w, z, y, x) with dst_sel 7, 6, 5, 4.
        let v = Vsharp::from_words([0, 0, 64, 7 | 6 << 3 | 5 << 6 | 4 << 9 | (UNORM as u32) << 12 | 10 << 15]);
        let ch = load_format(&v, &[0, 255, 51, 102], "t").unwrap();
        assert_eq!(ch.map(f32::from_bits), [0.4, 0.2, 1.0, 0.0]);
        // 16 float with dst_sel x, 0, 0, 1: alpha reads 1.0, the rest 0.
        let h = Vsharp::from_words([0, 0, 64, 4 | 1 << 9 | (FLOAT as u32) << 12 | 2 << 15]);
        let ch = load_format(&h, &half::f16::from_f32(-2.5).to_bits().to_le_bytes(), "t").unwrap();
        assert_eq!(ch.map(f32::from_bits), [-2.5, 0.0, 0.0, 1.0]);
        // 2_10_10_10 sint: x, y, z 10 bits, w 2 bits.
        let p = Vsharp::from_words([0, 0, 64, 4 | 5 << 3 | 6 << 6 | 7 << 9 | (SINT as u32) << 12 | 9 << 15]);
        let word: u32 = 0x3ff | 1 << 10 | 0x200 << 20 | 1 << 30;
        assert_eq!(load_format(&p, &word.to_le_bytes(), "t").unwrap(), [u32::MAX, 1, (-512i32) as u32, 1]);
        // Stores round-trip.
        let bytes = store_format(&v, &[0.4f32.to_bits(), 0.2f32.to_bits(), 1.0f32.to_bits(), 0], "t").unwrap();
        assert_eq!(bytes, vec![102, 51, 255, 0]);
    }
}
