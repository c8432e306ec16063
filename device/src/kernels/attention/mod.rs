//! Attention on the matrix cores (`abi::attention`).
//!
//! - [`flash`]: the flash forward (prefill, encoders): causal/windowed/padded masks, GQA,
//!   variable-length batches, optional log-sum-exp;
//! - [`scores`]: scores in the MFMA accumulator layout, their masks and the online softmax;
//! - [`output`]: accumulators to whole-line 16-byte stores.

mod entries;
pub mod flash;
pub mod output;
pub mod scores;
