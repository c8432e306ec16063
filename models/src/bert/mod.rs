//! BERT sentence embeddings from a sentence-transformers directory (safetensors weights,
//! `tokenizer.json`, `config.json`): [`BertEmbedder`] on a device, [`BertReference`] on the CPU.
//!
//! An embedding is the mean of the encoder's last hidden states over a sentence's real tokens
//! (padding excluded by a key-padding mask in attention and by the pooling weights), then
//! L2-normalised.
//!
//! ```no_run
//! use ferrocm::Device;
//! use ferrocm_models::LoadOptions;
//! use ferrocm_models::bert::{BertEmbedder, cosine};
//! let dev = Device::new()?;
//! let m = BertEmbedder::load(&dev, "all-MiniLM-L6-v2/", &LoadOptions::default())?;
//! let e = m.embed(&["A cat sits on the mat.", "A kitten is on the rug."])?;
//! println!("similarity {:.3}", cosine(&e[0], &e[1]));
//! # Ok::<(), ferrocm_models::Error>(())
//! ```

mod reference;
mod weights;

pub use reference::BertReference;
pub use weights::BertConfig;

use crate::attention;
use crate::error::{Error, Result};
use crate::linear::{Epilogue, Linear, download, upload};
use crate::options::LoadOptions;
use crate::tokenizer::TextTokenizer;
use ferrocm::ops::elementwise as ew;
use ferrocm::ops::gemm::{self, Activation, GemmOptions};
use ferrocm::ops::{movement, norm};
use ferrocm::{DType, Device, Tensor};
use std::path::{Path, PathBuf};
use weights::{BertFile, HostWeights};

struct Layer {
    qkv: Linear,
    o: Linear,
    ln1_w: Tensor,
    ln1_b: Tensor,
    inter: Linear,
    out: Linear,
    ln2_w: Tensor,
    ln2_b: Tensor,
}

/// A BERT encoder on a device that turns sentences into embeddings.
///
/// Get one with [`BertEmbedder::load`]; run it with [`BertEmbedder::embed`].
pub struct BertEmbedder {
    device: Device,
    dir: PathBuf,
    cfg: BertConfig,
    dtype: DType,
    tokenizer: TextTokenizer,
    word: Tensor,
    pos_type: Tensor,
    ln_w: Tensor,
    ln_b: Tensor,
    layers: Vec<Layer>,
}

impl std::fmt::Debug for BertEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BertEmbedder")
            .field("dir", &self.dir)
            .field("config", &self.cfg)
            .field("dtype", &self.dtype)
            .finish_non_exhaustive()
    }
}

/// Token ids of a batch padded to its longest sentence, and each sentence's length.
pub(crate) struct Batch {
    pub ids: Vec<u32>,
    pub lens: Vec<usize>,
    pub t: usize,
}

/// Tokenizes `sentences` (special tokens added, truncated to `max_tokens`), padded with `pad`.
pub(crate) fn tokenize(tok: &TextTokenizer, sentences: &[&str], max_tokens: usize, pad: u32) -> Result<Batch> {
    if sentences.is_empty() {
        return Err(Error::EmptyInput("no sentences to embed".into()));
    }
    let mut seqs = Vec::with_capacity(sentences.len());
    for (i, s) in sentences.iter().enumerate() {
        let mut ids = tok.encode(s, true)?;
        if ids.is_empty() {
            return Err(Error::EmptyInput(format!("sentence {i} has no tokens")));
        }
        if ids.len() > max_tokens {
            // Keep the final special token ([SEP]) as sentence-transformers' truncation does.
            let last = *ids.last().expect("not empty");
            ids.truncate(max_tokens);
            if let Some(l) = ids.last_mut() {
                *l = last;
            }
        }
        seqs.push(ids);
    }
    let t = seqs.iter().map(Vec::len).max().expect("not empty");
    let lens = seqs.iter().map(Vec::len).collect();
    let ids = seqs.into_iter().flat_map(|mut s| {
        s.resize(t, pad);
        s
    });
    Ok(Batch { ids: ids.collect(), lens, t })
}

/// What a BERT model's directory holds, for the errors of [`BertEmbedder::load`].
const WHAT_BERT_NEEDS: &str = "a sentence-transformers directory: config.json, tokenizer.json, model.safetensors";

impl BertEmbedder {
    /// Loads a sentence-transformers directory (or a `model.safetensors` file with its
    /// `config.json` and `tokenizer.json` beside it) onto `device`, weights in `opts.dtype`.
    ///
    /// # Errors
    /// [`Error::Io`] for missing files (a directory without `config.json` says it is not a
    /// BERT model's); [`Error::InvalidArgument`] for a GGUF file (a Llama-family model); the
    /// errors of [`BertConfig::from_dir`];
    /// [`Error::BadTensor`], [`Error::UnsupportedTensorType`]; [`Error::Tokenizer`]; device
    /// errors.
    pub fn load(device: &Device, path: impl AsRef<Path>, opts: &LoadOptions) -> Result<BertEmbedder> {
        let path = path.as_ref();
        let dir = if path.is_file() { path.parent().unwrap_or(Path::new(".")).to_path_buf() } else { path.to_path_buf() };
        if !dir.is_dir() {
            return Err(Error::io(&dir, std::io::Error::new(std::io::ErrorKind::NotFound, "no such model directory")));
        }
        if crate::fetch::is_gguf(path) {
            return Err(Error::InvalidArgument(format!("{} is a GGUF file: embed runs BERT models ({WHAT_BERT_NEEDS})", path.display())));
        }
        if !dir.join("config.json").is_file() {
            let why = format!("no config.json: not a BERT model directory ({WHAT_BERT_NEEDS})");
            return Err(Error::io(&dir, std::io::Error::new(std::io::ErrorKind::NotFound, why)));
        }
        let cfg = BertConfig::from_dir(&dir)?;
        let tokenizer = TextTokenizer::from_file(&dir.join("tokenizer.json"))?;
        let file = BertFile::open(path)?;
        let w = HostWeights::read(&file, &cfg)?;
        let dt = opts.dtype;
        let h = cfg.hidden;
        let total = cfg.layers + 1;
        let up = |v: &[f32], shape: &[usize]| upload(device, v, shape, dt);
        let mut layers = Vec::with_capacity(cfg.layers);
        for (i, l) in w.layers.iter().enumerate() {
            layers.push(Layer {
                qkv: Linear::dense(device, &l.qkv_w, 3 * h, h, Some(&l.qkv_b), dt)?,
                o: Linear::dense(device, &l.o_w, h, h, Some(&l.o_b), dt)?,
                ln1_w: up(&l.ln1_w, &[h])?,
                ln1_b: up(&l.ln1_b, &[h])?,
                inter: Linear::dense(device, &l.i_w, cfg.intermediate, h, Some(&l.i_b), dt)?,
                out: Linear::dense(device, &l.out_w, h, cfg.intermediate, Some(&l.out_b), dt)?,
                ln2_w: up(&l.ln2_w, &[h])?,
                ln2_b: up(&l.ln2_b, &[h])?,
            });
            opts.report(i + 1, total, &format!("encoder.layer.{i}"));
        }
        let m = BertEmbedder {
            device: device.clone(),
            dir,
            word: up(&w.word, &[cfg.vocab, h])?,
            pos_type: up(&w.pos_type, &[cfg.max_positions, h])?,
            ln_w: up(&w.ln_w, &[h])?,
            ln_b: up(&w.ln_b, &[h])?,
            cfg,
            dtype: dt,
            tokenizer,
            layers,
        };
        opts.report(total, total, "embeddings");
        Ok(m)
    }

    /// The configuration.
    pub fn config(&self) -> &BertConfig {
        &self.cfg
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// The device dtype of weights and activations.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The embeddings of `sentences` (one batch, padded to the longest): `[sentences][hidden]`,
    /// L2-normalised when the model's modules say so.
    ///
    /// # Errors
    /// [`Error::EmptyInput`] for no sentences or one without tokens; [`Error::Tokenizer`];
    /// device errors.
    pub fn embed(&self, sentences: &[&str]) -> Result<Vec<Vec<f32>>> {
        let c = &self.cfg;
        let batch = tokenize(&self.tokenizer, sentences, c.max_tokens, c.pad_id)?;
        let (b, t, h) = (sentences.len(), batch.t, c.hidden);
        let (heads, d) = (c.heads, c.head_dim());
        let dev = &self.device;
        if let Some(&bad) = batch.ids.iter().find(|&&id| id as usize >= c.vocab) {
            return Err(Error::Tokenizer(format!("token id {bad} is outside the model's vocabulary of {}", c.vocab)));
        }
        let ids = Tensor::from_slice(dev, &batch.ids.iter().map(|&i| i as i32).collect::<Vec<_>>(), &[b * t])?;
        // Embeddings: word rows plus (position + type 0) rows, the latter a broadcast view.
        let words = movement::embedding(&self.word, &ids)?.reshape(&[b, t, h])?;
        let e = ew::add(&words, &self.pos_type.narrow(0, 0, t)?)?.reshape(&[b * t, h])?;
        let mut x = norm::layer_norm(&e, Some(&self.ln_w), Some(&self.ln_b), c.layer_norm_eps)?;
        for l in &self.layers {
            let qkv = l.qkv.forward(&x, Epilogue::default())?.reshape(&[b, t, 3 * heads, d])?;
            let (q, k, v) = (qkv.narrow(2, 0, heads)?, qkv.narrow(2, heads, heads)?, qkv.narrow(2, 2 * heads, heads)?);
            let a = attention::padded(&q, &k, &v, &batch.lens)?;
            // Post-LN blocks: x = LN(x + O a), then x = LN(x + W2 gelu(W1 x)); residuals fused.
            let o = l.o.forward(&a, Epilogue { residual: Some(&x), ..Default::default() })?;
            x = norm::layer_norm(&o, Some(&l.ln1_w), Some(&l.ln1_b), c.layer_norm_eps)?;
            let i = l.inter.forward(&x, Epilogue { activation: Activation::GeluErf, ..Default::default() })?;
            let o = l.out.forward(&i, Epilogue { residual: Some(&x), ..Default::default() })?;
            x = norm::layer_norm(&o, Some(&l.ln2_w), Some(&l.ln2_b), c.layer_norm_eps)?;
        }
        // Mean pooling as a batched product: weights 1/len on a sentence's real tokens.
        let pool: Vec<f32> = batch.lens.iter().flat_map(|&len| (0..t).map(move |j| if j < len { 1.0 / len as f32 } else { 0.0 })).collect();
        let pool = upload(dev, &pool, &[b, 1, t], self.dtype)?;
        let pooled = gemm::gemm(&pool, &x.reshape(&[b, t, h])?, &GemmOptions { out_dtype: Some(DType::F32), ..Default::default() })?
            .reshape(&[b, h])?;
        let out = if c.normalize {
            // x / |x| = rms_norm(x) / sqrt(h): RMSNorm with a constant weight 1/sqrt(h). The eps
            // floors |x| at 1e-12 as sentence-transformers' normalisation does.
            let w = Tensor::from_slice(dev, &vec![1.0 / (h as f32).sqrt(); h], &[h])?;
            norm::rms_norm(&pooled, Some(&w), 1e-24 / h as f32)?
        } else {
            pooled
        };
        Ok(download(&out)?.chunks(h).map(<[f32]>::to_vec).collect())
    }
}

/// Cosine similarity of two vectors (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f64 = a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum();
    let na: f64 = a.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 { 0.0 } else { (dot / (na * nb)) as f32 }
}

/// The cosine-similarity matrix of `vectors`.
pub fn similarity_matrix(vectors: &[Vec<f32>]) -> Vec<Vec<f32>> {
    vectors.iter().map(|a| vectors.iter().map(|b| cosine(a, b)).collect()).collect()
}
