//! PROVISIONAL: replaced by the generated opcode enumeration (one variant per gfx942 mnemonic).
#![allow(missing_docs)]

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    SEndpgm,
    SNop,
}
