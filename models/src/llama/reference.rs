//! The Llama forward pass on the CPU, in f64 from the file's weights (dequantized exactly to
//! f32), composed of `ferrocm::reference`'s definitions of each op: the oracle the device path
//! is tested against, and a second opinion for anyone who doubts an answer.
//!
//! ```no_run
//! use ferrocm_models::llama::LlamaReference;
//! let mut r = LlamaReference::load("SmolLM2-135M-Instruct.Q4_1.gguf")?;
//! let tokens = r.generate_greedy(&[1, 9690, 198], 8, &[2])?;
//! # Ok::<(), ferrocm_models::Error>(())
//! ```

use super::config::LlamaConfig;
use super::weights::{HostTensor, LayerNames, load_shaped};
use crate::chat::Message;
use crate::error::{Error, Result};
use crate::tokenizer::TextTokenizer;
use ferrocm::io::gguf::GgufFile;
use ferrocm::ops::rope::RopeLayout;
use ferrocm::reference::{math, norm, rope, softmax};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

struct Layer {
    attn_norm: Vec<f64>,
    wq: Vec<f32>,
    wk: Vec<f32>,
    wv: Vec<f32>,
    wo: Vec<f32>,
    ffn_norm: Vec<f64>,
    gate: Vec<f32>,
    up: Vec<f32>,
    down: Vec<f32>,
}

/// A Llama-family model on the CPU with its KV cache (f64).
///
/// Get one with [`LlamaReference::load`]; run it with [`LlamaReference::forward`] or
/// [`LlamaReference::generate_greedy`].
pub struct LlamaReference {
    cfg: LlamaConfig,
    emb: Vec<f32>,
    head: Option<Vec<f32>>,
    out_norm: Vec<f64>,
    layers: Vec<Layer>,
    freqs: Vec<f64>,
    /// Per layer: `[position][kv head][head dim]`.
    k_cache: Vec<Vec<f64>>,
    v_cache: Vec<Vec<f64>>,
    pos: usize,
    tokenizer: TextTokenizer,
    chat_template: Option<String>,
    path: PathBuf,
}

impl std::fmt::Debug for LlamaReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlamaReference").field("config", &self.cfg).field("position", &self.pos).finish()
    }
}

fn f64s(t: HostTensor) -> Vec<f64> {
    t.data.into_iter().map(f64::from).collect()
}

/// `y[r][n] = sum_k x[r][k] w[n][k]` in f64 (`w` row-major `[n][k]`), rows of the weight in
/// parallel.
fn linear(x: &[f64], w: &[f32], n: usize, k: usize) -> Vec<f64> {
    let rows = x.len() / k;
    let mut y = vec![0.0; rows * n];
    for (xr, yr) in x.chunks_exact(k).zip(y.chunks_exact_mut(n)) {
        yr.par_iter_mut().enumerate().for_each(|(j, out)| {
            *out = xr.iter().zip(&w[j * k..(j + 1) * k]).map(|(&a, &b)| a * b as f64).sum();
        });
    }
    y
}

impl LlamaReference {
    /// Loads the GGUF file at `path`.
    ///
    /// # Errors
    /// As [`LlamaModel::load`](crate::llama::LlamaModel::load).
    pub fn load(path: impl AsRef<Path>) -> Result<LlamaReference> {
        let file = GgufFile::open(path.as_ref())?;
        let cfg = LlamaConfig::from_gguf(file.header(), file.path())?;
        LlamaReference::from_file(&file, cfg)
    }

    fn from_file(file: &GgufFile, cfg: LlamaConfig) -> Result<LlamaReference> {
        let tokenizer = TextTokenizer::from_gguf(file.header(), file.path())?;
        let chat_template = file.header().tokenizer()?.chat_template.map(str::to_string);
        let (h, d) = (cfg.hidden, cfg.head_dim);
        let mut layers = Vec::with_capacity(cfg.layers);
        for i in 0..cfg.layers {
            let n = LayerNames::new(i);
            layers.push(Layer {
                attn_norm: f64s(load_shaped(file, &n.attn_norm, &[h])?),
                wq: load_shaped(file, &n.q, &[cfg.heads * d, h])?.data,
                wk: load_shaped(file, &n.k, &[cfg.kv_heads * d, h])?.data,
                wv: load_shaped(file, &n.v, &[cfg.kv_heads * d, h])?.data,
                wo: load_shaped(file, &n.o, &[h, cfg.heads * d])?.data,
                ffn_norm: f64s(load_shaped(file, &n.ffn_norm, &[h])?),
                gate: load_shaped(file, &n.gate, &[cfg.ffn, h])?.data,
                up: load_shaped(file, &n.up, &[cfg.ffn, h])?.data,
                down: load_shaped(file, &n.down, &[h, cfg.ffn])?.data,
            });
        }
        let emb = load_shaped(file, "token_embd.weight", &[cfg.vocab, h])?.data;
        let head = if cfg.tied_embeddings { None } else { Some(load_shaped(file, "output.weight", &[cfg.vocab, h])?.data) };
        let out_norm = f64s(load_shaped(file, "output_norm.weight", &[h])?);
        let freqs = cfg.rope_frequencies();
        let layers_n = cfg.layers;
        Ok(LlamaReference {
            cfg,
            emb,
            head,
            out_norm,
            layers,
            freqs,
            k_cache: vec![Vec::new(); layers_n],
            v_cache: vec![Vec::new(); layers_n],
            pos: 0,
            tokenizer,
            chat_template,
            path: file.path().to_path_buf(),
        })
    }

    /// The tokenizer (the same the device model builds).
    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// As [`LlamaModel::encode_chat`](crate::llama::LlamaModel::encode_chat).
    ///
    /// # Errors
    /// As [`LlamaModel::encode_chat`](crate::llama::LlamaModel::encode_chat).
    pub fn encode_chat(&self, messages: &[Message]) -> Result<Vec<u32>> {
        super::model::encode_chat(&self.tokenizer, self.chat_template.as_deref(), &self.path, messages)
    }

    /// The configuration.
    pub fn config(&self) -> &LlamaConfig {
        &self.cfg
    }

    /// Tokens in the cache.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Empties the cache.
    pub fn reset(&mut self) {
        self.k_cache.iter_mut().chain(self.v_cache.iter_mut()).for_each(Vec::clear);
        self.pos = 0;
    }

    /// Runs `tokens` at the next positions and returns the logits of each (`[tokens][vocab]`).
    ///
    /// # Errors
    /// [`Error::EmptyInput`]; [`Error::InvalidArgument`] for an id outside the vocabulary;
    /// [`Error::PromptTooLong`] past the context.
    pub fn forward(&mut self, tokens: &[u32]) -> Result<Vec<Vec<f64>>> {
        let x = self.hidden_states(tokens)?;
        let h = self.cfg.hidden;
        let x = norm::rms_norm(&x, h, Some(&self.out_norm), self.cfg.rms_eps as f64);
        let w = self.head.as_ref().unwrap_or(&self.emb);
        let logits = linear(&x, w, self.cfg.vocab, h);
        Ok(logits.chunks(self.cfg.vocab).map(<[f64]>::to_vec).collect())
    }

    /// The final hidden states (before the output norm) of `tokens` at the next positions,
    /// `[tokens * hidden]`; the cache advances.
    fn hidden_states(&mut self, tokens: &[u32]) -> Result<Vec<f64>> {
        let c = self.cfg.clone();
        if tokens.is_empty() {
            return Err(Error::EmptyInput("no tokens to run".into()));
        }
        if self.pos + tokens.len() > c.context {
            return Err(Error::PromptTooLong { prompt_tokens: self.pos + tokens.len(), max_new_tokens: 0, context: c.context });
        }
        let (h, d, t) = (c.hidden, c.head_dim, tokens.len());
        let mut x = Vec::with_capacity(t * h);
        for &id in tokens {
            let row = self
                .emb
                .get(id as usize * h..(id as usize + 1) * h)
                .ok_or_else(|| Error::InvalidArgument(format!("token id {id} is outside the vocabulary of {}", c.vocab)))?;
            x.extend(row.iter().map(|&v| v as f64));
        }
        let eps = c.rms_eps as f64;
        let shape = |heads| rope::RopeShape { batch: 1, seq: t, heads, head_dim: d, rotary_dim: c.rope_dim };
        let offsets = [self.pos as i32];
        let freqs = &self.freqs;
        let angle = |p: i64, i: usize| rope::angle(p, freqs[i]);
        let scale = 1.0 / (d as f64).sqrt();
        let (kvd, g) = (c.kv_heads * d, c.group());
        for (li, l) in self.layers.iter().enumerate() {
            // Attention: x += Wo attn(rope(Wq h), rope(Wk h), Wv h), h = rmsnorm(x).
            let hn = norm::rms_norm(&x, h, Some(&l.attn_norm), eps);
            let q = rope::rope(&linear(&hn, &l.wq, c.heads * d, h), shape(c.heads), RopeLayout::Interleaved, Some(&offsets), angle);
            let k = rope::rope(&linear(&hn, &l.wk, kvd, h), shape(c.kv_heads), RopeLayout::Interleaved, Some(&offsets), angle);
            let v = linear(&hn, &l.wv, kvd, h);
            self.k_cache[li].extend_from_slice(&k);
            self.v_cache[li].extend_from_slice(&v);
            let (kc, vc) = (&self.k_cache[li], &self.v_cache[li]);
            let mut attn = vec![0.0; t * c.heads * d];
            for ti in 0..t {
                let seen = self.pos + ti + 1; // causal: positions 0..=pos+ti
                for head in 0..c.heads {
                    let kvh = head / g;
                    let qv = &q[(ti * c.heads + head) * d..][..d];
                    let scores: Vec<f64> =
                        (0..seen).map(|s| qv.iter().zip(&kc[s * kvd + kvh * d..][..d]).map(|(a, b)| a * b).sum::<f64>() * scale).collect();
                    let p = softmax::softmax(&scores, seen);
                    let out = &mut attn[(ti * c.heads + head) * d..][..d];
                    for (s, &ps) in p.iter().enumerate() {
                        for (o, &vv) in out.iter_mut().zip(&vc[s * kvd + kvh * d..][..d]) {
                            *o += ps * vv;
                        }
                    }
                }
            }
            let o = linear(&attn, &l.wo, h, c.heads * d);
            x.iter_mut().zip(&o).for_each(|(a, b)| *a += b);
            // MLP: x += Wdown(silu(Wgate h) * Wup h), h = rmsnorm(x).
            let hn = norm::rms_norm(&x, h, Some(&l.ffn_norm), eps);
            let gate = linear(&hn, &l.gate, c.ffn, h);
            let up = linear(&hn, &l.up, c.ffn, h);
            let act: Vec<f64> = gate.iter().zip(&up).map(|(&a, &b)| math::silu(a) * b).collect();
            let down = linear(&act, &l.down, h, c.ffn);
            x.iter_mut().zip(&down).for_each(|(a, b)| *a += b);
        }
        self.pos += t;
        Ok(x)
    }

    /// Greedy decoding: runs `prompt` (after what the cache holds), then appends the argmax
    /// token until one of `stop` or `max_new` tokens. Returns the new tokens (a stop token
    /// included when reached).
    ///
    /// # Errors
    /// As [`LlamaReference::forward`].
    pub fn generate_greedy(&mut self, prompt: &[u32], max_new: usize, stop: &[u32]) -> Result<Vec<u32>> {
        self.generate_greedy_with(prompt, max_new, stop, |_| {})
    }

    /// As [`LlamaReference::generate_greedy`], calling `on_token` with each new token.
    ///
    /// # Errors
    /// As [`LlamaReference::forward`].
    pub fn generate_greedy_with(
        &mut self,
        prompt: &[u32],
        max_new: usize,
        stop: &[u32],
        mut on_token: impl FnMut(u32),
    ) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        if max_new == 0 {
            return Ok(out);
        }
        let mut next = prompt.to_vec();
        loop {
            let x = self.hidden_states(&next)?;
            let h = self.cfg.hidden;
            let last = &x[x.len() - h..];
            let xn = norm::rms_norm(last, h, Some(&self.out_norm), self.cfg.rms_eps as f64);
            let logits = linear(&xn, self.head.as_ref().unwrap_or(&self.emb), self.cfg.vocab, h);
            // Argmax in f64 (first on ties): rounding to f32 first could make a tie of a near one.
            let id = (0..logits.len())
                .filter(|&i| !logits[i].is_nan())
                .reduce(|a, b| if logits[b] > logits[a] { b } else { a })
                .ok_or_else(|| Error::InvalidArgument("every logit is NaN".into()))? as u32;
            out.push(id);
            on_token(id);
            if stop.contains(&id) || out.len() == max_new {
                return Ok(out);
            }
            next = vec![id];
        }
    }
}
