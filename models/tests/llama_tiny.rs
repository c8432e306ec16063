//! A tiny random-weight Llama (written as GGUF by the test: Q4_1 projections, Q8_0 embeddings,
//! byte-level BPE vocabulary, chat template) on the device against the same file on the CPU
//! reference.
//!
//! Tolerances, as the largest logit error over the logits' RMS: the reference runs in f64 on the
//! file's weights dequantized exactly. The device in f32 differs by f32 rounding of sums of a few
//! hundred products through a handful of ops (measured 2.5e-6); we allow 1e-4. In bf16 every
//! weight and activation is rounded to 8 significant bits (2^-9 relative each; attention scores,
//! probabilities and logits stay f32), the residual stream included: measured up to 4.9e-2 over
//! the ~4500 logits of a prefill; we allow 0.1. f16 keeps 11 bits: 8 times less.

mod common;

use common::{TinyLlama, device, scratch};
use ferrocm::DType;
use ferrocm::io::gguf::GgmlType;
use ferrocm_models::chat::Message;
use ferrocm_models::llama::{GenerateOptions, LlamaModel, LlamaReference, Session};
use ferrocm_models::sampling::SamplingParams;
use ferrocm_models::{Error, LoadOptions};

fn scale_of(rows: &[Vec<f64>]) -> f64 {
    let n = rows.iter().map(Vec::len).sum::<usize>() as f64;
    (rows.iter().flatten().map(|v| v * v).sum::<f64>() / n).sqrt()
}

/// Largest |device - reference| over every logit, relative to the reference's RMS.
fn rel_err(dev: &[Vec<f32>], reference: &[Vec<f64>]) -> f64 {
    assert_eq!(dev.len(), reference.len());
    let worst = dev.iter().zip(reference).flat_map(|(d, r)| d.iter().zip(r).map(|(&a, &b)| (a as f64 - b).abs())).fold(0.0, f64::max);
    worst / scale_of(reference)
}

fn prefill_and_decode(dtype: DType, tol: f64) {
    let dir = scratch(&format!("llama-logits-{dtype}"));
    let path = TinyLlama::default().write(&dir);
    let model = LlamaModel::load(device(), &path, &LoadOptions::default().dtype(dtype)).unwrap();
    let mut reference = LlamaReference::load(&path).unwrap();
    let prompt = model.encode("hello world, the 42 cats").unwrap();
    assert!(prompt.len() > 8, "{prompt:?}");
    let mut s = Session::new(&model, 1, prompt.len() + 5).unwrap();
    // Prefill: every position's logits.
    let dev = s.step_all_logits(&[&prompt]).unwrap();
    let want = reference.forward(&prompt).unwrap();
    let e = rel_err(&dev, &want);
    eprintln!("{dtype} prefill of {} tokens: largest logit error {e:.2e} of the logits' RMS", prompt.len());
    assert!(e < tol, "{dtype} prefill: relative error {e}");
    // Decode steps through the KV cache, one of them two tokens at once (the paged cache's
    // decode attention with two query rows, causal between them).
    for ids in [&[17u32][..], &[200, 5], &[9], &[31]] {
        let dev = s.step_all_logits(&[ids]).unwrap();
        let want = reference.forward(ids).unwrap();
        let e = rel_err(&dev, &want);
        eprintln!("{dtype} decode of {ids:?}: {e:.2e}");
        assert!(e < tol, "{dtype} decode of {ids:?}: relative error {e}");
    }
    assert_eq!(s.position(), prompt.len() + 5);
}

#[test]
fn f32_logits_match_the_cpu_reference_in_prefill_and_decode() {
    prefill_and_decode(DType::F32, 1e-4);
}

#[test]
fn bf16_logits_match_the_cpu_reference_within_bf16_rounding() {
    prefill_and_decode(DType::Bf16, 0.1);
}

#[test]
fn f16_logits_match_the_cpu_reference_within_f16_rounding() {
    prefill_and_decode(DType::F16, 0.02);
}

#[test]
fn greedy_tokens_match_the_reference_where_margins_are_clear() {
    // A large embedding scale spreads the (tied) logits: clear top-1 margins.
    let cfg = TinyLlama { embedding_scale: 2.0, seed: 11, ..Default::default() };
    let dir = scratch("llama-greedy");
    let path = cfg.write(&dir);
    let model = LlamaModel::load(device(), &path, &LoadOptions::default().dtype(DType::F32)).unwrap();
    let prompt = model.encode_chat(&[Message::user("hello")]).unwrap();
    let opts = GenerateOptions { max_new_tokens: 10, stop_at_eos: false, ..Default::default() };
    let mut streamed = Vec::new();
    let out = model.generate(&prompt, &opts, |id, _| streamed.push(id)).unwrap();
    assert_eq!(out.tokens, streamed);
    assert_eq!(out.tokens.len(), 10);
    // The reference's own greedy run, and its margins: each step's top-1 lead must exceed the
    // device's largest logit error many times over, or the comparison would be luck.
    let mut reference = LlamaReference::load(&path).unwrap();
    let want = reference.generate_greedy(&prompt, 10, &[]).unwrap();
    assert_eq!(out.tokens, want);
    reference.reset();
    let mut s = Session::new(&model, 1, prompt.len() + 10).unwrap();
    let mut ctx = prompt.clone();
    for &next in &want {
        let r = reference.forward(&ctx[reference.position()..]).unwrap().pop().unwrap();
        let d = s.step(&[&ctx[s.position()..]]).unwrap().pop().unwrap();
        let mut sorted = r.clone();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let margin = sorted[0] - sorted[1];
        let err = d.iter().zip(&r).map(|(&a, &b)| (a as f64 - b).abs()).fold(0.0, f64::max);
        assert!(margin > 20.0 * err, "margin {margin} vs device error {err}");
        ctx.push(next);
    }
}

#[test]
fn a_batch_of_two_runs_like_two_sessions() {
    let dir = scratch("llama-batch");
    let path = TinyLlama { seed: 3, ..Default::default() }.write(&dir);
    let model = LlamaModel::load(device(), &path, &LoadOptions::default().dtype(DType::F32)).unwrap();
    let a = model.encode("the world").unwrap();
    let b = model.encode("hello you").unwrap();
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut batch = Session::new(&model, 2, n + 1).unwrap();
    let both = batch.step(&[a, b]).unwrap();
    let next = batch.step(&[&[7], &[9]]).unwrap();
    for (i, (seq, id)) in [(a, 7u32), (b, 9u32)].into_iter().enumerate() {
        let mut one = Session::new(&model, 1, n + 1).unwrap();
        let l0 = one.step(&[seq]).unwrap().pop().unwrap();
        let l1 = one.step(&[&[id]]).unwrap().pop().unwrap();
        for (x, y) in both[i].iter().zip(&l0).chain(next[i].iter().zip(&l1)) {
            assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "sequence {i}: {x} vs {y}");
        }
    }
}

#[test]
fn seeded_sampling_is_reproducible_and_stops_at_max_tokens() {
    let dir = scratch("llama-sampling");
    let path = TinyLlama::default().write(&dir);
    let model = LlamaModel::load(device(), &path, &LoadOptions::default()).unwrap();
    let prompt = model.encode("hello").unwrap();
    let sampling = SamplingParams { temperature: 0.9, top_k: 20, top_p: 0.9, repetition_penalty: 1.1, seed: 9, ..Default::default() };
    let opts = GenerateOptions { max_new_tokens: 6, sampling, stop_at_eos: false, ..Default::default() };
    let a = model.generate(&prompt, &opts, |_, _| {}).unwrap();
    let b = model.generate(&prompt, &opts, |_, _| {}).unwrap();
    assert_eq!(a.tokens, b.tokens);
    assert_eq!(a.tokens.len(), 6);
    assert_eq!(a.stats.decode_steps, 5);
    assert_eq!(a.text, model.tokenizer().decode(&a.tokens, true).unwrap());
}

#[test]
fn bad_inputs_are_typed_errors() {
    let dir = scratch("llama-errors");
    let path = TinyLlama::default().write(&dir);
    let dev = device();
    let model = LlamaModel::load(dev, &path, &LoadOptions::default()).unwrap();
    let opts = GenerateOptions { max_new_tokens: 4, ..Default::default() };
    assert!(matches!(model.encode(""), Err(Error::EmptyInput(_))));
    assert!(matches!(model.generate(&[], &opts, |_, _| {}), Err(Error::EmptyInput(_))));
    // The tiny model's context is 160 tokens.
    let long = vec![5u32; 159];
    assert!(matches!(
        model.generate(&long, &opts, |_, _| {}),
        Err(Error::PromptTooLong { prompt_tokens: 159, max_new_tokens: 4, context: 160 })
    ));
    let mut s = Session::new(&model, 1, 4).unwrap();
    assert!(matches!(s.step(&[&[100_000]]), Err(Error::InvalidArgument(_))));
    assert!(matches!(s.step(&[&[1, 2, 3, 4, 5]]), Err(Error::PromptTooLong { .. })));
    assert!(matches!(LlamaModel::load(dev, dir.join("missing.gguf"), &LoadOptions::default()), Err(Error::Ferrocm(_))));
    let phi = TinyLlama { architecture: "phi2", ..Default::default() };
    std::fs::write(dir.join("phi.gguf"), phi.to_bytes()).unwrap();
    match LlamaModel::load(dev, dir.join("phi.gguf"), &LoadOptions::default()) {
        Err(Error::UnsupportedArchitecture { found, .. }) => assert_eq!(found, "phi2"),
        other => panic!("{other:?}"),
    }
    // A type with no loader (I32 projections) is refused, naming the tensor, before anything loads.
    let bad = TinyLlama { weight_type: GgmlType::I32, ..Default::default() }.to_bytes();
    std::fs::write(dir.join("i32.gguf"), &bad).unwrap();
    match LlamaModel::load(dev, dir.join("i32.gguf"), &LoadOptions::default()) {
        Err(Error::UnsupportedTensorType { tensor, ty, .. }) => assert_eq!((tensor.as_str(), ty.as_str()), ("blk.0.attn_q.weight", "I32")),
        other => panic!("{other:?}"),
    }
    // F16 weights load.
    let f16 = TinyLlama { weight_type: GgmlType::F16, ..Default::default() }.to_bytes();
    std::fs::write(dir.join("f16.gguf"), &f16).unwrap();
    assert!(LlamaModel::load(dev, dir.join("f16.gguf"), &LoadOptions::default()).is_ok());
    assert!(matches!(LlamaModel::load(dev, &path, &LoadOptions::default().dtype(DType::I32)), Err(Error::InvalidArgument(_))));
}

#[test]
fn a_decode_step_is_modeled_launch_by_launch_on_the_emulator() {
    // A device of its own: profiling samples every launch made on the device while it is on,
    // and the other tests share theirs.
    let dev = ferrocm::Device::emulator().unwrap();
    let dir = scratch("llama-modeled");
    let path = TinyLlama::default().write(&dir);
    let model = LlamaModel::load(&dev, &path, &LoadOptions::default()).unwrap();
    let step = model.model_decode_step(1, 8).unwrap();
    let stages: Vec<&str> = step.by_stage().iter().map(|s| s.stage).collect();
    eprintln!("modeled decode step of the tiny model:\n{}", step.table());
    for stage in ["embed", "qkv", "attention", "lm_head"] {
        assert!(stages.contains(&stage), "{stage} missing from {stages:?}");
    }
    // Quantized projections: the rotary embedding and the cache write run in the QKV
    // projection's epilogue, so a layer is 5 launches (qkv, attention, o_proj, gate_up, down).
    assert!(!stages.contains(&"rope_kv"), "a rope_kv launch in {stages:?}");
    let per_layer = ["qkv", "attention", "o_proj", "gate_up", "down"];
    for s in step.by_stage() {
        if per_layer.contains(&s.stage) {
            assert_eq!(s.launches, TinyLlama::default().layers, "{} launches", s.stage);
        }
    }
    // A tiny model's step is launch-bound: microseconds per launch, not more than a
    // millisecond each.
    assert!(step.launch_count() >= stages.len());
    for l in &step.launches {
        assert!(l.seconds > 0.0 && l.seconds < 1e-3, "{} modeled at {} s", l.kernel, l.seconds);
    }
    // Profiling is off again: a later step computes complete logits.
    let mut s = Session::new(&model, 1, 4).unwrap();
    let logits = s.step(&[&[3]]).unwrap();
    assert!(logits[0].iter().all(|v| v.is_finite()));
}
