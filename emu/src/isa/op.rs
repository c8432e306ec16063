//! [`Op`]: one variant per gfx942 mnemonic, shared by every encoding of it.
//!
//! The enum itself is generated (see `emu/tools/gen_isa.py`) from the mnemonics LLVM's gfx942
//! disassembler prints: the encoding suffix (`_e32`, `_e64`, `_sdwa`, `_dpp`) is dropped, the
//! rest is split on `_` and each piece capitalised: `v_mfma_f32_32x32x8_f16` is
//! `Op::VMfmaF3232x32x8F16`.

pub use super::tables::Op;
use super::tables::{ALL_OPS, OP_NAMES};

impl Op {
    /// The mnemonic without encoding suffix, as LLVM spells it (`v_add_f32`).
    pub fn name(self) -> &'static str {
        OP_NAMES[self as usize]
    }

    /// Every op, in table order.
    pub fn all() -> &'static [Op] {
        &ALL_OPS
    }

    /// The op whose mnemonic is `name` (without encoding suffix).
    pub fn from_name(name: &str) -> Option<Op> {
        OP_NAMES.iter().position(|n| *n == name).map(|i| ALL_OPS[i])
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
