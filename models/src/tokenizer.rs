//! Text to token ids and back, through the `tokenizers` crate: a byte-level BPE built from a
//! GGUF file's vocabulary and merges ([`TextTokenizer::from_gguf`]), or any `tokenizer.json`
//! ([`TextTokenizer::from_file`], the WordPiece of BERT models).
//!
//! ```no_run
//! use ferrocm::io::gguf::GgufFile;
//! use ferrocm_models::tokenizer::TextTokenizer;
//! let f = GgufFile::open("SmolLM2-135M-Instruct.Q4_1.gguf")?;
//! let tok = TextTokenizer::from_gguf(f.header(), f.path())?;
//! let ids = tok.encode("<|im_start|>user\nWhat is 12+7?", false)?;
//! assert_eq!(ids[0], 1); // the special token, whole
//! assert_eq!(tok.decode(&ids, false)?, "<|im_start|>user\nWhat is 12+7?");
//! # Ok::<(), ferrocm_models::Error>(())
//! ```

use crate::error::{Error, Result};
use ferrocm::io::gguf::GgufHeader;
use std::collections::HashMap;
use std::path::Path;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, PreTokenizerWrapper, SplitDelimiterBehavior};

/// GGUF token types (`tokenizer.ggml.token_type`) that are matched whole in text.
const TOKEN_TYPE_CONTROL: i32 = 3;
const TOKEN_TYPE_USER_DEFINED: i32 = 4;

/// Llama 3's pre-tokenizer regex (llama.cpp `LLAMA_VOCAB_PRE_TYPE_LLAMA3`).
const LLAMA3_REGEX: &str =
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

fn tk_err(e: impl std::fmt::Display) -> Error {
    Error::Tokenizer(e.to_string())
}

/// A tokenizer and the special ids a model needs around it.
///
/// Get one with [`TextTokenizer::from_gguf`] (generators) or [`TextTokenizer::from_file`]
/// (embedders); [`LlamaModel`](crate::llama::LlamaModel) and
/// [`BertEmbedder`](crate::bert::BertEmbedder) build theirs on load.
#[derive(Clone)]
pub struct TextTokenizer {
    inner: tokenizers::Tokenizer,
    bos: Option<u32>,
    eos: Option<u32>,
    add_bos: bool,
    /// Ids that end a generation: EOS, plus the chat end-of-turn token when there is one.
    stop: Vec<u32>,
}

impl std::fmt::Debug for TextTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextTokenizer").field("vocab", &self.vocab_size()).field("bos", &self.bos).field("eos", &self.eos).finish()
    }
}

impl TextTokenizer {
    /// The byte-level BPE tokenizer a GGUF file describes (`tokenizer.ggml.model = gpt2`): its
    /// vocabulary and merges, the pre-tokenizer `tokenizer.ggml.pre` names (`smollm`: each
    /// digit split off first, then the GPT-2 regex; `gpt2`/`default`; `llama-bpe`/`llama3`),
    /// control and user-defined tokens matched whole, BOS added when the file says so.
    /// `path` is for messages.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] for another tokenizer model (SentencePiece `llama`, `bert`, ...), an
    /// unknown pre-tokenizer, missing merges or malformed entries; the header's errors for
    /// missing or mistyped keys.
    pub fn from_gguf(header: &GgufHeader, path: &Path) -> Result<TextTokenizer> {
        let t = header.tokenizer()?;
        if t.model != "gpt2" {
            return Err(Error::Tokenizer(format!(
                "{}: tokenizer.ggml.model = {:?}; ferrocm-models builds byte-level BPE (gpt2) tokenizers only",
                path.display(),
                t.model
            )));
        }
        let merges =
            t.merges.ok_or_else(|| Error::Tokenizer(format!("{}: a gpt2 tokenizer without tokenizer.ggml.merges", path.display())))?;
        let mut first = HashMap::with_capacity(t.tokens.len());
        for (id, tok) in t.tokens.iter().enumerate() {
            // Duplicate strings happen in some conversions; the first id wins, as in llama.cpp.
            first.entry(tok.clone()).or_insert(id as u32);
        }
        let vocab: tokenizers::models::bpe::Vocab = first.into_iter().collect();
        let mut pairs = Vec::with_capacity(merges.len());
        for (i, m) in merges.iter().enumerate() {
            let (a, b) = m
                .split_once(' ')
                .ok_or_else(|| Error::Tokenizer(format!("{}: merge {i} ({m:?}) is not two tokens separated by a space", path.display())))?;
            pairs.push((a.to_string(), b.to_string()));
        }
        let bpe = BPE::builder().vocab_and_merges(vocab, pairs).build().map_err(tk_err)?;
        let mut inner = tokenizers::Tokenizer::new(bpe);
        let byte_level = ByteLevel::new(false, true, true);
        let pre: PreTokenizerWrapper = match t.pre.unwrap_or("default") {
            "smollm" => Sequence::new(vec![Digits::new(true).into(), byte_level.into()]).into(),
            "gpt2" | "default" => byte_level.into(),
            "llama-bpe" | "llama3" => {
                let split =
                    Split::new(SplitPattern::Regex(LLAMA3_REGEX.into()), SplitDelimiterBehavior::Isolated, false).map_err(tk_err)?;
                Sequence::new(vec![split.into(), ByteLevel::new(false, true, false).into()]).into()
            }
            other => {
                return Err(Error::Tokenizer(format!(
                    "{}: pre-tokenizer tokenizer.ggml.pre = {other:?} is not supported (smollm, gpt2, default, llama-bpe)",
                    path.display()
                )));
            }
        };
        inner.with_pre_tokenizer(Some(pre));
        inner.with_decoder(Some(ByteLevelDecoder::default()));
        if let Some(types) = t.token_types {
            let added: Vec<AddedToken> = types
                .iter()
                .zip(t.tokens)
                .filter(|(ty, _)| **ty == TOKEN_TYPE_CONTROL || **ty == TOKEN_TYPE_USER_DEFINED)
                .map(|(ty, tok)| AddedToken::from(tok.clone(), *ty == TOKEN_TYPE_CONTROL).normalized(false))
                .collect();
            inner.add_special_tokens(&added);
        }
        let mut stop: Vec<u32> = t.eos_token_id.into_iter().collect();
        // Chat models end a turn with their own token; stopping there is what the template means.
        for end in ["<|im_end|>", "<|eot_id|>", "<|end_of_turn|>", "<end_of_turn>"] {
            if let Some(id) = inner.token_to_id(end) {
                if !stop.contains(&id) {
                    stop.push(id);
                }
            }
        }
        Ok(TextTokenizer { inner, bos: t.bos_token_id, eos: t.eos_token_id, add_bos: t.add_bos_token.unwrap_or(false), stop })
    }

    /// A tokenizer from a `tokenizer.json` file, with its padding and truncation turned off
    /// (batches are padded by the caller, which also knows the model's length limit).
    ///
    /// # Errors
    /// [`Error::Io`] for a missing file, [`Error::Tokenizer`] for one the crate cannot read.
    pub fn from_file(path: &Path) -> Result<TextTokenizer> {
        if !path.is_file() {
            return Err(Error::io(path, std::io::Error::new(std::io::ErrorKind::NotFound, "no tokenizer.json")));
        }
        let mut inner = tokenizers::Tokenizer::from_file(path).map_err(|e| Error::Tokenizer(format!("{}: {e}", path.display())))?;
        inner.with_padding(None);
        inner.with_truncation(None).map_err(tk_err)?;
        Ok(TextTokenizer { inner, bos: None, eos: None, add_bos: false, stop: Vec::new() })
    }

    /// The ids of `text`. `add_special`: BOS for GGUF tokenizers whose file asks for it; the
    /// post-processor's tokens (`[CLS] ... [SEP]`) for `tokenizer.json` ones.
    ///
    /// # Errors
    /// [`Error::Tokenizer`].
    pub fn encode(&self, text: &str, add_special: bool) -> Result<Vec<u32>> {
        let enc = self.inner.encode(text, add_special).map_err(tk_err)?;
        let mut ids = Vec::with_capacity(enc.len() + 1);
        if add_special && self.add_bos {
            ids.extend(self.bos);
        }
        ids.extend_from_slice(enc.get_ids());
        Ok(ids)
    }

    /// The text of `ids` (special tokens included unless `skip_special`).
    ///
    /// # Errors
    /// [`Error::Tokenizer`].
    pub fn decode(&self, ids: &[u32], skip_special: bool) -> Result<String> {
        self.inner.decode(ids, skip_special).map_err(tk_err)
    }

    /// An incremental decoder: feed ids one at a time, get the text they complete (a character
    /// split over several byte-level tokens comes out once whole).
    pub fn stream(&self, skip_special: bool) -> TokenStream<'_> {
        TokenStream { tok: self, ids: Vec::new(), emitted: 0, skip_special }
    }

    /// Tokens in the vocabulary (added tokens included).
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// The id of a token string.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// The beginning-of-sequence id, if any.
    pub fn bos(&self) -> Option<u32> {
        self.bos
    }

    /// The end-of-sequence id, if any.
    pub fn eos(&self) -> Option<u32> {
        self.eos
    }

    /// The ids that end a generation.
    pub fn stop_ids(&self) -> &[u32] {
        &self.stop
    }

    /// The text of `id` as a token string (for `info` and messages).
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    /// The wrapped `tokenizers` tokenizer.
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }
}

/// Incremental decoding: see [`TextTokenizer::stream`].
pub struct TokenStream<'t> {
    tok: &'t TextTokenizer,
    ids: Vec<u32>,
    emitted: usize,
    skip_special: bool,
}

impl TokenStream<'_> {
    /// Adds `id`; returns the new text it completes (empty while a character is incomplete).
    /// Decodes the whole sequence each time and emits what follows the text already emitted,
    /// holding back a trailing U+FFFD (the start of a character whose other bytes are in tokens
    /// still to come): simple, and exact for byte-level BPE and WordPiece alike.
    ///
    /// # Errors
    /// [`Error::Tokenizer`].
    pub fn push(&mut self, id: u32) -> Result<String> {
        self.ids.push(id);
        let text = self.tok.decode(&self.ids, self.skip_special)?;
        if text.ends_with('\u{FFFD}') || text.len() < self.emitted || !text.is_char_boundary(self.emitted) {
            return Ok(String::new());
        }
        let new = text[self.emitted..].to_string();
        self.emitted = text.len();
        Ok(new)
    }

    /// Everything fed so far, decoded.
    ///
    /// # Errors
    /// [`Error::Tokenizer`].
    pub fn text(&self) -> Result<String> {
        self.tok.decode(&self.ids, self.skip_special)
    }
}
