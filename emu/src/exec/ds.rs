//! LDS instructions (DS): loads, stores, two-address forms, atomics, append/consume, and the
//! LDS-crossbar lane permutes (swizzle, permute, bpermute).
//!
//! Addresses are byte offsets into the workgroup's LDS (static + launch-sized); an access past its
//! end is a fault naming the lane and address (the ISA leaves it to the program to stay inside
//! the allocation). Semantics follow the CDNA ISA guide's LDS chapter (11.3) and DS pseudocode
//! (12.12), read in the CDNA4 edition (gfx942 has the same DS opcodes, without the transpose
//! loads):
//! - single-address forms add the 16-bit offset `{offset1, offset0}`;
//! - two-address forms add `offset0`/`offset1` times the element size (4 for b32, 8 for b64),
//!   times 64 more for `st64` (256 and 512 bytes). When both offsets are equal only one access
//!   happens and only DATA0 is used (11.3.3: "Specify only one address by setting both offsets
//!   to the same value");
//! - `ds_read_addtid_b32`/`ds_write_addtid_b32` address `{offset1, offset0} + M0[15:0] + 4 *
//!   lane` and have no address VGPR;
//! - `ds_append`/`ds_consume` add/subtract the number of active lanes to the dword at
//!   `M0[15:0] + offset` and return its old value to every active lane (LLVM selects them with
//!   the LDS pointer in M0, `AMDGPUDAGToDAGISel::SelectDSAppendConsume`);
//! - M0 does not clamp LDS addresses: the guide (table 57) still describes an M0 size limit, but
//!   LLVM stopped initialising M0 for DS instructions on GFX9 (`ldsRequiresM0Init`), so the
//!   clamp cannot be in effect there.
//!
//! Accesses need not be aligned (ROCm runs gfx9 in unaligned mode, LLVM's `unaligned-ds-access`);
//! atomics must be naturally aligned and fault otherwise. Lanes run in lane order, so atomics to
//! one address are applied lane 0 first.

use super::atomic::{AtomicOp, Unit};
use super::counters::{LdsLaneAccess, LdsOp};
use super::error::{FaultKind, Space};
use super::staged::Staged;
use super::step::{Ctx, Exec, Flow, Trouble, not_implemented};
use super::wave::{LANES, VReg, Wave, ZERO_VREG};
use crate::isa::{Inst, Op, Opnd, flags};

fn lds_range(cx: &Ctx<'_, '_>, addr: u32, n: u32, lane: usize) -> Result<usize, Trouble> {
    let end = addr as u64 + n as u64;
    if end > cx.lds.len() as u64 {
        return Err(Trouble::lane(FaultKind::OutOfBounds { space: Space::Lds, addr: addr as u64, size: n }, lane));
    }
    Ok(addr as usize)
}

fn read_lds(cx: &Ctx<'_, '_>, addr: u32, out: &mut [u8], lane: usize) -> Result<(), Trouble> {
    let a = lds_range(cx, addr, out.len() as u32, lane)?;
    copy_small(out, &cx.lds[a..a + out.len()]);
    Ok(())
}

fn write_lds(cx: &mut Ctx<'_, '_>, addr: u32, data: &[u8], lane: usize) -> Result<(), Trouble> {
    let a = lds_range(cx, addr, data.len() as u32, lane)?;
    copy_small(&mut cx.lds[a..a + data.len()], data);
    Ok(())
}

/// `dst.copy_from_slice(src)` with the sizes lanes move (4, 8, 16 bytes) as fixed-size copies:
/// a copy of a run-time length is a call to memmove, measured at ~5% of a model decode step.
#[inline(always)]
fn copy_small(dst: &mut [u8], src: &[u8]) {
    match (dst.len(), src.len()) {
        (4, 4) => dst.copy_from_slice(&<[u8; 4]>::try_from(src).expect("4 bytes")),
        (8, 8) => dst.copy_from_slice(&<[u8; 8]>::try_from(src).expect("8 bytes")),
        (16, 16) => dst.copy_from_slice(&<[u8; 16]>::try_from(src).expect("16 bytes")),
        _ => dst.copy_from_slice(src),
    }
}

fn uint_at(cx: &Ctx<'_, '_>, addr: u32, bytes: u32, lane: usize) -> Result<u64, Trouble> {
    let mut b = [0u8; 8];
    read_lds(cx, addr, &mut b[..bytes as usize], lane)?;
    Ok(u64::from_le_bytes(b))
}

/// The lanes set in `exec`, in order.
fn active(exec: u64) -> impl Iterator<Item = usize> {
    (0..LANES).filter(move |l| exec >> l & 1 == 1)
}

/// The per-lane base address (the ADDR VGPR).
fn base(w: &Wave, inst: &Inst) -> Result<VReg, FaultKind> {
    Ok(*w.vreg(inst.src[0])?)
}

/// The 16-bit offset of single-address forms.
fn offset16(inst: &Inst) -> u32 {
    (inst.imm & 0xffff) as u32
}

/// A 32- or 64-bit data operand (0 when absent).
fn data64(w: &Wave, op: Opnd, wide: bool, l: usize) -> Result<u64, FaultKind> {
    if op.is_none() {
        return Ok(0);
    }
    let lo = w.vreg(op)?[l] as u64;
    Ok(if wide { lo | (w.vreg_at(op, 1)?[l] as u64) << 32 } else { lo })
}

/// How a single-address load of 1 or 2 bytes fills its destination (whole dwords:
/// [`load_dwords`]).
#[derive(Clone, Copy)]
enum Widen {
    /// Zero-extend to 32 bits.
    Zext,
    /// Sign-extend to 32 bits.
    Sext,
    /// Into the low 16 bits, keep the high 16 (d16); the flag sign-extends bytes.
    D16Lo(bool),
    /// Into the high 16 bits, keep the low 16 (d16_hi); the flag sign-extends bytes.
    D16Hi(bool),
}

fn mask(bytes: u32) -> u32 {
    if bytes >= 4 { u32::MAX } else { (1 << (8 * bytes)) - 1 }
}

fn sext(v: u32, bytes: u32) -> u32 {
    let sh = 32 - 8 * bytes.min(4);
    (((v << sh) as i32) >> sh) as u32
}

/// Where lane `l` of a single-address load/store goes: ADDR + offset, or for the addtid forms
/// offset + M0[15:0] + 4 * lane.
fn single_addr(w: &Wave, inst: &Inst, base: Option<&VReg>, l: usize) -> u32 {
    match base {
        Some(b) => b[l].wrapping_add(offset16(inst)),
        None => offset16(inst).wrapping_add(w.m0() & 0xffff).wrapping_add(4 * l as u32),
    }
}

/// A single-address load of a byte or a half into (part of) a dword.
fn load(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, bytes: u32, widen: Widen) -> Exec {
    let b = base(w, inst)?;
    let mut acc = Vec::with_capacity(LANES);
    let mut dst = Staged::new(w, inst.dst, bytes.div_ceil(4) as u16)?;
    for l in active(w.exec()) {
        let a = single_addr(w, inst, Some(&b), l);
        acc.push(LdsLaneAccess { lane: l as u8, part: 0, addr: a, bytes });
        let mut buf = [0u8; 16];
        read_lds(cx, a, &mut buf[..bytes as usize], l)?;
        let raw = u32::from_le_bytes(buf[..4].try_into().expect("4"));
        match widen {
            Widen::Zext => dst.set(0, l, raw & mask(bytes)),
            Widen::Sext => dst.set(0, l, sext(raw, bytes)),
            Widen::D16Lo(s) | Widen::D16Hi(s) => {
                let v = if s { sext(raw, bytes) } else { raw & mask(bytes) } & 0xffff;
                let old = dst.get(0, l);
                let new = if matches!(widen, Widen::D16Hi(_)) { (old & 0xffff) | v << 16 } else { (old & 0xffff_0000) | v };
                dst.set(0, l, new);
            }
        }
    }
    dst.commit(w, w.exec())?;
    cx.counters.lds_access(LdsOp::read(bytes), &acc);
    Ok(Flow::Next)
}

/// A single-address load of whole dwords (`ds_read_b32` .. `ds_read_b128`, most LDS reads):
/// straight into arrays of registers and accesses on the stack, without staging the old
/// register values (no lane keeps any part of them). The same results, faults (the destination
/// checked first, then the lanes in order) and counters.
fn load_dwords<const N: usize>(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>) -> Exec {
    // (N a constant: each lane's dwords are one bounds-checked slice and an unrolled copy.)
    let bytes = 4 * N as u32;
    // The ADDR register by reference (a copy of it was 256 bytes per instruction).
    let b = if inst.op == Op::DsReadAddtidB32 { None } else { Some(w.vreg(inst.src[0])?) };
    w.vreg_at(inst.dst, N as u16 - 1)?;
    let exec = w.exec();
    // The accesses are listed only when counted in full (lean: the bytes alone).
    let mut acc = if cx.counters.is_lean() { None } else { Some([LdsLaneAccess { lane: 0, part: 0, addr: 0, bytes }; LANES]) };
    let mut m = 0;
    let mut data = [[0u32; LANES]; N];
    for l in active(exec) {
        let a = single_addr(w, inst, b, l);
        let at = lds_range(cx, a, bytes, l)?;
        let src = &cx.lds[at..at + 4 * N];
        for (k, d) in data.iter_mut().enumerate() {
            d[l] = u32::from_le_bytes([src[4 * k], src[4 * k + 1], src[4 * k + 2], src[4 * k + 3]]);
        }
        if let Some(acc) = acc.as_mut() {
            acc[m] = LdsLaneAccess { lane: l as u8, part: 0, addr: a, bytes };
        }
        m += 1;
    }
    for (k, d) in data.iter().enumerate() {
        w.write_v32(Opnd(inst.dst.0 + k as u16), exec, d)?;
    }
    match acc {
        Some(acc) => cx.counters.lds_access(LdsOp::read(bytes), &acc[..m]),
        None => cx.counters.lds_traffic(LdsOp::read(bytes), m as u64 * bytes as u64),
    }
    Ok(Flow::Next)
}

/// Single-address store of `bytes` from DATA0; `hi16` stores from the high half of the dword.
fn store(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, bytes: u32, hi16: bool) -> Exec {
    let addtid = inst.op == Op::DsWriteAddtidB32;
    let b = if addtid { None } else { Some(w.vreg(inst.src[0])?) };
    let exec = w.exec();
    // The data registers, looked up once (where the first active lane would look them up).
    let data = if exec != 0 { data_regs(w, inst.src[1], bytes.div_ceil(4))? } else { [&ZERO_VREG; 4] };
    // The accesses are listed only when counted in full (lean: the bytes alone).
    let mut acc = if cx.counters.is_lean() { None } else { Some([LdsLaneAccess { lane: 0, part: 0, addr: 0, bytes }; LANES]) };
    let mut m = 0;
    for l in active(exec) {
        let a = single_addr(w, inst, b, l);
        if let Some(acc) = acc.as_mut() {
            acc[m] = LdsLaneAccess { lane: l as u8, part: 0, addr: a, bytes };
        }
        m += 1;
        let mut buf = lane_bytes(&data, l);
        if hi16 {
            buf.copy_within(2..4, 0);
        }
        write_lds(cx, a, &buf[..bytes as usize], l)?;
    }
    match acc {
        Some(acc) => cx.counters.lds_access(LdsOp::write(bytes), &acc[..m]),
        None => cx.counters.lds_traffic(LdsOp::write(bytes), m as u64 * bytes as u64),
    }
    Ok(Flow::Next)
}

/// The `n` (at most 4) consecutive data registers from `op`; the rest are [`ZERO_VREG`].
fn data_regs(w: &Wave, op: Opnd, n: u32) -> Result<[&VReg; 4], FaultKind> {
    let mut regs = [&ZERO_VREG; 4];
    for (k, r) in regs.iter_mut().enumerate().take(n as usize) {
        *r = w.vreg_at(op, k as u16)?;
    }
    Ok(regs)
}

/// Lane `l` of [`data_regs`] as little-endian bytes.
#[inline]
fn lane_bytes(regs: &[&VReg; 4], l: usize) -> [u8; 16] {
    let mut d = [0u8; 16];
    for (k, r) in regs.iter().enumerate() {
        d[4 * k..4 * k + 4].copy_from_slice(&r[l].to_le_bytes());
    }
    d
}

/// The two addresses of a two-address form with elements of `size` bytes (4 or 8), offsets
/// scaled by `size * stride` (stride 1, or 64 for st64). `None` for the second when the
/// offsets are equal (one access only).
fn two_addrs(inst: &Inst, base: u32, size: u32, stride: u32) -> (u32, Option<u32>) {
    let (o0, o1) = ((inst.imm & 0xff) as u32, ((inst.imm >> 8) & 0xff) as u32);
    let a0 = base.wrapping_add(o0 * size * stride);
    let a1 = base.wrapping_add(o1 * size * stride);
    (a0, if o0 == o1 { None } else { Some(a1) })
}

/// `read2`/`write2` (and their st64 forms).
fn two(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, size: u32, stride: u32, is_store: bool) -> Exec {
    let b = base(w, inst)?;
    let dw = (size / 4) as u16;
    let exec = w.exec();
    let mut acc = [LdsLaneAccess { lane: 0, part: 0, addr: 0, bytes: size }; 2 * LANES];
    let mut m = 0;
    let mut dst = Staged::new(w, if is_store { Opnd::NONE } else { inst.dst }, 2 * dw)?;
    // The data registers, looked up once, where the first active lane would look them up
    // (the second after the first lane's first write).
    let data0 = if is_store && exec != 0 { data_regs(w, inst.src[1], dw as u32)? } else { [&ZERO_VREG; 4] };
    let mut data1 = None;
    for l in active(exec) {
        let (a0, a1) = two_addrs(inst, b[l], size, stride);
        acc[m] = LdsLaneAccess { lane: l as u8, part: 0, addr: a0, bytes: size };
        m += 1;
        if let Some(a1) = a1 {
            acc[m] = LdsLaneAccess { lane: l as u8, part: 1, addr: a1, bytes: size };
            m += 1;
        }
        if is_store {
            write_lds(cx, a0, &lane_bytes(&data0, l)[..size as usize], l)?;
            if let Some(a1) = a1 {
                let d1 = match data1 {
                    Some(d) => d,
                    None => *data1.insert(data_regs(w, inst.src[2], dw as u32)?),
                };
                write_lds(cx, a1, &lane_bytes(&d1, l)[..size as usize], l)?;
            }
        } else {
            for (i, a) in [a0, a1.unwrap_or(a0)].into_iter().enumerate() {
                let v = uint_at(cx, a, size, l)?;
                for k in 0..dw {
                    dst.set(i as u16 * dw + k, l, (v >> (32 * k)) as u32);
                }
            }
        }
    }
    dst.commit(w, exec)?;
    let op = if is_store { LdsOp::write(size) } else { LdsOp::read(size) };
    cx.counters.lds_access(op, &acc[..m]);
    Ok(Flow::Next)
}

/// `ds_wrxchg2[st64]_rtn_b{32,64}`: swap DATA0 and DATA1 with two locations, return both old
/// values.
fn wrxchg2(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, size: u32, stride: u32) -> Exec {
    let b = base(w, inst)?;
    let (wide, dw) = (size == 8, (size / 4) as u16);
    let mut acc = Vec::with_capacity(2 * LANES);
    let mut dst = Staged::new(w, inst.dst, 2 * dw)?;
    for l in active(w.exec()) {
        let (a0, a1) = two_addrs(inst, b[l], size, stride);
        for (i, a) in [Some(a0), a1].into_iter().enumerate() {
            let Some(a) = a else { continue };
            check_aligned(a, size, l)?;
            acc.push(LdsLaneAccess { lane: l as u8, part: i as u8, addr: a, bytes: size });
        }
        let t0 = uint_at(cx, a0, size, l)?;
        let t1 = match a1 {
            Some(a1) => uint_at(cx, a1, size, l)?,
            None => t0,
        };
        write_lds(cx, a0, &data64(w, inst.src[1], wide, l)?.to_le_bytes()[..size as usize], l)?;
        if let Some(a1) = a1 {
            write_lds(cx, a1, &data64(w, inst.src[2], wide, l)?.to_le_bytes()[..size as usize], l)?;
        }
        for (i, t) in [t0, t1].into_iter().enumerate() {
            for k in 0..dw {
                dst.set(i as u16 * dw + k, l, (t >> (32 * k)) as u32);
            }
        }
    }
    dst.commit(w, w.exec())?;
    cx.counters.lds_access(LdsOp::atomic(size), &acc);
    Ok(Flow::Next)
}

fn check_aligned(a: u32, size: u32, l: usize) -> Result<(), Trouble> {
    if !a.is_multiple_of(size) {
        return Err(Trouble::lane(FaultKind::Misaligned { space: Space::Lds, addr: a as u64, align: size }, l));
    }
    Ok(())
}

/// Which data operand feeds which input of an [`AtomicOp`].
#[derive(Clone, Copy)]
enum Operands {
    /// `op(old, DATA0, DATA1)`.
    Straight,
    /// Compare-store: DATA0 is the compare value, DATA1 the new value (the reverse of
    /// BUFFER_ATOMIC_CMPSWAP's order, as the guide warns).
    CmpStore,
}

/// A 32- or 64-bit atomic; the `rtn` forms return the old value.
fn atomic(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, op: AtomicOp, wide: bool, ops: Operands) -> Exec {
    let b = base(w, inst)?;
    let rtn = inst.op.name().contains("_rtn_");
    let size = if wide { 8 } else { 4 };
    let unit = Unit::Lds { keep32: w.mode.denorm32, keep16_64: w.mode.denorm16_64 };
    let mut acc = Vec::with_capacity(LANES);
    let mut dst = Staged::new(w, if rtn { inst.dst } else { Opnd::NONE }, if wide { 2 } else { 1 })?;
    for l in active(w.exec()) {
        let a = b[l].wrapping_add(offset16(inst));
        check_aligned(a, size, l)?;
        acc.push(LdsLaneAccess { lane: l as u8, part: 0, addr: a, bytes: size });
        let d0 = data64(w, inst.src[1], wide, l)?;
        let d1 = data64(w, inst.src[2], wide, l)?;
        let (data, data2) = match ops {
            Operands::Straight => (d0, d1),
            Operands::CmpStore => (d1, d0),
        };
        let old = uint_at(cx, a, size, l)?;
        let new = op.apply(wide, old, data, data2, unit);
        write_lds(cx, a, &new.to_le_bytes()[..size as usize], l)?;
        if rtn {
            dst.set(0, l, old as u32);
            if wide {
                dst.set(1, l, (old >> 32) as u32);
            }
        }
    }
    dst.commit(w, w.exec())?;
    cx.counters.lds_access(LdsOp::atomic(size), &acc);
    Ok(Flow::Next)
}

/// `ds_condxchg32_rtn_b64` (ISA pseudocode): two conditional 32-bit writes at an 8-byte
/// aligned address, each done when bit 31 of its data half is set (writing the low 31 bits);
/// both old dwords are returned.
fn condxchg32(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>) -> Exec {
    let b = base(w, inst)?;
    let mut acc = Vec::with_capacity(LANES);
    let mut dst = Staged::new(w, inst.dst, 2)?;
    for l in active(w.exec()) {
        // The ISA masks the address to 16 bits and 8-byte alignment.
        let a0 = b[l].wrapping_add(offset16(inst)) & 0xfff8;
        acc.push(LdsLaneAccess { lane: l as u8, part: 0, addr: a0, bytes: 8 });
        let data = data64(w, inst.src[1], true, l)?;
        for (k, half) in [data as u32, (data >> 32) as u32].into_iter().enumerate() {
            let a = a0 + 4 * k as u32;
            let old = uint_at(cx, a, 4, l)? as u32;
            if half >> 31 == 1 {
                write_lds(cx, a, &(half & 0x7fff_ffff).to_le_bytes(), l)?;
            }
            dst.set(k as u16, l, old);
        }
    }
    dst.commit(w, w.exec())?;
    cx.counters.lds_access(LdsOp::atomic(8), &acc);
    Ok(Flow::Next)
}

/// `ds_append` / `ds_consume`: one update of the dword at `M0[15:0] + offset` by the number of
/// active lanes; every active lane gets the old value.
fn append(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, consume: bool) -> Exec {
    let exec = w.exec();
    if exec == 0 {
        return Ok(Flow::Next);
    }
    let a = (w.m0() & 0xffff).wrapping_add(offset16(inst));
    let first = exec.trailing_zeros() as usize;
    check_aligned(a, 4, first)?;
    let old = uint_at(cx, a, 4, first)? as u32;
    let n = exec.count_ones();
    let new = if consume { old.wrapping_sub(n) } else { old.wrapping_add(n) };
    write_lds(cx, a, &new.to_le_bytes(), first)?;
    w.write_v32(inst.dst, exec, &[old; LANES])?;
    cx.counters.lds_access(LdsOp::atomic(4), &[LdsLaneAccess { lane: first as u8, part: 0, addr: a, bytes: 4 }]);
    Ok(Flow::Next)
}

/// `ds_swizzle_b32` source lane for `lane` under the 16-bit pattern (ISA pseudocode): FFT
/// (>= 0xe000), rotate (>= 0xc000), quad permute (bit 15), or and/or/xor masks within 32 lanes.
pub(crate) fn swizzle_source(pattern: u32, lane: usize) -> usize {
    let i = lane as u32;
    let j = if pattern >= 0xe000 {
        let m = pattern & 0x1f;
        let mut j = (i & 0x1f).reverse_bits() >> 27;
        j >>= m.count_ones();
        j | (i & m) | (i & 0x20)
    } else if pattern >= 0xc000 {
        let (m, r) = (pattern & 0x1f, (pattern >> 5) & 0x1f);
        let rot = if pattern & 0x400 != 0 { i.wrapping_sub(r) } else { i.wrapping_add(r) };
        ((i & m) | (rot & !m)) & 0x1f | (i & 0x20)
    } else if pattern & 0x8000 != 0 {
        let q = i % 4;
        i - q + ((pattern >> (2 * q)) & 3)
    } else {
        let (and, or, xor) = (pattern & 0x1f, (pattern >> 5) & 0x1f, (pattern >> 10) & 0x1f);
        ((((i & 0x1f) & and) | or) ^ xor) | (i & 0x20)
    };
    j as usize % LANES
}

fn swizzle(w: &mut Wave, inst: &Inst) -> Exec {
    let exec = w.exec();
    let src = *w.vreg(inst.src[0])?;
    let mut out = [0u32; LANES];
    for (l, o) in out.iter_mut().enumerate() {
        let s = swizzle_source(offset16(inst), l);
        *o = if exec >> s & 1 == 1 { src[s] } else { 0 };
    }
    w.write_v32(inst.dst, exec, &out)?;
    Ok(Flow::Next)
}

/// `ds_permute_b32` (forward: lane l sends DATA0 to lane addr/4; the highest sender wins) and
/// `ds_bpermute_b32` (backward: lane l reads lane addr/4, 0 from an inactive lane). No LDS
/// memory is touched.
fn permute(w: &mut Wave, inst: &Inst, backward: bool) -> Exec {
    let (b, exec) = (base(w, inst)?, w.exec());
    let off = offset16(inst);
    let src = *w.vreg(inst.src[1])?;
    let lane_of = |l: usize| (b[l].wrapping_add(off) / 4 % 64) as usize;
    let mut out = [0u32; LANES];
    if backward {
        for (l, o) in out.iter_mut().enumerate() {
            let s = lane_of(l);
            *o = if exec >> s & 1 == 1 { src[s] } else { 0 };
        }
    } else {
        for l in (0..LANES).filter(|l| exec >> l & 1 == 1) {
            out[lane_of(l)] = src[l];
        }
    }
    w.write_v32(inst.dst, exec, &out)?;
    Ok(Flow::Next)
}

/// Executes one DS instruction.
pub(crate) fn exec(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>) -> Exec {
    use AtomicOp as A;
    use Op::*;
    use Operands::{CmpStore, Straight};
    if let DsGwsInit | DsGwsSemaV | DsGwsSemaBr | DsGwsSemaP | DsGwsSemaReleaseAll | DsGwsBarrier = inst.op {
        return Err(Trouble::new(FaultKind::NotImplemented(format!(
            "{}: global wave sync needs GDS resources, which the emulator (like ROCm's HIP runtime for gfx942 \
             kernels) does not provide",
            inst.op.name()
        ))));
    }
    if inst.flags & flags::GDS != 0 {
        return Err(Trouble::new(FaultKind::NotImplemented(format!("{} with gds (no GDS on gfx942 kernels)", inst.op.name()))));
    }
    let op = inst.op;
    match op {
        DsNop => Ok(Flow::Next),
        DsReadB32 | DsReadAddtidB32 => load_dwords::<1>(w, inst, cx),
        DsReadB64 => load_dwords::<2>(w, inst, cx),
        DsReadB96 => load_dwords::<3>(w, inst, cx),
        DsReadB128 => load_dwords::<4>(w, inst, cx),
        DsReadU8 => load(w, inst, cx, 1, Widen::Zext),
        DsReadI8 => load(w, inst, cx, 1, Widen::Sext),
        DsReadU16 => load(w, inst, cx, 2, Widen::Zext),
        DsReadI16 => load(w, inst, cx, 2, Widen::Sext),
        DsReadU8D16 => load(w, inst, cx, 1, Widen::D16Lo(false)),
        DsReadI8D16 => load(w, inst, cx, 1, Widen::D16Lo(true)),
        DsReadU16D16 => load(w, inst, cx, 2, Widen::D16Lo(false)),
        DsReadU8D16Hi => load(w, inst, cx, 1, Widen::D16Hi(false)),
        DsReadI8D16Hi => load(w, inst, cx, 1, Widen::D16Hi(true)),
        DsReadU16D16Hi => load(w, inst, cx, 2, Widen::D16Hi(false)),
        DsRead2B32 => two(w, inst, cx, 4, 1, false),
        DsRead2B64 => two(w, inst, cx, 8, 1, false),
        DsRead2st64B32 => two(w, inst, cx, 4, 64, false),
        DsRead2st64B64 => two(w, inst, cx, 8, 64, false),
        DsWriteB8 => store(w, inst, cx, 1, false),
        DsWriteB16 => store(w, inst, cx, 2, false),
        DsWriteB32 | DsWriteAddtidB32 => store(w, inst, cx, 4, false),
        DsWriteB64 => store(w, inst, cx, 8, false),
        DsWriteB96 => store(w, inst, cx, 12, false),
        DsWriteB128 => store(w, inst, cx, 16, false),
        DsWriteB8D16Hi => store(w, inst, cx, 1, true),
        DsWriteB16D16Hi => store(w, inst, cx, 2, true),
        DsWrite2B32 => two(w, inst, cx, 4, 1, true),
        DsWrite2B64 => two(w, inst, cx, 8, 1, true),
        DsWrite2st64B32 => two(w, inst, cx, 4, 64, true),
        DsWrite2st64B64 => two(w, inst, cx, 8, 64, true),
        DsWrxchg2RtnB32 => wrxchg2(w, inst, cx, 4, 1),
        DsWrxchg2RtnB64 => wrxchg2(w, inst, cx, 8, 1),
        DsWrxchg2st64RtnB32 => wrxchg2(w, inst, cx, 4, 64),
        DsWrxchg2st64RtnB64 => wrxchg2(w, inst, cx, 8, 64),

        // 32-bit atomics.
        DsAddU32 | DsAddRtnU32 => atomic(w, inst, cx, A::Add, false, Straight),
        DsSubU32 | DsSubRtnU32 => atomic(w, inst, cx, A::Sub, false, Straight),
        DsRsubU32 | DsRsubRtnU32 => atomic(w, inst, cx, A::Rsub, false, Straight),
        DsIncU32 | DsIncRtnU32 => atomic(w, inst, cx, A::Inc, false, Straight),
        DsDecU32 | DsDecRtnU32 => atomic(w, inst, cx, A::Dec, false, Straight),
        DsMinI32 | DsMinRtnI32 => atomic(w, inst, cx, A::SMin, false, Straight),
        DsMaxI32 | DsMaxRtnI32 => atomic(w, inst, cx, A::SMax, false, Straight),
        DsMinU32 | DsMinRtnU32 => atomic(w, inst, cx, A::UMin, false, Straight),
        DsMaxU32 | DsMaxRtnU32 => atomic(w, inst, cx, A::UMax, false, Straight),
        DsAndB32 | DsAndRtnB32 => atomic(w, inst, cx, A::And, false, Straight),
        DsOrB32 | DsOrRtnB32 => atomic(w, inst, cx, A::Or, false, Straight),
        DsXorB32 | DsXorRtnB32 => atomic(w, inst, cx, A::Xor, false, Straight),
        DsMskorB32 | DsMskorRtnB32 => atomic(w, inst, cx, A::MskOr, false, Straight),
        DsWrxchgRtnB32 => atomic(w, inst, cx, A::Swap, false, Straight),
        DsWrapRtnB32 => atomic(w, inst, cx, A::Wrap, false, Straight),
        DsCmpstB32 | DsCmpstRtnB32 => atomic(w, inst, cx, A::CmpSwap, false, CmpStore),
        DsCmpstF32 | DsCmpstRtnF32 => atomic(w, inst, cx, A::CmpSwapF32, false, CmpStore),
        DsAddF32 | DsAddRtnF32 => atomic(w, inst, cx, A::AddF32, false, Straight),
        DsMinF32 | DsMinRtnF32 => atomic(w, inst, cx, A::MinF32, false, Straight),
        DsMaxF32 | DsMaxRtnF32 => atomic(w, inst, cx, A::MaxF32, false, Straight),
        DsPkAddF16 | DsPkAddRtnF16 => atomic(w, inst, cx, A::PkAddF16, false, Straight),
        DsPkAddBf16 | DsPkAddRtnBf16 => atomic(w, inst, cx, A::PkAddBf16, false, Straight),

        // 64-bit atomics.
        DsAddU64 | DsAddRtnU64 => atomic(w, inst, cx, A::Add, true, Straight),
        DsSubU64 | DsSubRtnU64 => atomic(w, inst, cx, A::Sub, true, Straight),
        DsRsubU64 | DsRsubRtnU64 => atomic(w, inst, cx, A::Rsub, true, Straight),
        DsIncU64 | DsIncRtnU64 => atomic(w, inst, cx, A::Inc, true, Straight),
        DsDecU64 | DsDecRtnU64 => atomic(w, inst, cx, A::Dec, true, Straight),
        DsMinI64 | DsMinRtnI64 => atomic(w, inst, cx, A::SMin, true, Straight),
        DsMaxI64 | DsMaxRtnI64 => atomic(w, inst, cx, A::SMax, true, Straight),
        DsMinU64 | DsMinRtnU64 => atomic(w, inst, cx, A::UMin, true, Straight),
        DsMaxU64 | DsMaxRtnU64 => atomic(w, inst, cx, A::UMax, true, Straight),
        DsAndB64 | DsAndRtnB64 => atomic(w, inst, cx, A::And, true, Straight),
        DsOrB64 | DsOrRtnB64 => atomic(w, inst, cx, A::Or, true, Straight),
        DsXorB64 | DsXorRtnB64 => atomic(w, inst, cx, A::Xor, true, Straight),
        DsMskorB64 | DsMskorRtnB64 => atomic(w, inst, cx, A::MskOr, true, Straight),
        DsWrxchgRtnB64 => atomic(w, inst, cx, A::Swap, true, Straight),
        DsCmpstB64 | DsCmpstRtnB64 => atomic(w, inst, cx, A::CmpSwap, true, CmpStore),
        DsCmpstF64 | DsCmpstRtnF64 => atomic(w, inst, cx, A::CmpSwapF64, true, CmpStore),
        DsAddF64 | DsAddRtnF64 => atomic(w, inst, cx, A::AddF64, true, Straight),
        DsMinF64 | DsMinRtnF64 => atomic(w, inst, cx, A::MinF64, true, Straight),
        DsMaxF64 | DsMaxRtnF64 => atomic(w, inst, cx, A::MaxF64, true, Straight),
        DsCondxchg32RtnB64 => condxchg32(w, inst, cx),

        DsAppend => append(w, inst, cx, false),
        DsConsume => append(w, inst, cx, true),
        DsSwizzleB32 => swizzle(w, inst),
        DsPermuteB32 => permute(w, inst, false),
        DsBpermuteB32 => permute(w, inst, true),
        _ => Err(not_implemented(inst)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swizzle_patterns() {
        // swap adjacent lanes: xor 1
        let p = 1 << 10 | 0x1f;
        assert_eq!(swizzle_source(p, 0), 1);
        assert_eq!(swizzle_source(p, 33), 32);
        // broadcast lane 0 of each 32-lane half: and 0
        assert_eq!(swizzle_source(0, 45), 32);
        // quad reverse
        assert_eq!(swizzle_source(0x8000 | 0b00_01_10_11, 1), 2);
        assert_eq!(sext(0x80, 1), 0xffff_ff80);
        assert_eq!(sext(0x7fff, 2), 0x7fff);
    }

    #[test]
    fn swizzle_rotate_and_fft_modes() {
        // Rotate left by 1 within 32 lanes (the guide's example: thread 0 gets thread 1, 31
        // gets 0), right by 1 (0 gets 31), both per half.
        let left = 0xc000 | 1 << 5;
        assert_eq!(swizzle_source(left, 0), 1);
        assert_eq!(swizzle_source(left, 31), 0);
        assert_eq!(swizzle_source(left, 63), 32);
        let right = left | 0x400;
        assert_eq!(swizzle_source(right, 0), 31);
        assert_eq!(swizzle_source(right, 33), 32);
        // Rotate with mask 1 keeps bit 0: the guide's "swap odd threads across every other even".
        let masked = 0xc000 | 1 << 5 | 1;
        assert_eq!((0..4).map(|l| swizzle_source(masked, l)).collect::<Vec<_>>(), [0, 3, 2, 5]);
        // FFT mask 0x1f is the identity; mask 0 is a bit reversal (the guide's first row begins
        // 1, 0x11, 9, 0x19 in 1-based lane numbers).
        assert!((0..64).all(|l| swizzle_source(0xe000 | 0x1f, l) == l));
        assert_eq!((0..4).map(|l| swizzle_source(0xe000, l)).collect::<Vec<_>>(), [0, 16, 8, 24]);
        // Mask 0x10: the guide's second row begins 1, 9, 5, 0xd.
        assert_eq!((0..4).map(|l| swizzle_source(0xe010, l)).collect::<Vec<_>>(), [0, 8, 4, 12]);
    }

    #[test]
    fn two_address_offsets_scale_by_element_and_st64() {
        let mut inst = Inst {
            op: Op::DsRead2B64,
            enc: crate::isa::Enc::Ds,
            size: 8,
            dst: Opnd::NONE,
            sdst: Opnd::NONE,
            src: [Opnd::NONE; 4],
            literal: 0,
            imm: 3 | 5 << 8,
            mods: Default::default(),
            ext: Default::default(),
            flags: 0,
        };
        assert_eq!(two_addrs(&inst, 100, 8, 1), (124, Some(140)));
        assert_eq!(two_addrs(&inst, 100, 4, 1), (112, Some(120)));
        assert_eq!(two_addrs(&inst, 0, 4, 64), (3 * 256, Some(5 * 256)));
        assert_eq!(two_addrs(&inst, 0, 8, 64), (3 * 512, Some(5 * 512)));
        inst.imm = 7 | 7 << 8;
        assert_eq!(two_addrs(&inst, 0, 4, 1), (28, None));
    }
}
