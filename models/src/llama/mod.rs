//! Llama-family text generation from GGUF files: [`LlamaModel`] (weights on a device, tokenizer,
//! chat template), [`Session`] (a KV cache and the forward pass), [`LlamaModel::generate`]
//! (prefill, then sample token by token), and [`LlamaReference`] (the same model on the CPU, the
//! oracle).
//!
//! ```no_run
//! use ferrocm::Device;
//! use ferrocm_models::chat::Message;
//! use ferrocm_models::llama::{GenerateOptions, LlamaModel, LoadOptions};
//! let dev = Device::new()?;
//! let model = LlamaModel::load(&dev, "SmolLM2-135M-Instruct.Q4_1.gguf", &LoadOptions::default())?;
//! let prompt = model.encode_chat(&[Message::user("What is the capital of France?")])?;
//! let opts = GenerateOptions { max_new_tokens: 32, ..Default::default() };
//! let out = model.generate(&prompt, &opts, |_id, text| print!("{text}"))?;
//! println!("\n{} tokens, {:.2} tokens/s", out.tokens.len(), out.stats.decode_tokens_per_s());
//! # Ok::<(), ferrocm_models::Error>(())
//! ```

mod config;
mod generate;
mod model;
mod reference;
mod weights;

pub use crate::options::LoadOptions;
pub use config::{LlamaConfig, SUPPORTED_ARCHITECTURES};
pub use generate::{GenerateOptions, GenerateStats, Generation, StopReason};
pub use model::{LlamaModel, Session};
pub use reference::LlamaReference;
