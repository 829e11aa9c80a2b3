//! The configuration a response parser is built from: registry names and the request's
//! fields. A leaf: it names dialects, it does not resolve them (the facade,
//! [`crate::ResponseParser`], does; [`crate::ToolConstraint::for_config`] builds the
//! constraint of the same configuration; [`crate::models::config_for_model`] chooses it
//! from the model).

use crate::request::{ToolChoice, ToolSpec};
use crate::thinking::ThinkingFlags;

/// Everything a [`ResponseParser`](crate::ResponseParser) is built from: which parsers
/// (registry names or aliases), and the request's fields that change what they emit.
///
/// It names dialects and does not resolve them, so building one cannot fail and it can
/// be kept, cloned and sent anywhere; [`ResponseParser::new`](crate::ResponseParser::new)
/// resolves the names (an unknown one is [`Error::UnknownParser`](crate::Error::UnknownParser)),
/// [`ToolConstraint::for_config`](crate::ToolConstraint::for_config) builds the decoding
/// constraint of the same configuration, and [`config_for_model`](crate::config_for_model)
/// chooses the parsers from the model. Names are matched case-insensitively with `-`,
/// `_` and `.` ignored; an empty name is the same as `None`.
///
/// The default has no parser at all: every byte of the output is content.
///
/// ```
/// use replyparse::{ParserConfig, ResponseParser, ToolChoice, ToolSpec};
///
/// let config = ParserConfig {
///     tool_parser: Some("qwen3_coder".into()),
///     reasoning_parser: Some("qwen3".into()),
///     tools: Some(vec![ToolSpec { name: "get_weather".into(), parameters: None }]),
///     tool_choice: ToolChoice::Auto,
///     enable_thinking: Some(false),
///     ..Default::default()
/// };
/// let message = ResponseParser::new(&config)?.parse_complete("It is sunny.", None)?;
/// assert_eq!(message.content.as_deref(), Some("It is sunny."));
/// # Ok::<(), replyparse::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ParserConfig {
    /// The tool parser (`qwen`, `qwen3coder`, `deepseek_v31`, ...:
    /// [`registry::tool_parser_names`](crate::registry::tool_parser_names)); `None`: tool
    /// markup is content.
    pub tool_parser: Option<String>,
    /// The reasoning parser (`qwen3`, `deepseek_r1`, ...:
    /// [`registry::reasoning_parser_names`](crate::registry::reasoning_parser_names));
    /// `None`: reasoning tags are content. A name that is only a response parser's
    /// (`openai_gptoss`, as vLLM spells gpt-oss's reasoning parser) selects that response
    /// parser.
    pub reasoning_parser: Option<String>,
    /// A dedicated response parser (`gpt-oss`, alias `harmony`: OpenAI Harmony, whose
    /// channels carry reasoning and calls), or `default` / `None` for the composition of
    /// the two above. A dedicated parser refuses a tool or reasoning parser beside it
    /// rather than silently ignoring it.
    pub response_parser: Option<String>,
    /// The request's tools. A call to a name not among them is not emitted (it is
    /// recorded in [`rejected_calls`](crate::ResponseParser::rejected_calls)); with no
    /// tools, tool markup is not armed and stays content, so nothing the model wrote
    /// disappears.
    pub tools: Option<Vec<ToolSpec>>,
    /// The request's `tool_choice`: `none` disarms tool markup as no tools do; a named
    /// function allows calls of that function only. `required` and a named function
    /// also give a decoding constraint ([`ToolConstraint`](crate::ToolConstraint)).
    pub tool_choice: ToolChoice,
    /// The caller's thinking switch (an Anthropic request's `thinking`, a server's
    /// setting): when set, it decides whatever flag the reasoning dialect's template
    /// reads. Unset, the dialect reads `chat_template_kwargs` and `reasoning_effort`.
    pub enable_thinking: Option<bool>,
    /// The request's `chat_template_kwargs`, for the flag a reasoning dialect's template
    /// reads (`thinking`, `thinking_mode`, ...; see [`FlagRule`](crate::FlagRule)).
    pub chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
    /// The request's `reasoning_effort`, for templates that switch thinking by it.
    pub reasoning_effort: Option<String>,
    /// The checkpoint's tag suffix, for dialects whose tags carry one (see
    /// [`TagSuffix`](crate::TagSuffix): `:6124c78e` spells Hunyuan v4's `<think{suffix}>`
    /// as `<think:6124c78e>`). `None`: the unsuffixed tags. Dialects without suffixed
    /// tags ignore it. Read it from what the checkpoint ships with
    /// [`SuffixedTags`](crate::SuffixedTags) (its vocabulary or chat template);
    /// [`config_for_model`](crate::config_for_model) does from a chat template.
    pub tag_suffix: Option<String>,
    /// Token ids of the reasoning open and close tags, to count reasoning tokens.
    pub reasoning_tag_ids: Option<(u32, u32)>,
    /// Token ids of the dialects' marker tokens, `(text, id)`, from the model's
    /// tokenizer ([`ResponseParser::marker_texts`](crate::ResponseParser::marker_texts)
    /// lists the texts to look up). With them, every chunk fed with its token ids reads
    /// a marker only where its special token wrote it: the same text spelt with
    /// ordinary tokens (a model quoting `<tool_call>` in prose) is text. Empty: every
    /// spelling is the marker. Marker tags are searched this way outside tool blocks;
    /// inside a block its grammar reads what follows (a quoted tag inside a JSON string
    /// is part of the value either way). The `gpt-oss` parser knows its own ids. A
    /// framed dialect may declare its markers' ids: those count once a chunk's ids hold
    /// one of them, while these count from the first chunk and replace a declared id of
    /// the same marker.
    pub marker_token_ids: Vec<(String, u32)>,
    /// Limit on the bytes one response may hold back at once (`None`:
    /// [`DEFAULT_MAX_BUFFERED_BYTES`]). See [`crate::ResponseParser::buffered_bytes`].
    pub max_buffered_bytes: Option<usize>,
    /// Whole-call streaming: a tool call is sent once it is finished, its identity and
    /// its whole arguments in one fragment, and a call the output ended inside (cut) is
    /// never sent, so the stream gives exactly what
    /// [`parse_complete`](crate::ResponseParser::parse_complete) gives, for every
    /// input. `false` (the default) streams calls incrementally: their arguments go out
    /// as they are read, and a cut call's beginning stands, named at the end by
    /// [`cut_call`](crate::ResponseParser::cut_call). A whole call's arguments are held
    /// until it ends and count toward the buffer limit.
    pub whole_calls: bool,
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
