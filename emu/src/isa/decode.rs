//! Machine words -> [`Inst`].
//!
//! The decoder accepts exactly what LLVM's gfx942 disassembler accepts: the opcode tables and
//! the per-opcode facts (which fields are operands, which modifier bits are legal) come from
//! [`super::tables`], learned from llvm-objdump-19. Anything else is a [`DecodeError`] naming
//! the format, the opcode and the words; nothing is guessed.
//!
//! Placement follows the contract in [`super::inst`]. Where the contract leaves room:
//! - compares (VOPC `_e32`, `_e64`, SDWA) put the mask destination in both `sdst` and `dst`;
//! - tied-accumulator ops (mac, fmac, dot*c, including their `_e64` forms) get `src[2] = dst`;
//! - madmk/fmamk put K in `src[1]` (D = src0 * K + src1 in ISA order becomes src0 * src1 + src2
//!   with src1 = K), madak/fmaak put K in `src[2]`; both as [`Opnd::LITERAL`];
//! - `v_fma_mix*`: the neg_hi bits are absolute-value modifiers and go to `mods.abs`;
//! - a VOP3/DPP neg bit on an integer source (v_ldexp exponent, v_cvt_pk_u8 bytes, ...) is a
//!   sign-extension modifier (LLVM prints `sext(v1)`); it stays in `mods.neg`;
//! - modifier bits LLVM accepts but ignores for an opcode (op_sel of most VOP3 ops, gds of
//!   most DS ops, ...) are dropped, so every bit left in `mods`/`flags` means something;
//! - FLAT (segment 0) offsets are the unsigned 13-bit field, GLOBAL/SCRATCH sign-extend it;
//! - `s_atc_probe*`: the 7-bit probe control (printed first) goes to `mods.cbsz`;
//! - `s_set_gpr_idx_on`: the mode mask (ssrc1) goes to `imm`;
//! - SOPK `s_setreg_imm32_b32`: the 32-bit value is `src[0]` = literal.

use std::fmt;

use super::form::{Fld, Form, Use, cls, m, x};
use super::inst::{Dpp, Enc, Ext, Inst, Mods, Opnd, Sdwa, flags};
use super::operand::{is_inline_float, is_inline_int, sreg_ok};
use super::tables::{self, FORMS, NO_FORM};

/// Why some words are not a gfx942 instruction (or not one this decoder knows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// The encoding format identified from the first dword ("unknown" if none matched).
    pub format: &'static str,
    /// The opcode field of that format (`u32::MAX` when the format has none or is unknown).
    pub opcode: u32,
    /// Address of the first dword.
    pub pc: u64,
    /// The dwords looked at (first `nwords` valid).
    pub words: [u32; 3],
    /// How many of `words` are valid.
    pub nwords: u8,
    /// What is wrong.
    pub reason: &'static str,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot decode {}", self.format)?;
        if self.opcode != u32::MAX {
            write!(f, " opcode {:#x}", self.opcode)?;
        }
        write!(f, " at pc {:#x} (words", self.pc)?;
        for w in &self.words[..self.nwords as usize] {
            write!(f, " {w:08x}")?;
        }
        write!(f, "): {}", self.reason)
    }
}

impl std::error::Error for DecodeError {}

/// Decodes the instruction starting at `words[0]`, located at `pc`.
///
/// The slice may extend past the instruction; a literal, SDWA/DPP word or second dword is
/// read from it, and its absence is an error.
///
/// # Errors
/// [`DecodeError`] for an unknown format or opcode, a missing dword, an operand or modifier
/// LLVM's disassembler rejects.
pub fn decode(words: &[u32], pc: u64) -> Result<Inst, DecodeError> {
    let Some(&w0) = words.first() else {
        return Err(DecodeError { format: "unknown", opcode: u32::MAX, pc, words: [0; 3], nwords: 0, reason: "no instruction words" });
    };
    let mut cx = Cx { words, pc, format: "unknown", opcode: u32::MAX, lit: false };
    let top = w0 >> 23;
    if top == 0x17D {
        cx.sop1(w0)
    } else if top == 0x17E {
        cx.sopc(w0)
    } else if top == 0x17F {
        cx.sopp(w0)
    } else if w0 >> 28 == 0xB {
        cx.sopk(w0)
    } else if w0 >> 30 == 0b10 {
        cx.sop2(w0)
    } else if w0 >> 26 == 0b110000 {
        cx.smem(w0)
    } else if top == 0x1A7 {
        cx.vop3p(w0)
    } else if w0 >> 26 == 0b110100 {
        cx.vop3(w0)
    } else if w0 >> 26 == 0b110110 {
        cx.ds(w0)
    } else if w0 >> 26 == 0b110111 {
        cx.flat(w0)
    } else if w0 >> 26 == 0b111000 {
        cx.mubuf(w0)
    } else if w0 >> 25 == 0b0111110 {
        cx.vop_e32(w0, E32::Vopc)
    } else if w0 >> 25 == 0b0111111 {
        cx.vop_e32(w0, E32::Vop1)
    } else if w0 >> 31 == 0 {
        cx.vop_e32(w0, E32::Vop2)
    } else {
        cx.format = match w0 >> 26 {
            0b111010 => "MTBUF",
            0b111100 => "MIMG",
            0b110001 => "EXP",
            0b110101 => "VINTRP",
            _ => "unknown",
        };
        Err(cx.err("format not supported on gfx942 by this decoder"))
    }
}

/// Decodes a whole code range by linear sweep, one instruction after the other.
///
/// # Errors
/// The first [`DecodeError`]; a trailing partial dword is an error too.
pub fn decode_range(code: &[u8], base_pc: u64) -> Result<Vec<(u64, Inst)>, DecodeError> {
    if !code.len().is_multiple_of(4) {
        let at = code.len() & !3;
        let mut tail = [0u8; 4];
        tail[..code.len() - at].copy_from_slice(&code[at..]);
        return Err(DecodeError {
            format: "unknown",
            opcode: u32::MAX,
            pc: base_pc + at as u64,
            words: [u32::from_le_bytes(tail), 0, 0],
            nwords: 1,
            reason: "code length is not a multiple of 4 bytes",
        });
    }
    let words: Vec<u32> = code.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let mut out = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let pc = base_pc + 4 * i as u64;
        let inst = decode(&words[i..], pc)?;
        out.push((pc, inst));
        i += inst.size as usize / 4;
    }
    Ok(out)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum E32 {
    Vop1,
    Vop2,
    Vopc,
}

struct Cx<'a> {
    words: &'a [u32],
    pc: u64,
    format: &'static str,
    opcode: u32,
    /// A source already took the literal dword (all sources share the one literal).
    lit: bool,
}

type R<T> = Result<T, DecodeError>;

fn blank(op: super::op::Op, enc: Enc) -> Inst {
    Inst {
        op,
        enc,
        size: 4,
        dst: Opnd::NONE,
        sdst: Opnd::NONE,
        src: [Opnd::NONE; 4],
        literal: 0,
        imm: 0,
        mods: Mods::default(),
        ext: Ext::None,
        flags: 0,
    }
}

fn bit(w: u32, b: u32) -> u32 {
    (w >> b) & 1
}

fn sext(v: u32, bits: u32) -> i32 {
    ((v << (32 - bits)) as i32) >> (32 - bits)
}

impl Cx<'_> {
    fn err(&self, reason: &'static str) -> DecodeError {
        let n = self.words.len().min(3);
        let mut words = [0; 3];
        words[..n].copy_from_slice(&self.words[..n]);
        DecodeError { format: self.format, opcode: self.opcode, pc: self.pc, words, nwords: n as u8, reason }
    }

    fn word(&self, i: usize) -> R<u32> {
        self.words.get(i).copied().ok_or_else(|| self.err("instruction is cut off: a dword is missing"))
    }

    fn form(&mut self, format: &'static str, table: &[u16], op: u32) -> R<&'static Form> {
        self.format = format;
        self.opcode = op;
        match table.get(op as usize) {
            Some(&i) if i != NO_FORM => Ok(&FORMS[i as usize]),
            _ => Err(self.err("unknown opcode")),
        }
    }

    /// Checks an operand field that the opcode does not use.
    fn unused(&self, f: &Fld, v: u32, what: &'static str) -> R<()> {
        if f.use_ == Use::Zero && v != 0 {
            return Err(self.err(what));
        }
        Ok(())
    }

    /// A modifier bit that is set must be one LLVM accepts; returns whether it is meaningful.
    fn modbit(&self, form: &Form, b: u32, what: &'static str) -> R<bool> {
        if form.ok >> b & 1 == 1 {
            Ok(true)
        } else if form.ign >> b & 1 == 1 {
            Ok(false)
        } else {
            Err(self.err(what))
        }
    }

    /// A source in the 9-bit (or 8-bit scalar) operand space.
    fn src(&mut self, code: u32, f: &Fld, lit_at: usize, inst: &mut Inst) -> R<Opnd> {
        let c = code as u16;
        let w = f.w.max(1);
        match c {
            256..=511 => {
                if f.cls & cls::V == 0 {
                    return Err(self.err("a vector register is not allowed in this source"));
                }
                let n = c - 256;
                if n as u32 + w as u32 > 256 {
                    return Err(self.err("vector register range runs past the last register"));
                }
                Ok(if f.cls & cls::A != 0 { Opnd::agpr(n) } else { Opnd::vgpr(n) })
            }
            255 => {
                if f.cls & cls::L == 0 {
                    return Err(self.err("a literal is not allowed in this source"));
                }
                if !self.lit {
                    inst.literal = self.word(lit_at)?;
                    inst.size += 4;
                    self.lit = true;
                }
                Ok(Opnd::LITERAL)
            }
            _ if is_inline_int(c) || is_inline_float(c) => {
                if f.cls & cls::C == 0 {
                    return Err(self.err("an inline constant is not allowed in this source"));
                }
                Ok(Opnd(c))
            }
            249 | 250 => Err(self.err("reserved source operand code")),
            96..=127 | 235..=254 => {
                if !f.takes_special(c) {
                    return Err(self.err("register or hardware value not allowed in this source"));
                }
                Ok(Opnd(c))
            }
            0..=95 => {
                if f.cls & cls::S == 0 {
                    return Err(self.err("a scalar register is not allowed in this source"));
                }
                if !sreg_ok(c, w) {
                    return Err(self.err("invalid scalar register for the operand width"));
                }
                Ok(Opnd(c))
            }
            _ => Err(self.err("reserved source operand code")),
        }
    }

    /// An 8-bit register field: a VGPR (AGPR when `agpr`), or an SGPR when the form says so.
    fn reg8(&self, n: u32, f: &Fld, agpr: bool) -> R<Opnd> {
        let n = n as u16;
        let w = f.w.max(1);
        if f.cls & cls::S != 0 && f.cls & cls::V == 0 {
            return self.sreg_f(n as u32, f);
        }
        if n as u32 + w as u32 > 256 {
            return Err(self.err("vector register range runs past the last register"));
        }
        Ok(if agpr || f.cls & cls::A != 0 { Opnd::agpr(n) } else { Opnd::vgpr(n) })
    }

    fn sreg(&self, n: u32, w: u8) -> R<Opnd> {
        if !sreg_ok(n as u16, w) {
            return Err(self.err("invalid scalar register for the operand width"));
        }
        Ok(Opnd(n as u16))
    }

    /// A scalar register field, checked against the field's register class.
    fn sreg_f(&self, n: u32, f: &Fld) -> R<Opnd> {
        if n >= 96 {
            if (n < 128 || (235..=254).contains(&n)) && f.takes_special(n as u16) {
                return Ok(Opnd(n as u16));
            }
            return Err(self.err("register not allowed for this operand"));
        }
        self.sreg(n, f.w)
    }

    // -----------------------------------------------------------------------------------------
    // Scalar ALU

    fn sop1(&mut self, w0: u32) -> R<Inst> {
        let form = self.form("SOP1", &tables::T_SOP1, (w0 >> 8) & 0xFF)?;
        let mut inst = blank(form.op, Enc::Sop1);
        let (sdst, ssrc0) = ((w0 >> 16) & 0x7F, w0 & 0xFF);
        let [fd, fs, ..] = &form.f;
        if fd.used() {
            inst.dst = self.sreg_f(sdst, fd)?;
        } else {
            self.unused(fd, sdst, "sdst must be zero")?;
        }
        if fs.used() {
            inst.src[0] = self.src(ssrc0, fs, 1, &mut inst)?;
        } else {
            self.unused(fs, ssrc0, "ssrc0 must be zero")?;
        }
        Ok(inst)
    }

    fn sop2(&mut self, w0: u32) -> R<Inst> {
        let form = self.form("SOP2", &tables::T_SOP2, (w0 >> 23) & 0x7F)?;
        let mut inst = blank(form.op, Enc::Sop2);
        let (sdst, s1, s0) = ((w0 >> 16) & 0x7F, (w0 >> 8) & 0xFF, w0 & 0xFF);
        let [fd, f0, f1, ..] = &form.f;
        if fd.used() {
            inst.dst = self.sreg_f(sdst, fd)?;
        } else {
            self.unused(fd, sdst, "sdst must be zero")?;
        }
        inst.src[0] = self.src(s0, f0, 1, &mut inst)?;
        inst.src[1] = self.src(s1, f1, 1, &mut inst)?;
        Ok(inst)
    }

    fn sopc(&mut self, w0: u32) -> R<Inst> {
        let form = self.form("SOPC", &tables::T_SOPC, (w0 >> 16) & 0x7F)?;
        let mut inst = blank(form.op, Enc::Sopc);
        let (s1, s0) = ((w0 >> 8) & 0xFF, w0 & 0xFF);
        inst.src[0] = self.src(s0, &form.f[1], 1, &mut inst)?;
        if form.x & x::GPR_IDX_SRC1 != 0 {
            inst.imm = s1 as i32;
        } else {
            inst.src[1] = self.src(s1, &form.f[2], 1, &mut inst)?;
        }
        Ok(inst)
    }

    fn sopk(&mut self, w0: u32) -> R<Inst> {
        let form = self.form("SOPK", &tables::T_SOPK, (w0 >> 23) & 0x1F)?;
        let mut inst = blank(form.op, Enc::Sopk);
        let sdst = (w0 >> 16) & 0x7F;
        let fd = &form.f[0];
        if fd.used() {
            inst.dst = self.sreg_f(sdst, fd)?;
        } else {
            self.unused(fd, sdst, "sdst must be zero")?;
        }
        inst.imm = sext(w0 & 0xFFFF, 16);
        if form.x & x::LIT32 != 0 {
            inst.literal = self.word(1)?;
            inst.src[0] = Opnd::LITERAL;
            inst.size = 8;
        }
        Ok(inst)
    }

    fn sopp(&mut self, w0: u32) -> R<Inst> {
        let form = self.form("SOPP", &tables::T_SOPP, (w0 >> 16) & 0x7F)?;
        let mut inst = blank(form.op, Enc::Sopp);
        let imm = w0 & 0xFFFF;
        if form.x & x::IMM_STYLE == x::IMM_NONE && imm != 0 {
            return Err(self.err("this instruction takes no immediate"));
        }
        inst.imm = sext(imm, 16);
        Ok(inst)
    }

    // -----------------------------------------------------------------------------------------
    // Scalar memory

    fn smem(&mut self, w0: u32) -> R<Inst> {
        let form = self.form("SMEM", &tables::T_SMEM, (w0 >> 18) & 0xFF)?;
        let w1 = self.word(1)?;
        let mut inst = blank(form.op, Enc::Smem);
        inst.size = 8;
        let (imm, soe) = (bit(w0, 17), bit(w0, 14));
        let mode = match (imm, soe) {
            (1, 0) => x::SMEM_IMM,
            (0, 0) => x::SMEM_SGPR,
            (0, _) => x::SMEM_SOE,
            _ => x::SMEM_SOE_IMM,
        };
        if form.x & mode == 0 {
            return Err(self.err("offset mode not accepted for this opcode"));
        }
        let sdata = (w0 >> 6) & 0x7F;
        let [fd, fb, ..] = &form.f;
        if form.x & x::SMEM_SDATA_IMM != 0 {
            inst.mods.cbsz = sdata as u8;
        } else if fd.used() {
            inst.dst = self.sreg_f(sdata, fd)?;
        } else {
            self.unused(fd, sdata, "sdata must be zero")?;
        }
        let sbase = (w0 & 0x3F) * 2;
        if fb.used() {
            inst.src[0] = self.sreg_f(sbase, fb)?;
        } else {
            self.unused(fb, sbase, "sbase must be zero")?;
        }
        // The learned modes say which offsets the opcode has at all (s_memtime has none).
        let has_offsets = fb.used();
        let offset = w1 & 0x1F_FFFF;
        match mode {
            x::SMEM_IMM => {
                if has_offsets {
                    inst.imm = sext(offset, 21);
                    inst.flags |= flags::IMM;
                }
            }
            x::SMEM_SGPR => {
                if has_offsets {
                    inst.src[1] = self.sreg(offset & 0x7F, 1)?;
                }
            }
            x::SMEM_SOE => {
                if has_offsets {
                    inst.src[1] = self.sreg(w1 >> 25, 1)?;
                }
            }
            _ => {
                inst.src[1] = self.sreg(w1 >> 25, 1)?;
                inst.imm = sext(offset, 21);
                inst.flags |= flags::IMM;
            }
        }
        if bit(w0, 16) == 1 && self.modbit(form, m::SMEM_GLC, "glc not accepted")? {
            inst.flags |= flags::SC0;
        }
        if bit(w0, 15) == 1 && self.modbit(form, m::SMEM_NV, "nv not accepted")? {
            inst.flags |= flags::NV;
        }
        Ok(inst)
    }

    // -----------------------------------------------------------------------------------------
    // Vector ALU, 32-bit encodings (and their SDWA/DPP extensions)

    fn vop_e32(&mut self, w0: u32, kind: E32) -> R<Inst> {
        let (name, op, table, sdwa, dpp, enc) = match kind {
            E32::Vop1 => ("VOP1", (w0 >> 9) & 0xFF, &tables::T_VOP1[..], &tables::T_SDWA1[..], &tables::T_DPP1[..], Enc::Vop1),
            E32::Vop2 => ("VOP2", (w0 >> 25) & 0x3F, &tables::T_VOP2[..], &tables::T_SDWA2[..], &tables::T_DPP2[..], Enc::Vop2),
            E32::Vopc => ("VOPC", (w0 >> 17) & 0xFF, &tables::T_VOPC[..], &tables::T_SDWAC[..], &tables::T_DPPC[..], Enc::Vopc),
        };
        let src0 = w0 & 0x1FF;
        // An opcode without src0 (v_nop, v_clrexcp) has no SDWA/DPP form: 0xF9/0xFA are then
        // just ignored bits.
        let plain = self.form(name, table, op).ok();
        let ext = plain.is_none_or(|f| f.f[1].used());
        let form = match src0 {
            _ if !ext => plain.unwrap(),
            0xF9 => self.form(
                if kind == E32::Vop1 {
                    "VOP1_SDWA"
                } else if kind == E32::Vop2 {
                    "VOP2_SDWA"
                } else {
                    "VOPC_SDWA"
                },
                sdwa,
                op,
            )?,
            0xFA => self.form(
                if kind == E32::Vop1 {
                    "VOP1_DPP"
                } else if kind == E32::Vop2 {
                    "VOP2_DPP"
                } else {
                    "VOPC_DPP"
                },
                dpp,
                op,
            )?,
            _ => self.form(name, table, op)?,
        };
        let mut inst = blank(form.op, enc);
        let vdst = (w0 >> 17) & 0xFF;
        let vsrc1 = (w0 >> 9) & 0xFF;
        let [fd, f0, f1, ..] = &form.f;
        if kind != E32::Vopc {
            if fd.used() {
                inst.dst = self.reg8(vdst, fd, false)?;
            } else {
                self.unused(fd, vdst, "vdst must be zero")?;
            }
        }
        match src0 {
            0xF9 if ext => self.sdwa(form, kind, &mut inst)?,
            0xFA if ext => self.dpp(form, &mut inst)?,
            _ => {
                if f0.used() {
                    inst.src[0] = self.src(src0, f0, 1, &mut inst)?;
                } else {
                    self.unused(f0, src0, "src0 must be zero")?;
                }
                if kind != E32::Vop1 {
                    inst.src[1] = self.reg8(vsrc1, f1, false)?;
                }
            }
        }
        self.e32_implicit(form, kind, &mut inst)?;
        Ok(inst)
    }

    /// Operands the 32-bit encodings leave implicit: VCC, K, the tied accumulator.
    fn e32_implicit(&mut self, form: &Form, kind: E32, inst: &mut Inst) -> R<()> {
        if form.x & x::VCC_AFTER_DST != 0 {
            inst.sdst = Opnd::VCC;
        }
        if form.x & x::VCC_SRC2 != 0 {
            inst.src[2] = Opnd::VCC;
        }
        if kind == E32::Vopc && inst.sdst.is_none() {
            inst.sdst = Opnd::VCC;
        }
        if kind == E32::Vopc {
            inst.dst = inst.sdst;
        }
        if form.x & (x::K_MID | x::K_END) != 0 {
            if !self.lit {
                inst.literal = self.word(1)?;
                inst.size += 4;
                self.lit = true;
            }
            if form.x & x::K_MID != 0 {
                inst.src[2] = inst.src[1];
                inst.src[1] = Opnd::LITERAL;
            } else {
                inst.src[2] = Opnd::LITERAL;
            }
        }
        if form.x & x::TIED != 0 {
            inst.src[2] = inst.dst;
        }
        Ok(())
    }

    fn sdwa(&mut self, form: &Form, kind: E32, inst: &mut Inst) -> R<()> {
        let w0 = self.words[0];
        let sd = self.word(1)?;
        inst.size = 8;
        let [_, f0, f1, ..] = &form.f;
        let check = |cx: &Self, b: u32, what| cx.modbit(form, b, what);
        // Selectors: 0-6 name a part; each value must be one LLVM accepts for this opcode.
        let sel = |cx: &Self, v: u32, base: u32, what| -> R<u8> {
            if v > 6 {
                return Err(cx.err(what));
            }
            check(cx, base + v, what)?;
            Ok(v as u8)
        };
        let mut s = Sdwa { dst_sel: 6, dst_unused: 0, src0_sel: 6, src0_sext: false, src1_sel: 6, src1_sext: false };
        if kind != E32::Vopc {
            s.dst_sel = sel(self, (sd >> 8) & 7, m::SDWA_DST_SEL0, "dst_sel not accepted")?;
            let du = (sd >> 11) & 3;
            if du == 3 {
                return Err(self.err("reserved dst_unused value"));
            }
            check(self, m::SDWA_DST_UNUSED0 + du, "dst_unused not accepted")?;
            s.dst_unused = du as u8;
            if bit(sd, 13) == 1 && check(self, m::SDWA_CLAMP, "clamp not accepted")? {
                inst.mods.clamp = true;
            }
            let omod = (sd >> 14) & 3;
            if omod != 0 && check(self, m::SDWA_OMOD1 + omod - 1, "omod not accepted")? {
                inst.mods.omod = omod as u8;
            }
        } else {
            let sdst = (sd >> 8) & 0x7F;
            if bit(sd, 15) == 1 {
                check(self, m::SDWA_SD, "sdst not accepted")?;
                inst.sdst = self.sreg(sdst, 2)?;
            }
        }
        s.src0_sel = sel(self, (sd >> 16) & 7, m::SDWA_SRC0_SEL0, "src0_sel not accepted")?;
        if bit(sd, 19) == 1 {
            s.src0_sext = check(self, m::SDWA_SRC0_SEXT, "src0 sext not accepted")?;
        }
        if bit(sd, 20) == 1 && check(self, m::SDWA_SRC0_NEG, "src0 neg not accepted")? {
            inst.mods.neg |= 1;
        }
        if bit(sd, 21) == 1 && check(self, m::SDWA_SRC0_ABS, "src0 abs not accepted")? {
            inst.mods.abs |= 1;
        }
        if bit(sd, 22) == 1 {
            check(self, m::SDWA_B22, "reserved SDWA bit 22 is set")?;
        }
        if bit(sd, 30) == 1 {
            check(self, m::SDWA_B30, "reserved SDWA bit 30 is set")?;
        }
        let code0 = sd & 0xFF;
        inst.src[0] = if bit(sd, 23) == 1 {
            if is_inline_int(code0 as u16) || is_inline_float(code0 as u16) {
                check(self, m::SDWA_S0_CONST, "constant src0 not accepted")?;
            } else {
                check(self, m::SDWA_S0, "scalar src0 not accepted")?;
            }
            let f = Fld { cls: cls::S | cls::C, ..*f0 };
            self.src(code0, &f, 2, inst)?
        } else {
            self.src(256 + code0, f0, 2, inst)?
        };
        if kind != E32::Vop1 {
            s.src1_sel = sel(self, (sd >> 24) & 7, m::SDWA_SRC1_SEL0, "src1_sel not accepted")?;
            if bit(sd, 27) == 1 {
                s.src1_sext = check(self, m::SDWA_SRC1_SEXT, "src1 sext not accepted")?;
            }
            if bit(sd, 28) == 1 && check(self, m::SDWA_SRC1_NEG, "src1 neg not accepted")? {
                inst.mods.neg |= 2;
            }
            if bit(sd, 29) == 1 && check(self, m::SDWA_SRC1_ABS, "src1 abs not accepted")? {
                inst.mods.abs |= 2;
            }
            let code1 = (w0 >> 9) & 0xFF;
            inst.src[1] = if bit(sd, 31) == 1 {
                if is_inline_int(code1 as u16) || is_inline_float(code1 as u16) {
                    check(self, m::SDWA_S1_CONST, "constant src1 not accepted")?;
                } else {
                    check(self, m::SDWA_S1, "scalar src1 not accepted")?;
                }
                let f = Fld { cls: cls::S | cls::C, ..*f1 };
                self.src(code1, &f, 2, inst)?
            } else {
                self.src(256 + code1, f1, 2, inst)?
            };
        } else {
            let v = (sd >> 24) & 7;
            sel(self, v, m::SDWA_SRC1_SEL0, "src1_sel not accepted")?;
            for (b, mb) in [(27, m::SDWA_SRC1_SEXT), (28, m::SDWA_SRC1_NEG), (29, m::SDWA_SRC1_ABS), (31, m::SDWA_S1)] {
                if bit(sd, b) == 1 {
                    check(self, mb, "src1 modifier on a one-source instruction")?;
                }
            }
        }
        inst.ext = Ext::Sdwa(s);
        Ok(())
    }

    fn dpp(&mut self, form: &Form, inst: &mut Inst) -> R<()> {
        let w0 = self.words[0];
        let dw = self.word(1)?;
        inst.size = 8;
        let [_, f0, f1, ..] = &form.f;
        let ctrl = (dw >> 8) & 0x1FF;
        let class = (form.x >> x::DPP_CTRL_SHIFT) as usize & 0xFF;
        if tables::DPP_CTRLS[class][ctrl as usize / 64] >> (ctrl % 64) & 1 == 0 {
            return Err(self.err("dpp_ctrl value not accepted"));
        }
        if (dw >> 17) & 3 != 0 {
            self.modbit(form, m::DPP_RESERVED, "reserved DPP bits are set")?;
        }
        let bound = bit(dw, 19) == 1 && self.modbit(form, m::DPP_BOUND, "bound_ctrl not accepted")?;
        for (b, mb, mask, neg) in [
            (20, m::DPP_SRC0_NEG, 1, true),
            (21, m::DPP_SRC0_ABS, 1, false),
            (22, m::DPP_SRC1_NEG, 2, true),
            (23, m::DPP_SRC1_ABS, 2, false),
        ] {
            if bit(dw, b) == 1 && self.modbit(form, mb, "DPP source modifier not accepted")? {
                if neg {
                    inst.mods.neg |= mask;
                } else {
                    inst.mods.abs |= mask;
                }
            }
        }
        inst.src[0] = self.src(256 + (dw & 0xFF), f0, 2, inst)?;
        if f1.used() {
            inst.src[1] = self.reg8((w0 >> 9) & 0xFF, f1, false)?;
        }
        inst.ext = Ext::Dpp(Dpp { ctrl: ctrl as u16, row_mask: (dw >> 28) as u8, bank_mask: ((dw >> 24) & 0xF) as u8, bound_ctrl: bound });
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Vector ALU, 64-bit encodings

    fn vop3(&mut self, w0: u32) -> R<Inst> {
        let form = self.form("VOP3", &tables::T_VOP3, (w0 >> 16) & 0x3FF)?;
        let w1 = self.word(1)?;
        let mut inst = blank(form.op, Enc::Vop3);
        inst.size = 8;
        let vop3b = form.f[4].used();
        let clamp = bit(w0, 15);
        let omod = (w1 >> 27) & 3;
        let neg = (w1 >> 29) & 7;
        if clamp == 1 {
            inst.mods.clamp = self.modbit(form, m::V3_CLAMP, "clamp not accepted")?;
        }
        if omod != 0 && self.modbit(form, m::V3_OMOD1 + omod - 1, "omod not accepted")? {
            inst.mods.omod = omod as u8;
        }
        for i in 0..3 {
            if neg >> i & 1 == 1 && self.modbit(form, m::V3_NEG0 + i, "neg not accepted")? {
                inst.mods.neg |= 1 << i;
            }
        }
        if vop3b {
            inst.sdst = self.sreg_f((w0 >> 8) & 0x7F, &form.f[4])?;
        } else {
            let abs = (w0 >> 8) & 7;
            let opsel = (w0 >> 11) & 0xF;
            for i in 0..3 {
                if abs >> i & 1 == 1 && self.modbit(form, m::V3_ABS0 + i, "abs not accepted")? {
                    inst.mods.abs |= 1 << i;
                }
            }
            for i in 0..4 {
                if opsel >> i & 1 == 1 && self.modbit(form, m::V3_OPSEL0 + i, "op_sel not accepted")? {
                    inst.mods.op_sel |= 1 << i;
                }
            }
        }
        let [fd, f0, f1, f2, _] = &form.f;
        let vdst = w0 & 0xFF;
        if fd.used() {
            inst.dst = self.reg8(vdst, fd, false)?;
            // VOP3 compares (and nothing else) write an SGPR mask through vdst.
            if form.op_is_compare() {
                inst.sdst = inst.dst;
            }
        } else {
            self.unused(fd, vdst, "vdst must be zero")?;
        }
        for (i, (f, code)) in [(f0, w1 & 0x1FF), (f1, (w1 >> 9) & 0x1FF), (f2, (w1 >> 18) & 0x1FF)].into_iter().enumerate() {
            if f.used() {
                inst.src[i] = self.src(code, f, 2, &mut inst)?;
            } else {
                self.unused(f, code, "unused source field must be zero")?;
            }
        }
        if form.x & x::TIED != 0 {
            inst.src[2] = inst.dst;
        }
        Ok(inst)
    }

    fn vop3p(&mut self, w0: u32) -> R<Inst> {
        let form = self.form("VOP3P", &tables::T_VOP3P, (w0 >> 16) & 0x7F)?;
        let w1 = self.word(1)?;
        let mut inst = blank(form.op, Enc::Vop3p);
        inst.size = 8;
        let [fd, f0, f1, f2, _] = &form.f;
        let codes = [w1 & 0x1FF, (w1 >> 9) & 0x1FF, (w1 >> 18) & 0x1FF];
        if form.x & x::MAI != 0 {
            let cbsz = (w0 >> 8) & 7;
            let abid = (w0 >> 11) & 0xF;
            let blgp = (w1 >> 29) & 7;
            if cbsz != 0 && self.modbit(form, m::MAI_CBSZ1 + cbsz - 1, "cbsz not accepted")? {
                inst.mods.cbsz = cbsz as u8;
            }
            if abid != 0 && self.modbit(form, m::MAI_ABID1 + abid - 1, "abid not accepted")? {
                inst.mods.abid = abid as u8;
            }
            if blgp != 0 && self.modbit(form, m::MAI_BLGP1 + blgp - 1, "blgp not accepted")? {
                inst.mods.blgp = blgp as u8;
            }
            let acc_cd = bit(w0, 15) == 1;
            let acc = (w1 >> 27) & 3;
            if fd.used() {
                let a = acc_cd && form.x & x::ACC_CD_DST != 0;
                inst.dst = self.reg8(w0 & 0xFF, fd, a)?;
            }
            let flip = [
                form.x & x::ACC_SRC0 != 0 && acc & 1 != 0,
                form.x & x::ACC_SRC1 != 0 && acc & 2 != 0,
                form.x & x::ACC_CD_SRC2 != 0 && acc_cd,
            ];
            for (i, f) in [f0, f1, f2].into_iter().enumerate() {
                if f.used() {
                    let mut o = self.src(codes[i], f, 2, &mut inst)?;
                    if flip[i]
                        && let Some(n) = o.as_vgpr()
                    {
                        o = Opnd::agpr(n);
                    }
                    inst.src[i] = o;
                } else {
                    self.unused(f, codes[i], "unused source field must be zero")?;
                }
            }
            return Ok(inst);
        }
        let clamp = bit(w0, 15);
        let opsel = (w0 >> 11) & 7;
        let opsel_hi = ((w1 >> 27) & 3) | (bit(w0, 14) << 2);
        let neg = (w1 >> 29) & 7;
        let neg_hi = (w0 >> 8) & 7;
        if clamp == 1 {
            inst.mods.clamp = self.modbit(form, m::P_CLAMP, "clamp not accepted")?;
        }
        let mut hi = 0;
        for i in 0..3 {
            if opsel >> i & 1 == 1 && self.modbit(form, m::P_OPSEL0 + i, "op_sel not accepted")? {
                inst.mods.op_sel |= 1 << i;
            }
            let meaningful = if opsel_hi >> i & 1 == 0 {
                self.modbit(form, m::P_OPSEL_HI0 + i, "op_sel_hi not accepted")?
            } else {
                form.ok >> (m::P_OPSEL_HI0 + i) & 1 == 1
            };
            if opsel_hi >> i & 1 == 1 && meaningful {
                hi |= 1 << i;
            }
            if neg >> i & 1 == 1 && self.modbit(form, m::P_NEG0 + i, "neg_lo not accepted")? {
                inst.mods.neg |= 1 << i;
            }
            if neg_hi >> i & 1 == 1 && self.modbit(form, m::P_NEG_HI0 + i, "neg_hi not accepted")? {
                if form.x & x::MIX != 0 {
                    inst.mods.abs |= 1 << i;
                } else {
                    inst.mods.neg_hi |= 1 << i;
                }
            }
        }
        inst.mods.op_sel_hi = hi;
        let vdst = w0 & 0xFF;
        if fd.used() {
            inst.dst = self.reg8(vdst, fd, false)?;
        } else {
            self.unused(fd, vdst, "vdst must be zero")?;
        }
        for (i, f) in [f0, f1, f2].into_iter().enumerate() {
            if f.used() {
                inst.src[i] = self.src(codes[i], f, 2, &mut inst)?;
            } else {
                self.unused(f, codes[i], "unused source field must be zero")?;
            }
        }
        Ok(inst)
    }

    // -----------------------------------------------------------------------------------------
    // Vector memory

    fn ds(&mut self, w0: u32) -> R<Inst> {
        let form = self.form("DS", &tables::T_DS, (w0 >> 17) & 0xFF)?;
        let w1 = self.word(1)?;
        let mut inst = blank(form.op, Enc::Ds);
        inst.size = 8;
        let (off0, off1) = (w0 & 0xFF, (w0 >> 8) & 0xFF);
        let gds = bit(w0, 16);
        if form.x & x::DS_GDS_NEED != 0 {
            if gds == 0 {
                return Err(self.err("this instruction needs the gds bit"));
            }
            inst.flags |= flags::GDS;
        } else if gds == 1 && form.x & x::DS_GDS_IGNORED == 0 {
            return Err(self.err("gds not accepted"));
        }
        let acc = bit(w0, 25) == 1 && self.modbit(form, m::DS_ACC, "acc not accepted")?;
        if acc {
            inst.flags |= flags::ACC;
        }
        if off0 != 0 {
            self.modbit(form, m::DS_OFF_LO, "offset not accepted")?;
        }
        if off1 != 0 {
            self.modbit(form, m::DS_OFF_HI, "offset not accepted")?;
        }
        inst.imm = (off0 | off1 << 8) as i32;
        let [fd, fa, f0, f1, _] = &form.f;
        let acc_addr = acc && form.x & x::DS_ACC_ADDR != 0;
        let regs = [(w1 >> 24, fd, acc), (w1 & 0xFF, fa, acc_addr), ((w1 >> 8) & 0xFF, f0, acc), ((w1 >> 16) & 0xFF, f1, acc)];
        let mut out = [Opnd::NONE; 4];
        for (i, (v, f, a)) in regs.into_iter().enumerate() {
            if f.used() {
                out[i] = self.reg8(v, f, a)?;
            } else {
                self.unused(f, v, "unused register field must be zero")?;
            }
        }
        inst.dst = out[0];
        inst.src[0] = out[1];
        inst.src[1] = out[2];
        inst.src[2] = out[3];
        Ok(inst)
    }

    fn flat(&mut self, w0: u32) -> R<Inst> {
        let seg = (w0 >> 14) & 3;
        let (name, table, enc) = match seg {
            0 => ("FLAT", &tables::T_FLAT[..], Enc::Flat),
            1 => ("SCRATCH", &tables::T_SCRATCH[..], Enc::Scratch),
            2 => ("GLOBAL", &tables::T_GLOBAL[..], Enc::Global),
            _ => {
                self.format = "FLAT";
                self.opcode = (w0 >> 18) & 0x7F;
                return Err(self.err("reserved segment 3"));
            }
        };
        let form = self.form(name, table, (w0 >> 18) & 0x7F)?;
        let w1 = self.word(1)?;
        let mut inst = blank(form.op, enc);
        inst.size = 8;
        let [fd, fa, fv, ..] = &form.f;
        let acc = bit(w1, 23) == 1 && self.modbit(form, m::FLAT_ACC, "acc not accepted")?;
        if acc {
            inst.flags |= flags::ACC;
        }
        if bit(w0, 16) == 1 {
            inst.flags |= flags::SC0;
        }
        if bit(w0, 25) == 1 && self.modbit(form, m::FLAT_SC1, "sc1 not accepted")? {
            inst.flags |= flags::SC1;
        }
        if bit(w0, 17) == 1 && self.modbit(form, m::FLAT_NT, "nt not accepted")? {
            inst.flags |= flags::NT;
        }
        let offset = w0 & 0x1FFF;
        inst.imm = if seg == 0 { offset as i32 } else { sext(offset, 13) };
        let saddr = (w1 >> 16) & 0x7F;
        let sve = bit(w0, 13) == 1;
        let mut vaddr_w = fa.w;
        match seg {
            0 => {
                if sve {
                    self.modbit(form, m::FLAT_LDS, "bit 13 not accepted")?;
                }
                if saddr != 0 {
                    return Err(self.err("flat instructions have no saddr"));
                }
            }
            1 => {
                if saddr != 0x7F {
                    inst.src[2] = self.sreg(saddr, 1)?;
                }
            }
            _ => {
                if sve {
                    self.modbit(form, m::FLAT_LDS, "bit 13 not accepted")?;
                }
                if saddr != 0x7F {
                    inst.src[2] = self.sreg(saddr, 2)?;
                    vaddr_w = 1;
                }
            }
        }
        let vaddr = w1 & 0xFF;
        if seg != 1 || sve {
            let f = Fld { w: vaddr_w, ..*fa };
            inst.src[0] = self.reg8(vaddr, &f, false)?;
        }
        let vdst = w1 >> 24;
        let dst_used = form.x & x::FLAT_VDST_ALWAYS != 0 || (form.x & x::FLAT_VDST_SC0 != 0 && inst.flags & flags::SC0 != 0);
        if dst_used {
            inst.dst = self.reg8(vdst, fd, acc)?;
        }
        if fv.used() {
            inst.src[1] = self.reg8((w1 >> 8) & 0xFF, fv, acc)?;
        }
        if form.mnem.contains("_load_lds_") {
            inst.flags |= flags::LDS;
        }
        Ok(inst)
    }

    fn mubuf(&mut self, w0: u32) -> R<Inst> {
        let form = self.form("MUBUF", &tables::T_MUBUF, (w0 >> 18) & 0x7F)?;
        let w1 = self.word(1)?;
        let mut inst = blank(form.op, Enc::Mubuf);
        inst.size = 8;
        let bare = form.x & x::BUF_BARE != 0;
        let (offen, idxen, lds) = (bit(w0, 12) == 1, bit(w0, 13) == 1, bit(w0, 16) == 1);
        if lds && form.x & x::BUF_LDS_OK == 0 {
            return Err(self.err("lds not accepted"));
        }
        if !lds && form.x & x::BUF_LDS_ONLY != 0 {
            return Err(self.err("this instruction needs the lds bit"));
        }
        if (bare || !form.f[1].used()) && (offen || idxen) {
            return Err(self.err("offen/idxen not accepted"));
        }
        if bit(w0, 14) == 1 {
            if form.x & x::BUF_SC0_BAD != 0 {
                return Err(self.err("sc0 not accepted"));
            }
            inst.flags |= flags::SC0;
        }
        if bit(w0, 15) == 1 && self.modbit(form, m::BUF_SC1, "sc1 not accepted")? {
            inst.flags |= flags::SC1;
        }
        if bit(w0, 17) == 1 && self.modbit(form, m::BUF_NT, "nt not accepted")? {
            inst.flags |= flags::NT;
        }
        let acc = bit(w1, 23) == 1 && self.modbit(form, m::BUF_ACC, "acc not accepted")?;
        if acc {
            inst.flags |= flags::ACC;
        }
        if lds {
            if acc {
                return Err(self.err("lds and acc together"));
            }
            inst.flags |= flags::LDS;
        }
        if offen {
            inst.flags |= flags::OFFEN;
        }
        if idxen {
            inst.flags |= flags::IDXEN;
        }
        if bare {
            return Ok(inst);
        }
        inst.imm = (w0 & 0xFFF) as i32;
        let [fdata, faddr, frsrc, fsoff, _] = &form.f;
        if offen || idxen {
            let f = Fld { w: offen as u8 + idxen as u8, ..*faddr };
            inst.src[0] = self.reg8(w1 & 0xFF, &f, false)?;
        }
        inst.src[2] = self.sreg_f(((w1 >> 16) & 0x1F) * 4, frsrc)?;
        inst.src[3] = self.src(w1 >> 24, fsoff, 2, &mut inst)?;
        if !lds && fdata.used() {
            let v = self.reg8((w1 >> 8) & 0xFF, fdata, acc)?;
            if form.mnem.starts_with("buffer_load") {
                inst.dst = v;
            } else {
                inst.src[1] = v;
                if form.mnem.starts_with("buffer_atomic") && inst.flags & flags::SC0 != 0 {
                    inst.dst = v;
                }
            }
        }
        Ok(inst)
    }
}

impl Form {
    /// VOPC-range opcodes of the VOP3 encoding (v_cmp*, v_cmpx*): vdst is the SGPR mask.
    fn op_is_compare(&self) -> bool {
        self.mnem.starts_with("v_cmp")
    }
}
