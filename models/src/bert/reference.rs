//! The BERT embedder on the CPU in f64, from `ferrocm::reference`'s definitions: the oracle of
//! [`BertEmbedder`](super::BertEmbedder).

use super::weights::{BertConfig, BertFile, HostWeights};
use super::{Batch, tokenize};
use crate::error::{Error, Result};
use crate::tokenizer::TextTokenizer;
use ferrocm::reference::{math, norm, softmax};
use std::path::Path;

/// A BERT sentence embedder on the CPU.
///
/// Get one with [`BertReference::load`].
pub struct BertReference {
    cfg: BertConfig,
    tokenizer: TextTokenizer,
    w: HostWeights,
}

impl std::fmt::Debug for BertReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BertReference").field("config", &self.cfg).finish_non_exhaustive()
    }
}

fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

/// `x [rows, k] W^T + b` in f64.
fn linear(x: &[f64], w: &[f32], b: &[f32], n: usize, k: usize) -> Vec<f64> {
    x.chunks_exact(k)
        .flat_map(|xr| (0..n).map(move |j| xr.iter().zip(&w[j * k..(j + 1) * k]).map(|(&a, &c)| a * c as f64).sum::<f64>() + b[j] as f64))
        .collect()
}

impl BertReference {
    /// Loads the same files as [`BertEmbedder::load`](super::BertEmbedder::load).
    ///
    /// # Errors
    /// As [`BertEmbedder::load`](super::BertEmbedder::load).
    pub fn load(path: impl AsRef<Path>) -> Result<BertReference> {
        let path = path.as_ref();
        let dir = if path.is_file() { path.parent().unwrap_or(Path::new(".")) } else { path };
        let cfg = BertConfig::from_dir(dir)?;
        let tokenizer = TextTokenizer::from_file(&dir.join("tokenizer.json"))?;
        let w = HostWeights::read(&BertFile::open(path)?, &cfg)?;
        Ok(BertReference { cfg, tokenizer, w })
    }

    /// The embeddings of `sentences`, each run alone (no padding: the device's padded batch
    /// must give the same vectors).
    ///
    /// # Errors
    /// As [`BertEmbedder::embed`](super::BertEmbedder::embed).
    pub fn embed(&self, sentences: &[&str]) -> Result<Vec<Vec<f64>>> {
        let c = &self.cfg;
        // Tokenized as one batch (the same truncation), then each sentence without its padding.
        let Batch { ids, lens, t } = tokenize(&self.tokenizer, sentences, c.max_tokens, c.pad_id)?;
        let mut out = Vec::with_capacity(sentences.len());
        for (s, &len) in lens.iter().enumerate() {
            out.push(self.embed_ids(&ids[s * t..s * t + len])?);
        }
        Ok(out)
    }

    /// The embedding of one sentence's ids.
    fn embed_ids(&self, ids: &[u32]) -> Result<Vec<f64>> {
        let c = &self.cfg;
        let w = &self.w;
        let (h, heads, d, t) = (c.hidden, c.heads, c.head_dim(), ids.len());
        let eps = c.layer_norm_eps as f64;
        let mut e = Vec::with_capacity(t * h);
        for (p, &id) in ids.iter().enumerate() {
            let row = w
                .word
                .get(id as usize * h..(id as usize + 1) * h)
                .ok_or_else(|| Error::Tokenizer(format!("token id {id} is outside the vocabulary")))?;
            e.extend(row.iter().zip(&w.pos_type[p * h..(p + 1) * h]).map(|(&a, &b)| a as f64 + b as f64));
        }
        let mut x = norm::layer_norm(&e, h, Some(&f64s(&w.ln_w)), Some(&f64s(&w.ln_b)), eps);
        let scale = 1.0 / (d as f64).sqrt();
        for l in &w.layers {
            let qkv = linear(&x, &l.qkv_w, &l.qkv_b, 3 * h, h);
            let mut a = vec![0.0; t * h];
            for head in 0..heads {
                let at = |tok: usize, part: usize| &qkv[tok * 3 * h + part * h + head * d..][..d];
                for i in 0..t {
                    let scores: Vec<f64> = (0..t).map(|j| at(i, 0).iter().zip(at(j, 1)).map(|(x, y)| x * y).sum::<f64>() * scale).collect();
                    let p = softmax::softmax(&scores, t);
                    for (j, &pj) in p.iter().enumerate() {
                        for (o, &v) in a[i * h + head * d..][..d].iter_mut().zip(at(j, 2)) {
                            *o += pj * v;
                        }
                    }
                }
            }
            let o: Vec<f64> = linear(&a, &l.o_w, &l.o_b, h, h).iter().zip(&x).map(|(a, b)| a + b).collect();
            x = norm::layer_norm(&o, h, Some(&f64s(&l.ln1_w)), Some(&f64s(&l.ln1_b)), eps);
            let i: Vec<f64> = linear(&x, &l.i_w, &l.i_b, c.intermediate, h).into_iter().map(math::gelu_erf).collect();
            let o: Vec<f64> = linear(&i, &l.out_w, &l.out_b, h, c.intermediate).iter().zip(&x).map(|(a, b)| a + b).collect();
            x = norm::layer_norm(&o, h, Some(&f64s(&l.ln2_w)), Some(&f64s(&l.ln2_b)), eps);
        }
        let mut pooled = vec![0.0; h];
        for row in x.chunks(h) {
            pooled.iter_mut().zip(row).for_each(|(p, v)| *p += v / t as f64);
        }
        if c.normalize {
            let n = pooled.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
            pooled.iter_mut().for_each(|v| *v /= n);
        }
        Ok(pooled)
    }
}
