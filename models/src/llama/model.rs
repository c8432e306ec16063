//! [`LlamaModel`] on a device and its forward pass ([`Session`]).

use super::config::LlamaConfig;
use super::weights::{LayerNames, check_loadable, load_shaped, quantized_rows};
use crate::attention::{self, KvCache};
use crate::chat::{ChatTemplate, Message};
use crate::error::{Error, Result};
use crate::linear::{Epilogue, GateUp, Linear, download, upload};
use crate::options::LoadOptions;
use crate::profile::{ModeledStep, StageTracer, stage};
use crate::tokenizer::TextTokenizer;
use ferrocm::io::gguf::GgufFile;
use ferrocm::ops::attention::RopeKv;
use ferrocm::ops::gemm::GemmOptions;
use ferrocm::ops::qmatmul::RmsNorm;
use ferrocm::ops::rope::{RopeLayout, RopeOptions, RopeTable};
use ferrocm::ops::{gemm, movement, norm, rope};
use ferrocm::quant::QuantTensor;
use ferrocm::{DType, Device, Tensor};
use std::path::{Path, PathBuf};

/// One transformer block's weights on the device.
#[derive(Debug)]
struct Layer {
    attn_norm: Tensor,
    /// Query, key and value rows in one matrix: one GEMM per block instead of three.
    qkv: Linear,
    o: Linear,
    ffn_norm: Tensor,
    /// Gate and up rows in one matrix, SwiGLU's gate fused where the weights allow.
    gate_up: GateUp,
    down: Linear,
}

/// A Llama-family model loaded on a device: weights, tokenizer, chat template, RoPE tables.
///
/// Get one with [`LlamaModel::load`]; generate with [`LlamaModel::generate`], or run the forward
/// pass yourself through a [`Session`].
pub struct LlamaModel {
    device: Device,
    path: PathBuf,
    cfg: LlamaConfig,
    dtype: DType,
    tokenizer: TextTokenizer,
    chat_template: Option<String>,
    embedding: Tensor,
    head: Option<Linear>,
    out_norm: Tensor,
    layers: Vec<Layer>,
    rope_cos: Tensor,
    rope_sin: Tensor,
    max_context: usize,
}

impl std::fmt::Debug for LlamaModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlamaModel")
            .field("path", &self.path)
            .field("config", &self.cfg)
            .field("dtype", &self.dtype)
            .finish_non_exhaustive()
    }
}

impl LlamaModel {
    /// Loads the GGUF file at `path` onto `device`: the configuration from its metadata, the
    /// tokenizer from its vocabulary, the QKV and gate/up projections fused. Block-quantized
    /// projections stay quantized (`ops::qmatmul`) unless [`LoadOptions::quantized`] is off;
    /// other weights (norms, the embedding rows, float or off projections) are converted
    /// (exactly, on the host) to `opts.dtype`.
    ///
    /// # Errors
    /// [`Error::Ferrocm`] for a missing or malformed file; [`Error::UnsupportedArchitecture`];
    /// [`Error::UnsupportedTensorType`] and [`Error::BadTensor`] (checked before any weight is
    /// read); [`Error::Config`]; [`Error::Tokenizer`]; device errors.
    pub fn load(device: &Device, path: impl AsRef<Path>, opts: &LoadOptions) -> Result<LlamaModel> {
        let file = GgufFile::open(path.as_ref())?;
        let h = file.header();
        let cfg = LlamaConfig::from_gguf(h, file.path())?;
        let tokenizer = TextTokenizer::from_gguf(h, file.path())?;
        let chat_template = h.tokenizer()?.chat_template.map(str::to_string);
        if !matches!(opts.dtype, DType::F32 | DType::Bf16 | DType::F16) {
            return Err(Error::InvalidArgument(format!("model dtype {} (f32, bf16 or f16)", opts.dtype)));
        }
        let mut names: Vec<String> = vec!["token_embd.weight".into(), "output_norm.weight".into()];
        if !cfg.tied_embeddings {
            names.push("output.weight".into());
        }
        for i in 0..cfg.layers {
            let n = LayerNames::new(i);
            names.extend([n.attn_norm, n.q, n.k, n.v, n.o, n.ffn_norm, n.gate, n.up, n.down]);
        }
        check_loadable(&file, &names.iter().map(String::as_str).collect::<Vec<_>>())?;

        let dt = opts.dtype;
        let (hd, d, kvd) = (cfg.hidden, cfg.head_dim, cfg.kv_heads * cfg.head_dim);
        let total = cfg.layers + 2;
        let mut layers = Vec::with_capacity(cfg.layers);
        let q = opts.quantized;
        for i in 0..cfg.layers {
            let n = LayerNames::new(i);
            let qkv_parts = [(n.q.as_str(), cfg.heads * d), (n.k.as_str(), kvd), (n.v.as_str(), kvd)];
            layers.push(Layer {
                attn_norm: upload(device, &load_shaped(&file, &n.attn_norm, &[hd])?.data, &[hd], dt)?,
                qkv: projection(device, &file, &qkv_parts, hd, dt, q)?,
                o: projection(device, &file, &[(n.o.as_str(), hd)], cfg.heads * d, dt, q)?,
                ffn_norm: upload(device, &load_shaped(&file, &n.ffn_norm, &[hd])?.data, &[hd], dt)?,
                gate_up: gate_up(device, &file, (&n.gate, &n.up), cfg.ffn, hd, dt, q)?,
                down: projection(device, &file, &[(n.down.as_str(), hd)], cfg.ffn, dt, q)?,
            });
            opts.report(i + 1, total, &format!("blk.{i}"));
        }
        // The embedding rows are looked up dense; the LM head (the same matrix when tied)
        // multiplies quantized where the file's blocks allow it.
        let embedding = upload(device, &load_shaped(&file, "token_embd.weight", &[cfg.vocab, hd])?.data, &[cfg.vocab, hd], dt)?;
        let head_name = if cfg.tied_embeddings { "token_embd.weight" } else { "output.weight" };
        let head = match quantized_rows(&file, &[(head_name, cfg.vocab)], hd)? {
            Some((format, blocks)) if q => Some(Linear::quantized(device, format, &blocks, cfg.vocab, hd)?),
            _ if cfg.tied_embeddings => None,
            _ => Some(Linear::dense(device, &load_shaped(&file, head_name, &[cfg.vocab, hd])?.data, cfg.vocab, hd, None, dt)?),
        };
        opts.report(cfg.layers + 1, total, "token_embd");
        let out_norm = upload(device, &load_shaped(&file, "output_norm.weight", &[hd])?.data, &[hd], dt)?;

        // RoPE tables for every position a session may reach: cos and sin of pos * f_i,
        // computed in f64 and rounded once to f32.
        let max_context = opts.max_context.map_or(cfg.context, |m| m.min(cfg.context)).max(1);
        let freqs = cfg.rope_frequencies();
        let half = freqs.len();
        let mut cos = Vec::with_capacity(max_context * half);
        let mut sin = Vec::with_capacity(max_context * half);
        for p in 0..max_context {
            for &f in &freqs {
                let (c, s) = ferrocm::reference::rope::angle(p as i64, f);
                cos.push(c as f32);
                sin.push(s as f32);
            }
        }
        let rope_cos = Tensor::from_slice(device, &cos, &[max_context, half])?;
        let rope_sin = Tensor::from_slice(device, &sin, &[max_context, half])?;
        opts.report(total, total, "output_norm");
        Ok(LlamaModel {
            device: device.clone(),
            path: file.path().to_path_buf(),
            cfg,
            dtype: dt,
            tokenizer,
            chat_template,
            embedding,
            head,
            out_norm,
            layers,
            rope_cos,
            rope_sin,
            max_context,
        })
    }

    /// The configuration read from the file.
    pub fn config(&self) -> &LlamaConfig {
        &self.cfg
    }

    /// The device it runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The file it came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The device dtype of weights and activations.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// The longest context a session can hold (the trained context, or less by
    /// [`LoadOptions::max_context`]).
    pub fn max_context(&self) -> usize {
        self.max_context
    }

    /// The file's Jinja chat template, if it has one.
    pub fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }

    /// The token ids of a plain prompt (BOS first when the file asks for it).
    ///
    /// # Errors
    /// [`Error::EmptyInput`] for an empty prompt; [`Error::Tokenizer`].
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        if text.is_empty() {
            return Err(Error::EmptyInput("the prompt is empty".into()));
        }
        self.tokenizer.encode(text, true)
    }

    /// The token ids of a conversation rendered through the chat template, the assistant's
    /// turn opened (the template writes any BOS itself, as `transformers` renders it).
    ///
    /// # Errors
    /// [`Error::Template`] when the file has no template or it fails; [`Error::EmptyInput`].
    pub fn encode_chat(&self, messages: &[Message]) -> Result<Vec<u32>> {
        encode_chat(&self.tokenizer, self.chat_template.as_deref(), &self.path, messages)
    }

    /// Weight bytes on the device.
    pub fn weight_bytes(&self) -> usize {
        let t = |t: &Tensor| t.numel() * t.dtype().size();
        t(&self.embedding)
            + t(&self.out_norm)
            + self.head.as_ref().map_or(0, Linear::device_bytes)
            + self
                .layers
                .iter()
                .map(|x| {
                    t(&x.attn_norm)
                        + t(&x.ffn_norm)
                        + x.gate_up.device_bytes()
                        + [&x.qkv, &x.o, &x.down].iter().map(|l| l.device_bytes()).sum::<usize>()
                })
                .sum::<usize>()
    }

    /// Whether the projections run on block-quantized weights ([`LoadOptions::quantized`] and a
    /// file whose projections are block-quantized).
    pub fn quantized(&self) -> bool {
        self.layers.iter().all(|l| matches!(l.qkv, Linear::Quantized { .. }))
    }

    /// One decode step of `batch` sequences at context length `context` (the cache holds
    /// `context` positions; their contents do not change the work), run with profiling on the
    /// emulator and replayed through the MI300X cycle model: the modeled time per decoded token
    /// (batch 1) or per batch step.
    ///
    /// # Errors
    /// [`Error::Modeling`] when the device is not the emulator; [`Error::PromptTooLong`] when
    /// `context + 1` exceeds [`LlamaModel::max_context`].
    pub fn model_decode_step(&self, batch: usize, context: usize) -> Result<ModeledStep> {
        if batch == 0 {
            return Err(Error::InvalidArgument("batch 0".into()));
        }
        let mut s = Session::new(self, batch, context + 1)?;
        s.pos = context;
        let ids: Vec<u32> = (0..batch as u32).map(|b| b % self.cfg.vocab as u32).collect();
        let mut tracer = StageTracer::start(&self.device)?;
        s.forward(&ids, 1, false, Some(&mut tracer))?;
        tracer.finish()
    }
}

/// A KV cache and position for `batch` sequences that advance together through one model.
///
/// Get one with [`Session::new`]; [`LlamaModel::generate`] makes its own.
#[derive(Debug)]
pub struct Session<'m> {
    model: &'m LlamaModel,
    cache: KvCache,
    pos: usize,
}

impl<'m> Session<'m> {
    /// A session of `batch` sequences with room for `capacity` positions each.
    ///
    /// # Errors
    /// [`Error::PromptTooLong`] when `capacity` exceeds the model's context; allocation errors.
    pub fn new(model: &'m LlamaModel, batch: usize, capacity: usize) -> Result<Session<'m>> {
        if capacity > model.max_context {
            return Err(Error::PromptTooLong { prompt_tokens: capacity, max_new_tokens: 0, context: model.max_context });
        }
        if batch == 0 || capacity == 0 {
            return Err(Error::InvalidArgument(format!("a session of batch {batch} and capacity {capacity}")));
        }
        let c = &model.cfg;
        let cache = KvCache::new(&model.device, c.layers, capacity, batch, c.kv_heads, c.head_dim, model.dtype)?;
        Ok(Session { model, cache, pos: 0 })
    }

    /// Positions already run.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The cache.
    pub fn cache(&self) -> &KvCache {
        &self.cache
    }

    /// Runs `tokens` (one equally long slice per sequence) at the next positions and returns
    /// the logits of each sequence's last token (`[batch][vocab]`, f32).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a wrong number of sequences, unequal lengths or ids
    /// outside the vocabulary; [`Error::EmptyInput`]; [`Error::PromptTooLong`] past the
    /// session's capacity; device errors.
    pub fn step(&mut self, tokens: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let (ids, t) = self.flatten(tokens)?;
        let logits = self.forward(&ids, t, false, None)?;
        Ok(download(&logits)?.chunks(self.model.cfg.vocab).map(<[f32]>::to_vec).collect())
    }

    /// As [`Session::step`], returning the logits of every token (`[batch * tokens][vocab]`,
    /// sequence-major): what the tests compare position by position.
    ///
    /// # Errors
    /// As [`Session::step`].
    pub fn step_all_logits(&mut self, tokens: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let (ids, t) = self.flatten(tokens)?;
        let logits = self.forward(&ids, t, true, None)?;
        Ok(download(&logits)?.chunks(self.model.cfg.vocab).map(<[f32]>::to_vec).collect())
    }

    fn flatten(&self, tokens: &[&[u32]]) -> Result<(Vec<u32>, usize)> {
        if tokens.len() != self.cache.batch() {
            return Err(Error::InvalidArgument(format!("{} sequences given to a session of {}", tokens.len(), self.cache.batch())));
        }
        let t = tokens[0].len();
        if t == 0 {
            return Err(Error::EmptyInput("no tokens to run".into()));
        }
        if tokens.iter().any(|s| s.len() != t) {
            return Err(Error::InvalidArgument("the sequences of one step must be equally long".into()));
        }
        if self.pos + t > self.cache.capacity() {
            return Err(Error::PromptTooLong { prompt_tokens: self.pos + t, max_new_tokens: 0, context: self.cache.capacity() });
        }
        let vocab = self.model.cfg.vocab;
        if let Some(&bad) = tokens.iter().flat_map(|s| s.iter()).find(|&&id| id as usize >= vocab) {
            return Err(Error::InvalidArgument(format!("token id {bad} is outside the vocabulary of {vocab}")));
        }
        Ok((tokens.concat(), t))
    }

    /// The forward pass of `ids` (`batch` sequences of `t` tokens, sequence-major) at positions
    /// `pos..pos + t`: logits `[batch * t, vocab]` when `all_logits`, else of each sequence's
    /// last token `[batch, vocab]`, f32. Advances the position.
    pub(crate) fn forward(&mut self, ids: &[u32], t: usize, all_logits: bool, mut tracer: Option<&mut StageTracer<'_>>) -> Result<Tensor> {
        let m = self.model;
        let c = &m.cfg;
        let dev = &m.device;
        let b = self.cache.batch();
        let (h, kvh, d) = (c.heads, c.kv_heads, c.head_dim);
        let pos = self.pos;
        stage(&mut tracer, "embed");
        let ids_t = Tensor::from_slice(dev, &ids.iter().map(|&i| i as i32).collect::<Vec<_>>(), &[b * t])?;
        let x = movement::embedding(&m.embedding, &ids_t)?; // [B*T, hidden]
        let offsets = Tensor::from_slice(dev, &vec![pos as i32; b], &[b])?;
        // Where this step's keys go (the paged cache's block table and slots), for every layer.
        let step = self.cache.step(dev, pos, t)?;
        let rope_opts = RopeOptions {
            layout: RopeLayout::Interleaved,
            table: RopeTable::Cache { cos: &m.rope_cos, sin: &m.rope_sin },
            rotary_dim: Some(c.rope_dim),
            offsets: Some(&offsets),
        };
        let rope_kv = RopeKv { cos: &m.rope_cos, sin: &m.rope_sin, offsets: &offsets };
        let fused_rope = self.cache.fuses_rope(&step, c.rope_dim);
        // The residual stream: each block's output projection adds into it in its epilogue,
        // and each RMSNorm runs inside the projection that reads it (the decode GEMV normalises
        // its rows itself; otherwise a norm launch goes first), and a decode step's rotary
        // embedding and cache write run in the quantized QKV projection's epilogue: 5 launches a
        // layer in decode.
        let mut res = x;
        let eps = c.rms_eps;
        for (li, l) in m.layers.iter().enumerate() {
            stage(&mut tracer, "qkv");
            let attn_norm = RmsNorm { weight: Some(&l.attn_norm), eps };
            let qkv = |x: &Tensor| -> Result<Tensor> {
                Ok(l.qkv.forward_normed(x, Some(attn_norm), Epilogue::default())?.reshape(&[b, t, h + 2 * kvh, d])?)
            };
            let a = if fused_rope {
                // Decoding: queries and keys rotate on their way to the cache, inside the
                // quantized projection's launch (else in one launch after it).
                let q = match l.qkv.quantized_weight() {
                    Some(w) => self.cache.project_rope_write(li, &step, &res, w, Some(attn_norm), h, &rope_kv)?,
                    None => {
                        let qkv = qkv(&res)?;
                        stage(&mut tracer, "rope_kv");
                        self.cache.rope_write(li, &step, &qkv, h, &rope_kv)?
                    }
                };
                stage(&mut tracer, "attention");
                attention::cached(&q, &self.cache, li, &step)?
            } else {
                let qkv = qkv(&res)?;
                stage(&mut tracer, "rope");
                // Queries and keys rotate together: one launch over their H + KVH heads.
                let qk = rope::rope(&qkv.narrow(2, 0, h + kvh)?, &rope_opts)?;
                stage(&mut tracer, "kv_write");
                let (k_new, v_new) = (qk.narrow(2, h, kvh)?, qkv.narrow(2, h + kvh, kvh)?);
                self.cache.write(li, &step, &k_new, &v_new)?;
                stage(&mut tracer, "attention");
                attention::causal(&qk.narrow(2, 0, h)?, &k_new, &v_new, &self.cache, li, &step)?
            };
            stage(&mut tracer, "o_proj");
            res = l.o.forward(&a, Epilogue { residual: Some(&res), ..Default::default() })?;
            stage(&mut tracer, "gate_up");
            let (act, _) = l.gate_up.forward_normed(&res, Some(RmsNorm { weight: Some(&l.ffn_norm), eps }))?;
            stage(&mut tracer, "down");
            res = l.down.forward(&act, Epilogue { residual: Some(&res), ..Default::default() })?;
        }
        stage(&mut tracer, "lm_head");
        if !all_logits && t > 1 {
            // Only each sequence's last position needs logits: the head is the largest GEMM.
            res = res.reshape(&[b, t, c.hidden])?.narrow(1, t - 1, 1)?.squeeze(1)?;
        }
        let out_norm = RmsNorm { weight: Some(&m.out_norm), eps };
        let f32_out = Epilogue { out_dtype: Some(DType::F32), ..Default::default() };
        let logits = match &m.head {
            // A quantized head's decode GEMV normalises its rows itself (a launch fewer).
            Some(head) => head.forward_normed(&res, Some(out_norm), f32_out)?,
            None => {
                let xn = norm::rms_norm(&res, out_norm.weight, eps)?;
                gemm::gemm(&xn, &m.embedding.transpose(0, 1)?, &GemmOptions { out_dtype: Some(DType::F32), ..Default::default() })?
            }
        };
        // Slots and pages outside the cache, for the whole step at once.
        self.cache.check()?;
        stage(&mut tracer, "sample");
        self.pos += t;
        Ok(logits)
    }
}

/// The projection whose rows are `parts` (`(name, rows)`, each `k` columns) fused into one
/// matrix: the file's blocks when `quantized` and they allow it (one block format, `k` whole
/// blocks), else dequantized exactly on the host to `dt`.
fn projection(device: &Device, file: &GgufFile, parts: &[(&str, usize)], k: usize, dt: DType, quantized: bool) -> Result<Linear> {
    let rows = parts.iter().map(|p| p.1).sum();
    if quantized && let Some((format, blocks)) = quantized_rows(file, parts, k)? {
        return Linear::quantized(device, format, &blocks, rows, k);
    }
    let mut data = Vec::with_capacity(rows * k);
    for &(name, r) in parts {
        data.extend(load_shaped(file, name, &[r, k])?.data);
    }
    Linear::dense(device, &data, rows, k, None, dt)
}

/// SwiGLU's input projections (`names`: gate, up; `ffn` rows of `k` each): interleaved for the
/// gate fused into the GEMV when both are quantized in one format with whole tiles of 8 rows,
/// else one concatenated projection as [`projection`] makes it.
fn gate_up(device: &Device, file: &GgufFile, names: (&str, &str), ffn: usize, k: usize, dt: DType, quantized: bool) -> Result<GateUp> {
    let parts = [(names.0, ffn), (names.1, ffn)];
    if quantized
        && ffn % 8 == 0
        && let (Some((fg, gate)), Some((fu, up))) = (quantized_rows(file, &parts[..1], k)?, quantized_rows(file, &parts[1..], k)?)
        && fg == fu
    {
        let both = QuantTensor::interleave_halves(fg, k, &gate, &up)?;
        return Ok(GateUp::Interleaved(QuantTensor::from_blocks(device, fg, [2 * ffn, k], &both)?));
    }
    Ok(GateUp::Concat(projection(device, file, &parts, k, dt, quantized)?))
}

/// `messages` rendered through `template` (`path` for messages) and tokenized without added
/// specials: the template writes any BOS itself, as `transformers` renders it.
pub(crate) fn encode_chat(tok: &TextTokenizer, template: Option<&str>, path: &Path, messages: &[Message]) -> Result<Vec<u32>> {
    let src = template.ok_or_else(|| Error::Template(format!("{} has no tokenizer.chat_template; use a plain prompt", path.display())))?;
    if messages.iter().all(|m| m.content.is_empty()) {
        return Err(Error::EmptyInput("the chat message is empty".into()));
    }
    let name = |id: Option<u32>| id.and_then(|i| tok.id_to_token(i)).unwrap_or_default();
    let t = ChatTemplate::with_tokens(src, &name(tok.bos()), &name(tok.eos()))?;
    tok.encode(&t.render(messages, true)?, false)
}
