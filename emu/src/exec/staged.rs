//! Destination registers of a memory instruction, staged for per-lane writes and written back
//! once: looking a register up per lane would cost a bounds check and an error path per lane,
//! and memory instructions produce their results lane by lane.

use super::error::FaultKind;
use super::wave::{VReg, Wave};
use crate::isa::Opnd;

/// Up to four consecutive vector registers starting at `base`, with their current values.
pub(crate) struct Staged {
    base: Opnd,
    n: u16,
    regs: [VReg; 4],
}

impl Staged {
    /// Stages `n` registers from `base` (none when `base` is absent, e.g. atomics without
    /// return).
    pub fn new(w: &Wave, base: Opnd, n: u16) -> Result<Staged, FaultKind> {
        let n = if base.is_none() { 0 } else { n.min(4) };
        let mut regs = [[0u32; 64]; 4];
        for k in 0..n {
            regs[k as usize] = *w.vreg_at(base, k)?;
        }
        Ok(Staged { base, n, regs })
    }

    /// Lane `l` of register `k` (its value before the instruction unless set since).
    #[inline]
    pub fn get(&self, k: u16, l: usize) -> u32 {
        self.regs[k as usize][l]
    }

    /// Sets lane `l` of register `k`.
    #[inline]
    pub fn set(&mut self, k: u16, l: usize, v: u32) {
        debug_assert!(k < self.n, "register {k} of a {}-register destination", self.n);
        self.regs[k as usize][l] = v;
    }

    /// Writes the registers back, the lanes in `mask` only.
    pub fn commit(self, w: &mut Wave, mask: u64) -> Result<(), FaultKind> {
        for k in 0..self.n {
            w.write_v32(Opnd(self.base.0 + k), mask, &self.regs[k as usize])?;
        }
        Ok(())
    }
}
