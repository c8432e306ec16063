//! Vector memory: FLAT, GLOBAL, SCRATCH and MUBUF loads, stores, atomics, and loads to LDS.
//!
//! Addressing (AMD CDNA ISA guide, chapters 9 and 10; section and table numbers here are the CDNA4
//! edition's, which was the one at hand; its gfx9 buffer and flat chapters describe gfx942 too
//! except where noted):
//! - GLOBAL: `vaddr` (64-bit) + offset, or `saddr` (64-bit SGPRs) + `vaddr` (32-bit) + offset,
//!   with a signed 13-bit offset. An address in no allocation is a fault naming lane and address
//!   (the hardware would raise a memory violation).
//! - FLAT: `vaddr` + an unsigned 12-bit offset (the 13th bit is ignored, table 54), routed by
//!   aperture to the workgroup's LDS, the lane's scratch, or global memory.
//! - SCRATCH (gfx940 table 56): `saddr` (one SGPR, or off) + `vaddr` (if SVE, else 0) + signed
//!   offset, into the lane's private memory: the four ST/SS/SV/SVS modes are the four on/off
//!   combinations.
//! - MUBUF: a buffer resource (V#), linear or swizzled, with the hardware's range checks; see
//!   [`super::buffer`]. A V# based in the scratch window reaches the wave's private memory.
//! - Loads to LDS (`global_load_lds_*`, `scratch_load_lds_*`, `buffer_load_* lds`): lane l's
//!   value goes to LDS at `M0_part + inst_offset + 4 * l`, where `M0_part` is `M0[17:2] * 4`
//!   for GLOBAL/SCRATCH (ISA 10.3) and the byte offset `M0[15:0]` for MUBUF on CDNA3 (9.1.9;
//!   the CDNA4 edition widens it to `M0[17:0]` for its larger LDS). Composable Kernel states
//!   both CDNA3 rules, citing the CDNA3 guide (ck_tile `amd_buffer_addressing.hpp`,
//!   `async_global_load_lds_dwordxn`). The instruction offset applies to both addresses (LLVM
//!   `AMDGPUDMAOperations`: "offset applied to both global and LDS address"). Sub-dword loads
//!   write the dword a VGPR load would produce (zero- or sign-extended), our reading of the
//!   one-dword-per-lane slots and of the separate signed and unsigned opcodes. A slot outside
//!   the workgroup's LDS is a fault: the guide leaves keeping slots inside the allocation to
//!   the program (9.1.9.1).
//!
//! Alignment: the ROCm driver runs gfx9 in unaligned mode (`SH_MEM_CONFIG.ALIGNMENT_MODE =
//! UNALIGNED`, amdkfd `update_qpd_v9`), so non-atomic accesses of any size work at any byte
//! address and are emulated byte-exactly. (We read the guide's "the two LSBs of the byte-address
//! are ignored" for dword buffer accesses, 9.1.7, as the behaviour of the default DWORD
//! alignment mode that ROCm replaces.) Atomics must be naturally aligned; a misaligned one is a
//! fault.

use super::atomic::{AtomicOp, Unit};
use super::buffer::{self, RangeCheck, SCRATCH_WINDOW, SCRATCH_WINDOW_SIZE, Vsharp};
use super::counters::{Access, LdsLaneAccess, LdsOp};
use super::error::{FaultKind, Space};
use super::memory::{APERTURE_SIZE, PRIVATE_APERTURE, SHARED_APERTURE};
use super::staged::Staged;
use super::step::{Ctx, Exec, Flow, Trouble, not_implemented};
use super::wave::{LANES, Ty, Wave};
use crate::isa::{Enc, Inst, Op, Opnd, flags};
use std::sync::OnceLock;

/// True for instructions that read-modify-write global memory: vector atomics (FLAT, GLOBAL,
/// MUBUF) and scalar ones (`s_atomic_*`, `s_buffer_atomic_*`). A launch with any of them runs
/// its workgroups one at a time, so float atomics sum in a reproducible order. (DS atomics stay
/// inside the workgroup and do not count.)
pub fn is_atomic(inst: &Inst) -> bool {
    matches!(inst.enc, Enc::Flat | Enc::Global | Enc::Mubuf | Enc::Smem) && inst.op.name().contains("atomic")
}

/// Where one piece of a lane's access goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// Device memory.
    Global(u64),
    /// The workgroup's LDS (byte offset).
    Lds(u32),
    /// A lane's private memory (usually the accessing lane's; a swizzled scratch V# can reach
    /// another lane's bytes, as on the hardware).
    Scratch { lane: u8, off: u32 },
    /// A MUBUF access out of range: loads read 0, stores and atomics do nothing.
    Dropped,
}

/// A contiguous part of one lane's access: bytes `at..at + len` of the lane's data.
///
/// A MUBUF access is range-checked in units (dwords for dword loads and stores); consecutive
/// units of a lane that land next to each other in device memory, or are all dropped, make one
/// piece (`unit` then says the size they were checked in), so a 16-byte load moves its bytes in
/// one copy instead of four. Reading or writing such a piece goes unit by unit when the whole
/// span is not inside one allocation, so faults name the same unit as unmerged pieces would.
#[derive(Clone, Copy, Debug)]
struct Piece {
    lane: u8,
    at: u8,
    len: u8,
    /// The size of the units a merged piece is made of (`len` for a single unit).
    unit: u8,
    t: Target,
}

impl Piece {
    fn new(lane: usize, at: u32, len: u32, t: Target) -> Piece {
        Piece { lane: lane as u8, at: at as u8, len: len as u8, unit: len as u8, t }
    }
}

/// Appends a MUBUF unit's piece `p` (a whole unit), merging it into the previous piece when both
/// belong to the same lane, follow each other in the lane's data and are whole units of the same
/// size that are both dropped or contiguous in device memory. Merging changes no counter: the
/// global traffic is counted per lane over contiguous pieces anyway ([`record`]), dropped pieces
/// are not counted.
fn push_unit(out: &mut Vec<Piece>, p: Piece) {
    if let Some(last) = out.last_mut()
        && last.lane == p.lane
        && last.at + last.len == p.at
        && last.unit == p.unit
        && match (last.t, p.t) {
            (Target::Dropped, Target::Dropped) => true,
            (Target::Global(a), Target::Global(b)) => a.wrapping_add(last.len as u64) == b,
            _ => false,
        }
    {
        last.len += p.len;
        return;
    }
    out.push(p);
}

/// The operation's data shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// `bytes` (1, 2, 4, 8, 12, 16) zero- or sign-extended into dwords.
    Plain { bytes: u32, signed: bool },
    /// d16: 1 or 2 bytes into the low (`hi = false`) or high half, the other half kept.
    D16 { bytes: u32, signed: bool, hi: bool },
    /// `buffer_{load,store}_format_*`: `comps` channels through the resource's format; `d16`
    /// packs channels in halves (`hi`: the single channel goes to the high half).
    Format { comps: u32, d16: bool, hi: bool },
}

fn shape_of(op: &str) -> Option<Shape> {
    if let Some((_, t)) = op.split_once("_format_") {
        let (d16, hi, t) = match t.strip_prefix("d16_") {
            Some(r) => match r.strip_prefix("hi_") {
                Some(r) => (true, true, r),
                None => (true, false, r),
            },
            None => (false, false, t),
        };
        let comps = match t {
            "x" => 1,
            "xy" => 2,
            "xyz" => 3,
            "xyzw" => 4,
            _ => return None,
        };
        return Some(Shape::Format { comps, d16, hi });
    }
    let tail = op.rsplit_once("load_").or_else(|| op.rsplit_once("store_")).map(|(_, t)| t)?;
    let tail = tail.strip_prefix("lds_").unwrap_or(tail);
    Some(match tail {
        "ubyte" | "byte" => Shape::Plain { bytes: 1, signed: false },
        "sbyte" => Shape::Plain { bytes: 1, signed: true },
        "ushort" | "short" => Shape::Plain { bytes: 2, signed: false },
        "sshort" => Shape::Plain { bytes: 2, signed: true },
        "dword" => Shape::Plain { bytes: 4, signed: false },
        "dwordx2" => Shape::Plain { bytes: 8, signed: false },
        "dwordx3" => Shape::Plain { bytes: 12, signed: false },
        "dwordx4" => Shape::Plain { bytes: 16, signed: false },
        "ubyte_d16" => Shape::D16 { bytes: 1, signed: false, hi: false },
        "sbyte_d16" => Shape::D16 { bytes: 1, signed: true, hi: false },
        "short_d16" => Shape::D16 { bytes: 2, signed: false, hi: false },
        "ubyte_d16_hi" | "byte_d16_hi" => Shape::D16 { bytes: 1, signed: false, hi: true },
        "sbyte_d16_hi" => Shape::D16 { bytes: 1, signed: true, hi: true },
        "short_d16_hi" => Shape::D16 { bytes: 2, signed: false, hi: true },
        _ => return None,
    })
}

fn vaddr64(w: &Wave, op: Opnd, l: usize) -> Result<u64, FaultKind> {
    Ok(w.vreg(op)?[l] as u64 | (w.vreg_at(op, 1)?[l] as u64) << 32)
}

/// The lanes set in `exec`, in order.
fn active(exec: u64) -> impl Iterator<Item = usize> {
    (0..LANES).filter(move |l| exec >> l & 1 == 1)
}

/// The memory element a MUBUF instruction moves, for its range check and swizzling: its bytes,
/// and the size of the units it is range-checked in (dwords for dword loads and stores, the
/// whole element for format instructions and atomics).
struct BufAccess {
    bytes: u32,
    unit: u32,
    format: bool,
}

/// Computes every active lane's pieces for an access of `bytes` per lane.
fn targets(w: &Wave, inst: &Inst, bytes: u32, atomic: bool) -> Result<Vec<Piece>, Trouble> {
    let mut out = Vec::with_capacity(LANES);
    let whole = |l: usize, t: Target| Piece::new(l, 0, bytes, t);
    match inst.enc {
        Enc::Global => {
            let imm = inst.imm as i64 as u64;
            let sbase = if inst.src[2].is_none() { None } else { Some(w.sval64(inst.src[2], 0, Ty::U64)?) };
            for l in active(w.exec()) {
                let a = match sbase {
                    Some(s) => s.wrapping_add(w.vreg(inst.src[0])?[l] as u64),
                    None => vaddr64(w, inst.src[0], l)?,
                };
                out.push(whole(l, Target::Global(a.wrapping_add(imm))));
            }
        }
        Enc::Flat => {
            // FLAT offsets are 12 bits unsigned; bit 12 of the field is ignored (table 54).
            let imm = (inst.imm & 0xfff) as u64;
            for l in active(w.exec()) {
                let a = vaddr64(w, inst.src[0], l)?.wrapping_add(imm);
                let t = if (SHARED_APERTURE..SHARED_APERTURE + APERTURE_SIZE).contains(&a) {
                    Target::Lds((a - SHARED_APERTURE) as u32)
                } else if (PRIVATE_APERTURE..PRIVATE_APERTURE + APERTURE_SIZE).contains(&a) {
                    Target::Scratch { lane: l as u8, off: (a - PRIVATE_APERTURE) as u32 }
                } else {
                    Target::Global(a)
                };
                out.push(whole(l, t));
            }
        }
        Enc::Scratch => {
            let s = if inst.src[2].is_none() { 0 } else { w.sval32(inst.src[2], 0, Ty::B32)? };
            for l in active(w.exec()) {
                let v = if inst.src[0].is_none() { 0 } else { w.vreg(inst.src[0])?[l] };
                let off = v.wrapping_add(s).wrapping_add(inst.imm as u32);
                out.push(whole(l, Target::Scratch { lane: l as u8, off }));
            }
        }
        Enc::Mubuf => {
            let format = kind_of(inst.op).1;
            let unit = if atomic || format || bytes < 4 { bytes } else { 4 };
            mubuf_targets(w, inst, &BufAccess { bytes, unit, format }, &mut out, true)?;
        }
        _ => return Err(not_implemented(inst)),
    }
    Ok(out)
}

/// MUBUF pieces (ISA 9.1.5): per range-check unit, an address linear or swizzled, then the
/// private window or global memory. `shortcut`: lanes of a linear resource take the direct
/// computation (the unit-by-unit loop gives the same pieces; `false` is for the test that
/// shows it).
fn mubuf_targets(w: &Wave, inst: &Inst, acc: &BufAccess, out: &mut Vec<Piece>, shortcut: bool) -> Result<(), Trouble> {
    let ad = buffer::Addressing::new(w, inst, acc.format)?;
    let (v, soff, stride) = (&ad.v, ad.soff, ad.stride);
    let units = acc.bytes / acc.unit;
    debug_assert_eq!(units * acc.unit, acc.bytes);
    for l in active(w.exec()) {
        if shortcut && !v.swizzle {
            // Linear addressing: unit k is at the first unit's address + k * unit, and the range
            // check passes for a prefix of the units, so the lane's pieces are (at most) one in
            // memory and one dropped: what the unit-by-unit loop below builds through
            // `push_unit`, computed directly. (Lanes whose units could reach the scratch window
            // take the loop.)
            let (in_range, addr) = ad.linear(l, units, acc.unit);
            let clear_of_window = match addr.checked_add(acc.bytes as u64) {
                Some(end) => end <= SCRATCH_WINDOW || addr >= SCRATCH_WINDOW + SCRATCH_WINDOW_SIZE,
                None => false,
            };
            if in_range == 0 || clear_of_window {
                let len = in_range * acc.unit;
                if len > 0 {
                    out.push(Piece { lane: l as u8, at: 0, len: len as u8, unit: acc.unit as u8, t: Target::Global(addr) });
                }
                if len < acc.bytes {
                    out.push(Piece {
                        lane: l as u8,
                        at: len as u8,
                        len: (acc.bytes - len) as u8,
                        unit: acc.unit as u8,
                        t: Target::Dropped,
                    });
                }
                continue;
            }
        }
        let (index, offset) = ad.lane(l);
        let mut at = 0;
        while at < acc.bytes {
            let unit_end = at + acc.unit;
            let out_of_range = ad.unbound
                || match ad.check {
                    RangeCheck::None => false,
                    RangeCheck::Bytes => offset + soff + unit_end as u64 > v.num_records,
                    RangeCheck::Index => index >= v.num_records,
                };
            if out_of_range {
                push_unit(out, Piece::new(l, at, acc.unit, Target::Dropped));
                at = unit_end;
                continue;
            }
            // Swizzled units do not straddle an element (the guide requires accesses no larger
            // than the element; we split rather than refuse).
            while at < unit_end {
                let offset = offset + at as u64;
                let mut len = unit_end - at;
                if v.swizzle {
                    len = len.min((v.elem - offset % v.elem) as u32);
                }
                let addr = v.base.wrapping_add(soff).wrapping_add(buffer::buffer_offset(v, stride, index, offset));
                push_addr(l, at, len, len == acc.unit, addr, out);
                at += len;
            }
        }
    }
    Ok(())
}

/// A piece at a global address, or in the scratch window (split at the window's 4-byte lane
/// slots). `whole`: the piece is a whole range-check unit (not part of a swizzled one), which may
/// merge with the previous unit ([`push_unit`]).
fn push_addr(l: usize, mut at: u32, len: u32, whole: bool, addr: u64, out: &mut Vec<Piece>) {
    if !(SCRATCH_WINDOW..SCRATCH_WINDOW + SCRATCH_WINDOW_SIZE).contains(&addr) {
        let p = Piece::new(l, at, len, Target::Global(addr));
        if whole {
            push_unit(out, p)
        } else {
            out.push(p)
        }
        return;
    }
    let mut p = addr - SCRATCH_WINDOW;
    let end = at + len;
    while at < end {
        let n = (end - at).min((4 - p % 4) as u32);
        let (lane, off) = buffer::window_to_lane(p);
        out.push(Piece::new(l, at, n, Target::Scratch { lane: lane as u8, off: off as u32 }));
        at += n;
        p += n as u64;
    }
}

fn oob(space: Space, addr: u64, size: u32, l: usize) -> Trouble {
    Trouble::lane(FaultKind::OutOfBounds { space, addr, size }, l)
}

fn scratch_range(w: &Wave, lane: u8, off: u32, n: u32, l: usize) -> Result<usize, Trouble> {
    if off as u64 + n as u64 > w.scratch_per_lane as u64 {
        return Err(oob(Space::Scratch, off as u64, n, l));
    }
    Ok(lane as usize * w.scratch_per_lane as usize + off as usize)
}

/// Reads `buf.len()` bytes for lane `l`.
fn read(w: &Wave, cx: &Ctx<'_, '_>, t: Target, buf: &mut [u8], l: usize) -> Result<(), Trouble> {
    let n = buf.len() as u32;
    match t {
        Target::Global(a) => {
            let (r, off) = cx.mem.find(a, n as u64).ok_or_else(|| oob(Space::Global, a, n, l))?;
            r.read_bytes(off, buf);
        }
        Target::Lds(a) => {
            let s = cx.lds.get(a as usize..a as usize + n as usize).ok_or_else(|| oob(Space::Lds, a as u64, n, l))?;
            buf.copy_from_slice(s);
        }
        Target::Scratch { lane, off } => {
            let base = scratch_range(w, lane, off, n, l)?;
            buf.copy_from_slice(&w.scratch[base..base + n as usize]);
        }
        Target::Dropped => buf.fill(0),
    }
    Ok(())
}

/// Reads piece `p` into `buf` (the lane's bytes `p.at..p.at + p.len`), a merged piece unit by
/// unit when it is not inside one allocation (see [`Piece`]).
fn read_piece(w: &Wave, cx: &Ctx<'_, '_>, p: &Piece, buf: &mut [u8]) -> Result<(), Trouble> {
    let l = p.lane as usize;
    if let Target::Global(a) = p.t
        && p.unit < p.len
    {
        if let Some((r, off)) = cx.mem.find(a, p.len as u64) {
            r.read_bytes(off, buf);
        } else {
            for (k, chunk) in buf.chunks_mut(p.unit as usize).enumerate() {
                read(w, cx, Target::Global(a.wrapping_add((k * p.unit as usize) as u64)), chunk, l)?;
            }
        }
        return Ok(());
    }
    read(w, cx, p.t, buf, l)
}

/// Writes `data` to piece `p`, a merged piece unit by unit when it is not inside one allocation
/// (see [`Piece`]).
fn write_piece(w: &mut Wave, cx: &mut Ctx<'_, '_>, p: &Piece, data: &[u8]) -> Result<(), Trouble> {
    let l = p.lane as usize;
    if let Target::Global(a) = p.t
        && p.unit < p.len
    {
        if let Some((r, off)) = cx.mem.find(a, p.len as u64) {
            r.write_bytes(off, data);
        } else {
            for (k, chunk) in data.chunks(p.unit as usize).enumerate() {
                write(w, cx, Target::Global(a.wrapping_add((k * p.unit as usize) as u64)), chunk, l)?;
            }
        }
        return Ok(());
    }
    write(w, cx, p.t, data, l)
}

fn write(w: &mut Wave, cx: &mut Ctx<'_, '_>, t: Target, data: &[u8], l: usize) -> Result<(), Trouble> {
    let n = data.len() as u32;
    match t {
        Target::Global(a) => {
            let (r, off) = cx.mem.find(a, n as u64).ok_or_else(|| oob(Space::Global, a, n, l))?;
            r.write_bytes(off, data);
        }
        Target::Lds(a) => {
            let s = cx.lds.get_mut(a as usize..a as usize + n as usize).ok_or_else(|| oob(Space::Lds, a as u64, n, l))?;
            s.copy_from_slice(data);
        }
        Target::Scratch { lane, off } => {
            let base = scratch_range(w, lane, off, n, l)?;
            w.scratch[base..base + n as usize].copy_from_slice(data);
        }
        Target::Dropped => {}
    }
    Ok(())
}

/// Counts the global traffic (one entry per lane where its pieces are contiguous) and the LDS
/// traffic of FLAT accesses that hit the LDS aperture.
fn record(cx: &mut Ctx<'_, '_>, kind: Access, ps: &[Piece]) {
    let mut g: Vec<(u64, u32)> = Vec::with_capacity(ps.len());
    let mut lds: Vec<LdsLaneAccess> = Vec::new();
    let mut last_lane = u8::MAX;
    for p in ps {
        match p.t {
            Target::Global(a) => {
                if let Some(prev) = g.last_mut().filter(|(pa, pn)| last_lane == p.lane && pa + *pn as u64 == a) {
                    prev.1 += p.len as u32;
                } else {
                    g.push((a, p.len as u32));
                }
                last_lane = p.lane;
            }
            Target::Lds(a) => lds.push(LdsLaneAccess { lane: p.lane, part: 0, addr: a, bytes: p.len as u32 }),
            _ => {}
        }
    }
    if !g.is_empty() {
        cx.counters.global_access(kind, &g);
    }
    if let Some(first) = lds.first() {
        let width = first.bytes;
        let op = match kind {
            Access::Load => LdsOp::read(width),
            Access::Store => LdsOp::write(width),
            Access::Atomic => LdsOp::atomic(width),
        };
        cx.counters.lds_access(op, &lds);
    }
}

/// Groups pieces by lane (they are generated lane by lane).
fn by_lane(ps: &[Piece]) -> impl Iterator<Item = &[Piece]> {
    ps.chunk_by(|a, b| a.lane == b.lane)
}

/// The dword a VGPR load of `shape` would produce from the bytes of one lane (sub-dword plain
/// loads extend, d16 loads give the 16-bit value in the low half).
fn extend(raw: u32, bytes: u32, signed: bool) -> u32 {
    match (bytes, signed) {
        (1, true) => raw as u8 as i8 as i32 as u32,
        (1, false) => raw & 0xff,
        (2, true) => raw as u16 as i16 as i32 as u32,
        (2, false) => raw & 0xffff,
        _ => raw,
    }
}

fn shape_bytes(shape: Shape, v: Option<&Vsharp>, inst: &Inst) -> Result<u32, Trouble> {
    Ok(match shape {
        Shape::Plain { bytes, .. } | Shape::D16 { bytes, .. } => bytes,
        Shape::Format { .. } => {
            let v = v.expect("format shapes are MUBUF");
            match buffer::format_bytes(v.dfmt) {
                Some(b) => b,
                // An unbound resource: nothing is read or written (see `mubuf_targets`).
                None if v.dfmt == 0 => 4,
                None => {
                    return Err(Trouble::new(FaultKind::Invalid(format!("{}: data format {} is reserved", inst.op.name(), v.dfmt))));
                }
            }
        }
    })
}

fn vsharp_of(w: &Wave, inst: &Inst) -> Result<Option<Vsharp>, FaultKind> {
    Ok(if inst.enc == Enc::Mubuf { Some(Vsharp::from_words(w.sregs(inst.src[2])?)) } else { None })
}

/// Reads one lane's bytes from its pieces into `buf`, which holds zeros (what dropped pieces
/// read, so they are skipped).
fn gather(w: &Wave, cx: &Ctx<'_, '_>, lane: &[Piece], buf: &mut [u8; 16]) -> Result<(), Trouble> {
    for p in lane {
        if p.t != Target::Dropped {
            read_piece(w, cx, p, &mut buf[p.at as usize..(p.at + p.len) as usize])?;
        }
    }
    Ok(())
}

fn load(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, shape: Shape) -> Exec {
    if let Shape::Plain { bytes: bytes @ 4..=16, .. } = shape
        && let Some(r) = super::linear_load::try_load(w, inst, cx, bytes)
    {
        return r;
    }
    let v = vsharp_of(w, inst)?;
    let bytes = shape_bytes(shape, v.as_ref(), inst)?;
    let to_lds = inst.flags & flags::LDS != 0;
    let ps = targets(w, inst, bytes, false)?;
    let lds_base = if to_lds { Some(lds_slot_base(w, inst)) } else { None };
    let regs = match shape {
        _ if to_lds => 0,
        Shape::Plain { bytes, .. } => bytes.div_ceil(4),
        Shape::D16 { .. } => 1,
        Shape::Format { comps, d16: false, .. } => comps,
        Shape::Format { comps, d16: true, .. } => comps.div_ceil(2),
    };
    let mut dst = Staged::new(w, if to_lds { Opnd::NONE } else { inst.dst }, regs as u16)?;
    let mut dma: Vec<LdsLaneAccess> = Vec::new();
    for lane in by_lane(&ps) {
        let l = lane[0].lane as usize;
        let mut buf = [0u8; 16];
        gather(w, cx, lane, &mut buf)?;
        let raw = u32::from_le_bytes(buf[..4].try_into().expect("4"));
        let mut dwords = [0u32; 4];
        let n = match shape {
            Shape::Plain { bytes, signed } if bytes <= 4 => {
                dwords[0] = extend(raw, bytes, signed);
                1
            }
            Shape::Plain { bytes, .. } => {
                for (k, d) in dwords.iter_mut().enumerate().take(bytes as usize / 4) {
                    *d = u32::from_le_bytes(buf[4 * k..4 * k + 4].try_into().expect("4"));
                }
                bytes / 4
            }
            Shape::D16 { bytes, signed, hi } => {
                let x = extend(raw, bytes, signed) & 0xffff;
                let d = dst.get(0, l);
                dst.set(0, l, if hi { (d & 0xffff) | x << 16 } else { (d & 0xffff_0000) | x });
                continue;
            }
            Shape::Format { comps, d16, hi } => {
                let v = v.as_ref().expect("MUBUF");
                let ch = if lane.iter().all(|p| p.t == Target::Dropped) {
                    buffer::out_of_range_format(v)
                } else {
                    buffer::load_format(v, &buf[..bytes as usize], inst.op.name())?
                };
                if !d16 {
                    dwords[..comps as usize].copy_from_slice(&ch[..comps as usize]);
                    comps
                } else {
                    if to_lds {
                        return Err(Trouble::new(FaultKind::Invalid(format!("{} cannot load to LDS", inst.op.name()))));
                    }
                    let h = ch.map(|c| buffer::to_d16(v, c) as u32);
                    if hi {
                        dst.set(0, l, (dst.get(0, l) & 0xffff) | h[0] << 16);
                    } else {
                        // Pairs of channels per register, low half first; an odd last channel
                        // keeps the register's high half.
                        for k in 0..comps.div_ceil(2) {
                            let (a, i) = (h[2 * k as usize], 2 * k + 1);
                            let hi_half = if i < comps { h[i as usize] << 16 } else { dst.get(k as u16, l) & 0xffff_0000 };
                            dst.set(k as u16, l, a | hi_half);
                        }
                    }
                    continue;
                }
            }
        };
        match lds_base {
            Some(base) => {
                // Slots are 4 bytes a lane, 16 for 3- and 4-dword loads (ISA 9.1.9; those
                // exist only on gfx950, but AMD's compiler also accepts the 4-dword global form
                // for gfx942, see ck_tile `async_global_load_lds_dwordxn`).
                let slot = match n {
                    1 => 4,
                    3 | 4 => 16,
                    _ => {
                        return Err(Trouble::new(FaultKind::NotImplemented(format!(
                            "{} with the lds bit: {n} dwords per lane to LDS",
                            inst.op.name()
                        ))));
                    }
                };
                let a = base.wrapping_add(slot * l as u32);
                let bytes: Vec<u8> = dwords[..n as usize].iter().flat_map(|d| d.to_le_bytes()).collect();
                write(w, cx, Target::Lds(a), &bytes, l)?;
                dma.push(LdsLaneAccess { lane: l as u8, part: 0, addr: a, bytes: 4 * n });
            }
            None => {
                for (k, d) in dwords.iter().enumerate().take(n as usize) {
                    dst.set(k as u16, l, *d);
                }
            }
        }
    }
    dst.commit(w, w.exec())?;
    record(cx, Access::Load, &ps);
    if !dma.is_empty() {
        // The LDS side of a load to LDS: not a DS instruction, but its bytes are LDS writes.
        cx.counters.lds.bytes_written += dma.iter().map(|d| d.bytes as u64).sum::<u64>();
    }
    Ok(Flow::Next)
}

/// The LDS byte address of lane 0's slot for a load to (or store from) LDS; lane `l` adds `4 * l`.
fn lds_slot_base(w: &Wave, inst: &Inst) -> u32 {
    let m0 = w.m0();
    match inst.enc {
        // ISA 9.1.9 (CDNA3 width): M0[15:0] is a byte offset; the 12-bit instruction offset also
        // applies.
        Enc::Mubuf => (m0 & 0xffff).wrapping_add(inst.imm as u32 & 0xfff),
        // ISA 10.3: M0[17:2] * 4 (dword aligned), plus the signed instruction offset.
        _ => (m0 & 0x3fffc).wrapping_add(inst.imm as u32),
    }
}

fn store(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, shape: Shape) -> Exec {
    let v = vsharp_of(w, inst)?;
    let bytes = shape_bytes(shape, v.as_ref(), inst)?;
    let ps = targets(w, inst, bytes, false)?;
    for lane in by_lane(&ps) {
        let l = lane[0].lane as usize;
        let mut buf = [0u8; 16];
        match shape {
            Shape::Plain { .. } | Shape::D16 { .. } => {
                for k in 0..bytes.div_ceil(4) {
                    let d = w.vreg_at(inst.src[1], k as u16)?[l];
                    buf[4 * k as usize..4 * k as usize + 4].copy_from_slice(&d.to_le_bytes());
                }
                if matches!(shape, Shape::D16 { hi: true, .. }) {
                    buf.copy_within(2..4, 0);
                }
            }
            Shape::Format { comps, d16, hi } => {
                let v = v.as_ref().expect("MUBUF");
                if v.dfmt == 0 {
                    continue; // unbound: the pieces are all dropped
                }
                let mut ch = [0u32; 4];
                for (c, x) in ch.iter_mut().enumerate().take(comps as usize) {
                    *x = if d16 {
                        let d = w.vreg_at(inst.src[1], (c / 2) as u16)?[l];
                        let half = if hi || c % 2 == 1 { d >> 16 } else { d };
                        buffer::from_d16(v, half as u16)
                    } else {
                        w.vreg_at(inst.src[1], c as u16)?[l]
                    };
                }
                // Only the channels the instruction supplies are written; the element's other
                // bits keep what memory holds.
                let enc = buffer::store_format(v, &ch, inst.op.name())?;
                let mask = buffer::channel_mask(v.dfmt, comps);
                let mut old = [0u8; 16];
                gather(w, cx, lane, &mut old)?;
                for (i, b) in buf.iter_mut().enumerate().take(enc.len()) {
                    let m = (mask >> (8 * i)) as u8;
                    *b = (old[i] & !m) | (enc[i] & m);
                }
            }
        }
        for p in lane {
            write_piece(w, cx, p, &buf[p.at as usize..(p.at + p.len) as usize])?;
        }
    }
    record(cx, Access::Store, &ps);
    Ok(Flow::Next)
}

/// `buffer_store_lds_dword`: each lane's dword comes from LDS at its slot (the load-to-LDS
/// address rule) instead of a VGPR.
fn store_from_lds(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>) -> Exec {
    let ps = targets(w, inst, 4, false)?;
    let base = lds_slot_base(w, inst);
    for lane in by_lane(&ps) {
        let l = lane[0].lane as usize;
        let mut buf = [0u8; 4];
        read(w, cx, Target::Lds(base.wrapping_add(4 * l as u32)), &mut buf, l)?;
        for p in lane {
            write_piece(w, cx, p, &buf[p.at as usize..(p.at + p.len) as usize])?;
        }
    }
    record(cx, Access::Store, &ps);
    Ok(Flow::Next)
}

/// A read-modify-write per active lane, in lane order (the hardware serialises same-address
/// atomics; lane order makes results reproducible). Returns the pre-op value when SC0 is set.
fn atomic(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, op: AtomicOp, wide: bool) -> Exec {
    let bytes = if wide { 8 } else { 4 };
    let ps = targets(w, inst, bytes, true)?;
    let rtn = inst.flags & flags::SC0 != 0;
    let dw = if wide { 2 } else { 1 };
    let lds_unit = Unit::Lds { keep32: w.mode.denorm32, keep16_64: w.mode.denorm16_64 };
    let mut dst = Staged::new(w, if rtn { inst.dst } else { Opnd::NONE }, dw)?;
    for p in &ps {
        let l = p.lane as usize;
        let get = |k: u16| -> Result<u64, FaultKind> {
            let lo = w.vreg_at(inst.src[1], k)?[l] as u64;
            Ok(if wide { lo | (w.vreg_at(inst.src[1], k + 1)?[l] as u64) << 32 } else { lo })
        };
        // Compare-swap data is (new value, compare value) in consecutive registers (ISA
        // BUFFER_ATOMIC_CMPSWAP: DATA[31:0] = src, DATA[63:32] = cmp).
        let data = get(0)?;
        let data2 = if op == AtomicOp::CmpSwap { get(dw)? } else { 0 };
        let (space, addr) = match p.t {
            Target::Global(a) => (Space::Global, a),
            Target::Lds(a) => (Space::Lds, a as u64),
            Target::Scratch { off, .. } => (Space::Scratch, off as u64),
            Target::Dropped => (Space::Global, 0),
        };
        if p.t != Target::Dropped && addr % bytes as u64 != 0 {
            return Err(Trouble::lane(FaultKind::Misaligned { space, addr, align: bytes }, l));
        }
        let old = match p.t {
            Target::Global(a) => {
                let (r, off) = cx.mem.find(a, bytes as u64).ok_or_else(|| oob(Space::Global, a, bytes, l))?;
                let f = |o: u64| op.apply(wide, o, data, data2, Unit::L2);
                if wide { r.rmw_u64(off, f) } else { r.rmw_u32(off, |o| f(o as u64) as u32) as u64 }
            }
            Target::Dropped => 0,
            other => {
                // LDS (through the shared aperture) or the lane's scratch: no other thread
                // touches them concurrently.
                let unit = if matches!(other, Target::Lds(_)) { lds_unit } else { Unit::L2 };
                let mut buf = [0u8; 8];
                read(w, cx, other, &mut buf[..bytes as usize], l)?;
                let old = u64::from_le_bytes(buf);
                let new = op.apply(wide, old, data, data2, unit);
                write(w, cx, other, &new.to_le_bytes()[..bytes as usize], l)?;
                old
            }
        };
        if rtn {
            dst.set(0, l, old as u32);
            if wide {
                dst.set(1, l, (old >> 32) as u32);
            }
        }
    }
    dst.commit(w, w.exec())?;
    record(cx, Access::Atomic, &ps);
    Ok(Flow::Next)
}

/// What a vector memory op does, as its mnemonic says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `*_atomic_*` (`None`: an atomic we do not know).
    Atomic(Option<(AtomicOp, bool)>),
    /// Cache write-back/invalidate.
    Cache,
    /// `buffer_store_lds_dword`.
    StoreLds,
    /// `*_load_*` (`None`: a shape we do not know).
    Load(Option<Shape>),
    /// `*_store_*`.
    Store(Option<Shape>),
    /// Anything else.
    Other,
}

/// The kind of `op` from its mnemonic.
fn classify(op: Op) -> Kind {
    let name = op.name();
    if name.contains("_atomic_") {
        return Kind::Atomic(AtomicOp::from_mnemonic(name));
    }
    match op {
        Op::BufferWbl2 | Op::BufferInv | Op::BufferWbinvl1 | Op::BufferWbinvl1Vol => Kind::Cache,
        Op::BufferStoreLdsDword => Kind::StoreLds,
        _ if name.contains("_load_") => Kind::Load(shape_of(name)),
        _ if name.contains("_store_") => Kind::Store(shape_of(name)),
        _ => Kind::Other,
    }
}

/// Per op: its [`Kind`], and whether it is a format instruction. Worked out once for every op
/// (matching mnemonics on every executed instruction was a few percent of a decode step).
fn kind_of(op: Op) -> (Kind, bool) {
    static KINDS: OnceLock<Vec<(Kind, bool)>> = OnceLock::new();
    KINDS.get_or_init(|| {
        let mut t = vec![(Kind::Other, false); Op::all().len()];
        for &o in Op::all() {
            t[o as usize] = (classify(o), matches!(shape_of(o.name()), Some(Shape::Format { .. })));
        }
        t
    })[op as usize]
}

/// Executes one FLAT/GLOBAL/SCRATCH/MUBUF instruction.
pub(crate) fn exec(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>) -> Exec {
    match kind_of(inst.op).0 {
        Kind::Atomic(Some((op, wide))) => atomic(w, inst, cx, op, wide),
        // Memory is always coherent here.
        Kind::Cache => Ok(Flow::Next),
        Kind::StoreLds => store_from_lds(w, inst, cx),
        Kind::Load(Some(s)) => load(w, inst, cx, s),
        Kind::Store(Some(s)) => store(w, inst, cx, s),
        Kind::Atomic(None) | Kind::Load(None) | Kind::Store(None) | Kind::Other => Err(not_implemented(inst)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct pieces of linear MUBUF lanes against the unit-by-unit loop, over random
    /// resources (bound or not, add_tid, strides, ranges ending inside an access, bases next to
    /// and inside the scratch window, wrapping offsets), addressing modes, sizes and EXEC masks.
    #[test]
    fn linear_mubuf_pieces_match_the_unit_loop() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let accesses = [
            (4, 4, false),
            (8, 4, false),
            (12, 4, false),
            (16, 4, false),
            (1, 1, false),
            (2, 2, false),
            (8, 8, false),
            (8, 8, true),
            (16, 16, true),
        ];
        for round in 0..4000 {
            let mut w = Wave::new(4, 0);
            let base = match next() % 4 {
                0 => 0x1000_0000_0000 + next() % 4096,
                1 => SCRATCH_WINDOW - next() % 64,
                2 => SCRATCH_WINDOW + SCRATCH_WINDOW_SIZE - next() % 64,
                _ => (1 << 48) - 1 - next() % 64,
            };
            let stride = next() % 4 * (next() % 64);
            let words = [
                base as u32,
                (base >> 32) as u32 & 0xffff | (stride as u32) << 16,
                if next() % 8 == 0 { u32::MAX } else { (next() % 6000) as u32 },
                // Random dst_sel/formats/element sizes/add_tid; swizzle stays off in word 1.
                next() as u32,
            ];
            w.s[..4].copy_from_slice(&words);
            w.s[4] = (next() % 300) as u32;
            w.set_exec(if next() % 4 == 0 { u64::MAX } else { next() });
            for r in 0..2 {
                for l in 0..LANES {
                    w.v[r][l] = if next() % 16 == 0 { u32::MAX - (next() % 64) as u32 } else { (next() % 5000) as u32 };
                }
            }
            let (bytes, unit, format) = accesses[round % accesses.len()];
            let (soffset, imm) = (next() % 2 == 0, (next() % 4096) as i32);
            let inst = buffer::mubuf_load(Op::BufferLoadDword, soffset, imm, (next() % 4) as u16 * flags::OFFEN);
            let acc = BufAccess { bytes, unit, format };
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            mubuf_targets(&w, &inst, &acc, &mut fast, true).expect("valid");
            mubuf_targets(&w, &inst, &acc, &mut slow, false).expect("valid");
            let key = |ps: &[Piece]| ps.iter().map(|p| (p.lane, p.at, p.len, p.unit, p.t)).collect::<Vec<_>>();
            assert_eq!(key(&fast), key(&slow), "round {round}: {:?} {bytes}/{unit}", Vsharp::from_words(words));
        }
    }

    #[test]
    fn op_kinds_are_their_mnemonics() {
        for &op in Op::all() {
            assert_eq!(kind_of(op), (classify(op), matches!(shape_of(op.name()), Some(Shape::Format { .. }))), "{}", op.name());
        }
        assert_eq!(kind_of(Op::BufferLoadDwordx4).0, Kind::Load(Some(Shape::Plain { bytes: 16, signed: false })));
        assert_eq!(kind_of(Op::GlobalAtomicAddF32).0, Kind::Atomic(AtomicOp::from_mnemonic("global_atomic_add_f32")));
        assert!(kind_of(Op::BufferStoreFormatXyzw).1);
        assert_eq!(kind_of(Op::BufferInv).0, Kind::Cache);
    }

    #[test]
    fn units_merge_only_when_contiguous_in_one_lane() {
        let mut out = Vec::new();
        // Lane 0: two dwords next to each other in memory merge, a third elsewhere does not.
        push_unit(&mut out, Piece::new(0, 0, 4, Target::Global(0x1000)));
        push_unit(&mut out, Piece::new(0, 4, 4, Target::Global(0x1004)));
        push_unit(&mut out, Piece::new(0, 8, 4, Target::Global(0x2000)));
        // Then a dropped one (not merged with memory), and a second dropped one (merged).
        push_unit(&mut out, Piece::new(0, 12, 4, Target::Dropped));
        // Lane 1 starts its own piece even at the next address.
        push_unit(&mut out, Piece::new(1, 0, 4, Target::Global(0x2004)));
        push_unit(&mut out, Piece::new(1, 4, 4, Target::Dropped));
        push_unit(&mut out, Piece::new(1, 8, 4, Target::Dropped));
        let got: Vec<_> = out.iter().map(|p| (p.lane, p.at, p.len, p.unit, p.t)).collect();
        assert_eq!(
            got,
            [
                (0, 0, 8, 4, Target::Global(0x1000)),
                (0, 8, 4, 4, Target::Global(0x2000)),
                (0, 12, 4, 4, Target::Dropped),
                (1, 0, 4, 4, Target::Global(0x2004)),
                (1, 4, 8, 4, Target::Dropped),
            ]
        );
    }

    #[test]
    fn shapes_from_mnemonics() {
        assert_eq!(shape_of("global_load_dwordx4"), Some(Shape::Plain { bytes: 16, signed: false }));
        assert_eq!(shape_of("buffer_load_sbyte"), Some(Shape::Plain { bytes: 1, signed: true }));
        assert_eq!(shape_of("global_store_short_d16_hi"), Some(Shape::D16 { bytes: 2, signed: false, hi: true }));
        assert_eq!(shape_of("flat_load_ubyte_d16"), Some(Shape::D16 { bytes: 1, signed: false, hi: false }));
        assert_eq!(shape_of("global_load_lds_sshort"), Some(Shape::Plain { bytes: 2, signed: true }));
        assert_eq!(shape_of("scratch_load_lds_dword"), Some(Shape::Plain { bytes: 4, signed: false }));
        assert_eq!(shape_of("buffer_load_format_d16_hi_x"), Some(Shape::Format { comps: 1, d16: true, hi: true }));
        assert_eq!(shape_of("buffer_store_format_xyz"), Some(Shape::Format { comps: 3, d16: false, hi: false }));
        assert_eq!(shape_of("buffer_load_format_d16_xy"), Some(Shape::Format { comps: 2, d16: true, hi: false }));
    }

    #[test]
    fn every_gfx942_vector_memory_op_has_a_meaning() {
        // Each FLAT/GLOBAL/SCRATCH/MUBUF mnemonic maps to a shape, an atomic, or a cache op.
        for op in Op::all() {
            let n = op.name();
            let vm = ["flat_", "global_", "scratch_", "buffer_"].iter().any(|p| n.starts_with(p));
            if !vm {
                continue;
            }
            let known = AtomicOp::from_mnemonic(n).is_some()
                || shape_of(n).is_some()
                || matches!(op, Op::BufferWbl2 | Op::BufferInv | Op::BufferWbinvl1 | Op::BufferWbinvl1Vol | Op::BufferStoreLdsDword);
            assert!(known, "{n} has no meaning in vmem");
        }
    }

    #[test]
    fn atomic_detection_covers_scalar_atomics() {
        let mut inst = Inst {
            op: Op::SAtomicAdd,
            enc: Enc::Smem,
            size: 8,
            dst: Opnd::NONE,
            sdst: Opnd::NONE,
            src: [Opnd::NONE; 4],
            literal: 0,
            imm: 0,
            mods: Default::default(),
            ext: Default::default(),
            flags: 0,
        };
        assert!(is_atomic(&inst));
        inst.op = Op::DsAddU32;
        inst.enc = Enc::Ds;
        assert!(!is_atomic(&inst));
        inst.op = Op::GlobalAtomicPkAddBf16;
        inst.enc = Enc::Global;
        assert!(is_atomic(&inst));
    }
}
