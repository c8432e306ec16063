//! A tiny random-weight BERT (a sentence-transformers directory written by the test: safetensors,
//! WordPiece tokenizer.json, config) on the device against the CPU reference, which embeds each
//! sentence alone: the padded batch and its key-padding mask must not change any vector.
//!
//! Tolerances: unit vectors; f32 on the device differs from the f64 reference by f32 rounding
//! (~1e-6 per element), we allow 1e-4 per element; bf16 rounds every weight and activation to
//! 8 significant bits, we allow a cosine of at least 0.999 to the reference.

mod common;

use common::{TinyBert, device, scratch};
use ferrocm::DType;
use ferrocm_models::bert::{BertEmbedder, BertReference, cosine, similarity_matrix};
use ferrocm_models::{Error, LoadOptions};

const SENTENCES: [&str; 4] =
    ["The cat sat on the mat.", "A kitten is playing on the rug", "Loud music", "the red car is fast and the blue car is slow ."];

#[test]
fn padded_batches_match_the_reference_sentence_by_sentence() {
    let dir = scratch("bert-f32");
    TinyBert::default().write(&dir);
    let m = BertEmbedder::load(device(), &dir, &LoadOptions::default().dtype(DType::F32)).unwrap();
    let r = BertReference::load(&dir).unwrap();
    let got = m.embed(&SENTENCES).unwrap();
    let want = r.embed(&SENTENCES).unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.len(), 64);
        let norm: f64 = g.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "L2-normalised: {norm}");
        for (&a, &b) in g.iter().zip(w) {
            assert!((a as f64 - b).abs() < 1e-4, "{a} vs {b}");
        }
    }
    // One sentence alone gives the vector it had in the padded batch.
    let alone = m.embed(&SENTENCES[2..3]).unwrap();
    assert!(cosine(&alone[0], &got[2]) > 0.99999);
    let sim = similarity_matrix(&got);
    assert!((sim[1][1] - 1.0).abs() < 1e-5 && (sim[0][3] - sim[3][0]).abs() < 1e-6);
}

#[test]
fn bf16_embeddings_stay_close_to_the_reference() {
    let dir = scratch("bert-bf16");
    TinyBert { seed: 8, ..Default::default() }.write(&dir);
    let m = BertEmbedder::load(device(), &dir, &LoadOptions::default().dtype(DType::Bf16)).unwrap();
    let r = BertReference::load(&dir).unwrap();
    let got = m.embed(&SENTENCES).unwrap();
    let want = r.embed(&SENTENCES).unwrap();
    for (g, w) in got.iter().zip(&want) {
        let w32: Vec<f32> = w.iter().map(|&x| x as f32).collect();
        let c = cosine(g, &w32);
        assert!(c > 0.999, "cosine {c}");
    }
}

#[test]
fn long_sentences_are_truncated_to_the_positions() {
    let dir = scratch("bert-trunc");
    TinyBert { max_positions: 8, ..Default::default() }.write(&dir);
    let m = BertEmbedder::load(device(), &dir, &LoadOptions::default().dtype(DType::F32)).unwrap();
    let r = BertReference::load(&dir).unwrap();
    let s = ["the cat sat on the mat and the dog ran in the park", "a dog"];
    let got = m.embed(&s).unwrap();
    let want = r.embed(&s).unwrap();
    for (g, w) in got.iter().zip(&want) {
        for (&a, &b) in g.iter().zip(w) {
            assert!((a as f64 - b).abs() < 1e-4, "{a} vs {b}");
        }
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    let dir = scratch("bert-errors");
    TinyBert::default().write(&dir);
    let dev = device();
    let m = BertEmbedder::load(dev, &dir, &LoadOptions::default()).unwrap();
    assert!(matches!(m.embed(&[]), Err(Error::EmptyInput(_))));
    assert!(matches!(BertEmbedder::load(dev, dir.join("nowhere"), &LoadOptions::default()), Err(Error::Io { .. })));
    std::fs::write(dir.join("config.json"), r#"{"model_type": "gpt2"}"#).unwrap();
    assert!(matches!(BertEmbedder::load(dev, &dir, &LoadOptions::default()), Err(Error::UnsupportedArchitecture { .. })));
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    TinyBert::default().write(&dir);
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    assert!(matches!(BertEmbedder::load(dev, &dir, &LoadOptions::default()), Err(Error::Io { .. })));
    // A directory that is no model's, and a GGUF file (a Llama-family model), say so.
    let empty = scratch("bert-errors-empty");
    match BertEmbedder::load(dev, &empty, &LoadOptions::default()) {
        Err(e @ Error::Io { .. }) => assert!(e.to_string().contains("no config.json"), "{e}"),
        other => panic!("expected an I/O error naming config.json, got {:?}", other.err()),
    }
    let gguf = empty.join("model.gguf");
    std::fs::write(&gguf, b"GGUF\x03\0\0\0").unwrap();
    match BertEmbedder::load(dev, &gguf, &LoadOptions::default()) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("GGUF"), "{m}"),
        other => panic!("expected an invalid-argument error, got {:?}", other.err()),
    }
}
