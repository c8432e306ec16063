//! Tiny random-weight models written by the tests: a Llama GGUF (quantized weights, a byte-level
//! BPE vocabulary, a chat template) and a BERT sentence-transformers directory.
#![allow(dead_code)]

use ferrocm::Device;
use ferrocm::io::gguf::{GgmlType, GgufWriter};
use ferrocm::quant::{QuantFormat, quantize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The device under test (HIP when present, else the emulator), once per test binary.
pub fn device() -> &'static Device {
    static DEV: OnceLock<Device> = OnceLock::new();
    DEV.get_or_init(|| Device::new().expect("a device"))
}

/// A fresh scratch directory.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ferrocm-models-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// xorshift64*: deterministic values for weights.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// Uniform in [-1, 1).
    pub fn next(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40;
        x as f32 / (1u64 << 23) as f32 - 1.0
    }
    pub fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.next() * scale).collect()
    }
}

/// GPT-2's byte-to-character map: printable bytes map to themselves, the rest to 256 + n.
pub fn byte_chars() -> Vec<char> {
    let mut printable: Vec<u32> = (b'!' as u32..=b'~' as u32).chain(0xA1..=0xAC).chain(0xAE..=0xFF).collect();
    let mut chars = vec!['\0'; 256];
    let mut extra = 0;
    for b in 0..256u32 {
        if !printable.contains(&b) {
            printable.push(b);
            chars[b as usize] = char::from_u32(256 + extra).unwrap();
            extra += 1;
        } else {
            chars[b as usize] = char::from_u32(b).unwrap();
        }
    }
    chars
}

/// The shape of a tiny Llama.
#[derive(Clone, Copy, Debug)]
pub struct TinyLlama {
    pub layers: usize,
    pub hidden: usize,
    pub ffn: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub context: usize,
    /// Scale of the embedding (tied LM head) weights: larger spreads the logits.
    pub embedding_scale: f32,
    pub seed: u64,
    pub architecture: &'static str,
    /// The type of the projection weights.
    pub weight_type: GgmlType,
}

impl Default for TinyLlama {
    fn default() -> Self {
        TinyLlama {
            // Head dim 32 (the smallest the flash kernels take) and SmolLM2's 3:1 grouping.
            layers: 2,
            hidden: 96,
            ffn: 128,
            heads: 3,
            kv_heads: 1,
            context: 160,
            embedding_scale: 0.5,
            seed: 1,
            architecture: "llama",
            weight_type: GgmlType::Q4_1,
        }
    }
}

pub const SPECIALS: [&str; 3] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
pub const MERGES: [&str; 6] = ["h e", "l l", "he ll", "Ġ w", "o r", "Ġ t"];

/// SmolLM2-135M-Instruct's chat template.
pub const CHAT_TEMPLATE: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// The vocabulary: specials, the 256 byte characters, then the merges' results.
pub fn vocab() -> Vec<String> {
    let mut v: Vec<String> = SPECIALS.iter().map(|s| s.to_string()).collect();
    v.extend(byte_chars().iter().map(|c| c.to_string()));
    v.extend(MERGES.iter().map(|m| m.replace(' ', "")));
    v
}

fn blocks(t: GgmlType, values: &[f32]) -> Vec<u8> {
    match t {
        GgmlType::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        GgmlType::F16 => values.iter().flat_map(|v| half::f16::from_f32(*v).to_le_bytes()).collect(),
        GgmlType::I32 => values.iter().flat_map(|v| (*v as i32).to_le_bytes()).collect(),
        t => quantize(QuantFormat::from_ggml_type(t.id()).expect("a quantizable type"), values).unwrap(),
    }
}

impl TinyLlama {
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }

    /// The GGUF file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let (h, f, d) = (self.hidden, self.ffn, self.head_dim());
        let tokens = vocab();
        let n = tokens.len();
        let mut rng = Rng::new(self.seed);
        let arch = self.architecture;
        let key = |k: &str| format!("{arch}.{k}");
        let mut types = vec![3i32; SPECIALS.len()];
        types.resize(n, 1);
        let mut w = GgufWriter::new()
            .metadata("general.architecture", arch)
            .metadata(&key("block_count"), self.layers as u32)
            .metadata(&key("embedding_length"), h as u32)
            .metadata(&key("feed_forward_length"), f as u32)
            .metadata(&key("attention.head_count"), self.heads as u32)
            .metadata(&key("attention.head_count_kv"), self.kv_heads as u32)
            .metadata(&key("rope.freq_base"), 10000.0f32)
            .metadata(&key("rope.dimension_count"), d as u32)
            .metadata(&key("attention.layer_norm_rms_epsilon"), 1e-5f32)
            .metadata(&key("context_length"), self.context as u32)
            .metadata("tokenizer.ggml.model", "gpt2")
            .metadata("tokenizer.ggml.pre", "smollm")
            .metadata("tokenizer.ggml.tokens", tokens.clone())
            .metadata("tokenizer.ggml.token_type", types)
            .metadata("tokenizer.ggml.merges", MERGES.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .metadata("tokenizer.ggml.bos_token_id", 1u32)
            .metadata("tokenizer.ggml.eos_token_id", 2u32)
            .metadata("tokenizer.ggml.add_bos_token", false)
            .metadata("tokenizer.chat_template", CHAT_TEMPLATE);
        let mat = |rng: &mut Rng, w: GgufWriter, name: &str, rows: usize, cols: usize, t: GgmlType, scale: f32| {
            let v = rng.vec(rows * cols, scale);
            w.tensor(name, &[cols as u64, rows as u64], t, blocks(t, &v))
        };
        w = mat(&mut rng, w, "token_embd.weight", n, h, GgmlType::Q8_0, self.embedding_scale);
        let wt = self.weight_type;
        let s_in = |k: usize| 1.7 / (k as f32).sqrt(); // uniform [-a, a): std a/sqrt(3) = 1/sqrt(k)
        for i in 0..self.layers {
            let p = |s: &str| format!("blk.{i}.{s}.weight");
            w = mat(&mut rng, w, &p("attn_q"), self.heads * d, h, wt, s_in(h));
            w = mat(&mut rng, w, &p("attn_k"), self.kv_heads * d, h, wt, s_in(h));
            w = mat(&mut rng, w, &p("attn_v"), self.kv_heads * d, h, wt, s_in(h));
            w = mat(&mut rng, w, &p("attn_output"), h, self.heads * d, wt, s_in(h));
            w = mat(&mut rng, w, &p("ffn_gate"), f, h, wt, s_in(h));
            w = mat(&mut rng, w, &p("ffn_up"), f, h, wt, s_in(h));
            w = mat(&mut rng, w, &p("ffn_down"), h, f, wt, s_in(f));
            for norm in ["attn_norm", "ffn_norm"] {
                let v: Vec<f32> = (0..h).map(|_| 1.0 + 0.2 * rng.next()).collect();
                w = w.tensor(&p(norm), &[h as u64], GgmlType::F32, blocks(GgmlType::F32, &v));
            }
        }
        let v: Vec<f32> = (0..h).map(|_| 1.0 + 0.2 * rng.next()).collect();
        w = w.tensor("output_norm.weight", &[h as u64], GgmlType::F32, blocks(GgmlType::F32, &v));
        w.to_bytes().unwrap()
    }

    /// Writes the file into `dir` and returns its path.
    pub fn write(&self, dir: &Path) -> PathBuf {
        let p = dir.join("tiny-llama.gguf");
        std::fs::write(&p, self.to_bytes()).unwrap();
        p
    }
}

/// The shape of a tiny BERT.
#[derive(Clone, Copy, Debug)]
pub struct TinyBert {
    pub layers: usize,
    pub hidden: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub max_positions: usize,
    pub seed: u64,
}

impl Default for TinyBert {
    fn default() -> Self {
        // Head dim 32, as all-MiniLM-L6-v2's (and the smallest the flash kernels take).
        TinyBert { layers: 2, hidden: 64, heads: 2, intermediate: 128, max_positions: 32, seed: 5 }
    }
}

pub const BERT_WORDS: [&str; 24] = [
    "the", "cat", "sat", "on", "mat", "a", "dog", "ran", "in", "park", "kitten", "rug", "##s", "is", "playing", "music", "loud", "quiet",
    "red", "blue", "car", "fast", "slow", ".",
];

impl TinyBert {
    /// Writes `config.json`, `tokenizer.json`, `model.safetensors` and the sentence-transformers
    /// files into `dir`.
    pub fn write(&self, dir: &Path) {
        let (h, im) = (self.hidden, self.intermediate);
        let mut vocab: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].iter().map(|s| s.to_string()).collect();
        vocab.extend(BERT_WORDS.iter().map(|s| s.to_string()));
        let n = vocab.len();
        let config = serde_json::json!({
            "model_type": "bert", "hidden_size": h, "num_hidden_layers": self.layers, "num_attention_heads": self.heads,
            "intermediate_size": im, "max_position_embeddings": self.max_positions, "vocab_size": n, "hidden_act": "gelu",
            "layer_norm_eps": 1e-12, "pad_token_id": 0, "type_vocab_size": 2, "position_embedding_type": "absolute"
        });
        std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
        std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
        std::fs::write(dir.join("1_Pooling/config.json"), r#"{"word_embedding_dimension": 64, "pooling_mode_mean_tokens": true}"#).unwrap();
        std::fs::write(
            dir.join("modules.json"),
            r#"[{"idx":0,"type":"sentence_transformers.models.Transformer"},{"idx":1,"type":"sentence_transformers.models.Pooling"},{"idx":2,"type":"sentence_transformers.models.Normalize"}]"#,
        )
        .unwrap();
        // The tokenizer: BERT's normalizer and pre-tokenizer, WordPiece, [CLS] ... [SEP].
        use tokenizers::models::wordpiece::WordPiece;
        use tokenizers::normalizers::bert::BertNormalizer;
        use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
        use tokenizers::processors::template::TemplateProcessing;
        let map: HashMap<String, u32> = vocab.iter().enumerate().map(|(i, s)| (s.clone(), i as u32)).collect();
        let wp = WordPiece::builder()
            .vocab(map.into_iter().collect::<tokenizers::models::bpe::Vocab>())
            .unk_token("[UNK]".into())
            .build()
            .unwrap();
        let mut tok = tokenizers::Tokenizer::new(wp);
        tok.with_normalizer(Some(BertNormalizer::new(true, true, None, true)));
        tok.with_pre_tokenizer(Some(BertPreTokenizer));
        tok.with_post_processor(Some(
            TemplateProcessing::builder()
                .try_single("[CLS] $A [SEP]")
                .unwrap()
                .special_tokens(vec![("[CLS]", 2), ("[SEP]", 3)])
                .build()
                .unwrap(),
        ));
        tok.with_decoder(Some(tokenizers::decoders::wordpiece::WordPiece::default()));
        tok.save(dir.join("tokenizer.json"), false).unwrap();

        let mut rng = Rng::new(self.seed);
        let mut tensors: Vec<(String, Vec<usize>, Vec<f32>)> = Vec::new();
        let mut t = |name: &str, shape: &[usize], scale: f32, offset: f32| {
            let v: Vec<f32> = rng.vec(shape.iter().product(), scale).into_iter().map(|x| x + offset).collect();
            tensors.push((name.to_string(), shape.to_vec(), v));
        };
        t("embeddings.word_embeddings.weight", &[n, h], 1.0, 0.0);
        t("embeddings.position_embeddings.weight", &[self.max_positions, h], 0.3, 0.0);
        t("embeddings.token_type_embeddings.weight", &[2, h], 0.3, 0.0);
        t("embeddings.LayerNorm.weight", &[h], 0.2, 1.0);
        t("embeddings.LayerNorm.bias", &[h], 0.1, 0.0);
        let a = |k: usize| 1.7 / (k as f32).sqrt();
        for i in 0..self.layers {
            let p = |s: &str| format!("encoder.layer.{i}.{s}");
            for m in ["query", "key", "value"] {
                t(&p(&format!("attention.self.{m}.weight")), &[h, h], a(h), 0.0);
                t(&p(&format!("attention.self.{m}.bias")), &[h], 0.1, 0.0);
            }
            t(&p("attention.output.dense.weight"), &[h, h], a(h), 0.0);
            t(&p("attention.output.dense.bias"), &[h], 0.1, 0.0);
            t(&p("attention.output.LayerNorm.weight"), &[h], 0.2, 1.0);
            t(&p("attention.output.LayerNorm.bias"), &[h], 0.1, 0.0);
            t(&p("intermediate.dense.weight"), &[im, h], a(h), 0.0);
            t(&p("intermediate.dense.bias"), &[im], 0.1, 0.0);
            t(&p("output.dense.weight"), &[h, im], a(im), 0.0);
            t(&p("output.dense.bias"), &[h], 0.1, 0.0);
            t(&p("output.LayerNorm.weight"), &[h], 0.2, 1.0);
            t(&p("output.LayerNorm.bias"), &[h], 0.1, 0.0);
        }
        let bytes: Vec<(String, Vec<usize>, Vec<u8>)> =
            tensors.into_iter().map(|(n, s, v)| (n, s, v.iter().flat_map(|x| x.to_le_bytes()).collect())).collect();
        let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = bytes
            .iter()
            .map(|(n, s, b)| (n.clone(), safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.clone(), b).unwrap()))
            .collect();
        safetensors::serialize_to_file(views, None, &dir.join("model.safetensors")).unwrap();
    }
}
