//! The common vector-memory load in one pass: `buffer_load_dword{,x2,x3,x4}` into VGPRs from a
//! linear (unswizzled, bound) resource, every lane's dwords aligned and either wholly in range
//! or wholly out, the in-range ones inside one allocation and outside the scratch window; and
//! `global_load_dword{,x2,x3,x4}` with every lane's dwords aligned and inside one allocation.
//!
//! The general path (`vmem::load`) builds a list of pieces per lane, looks each lane's memory up,
//! copies bytes through a staging buffer and lists the accesses again for the counters: a
//! model decode step spent a tenth of its time in 128-bit buffer loads. Here addresses are
//! computed once into an array, the allocation is found once for the whole span, and dwords
//! go straight into the destination registers. The results, faults and counters are the
//! general path's: anything this path does not handle (a lane partly in range, an unaligned or
//! scattered access, a bad register) is left to it, before anything is written.

use super::buffer::{self, SCRATCH_WINDOW, SCRATCH_WINDOW_SIZE};
use super::counters::Access;
use super::step::{Ctx, Exec, Flow};
use super::wave::{LANES, Ty, Wave};
use crate::isa::{Enc, Inst, Opnd, flags};

/// Runs `inst`, a MUBUF or GLOBAL load of `bytes` (4, 8, 12 or 16) into VGPRs, if it is the
/// common case (module docs); `None` leaves it to the general path.
pub(crate) fn try_load(w: &mut Wave, inst: &Inst, cx: &mut Ctx<'_, '_>, bytes: u32) -> Option<Exec> {
    if inst.flags & flags::LDS != 0 || !matches!(bytes, 4 | 8 | 12 | 16) {
        return None;
    }
    let n = (bytes / 4) as usize;
    // Every destination register exists (the general path reports one that does not).
    w.vreg_at(inst.dst, n as u16 - 1).ok()?;
    let exec = w.exec();
    let mut addrs = [0u64; LANES];
    let live = match inst.enc {
        Enc::Mubuf => mubuf_addrs(w, inst, bytes, &mut addrs)?,
        Enc::Global => global_addrs(w, inst, &mut addrs)?,
        _ => return None,
    };
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for l in (0..LANES).filter(|&l| live >> l & 1 == 1) {
        if addrs[l] % 4 != 0 {
            return None;
        }
        lo = lo.min(addrs[l]);
        hi = hi.max(addrs[l].checked_add(bytes as u64)?);
    }
    let mut data = [[0u32; LANES]; 4];
    if live != 0 {
        // MUBUF addresses in the scratch window are private memory (`vmem::mubuf_targets`).
        if inst.enc == Enc::Mubuf && !(hi <= SCRATCH_WINDOW || lo >= SCRATCH_WINDOW + SCRATCH_WINDOW_SIZE) {
            return None;
        }
        let (region, _) = cx.mem.find(lo, hi - lo)?;
        // The accesses are listed only when counted in full (lean: the bytes alone).
        let mut g = if cx.counters.is_lean() { None } else { Some([(0u64, 0u32); LANES]) };
        let mut m = 0;
        let mut dw = [0u32; 4];
        for l in (0..LANES).filter(|&l| live >> l & 1 == 1) {
            region.read_dwords(addrs[l] - region.base, &mut dw[..n]);
            for k in 0..n {
                data[k][l] = dw[k];
            }
            if let Some(g) = g.as_mut() {
                g[m] = (addrs[l], bytes);
            }
            m += 1;
        }
        match g {
            Some(g) => cx.counters.global_access(Access::Load, &g[..m]),
            None => cx.counters.global_traffic(Access::Load, m as u64 * bytes as u64),
        }
    }
    for (k, d) in data.iter().enumerate().take(n) {
        if let Err(e) = w.write_v32(Opnd(inst.dst.0 + k as u16), exec, d) {
            return Some(Err(e.into()));
        }
    }
    Some(Ok(Flow::Next))
}

/// The addresses of a MUBUF load's lanes into `addrs`, and the lanes in range (the others of
/// EXEC read zeros); `None` for what the general path must do (module docs).
fn mubuf_addrs(w: &Wave, inst: &Inst, bytes: u32, addrs: &mut [u64; LANES]) -> Option<u64> {
    let exec = w.exec();
    let ad = buffer::Addressing::new(w, inst, false).ok()?;
    // Unbound resources and swizzles take the general path.
    if exec == 0 || ad.v.swizzle || ad.unbound {
        return None;
    }
    let units = bytes / 4;
    let mut live = 0u64;
    for l in (0..LANES).filter(|&l| exec >> l & 1 == 1) {
        match ad.linear(l, units, 4) {
            (0, _) => {}
            (n, addr) if n == units => {
                addrs[l] = addr;
                live |= 1 << l;
            }
            _ => return None, // some dwords in range, some not
        }
    }
    Some(live)
}

/// The addresses of a GLOBAL load's active lanes (`vmem::targets`: SADDR plus a 32-bit VGPR
/// offset, or a 64-bit VGPR address, plus the signed instruction offset); every one is live.
fn global_addrs(w: &Wave, inst: &Inst, addrs: &mut [u64; LANES]) -> Option<u64> {
    let exec = w.exec();
    let imm = inst.imm as i64 as u64;
    let lo = w.vreg_at(inst.src[0], 0).ok()?;
    if inst.src[2].is_none() {
        let hi = w.vreg_at(inst.src[0], 1).ok()?;
        for l in (0..LANES).filter(|&l| exec >> l & 1 == 1) {
            addrs[l] = (lo[l] as u64 | (hi[l] as u64) << 32).wrapping_add(imm);
        }
    } else {
        let s = w.sval64(inst.src[2], 0, Ty::U64).ok()?;
        for l in (0..LANES).filter(|&l| exec >> l & 1 == 1) {
            addrs[l] = s.wrapping_add(lo[l] as u64).wrapping_add(imm);
        }
    }
    Some(exec)
}
