//! Scalar memory (SMEM): loads and stores (plain, through a buffer resource, and to scratch),
//! scalar atomics, time counters, cache control.
//!
//! Addressing (CDNA ISA guide 8.2.1.1, CDNA4 edition): `base + inst_offset + {SGPR or M0 or 0}`; the two low address
//! bits are ignored. Buffer forms (`s_buffer_*`) use only base, stride and num_records of the
//! V# and never swizzle; we range-check them per dword against `num_records` bytes (stride 0)
//! or `num_records * stride` bytes, reading 0 and dropping writes out of range (8.4: "the
//! operation is not performed for any Dwords that are out-of-range"). `s_scratch_*` scales
//! the SGPR/M0 offset by 64 (one dword of each of 64 lanes per 256 bytes of swizzled scratch)
//! and must address the wave's scratch (the private aperture or the scratch V# window).
//! Atomics need natural alignment; GLC returns the pre-op value to SDATA.

use super::atomic::{AtomicOp, Unit};
use super::buffer::{SCRATCH_WINDOW, SCRATCH_WINDOW_SIZE, Vsharp, window_to_lane};
use super::error::{FaultKind, Space};
use super::memory::{APERTURE_SIZE, PRIVATE_APERTURE};
use super::step::{Ctx, Exec, Flow, not_implemented};
use super::wave::{Ty, Wave};
use crate::isa::{Inst, Op, Opnd, flags};

/// Reads `n` dwords at `addr` from global memory.
pub(crate) fn read_dwords(cx: &Ctx<'_, '_>, addr: u64, out: &mut [u32]) -> Result<(), FaultKind> {
    let bytes = 4 * out.len() as u64;
    let (r, off) = cx.mem.find(addr, bytes).ok_or(FaultKind::OutOfBounds { space: Space::Global, addr, size: bytes as u32 })?;
    for (i, o) in out.iter_mut().enumerate() {
        *o = r.read_u32(off + 4 * i as u64);
    }
    Ok(())
}

fn write_dword(cx: &Ctx<'_, '_>, addr: u64, v: u32) -> Result<(), FaultKind> {
    let (r, off) = cx.mem.find(addr, 4).ok_or(FaultKind::OutOfBounds { space: Space::Global, addr, size: 4 })?;
    r.write_u32(off, v);
    Ok(())
}

/// The SGPR/M0 part of the offset (0 when absent).
fn soffset(w: &Wave, inst: &Inst) -> Result<u64, FaultKind> {
    Ok(if inst.src[1].is_none() { 0 } else { w.sval32(inst.src[1], inst.literal, Ty::B32)? as u64 })
}

/// The byte offset: SGPR/M0 plus the (21-bit signed) immediate.
fn offset(w: &Wave, inst: &Inst) -> Result<u64, FaultKind> {
    Ok(soffset(w, inst)?.wrapping_add(inst.imm as i64 as u64))
}

fn sdata(w: &Wave, inst: &Inst, i: usize) -> Result<u32, FaultKind> {
    w.sval32(Opnd(inst.dst.0 + i as u16), 0, Ty::B32)
}

fn write_sdata(w: &mut Wave, dst: Opnd, vals: &[u32]) -> Exec {
    for (i, &v) in vals.iter().enumerate() {
        w.set_s32(Opnd(dst.0 + i as u16), v)?;
    }
    Ok(Flow::Next)
}

fn load(w: &mut Wave, inst: &Inst, cx: &Ctx<'_, '_>, n: usize) -> Exec {
    let base = w.sval64(inst.src[0], 0, Ty::U64)?;
    let addr = base.wrapping_add(offset(w, inst)?) & !3;
    let mut buf = [0u32; 16];
    read_dwords(cx, addr, &mut buf[..n])?;
    write_sdata(w, inst.dst, &buf[..n])
}

fn store(w: &mut Wave, inst: &Inst, cx: &Ctx<'_, '_>, n: usize) -> Exec {
    let base = w.sval64(inst.src[0], 0, Ty::U64)?;
    let addr = base.wrapping_add(offset(w, inst)?) & !3;
    let bytes = 4 * n as u64;
    let (r, off) = cx.mem.find(addr, bytes).ok_or(FaultKind::OutOfBounds { space: Space::Global, addr, size: bytes as u32 })?;
    // For stores the decoder puts SDATA (the value) in `dst`, as the encoding does.
    for i in 0..n {
        r.write_u32(off + 4 * i as u64, sdata(w, inst, i)?);
    }
    Ok(Flow::Next)
}

/// A buffer resource as SMEM sees it: base and the byte limit of the range check.
struct ScalarBuffer {
    base: u64,
    limit: u64,
}

fn scalar_buffer(w: &Wave, inst: &Inst) -> Result<ScalarBuffer, FaultKind> {
    let v = Vsharp::from_words(w.sregs(inst.src[0])?);
    let limit = if v.stride == 0 { v.num_records } else { v.num_records * v.stride };
    Ok(ScalarBuffer { base: v.base & !3, limit })
}

/// s_buffer_load: dwords whose offset is at or past the limit read as 0.
fn buffer_load(w: &mut Wave, inst: &Inst, cx: &Ctx<'_, '_>, n: usize) -> Exec {
    let b = scalar_buffer(w, inst)?;
    let off = offset(w, inst)? & !3;
    let mut buf = [0u32; 16];
    for (i, d) in buf[..n].iter_mut().enumerate() {
        let o = off + 4 * i as u64;
        if o < b.limit {
            let mut one = [0u32];
            read_dwords(cx, b.base + o, &mut one)?;
            *d = one[0];
        }
    }
    write_sdata(w, inst.dst, &buf[..n])
}

/// s_buffer_store: dwords out of range are not written.
fn buffer_store(w: &mut Wave, inst: &Inst, cx: &Ctx<'_, '_>, n: usize) -> Exec {
    let b = scalar_buffer(w, inst)?;
    let off = offset(w, inst)? & !3;
    for i in 0..n {
        let o = off + 4 * i as u64;
        if o < b.limit {
            write_dword(cx, b.base + o, sdata(w, inst, i)?)?;
        }
    }
    Ok(Flow::Next)
}

/// `s_atomic_*` / `s_buffer_atomic_*`: one read-modify-write in global memory (the scalar unit
/// supports the vector memory atomics, ISA 8.2.2). Compare-swap data is `{src, cmp}` as for
/// the vector atomics.
fn atomic(w: &mut Wave, inst: &Inst, cx: &Ctx<'_, '_>, op: AtomicOp, wide: bool, buffered: bool) -> Exec {
    let bytes = if wide { 8u64 } else { 4 };
    let addr = if buffered {
        let b = scalar_buffer(w, inst)?;
        let off = offset(w, inst)?;
        // Atomics are range-checked as a whole: out of range, nothing happens (and nothing is
        // returned).
        if off >= b.limit {
            return Ok(Flow::Next);
        }
        b.base.wrapping_add(off)
    } else {
        w.sval64(inst.src[0], 0, Ty::U64)?.wrapping_add(offset(w, inst)?)
    };
    if addr % bytes != 0 {
        return Err(FaultKind::Misaligned { space: Space::Global, addr, align: bytes as u32 }.into());
    }
    let dw = if wide { 2 } else { 1 };
    let get = |k: usize| -> Result<u64, FaultKind> {
        let lo = sdata(w, inst, k)? as u64;
        Ok(if wide { lo | (sdata(w, inst, k + 1)? as u64) << 32 } else { lo })
    };
    let data = get(0)?;
    let data2 = if op == AtomicOp::CmpSwap { get(dw)? } else { 0 };
    let (r, off) = cx.mem.find(addr, bytes).ok_or(FaultKind::OutOfBounds { space: Space::Global, addr, size: bytes as u32 })?;
    let f = |o: u64| op.apply(wide, o, data, data2, Unit::L2);
    let old = if wide { r.rmw_u64(off, f) } else { r.rmw_u32(off, |o| f(o as u64) as u32) as u64 };
    if inst.flags & flags::SC0 != 0 {
        let vals = [old as u32, (old >> 32) as u32];
        return write_sdata(w, inst.dst, &vals[..dw]);
    }
    Ok(Flow::Next)
}

/// `s_scratch_load/store_dword*`: address `base + inst_offset + soffset * 64` in the wave's
/// swizzled scratch, so consecutive dwords are consecutive lanes' dwords (ISA 8.2.1.1).
fn scratch(w: &mut Wave, inst: &Inst, n: usize, is_store: bool) -> Exec {
    let base = w.sval64(inst.src[0], 0, Ty::U64)?;
    let window = if (PRIVATE_APERTURE..PRIVATE_APERTURE + APERTURE_SIZE).contains(&base) {
        PRIVATE_APERTURE
    } else if (SCRATCH_WINDOW..SCRATCH_WINDOW + SCRATCH_WINDOW_SIZE).contains(&base) {
        SCRATCH_WINDOW
    } else {
        return Err(FaultKind::Invalid(format!(
            "{}: base {base:#x} is not the wave's scratch (the private aperture at {PRIVATE_APERTURE:#x} or the scratch \
             V# window at {SCRATCH_WINDOW:#x})",
            inst.op.name()
        ))
        .into());
    };
    let p = (base - window).wrapping_add(inst.imm as i64 as u64).wrapping_add(soffset(w, inst)? * 64) & !3;
    for i in 0..n {
        let (lane, off) = window_to_lane(p + 4 * i as u64);
        if off + 4 > w.scratch_per_lane as u64 {
            return Err(FaultKind::OutOfBounds { space: Space::Scratch, addr: off, size: 4 }.into());
        }
        let at = lane * w.scratch_per_lane as usize + off as usize;
        if is_store {
            let v = sdata(w, inst, i)?;
            w.scratch[at..at + 4].copy_from_slice(&v.to_le_bytes());
        } else {
            let v = u32::from_le_bytes(w.scratch[at..at + 4].try_into().expect("4"));
            w.set_s32(Opnd(inst.dst.0 + i as u16), v)?;
        }
    }
    Ok(Flow::Next)
}

/// Executes one SMEM instruction.
pub(crate) fn exec(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>) -> Exec {
    use Op::*;
    match inst.op {
        SLoadDword => load(w, inst, cx, 1),
        SLoadDwordx2 => load(w, inst, cx, 2),
        SLoadDwordx4 => load(w, inst, cx, 4),
        SLoadDwordx8 => load(w, inst, cx, 8),
        SLoadDwordx16 => load(w, inst, cx, 16),
        SBufferLoadDword => buffer_load(w, inst, cx, 1),
        SBufferLoadDwordx2 => buffer_load(w, inst, cx, 2),
        SBufferLoadDwordx4 => buffer_load(w, inst, cx, 4),
        SBufferLoadDwordx8 => buffer_load(w, inst, cx, 8),
        SBufferLoadDwordx16 => buffer_load(w, inst, cx, 16),
        SStoreDword => store(w, inst, cx, 1),
        SStoreDwordx2 => store(w, inst, cx, 2),
        SStoreDwordx4 => store(w, inst, cx, 4),
        SBufferStoreDword => buffer_store(w, inst, cx, 1),
        SBufferStoreDwordx2 => buffer_store(w, inst, cx, 2),
        SBufferStoreDwordx4 => buffer_store(w, inst, cx, 4),
        SScratchLoadDword => scratch(w, inst, 1, false),
        SScratchLoadDwordx2 => scratch(w, inst, 2, false),
        SScratchLoadDwordx4 => scratch(w, inst, 4, false),
        SScratchStoreDword => scratch(w, inst, 1, true),
        SScratchStoreDwordx2 => scratch(w, inst, 2, true),
        SScratchStoreDwordx4 => scratch(w, inst, 4, true),
        // The emulator has no cycle clock: both counters return the number of instructions this
        // wave has executed, a per-wave monotonic count (deterministic, unlike a wall clock).
        // On the hardware s_memtime is the shader clock and s_memrealtime a 100 MHz constant
        // clock (ISA 8.2.4-8.2.5); only differences between readings are meaningful on either.
        SMemtime | SMemrealtime => {
            let t = w.executed;
            w.set_s64(inst.dst, t)?;
            Ok(Flow::Next)
        }
        // Scalar cache control: memory is always coherent here.
        SDcacheInv | SDcacheWb | SDcacheInvVol | SDcacheWbVol | SDcacheDiscard | SDcacheDiscardX2 => Ok(Flow::Next),
        op => {
            let name = op.name();
            match AtomicOp::from_mnemonic(name) {
                Some((a, wide)) if name.starts_with("s_atomic_") || name.starts_with("s_buffer_atomic_") => {
                    atomic(w, inst, cx, a, wide, name.starts_with("s_buffer_"))
                }
                _ => Err(not_implemented(inst)),
            }
        }
    }
}
