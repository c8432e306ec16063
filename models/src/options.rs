//! [`LoadOptions`]: how a model is put on a device.

use ferrocm::DType;
use std::sync::Arc;

/// Progress of a load: tensors done of all.
#[derive(Clone, Debug)]
pub struct LoadProgress {
    /// Tensors loaded so far.
    pub done: usize,
    /// Tensors in all.
    pub total: usize,
    /// The tensor (or group) just loaded.
    pub what: String,
}

type ProgressFn = Arc<dyn Fn(&LoadProgress) + Send + Sync>;

/// How a model is loaded.
///
/// ```
/// use ferrocm_models::LoadOptions;
/// let opts = LoadOptions::default().dtype(ferrocm::DType::F32).on_progress(|p| eprintln!("{}/{}", p.done, p.total));
/// assert_eq!(opts.dtype, ferrocm::DType::F32);
/// ```
#[derive(Clone)]
pub struct LoadOptions {
    /// The dtype weights and activations are held in on the device (f32, bf16 or f16). Scores,
    /// softmax and logits are f32 whatever this is.
    pub dtype: DType,
    /// Positions the RoPE tables cover (and so the longest context a session may have); the
    /// model's trained context when `None`.
    pub max_context: Option<usize>,
    /// Keep GGML block-quantized weights quantized on the device and multiply with
    /// `ferrocm::ops::qmatmul` (the default); `false` dequantizes them exactly on the host to
    /// [`LoadOptions::dtype`] and runs the dense GEMM (more memory, for comparison).
    pub quantized: bool,
    progress: Option<ProgressFn>,
}

impl std::fmt::Debug for LoadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("dtype", &self.dtype)
            .field("max_context", &self.max_context)
            .field("quantized", &self.quantized)
            .finish_non_exhaustive()
    }
}

impl Default for LoadOptions {
    fn default() -> LoadOptions {
        LoadOptions { dtype: DEFAULT_DTYPE, max_context: None, quantized: true, progress: None }
    }
}

/// The default device dtype: f16, which runs as fast as bf16 (the same MFMA rate, half the
/// bytes of f32) with 11 significant bits instead of 8: on the tiny test model the largest logit
/// error is 0.5% of the logits' RMS in f16 against 5% in bf16 (`models/tests/llama_tiny.rs`).
/// SmolLM2-135M-Instruct's greedy answer to the real-model test's chat prompt equals the f64 CPU
/// reference's in f16 and in bf16 (in bf16 only since attention's value product is f32: before,
/// it ran past the reference's end of turn). Values beyond f16's range (65504) overflow: pick
/// bf16 or f32 for models whose activations reach that.
pub const DEFAULT_DTYPE: DType = DType::F16;

impl LoadOptions {
    /// Sets [`LoadOptions::dtype`].
    pub fn dtype(mut self, dtype: DType) -> LoadOptions {
        self.dtype = dtype;
        self
    }

    /// Sets [`LoadOptions::max_context`].
    pub fn max_context(mut self, n: usize) -> LoadOptions {
        self.max_context = Some(n);
        self
    }

    /// Sets [`LoadOptions::quantized`].
    pub fn quantized(mut self, keep: bool) -> LoadOptions {
        self.quantized = keep;
        self
    }

    /// Calls `f` after each tensor (or fused group of tensors) is on the device.
    pub fn on_progress(mut self, f: impl Fn(&LoadProgress) + Send + Sync + 'static) -> LoadOptions {
        self.progress = Some(Arc::new(f));
        self
    }

    pub(crate) fn report(&self, done: usize, total: usize, what: &str) {
        if let Some(f) = &self.progress {
            f(&LoadProgress { done, total, what: what.to_string() });
        }
    }
}
