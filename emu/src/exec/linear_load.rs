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
use super::cpu::multiversion;
use super::step::{Ctx, Exec, Flow};
use super::wave::{LANES, Ty, Wave};
use crate::isa::{Enc, Inst, Opnd, flags};

/// Live lanes whose bytes span at most this many are read from memory in one pass.
const SPAN_BYTES: usize = 2048;
/// [`SPAN_BYTES`] in dwords (a power of two).
const SPAN_WORDS: usize = SPAN_BYTES / 4;

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
    // The span of the live lanes' bytes, and whether each is dword-aligned. Every lane live
    // (the common case) takes a loop without masks, which vectorises.
    let (lo, hi) = if live == u64::MAX {
        let (lo, hi, bits) = extremes(&addrs);
        if bits % 4 != 0 {
            return None;
        }
        (lo, hi.checked_add(bytes as u64)?)
    } else {
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        for l in (0..LANES).filter(|&l| live >> l & 1 == 1) {
            if addrs[l] % 4 != 0 {
                return None;
            }
            lo = lo.min(addrs[l]);
            hi = hi.max(addrs[l].checked_add(bytes as u64)?);
        }
        (lo, hi)
    };
    let mut data = [[0u32; LANES]; 4];
    if live != 0 {
        // MUBUF addresses in the scratch window are private memory (`vmem::mubuf_targets`).
        if inst.enc == Enc::Mubuf && !(hi <= SCRATCH_WINDOW || lo >= SCRATCH_WINDOW + SCRATCH_WINDOW_SIZE) {
            return None;
        }
        let (region, _) = cx.mem.find(lo, hi - lo)?;
        if hi - lo <= SPAN_BYTES as u64 {
            // A compact span (a wave's 1 KiB of 128-bit loads): read once, lanes gathered from
            // the copy.
            let mut copy = [0u32; SPAN_WORDS];
            let words = ((hi - lo) / 4) as usize;
            region.read_dwords(lo - region.base, &mut copy[..words]);
            gather(&copy, &addrs, lo, live, n, &mut data);
        } else {
            let mut dw = [0u32; 4];
            for l in (0..LANES).filter(|&l| live >> l & 1 == 1) {
                region.read_dwords(addrs[l] - region.base, &mut dw[..n]);
                for k in 0..n {
                    data[k][l] = dw[k];
                }
            }
        }
        // The accesses are listed only when counted in full (lean: the bytes alone).
        let m = live.count_ones() as usize;
        if cx.counters.is_lean() {
            cx.counters.global_traffic(Access::Load, m as u64 * bytes as u64);
        } else {
            let mut g = [(0u64, 0u32); LANES];
            for (gi, l) in (0..LANES).filter(|&l| live >> l & 1 == 1).enumerate() {
                g[gi] = (addrs[l], bytes);
            }
            cx.counters.global_access(Access::Load, &g[..m]);
        }
    }
    for (k, d) in data.iter().enumerate().take(n) {
        if let Err(e) = w.write_v32(Opnd(inst.dst.0 + k as u16), exec, d) {
            return Some(Err(e.into()));
        }
    }
    Some(Ok(Flow::Next))
}

multiversion! {
    /// The smallest and largest address, and the OR of all (its low bits: the alignment).
    fn extremes(addrs: &[u64; LANES]) -> (u64, u64, u64) {
        let (mut lo, mut hi, mut bits) = (u64::MAX, 0u64, 0u64);
        for &a in addrs {
            lo = lo.min(a);
            hi = hi.max(a);
            bits |= a;
        }
        (lo, hi, bits)
    }
}

multiversion! {
    /// The `n` dwords of each live lane from `copy`, the words from byte address `lo` on (every
    /// live lane's inside it).
    fn gather(copy: &[u32; SPAN_WORDS], addrs: &[u64; LANES], lo: u64, live: u64, n: usize, data: &mut [[u32; LANES]; 4]) {
        match n {
            1 => gather_n::<1>(copy, addrs, lo, live, data),
            2 => gather_n::<2>(copy, addrs, lo, live, data),
            3 => gather_n::<3>(copy, addrs, lo, live, data),
            _ => gather_n::<4>(copy, addrs, lo, live, data),
        }
    }
}

/// [`gather`] of `N` dwords. The indices are masked to the copy's size, which changes none
/// (they are inside it) but lets the compiler drop the bounds checks and vectorise.
#[inline(always)]
fn gather_n<const N: usize>(copy: &[u32; SPAN_WORDS], addrs: &[u64; LANES], lo: u64, live: u64, data: &mut [[u32; LANES]; 4]) {
    let at = |l: usize, k: usize| ((addrs[l].wrapping_sub(lo) / 4) as usize + k) & (SPAN_WORDS - 1);
    if live == u64::MAX {
        for k in 0..N {
            for l in 0..LANES {
                data[k][l] = copy[at(l, k)];
            }
        }
    } else {
        for l in (0..LANES).filter(|&l| live >> l & 1 == 1) {
            for k in 0..N {
                data[k][l] = copy[at(l, k)];
            }
        }
    }
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
    if let Some((whole, part)) = ad.offsets_in_bytes(bytes, addrs) {
        // Some dwords in range, some not: the general path.
        return if part & exec != 0 { None } else { Some(whole & exec) };
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
