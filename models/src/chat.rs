//! Chat prompts: a model's Jinja chat template (`tokenizer.chat_template`) rendered with
//! `minijinja`, the way `transformers`' `apply_chat_template` renders it.
//!
//! ```
//! use ferrocm_models::chat::{ChatTemplate, Message};
//! let t = ChatTemplate::new(
//!     "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}\
//!      {% if add_generation_prompt %}<|assistant|>{% endif %}",
//! )?;
//! let text = t.render(&[Message::user("Hi")], true)?;
//! assert_eq!(text, "<|user|>Hi\n<|assistant|>");
//! # Ok::<(), ferrocm_models::Error>(())
//! ```

use crate::error::{Error, Result};
use serde::Serialize;

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Message {
        Message { role: "user".into(), content: content.into() }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Message {
        Message { role: "system".into(), content: content.into() }
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Message {
        Message { role: "assistant".into(), content: content.into() }
    }
}

/// A compiled chat template.
///
/// Get one with [`ChatTemplate::new`]; a loaded model has its file's template as
/// [`LlamaModel::chat_template`](crate::llama::LlamaModel::chat_template).
pub struct ChatTemplate {
    env: minijinja::Environment<'static>,
    bos: String,
    eos: String,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate").finish_non_exhaustive()
    }
}

impl ChatTemplate {
    /// Compiles `source` (Python-style string methods such as `.strip()` work, and
    /// `raise_exception(msg)` fails the render with `msg`, as in `transformers`).
    ///
    /// # Errors
    /// [`Error::Template`] for a template that does not parse.
    pub fn new(source: &str) -> Result<ChatTemplate> {
        ChatTemplate::with_tokens(source, "", "")
    }

    /// As [`ChatTemplate::new`], with the `bos_token` and `eos_token` strings the template may use.
    ///
    /// # Errors
    /// As [`ChatTemplate::new`].
    pub fn with_tokens(source: &str, bos: &str, eos: &str) -> Result<ChatTemplate> {
        let mut env = minijinja::Environment::new();
        // Templates written for Python's jinja2 keep trailing newlines and call str methods.
        env.set_keep_trailing_newline(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |msg: String| -> std::result::Result<String, minijinja::Error> {
            Err(minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, msg))
        });
        env.add_template_owned("chat", source.to_string()).map_err(|e| Error::Template(e.to_string()))?;
        Ok(ChatTemplate { env, bos: bos.into(), eos: eos.into() })
    }

    /// The prompt text of `messages`, ending with the assistant's turn opened when
    /// `add_generation_prompt`.
    ///
    /// # Errors
    /// [`Error::EmptyInput`] for no messages; [`Error::Template`] when rendering fails.
    pub fn render(&self, messages: &[Message], add_generation_prompt: bool) -> Result<String> {
        if messages.is_empty() {
            return Err(Error::EmptyInput("a chat needs at least one message".into()));
        }
        let t = self.env.get_template("chat").map_err(|e| Error::Template(e.to_string()))?;
        t.render(minijinja::context! {
            messages => messages,
            add_generation_prompt => add_generation_prompt,
            bos_token => &self.bos,
            eos_token => &self.eos,
        })
        .map_err(|e| Error::Template(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SmolLM2-135M-Instruct's template, as its GGUF file stores it.
    const SMOLLM2: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    #[test]
    fn smollm2_template_renders_chatml_with_its_default_system_prompt() {
        let t = ChatTemplate::new(SMOLLM2).unwrap();
        let text = t.render(&[Message::user("What is 2+2?")], true).unwrap();
        assert_eq!(
            text,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n\
             <|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
        );
        let own = t.render(&[Message::system("Be brief."), Message::user("Hi")], false).unwrap();
        assert_eq!(own, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
    }

    #[test]
    fn python_string_methods_and_raise_exception_work() {
        let t =
            ChatTemplate::new("{{ messages[0].content.strip() }}{% if messages|length > 1 %}{{ raise_exception('one only') }}{% endif %}")
                .unwrap();
        assert_eq!(t.render(&[Message::user("  x  ")], false).unwrap(), "x");
        let err = t.render(&[Message::user("a"), Message::user("b")], false).unwrap_err();
        assert!(err.to_string().contains("one only"), "{err}");
        assert!(matches!(t.render(&[], true), Err(Error::EmptyInput(_))));
        assert!(matches!(ChatTemplate::new("{% for %}"), Err(Error::Template(_))));
    }
}
