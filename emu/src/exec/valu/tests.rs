//! Instruction-level tests of the VALU: one instruction is assembled with llvm-mc-19 (gfx942),
//! decoded by our decoder and executed on a fresh wave; results are checked against values
//! computed independently (Rust's f32/f64/half arithmetic, exhaustive loops where cheap).
