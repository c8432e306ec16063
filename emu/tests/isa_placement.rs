//! Where operands land in `Inst` (the contract in `isa::inst`), for the encodings whose
//! operands are implicit or unusual. The words come from llvm-mc-19.

mod common;

use common::*;
use ferrocm_emu::isa::{Enc, Ext, Inst, Op, Opnd, decode, flags};

fn inst(line: &str) -> Inst {
    let (ok, bad) = assemble(&[line.to_string()]);
    assert!(bad.is_empty(), "llvm-mc rejected {line}");
    let i = decode(&ok[0].words, 0).unwrap_or_else(|e| panic!("{line}: {e}"));
    assert_eq!(norm(&i.text()), norm(&ok[0].text));
    i
}

const V: fn(u16) -> Opnd = Opnd::vgpr;
const S: fn(u16) -> Opnd = Opnd::sgpr;
const A: fn(u16) -> Opnd = Opnd::agpr;

#[test]
fn vop2_carries_and_cndmask_fill_in_vcc() {
    require_tools();
    let i = inst("v_add_co_u32_e32 v1, vcc, v2, v3");
    assert_eq!((i.op, i.enc, i.dst, i.sdst, i.src[0], i.src[1]), (Op::VAddCoU32, Enc::Vop2, V(1), Opnd::VCC, V(2), V(3)));
    let i = inst("v_addc_co_u32_e32 v1, vcc, 5, v3, vcc");
    assert_eq!((i.sdst, i.src), (Opnd::VCC, [Opnd(133), V(3), Opnd::VCC, Opnd::NONE]));
    let i = inst("v_addc_co_u32_e64 v1, s[4:5], v2, v3, s[6:7]");
    assert_eq!((i.enc, i.sdst, i.src[2]), (Enc::Vop3, S(4), S(6)));
    let i = inst("v_cndmask_b32_e32 v1, 1.0, v3, vcc");
    assert_eq!(i.src, [Opnd(242), V(3), Opnd::VCC, Opnd::NONE]);
}

#[test]
fn compares_put_the_mask_in_sdst_and_dst() {
    require_tools();
    let i = inst("v_cmp_lt_f32_e32 vcc, v1, v2");
    assert_eq!((i.op, i.sdst, i.dst, i.src[0], i.src[1]), (Op::VCmpLtF32, Opnd::VCC, Opnd::VCC, V(1), V(2)));
    let i = inst("v_cmp_lt_f32_e64 s[8:9], -v1, |v2|");
    assert_eq!((i.enc, i.sdst, i.dst, i.mods.neg, i.mods.abs), (Enc::Vop3, S(8), S(8), 1, 2));
    let i = inst("v_cmp_eq_u32_sdwa s[10:11], v1, v2 src0_sel:BYTE_1 src1_sel:WORD_0");
    assert_eq!(i.sdst, S(10));
    let Ext::Sdwa(s) = i.ext else { panic!() };
    assert_eq!((s.src0_sel, s.src1_sel), (1, 4));
}

#[test]
fn literals_constants_and_tied_operands() {
    require_tools();
    let i = inst("v_add_f32_e32 v1, 0x40490fdb, v2");
    assert_eq!((i.src[0], i.literal, i.size), (Opnd::LITERAL, 0x4049_0FDB, 8));
    let i = inst("s_add_u32 s0, 0x12345678, 0x12345678");
    assert_eq!((i.src[0], i.src[1], i.literal, i.size), (Opnd::LITERAL, Opnd::LITERAL, 0x1234_5678, 8));
    let i = inst("v_fmamk_f32 v1, v2, 0x3f800000, v3");
    assert_eq!((i.src, i.literal), ([V(2), Opnd::LITERAL, V(3), Opnd::NONE], 0x3F80_0000));
    let i = inst("v_fmaak_f32 v1, v2, v3, 0x3f800000");
    assert_eq!(i.src, [V(2), V(3), Opnd::LITERAL, Opnd::NONE]);
    let i = inst("v_fmac_f32_e32 v1, -4.0, v3");
    assert_eq!(i.src, [Opnd(247), V(3), V(1), Opnd::NONE]);
    let i = inst("v_mad_u64_u32 v[2:3], s[4:5], v6, s7, v[8:9]");
    assert_eq!((i.dst, i.sdst, i.src[0], i.src[1], i.src[2]), (V(2), S(4), V(6), S(7), V(8)));
}

#[test]
fn vop3_and_vop3p_modifiers() {
    require_tools();
    let i = inst("v_fma_f32 v1, -|v2|, v3, neg(1.0) clamp div:2");
    assert_eq!((i.mods.neg, i.mods.abs, i.mods.clamp, i.mods.omod), (0b101, 0b001, true, 3));
    let i = inst("v_mad_u32_u16 v1, v2, v3, v4 op_sel:[1,0,1,1]");
    assert_eq!(i.mods.op_sel, 0b1101);
    let i = inst("v_pk_fma_f16 v1, v2, v3, v4 op_sel:[1,0,0] op_sel_hi:[0,1,1] neg_lo:[0,1,0] neg_hi:[0,0,1]");
    assert_eq!((i.mods.op_sel, i.mods.op_sel_hi, i.mods.neg, i.mods.neg_hi), (1, 0b110, 2, 4));
    let i = inst("v_fma_mix_f32 v1, -v2, |v3|, v4 op_sel_hi:[1,1,0]");
    assert_eq!((i.mods.neg, i.mods.abs, i.mods.op_sel_hi), (1, 2, 0b011));
}

#[test]
fn mai_registers_and_modifiers() {
    require_tools();
    let i = inst("v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15] cbsz:1 abid:2 blgp:3");
    assert_eq!((i.op, i.dst, i.src[0], i.src[1], i.src[2]), (Op::VMfmaF3232x32x8F16, A(0), V(0), V(2), A(0)));
    assert_eq!((i.mods.cbsz, i.mods.abid, i.mods.blgp), (1, 2, 3));
    let i = inst("v_mfma_f32_16x16x16_f16 v[4:7], a[0:1], v[2:3], 0");
    assert_eq!((i.dst, i.src[0], i.src[2]), (V(4), A(0), Opnd(128)));
    let i = inst("v_accvgpr_read_b32 v1, a2");
    assert_eq!((i.op, i.dst, i.src[0]), (Op::VAccvgprReadB32, V(1), A(2)));
    let i = inst("v_accvgpr_write_b32 a1, 7");
    assert_eq!((i.dst, i.src[0]), (A(1), Opnd(135)));
    let i = inst("v_accvgpr_mov_b32 a1, a2");
    assert_eq!((i.dst, i.src[0]), (A(1), A(2)));
}

#[test]
fn sdwa_and_dpp_controls() {
    require_tools();
    let i = inst("v_add_f32_sdwa v1, -v2, |v3| clamp dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_2 src1_sel:DWORD");
    let Ext::Sdwa(s) = i.ext else { panic!() };
    assert_eq!((s.dst_sel, s.dst_unused, s.src0_sel, s.src1_sel), (5, 2, 2, 6));
    assert_eq!((i.mods.neg, i.mods.abs, i.mods.clamp, i.size), (1, 2, true, 8));
    let i = inst("v_mov_b32_dpp v1, v2 row_shr:3 row_mask:0x3 bank_mask:0xc bound_ctrl:1");
    let Ext::Dpp(d) = i.ext else { panic!() };
    assert_eq!((d.ctrl, d.row_mask, d.bank_mask, d.bound_ctrl), (0x113, 3, 0xC, true));
    assert_eq!((i.dst, i.src[0]), (V(1), V(2)));
}

#[test]
fn scalar_memory_offsets() {
    require_tools();
    let i = inst("s_load_dwordx4 s[4:7], s[0:1], 0x10");
    assert_eq!((i.dst, i.src[0], i.src[1], i.imm), (S(4), S(0), Opnd::NONE, 0x10));
    assert!(i.flags & flags::IMM != 0);
    let i = inst("s_load_dword s4, s[0:1], s9");
    assert_eq!((i.src[1], i.imm, i.flags & flags::IMM), (S(9), 0, 0));
    let i = inst("s_buffer_load_dword s4, s[0:3], s9 offset:0x20 glc");
    assert_eq!((i.src[0], i.src[1], i.imm), (S(0), S(9), 0x20));
    assert!(i.flags & flags::SC0 != 0);
}

#[test]
fn vector_memory_operands() {
    require_tools();
    let i = inst("global_load_dwordx4 v[2:5], v[0:1], off offset:-16 sc0");
    assert_eq!((i.enc, i.dst, i.src[0], i.src[2], i.imm), (Enc::Global, V(2), V(0), Opnd::NONE, -16));
    let i = inst("global_store_dword v0, v1, s[2:3] offset:8 nt");
    assert_eq!((i.dst, i.src[0], i.src[1], i.src[2]), (Opnd::NONE, V(0), V(1), S(2)));
    assert!(i.flags & flags::NT != 0);
    let i = inst("global_atomic_add v3, v[0:1], v2, off sc0");
    assert_eq!((i.dst, i.src[1]), (V(3), V(2)));
    let i = inst("scratch_load_dword v1, off, s4 offset:12");
    assert_eq!((i.enc, i.src[0], i.src[2]), (Enc::Scratch, Opnd::NONE, S(4)));
    let i = inst("global_load_dword a1, v[0:1], off");
    assert_eq!(i.dst, A(1));
    let i = inst("ds_read2_b32 v[0:1], v2 offset0:4 offset1:8");
    assert_eq!((i.dst, i.src[0], i.imm), (V(0), V(2), 4 | 8 << 8));
    let i = inst("ds_write_b128 v2, a[4:7] offset:256");
    assert_eq!((i.src[0], i.src[1], i.imm), (V(2), A(4), 256));
    let i = inst("buffer_load_dword v1, v2, s[4:7], s8 offen offset:4");
    assert_eq!((i.dst, i.src[0], i.src[2], i.src[3], i.imm), (V(1), V(2), S(4), S(8), 4));
    assert!(i.flags & flags::OFFEN != 0);
    let i = inst("buffer_store_dword v1, off, s[4:7], 0");
    assert_eq!((i.dst, i.src[0], i.src[1], i.src[3]), (Opnd::NONE, Opnd::NONE, V(1), Opnd(128)));
    let i = inst("buffer_load_dword v2, s[4:7], 0 offen lds");
    assert_eq!((i.dst, i.src[0]), (Opnd::NONE, V(2)));
    assert!(i.flags & flags::LDS != 0);
}

#[test]
fn program_control_immediates() {
    require_tools();
    let i = inst("s_cbranch_execz 65521");
    assert_eq!(i.imm, -15);
    let i = inst("s_waitcnt vmcnt(0) lgkmcnt(0)");
    assert_eq!(i.imm as u16, 0x0070);
    let i = inst("s_movk_i32 s3, 0x8000");
    assert_eq!((i.dst, i.imm), (S(3), -32768));
    let i = inst("s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 4), 0xf");
    assert_eq!((i.src[0], i.literal), (Opnd::LITERAL, 0xF));
}

#[test]
fn operand_widths() {
    require_tools();
    let w = inst("v_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]").widths();
    assert_eq!((w.dst, w.src), (16, [2, 2, 16, 0]));
    let w = inst("v_lshl_add_u64 v[4:5], v[0:1], 0, s[2:3]").widths();
    assert_eq!((w.dst, w.src), (2, [2, 1, 2, 0]));
    let w = inst("v_cmp_ge_u64_e32 vcc, s[6:7], v[4:5]").widths();
    assert_eq!((w.dst, w.sdst, w.src), (2, 2, [2, 2, 0, 0]));
    let w = inst("v_addc_co_u32_e32 v1, vcc, v2, v3, vcc").widths();
    assert_eq!((w.dst, w.sdst, w.src), (1, 2, [1, 1, 2, 0]));
    let w = inst("global_load_dwordx4 v[2:5], v0, s[4:5]").widths();
    assert_eq!((w.dst, w.src), (4, [1, 0, 2, 0]));
    let w = inst("s_load_dwordx8 s[8:15], s[0:1], 0x0").widths();
    assert_eq!((w.dst, w.src), (8, [2, 0, 0, 0]));
    let w = inst("buffer_store_dwordx2 v[0:1], v2, s[4:7], 0 offen").widths();
    assert_eq!((w.dst, w.src), (0, [1, 2, 4, 1]));
    let w = inst("ds_read2_b64 v[0:3], v4 offset1:1").widths();
    assert_eq!((w.dst, w.src), (4, [1, 0, 0, 0]));
}
