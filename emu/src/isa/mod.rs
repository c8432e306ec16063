//! The gfx942 instruction set: decoding, opcode tables, disassembly.
//!
//! - [`decode`] / [`decode_range`] turn machine words into [`Inst`]s (the contract in
//!   [`inst`] says where each operand goes);
//! - [`Inst::text`] prints one back exactly as `llvm-objdump-19 --mcpu=gfx942` does;
//! - [`Op`] names every gfx942 mnemonic;
//! - [`Inst::widths`] says how many dwords each operand spans.
//!
//! What each opcode accepts was learned from LLVM's disassembler by `emu/tools/gen_isa.py`,
//! which writes `tables.rs`.

mod decode;
mod disasm;
mod form;
pub mod inst;
pub mod op;
mod operand;
mod tables;
mod widths;

pub use decode::{decode, decode_range, DecodeError};
pub use inst::{Dpp, Enc, Ext, Inst, Mods, Opnd, Sdwa, flags};
pub use op::Op;
pub use widths::Widths;
