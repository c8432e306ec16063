//! The gfx942 instruction set: decoding, opcode tables, disassembly.

pub mod inst;
pub mod op;

pub use inst::{Dpp, Enc, Ext, Inst, Mods, Opnd, Sdwa, flags};
pub use op::Op;
