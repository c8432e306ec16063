//! [`LlamaModel::generate`]: prefill the prompt, then sample and decode token by token.

use super::model::{LlamaModel, Session};
use crate::error::{Error, Result};
use crate::profile::ModeledStep;
use crate::sampling::{Sampler, SamplingParams};
use std::time::{Duration, Instant};

/// How [`LlamaModel::generate`] runs.
#[derive(Clone, Debug)]
pub struct GenerateOptions {
    /// Tokens to generate at most.
    pub max_new_tokens: usize,
    /// How each token is chosen.
    pub sampling: SamplingParams,
    /// Stop at the tokenizer's stop ids (EOS, end of turn).
    pub stop_at_eos: bool,
    /// After generating, model one more decode step at the final context length on the MI300X
    /// cycle model (emulator only; a sampled, profiled launch per kernel, so cheap).
    pub model_mi300x: bool,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions { max_new_tokens: 64, sampling: SamplingParams::greedy(), stop_at_eos: true, model_mi300x: false }
    }
}

/// Why generation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// A stop token (included in [`Generation::tokens`]).
    Stop(u32),
    /// [`GenerateOptions::max_new_tokens`] tokens were generated.
    MaxTokens,
}

/// Timings of a generation (wall clock of this machine's backend) and, when asked for, the
/// modeled MI300X time of a decode step.
#[derive(Clone, Debug)]
pub struct GenerateStats {
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// The prefill (one forward pass over the prompt, to the first token's logits).
    pub prefill: Duration,
    /// Decode steps run (tokens generated after the first).
    pub decode_steps: usize,
    /// Time in decode steps (forward and sampling).
    pub decode: Duration,
    /// Why it stopped.
    pub stop: StopReason,
    /// One modeled decode step at the final context length, batch 1.
    pub modeled: Option<ModeledStep>,
}

impl GenerateStats {
    /// Prompt tokens per second of prefill (0 when no prefill ran: `max_new_tokens` 0).
    pub fn prefill_tokens_per_s(&self) -> f64 {
        if self.prefill.is_zero() { 0.0 } else { self.prompt_tokens as f64 / self.prefill.as_secs_f64() }
    }

    /// Decoded tokens per second.
    pub fn decode_tokens_per_s(&self) -> f64 {
        if self.decode_steps == 0 { 0.0 } else { self.decode_steps as f64 / self.decode.as_secs_f64().max(1e-9) }
    }

    /// The summary line the CLI prints.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "prompt {} tokens in {:.2} s ({:.2} tokens/s); decode {} tokens in {:.2} s ({:.3} tokens/s, {:.2} s/token)",
            self.prompt_tokens,
            self.prefill.as_secs_f64(),
            self.prefill_tokens_per_s(),
            self.decode_steps,
            self.decode.as_secs_f64(),
            self.decode_tokens_per_s(),
            if self.decode_steps == 0 { 0.0 } else { self.decode.as_secs_f64() / self.decode_steps as f64 }
        );
        if let Some(m) = &self.modeled {
            s += &format!(
                "; modeled MI300X decode {:.1} us/token ({} launches, launch overhead not modeled)",
                m.seconds() * 1e6,
                m.launch_count()
            );
        }
        s
    }
}

/// What [`LlamaModel::generate`] produced.
#[derive(Clone, Debug)]
pub struct Generation {
    /// The prompt's ids.
    pub prompt_tokens: Vec<u32>,
    /// The generated ids (a stop token included when reached).
    pub tokens: Vec<u32>,
    /// The generated text (special tokens left out).
    pub text: String,
    /// Timings.
    pub stats: GenerateStats,
}

impl LlamaModel {
    /// Generates from `prompt` ([`LlamaModel::encode`] or [`LlamaModel::encode_chat`] make one):
    /// one prefill pass, then a token per decode step chosen by `opts.sampling`, until a stop
    /// token or `opts.max_new_tokens`. `on_token(id, text)` hears each token as it is chosen
    /// with the text it completes (empty while a character is split over tokens).
    ///
    /// # Errors
    /// [`Error::EmptyInput`] for an empty prompt; [`Error::PromptTooLong`] when the prompt and
    /// the new tokens do not fit the context; sampling, device and (with `model_mi300x`)
    /// modeling errors.
    pub fn generate(&self, prompt: &[u32], opts: &GenerateOptions, mut on_token: impl FnMut(u32, &str)) -> Result<Generation> {
        if prompt.is_empty() {
            return Err(Error::EmptyInput("the prompt has no tokens".into()));
        }
        let capacity = prompt.len() + opts.max_new_tokens;
        if capacity > self.max_context() {
            return Err(Error::PromptTooLong {
                prompt_tokens: prompt.len(),
                max_new_tokens: opts.max_new_tokens,
                context: self.max_context(),
            });
        }
        let mut sampler = Sampler::new(opts.sampling)?;
        let tok = self.tokenizer();
        let stop_ids: &[u32] = if opts.stop_at_eos { tok.stop_ids() } else { &[] };
        let mut stream = tok.stream(true);
        let mut tokens = Vec::new();
        let mut context = prompt.to_vec();
        let mut stats = GenerateStats {
            prompt_tokens: prompt.len(),
            prefill: Duration::ZERO,
            decode_steps: 0,
            decode: Duration::ZERO,
            stop: StopReason::MaxTokens,
            modeled: None,
        };
        if opts.max_new_tokens > 0 {
            let mut session = Session::new(self, 1, capacity)?;
            let started = Instant::now();
            let mut logits = session.step(&[prompt])?.pop().expect("one sequence");
            stats.prefill = started.elapsed();
            let decode_started = Instant::now();
            loop {
                let id = sampler.sample(&logits, &context)?;
                tokens.push(id);
                context.push(id);
                let piece = stream.push(id)?;
                on_token(id, &piece);
                if stop_ids.contains(&id) {
                    stats.stop = StopReason::Stop(id);
                    break;
                }
                if tokens.len() == opts.max_new_tokens {
                    break;
                }
                logits = session.step(&[&[id]])?.pop().expect("one sequence");
                stats.decode_steps += 1;
            }
            stats.decode = decode_started.elapsed();
        }
        if opts.model_mi300x {
            let ctx = (prompt.len() + tokens.len()).min(self.max_context() - 1);
            stats.modeled = Some(self.model_decode_step(1, ctx)?);
        }
        Ok(Generation { prompt_tokens: prompt.to_vec(), text: stream.text()?, tokens, stats })
    }
}
