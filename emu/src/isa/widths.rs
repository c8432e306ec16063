//! How many dwords each operand of a decoded instruction spans.

use super::form::x;
use super::inst::{Enc, Inst};

/// Register widths in dwords of an instruction's operands, slot by slot as in [`Inst`]
/// (0 where the slot is empty). A 64-bit source is 2, an MFMA accumulator 4, 16 or 32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Widths {
    /// Width of [`Inst::dst`].
    pub dst: u8,
    /// Width of [`Inst::sdst`].
    pub sdst: u8,
    /// Widths of [`Inst::src`].
    pub src: [u8; 4],
}

impl Inst {
    /// The width of each operand, as this opcode's encoding defines it.
    pub fn widths(&self) -> Widths {
        let f = self.form();
        let w = |i: usize| f.f[i].w.max(u8::from(f.f[i].used()));
        let mut r = Widths::default();
        match self.enc {
            Enc::Sop1 | Enc::Sop2 | Enc::Sopc => {
                r.dst = w(0);
                r.src = [w(1), w(2), 0, 0];
            }
            Enc::Sopk => {
                r.dst = w(0);
                if f.x & x::LIT32 != 0 {
                    r.src[0] = 1;
                }
            }
            Enc::Sopp => {}
            Enc::Smem => {
                r.dst = w(0);
                r.src = [w(1), u8::from(!self.src[1].is_none()), 0, 0];
            }
            Enc::Vop1 | Enc::Vop2 | Enc::Vopc => {
                r.dst = w(0);
                r.src = [w(1), w(2), 0, 0];
                if f.x & x::K_MID != 0 {
                    r.src = [w(1), 1, w(2), 0];
                } else if f.x & x::K_END != 0 {
                    r.src[2] = 1;
                }
                if f.x & x::VCC_AFTER_DST != 0 {
                    r.sdst = 2;
                }
                if f.x & x::VCC_SRC2 != 0 {
                    r.src[2] = 2;
                }
                if self.enc == Enc::Vopc {
                    (r.dst, r.sdst) = (2, 2);
                }
            }
            Enc::Vop3 => {
                r.dst = w(0);
                r.sdst = w(4);
                r.src = [w(1), w(2), w(3), 0];
                if f.mnem.starts_with("v_cmp") {
                    r.sdst = r.dst;
                }
            }
            Enc::Vop3p => {
                r.dst = w(0);
                r.src = [w(1), w(2), w(3), 0];
            }
            Enc::Ds => {
                r.dst = w(0);
                r.src = [w(1), w(2), w(3), 0];
            }
            Enc::Flat | Enc::Global | Enc::Scratch => {
                r.dst = if self.dst.is_none() { 0 } else { w(0) };
                let saddr = !self.src[2].is_none();
                r.src[0] = match (self.enc, self.src[0].is_none()) {
                    (_, true) => 0,
                    (Enc::Global, false) if saddr => 1,
                    _ => w(1),
                };
                r.src[1] = if self.src[1].is_none() { 0 } else { w(2) };
                r.src[2] = match (self.enc, saddr) {
                    (_, false) => 0,
                    (Enc::Global, true) => 2,
                    _ => 1,
                };
            }
            Enc::Mubuf => {
                let data = w(0);
                r.dst = if self.dst.is_none() { 0 } else { data };
                r.src[0] = u8::from(self.flags & super::flags::OFFEN != 0) + u8::from(self.flags & super::flags::IDXEN != 0);
                r.src[1] = if self.src[1].is_none() { 0 } else { data };
                if !self.src[2].is_none() {
                    r.src[2] = 4;
                    r.src[3] = 1;
                }
            }
        }
        if f.x & x::TIED != 0 && matches!(self.enc, Enc::Vop2 | Enc::Vop3) {
            r.src[2] = r.dst;
        }
        // Empty slots have no width.
        for (i, s) in self.src.iter().enumerate() {
            if s.is_none() {
                r.src[i] = 0;
            }
        }
        if self.dst.is_none() {
            r.dst = 0;
        }
        if self.sdst.is_none() {
            r.sdst = 0;
        }
        r
    }
}
