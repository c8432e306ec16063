//! [`LlamaConfig`]: the shape of a Llama-family model, read from GGUF metadata.

use crate::error::{Error, Result};
use ferrocm::io::gguf::GgufHeader;
use std::path::Path;

/// Architectures (`general.architecture`) with the Llama block: RMSNorm, rotary attention with
/// grouped KV heads, SwiGLU MLP, no biases.
pub const SUPPORTED_ARCHITECTURES: &str = "llama";

/// Everything about a Llama-family model's shape; nothing is sized for one model.
#[derive(Clone, Debug, PartialEq)]
pub struct LlamaConfig {
    /// Transformer blocks (`llama.block_count`).
    pub layers: usize,
    /// Hidden size (`llama.embedding_length`).
    pub hidden: usize,
    /// MLP inner size (`llama.feed_forward_length`).
    pub ffn: usize,
    /// Query heads (`llama.attention.head_count`).
    pub heads: usize,
    /// Key/value heads (`llama.attention.head_count_kv`; the query heads when absent).
    pub kv_heads: usize,
    /// Dimension of one head (`llama.attention.key_length`, else hidden / heads).
    pub head_dim: usize,
    /// Rotated dimensions of a head (`llama.rope.dimension_count`, else the head dimension).
    pub rope_dim: usize,
    /// RoPE base (`llama.rope.freq_base`, 10000 when absent).
    pub rope_theta: f64,
    /// Linear position scaling (`llama.rope.scaling.factor` with scaling type `linear`; 1 when
    /// absent): positions are divided by it.
    pub rope_linear_scale: f64,
    /// RMSNorm epsilon (`llama.attention.layer_norm_rms_epsilon`).
    pub rms_eps: f32,
    /// Trained context (`llama.context_length`).
    pub context: usize,
    /// Vocabulary entries (rows of `token_embd.weight`).
    pub vocab: usize,
    /// The LM head is the embedding matrix (no `output.weight`).
    pub tied_embeddings: bool,
}

impl LlamaConfig {
    /// Reads the configuration of the GGUF file whose header is `h` (`path` for messages).
    ///
    /// # Errors
    /// [`Error::UnsupportedArchitecture`]; [`Error::Config`] for missing or inconsistent values
    /// (heads that do not divide, an odd rotary dimension, a RoPE scaling other than linear).
    pub fn from_gguf(h: &GgufHeader, path: &Path) -> Result<LlamaConfig> {
        let arch = h.architecture()?;
        if !SUPPORTED_ARCHITECTURES.split(", ").any(|a| a == arch) {
            return Err(Error::UnsupportedArchitecture { path: path.into(), found: arch.into(), supported: SUPPORTED_ARCHITECTURES });
        }
        let bad = |message: String| Error::Config { path: path.into(), message };
        let opt_u = |suffix: &str| -> Result<Option<usize>> {
            match h.get(&format!("{arch}.{suffix}")) {
                None => Ok(None),
                Some(_) => Ok(Some(h.arch_u64(suffix)? as usize)),
            }
        };
        let need = |suffix: &str| -> Result<usize> { Ok(h.arch_u64(suffix)? as usize) };
        let layers = need("block_count")?;
        let hidden = need("embedding_length")?;
        let ffn = need("feed_forward_length")?;
        let heads = need("attention.head_count")?;
        let kv_heads = opt_u("attention.head_count_kv")?.unwrap_or(heads);
        if layers == 0 || hidden == 0 || ffn == 0 || heads == 0 || kv_heads == 0 {
            return Err(bad(format!("a zero size: {layers} layers, hidden {hidden}, ffn {ffn}, {heads} heads, {kv_heads} KV heads")));
        }
        if heads % kv_heads != 0 {
            return Err(bad(format!("{heads} query heads are not a multiple of {kv_heads} KV heads")));
        }
        let head_dim = match opt_u("attention.key_length")? {
            Some(d) => d,
            None if hidden % heads == 0 => hidden / heads,
            None => return Err(bad(format!("hidden size {hidden} is not a multiple of {heads} heads"))),
        };
        if let Some(v) = opt_u("attention.value_length")? {
            if v != head_dim {
                return Err(bad(format!("value heads of {v} differ from key heads of {head_dim}")));
            }
        }
        let rope_dim = opt_u("rope.dimension_count")?.unwrap_or(head_dim);
        if rope_dim == 0 || rope_dim % 2 != 0 || rope_dim > head_dim {
            return Err(bad(format!("rotary dimension {rope_dim} (must be even and at most the head dimension {head_dim})")));
        }
        let opt_f = |suffix: &str| -> Result<Option<f64>> {
            match h.get(&format!("{arch}.{suffix}")) {
                None => Ok(None),
                Some(_) => Ok(Some(h.arch_f32(suffix)? as f64)),
            }
        };
        let rope_theta = opt_f("rope.freq_base")?.unwrap_or(10_000.0);
        let scaling = match h.get(&format!("{arch}.rope.scaling.type")) {
            None => "none".to_string(),
            Some(_) => h.get_str(&format!("{arch}.rope.scaling.type"))?.to_string(),
        };
        let rope_linear_scale = match scaling.as_str() {
            "none" => 1.0,
            "linear" => opt_f("rope.scaling.factor")?.unwrap_or(1.0),
            other => return Err(bad(format!("RoPE scaling {other:?} is not supported (none, linear)"))),
        };
        if !(rope_theta > 0.0 && rope_theta.is_finite() && rope_linear_scale > 0.0 && rope_linear_scale.is_finite()) {
            return Err(bad(format!("RoPE base {rope_theta}, scale {rope_linear_scale} (must be positive)")));
        }
        let rms_eps = h.arch_f32("attention.layer_norm_rms_epsilon")?;
        let context = opt_u("context_length")?.unwrap_or(2048);
        let emb = h.tensor("token_embd.weight").ok_or_else(|| Error::BadTensor {
            path: path.into(),
            tensor: "token_embd.weight".into(),
            message: "missing".into(),
        })?;
        let shape = emb.shape();
        if shape.len() != 2 || shape[1] != hidden {
            return Err(Error::BadTensor {
                path: path.into(),
                tensor: "token_embd.weight".into(),
                message: format!("shape {shape:?}, expected [vocab, {hidden}]"),
            });
        }
        Ok(LlamaConfig {
            layers,
            hidden,
            ffn,
            heads,
            kv_heads,
            head_dim,
            rope_dim,
            rope_theta,
            rope_linear_scale,
            rms_eps,
            context,
            vocab: shape[0],
            tied_embeddings: h.tensor("output.weight").is_none(),
        })
    }

    /// Query heads per KV head.
    pub fn group(&self) -> usize {
        self.heads / self.kv_heads
    }

    /// Rows of the fused QKV weight: query, key and value heads.
    pub fn qkv_rows(&self) -> usize {
        (self.heads + 2 * self.kv_heads) * self.head_dim
    }

    /// The rotation frequency of each rotated pair `i` (`theta^(-2i/d)`, divided by the linear
    /// scale), as [`ferrocm::ops::rope::theta_frequencies`] defines them.
    pub fn rope_frequencies(&self) -> Vec<f64> {
        ferrocm::ops::rope::theta_frequencies(self.rope_theta, self.rope_dim).into_iter().map(|f| f / self.rope_linear_scale).collect()
    }

    /// Parameters (weights) in all.
    pub fn parameters(&self) -> usize {
        let attn = self.hidden * self.qkv_rows() + self.heads * self.head_dim * self.hidden;
        let mlp = 3 * self.hidden * self.ffn;
        let head = if self.tied_embeddings { 0 } else { self.vocab * self.hidden };
        self.layers * (attn + mlp + 2 * self.hidden) + self.vocab * self.hidden + head + self.hidden
    }
}
