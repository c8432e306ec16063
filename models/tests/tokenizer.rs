//! The byte-level BPE built from a GGUF vocabulary (the tiny model's: special tokens, the 256
//! byte characters, six merges) tokenizes as llama.cpp's `smollm` pre-tokenizer says: digits one
//! by one, then the GPT-2 split, merges by rank, special tokens whole.

mod common;

use common::{SPECIALS, TinyLlama, byte_chars};
use ferrocm::io::gguf::GgufHeader;
use ferrocm_models::tokenizer::TextTokenizer;

fn tiny() -> TextTokenizer {
    let bytes = TinyLlama::default().to_bytes();
    let h = GgufHeader::parse("tiny.gguf".as_ref(), &bytes).unwrap();
    TextTokenizer::from_gguf(&h, "tiny.gguf".as_ref()).unwrap()
}

/// The id of a token string of the tiny vocabulary.
fn id(tok: &TextTokenizer, s: &str) -> u32 {
    tok.token_to_id(s).unwrap_or_else(|| panic!("{s:?} is not in the vocabulary"))
}

/// The id of byte `b`'s character.
fn byte(tok: &TextTokenizer, b: u8) -> u32 {
    id(tok, &byte_chars()[b as usize].to_string())
}

#[test]
fn merges_apply_by_rank_and_digits_split_one_by_one() {
    let tok = tiny();
    let ids = tok.encode("hello world 1234", false).unwrap();
    let want = vec![
        id(&tok, "hell"),
        byte(&tok, b'o'),
        id(&tok, "Ġw"),
        id(&tok, "or"),
        byte(&tok, b'l'),
        byte(&tok, b'd'),
        // " 1234": the digits are split off first, so the space stays alone before them.
        byte(&tok, b' '),
        byte(&tok, b'1'),
        byte(&tok, b'2'),
        byte(&tok, b'3'),
        byte(&tok, b'4'),
    ];
    assert_eq!(ids, want);
    assert_eq!(tok.decode(&ids, false).unwrap(), "hello world 1234");
}

#[test]
fn special_tokens_are_matched_whole_and_skipped_on_request() {
    let tok = tiny();
    let ids = tok.encode("<|im_start|>user\nhe<|im_end|>", false).unwrap();
    assert_eq!(ids[0], 1);
    assert_eq!(*ids.last().unwrap(), 2);
    assert_eq!(ids[ids.len() - 2], id(&tok, "he"));
    assert_eq!(tok.decode(&ids, false).unwrap(), "<|im_start|>user\nhe<|im_end|>");
    assert_eq!(tok.decode(&ids, true).unwrap(), "user\nhe");
    assert_eq!(tok.vocab_size(), SPECIALS.len() + 256 + common::MERGES.len());
    assert_eq!((tok.bos(), tok.eos()), (Some(1), Some(2)));
    assert_eq!(tok.stop_ids(), &[2], "EOS is <|im_end|> here: one stop id");
}

#[test]
fn streaming_holds_back_split_characters() {
    let tok = tiny();
    // "é" is two bytes, so two byte-level tokens: nothing comes out until both are in.
    let ids = tok.encode("aé!", false).unwrap();
    assert_eq!(ids.len(), 4);
    let mut s = tok.stream(true);
    let pieces: Vec<String> = ids.iter().map(|&i| s.push(i).unwrap()).collect();
    assert_eq!(pieces, ["a", "", "é", "!"]);
    assert_eq!(s.text().unwrap(), "aé!");
}

#[test]
fn other_tokenizer_models_are_refused() {
    let mut bytes = TinyLlama::default().to_bytes();
    // Rewrite "gpt2" as "bert" in place (same length): a WordPiece GGUF is not built here.
    let at = bytes.windows(4).position(|w| w == b"gpt2").unwrap();
    bytes[at..at + 4].copy_from_slice(b"bert");
    let h = GgufHeader::parse("x.gguf".as_ref(), &bytes).unwrap();
    let err = TextTokenizer::from_gguf(&h, "x.gguf".as_ref()).unwrap_err();
    assert!(err.to_string().contains("byte-level BPE"), "{err}");
}
