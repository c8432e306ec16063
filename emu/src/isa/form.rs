//! What the decoder and the disassembler know about one opcode of one encoding: a [`Form`].
//!
//! The forms themselves are generated ([`super::tables`]) by `emu/tools/gen_isa.py`, which
//! learns them from LLVM's gfx942 disassembler: which operand fields an opcode uses and how
//! wide they are, which register files and constants each source takes, which modifier bits
//! LLVM accepts (and whether it prints or ignores them). The meaning of the numbers below is
//! shared with that script; change both together.

use super::op::Op;

/// How an operand field is used by an opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Use {
    /// The field must be zero (LLVM rejects anything else).
    Zero,
    /// Any value is accepted and nothing is printed.
    Ignored,
    /// The field is an operand.
    Used,
}

/// How constants in a source print (LLVM's operand type, as far as printing goes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    /// 32-bit integer or float.
    B32,
    /// 64-bit integer: a literal is zero-extended.
    B64,
    /// 64-bit float: a literal is the high half.
    F64,
    /// 16-bit float: only the low half of a literal counts.
    F16,
    /// 16-bit integer: inline floats print as their f16 bit pattern.
    I16,
    /// Packed 16-bit floats.
    V2F16,
}

/// Register files and constants a field accepts ([`Fld::cls`] bits).
pub(crate) mod cls {
    /// Vector registers (VGPRs, or AGPRs when [`A`] is set).
    pub const V: u8 = 1;
    /// Scalar registers.
    pub const S: u8 = 2;
    /// Inline constants.
    pub const C: u8 = 4;
    /// The 32-bit literal.
    pub const L: u8 = 8;
    /// The vector registers of this field are AGPRs.
    pub const A: u8 = 16;
}

/// One operand field of a form.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fld {
    /// Whether the opcode uses the field.
    pub use_: Use,
    /// Width in dwords.
    pub w: u8,
    /// [`cls`] bits.
    pub cls: u8,
    /// Constant printing type.
    pub ty: Ty,
    /// Which scalar codes 96..=127 (bit `code - 96`) and which special codes 235..=255 (bit
    /// `32 + code - 235`) the field accepts; below 96 any SGPR aligned for the width is fine.
    pub sx: u64,
}

impl Fld {
    pub(crate) const fn new(u: u8, w: u8, cls: u8, ty: u8, sx: u64) -> Fld {
        let use_ = match u {
            0 => Use::Zero,
            1 => Use::Ignored,
            _ => Use::Used,
        };
        let ty = match ty {
            1 => Ty::B64,
            2 => Ty::F64,
            3 => Ty::F16,
            4 => Ty::I16,
            5 => Ty::V2F16,
            _ => Ty::B32,
        };
        Fld { use_, w, cls, ty, sx }
    }

    pub(crate) fn used(&self) -> bool {
        self.use_ == Use::Used
    }

    /// Does the field accept scalar code `c` (96..=127 or 235..=255)?
    pub(crate) fn takes_special(&self, c: u16) -> bool {
        let bit = if c < 128 { c - 96 } else { 32 + c - 235 };
        self.sx >> bit & 1 == 1
    }
}

/// One opcode of one encoding.
#[derive(Debug)]
pub(crate) struct Form {
    /// The instruction.
    pub op: Op,
    /// The mnemonic as LLVM prints it for this encoding (with `_e32`/`_e64`/`_sdwa`/`_dpp`).
    pub mnem: &'static str,
    /// Operand fields, in a fixed order per format:
    /// SOP1/SOP2/SOPC `[sdst, ssrc0, ssrc1]`, SOPK `[sdst]`, SMEM `[sdata, sbase]`,
    /// VOP1/VOP2 `[vdst, src0, vsrc1]`, VOPC `[-, src0, vsrc1]`,
    /// VOP3 `[vdst, src0, src1, src2, sdst]`, VOP3P `[vdst, src0, src1, src2]`,
    /// DS `[vdst, addr, data0, data1]`, FLAT `[vdst, vaddr, vdata]`,
    /// MUBUF `[vdata, vaddr, srsrc, soffset]`; SDWA/DPP forms copy their 32-bit form's fields.
    pub f: [Fld; 5],
    /// Modifier bits ([`m`]) LLVM accepts and prints.
    pub ok: u64,
    /// Modifier bits LLVM accepts and ignores.
    pub ign: u64,
    /// Format-specific facts ([`x`]).
    pub x: u32,
}

/// Format-specific facts in [`Form::x`].
pub(crate) mod x {
    // SOP1/SOP2/SOPC
    /// `s_set_gpr_idx_on`: ssrc1 is a VGPR index mode mask, not a source.
    pub const GPR_IDX_SRC1: u32 = 1;
    // SOPK/SOPP: the immediate's printing style in the low byte.
    pub const IMM_NONE: u32 = 0;
    pub const IMM_ENDPGM: u32 = 1;
    pub const IMM_HEX: u32 = 2;
    pub const IMM_DEC: u32 = 3;
    pub const IMM_SMALL: u32 = 4;
    pub const IMM_WAITCNT: u32 = 5;
    pub const IMM_SENDMSG: u32 = 6;
    pub const IMM_HWREG: u32 = 7;
    pub const IMM_GPR_IDX: u32 = 8;
    pub const IMM_STYLE: u32 = 0xFF;
    /// `s_setreg_imm32_b32`: a 32-bit literal always follows.
    pub const LIT32: u32 = 1 << 8;
    /// `s_setreg_b32`: the SGPR prints after the hwreg.
    pub const SDST_AFTER: u32 = 1 << 9;
    // SMEM: accepted offset modes and the s_atc_probe immediate.
    pub const SMEM_IMM: u32 = 1;
    pub const SMEM_SGPR: u32 = 2;
    pub const SMEM_SOE: u32 = 4;
    pub const SMEM_SOE_IMM: u32 = 8;
    pub const SMEM_SDATA_IMM: u32 = 16;
    // VOP1/VOP2/VOPC/VOP3
    /// `_e32` carry-out: VCC prints after vdst.
    pub const VCC_AFTER_DST: u32 = 1;
    /// `_e32` carry-in / cndmask: VCC prints after src1 and is src2.
    pub const VCC_SRC2: u32 = 2;
    // Bit 2 (4): VOPC `_e32` prints VCC first; the decoder knows that from the encoding.
    /// madmk/fmamk: the constant K prints between src0 and vsrc1.
    pub const K_MID: u32 = 8;
    /// madak/fmaak: the constant K prints last.
    pub const K_END: u32 = 16;
    /// mac/fmac/dot*c: the destination is also the addend (src2).
    pub const TIED: u32 = 32;
    /// VOP3: the neg bit of source 0 (+ i) is an integer sign-extension, printed sext(...).
    pub const SEXT_SRC0: u32 = 1 << 8;
    /// VOP3: number of op_sel entries LLVM prints (bits 11-13; the last one is the
    /// destination when op_sel bit 3 is accepted).
    pub const OPSEL_N_SHIFT: u32 = 11;
    // VOP3P
    /// Matrix (MAI) instruction: the high bits are acc/cbsz/abid/blgp.
    pub const MAI: u32 = 1;
    /// acc bit 0 turns src0 into AGPRs.
    pub const ACC_SRC0: u32 = 2;
    /// acc bit 1 turns src1 into AGPRs.
    pub const ACC_SRC1: u32 = 4;
    /// acc_cd turns vdst into AGPRs.
    pub const ACC_CD_DST: u32 = 8;
    /// acc_cd turns src2 into AGPRs.
    pub const ACC_CD_SRC2: u32 = 16;
    /// v_fma_mix*: neg_hi is the absolute-value modifier, printed as |x|.
    pub const MIX: u32 = 32;
    /// op_sel_hi defaults to 0 (non-packed ops) and prints when set.
    pub const HI_DEFAULT0: u32 = 64;
    /// VOP3P: number of entries in the op_sel/op_sel_hi/neg lists (bits 8-10).
    pub const LIST_N_SHIFT: u32 = 8;
    // DS: offset kind in bits 0-1, gds handling in bits 2-3.
    // 0: no offset (ds_nop).
    pub const DS_OFF_ONE: u32 = 1;
    pub const DS_OFF_TWO: u32 = 2;
    pub const DS_OFF_SWIZZLE: u32 = 3;
    pub const DS_GDS_NEED: u32 = 4;
    pub const DS_GDS_IGNORED: u32 = 8;
    /// The acc bit turns the addr register into an AGPR too (ds_gws_*: it holds data).
    pub const DS_ACC_ADDR: u32 = 16;
    // FLAT/GLOBAL/SCRATCH: when vdst is an operand.
    pub const FLAT_VDST_ALWAYS: u32 = 1;
    pub const FLAT_VDST_SC0: u32 = 2;
    // MUBUF
    /// Accepts the lds bit (then vdata is not an operand).
    pub const BUF_LDS_OK: u32 = 1;
    /// Only exists with the lds bit set.
    pub const BUF_LDS_ONLY: u32 = 2;
    /// No operands at all (buffer_wbl2, buffer_inv).
    pub const BUF_BARE: u32 = 4;
    /// sc0 is rejected.
    pub const BUF_SC0_BAD: u32 = 8;
    // SDWA: bits 8-11 record which base word the generator probed from (for reference only:
    // the ok/ign bits cover every selector value).
    /// SDWA: LLVM prints no dst_sel/dst_unused for this opcode.
    pub const SDWA_NO_DST_SEL: u32 = 1 << 16;
    // DPP: the class of accepted dpp_ctrl values (index into DPP_CTRLS) in bits 8-15.
    pub const DPP_CTRL_SHIFT: u32 = 8;
    /// DPP: the neg bit of source 0 (+ i) is an integer sign-extension, printed sext(...).
    pub const DPP_SEXT_SRC0: u32 = 1 << 16;
}

/// Modifier bit numbers in [`Form::ok`] / [`Form::ign`], per format.
pub(crate) mod m {
    // VOP3 (VOP3A; VOP3B forms only use CLAMP, OMOD and NEG)
    pub const V3_CLAMP: u32 = 0;
    pub const V3_OMOD1: u32 = 1; // + omod - 1
    pub const V3_NEG0: u32 = 4; // + source
    pub const V3_ABS0: u32 = 7; // + source
    pub const V3_OPSEL0: u32 = 10; // + bit (3 = destination)
    // VOP3P
    pub const P_CLAMP: u32 = 0;
    pub const P_OPSEL0: u32 = 1; // + source
    pub const P_OPSEL_HI0: u32 = 4; // + source; "ok" means a cleared bit prints
    pub const P_NEG0: u32 = 7;
    pub const P_NEG_HI0: u32 = 10;
    // MAI
    pub const MAI_CBSZ1: u32 = 0; // + value - 1 (1..=7)
    pub const MAI_ABID1: u32 = 7; // + value - 1 (1..=15)
    pub const MAI_BLGP1: u32 = 22; // + value - 1 (1..=7)
    // SMEM
    pub const SMEM_GLC: u32 = 0;
    pub const SMEM_NV: u32 = 1;
    // DS
    pub const DS_ACC: u32 = 0;
    pub const DS_OFF_LO: u32 = 1;
    pub const DS_OFF_HI: u32 = 2;
    // FLAT/GLOBAL/SCRATCH
    pub const FLAT_SC1: u32 = 0;
    pub const FLAT_NT: u32 = 1;
    pub const FLAT_ACC: u32 = 2;
    pub const FLAT_LDS: u32 = 3;
    // 4: a negative offset prints (always accepted).
    // MUBUF
    pub const BUF_SC1: u32 = 0;
    pub const BUF_NT: u32 = 1;
    pub const BUF_ACC: u32 = 2;
    // 3: the offset prints (always accepted).
    // SDWA (a selector or dst_unused value is accepted when its bit is set)
    pub const SDWA_DST_SEL0: u32 = 0; // + sel (0..=6)
    pub const SDWA_SRC0_SEL0: u32 = 7;
    pub const SDWA_SRC1_SEL0: u32 = 14;
    pub const SDWA_DST_UNUSED0: u32 = 21; // + value (0..=2)
    pub const SDWA_CLAMP: u32 = 24;
    pub const SDWA_OMOD1: u32 = 25; // + omod - 1
    pub const SDWA_SRC0_SEXT: u32 = 28;
    pub const SDWA_SRC0_NEG: u32 = 29;
    pub const SDWA_SRC0_ABS: u32 = 30;
    pub const SDWA_SRC1_SEXT: u32 = 31;
    pub const SDWA_SRC1_NEG: u32 = 32;
    pub const SDWA_SRC1_ABS: u32 = 33;
    pub const SDWA_S0: u32 = 34;
    pub const SDWA_S0_CONST: u32 = 35;
    pub const SDWA_S1: u32 = 36;
    pub const SDWA_S1_CONST: u32 = 37;
    pub const SDWA_SD: u32 = 38;
    pub const SDWA_B22: u32 = 39;
    pub const SDWA_B30: u32 = 40;
    // DPP
    pub const DPP_BOUND: u32 = 0;
    pub const DPP_SRC0_NEG: u32 = 1;
    pub const DPP_SRC0_ABS: u32 = 2;
    pub const DPP_SRC1_NEG: u32 = 3;
    pub const DPP_SRC1_ABS: u32 = 4;
    /// The reserved bits 17 and 18 of the DPP word (LLVM ignores them).
    pub const DPP_RESERVED: u32 = 5;
}
