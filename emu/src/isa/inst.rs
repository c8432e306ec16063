//! A decoded instruction: the one representation the decoder produces, the disassembler prints
//! and the executor runs.
//!
//! Operand placement is uniform across encodings of the same instruction (`_e32`, `_e64`, SDWA,
//! DPP), so the executor has one code path per [`Op`]: implicit operands (VCC of a VOP2 carry or
//! a VOPC compare, VCC of `v_cndmask_b32_e32`) are filled in by the decoder.
//!
//! Placement by encoding:
//! - SOP2: `dst` = sdst, `src[0..2]` = ssrc0, ssrc1. SOP1: `dst`, `src[0]`.
//! - SOPK: `dst` = sdst (also the compared register of `s_cmpk_*`), `imm` = simm16 sign-extended.
//! - SOPC: `src[0..2]`. SOPP: `imm` = simm16 sign-extended.
//! - SMEM: `dst` = sdata (first SGPR), `src[0]` = sbase (SGPR pair), `src[1]` = soffset SGPR
//!   (or NONE), `imm` = immediate byte offset (or 0).
//! - VOP1/VOP2/VOPC/VOP3/SDWA/DPP: `dst` = vdst (or the SGPR destination of readlane,
//!   readfirstlane, VOP3 compares), `sdst` = carry-out / compare mask (VCC for `_e32`),
//!   `src[0..3]` = src0..src2 (`src[2]` = VCC for the `_e32` carry-in and cndmask forms).
//! - VOP3P and MAI: `dst` = vdst (AGPR when ACC_CD), `src[0..3]`.
//! - DS: `dst` = vdst, `src[0]` = addr, `src[1]` = data0, `src[2]` = data1,
//!   `imm` = offset0 | offset1 << 8 (the 16-bit offset of single-address forms).
//! - FLAT/GLOBAL/SCRATCH: `dst` = vdst, `src[0]` = vaddr, `src[1]` = vdata, `src[2]` = saddr
//!   (SGPR pair, or NONE for "off"), `imm` = signed offset.
//! - MUBUF: `dst` = vdata (loads, atomics with return), `src[0]` = vaddr, `src[1]` = vdata (stores,
//!   atomics), `src[2]` = srsrc (SGPR quad), `src[3]` = soffset, `imm` = offset12.

pub use super::op::Op;

/// The encoding an instruction was decoded from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Enc {
    /// Scalar ALU, one source.
    Sop1,
    /// Scalar ALU, two sources.
    Sop2,
    /// Scalar ALU with a 16-bit immediate.
    Sopk,
    /// Scalar compare.
    Sopc,
    /// Scalar program control (branches, waits, barriers).
    Sopp,
    /// Scalar memory.
    Smem,
    /// Vector ALU, one source, 32-bit encoding.
    Vop1,
    /// Vector ALU, two sources, 32-bit encoding.
    Vop2,
    /// Vector compare, 32-bit encoding.
    Vopc,
    /// Vector ALU, 64-bit encoding (VOP3A and VOP3B).
    Vop3,
    /// Packed math and matrix (MAI) instructions.
    Vop3p,
    /// LDS/GDS.
    Ds,
    /// Flat memory.
    Flat,
    /// Global memory (flat encoding, segment 2).
    Global,
    /// Scratch memory (flat encoding, segment 1).
    Scratch,
    /// Buffer memory with a resource descriptor.
    Mubuf,
}

/// An operand: a register, an inline constant, or a marker for the literal.
///
/// Encoding of the value:
/// - `0..=255`: the scalar-source code space (SGPR 0-101, `flat_scratch` 102-103, `xnack_mask`
///   104-105, VCC 106-107, TTMP 108-123, M0 124, EXEC 126-127, inline integers 128-208 (0, 1..64,
///   -1..-16), apertures 235-238, inline floats 240-248, VCCZ 251, EXECZ 252, SCC 253,
///   LDS_DIRECT 254, literal 255);
/// - `256..=511`: VGPR 0-255; `512..=767`: AGPR 0-255;
/// - `0xFFFF`: absent.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Opnd(pub u16);

impl Opnd {
    /// No operand.
    pub const NONE: Opnd = Opnd(0xFFFF);
    /// VCC (low half code; a 64-bit read takes 106-107).
    pub const VCC: Opnd = Opnd(106);
    /// M0.
    pub const M0: Opnd = Opnd(124);
    /// EXEC (low half code).
    pub const EXEC: Opnd = Opnd(126);
    /// SCC as a source.
    pub const SCC: Opnd = Opnd(253);
    /// The instruction's 32-bit literal.
    pub const LITERAL: Opnd = Opnd(255);

    /// SGPR `n`.
    pub const fn sgpr(n: u16) -> Opnd {
        Opnd(n)
    }
    /// VGPR `n`.
    pub const fn vgpr(n: u16) -> Opnd {
        Opnd(256 + n)
    }
    /// AGPR `n`.
    pub const fn agpr(n: u16) -> Opnd {
        Opnd(512 + n)
    }
    /// True when absent.
    pub const fn is_none(self) -> bool {
        self.0 == 0xFFFF
    }
    /// The VGPR index, if a VGPR.
    pub const fn as_vgpr(self) -> Option<u16> {
        if self.0 >= 256 && self.0 < 512 { Some(self.0 - 256) } else { None }
    }
    /// The AGPR index, if an AGPR.
    pub const fn as_agpr(self) -> Option<u16> {
        if self.0 >= 512 && self.0 < 768 { Some(self.0 - 512) } else { None }
    }
    /// True for a code in the scalar-source space (registers, constants, literal).
    pub const fn is_scalar(self) -> bool {
        self.0 < 256
    }
}

impl std::fmt::Debug for Opnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            0xFFFF => write!(f, "-"),
            n @ 256..=511 => write!(f, "v{}", n - 256),
            n @ 512..=767 => write!(f, "a{}", n - 512),
            n @ 0..=101 => write!(f, "s{n}"),
            n => write!(f, "#{n}"),
        }
    }
}

/// Source and output modifiers. Bit `i` of a mask refers to `src[i]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mods {
    /// Negate (VOP3 neg; VOP3P neg_lo; SDWA/DPP neg).
    pub neg: u8,
    /// Absolute value (VOP3 abs; SDWA/DPP abs).
    pub abs: u8,
    /// VOP3P: negate the high halves.
    pub neg_hi: u8,
    /// VOP3/VOP3P op_sel (bit 3 = destination for VOP3 16-bit ops).
    pub op_sel: u8,
    /// VOP3P op_sel_hi.
    pub op_sel_hi: u8,
    /// Clamp the result.
    pub clamp: bool,
    /// Output modifier: 0 none, 1 *2, 2 *4, 3 /2.
    pub omod: u8,
    /// MAI: broadcast control size.
    pub cbsz: u8,
    /// MAI: A-matrix broadcast block id.
    pub abid: u8,
    /// MAI: B-matrix lane group pattern.
    pub blgp: u8,
}

/// SDWA (sub-dword addressing) selectors. Selects: 0-3 BYTE_0..3, 4 WORD_0, 5 WORD_1, 6 DWORD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sdwa {
    /// Which part of the destination is written.
    pub dst_sel: u8,
    /// What happens to the rest: 0 pad with zeros, 1 sign-extend, 2 preserve.
    pub dst_unused: u8,
    /// Which part of src0 is read.
    pub src0_sel: u8,
    /// Sign-extend src0's selected part.
    pub src0_sext: bool,
    /// Which part of src1 is read.
    pub src1_sel: u8,
    /// Sign-extend src1's selected part.
    pub src1_sext: bool,
}

/// DPP (data-parallel primitives) controls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dpp {
    /// `dpp_ctrl` (quad_perm, row_shl/shr/ror, wave_shl/rol/shr/ror, row_mirror, row_bcast...).
    pub ctrl: u16,
    /// Rows (16-lane groups) written.
    pub row_mask: u8,
    /// Banks (4-lane groups within a row) written.
    pub bank_mask: u8,
    /// Out-of-range sources read 0 instead of disabling the write.
    pub bound_ctrl: bool,
}

/// Sub-dword or cross-lane extension of a VOP1/VOP2/VOPC instruction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ext {
    /// Plain encoding.
    #[default]
    None,
    /// SDWA.
    Sdwa(Sdwa),
    /// DPP.
    Dpp(Dpp),
}

/// Memory and miscellaneous flag bits of [`Inst::flags`].
pub mod flags {
    /// GLC on gfx9, SC0 on gfx940+.
    pub const SC0: u16 = 1 << 0;
    /// SLC on gfx9, SC1 on gfx940+.
    pub const SC1: u16 = 1 << 1;
    /// Non-temporal.
    pub const NT: u16 = 1 << 2;
    /// Load straight to LDS (MUBUF/global `lds` bit).
    pub const LDS: u16 = 1 << 3;
    /// MUBUF: vaddr supplies an offset.
    pub const OFFEN: u16 = 1 << 4;
    /// MUBUF: vaddr supplies an index.
    pub const IDXEN: u16 = 1 << 5;
    /// DS: global data share instead of LDS.
    pub const GDS: u16 = 1 << 6;
    /// Data registers are AGPRs (gfx90a+ `acc` bit of DS/FLAT/MUBUF).
    pub const ACC: u16 = 1 << 7;
    /// Texture fail enable.
    pub const TFE: u16 = 1 << 8;
    /// SMEM: the offset is an immediate.
    pub const IMM: u16 = 1 << 9;
    /// SMEM: non-volatile.
    pub const NV: u16 = 1 << 10;
}

/// One decoded instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inst {
    /// What it does (one variant per mnemonic, shared by all encodings of it).
    pub op: Op,
    /// The encoding it came from.
    pub enc: Enc,
    /// Bytes, including a literal.
    pub size: u8,
    /// Main destination.
    pub dst: Opnd,
    /// Second (scalar) destination: carry-out, compare mask.
    pub sdst: Opnd,
    /// Sources in ISA order (see the module docs for memory encodings).
    pub src: [Opnd; 4],
    /// The 32-bit literal when a source is [`Opnd::LITERAL`].
    pub literal: u32,
    /// Immediate field (simm16, memory offset, DS offsets), sign-extended where the ISA says so.
    pub imm: i32,
    /// Modifiers.
    pub mods: Mods,
    /// SDWA/DPP extension.
    pub ext: Ext,
    /// [`flags`] bits.
    pub flags: u16,
}

impl Inst {
    /// Where a PC-relative branch at `pc` goes (`s_branch`, `s_cbranch_*`, `s_call_b64`: the
    /// next instruction plus simm16 dwords); `None` for every other instruction. These are the
    /// instructions whose operand LLVM's disassembler prints as a label (`SOPPBrTarget`).
    pub fn branch_target(&self, pc: u64) -> Option<u64> {
        use Op::*;
        let relative = matches!(
            self.op,
            SBranch
                | SCbranchScc0
                | SCbranchScc1
                | SCbranchVccz
                | SCbranchVccnz
                | SCbranchExecz
                | SCbranchExecnz
                | SCbranchCdbgsys
                | SCbranchCdbguser
                | SCbranchCdbgsysOrUser
                | SCbranchCdbgsysAndUser
                | SCallB64
        );
        relative.then(|| pc.wrapping_add(4).wrapping_add_signed(4 * (self.imm as i16 as i64)))
    }
}
