//! Attention on the matrix cores (`abi::attention`).
//!
//! - [`flash`]: the flash forward (prefill, encoders): causal/windowed/padded masks, GQA,
//!   variable-length batches, optional log-sum-exp;
//! - [`decode`]: a few new query rows per sequence over a paged KV cache, split along the keys
//!   when the batch is small, and [`combine`], the splits' second pass; [`cache`]: new rows into
//!   their cache slots;
//! - [`scores`]: scores in the MFMA accumulator layout, their masks and the online softmax;
//! - [`output`]: accumulators to whole-line 16-byte stores.

pub mod cache;
pub mod combine;
pub mod decode;
mod entries;
pub mod flash;
pub mod output;
pub mod scores;
