//! Attention on the matrix cores: the flash forward for prefill and encoders ([`flash`]), and
//! decode over a paged KV cache ([`PagedKvCache`], [`write_kv`], [`decode`]; [`rope_write_kv`]
//! rotates a decode step's queries and keys and writes the cache in one launch, and
//! [`qkv_rope_write_kv`] does it inside a quantized QKV projection's launch).
//!
//! `O = softmax(scale * Q K^T + mask) V` with f32 scores, statistics and accumulation; inputs
//! f16 or bf16, output in the input dtype; the score matrix is never materialised. The log-sum-exp
//! ([`flash_with_lse`]) is f32, natural log. Head dimensions 32, 64, 96, 128 and 256.
//!
//! ```no_run
//! use ferrocm::{Device, Tensor, DType, ops::attention::{self, FlashOptions}};
//! let dev = Device::new()?;
//! // SmolLM2-style causal prefill: 9 query heads over 3 key/value heads, head dim 64.
//! let q = Tensor::zeros(&dev, &[1, 100, 9, 64], DType::Bf16)?; // [batch, seq, heads, dim]
//! let k = Tensor::zeros(&dev, &[1, 100, 3, 64], DType::Bf16)?;
//! let v = Tensor::zeros(&dev, &[1, 100, 3, 64], DType::Bf16)?;
//! let o = attention::flash(&q, &k, &v, &FlashOptions { causal: true, ..Default::default() })?;
//! // A BERT batch padded to 128 tokens, 12 heads of 32, real lengths 57 and 128.
//! let x = Tensor::zeros(&dev, &[2, 128, 12, 32], DType::Bf16)?;
//! let lens = [57, 128];
//! let o = attention::flash(&x, &x, &x, &FlashOptions { key_lengths: Some(&lens), ..Default::default() })?;
//! # Ok::<(), ferrocm::Error>(())
//! ```
//!
//! Definitions (also those of [`reference::attention`](crate::reference::attention)): query row
//! `i` of a sequence with `lq` query and `lk` key rows attends key `j` when `j` is below the
//! sequence's key length (`key_lengths`, default `lk`) and, with `off = lk - lq` (the diagonal
//! aligned to the bottom right, so a chunk of new queries over a longer context works),
//! `j <= i + off` if causal, `j <= i + off + right` and `j >= i + off - left` for the window
//! sides given. A row that attends no key (an empty sequence of keys, everything masked) is all
//! zeros with log-sum-exp `-inf`, never NaN.

mod flash;
mod paged;
mod rope_kv;

pub use flash::{FlashOptions, flash, flash_with_lse, stream_run_for};
pub use paged::{BlockTable, DecodeOptions, PageAllocator, PagedKvCache, decode, write_kv};
pub use rope_kv::{RopeKv, qkv_rope_write_kv, rope_write_kv};
