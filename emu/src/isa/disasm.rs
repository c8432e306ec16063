//! [`Inst`] -> text, exactly as `llvm-objdump-19 -d --mcpu=gfx942` prints it.
//!
//! Branch targets print as the raw simm16, like llvm-objdump does before its `<label>` comment,
//! or as the label a listing gives ([`Inst::text_with_label`]).

use std::fmt::{self, Write};

use super::form::{Form, Ty, m, x};
use super::inst::{Ext, Inst, Opnd, flags};
use super::operand::{is_constant, opnd_text, sreg_name};
use super::tables::{self, FORMS, NO_FORM};

impl Inst {
    /// The instruction in LLVM's gfx942 assembly syntax.
    pub fn text(&self) -> String {
        self.text_with_label(None)
    }

    /// As [`Inst::text`], with a branch target printed as `label` (what llvm-objdump does when
    /// an untyped symbol, an assembler label, sits at the target address). Ignored for
    /// instructions that are not branches.
    pub fn text_with_label(&self, label: Option<&str>) -> String {
        let mut s = String::with_capacity(64);
        let label = label.filter(|_| self.branch_target(0).is_some());
        Printer { inst: self, form: self.form(), out: &mut s, label }.print();
        s
    }

    /// The table entry this instruction was decoded from.
    pub(crate) fn form(&self) -> &'static Form {
        use super::inst::Enc::*;
        let slot = match (self.enc, self.ext) {
            (_, Ext::Sdwa(_)) => 11,
            (_, Ext::Dpp(_)) => 12,
            (Sop1, _) => 0,
            (Sop2, _) => 1,
            (Sopk, _) => 2,
            (Sopc, _) => 3,
            (Sopp, _) => 4,
            (Smem, _) => 5,
            (Vop1, _) => 6,
            (Vop2, _) => 7,
            (Vopc, _) => 8,
            (Vop3, _) => 9,
            (Vop3p, _) => 10,
            (Ds, _) => 13,
            (Flat, _) => 14,
            (Global, _) => 15,
            (Scratch, _) => 16,
            (Mubuf, _) => 17,
        };
        let i = tables::OP_FORMS[self.op as usize][slot];
        assert!(i != NO_FORM, "{:?} has no {:?} encoding", self.op, self.enc);
        &FORMS[i as usize]
    }
}

impl fmt::Display for Inst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

struct Printer<'a> {
    inst: &'a Inst,
    form: &'static Form,
    out: &'a mut String,
    /// The branch target's label, for branches.
    label: Option<&'a str>,
}

/// Writes the operands of one instruction: ", " between them, the first after a space.
struct Ops {
    n: usize,
}

impl Ops {
    fn sep(&mut self, out: &mut String) {
        out.push_str(if self.n == 0 { " " } else { ", " });
        self.n += 1;
    }
}

impl Printer<'_> {
    fn print(&mut self) {
        use super::inst::Enc::*;
        self.out.push_str(self.form.mnem);
        match (self.inst.enc, self.inst.ext) {
            (_, Ext::Sdwa(_)) => self.sdwa(),
            (_, Ext::Dpp(_)) => self.dpp(),
            (Sop1 | Sop2 | Sopc, _) => self.sop(),
            (Sopk, _) => self.sopk(),
            (Sopp, _) => self.sopp(),
            (Smem, _) => self.smem(),
            (Vop1 | Vop2 | Vopc, _) => self.e32(),
            (Vop3, _) => self.vop3(),
            (Vop3p, _) => self.vop3p(),
            (Ds, _) => self.ds(),
            (Flat | Global | Scratch, _) => self.flat(),
            (Mubuf, _) => self.mubuf(),
        }
    }

    fn opnd(&mut self, o: Opnd, w: u8, ty: Ty) {
        opnd_text(self.out, o, w, ty, self.inst.literal);
    }

    /// A source with floating-point input modifiers (neg, abs) of source `i`.
    fn fp_src(&mut self, i: usize, o: Opnd, w: u8, ty: Ty) {
        let neg = self.inst.mods.neg >> i & 1 == 1;
        let abs = self.inst.mods.abs >> i & 1 == 1;
        // neg(...) for a constant: "-1" would read as the constant -1.
        let neg_call = neg && !abs && is_constant(o);
        if neg_call {
            self.out.push_str("neg(");
        } else if neg {
            self.out.push('-');
        }
        if abs {
            self.out.push('|');
        }
        self.opnd(o, w, ty);
        if abs {
            self.out.push('|');
        }
        if neg_call {
            self.out.push(')');
        }
    }

    fn omod_clamp(&mut self) {
        if self.inst.mods.clamp {
            self.out.push_str(" clamp");
        }
        match self.inst.mods.omod {
            1 => self.out.push_str(" mul:2"),
            2 => self.out.push_str(" mul:4"),
            3 => self.out.push_str(" div:2"),
            _ => {}
        }
    }

    // -----------------------------------------------------------------------------------------

    fn sop(&mut self) {
        let (inst, f) = (self.inst, self.form);
        let mut ops = Ops { n: 0 };
        if f.f[0].used() {
            ops.sep(self.out);
            sreg_name(self.out, inst.dst.0, f.f[0].w);
        }
        for (i, fl) in f.f[1..3].iter().enumerate() {
            if fl.used() {
                ops.sep(self.out);
                self.opnd(inst.src[i], fl.w, fl.ty);
            }
        }
        if f.x & x::GPR_IDX_SRC1 != 0 {
            ops.sep(self.out);
            gpr_idx(self.out, inst.imm as u32 & 0xFF);
        }
    }

    fn imm16(&mut self, style: u32) {
        if let Some(l) = self.label {
            self.out.push_str(l);
            return;
        }
        let v = self.inst.imm as u32 & 0xFFFF;
        let out = &mut *self.out;
        match style {
            x::IMM_HEX => {
                let _ = write!(out, "{v:#x}");
            }
            x::IMM_DEC => {
                let _ = write!(out, "{v}");
            }
            x::IMM_SMALL => {
                if v <= 64 {
                    let _ = write!(out, "{v}");
                } else {
                    let _ = write!(out, "{v:#x}");
                }
            }
            x::IMM_WAITCNT => waitcnt(out, v),
            // The symbolic form only looks at the message, op and stream fields.
            x::IMM_SENDMSG => match tables::SENDMSG[(v & 0x3FF) as usize] {
                Some(s) => out.push_str(s),
                // The numeric form only when it re-encodes to the same bits (bit 7 unused).
                None if v & !0x37F == 0 => {
                    let _ = write!(out, "sendmsg({}, {}, {})", v & 0xF, (v >> 4) & 7, (v >> 8) & 3);
                }
                None => {
                    let _ = write!(out, "{v}");
                }
            },
            x::IMM_HWREG => hwreg(out, v),
            x::IMM_GPR_IDX => gpr_idx(out, v),
            _ => {}
        }
    }

    fn sopk(&mut self) {
        let (inst, f) = (self.inst, self.form);
        let style = f.x & x::IMM_STYLE;
        let mut ops = Ops { n: 0 };
        let dst = f.f[0].used();
        if dst && f.x & x::SDST_AFTER == 0 {
            ops.sep(self.out);
            sreg_name(self.out, inst.dst.0, f.f[0].w);
        }
        ops.sep(self.out);
        self.imm16(style);
        if dst && f.x & x::SDST_AFTER != 0 {
            ops.sep(self.out);
            sreg_name(self.out, inst.dst.0, f.f[0].w);
        }
        if f.x & x::LIT32 != 0 {
            ops.sep(self.out);
            self.opnd(Opnd::LITERAL, 1, Ty::B32);
        }
    }

    fn sopp(&mut self) {
        let style = self.form.x & x::IMM_STYLE;
        match style {
            x::IMM_NONE => {}
            x::IMM_ENDPGM => {
                if self.inst.imm & 0xFFFF != 0 {
                    let _ = write!(self.out, " {}", self.inst.imm as u32 & 0xFFFF);
                }
            }
            _ => {
                self.out.push(' ');
                self.imm16(style);
            }
        }
    }

    fn smem(&mut self) {
        let (inst, f) = (self.inst, self.form);
        let mut ops = Ops { n: 0 };
        if f.x & x::SMEM_SDATA_IMM != 0 {
            ops.sep(self.out);
            let v = inst.mods.cbsz;
            let _ = if v <= 64 { write!(self.out, "{v}") } else { write!(self.out, "{v:#x}") };
        } else if f.f[0].used() {
            ops.sep(self.out);
            sreg_name(self.out, inst.dst.0, f.f[0].w);
        }
        if f.f[1].used() {
            ops.sep(self.out);
            sreg_name(self.out, inst.src[0].0, f.f[1].w);
            ops.sep(self.out);
            let imm = inst.flags & flags::IMM != 0;
            if inst.src[1].is_none() {
                signed_hex(self.out, inst.imm);
            } else {
                sreg_name(self.out, inst.src[1].0, 1);
                if imm {
                    self.out.push_str(" offset:");
                    signed_hex(self.out, inst.imm);
                }
            }
        }
        if inst.flags & flags::SC0 != 0 {
            self.out.push_str(" glc");
        }
    }

    /// Operands of VOP1/VOP2/VOPC, shared by the plain, SDWA and DPP forms.
    fn e32_operands(&mut self, fp_mods: bool) {
        let (inst, f) = (self.inst, self.form);
        let [fd, f0, f1, ..] = &f.f;
        let mut ops = Ops { n: 0 };
        let vopc = inst.enc == super::inst::Enc::Vopc;
        if vopc {
            ops.sep(self.out);
            sreg_name(self.out, inst.sdst.0, 2);
        } else if fd.used() {
            ops.sep(self.out);
            self.opnd(inst.dst, fd.w, Ty::B32);
        }
        if f.x & x::VCC_AFTER_DST != 0 {
            ops.sep(self.out);
            self.out.push_str("vcc");
        }
        let k = f.x & (x::K_MID | x::K_END) != 0;
        let srcs: [(Opnd, &super::form::Fld); 2] =
            if f.x & x::K_MID != 0 { [(inst.src[0], f0), (inst.src[2], f1)] } else { [(inst.src[0], f0), (inst.src[1], f1)] };
        for (i, (o, fl)) in srcs.into_iter().enumerate() {
            if o.is_none() || !fl.used() {
                continue;
            }
            ops.sep(self.out);
            if fp_mods {
                self.src_sdwa(i, o, fl.w, fl.ty);
            } else {
                self.opnd(o, fl.w, fl.ty);
            }
            if i == 0 && f.x & x::K_MID != 0 {
                ops.sep(self.out);
                let _ = write!(self.out, "{:#x}", inst.literal);
            }
        }
        // K is printed as a plain 32-bit hex number whatever its type.
        if k && f.x & x::K_END != 0 {
            ops.sep(self.out);
            let _ = write!(self.out, "{:#x}", inst.literal);
        }
        if f.x & x::VCC_SRC2 != 0 {
            ops.sep(self.out);
            self.out.push_str("vcc");
        }
    }

    fn e32(&mut self) {
        self.e32_operands(false);
    }

    /// SDWA/DPP source: integer ops print sext(...), float ops -|x|.
    fn src_sdwa(&mut self, i: usize, o: Opnd, w: u8, ty: Ty) {
        let sext = match self.inst.ext {
            Ext::Sdwa(s) => (i == 0 && s.src0_sext) || (i == 1 && s.src1_sext),
            _ => self.form.x & (x::DPP_SEXT_SRC0 << i) != 0 && self.inst.mods.neg >> i & 1 == 1,
        };
        if sext {
            self.out.push_str("sext(");
            self.opnd(o, w, ty);
            self.out.push(')');
        } else {
            self.fp_src(i, o, w, ty);
        }
    }

    fn sdwa(&mut self) {
        let Ext::Sdwa(s) = self.inst.ext else { unreachable!() };
        self.e32_operands(true);
        self.omod_clamp();
        let sel = |v: u8| ["BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD"][v as usize];
        let vopc = self.inst.enc == super::inst::Enc::Vopc;
        if !vopc && self.form.x & x::SDWA_NO_DST_SEL == 0 {
            let du = ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE"][s.dst_unused as usize];
            let _ = write!(self.out, " dst_sel:{} dst_unused:{}", sel(s.dst_sel), du);
        }
        let _ = write!(self.out, " src0_sel:{}", sel(s.src0_sel));
        if self.inst.enc != super::inst::Enc::Vop1 {
            let _ = write!(self.out, " src1_sel:{}", sel(s.src1_sel));
        }
    }

    fn dpp(&mut self) {
        let Ext::Dpp(d) = self.inst.ext else { unreachable!() };
        self.e32_operands(true);
        self.out.push(' ');
        dpp_ctrl(self.out, d.ctrl);
        let _ = write!(self.out, " row_mask:{:#x} bank_mask:{:#x}", d.row_mask, d.bank_mask);
        if d.bound_ctrl {
            self.out.push_str(" bound_ctrl:1");
        }
    }

    fn vop3(&mut self) {
        let (inst, f) = (self.inst, self.form);
        let [fd, f0, f1, f2, fs] = &f.f;
        let mut ops = Ops { n: 0 };
        if fd.used() {
            ops.sep(self.out);
            self.opnd(inst.dst, fd.w, Ty::B32);
        }
        if fs.used() {
            ops.sep(self.out);
            self.opnd(inst.sdst, fs.w, Ty::B32);
        }
        for (i, fl) in [f0, f1, f2].into_iter().enumerate() {
            if fl.used() {
                ops.sep(self.out);
                if f.x & (x::SEXT_SRC0 << i) != 0 {
                    let sext = inst.mods.neg >> i & 1 == 1;
                    if sext {
                        self.out.push_str("sext(");
                    }
                    self.opnd(inst.src[i], fl.w, fl.ty);
                    if sext {
                        self.out.push(')');
                    }
                } else {
                    self.fp_src(i, inst.src[i], fl.w, fl.ty);
                }
            }
        }
        // op_sel lists its sources (hidden ones included), then the destination if it has one.
        let n = (f.x >> x::OPSEL_N_SHIFT & 7) as usize;
        if n > 0 && inst.mods.op_sel != 0 {
            let dst = f.ok >> (m::V3_OPSEL0 + 3) & 1 == 1;
            self.out.push_str(" op_sel:[");
            for k in 0..n {
                if k > 0 {
                    self.out.push(',');
                }
                let b = if dst && k == n - 1 { 3 } else { k };
                self.out.push(if inst.mods.op_sel >> b & 1 == 1 { '1' } else { '0' });
            }
            self.out.push(']');
        }
        self.omod_clamp();
    }

    fn list(&mut self, name: &str, v: u8, n: usize) {
        let _ = write!(self.out, " {name}:[");
        for i in 0..n {
            if i > 0 {
                self.out.push(',');
            }
            self.out.push(if v >> i & 1 == 1 { '1' } else { '0' });
        }
        self.out.push(']');
    }

    fn vop3p(&mut self) {
        let (inst, f) = (self.inst, self.form);
        let [fd, f0, f1, f2, _] = &f.f;
        let mut ops = Ops { n: 0 };
        if fd.used() {
            ops.sep(self.out);
            self.opnd(inst.dst, fd.w, Ty::B32);
        }
        let mai = f.x & x::MAI != 0;
        let mix = f.x & x::MIX != 0;
        let mut nsrc = 0;
        for (i, fl) in [f0, f1, f2].into_iter().enumerate() {
            if fl.used() {
                ops.sep(self.out);
                if mix {
                    self.fp_src(i, inst.src[i], fl.w, fl.ty);
                } else {
                    self.opnd(inst.src[i], fl.w, fl.ty);
                }
                nsrc += 1;
            }
        }
        let md = inst.mods;
        if mai {
            if md.cbsz != 0 {
                let _ = write!(self.out, " cbsz:{}", md.cbsz);
            }
            if md.abid != 0 {
                let _ = write!(self.out, " abid:{}", md.abid);
            }
            if md.blgp != 0 {
                if inst.op.name().starts_with("v_mfma_f64") {
                    let b = md.blgp;
                    let _ = write!(self.out, " neg:[{},{},{}]", b & 1, (b >> 1) & 1, (b >> 2) & 1);
                } else {
                    let _ = write!(self.out, " blgp:{}", md.blgp);
                }
            }
            return;
        }
        let n = (f.x >> x::LIST_N_SHIFT & 7) as usize;
        let nsrc = if n > 0 { n } else { nsrc };
        let all = (1u8 << nsrc) - 1;
        if md.op_sel & all != 0 {
            self.list("op_sel", md.op_sel, nsrc);
        }
        let hi_default = if f.x & x::HI_DEFAULT0 != 0 { 0 } else { all };
        if md.op_sel_hi & all != hi_default {
            self.list("op_sel_hi", md.op_sel_hi, nsrc);
        }
        if !mix {
            if md.neg & all != 0 {
                self.list("neg_lo", md.neg, nsrc);
            }
            if md.neg_hi & all != 0 {
                self.list("neg_hi", md.neg_hi, nsrc);
            }
        }
        if md.clamp {
            self.out.push_str(" clamp");
        }
    }

    fn ds(&mut self) {
        let (inst, f) = (self.inst, self.form);
        let mut ops = Ops { n: 0 };
        let regs = [inst.dst, inst.src[0], inst.src[1], inst.src[2]];
        for (o, fl) in regs.into_iter().zip(&f.f[..4]) {
            if fl.used() {
                ops.sep(self.out);
                self.opnd(o, fl.w, Ty::B32);
            }
        }
        let imm = inst.imm as u32;
        match f.x & 3 {
            x::DS_OFF_ONE if imm != 0 => {
                let _ = write!(self.out, " offset:{imm}");
            }
            x::DS_OFF_TWO => {
                if imm & 0xFF != 0 {
                    let _ = write!(self.out, " offset0:{}", imm & 0xFF);
                }
                if imm >> 8 != 0 {
                    let _ = write!(self.out, " offset1:{}", imm >> 8);
                }
            }
            x::DS_OFF_SWIZZLE => swizzle(self.out, imm as u16),
            _ => {}
        }
        if inst.flags & flags::GDS != 0 {
            self.out.push_str(" gds");
        }
    }

    fn flat(&mut self) {
        use super::inst::Enc;
        let (inst, f) = (self.inst, self.form);
        let [fd, fa, fv, ..] = &f.f;
        let mut ops = Ops { n: 0 };
        if !inst.dst.is_none() {
            ops.sep(self.out);
            self.opnd(inst.dst, fd.w, Ty::B32);
        }
        ops.sep(self.out);
        if inst.src[0].is_none() {
            self.out.push_str("off");
        } else {
            let w = if inst.enc == Enc::Global && !inst.src[2].is_none() { 1 } else { fa.w };
            self.opnd(inst.src[0], w, Ty::B32);
        }
        if fv.used() {
            ops.sep(self.out);
            self.opnd(inst.src[1], fv.w, Ty::B32);
        }
        if inst.enc != Enc::Flat {
            ops.sep(self.out);
            if inst.src[2].is_none() {
                self.out.push_str("off");
            } else {
                let w = if inst.enc == Enc::Global { 2 } else { 1 };
                sreg_name(self.out, inst.src[2].0, w);
            }
        }
        if inst.imm != 0 {
            let _ = write!(self.out, " offset:{}", inst.imm);
        }
        self.cpol();
    }

    fn cpol(&mut self) {
        let fl = self.inst.flags;
        if fl & flags::SC0 != 0 {
            self.out.push_str(" sc0");
        }
        if fl & flags::NT != 0 {
            self.out.push_str(" nt");
        }
        if fl & flags::SC1 != 0 {
            self.out.push_str(" sc1");
        }
    }

    fn mubuf(&mut self) {
        let (inst, f) = (self.inst, self.form);
        if f.x & x::BUF_BARE != 0 {
            self.cpol();
            return;
        }
        let [fdata, _, frsrc, fsoff, _] = &f.f;
        let mut ops = Ops { n: 0 };
        let lds = inst.flags & flags::LDS != 0;
        if !lds && fdata.used() {
            ops.sep(self.out);
            let v = if inst.dst.is_none() { inst.src[1] } else { inst.dst };
            self.opnd(v, fdata.w, Ty::B32);
        }
        let offen = inst.flags & flags::OFFEN != 0;
        let idxen = inst.flags & flags::IDXEN != 0;
        if f.f[1].used() {
            ops.sep(self.out);
            if inst.src[0].is_none() {
                self.out.push_str("off");
            } else {
                self.opnd(inst.src[0], offen as u8 + idxen as u8, Ty::B32);
            }
        }
        ops.sep(self.out);
        sreg_name(self.out, inst.src[2].0, frsrc.w);
        ops.sep(self.out);
        self.opnd(inst.src[3], 1, fsoff.ty);
        if idxen {
            self.out.push_str(" idxen");
        }
        if offen {
            self.out.push_str(" offen");
        }
        if inst.imm != 0 {
            let _ = write!(self.out, " offset:{}", inst.imm);
        }
        // The lds-only opcode spells lds as part of its operands, before the cache policy.
        let lds_only = f.x & x::BUF_LDS_ONLY != 0;
        if lds_only {
            self.out.push_str(" lds");
        }
        self.cpol();
        if lds && !lds_only {
            self.out.push_str(" lds");
        }
    }
}

fn signed_hex(out: &mut String, v: i32) {
    if v < 0 {
        let _ = write!(out, "-{:#x}", -(v as i64));
    } else {
        let _ = write!(out, "{v:#x}");
    }
}

fn waitcnt(out: &mut String, v: u32) {
    let vm = (v & 0xF) | ((v >> 14) & 3) << 4;
    let exp = (v >> 4) & 7;
    let lgkm = (v >> 8) & 0xF;
    let all = vm == 63 && exp == 7 && lgkm == 15;
    let mut sep = "";
    if vm != 63 || all {
        let _ = write!(out, "vmcnt({vm})");
        sep = " ";
    }
    if exp != 7 || all {
        let _ = write!(out, "{sep}expcnt({exp})");
        sep = " ";
    }
    if lgkm != 15 || all {
        let _ = write!(out, "{sep}lgkmcnt({lgkm})");
    }
}

fn hwreg(out: &mut String, v: u32) {
    let id = v & 0x3F;
    let offset = (v >> 6) & 0x1F;
    let size = ((v >> 11) & 0x1F) + 1;
    out.push_str("hwreg(");
    match tables::HWREG_NAMES.iter().find(|(i, _)| *i as u32 == id) {
        Some((_, n)) => out.push_str(n),
        None => {
            let _ = write!(out, "{id}");
        }
    }
    if offset != 0 || size != 32 {
        let _ = write!(out, ", {offset}, {size}");
    }
    out.push(')');
}

fn gpr_idx(out: &mut String, v: u32) {
    if v & !0xF != 0 {
        let _ = write!(out, "{v:#x}");
        return;
    }
    out.push_str("gpr_idx(");
    let mut first = true;
    for (i, n) in ["SRC0", "SRC1", "SRC2", "DST"].iter().enumerate() {
        if v >> i & 1 == 1 {
            if !first {
                out.push(',');
            }
            out.push_str(n);
            first = false;
        }
    }
    out.push(')');
}

fn dpp_ctrl(out: &mut String, c: u16) {
    let _ = match c {
        0..=0xFF => write!(out, "quad_perm:[{},{},{},{}]", c & 3, (c >> 2) & 3, (c >> 4) & 3, (c >> 6) & 3),
        0x101..=0x10F => write!(out, "row_shl:{}", c & 0xF),
        0x111..=0x11F => write!(out, "row_shr:{}", c & 0xF),
        0x121..=0x12F => write!(out, "row_ror:{}", c & 0xF),
        0x130 => write!(out, "wave_shl:1"),
        0x134 => write!(out, "wave_rol:1"),
        0x138 => write!(out, "wave_shr:1"),
        0x13C => write!(out, "wave_ror:1"),
        0x140 => write!(out, "row_mirror"),
        0x141 => write!(out, "row_half_mirror"),
        0x142 => write!(out, "row_bcast:15"),
        0x143 => write!(out, "row_bcast:31"),
        0x150..=0x15F => write!(out, "row_newbcast:{}", c & 0xF),
        _ => write!(out, "{c:#x}"),
    };
}

/// The ds_swizzle_b32 offset: quad permute or one of the bitmask patterns.
fn swizzle(out: &mut String, imm: u16) {
    if imm == 0 {
        return;
    }
    out.push_str(" offset:");
    if imm & 0xFF00 == 0x8000 {
        let _ = write!(out, "swizzle(QUAD_PERM,{},{},{},{})", imm & 3, (imm >> 2) & 3, (imm >> 4) & 3, (imm >> 6) & 3);
    } else if imm & 0x8000 == 0 {
        let and = imm & 0x1F;
        let or = (imm >> 5) & 0x1F;
        let xor = (imm >> 10) & 0x1F;
        if and == 0x1F && or == 0 && xor.count_ones() == 1 {
            let _ = write!(out, "swizzle(SWAP,{xor})");
        } else if and == 0x1F && or == 0 && xor > 0 && (xor + 1).is_power_of_two() {
            let _ = write!(out, "swizzle(REVERSE,{})", xor + 1);
        } else {
            let group = 0x1F - and + 1;
            if group > 1 && group.is_power_of_two() && or < group && xor == 0 {
                let _ = write!(out, "swizzle(BROADCAST,{group},{or})");
            } else {
                out.push_str("swizzle(BITMASK_PERM,\"");
                let p0 = (or) ^ xor;
                let p1 = ((0x1F & and) | or) ^ xor;
                for b in (0..5).rev() {
                    let (a, c) = (p0 >> b & 1, p1 >> b & 1);
                    out.push(match (a == c, a) {
                        (true, 0) => '0',
                        (true, _) => '1',
                        (false, 0) => 'p',
                        (false, _) => 'i',
                    });
                }
                out.push_str("\")");
            }
        }
    } else {
        let _ = write!(out, "{imm}");
    }
}
