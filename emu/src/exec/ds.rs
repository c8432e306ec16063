//! LDS instructions (DS): loads, stores, two-address forms, atomics, and the LDS-crossbar lane
//! permutes (swizzle, permute, bpermute).
//!
//! Addresses are byte offsets into the workgroup's LDS (static + launch-sized); an access past its
//! end is a fault (the hardware would silently drop or zero it). Single-address forms add the
//! 16-bit instruction offset; two-address forms add offset0/offset1 in units of the element size
//! (times 64 for `st64`). Accesses need not be aligned (gfx9 unaligned LDS mode).

use super::error::{FaultKind, Space};
use super::step::{Ctx, Exec, Flow, Trouble, not_implemented};
use super::wave::{LANES, VReg, Wave};
use crate::isa::{Inst, Op, Opnd, flags};
use half::{bf16, f16};

fn lds_range(cx: &Ctx<'_, '_>, addr: u32, n: u32, lane: usize) -> Result<usize, Trouble> {
    let end = addr as u64 + n as u64;
    if end > cx.lds.len() as u64 {
        return Err(Trouble::lane(FaultKind::OutOfBounds { space: Space::Lds, addr: addr as u64, size: n }, lane));
    }
    Ok(addr as usize)
}

fn read_lds(cx: &Ctx<'_, '_>, addr: u32, out: &mut [u8], lane: usize) -> Result<(), Trouble> {
    let a = lds_range(cx, addr, out.len() as u32, lane)?;
    out.copy_from_slice(&cx.lds[a..a + out.len()]);
    Ok(())
}

fn write_lds(cx: &mut Ctx<'_, '_>, addr: u32, data: &[u8], lane: usize) -> Result<(), Trouble> {
    let a = lds_range(cx, addr, data.len() as u32, lane)?;
    cx.lds[a..a + data.len()].copy_from_slice(data);
    Ok(())
}

fn u32_at(cx: &Ctx<'_, '_>, addr: u32, lane: usize) -> Result<u32, Trouble> {
    let mut b = [0u8; 4];
    read_lds(cx, addr, &mut b, lane)?;
    Ok(u32::from_le_bytes(b))
}

fn u64_at(cx: &Ctx<'_, '_>, addr: u32, lane: usize) -> Result<u64, Trouble> {
    let mut b = [0u8; 8];
    read_lds(cx, addr, &mut b, lane)?;
    Ok(u64::from_le_bytes(b))
}

/// The per-lane base address (VGPR) and the active lanes.
fn addrs(w: &Wave, inst: &Inst) -> Result<(VReg, u64), FaultKind> {
    Ok((*w.vreg(inst.src[0])?, w.exec()))
}

/// `n` dwords of data operand `src` for lane `l`.
fn data(w: &Wave, op: Opnd, n: u16, l: usize) -> Result<[u32; 4], FaultKind> {
    let mut d = [0u32; 4];
    for k in 0..n {
        d[k as usize] = w.vreg_at(op, k)?[l];
    }
    Ok(d)
}

fn write_dst(w: &mut Wave, inst: &Inst, k: u16, l: usize, v: u32) -> Result<(), FaultKind> {
    w.vreg_at_mut(inst.dst, k)?[l] = v;
    Ok(())
}

/// Single-address load of `bytes` (1, 2, 4, 8, 12, 16), widened per `ext`.
#[derive(Clone, Copy)]
enum Widen {
    /// Whole dwords.
    Dwords,
    /// Zero-extend to 32 bits.
    Zext,
    /// Sign-extend to 32 bits.
    Sext,
    /// Zero-extend into the low 16 bits, keep the high 16 (d16).
    D16Lo(bool),
    /// Into the high 16 bits, keep the low 16 (d16_hi); the flag sign-extends bytes.
    D16Hi(bool),
}

fn load(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, bytes: u32, widen: Widen) -> Exec {
    let (base, exec) = addrs(w, inst)?;
    let off = (inst.imm & 0xffff) as u32;
    let mut acc = Vec::with_capacity(LANES);
    for l in (0..LANES).filter(|l| exec >> l & 1 == 1) {
        let a = base[l].wrapping_add(off);
        acc.push((l as u32, a, bytes));
        let mut buf = [0u8; 16];
        read_lds(cx, a, &mut buf[..bytes as usize], l)?;
        let raw = u32::from_le_bytes(buf[..4].try_into().expect("4"));
        match widen {
            Widen::Dwords => {
                for k in 0..bytes / 4 {
                    let v = u32::from_le_bytes(buf[4 * k as usize..4 * k as usize + 4].try_into().expect("4"));
                    write_dst(w, inst, k as u16, l, v)?;
                }
            }
            Widen::Zext => write_dst(w, inst, 0, l, raw & mask(bytes))?,
            Widen::Sext => write_dst(w, inst, 0, l, sext(raw, bytes))?,
            Widen::D16Lo(s) => {
                let v = if s { sext(raw, bytes) } else { raw & mask(bytes) } & 0xffff;
                let old = w.vreg(inst.dst)?[l];
                write_dst(w, inst, 0, l, (old & 0xffff_0000) | v)?;
            }
            Widen::D16Hi(s) => {
                let v = if s { sext(raw, bytes) } else { raw & mask(bytes) } & 0xffff;
                let old = w.vreg(inst.dst)?[l];
                write_dst(w, inst, 0, l, (old & 0xffff) | v << 16)?;
            }
        }
    }
    cx.counters.lds_access(false, &acc, bytes);
    Ok(Flow::Next)
}

fn mask(bytes: u32) -> u32 {
    if bytes >= 4 { u32::MAX } else { (1 << (8 * bytes)) - 1 }
}

fn sext(v: u32, bytes: u32) -> u32 {
    let sh = 32 - 8 * bytes.min(4);
    (((v << sh) as i32) >> sh) as u32
}

/// Single-address store of `bytes` from data0; `hi16` stores the high half of the dword.
fn store(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, bytes: u32, hi16: bool) -> Exec {
    let (base, exec) = addrs(w, inst)?;
    let off = (inst.imm & 0xffff) as u32;
    let mut acc = Vec::with_capacity(LANES);
    for l in (0..LANES).filter(|l| exec >> l & 1 == 1) {
        let a = base[l].wrapping_add(off);
        acc.push((l as u32, a, bytes));
        let d = data(w, inst.src[1], bytes.div_ceil(4) as u16, l)?;
        let mut buf = [0u8; 16];
        for k in 0..4 {
            buf[4 * k..4 * k + 4].copy_from_slice(&d[k].to_le_bytes());
        }
        if hi16 {
            buf[0] = buf[2];
            buf[1] = buf[3];
        }
        write_lds(cx, a, &buf[..bytes as usize], l)?;
    }
    cx.counters.lds_access(true, &acc, bytes);
    Ok(Flow::Next)
}

/// Two-address load/store of `size` bytes each (4 or 8); `stride` scales the offsets (1 or 64).
fn two(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, size: u32, stride: u32, is_store: bool) -> Exec {
    let (base, exec) = addrs(w, inst)?;
    let (o0, o1) = ((inst.imm & 0xff) as u32, ((inst.imm >> 8) & 0xff) as u32);
    let dw = (size / 4) as u16;
    let mut acc = Vec::with_capacity(2 * LANES);
    for l in (0..LANES).filter(|l| exec >> l & 1 == 1) {
        let a0 = base[l].wrapping_add(o0 * size * stride);
        let a1 = base[l].wrapping_add(o1 * size * stride);
        acc.push((l as u32, a0, size));
        acc.push((l as u32, a1, size));
        if is_store {
            let d0 = data(w, inst.src[1], dw, l)?;
            let d1 = data(w, inst.src[2], dw, l)?;
            for (a, d) in [(a0, d0), (a1, d1)] {
                let mut buf = [0u8; 8];
                buf[..4].copy_from_slice(&d[0].to_le_bytes());
                buf[4..].copy_from_slice(&d[1].to_le_bytes());
                write_lds(cx, a, &buf[..size as usize], l)?;
            }
        } else {
            for (i, a) in [a0, a1].into_iter().enumerate() {
                let mut buf = [0u8; 8];
                read_lds(cx, a, &mut buf[..size as usize], l)?;
                for k in 0..dw {
                    let v = u32::from_le_bytes(buf[4 * k as usize..4 * k as usize + 4].try_into().expect("4"));
                    write_dst(w, inst, i as u16 * dw + k, l, v)?;
                }
            }
        }
    }
    cx.counters.lds_access(is_store, &acc, 2 * size);
    Ok(Flow::Next)
}

/// 32-bit atomic: `f(old, data0, data1) -> new`; the `_rtn` forms return the old value.
fn atomic32(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, rtn: bool, f: impl Fn(u32, u32, u32) -> u32) -> Exec {
    let (base, exec) = addrs(w, inst)?;
    let off = (inst.imm & 0xffff) as u32;
    let mut acc = Vec::with_capacity(LANES);
    // Lanes are applied in lane order, as the hardware serialises same-address atomics.
    for l in (0..LANES).filter(|l| exec >> l & 1 == 1) {
        let a = base[l].wrapping_add(off);
        acc.push((l as u32, a, 4));
        let d0 = if inst.src[1].is_none() { 0 } else { w.vreg(inst.src[1])?[l] };
        let d1 = if inst.src[2].is_none() { 0 } else { w.vreg(inst.src[2])?[l] };
        let old = u32_at(cx, a, l)?;
        write_lds(cx, a, &f(old, d0, d1).to_le_bytes(), l)?;
        if rtn {
            write_dst(w, inst, 0, l, old)?;
        }
    }
    cx.counters.lds_access(true, &acc, 4);
    Ok(Flow::Next)
}

/// 64-bit atomic.
fn atomic64(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, rtn: bool, f: impl Fn(u64, u64, u64) -> u64) -> Exec {
    let (base, exec) = addrs(w, inst)?;
    let off = (inst.imm & 0xffff) as u32;
    let mut acc = Vec::with_capacity(LANES);
    for l in (0..LANES).filter(|l| exec >> l & 1 == 1) {
        let a = base[l].wrapping_add(off);
        acc.push((l as u32, a, 8));
        let pair = |op: Opnd| -> Result<u64, FaultKind> {
            if op.is_none() {
                return Ok(0);
            }
            Ok(w.vreg(op)?[l] as u64 | (w.vreg_at(op, 1)?[l] as u64) << 32)
        };
        let (d0, d1) = (pair(inst.src[1])?, pair(inst.src[2])?);
        let old = u64_at(cx, a, l)?;
        write_lds(cx, a, &f(old, d0, d1).to_le_bytes(), l)?;
        if rtn {
            write_dst(w, inst, 0, l, old as u32)?;
            write_dst(w, inst, 1, l, (old >> 32) as u32)?;
        }
    }
    cx.counters.lds_access(true, &acc, 8);
    Ok(Flow::Next)
}

fn f32op(f: impl Fn(f32, f32) -> f32) -> impl Fn(u32, u32, u32) -> u32 {
    move |o, d, _| f(f32::from_bits(o), f32::from_bits(d)).to_bits()
}

fn pk_f16_add(o: u32, d: u32, _: u32) -> u32 {
    let h = |x: u32| f16::from_bits(x as u16).to_f32();
    let lo = f16::from_f32(h(o) + h(d)).to_bits() as u32;
    let hi = f16::from_f32(h(o >> 16) + h(d >> 16)).to_bits() as u32;
    lo | hi << 16
}

fn pk_bf16_add(o: u32, d: u32, _: u32) -> u32 {
    let h = |x: u32| bf16::from_bits(x as u16).to_f32();
    let lo = bf16::from_f32(h(o) + h(d)).to_bits() as u32;
    let hi = bf16::from_f32(h(o >> 16) + h(d >> 16)).to_bits() as u32;
    lo | hi << 16
}

/// `ds_swizzle_b32` source lane for `lane` under the 16-bit pattern.
pub(crate) fn swizzle_source(pattern: u32, lane: usize) -> usize {
    if pattern & 0x8000 != 0 {
        // Quad permute: lane i of each quad takes lane pattern[2i+1:2i].
        let q = lane % 4;
        lane - q + ((pattern >> (2 * q)) & 3) as usize
    } else {
        // Bit masks within 32-lane halves: ((lane & and) | or) ^ xor.
        let (and, or, xor) = (pattern & 0x1f, (pattern >> 5) & 0x1f, (pattern >> 10) & 0x1f);
        let i = lane as u32 & 0x1f;
        (lane & !0x1f) | ((((i & and) | or) ^ xor) & 0x1f) as usize
    }
}

fn permute(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, backward: bool) -> Exec {
    let (base, exec) = addrs(w, inst)?;
    let off = (inst.imm & 0xffff) as u32;
    let src = *w.vreg(inst.src[1])?;
    let mut out = [0u32; LANES];
    if backward {
        for l in 0..LANES {
            let s = (base[l].wrapping_add(off) / 4 % 64) as usize;
            out[l] = if exec >> s & 1 == 1 { src[s] } else { 0 };
        }
    } else {
        let mut tmp = [0u32; LANES];
        for l in (0..LANES).filter(|l| exec >> l & 1 == 1) {
            tmp[(base[l].wrapping_add(off) / 4 % 64) as usize] = src[l];
        }
        out = tmp;
    }
    w.write_v32(inst.dst, exec, &out)?;
    cx.counters.lds.instructions += 1;
    Ok(Flow::Next)
}

/// Executes one DS instruction.
pub(crate) fn exec(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>) -> Exec {
    use Op::*;
    if inst.flags & flags::GDS != 0 {
        return Err(Trouble::new(FaultKind::NotImplemented(format!("{} with gds (no GDS on gfx942 kernels)", inst.op.name()))));
    }
    match inst.op {
        DsNop => Ok(Flow::Next),
        DsReadB32 => load(w, inst, cx, 4, Widen::Dwords),
        DsReadB64 => load(w, inst, cx, 8, Widen::Dwords),
        DsReadB96 => load(w, inst, cx, 12, Widen::Dwords),
        DsReadB128 => load(w, inst, cx, 16, Widen::Dwords),
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
        DsWriteB32 => store(w, inst, cx, 4, false),
        DsWriteB64 => store(w, inst, cx, 8, false),
        DsWriteB96 => store(w, inst, cx, 12, false),
        DsWriteB128 => store(w, inst, cx, 16, false),
        DsWriteB8D16Hi => store(w, inst, cx, 1, true),
        DsWriteB16D16Hi => store(w, inst, cx, 2, true),
        DsWrite2B32 => two(w, inst, cx, 4, 1, true),
        DsWrite2B64 => two(w, inst, cx, 8, 1, true),
        DsWrite2st64B32 => two(w, inst, cx, 4, 64, true),
        DsWrite2st64B64 => two(w, inst, cx, 8, 64, true),

        DsAddU32 | DsAddRtnU32 => atomic32(w, inst, cx, inst.op == DsAddRtnU32, |o, d, _| o.wrapping_add(d)),
        DsSubU32 | DsSubRtnU32 => atomic32(w, inst, cx, inst.op == DsSubRtnU32, |o, d, _| o.wrapping_sub(d)),
        DsRsubU32 | DsRsubRtnU32 => atomic32(w, inst, cx, inst.op == DsRsubRtnU32, |o, d, _| d.wrapping_sub(o)),
        DsIncU32 | DsIncRtnU32 => atomic32(w, inst, cx, inst.op == DsIncRtnU32, |o, d, _| if o >= d { 0 } else { o + 1 }),
        DsDecU32 | DsDecRtnU32 => {
            atomic32(w, inst, cx, inst.op == DsDecRtnU32, |o, d, _| if o == 0 || o > d { d } else { o - 1 })
        }
        DsMinI32 | DsMinRtnI32 => atomic32(w, inst, cx, inst.op == DsMinRtnI32, |o, d, _| (o as i32).min(d as i32) as u32),
        DsMaxI32 | DsMaxRtnI32 => atomic32(w, inst, cx, inst.op == DsMaxRtnI32, |o, d, _| (o as i32).max(d as i32) as u32),
        DsMinU32 | DsMinRtnU32 => atomic32(w, inst, cx, inst.op == DsMinRtnU32, |o, d, _| o.min(d)),
        DsMaxU32 | DsMaxRtnU32 => atomic32(w, inst, cx, inst.op == DsMaxRtnU32, |o, d, _| o.max(d)),
        DsAndB32 | DsAndRtnB32 => atomic32(w, inst, cx, inst.op == DsAndRtnB32, |o, d, _| o & d),
        DsOrB32 | DsOrRtnB32 => atomic32(w, inst, cx, inst.op == DsOrRtnB32, |o, d, _| o | d),
        DsXorB32 | DsXorRtnB32 => atomic32(w, inst, cx, inst.op == DsXorRtnB32, |o, d, _| o ^ d),
        DsMskorB32 | DsMskorRtnB32 => atomic32(w, inst, cx, inst.op == DsMskorRtnB32, |o, d0, d1| (o & !d0) | d1),
        DsWrxchgRtnB32 => atomic32(w, inst, cx, true, |_, d, _| d),
        DsCmpstB32 | DsCmpstRtnB32 => {
            atomic32(w, inst, cx, inst.op == DsCmpstRtnB32, |o, cmp, new| if o == cmp { new } else { o })
        }
        DsAddF32 | DsAddRtnF32 => atomic32(w, inst, cx, inst.op == DsAddRtnF32, f32op(|a, b| a + b)),
        DsMinF32 | DsMinRtnF32 => {
            atomic32(w, inst, cx, inst.op == DsMinRtnF32, f32op(super::valu::fmin32))
        }
        DsMaxF32 | DsMaxRtnF32 => {
            atomic32(w, inst, cx, inst.op == DsMaxRtnF32, f32op(super::valu::fmax32))
        }
        DsPkAddF16 | DsPkAddRtnF16 => atomic32(w, inst, cx, inst.op == DsPkAddRtnF16, pk_f16_add),
        DsPkAddBf16 | DsPkAddRtnBf16 => atomic32(w, inst, cx, inst.op == DsPkAddRtnBf16, pk_bf16_add),
        DsAddU64 | DsAddRtnU64 => atomic64(w, inst, cx, inst.op == DsAddRtnU64, |o, d, _| o.wrapping_add(d)),
        DsMinU64 | DsMinRtnU64 => atomic64(w, inst, cx, inst.op == DsMinRtnU64, |o, d, _| o.min(d)),
        DsMaxU64 | DsMaxRtnU64 => atomic64(w, inst, cx, inst.op == DsMaxRtnU64, |o, d, _| o.max(d)),
        DsWrxchgRtnB64 => atomic64(w, inst, cx, true, |_, d, _| d),
        DsCmpstB64 | DsCmpstRtnB64 => {
            atomic64(w, inst, cx, inst.op == DsCmpstRtnB64, |o, cmp, new| if o == cmp { new } else { o })
        }
        DsAddF64 | DsAddRtnF64 => {
            atomic64(w, inst, cx, inst.op == DsAddRtnF64, |o, d, _| (f64::from_bits(o) + f64::from_bits(d)).to_bits())
        }

        DsSwizzleB32 => {
            let exec = w.exec();
            let src = *w.vreg(inst.src[0])?;
            let mut out = [0u32; LANES];
            for (l, o) in out.iter_mut().enumerate() {
                let s = swizzle_source((inst.imm & 0xffff) as u32, l);
                *o = if exec >> s & 1 == 1 { src[s] } else { 0 };
            }
            w.write_v32(inst.dst, exec, &out)?;
            cx.counters.lds.instructions += 1;
            Ok(Flow::Next)
        }
        DsPermuteB32 => permute(w, inst, cx, false),
        DsBpermuteB32 => permute(w, inst, cx, true),
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
}
