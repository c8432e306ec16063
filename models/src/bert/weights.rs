//! BERT configuration (`config.json`, sentence-transformers files) and weights from safetensors.

use crate::error::{Error, Result};
use ferrocm::io::safetensors::SafetensorsFile;
use safetensors::Dtype;
use std::path::{Path, PathBuf};

/// The shape of a BERT encoder (`config.json`) and how sentence embeddings are made from it
/// (the sentence-transformers files beside it).
#[derive(Clone, Debug, PartialEq)]
pub struct BertConfig {
    /// Encoder layers (`num_hidden_layers`).
    pub layers: usize,
    /// Hidden size.
    pub hidden: usize,
    /// Attention heads.
    pub heads: usize,
    /// MLP inner size (`intermediate_size`).
    pub intermediate: usize,
    /// Learned positions (`max_position_embeddings`).
    pub max_positions: usize,
    /// Vocabulary entries.
    pub vocab: usize,
    /// LayerNorm epsilon.
    pub layer_norm_eps: f32,
    /// The id padding uses (`pad_token_id`).
    pub pad_id: u32,
    /// Tokens per sentence at most (`sentence_bert_config.json`'s `max_seq_length`, else the
    /// positions); longer sentences are truncated, as sentence-transformers does.
    pub max_tokens: usize,
    /// L2-normalise the pooled vectors (a `Normalize` module in `modules.json`; true when the
    /// file is absent).
    pub normalize: bool,
}

fn read_json(path: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| Error::Config { path: path.into(), message: format!("not JSON: {e}") })
}

impl BertConfig {
    /// Reads `dir/config.json` (and the optional sentence-transformers files).
    ///
    /// # Errors
    /// [`Error::Io`] for a missing `config.json`; [`Error::UnsupportedArchitecture`] for a
    /// `model_type` other than `bert`; [`Error::Config`] for missing or inconsistent values, an
    /// activation other than GELU, or a pooling other than mean.
    pub fn from_dir(dir: &Path) -> Result<BertConfig> {
        let path = dir.join("config.json");
        let j = read_json(&path)?;
        let bad = |message: String| Error::Config { path: path.clone(), message };
        let model_type = j["model_type"].as_str().unwrap_or("");
        if model_type != "bert" {
            return Err(Error::UnsupportedArchitecture { path: path.clone(), found: model_type.into(), supported: "bert" });
        }
        let num = |k: &str| j[k].as_u64().map(|v| v as usize).ok_or_else(|| bad(format!("{k} is missing or not a number")));
        let (layers, hidden, heads) = (num("num_hidden_layers")?, num("hidden_size")?, num("num_attention_heads")?);
        if heads == 0 || hidden % heads != 0 {
            return Err(bad(format!("hidden size {hidden} is not a multiple of {heads} heads")));
        }
        let act = j["hidden_act"].as_str().unwrap_or("gelu");
        if act != "gelu" {
            return Err(bad(format!("hidden_act {act:?} is not supported (gelu)")));
        }
        if let Some(p) = j["position_embedding_type"].as_str() {
            if p != "absolute" {
                return Err(bad(format!("position_embedding_type {p:?} is not supported (absolute)")));
            }
        }
        let max_positions = num("max_position_embeddings")?;
        let st = dir.join("sentence_bert_config.json");
        let max_tokens = if st.is_file() { read_json(&st)?["max_seq_length"].as_u64().map(|v| v as usize) } else { None };
        let pooling = dir.join("1_Pooling/config.json");
        if pooling.is_file() {
            let p = read_json(&pooling)?;
            let mean = p["pooling_mode_mean_tokens"].as_bool().unwrap_or(false);
            let other = ["pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens"]
                .iter()
                .any(|k| p[*k].as_bool().unwrap_or(false));
            if !mean || other {
                return Err(Error::Config { path: pooling, message: "only mean pooling is supported".into() });
            }
        }
        let modules = dir.join("modules.json");
        let normalize = if modules.is_file() {
            let m = read_json(&modules)?;
            m.as_array().is_some_and(|a| a.iter().any(|x| x["type"].as_str().is_some_and(|t| t.ends_with("Normalize"))))
        } else {
            true
        };
        Ok(BertConfig {
            layers,
            hidden,
            heads,
            intermediate: num("intermediate_size")?,
            max_positions,
            vocab: num("vocab_size")?,
            layer_norm_eps: j["layer_norm_eps"].as_f64().unwrap_or(1e-12) as f32,
            pad_id: j["pad_token_id"].as_u64().unwrap_or(0) as u32,
            max_tokens: max_tokens.unwrap_or(max_positions).min(max_positions),
            normalize,
        })
    }

    /// Dimension of one head.
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }
}

/// A safetensors checkpoint read to host f32, names with or without the `bert.` prefix.
pub(crate) struct BertFile {
    file: SafetensorsFile,
    prefix: &'static str,
}

impl BertFile {
    pub(crate) fn open(dir: &Path) -> Result<BertFile> {
        let path: PathBuf = if dir.is_file() { dir.to_path_buf() } else { dir.join("model.safetensors") };
        if !path.is_file() {
            return Err(Error::io(&path, std::io::Error::new(std::io::ErrorKind::NotFound, "no model.safetensors")));
        }
        let file = SafetensorsFile::open(&path)?;
        let prefix = if file.header().tensor("bert.embeddings.word_embeddings.weight").is_some() { "bert." } else { "" };
        Ok(BertFile { file, prefix })
    }

    /// The first dimension of tensor `name` (without prefix).
    pub(crate) fn rows(&self, name: &str) -> Result<usize> {
        let full = format!("{}{name}", self.prefix);
        let e = self.file.header().tensor(&full);
        e.and_then(|e| e.shape().first().copied()).ok_or_else(|| Error::BadTensor {
            path: self.file.path().into(),
            tensor: full,
            message: "missing".into(),
        })
    }

    /// Tensor `name` (without prefix) as f32 with exactly `shape`.
    pub(crate) fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let full = format!("{}{name}", self.prefix);
        let path = self.file.path().to_path_buf();
        let entry = self.file.header().tensor(&full).ok_or_else(|| Error::BadTensor {
            path: path.clone(),
            tensor: full.clone(),
            message: "missing".into(),
        })?;
        if entry.shape() != shape {
            return Err(Error::BadTensor { path, tensor: full, message: format!("shape {:?}, expected {shape:?}", entry.shape()) });
        }
        let dtype = entry.dtype();
        let bytes = self.file.tensor_bytes(&full)?;
        Ok(match dtype {
            Dtype::F32 => bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
            Dtype::F16 => bytes.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
            Dtype::BF16 => bytes.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
            other => {
                return Err(Error::UnsupportedTensorType { path, tensor: full, ty: format!("{other:?}"), supported: "F32, F16, BF16" });
            }
        })
    }
}

/// One encoder layer's weights on the host (f32): attention Q, K, V fused into one matrix.
pub(crate) struct HostLayer {
    pub qkv_w: Vec<f32>,
    pub qkv_b: Vec<f32>,
    pub o_w: Vec<f32>,
    pub o_b: Vec<f32>,
    pub ln1_w: Vec<f32>,
    pub ln1_b: Vec<f32>,
    pub i_w: Vec<f32>,
    pub i_b: Vec<f32>,
    pub out_w: Vec<f32>,
    pub out_b: Vec<f32>,
    pub ln2_w: Vec<f32>,
    pub ln2_b: Vec<f32>,
}

/// All of a BERT encoder's weights on the host.
pub(crate) struct HostWeights {
    pub word: Vec<f32>,
    /// Position embeddings plus the token-type-0 row (every token here is of type 0).
    pub pos_type: Vec<f32>,
    pub ln_w: Vec<f32>,
    pub ln_b: Vec<f32>,
    pub layers: Vec<HostLayer>,
}

impl HostWeights {
    pub(crate) fn read(f: &BertFile, c: &BertConfig) -> Result<HostWeights> {
        let h = c.hidden;
        let word = f.get("embeddings.word_embeddings.weight", &[c.vocab, h])?;
        let pos = f.get("embeddings.position_embeddings.weight", &[c.max_positions, h])?;
        // The type vocabulary's size varies (2 in BERT); every token here is of type 0.
        let types_name = "embeddings.token_type_embeddings.weight";
        let types = f.get(types_name, &[f.rows(types_name)?, h])?;
        let pos_type = pos.chunks(h).flat_map(|row| row.iter().zip(&types[..h]).map(|(a, b)| a + b)).collect();
        let mut layers = Vec::with_capacity(c.layers);
        for i in 0..c.layers {
            let p = |s: &str| format!("encoder.layer.{i}.{s}");
            let mut qkv_w = f.get(&p("attention.self.query.weight"), &[h, h])?;
            qkv_w.extend(f.get(&p("attention.self.key.weight"), &[h, h])?);
            qkv_w.extend(f.get(&p("attention.self.value.weight"), &[h, h])?);
            let mut qkv_b = f.get(&p("attention.self.query.bias"), &[h])?;
            qkv_b.extend(f.get(&p("attention.self.key.bias"), &[h])?);
            qkv_b.extend(f.get(&p("attention.self.value.bias"), &[h])?);
            layers.push(HostLayer {
                qkv_w,
                qkv_b,
                o_w: f.get(&p("attention.output.dense.weight"), &[h, h])?,
                o_b: f.get(&p("attention.output.dense.bias"), &[h])?,
                ln1_w: f.get(&p("attention.output.LayerNorm.weight"), &[h])?,
                ln1_b: f.get(&p("attention.output.LayerNorm.bias"), &[h])?,
                i_w: f.get(&p("intermediate.dense.weight"), &[c.intermediate, h])?,
                i_b: f.get(&p("intermediate.dense.bias"), &[c.intermediate])?,
                out_w: f.get(&p("output.dense.weight"), &[h, c.intermediate])?,
                out_b: f.get(&p("output.dense.bias"), &[h])?,
                ln2_w: f.get(&p("output.LayerNorm.weight"), &[h])?,
                ln2_b: f.get(&p("output.LayerNorm.bias"), &[h])?,
            });
        }
        Ok(HostWeights {
            word,
            pos_type,
            ln_w: f.get("embeddings.LayerNorm.weight", &[h])?,
            ln_b: f.get("embeddings.LayerNorm.bias", &[h])?,
            layers,
        })
    }
}
