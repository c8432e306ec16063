//! Choosing the next token from logits: greedy, or temperature sampling with top-k, top-p
//! (nucleus) and a repetition penalty, from a seeded generator (the same seed and settings give
//! the same tokens).
//!
//! ```
//! use ferrocm_models::sampling::{Sampler, SamplingParams};
//! let mut greedy = Sampler::new(SamplingParams::greedy())?;
//! assert_eq!(greedy.sample(&[0.1, 2.0, -1.0], &[])?, 1);
//! let params = SamplingParams { temperature: 0.8, top_k: 40, top_p: 0.95, seed: 7, ..Default::default() };
//! let mut s = Sampler::new(params)?;
//! let id = s.sample(&[0.1, 2.0, -1.0], &[])?;
//! assert!(id < 3);
//! # Ok::<(), ferrocm_models::Error>(())
//! ```

use crate::error::{Error, Result};
use rand::{RngExt, SeedableRng};

/// How tokens are chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplingParams {
    /// 0 is greedy (argmax, lowest id on ties); above 0 divides the logits before the softmax.
    pub temperature: f32,
    /// Keep only the `top_k` most likely tokens (0: all).
    pub top_k: usize,
    /// Keep the smallest set of most likely tokens whose probabilities sum to at least `top_p`
    /// (1: all).
    pub top_p: f32,
    /// Logits of tokens already in the context are divided by this when positive and
    /// multiplied when negative (CTRL's rule, as llama.cpp and `transformers` apply it);
    /// 1 disables it.
    pub repetition_penalty: f32,
    /// How many of the latest context tokens the penalty looks at (0: all).
    pub repetition_window: usize,
    /// Seed of the generator.
    pub seed: u64,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams { temperature: 0.0, top_k: 0, top_p: 1.0, repetition_penalty: 1.0, repetition_window: 64, seed: 0 }
    }
}

impl SamplingParams {
    /// Greedy decoding, no penalty.
    pub fn greedy() -> SamplingParams {
        SamplingParams::default()
    }

    /// Checks the ranges.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a negative or non-finite temperature, `top_p` outside
    /// `(0, 1]`, a penalty that is not positive and finite.
    pub fn validate(&self) -> Result<()> {
        if !(self.temperature >= 0.0 && self.temperature.is_finite()) {
            return Err(Error::InvalidArgument(format!("temperature {} (must be finite and >= 0)", self.temperature)));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(Error::InvalidArgument(format!("top-p {} (must be in (0, 1])", self.top_p)));
        }
        if !(self.repetition_penalty > 0.0 && self.repetition_penalty.is_finite()) {
            return Err(Error::InvalidArgument(format!("repetition penalty {} (must be finite and > 0)", self.repetition_penalty)));
        }
        Ok(())
    }
}

/// A token chooser with its generator state.
///
/// Get one with [`Sampler::new`].
#[derive(Debug)]
pub struct Sampler {
    params: SamplingParams,
    rng: rand::rngs::StdRng,
}

impl Sampler {
    /// A sampler for `params`, its generator seeded with `params.seed`.
    ///
    /// # Errors
    /// As [`SamplingParams::validate`].
    pub fn new(params: SamplingParams) -> Result<Sampler> {
        params.validate()?;
        Ok(Sampler { params, rng: rand::rngs::StdRng::seed_from_u64(params.seed) })
    }

    /// The settings.
    pub fn params(&self) -> &SamplingParams {
        &self.params
    }

    /// The next token from `logits` (one per vocabulary entry), `context` being the tokens so
    /// far (for the repetition penalty).
    ///
    /// # Errors
    /// [`Error::EmptyInput`] for no logits; [`Error::InvalidArgument`] when every logit is NaN.
    pub fn sample(&mut self, logits: &[f32], context: &[u32]) -> Result<u32> {
        if logits.is_empty() {
            return Err(Error::EmptyInput("no logits to sample from".into()));
        }
        let p = self.params;
        let mut l = logits.to_vec();
        if p.repetition_penalty != 1.0 {
            let window = if p.repetition_window == 0 { context.len() } else { p.repetition_window.min(context.len()) };
            let mut seen = std::collections::HashSet::new();
            for &t in &context[context.len() - window..] {
                if let Some(v) = l.get_mut(t as usize) {
                    if seen.insert(t) {
                        *v = if *v > 0.0 { *v / p.repetition_penalty } else { *v * p.repetition_penalty };
                    }
                }
            }
        }
        if p.temperature == 0.0 {
            return argmax(&l).ok_or_else(|| Error::InvalidArgument("every logit is NaN".into()));
        }
        // Candidates by descending logit (ties: lower id first, so runs are reproducible).
        let mut idx: Vec<u32> = (0..l.len() as u32).filter(|&i| !l[i as usize].is_nan()).collect();
        if idx.is_empty() {
            return Err(Error::InvalidArgument("every logit is NaN".into()));
        }
        idx.sort_by(|&a, &b| l[b as usize].total_cmp(&l[a as usize]).then(a.cmp(&b)));
        if p.top_k > 0 {
            idx.truncate(p.top_k);
        }
        let max = l[idx[0] as usize] as f64;
        let t = p.temperature as f64;
        let mut probs: Vec<f64> = idx.iter().map(|&i| ((l[i as usize] as f64 - max) / t).exp()).collect();
        let total: f64 = probs.iter().sum();
        probs.iter_mut().for_each(|x| *x /= total);
        if p.top_p < 1.0 {
            let mut acc = 0.0;
            let mut keep = probs.len();
            for (i, &x) in probs.iter().enumerate() {
                acc += x;
                if acc >= p.top_p as f64 {
                    keep = i + 1;
                    break;
                }
            }
            probs.truncate(keep);
            idx.truncate(keep);
        }
        let total: f64 = probs.iter().sum();
        let mut r = self.rng.random::<f64>() * total;
        for (&i, &x) in idx.iter().zip(&probs) {
            if r < x {
                return Ok(i);
            }
            r -= x;
        }
        Ok(*idx.last().expect("at least one candidate"))
    }
}

/// The index of the largest value (the first on ties; NaN never wins), `None` if all are NaN.
pub fn argmax(x: &[f32]) -> Option<u32> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &v) in x.iter().enumerate() {
        if v.is_nan() {
            continue;
        }
        if best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_first_maximum_and_skips_nan() {
        let mut s = Sampler::new(SamplingParams::greedy()).unwrap();
        assert_eq!(s.sample(&[1.0, 3.0, 3.0, -2.0], &[]).unwrap(), 1);
        assert_eq!(s.sample(&[f32::NAN, 0.5, 0.25], &[]).unwrap(), 1);
        assert!(s.sample(&[f32::NAN], &[]).is_err());
        assert!(s.sample(&[], &[]).is_err());
    }

    #[test]
    fn the_repetition_penalty_demotes_seen_tokens() {
        let p = SamplingParams { repetition_penalty: 2.0, ..SamplingParams::greedy() };
        let mut s = Sampler::new(p).unwrap();
        // Token 0 (3.0 -> 1.5) falls below token 1 (2.0); a negative logit is pushed further down.
        assert_eq!(s.sample(&[3.0, 2.0, -0.1], &[0]).unwrap(), 1);
        assert_eq!(s.sample(&[-1.0, -1.5, -3.0], &[0]).unwrap(), 1);
    }

    #[test]
    fn top_k_one_and_tiny_top_p_are_greedy() {
        let logits: Vec<f32> = (0..100).map(|i| ((i * 37) % 100) as f32 / 10.0).collect();
        let best = argmax(&logits).unwrap();
        for p in [
            SamplingParams { temperature: 1.5, top_k: 1, seed: 3, ..Default::default() },
            SamplingParams { temperature: 1.5, top_p: 1e-6, seed: 4, ..Default::default() },
        ] {
            let mut s = Sampler::new(p).unwrap();
            for _ in 0..20 {
                assert_eq!(s.sample(&logits, &[]).unwrap(), best);
            }
        }
    }

    #[test]
    fn sampling_follows_the_distribution_and_the_seed() {
        // Two tokens at logit difference ln 3: probabilities 3/4 and 1/4 at temperature 1.
        let logits = [0.0f32, 3f32.ln()];
        let p = SamplingParams { temperature: 1.0, seed: 42, ..Default::default() };
        let draw = |n| {
            let mut s = Sampler::new(p).unwrap();
            (0..n).map(|_| s.sample(&logits, &[]).unwrap()).collect::<Vec<_>>()
        };
        let a = draw(4000);
        assert_eq!(a, draw(4000), "the same seed gives the same tokens");
        let ones = a.iter().filter(|&&t| t == 1).count() as f64 / 4000.0;
        // 4000 draws: standard deviation sqrt(0.75 * 0.25 / 4000) = 0.0068; 5 sigma.
        assert!((ones - 0.75).abs() < 0.035, "{ones}");
    }

    #[test]
    fn bad_parameters_are_refused() {
        for p in [
            SamplingParams { temperature: -1.0, ..Default::default() },
            SamplingParams { temperature: f32::NAN, ..Default::default() },
            SamplingParams { top_p: 0.0, ..Default::default() },
            SamplingParams { top_p: 1.5, ..Default::default() },
            SamplingParams { repetition_penalty: 0.0, ..Default::default() },
        ] {
            assert!(matches!(Sampler::new(p), Err(Error::InvalidArgument(_))), "{p:?}");
        }
    }
}
