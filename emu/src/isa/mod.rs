//! The gfx942 instruction set: decoding, opcode tables, disassembly.

pub mod inst;
pub mod op;

pub use inst::{Dpp, Enc, Ext, Inst, Mods, Opnd, Sdwa, flags};
pub use op::Op;

/// PROVISIONAL until the decoder lands: every instruction is refused.
#[derive(Debug)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// PROVISIONAL until the decoder lands.
pub fn decode(words: &[u32], pc: u64) -> Result<Inst, DecodeError> {
    Err(DecodeError(format!("no decoder yet: {:08x} at {pc:#x}", words.first().copied().unwrap_or(0))))
}

impl Inst {
    /// PROVISIONAL until the disassembler lands.
    pub fn text(&self) -> String {
        format!("{:?}", self.op)
    }
}
