//! Scalar memory (SMEM): loads (incl. from buffer resources), stores, time, cache control.
//!
//! Addresses are forced to dword alignment (the hardware ignores the low two bits).

use super::error::{FaultKind, Space};
use super::step::{Ctx, Exec, Flow, not_implemented};
use super::wave::{Ty, Wave};
use crate::isa::{Inst, Op, Opnd};

/// Reads `n` dwords at `addr` from global memory.
pub(crate) fn read_dwords(cx: &Ctx<'_, '_>, addr: u64, out: &mut [u32]) -> Result<(), FaultKind> {
    let bytes = 4 * out.len() as u64;
    let (r, off) = cx.mem.find(addr, bytes).ok_or(FaultKind::OutOfBounds { space: Space::Global, addr, size: bytes as u32 })?;
    for (i, o) in out.iter_mut().enumerate() {
        *o = r.read_u32(off + 4 * i as u64);
    }
    Ok(())
}

fn offset(w: &Wave, inst: &Inst) -> Result<u64, FaultKind> {
    let soff = if inst.src[1].is_none() { 0 } else { w.sval32(inst.src[1], inst.literal, Ty::B32)? as u64 };
    Ok(soff.wrapping_add(inst.imm as i64 as u64))
}

fn load(w: &mut Wave, inst: &Inst, cx: &Ctx<'_, '_>, n: usize) -> Exec {
    let base = w.sval64(inst.src[0], 0, Ty::U64)?;
    let addr = base.wrapping_add(offset(w, inst)?) & !3;
    let mut buf = [0u32; 16];
    read_dwords(cx, addr, &mut buf[..n])?;
    write_sdata(w, inst.dst, &buf[..n])
}

fn write_sdata(w: &mut Wave, dst: Opnd, vals: &[u32]) -> Exec {
    for (i, &v) in vals.iter().enumerate() {
        w.set_s32(Opnd(dst.0 + i as u16), v)?;
    }
    Ok(Flow::Next)
}

/// s_buffer_load: the base is a buffer resource (V#); dwords past `num_records` read as 0.
fn buffer_load(w: &mut Wave, inst: &Inst, cx: &Ctx<'_, '_>, n: usize) -> Exec {
    let v: [u32; 4] = w.sregs(inst.src[0])?;
    let base = v[0] as u64 | ((v[1] & 0xffff) as u64) << 32;
    let num_records = v[2] as u64;
    let off = offset(w, inst)? & !3;
    let mut buf = [0u32; 16];
    for (i, d) in buf[..n].iter_mut().enumerate() {
        let o = off + 4 * i as u64;
        if o + 4 <= num_records {
            let mut one = [0u32];
            read_dwords(cx, base + o, &mut one)?;
            *d = one[0];
        }
    }
    write_sdata(w, inst.dst, &buf[..n])
}

fn store(w: &mut Wave, inst: &Inst, cx: &Ctx<'_, '_>, n: usize) -> Exec {
    let base = w.sval64(inst.src[0], 0, Ty::U64)?;
    let addr = base.wrapping_add(offset(w, inst)?) & !3;
    let bytes = 4 * n as u64;
    let (r, off) = cx.mem.find(addr, bytes).ok_or(FaultKind::OutOfBounds { space: Space::Global, addr, size: bytes as u32 })?;
    // For stores the decoder puts sdata (the value) in `dst`, as the encoding does.
    for i in 0..n {
        r.write_u32(off + 4 * i as u64, w.sval32(Opnd(inst.dst.0 + i as u16), 0, Ty::B32)?);
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
        // A monotonic clock: the wave's instruction count (real time is not modelled here).
        SMemtime | SMemrealtime => {
            let t = w.executed;
            w.set_s64(inst.dst, t)?;
            Ok(Flow::Next)
        }
        SDcacheInv | SDcacheWb | SDcacheInvVol | SDcacheWbVol => Ok(Flow::Next),
        _ => Err(not_implemented(inst)),
    }
}
