//! The configuration a response parser is built from: registry names and the request's
//! fields. A leaf: it names dialects, it does not resolve them (the facade,
//! [`crate::ResponseParser`], does; [`crate::ToolConstraint::for_config`] builds the
//! constraint of the same configuration; [`crate::models::config_for_model`] chooses it
//! from the model).

use crate::request::{ToolChoice, ToolSpec};
use crate::thinking::ThinkingFlags;

/// Everything a response parser is built from. Names are registry names or aliases.
#[derive(Debug, Clone, Default)]
pub struct ParserConfig {
    pub tool_parser: Option<String>,
    pub reasoning_parser: Option<String>,
    pub response_parser: Option<String>,
    pub tools: Option<Vec<ToolSpec>>,
    pub tool_choice: ToolChoice,
    /// The caller's thinking switch (an Anthropic request's `thinking`, a server's
    /// setting): when set, it decides whatever flag the reasoning dialect's template
    /// reads. Unset, the dialect reads `chat_template_kwargs` and `reasoning_effort`.
    pub enable_thinking: Option<bool>,
    /// The request's `chat_template_kwargs`, for the flag a reasoning dialect's template
    /// reads (`thinking`, `thinking_mode`, ...; see [`crate::thinking`]).
    pub chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
    /// The request's `reasoning_effort`, for templates that switch thinking by it.
    pub reasoning_effort: Option<String>,
    /// Token ids of the reasoning open and close tags, to count reasoning tokens.
    pub reasoning_tag_ids: Option<(u32, u32)>,
    /// Limit on the bytes one response may hold back at once (`None`:
    /// [`DEFAULT_MAX_BUFFERED_BYTES`]). See [`crate::ResponseParser::buffered_bytes`].
    pub max_buffered_bytes: Option<usize>,
}

impl ParserConfig {
    /// The request's thinking flags, borrowed.
    pub fn thinking_flags(&self) -> ThinkingFlags<'_> {
        ThinkingFlags {
            enable_thinking: self.enable_thinking,
            chat_template_kwargs: self.chat_template_kwargs.as_ref(),
            reasoning_effort: self.reasoning_effort.as_deref(),
        }
    }
}

/// The default buffer limit. Text streams as it arrives; what is held is a tag prefix, a
/// name or key, arguments written before their function name, or a typed XML value until
/// its close tag. 64 MiB of that is far beyond any real response, and well below what
/// would hurt a server holding many responses.
pub const DEFAULT_MAX_BUFFERED_BYTES: usize = 64 * 1024 * 1024;
