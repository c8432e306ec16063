//! Vector memory: FLAT, GLOBAL, SCRATCH and MUBUF loads, stores and atomics.
//!
//! Addressing:
//! - GLOBAL: `vaddr` (64-bit) + offset, or `saddr` (64-bit SGPRs) + `vaddr` (32-bit) + offset;
//! - FLAT: `vaddr` + offset, routed by aperture to LDS, the lane's scratch, or global memory;
//! - SCRATCH: a per-lane offset `vaddr` + `saddr` + offset into the lane's private memory;
//! - MUBUF: a buffer resource (V#) base + index * stride + offset, range-checked against
//!   `num_records` (out-of-range loads read 0, stores are dropped, as on the hardware).
//! Out-of-bounds global accesses are faults naming the lane and address.

use super::counters::Access;
use super::error::{FaultKind, Space};
use super::memory::{APERTURE_SIZE, PRIVATE_APERTURE, SHARED_APERTURE};
use super::step::{Ctx, Exec, Flow, Trouble, not_implemented};
use super::wave::{LANES, Ty, Wave};
use crate::isa::{Enc, Inst, Op, Opnd, flags};

/// True for instructions that read-modify-write global memory (they make a launch run its
/// workgroups one at a time, so float atomics sum in a reproducible order).
pub fn is_atomic(inst: &Inst) -> bool {
    matches!(inst.enc, Enc::Flat | Enc::Global | Enc::Mubuf) && inst.op.name().contains("atomic")
}

/// Where one lane's access goes.
#[derive(Clone, Copy, Debug)]
enum Target {
    Global(u64),
    Lds(u32),
    Scratch(u32),
    /// MUBUF out of range: loads read 0, stores do nothing.
    Dropped,
}

/// The operation's data shape.
#[derive(Clone, Copy)]
enum Shape {
    /// `n` bytes (1, 2, 4, 8, 12, 16) zero- or sign-extended into dwords.
    Plain { bytes: u32, signed: bool },
    /// d16: 1 or 2 bytes into the low (`hi = false`) or high half, the other half kept.
    D16 { bytes: u32, signed: bool, hi: bool },
}

fn shape_of(op: &str) -> Option<Shape> {
    let tail = op.rsplit_once("load_").or_else(|| op.rsplit_once("store_")).map(|(_, t)| t)?;
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

/// Buffer resource fields (gfx9 V#).
struct Vsharp {
    base: u64,
    stride: u64,
    num_records: u64,
    add_tid: bool,
    swizzle: bool,
}

fn vsharp(w: &Wave, op: Opnd) -> Result<Vsharp, FaultKind> {
    let v: [u32; 4] = w.sregs(op)?;
    Ok(Vsharp {
        base: v[0] as u64 | ((v[1] & 0xffff) as u64) << 32,
        stride: ((v[1] >> 16) & 0x3fff) as u64,
        num_records: v[2] as u64,
        add_tid: v[3] >> 23 & 1 == 1,
        swizzle: v[1] >> 31 & 1 == 1,
    })
}

/// Computes every active lane's target.
fn targets(w: &Wave, inst: &Inst, bytes: u32) -> Result<Vec<(usize, Target)>, Trouble> {
    let exec = w.exec();
    let imm = inst.imm as i64 as u64;
    let mut out = Vec::with_capacity(LANES);
    match inst.enc {
        Enc::Global => {
            let sbase = if inst.src[2].is_none() { None } else { Some(w.sval64(inst.src[2], 0, Ty::U64)?) };
            for l in (0..LANES).filter(|l| exec >> l & 1 == 1) {
                let a = match sbase {
                    Some(s) => s.wrapping_add(w.vreg(inst.src[0])?[l] as u64),
                    None => vaddr64(w, inst.src[0], l)?,
                };
                out.push((l, Target::Global(a.wrapping_add(imm))));
            }
        }
        Enc::Flat => {
            for l in (0..LANES).filter(|l| exec >> l & 1 == 1) {
                let a = vaddr64(w, inst.src[0], l)?.wrapping_add(imm);
                let t = if (SHARED_APERTURE..SHARED_APERTURE + APERTURE_SIZE).contains(&a) {
                    Target::Lds((a - SHARED_APERTURE) as u32)
                } else if (PRIVATE_APERTURE..PRIVATE_APERTURE + APERTURE_SIZE).contains(&a) {
                    Target::Scratch((a - PRIVATE_APERTURE) as u32)
                } else {
                    Target::Global(a)
                };
                out.push((l, t));
            }
        }
        Enc::Scratch => {
            let s = if inst.src[2].is_none() { 0 } else { w.sval32(inst.src[2], 0, Ty::B32)? };
            for l in (0..LANES).filter(|l| exec >> l & 1 == 1) {
                let v = if inst.src[0].is_none() { 0 } else { w.vreg(inst.src[0])?[l] };
                out.push((l, Target::Scratch(v.wrapping_add(s).wrapping_add(inst.imm as u32))));
            }
        }
        Enc::Mubuf => {
            let r = vsharp(w, inst.src[2])?;
            if r.swizzle {
                return Err(Trouble::new(FaultKind::NotImplemented(format!("{} through a swizzled buffer resource", inst.op.name()))));
            }
            let soff = if inst.src[3].is_none() { 0 } else { w.sval32(inst.src[3], 0, Ty::B32)? as u64 };
            let (offen, idxen) = (inst.flags & flags::OFFEN != 0, inst.flags & flags::IDXEN != 0);
            let private = (PRIVATE_APERTURE..PRIVATE_APERTURE + APERTURE_SIZE).contains(&r.base);
            for l in (0..LANES).filter(|l| exec >> l & 1 == 1) {
                let vr = |k: u16| -> Result<u64, FaultKind> { Ok(w.vreg_at(inst.src[0], k)?[l] as u64) };
                let (mut index, offset) = match (idxen, offen) {
                    (true, true) => (vr(0)?, vr(1)?),
                    (true, false) => (vr(0)?, 0),
                    (false, true) => (0, vr(0)?),
                    (false, false) => (0, 0),
                };
                if r.add_tid {
                    index += l as u64;
                }
                let offset = offset + soff + (inst.imm as u32 & 0xfff) as u64;
                // Range check: raw buffers (stride 0) by byte offset, structured by index.
                let in_range = if r.stride == 0 { offset + bytes as u64 <= r.num_records } else { index < r.num_records };
                let t = if !in_range {
                    Target::Dropped
                } else if private {
                    Target::Scratch((index * r.stride + offset) as u32)
                } else {
                    Target::Global(r.base + index * r.stride + offset)
                };
                out.push((l, t));
            }
        }
        _ => return Err(not_implemented(inst)),
    }
    Ok(out)
}

fn oob(space: Space, addr: u64, size: u32, l: usize) -> Trouble {
    Trouble::lane(FaultKind::OutOfBounds { space, addr, size }, l)
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
        Target::Scratch(a) => {
            if a as u64 + n as u64 > w.scratch_per_lane as u64 {
                return Err(oob(Space::Scratch, a as u64, n, l));
            }
            let base = l * w.scratch_per_lane as usize + a as usize;
            buf.copy_from_slice(&w.scratch[base..base + n as usize]);
        }
        Target::Dropped => buf.fill(0),
    }
    Ok(())
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
        Target::Scratch(a) => {
            if a as u64 + n as u64 > w.scratch_per_lane as u64 {
                return Err(oob(Space::Scratch, a as u64, n, l));
            }
            let base = l * w.scratch_per_lane as usize + a as usize;
            w.scratch[base..base + n as usize].copy_from_slice(data);
        }
        Target::Dropped => {}
    }
    Ok(())
}

fn record(cx: &mut Ctx<'_, '_>, kind: Access, ts: &[(usize, Target)], bytes: u32) {
    let g: Vec<(u64, u32)> =
        ts.iter().filter_map(|(_, t)| if let Target::Global(a) = t { Some((*a, bytes)) } else { None }).collect();
    if !g.is_empty() {
        cx.counters.global_access(kind, &g);
    }
}

fn load(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, shape: Shape) -> Exec {
    if inst.flags & flags::LDS != 0 {
        return Err(Trouble::new(FaultKind::NotImplemented(format!("{} with the lds bit (load to LDS)", inst.op.name()))));
    }
    let bytes = match shape {
        Shape::Plain { bytes, .. } | Shape::D16 { bytes, .. } => bytes,
    };
    let ts = targets(w, inst, bytes)?;
    for &(l, t) in &ts {
        let mut buf = [0u8; 16];
        read(w, cx, t, &mut buf[..bytes as usize], l)?;
        let raw = u32::from_le_bytes(buf[..4].try_into().expect("4"));
        let ext = |signed: bool| -> u32 {
            match (bytes, signed) {
                (1, true) => raw as u8 as i8 as i32 as u32,
                (1, false) => raw & 0xff,
                (2, true) => raw as u16 as i16 as i32 as u32,
                (2, false) => raw & 0xffff,
                _ => raw,
            }
        };
        match shape {
            Shape::Plain { bytes, signed } => {
                if bytes <= 4 {
                    w.vreg_mut(inst.dst)?[l] = ext(signed);
                } else {
                    for k in 0..bytes / 4 {
                        let v = u32::from_le_bytes(buf[4 * k as usize..4 * k as usize + 4].try_into().expect("4"));
                        w.vreg_at_mut(inst.dst, k as u16)?[l] = v;
                    }
                }
            }
            Shape::D16 { signed, hi, .. } => {
                let v = ext(signed) & 0xffff;
                let d = &mut w.vreg_mut(inst.dst)?[l];
                *d = if hi { (*d & 0xffff) | v << 16 } else { (*d & 0xffff_0000) | v };
            }
        }
    }
    record(cx, Access::Load, &ts, bytes);
    Ok(Flow::Next)
}

fn store(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, shape: Shape) -> Exec {
    let (bytes, hi) = match shape {
        Shape::Plain { bytes, .. } => (bytes, false),
        Shape::D16 { bytes, hi, .. } => (bytes, hi),
    };
    let ts = targets(w, inst, bytes)?;
    for &(l, t) in &ts {
        let mut buf = [0u8; 16];
        for k in 0..bytes.div_ceil(4) {
            let v = w.vreg_at(inst.src[1], k as u16)?[l];
            buf[4 * k as usize..4 * k as usize + 4].copy_from_slice(&v.to_le_bytes());
        }
        if hi {
            buf.copy_within(2..4, 0);
        }
        write(w, cx, t, &buf[..bytes as usize], l)?;
    }
    record(cx, Access::Store, &ts, bytes);
    Ok(Flow::Next)
}

/// A read-modify-write on global memory (or LDS/scratch through FLAT) per active lane, in lane
/// order; `f(old, data) -> new`. Returns the old value when SC0 (glc) is set.
fn atomic(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, wide: bool, f: impl Fn(u64, u64) -> u64) -> Exec {
    let bytes = if wide { 8 } else { 4 };
    let cmpswap = inst.op.name().contains("cmpswap");
    let ts = targets(w, inst, bytes)?;
    let rtn = inst.flags & flags::SC0 != 0;
    for &(l, t) in &ts {
        let dw = if wide { 2 } else { 1 };
        let get = |k: u16| -> Result<u64, FaultKind> {
            Ok(if wide {
                w.vreg_at(inst.src[1], k)?[l] as u64 | (w.vreg_at(inst.src[1], k + 1)?[l] as u64) << 32
            } else {
                w.vreg_at(inst.src[1], k)?[l] as u64
            })
        };
        // cmpswap data: (new, compare) in consecutive registers.
        let data = get(0)?;
        let cmp = if cmpswap { get(dw)? } else { 0 };
        let op = |old: u64| if cmpswap { if old == cmp { data } else { old } } else { f(old, data) };
        let old = match t {
            Target::Global(a) => {
                if a % bytes as u64 != 0 {
                    return Err(Trouble::lane(FaultKind::Misaligned { space: Space::Global, addr: a, align: bytes }, l));
                }
                let (r, off) = cx.mem.find(a, bytes as u64).ok_or_else(|| oob(Space::Global, a, bytes, l))?;
                if wide { r.rmw_u64(off, op) } else { r.rmw_u32(off, |o| op(o as u64) as u32) as u64 }
            }
            Target::Dropped => 0,
            other => {
                let mut buf = [0u8; 8];
                read(w, cx, other, &mut buf[..bytes as usize], l)?;
                let old = u64::from_le_bytes(buf);
                let new = op(old);
                write(w, cx, other, &new.to_le_bytes()[..bytes as usize], l)?;
                old
            }
        };
        if rtn {
            w.vreg_mut(inst.dst)?[l] = old as u32;
            if wide {
                w.vreg_at_mut(inst.dst, 1)?[l] = (old >> 32) as u32;
            }
        }
    }
    record(cx, Access::Atomic, &ts, bytes);
    Ok(Flow::Next)
}

fn f32x(f: impl Fn(f32, f32) -> f32) -> impl Fn(u64, u64) -> u64 {
    move |o, d| f(f32::from_bits(o as u32), f32::from_bits(d as u32)).to_bits() as u64
}

fn f64x(f: impl Fn(f64, f64) -> f64) -> impl Fn(u64, u64) -> u64 {
    move |o, d| f(f64::from_bits(o), f64::from_bits(d)).to_bits()
}

fn pk16(o: u64, d: u64, bf: bool) -> u64 {
    let cvt = |x: u64| -> f32 {
        if bf { half::bf16::from_bits(x as u16).to_f32() } else { half::f16::from_bits(x as u16).to_f32() }
    };
    let back = |x: f32| -> u64 {
        if bf { half::bf16::from_f32(x).to_bits() as u64 } else { half::f16::from_f32(x).to_bits() as u64 }
    };
    back(cvt(o) + cvt(d)) | back(cvt(o >> 16) + cvt(d >> 16)) << 16
}

/// The atomic operation named by the mnemonic's tail, with its width.
fn atomic_op(name: &str) -> Option<(bool, fn(u64, u64) -> u64)> {
    let tail = name.split("atomic_").nth(1)?;
    let (op, wide) = match tail.strip_suffix("_x2") {
        Some(t) => (t, true),
        None => (tail, false),
    };
    let f: fn(u64, u64) -> u64 = match (op, wide) {
        ("swap", _) => |_, d| d,
        ("cmpswap", _) => |o, _| o, // handled by the caller (needs the compare value)
        ("add", false) => |o, d| (o as u32).wrapping_add(d as u32) as u64,
        ("add", true) => |o, d| o.wrapping_add(d),
        ("sub", false) => |o, d| (o as u32).wrapping_sub(d as u32) as u64,
        ("sub", true) => |o, d| o.wrapping_sub(d),
        ("smin", false) => |o, d| (o as u32 as i32).min(d as u32 as i32) as u32 as u64,
        ("smin", true) => |o, d| (o as i64).min(d as i64) as u64,
        ("umin", false) => |o, d| (o as u32).min(d as u32) as u64,
        ("umin", true) => |o, d| o.min(d),
        ("smax", false) => |o, d| (o as u32 as i32).max(d as u32 as i32) as u32 as u64,
        ("smax", true) => |o, d| (o as i64).max(d as i64) as u64,
        ("umax", false) => |o, d| (o as u32).max(d as u32) as u64,
        ("umax", true) => |o, d| o.max(d),
        ("and", _) => |o, d| o & d,
        ("or", _) => |o, d| o | d,
        ("xor", _) => |o, d| o ^ d,
        ("inc", false) => |o, d| if o as u32 >= d as u32 { 0 } else { o + 1 },
        ("inc", true) => |o, d| if o >= d { 0 } else { o + 1 },
        ("dec", false) => |o, d| if o as u32 == 0 || o as u32 > d as u32 { d } else { o - 1 },
        ("dec", true) => |o, d| if o == 0 || o > d { d } else { o - 1 },
        _ => return None,
    };
    Some((wide, f))
}

/// Executes one FLAT/GLOBAL/SCRATCH/MUBUF instruction.
pub(crate) fn exec(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>) -> Exec {
    let name = inst.op.name();
    if name.contains("atomic") {
        use Op::*;
        return match inst.op {
            GlobalAtomicAddF32 | FlatAtomicAddF32 | BufferAtomicAddF32 => atomic(w, inst, cx, false, f32x(|a, b| a + b)),
            GlobalAtomicPkAddF16 | FlatAtomicPkAddF16 | BufferAtomicPkAddF16 => {
                atomic(w, inst, cx, false, |o, d| pk16(o, d, false))
            }
            GlobalAtomicPkAddBf16 | FlatAtomicPkAddBf16 => atomic(w, inst, cx, false, |o, d| pk16(o, d, true)),
            GlobalAtomicAddF64 | FlatAtomicAddF64 | BufferAtomicAddF64 => atomic(w, inst, cx, true, f64x(|a, b| a + b)),
            GlobalAtomicMinF64 | FlatAtomicMinF64 | BufferAtomicMinF64 => {
                atomic(w, inst, cx, true, f64x(super::valu::fmin64))
            }
            GlobalAtomicMaxF64 | FlatAtomicMaxF64 | BufferAtomicMaxF64 => {
                atomic(w, inst, cx, true, f64x(super::valu::fmax64))
            }
            _ => match atomic_op(name) {
                Some((wide, f)) => atomic(w, inst, cx, wide, f),
                None => Err(not_implemented(inst)),
            },
        };
    }
    if name.contains("_load_") {
        return match shape_of(name) {
            Some(s) => load(w, inst, cx, s),
            None => Err(not_implemented(inst)),
        };
    }
    if name.contains("_store_") {
        return match shape_of(name) {
            Some(s) => store(w, inst, cx, s),
            None => Err(not_implemented(inst)),
        };
    }
    match inst.op {
        // Cache write-back/invalidate: memory is always coherent here.
        Op::BufferWbl2 | Op::BufferInv | Op::BufferWbinvl1 | Op::BufferWbinvl1Vol => Ok(Flow::Next),
        _ => Err(not_implemented(inst)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_from_mnemonics() {
        assert!(matches!(shape_of("global_load_dwordx4"), Some(Shape::Plain { bytes: 16, .. })));
        assert!(matches!(shape_of("buffer_load_sbyte"), Some(Shape::Plain { bytes: 1, signed: true })));
        assert!(matches!(shape_of("global_store_short_d16_hi"), Some(Shape::D16 { bytes: 2, hi: true, .. })));
        assert!(matches!(shape_of("flat_load_ubyte_d16"), Some(Shape::D16 { bytes: 1, hi: false, .. })));
        assert!(shape_of("global_load_lds_dword").is_none());
    }

    #[test]
    fn atomic_ops_by_name() {
        let (wide, f) = atomic_op("global_atomic_umax_x2").unwrap();
        assert!(wide);
        assert_eq!(f(5, 9), 9);
        let (wide, f) = atomic_op("buffer_atomic_inc").unwrap();
        assert!(!wide);
        assert_eq!(f(3, 3), 0);
        assert_eq!(f(2, 3), 3);
        assert!(atomic_op("global_atomic_frobnicate").is_none());
    }
}
