//! The `ferrocm` binary's script interfaces (`--json`) and exit codes, on the tiny models.

mod common;

use common::{TinyBert, TinyLlama, device, scratch};
use ferrocm::DType;
use ferrocm_models::LoadOptions;
use ferrocm_models::llama::{GenerateOptions, LlamaModel};
use std::process::{Command, Output};

fn ferrocm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrocm")).args(args).output().unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(stdout.lines().count(), 1, "one JSON line: {stdout:?}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn generate_json_is_one_line_with_the_library_s_greedy_tokens() {
    let dir = scratch("cli-generate");
    let path = TinyLlama { embedding_scale: 2.0, ..Default::default() }.write(&dir);
    let p = path.to_str().unwrap();
    let j = json(&ferrocm(&[
        "generate",
        "--model",
        p,
        "--prompt",
        "hello world",
        "--max-tokens",
        "5",
        "--dtype",
        "f32",
        "--json",
        "--no-modeled",
    ]));
    let ids = |k: &str| -> Vec<u32> { j[k].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect() };
    let model = LlamaModel::load(device(), &path, &LoadOptions::default().dtype(DType::F32)).unwrap();
    let prompt = model.encode("hello world").unwrap();
    assert_eq!(ids("prompt_tokens"), prompt);
    let want = model.generate(&prompt, &GenerateOptions { max_new_tokens: 5, ..Default::default() }, |_, _| {}).unwrap();
    assert_eq!(ids("tokens"), want.tokens);
    assert_eq!(j["text"].as_str().unwrap(), want.text);
}

#[test]
fn embed_json_holds_one_vector_per_sentence() {
    let dir = scratch("cli-embed");
    TinyBert::default().write(&dir);
    let j = json(&ferrocm(&["embed", "--model", dir.to_str().unwrap(), "--json", "the cat sat", "a dog ran in the park"]));
    let e = j["embeddings"].as_array().unwrap();
    assert_eq!(e.len(), 2);
    for v in e {
        let v: Vec<f64> = v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!(v.len(), 64);
        assert!((v.iter().map(|x| x * x).sum::<f64>().sqrt() - 1.0).abs() < 1e-3);
    }
    // Text mode prints the similarity matrix for several sentences.
    let out = ferrocm(&["embed", "--model", dir.to_str().unwrap(), "the cat sat", "a dog ran"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("cosine similarity"));
}

#[test]
fn bad_input_fails_with_a_message_not_a_panic() {
    let dir = scratch("cli-errors");
    let path = TinyLlama::default().write(&dir);
    let p = path.to_str().unwrap();
    let cases: [(&[&str], &str); 7] = [
        (&["generate", "--model", "no-such-model", "--prompt", "x"], "neither an existing path nor a known model name"),
        (&["generate", "--model", p, "--prompt", "hello", "--max-tokens", "100000"], "exceeds the context"),
        (&["generate", "--model", p, "--prompt", ""], "empty input"),
        (&["generate", "--model", p, "--prompt", "x", "--temperature=-1"], "temperature"),
        // Negative numbers as separate words are values (the sampler refuses them), not flags.
        (&["generate", "--model", p, "--prompt", "x", "--temperature", "-1"], "temperature -1"),
        (&["generate", "--model", p, "--prompt", "x", "--top-p", "-0.5"], "top-p -0.5"),
        // A GGUF file given to `embed` is a Llama-family model, not a BERT directory.
        (&["embed", "--model", p, "hello"], "is a GGUF file"),
    ];
    for (args, msg) in cases {
        let out = ferrocm(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(err.contains(msg), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // No token asked for: no prefill runs, and the summary gives no rate for it.
    let out = ferrocm(&["generate", "--model", p, "--prompt", "hello", "--max-tokens", "0"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("prompt") && err.contains("(0.00 tokens/s)"), "{err}");
    // A directory given to `generate` is not a GGUF file.
    let out = ferrocm(&["generate", "--model", dir.to_str().unwrap(), "--prompt", "x"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a GGUF file"));
}
