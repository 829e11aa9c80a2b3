//! Dialect declarations: the data a tool, reasoning or response parser is built from
//! (tags, the payload syntax, start rules), and the checks a declaration must pass.
//! [`crate::registry`] holds the registered ones by name.

mod former;
pub(crate) mod framed;
mod suffix;
mod validate;

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grammars::{grammar_for, PayloadGrammar};
pub use crate::grammars::{Family, FormDecl, Markers, Syntax};
use crate::scan::special::SpecialTokens;
use crate::thinking::{FlagRule, ThinkingFlags};
use crate::toolset::Schemas;
#[cfg(feature = "internals")]
pub use former::upgrade_tool_dialect_json;
pub use framed::{
    BodyBlock, CallName, CallPayload, ForcedCall, ForcedReasoning, FrameMarker, FrameRoute,
    FramedSyntax, MarkerRole, RouteTo,
};
pub use suffix::{SuffixedTags, TagSuffix, SUFFIX_MAX, SUFFIX_PLACEHOLDER};
pub(crate) use validate::{
    validate_reasoning_dialect, validate_response_dialect, validate_tool_dialect,
};

/// A tool-call dialect: how one family of models writes tool calls, as data. The outer
/// tags of a tool block, the payload's [`Syntax`] (which grammar family reads it, and
/// that family's fields), and a few rules about the text around blocks.
///
/// A dialect is a declaration, not code: the built-ins are declared in the crate's
/// `dialects.json`, and a new dialect of an existing family is one more declaration,
/// read from JSON ([`from_json`](Self::from_json), the shape the built-ins use) or built
/// as a Rust value ([`new`](Self::new) and the fields below), then registered with
/// [`registry::register_tool_dialect`](crate::registry::register_tool_dialect), which
/// checks it. A parser built afterwards can name it; parsers already built keep the
/// dialects they resolved.
///
/// What registration checks beyond the types: the name and the open tag are non-empty
/// (only a bare pythonic-lines dialect has no open tag); a tag given is never empty
/// (`None` is how a block says it ends with its payload); the syntax, and each form's,
/// passes its family's checks; each markup rule is well formed; each token-boundary
/// prefix is a proper prefix of its tag. A declaration that fails is
/// [`Error::InvalidDialect`](crate::Error::InvalidDialect) naming the field's path
/// (`syntax.value_close`); so is a JSON declaration with an unknown or mistyped field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolDialect {
    /// The registry name (`qwen3coder`); matched case-insensitively with `-`, `_` and
    /// `.` ignored.
    pub name: String,
    /// Other names of the same dialect (peers' names: `qwen3_xml`).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The payload syntax: its grammar family and that family's fields
    /// (`{"family": "xml", ...}`); absent, a JSON envelope with its default keys.
    #[serde(default)]
    pub syntax: Syntax,
    /// Outer open tag.
    pub open: String,
    /// Outer close tag; `None` when the block ends with the payload (llama3).
    #[serde(default)]
    pub close: Option<String>,
    /// Other spellings of the open tag that also open a block (Kimi's singular
    /// `<|tool_call_section_begin|>`, DSML without its leading newlines).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_aliases: Vec<String>,
    /// Other spellings of the close tag that also close a block.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub close_aliases: Vec<String>,
    /// Token-boundary proper prefixes of the open tag (the seed's tuples), longest first.
    #[serde(default)]
    pub open_prefixes: Vec<String>,
    /// Token-boundary proper prefixes of the close tag, longest first.
    #[serde(default)]
    pub close_prefixes: Vec<String>,
    /// Tokenizer specs the prefix lists were measured with (`replyparse prefixes`); the
    /// test suite re-measures them.
    #[serde(default)]
    pub verified_with: Vec<String>,
    /// More kinds of block, each with its own open and close tag: xLAM writes its array
    /// bare, after `[TOOL_CALLS]`, inside `<tool_call>...</tool_call>` or in a fenced
    /// block; Llama 4 after `<|python_tag|>` or inside `<|python_start|>...<|python_end|>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<BlockTags>,
    /// A block opened by `open` (or its aliases) is a call only if it emits one;
    /// otherwise it is given back as content: for an open tag that is an ordinary word
    /// (Phi-4-mini's `functools`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tentative: bool,
    /// The payload may also stand with no marker at the start of the content (after
    /// whitespace, at the start of the output or right after reasoning): xLAM's bare
    /// array, Llama 3's bare JSON. Such a payload is a call only if it emits one (its
    /// first call names a request tool); otherwise it is content, as written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bare_start: bool,
    /// Tags that wrap content as protocol, not content (ERNIE `<response>`, Cohere
    /// `<|START_RESPONSE|>`, Hunyuan `<answer>`): dropped; an open wrapper while reasoning
    /// ends the reasoning.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content_wrappers: Vec<WrapperTags>,
    /// Markup removed from content and reasoning, the text between kept (Cohere's
    /// citation tags `<co: 0>...</co: 0>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_markup: Vec<DropMarkup>,
    /// Other payload forms of this name, told apart at the payload's first bytes
    /// (Mistral's array form beside its header form): a payload that starts with a
    /// form's `when` is parsed by that form's family, anything else by the dialect's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forms: Vec<FormDecl>,
    /// The whitespace the model's chat template writes around tool blocks in the
    /// content (see [`ToolSeparators`]): protocol, not content.
    #[serde(default, skip_serializing_if = "ToolSeparators::is_empty")]
    pub separators: ToolSeparators,
    /// The pieces of the markers that are single special (or added) tokens; absent:
    /// every `<|...|>` piece. Engines that keep special tokens in the text may decode a
    /// marker with one space at each boundary next to such a piece, so those spellings
    /// open and close blocks too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub special_tokens: Option<Vec<String>>,
    /// A block the model writes without its open tag (see [`UnopenedBlock`]):
    /// Qwen3-Coder's `<function=NAME>...</function>` closed by an orphan `</tool_call>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unopened_block: Option<UnopenedBlock>,
    /// The tags carry a per-checkpoint suffix (see [`TagSuffix`]): `{suffix}` in a tag
    /// ([`SUFFIX_PLACEHOLDER`]) is where it goes (`<tool_calls{suffix}>`). A parser
    /// spells the tags for the suffix its configuration gives
    /// ([`ParserConfig::tag_suffix`](crate::ParserConfig::tag_suffix)); none, the
    /// placeholder is left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_suffix: Option<TagSuffix>,
}

impl ToolDialect {
    /// A dialect named `name` whose blocks open with `open`, close with `close` (`None`:
    /// a block ends with its payload) and hold payloads of `syntax`; every other field
    /// is at its default (no aliases, no other kinds of block, nothing dropped).
    ///
    /// ```
    /// use replyparse::{EnvelopeSyntax, Syntax, ToolDialect};
    ///
    /// let d = ToolDialect::new(
    ///     "acme",
    ///     "<call>",
    ///     Some("</call>"),
    ///     Syntax::JsonEnvelope(EnvelopeSyntax {
    ///         argument_field: "parameters".into(),
    ///         ..EnvelopeSyntax::default()
    ///     }),
    /// );
    /// assert_eq!(d.family(), replyparse::Family::JsonEnvelope);
    /// ```
    pub fn new(
        name: impl Into<String>,
        open: impl Into<String>,
        close: Option<&str>,
        syntax: Syntax,
    ) -> Self {
        ToolDialect {
            name: name.into(),
            aliases: Vec::new(),
            syntax,
            open: open.into(),
            close: close.map(str::to_owned),
            open_aliases: Vec::new(),
            close_aliases: Vec::new(),
            open_prefixes: Vec::new(),
            close_prefixes: Vec::new(),
            verified_with: Vec::new(),
            blocks: Vec::new(),
            tentative: false,
            bare_start: false,
            content_wrappers: Vec::new(),
            drop_markup: Vec::new(),
            forms: Vec::new(),
            separators: ToolSeparators::default(),
            special_tokens: None,
            unopened_block: None,
            tag_suffix: None,
        }
    }

    /// Every tag that opens a block: the open tag, then its aliases.
    pub fn open_tags(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.open.as_str()).chain(self.open_aliases.iter().map(String::as_str))
    }

    /// Every tag that closes a block (none when the block ends with its payload).
    pub fn close_tags(&self) -> impl Iterator<Item = &str> {
        self.close
            .as_deref()
            .into_iter()
            .chain(self.close_aliases.iter().map(String::as_str))
    }

    /// The dialect's payload family.
    pub fn family(&self) -> Family {
        self.syntax.family()
    }

    /// What the dialect's grammars need of its tags.
    pub(crate) fn markers(&self) -> Markers<'_> {
        Markers {
            open: &self.open,
            open_aliases: &self.open_aliases,
            close: self.close.as_deref(),
            close_aliases: &self.close_aliases,
            special: self.special(),
        }
    }

    /// The grammar of the dialect's syntax (and of its other forms, if any), for a
    /// request whose parameter schemas are `schemas`.
    pub(crate) fn grammar(&self, schemas: Schemas) -> Box<dyn PayloadGrammar> {
        grammar_for(&self.syntax, &self.forms, &self.markers(), schemas)
    }

    /// Which pieces of this dialect's markers are special tokens.
    pub(crate) fn special(&self) -> SpecialTokens<'_> {
        match &self.special_tokens {
            Some(list) => SpecialTokens::Listed(list),
            None => SpecialTokens::Markers,
        }
    }

    /// The kinds of block: the first is `open` (and its aliases) closed by `close` (and
    /// its aliases); each of [`blocks`](Self::blocks) is another, with its own tags.
    pub(crate) fn block_kinds(&self) -> Vec<BlockKind<'_>> {
        let mut kinds = vec![BlockKind {
            opens: self.open_tags().collect(),
            closes: self.close_tags().collect(),
            tentative: self.tentative,
        }];
        kinds.extend(self.blocks.iter().map(|b| BlockKind {
            opens: vec![b.open.as_str()],
            closes: b.close.as_deref().into_iter().collect(),
            tentative: b.tentative,
        }));
        kinds
    }

    /// Every spelling of `tags` (declared first, then as engines may decode them).
    pub(crate) fn spellings_of<'a>(
        &'a self,
        tags: impl Iterator<Item = &'a str>,
    ) -> Vec<Cow<'a, str>> {
        self.special().spellings_of(tags)
    }
}

/// A block written without its open tag ([`ToolDialect::unopened_block`]): some models
/// skip the open tag and write the payload straight into the content, closed by the
/// block's close tag (Qwen3-Coder: `<function=f>...</function>\n</tool_call>`).
///
/// Armed in plain text only, and only when the request arms tool calls. From
/// `payload_open` on, the text is held until `payload_close`, optional whitespace (at
/// most 64 bytes) and `close` follow, within the first [`UNOPENED_MAX`] bytes (and the
/// parser's buffer limit); the held text is then read as one block of the dialect. It
/// is a call only if every call in it names a request tool and nothing else is in it;
/// otherwise, or if the bound passes first, or another block's open tag comes first,
/// the held text is content, exactly as written. If the output ends while holding,
/// the calls read so far are cut (left out of the complete parse, recorded with reason
/// `cut`) when the held text is a well-formed beginning of calls of request tools, and
/// content otherwise. Such calls are sent whole once read, never argument by argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnopenedBlock {
    /// What the payload begins with: the grammar's payload marker (`<function=`).
    pub payload_open: String,
    /// What ends the payload's last call (`</function>`).
    pub payload_close: String,
    /// The block's close tag that closes it (`</tool_call>`): one of the dialect's close
    /// tags.
    pub close: String,
}

/// Longest text held for an [`UnopenedBlock`], in bytes: 64 KiB.
pub const UNOPENED_MAX: usize = 64 * 1024;

/// The tags of one more kind of block ([`ToolDialect::blocks`]): a dialect whose
/// models write the same payload behind different markers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlockTags {
    /// The tag that opens this kind of block.
    pub open: String,
    /// `None`: the block ends with its payload.
    #[serde(default)]
    pub close: Option<String>,
    /// The block is a call only if it emits one; otherwise all of it, tags included,
    /// is given back as content (xLAM's fenced block: prose has code fences too).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tentative: bool,
}

/// The separators a tool dialect's chat template writes around its blocks in the
/// content ([`ToolDialect::separators`]), each position as the exact strings it may be:
/// where several match, the longest is the separator. They are protocol, so they are
/// not content; any other whitespace is content as written.
///
/// A run of blocks is blocks with nothing between them but a `between_blocks`
/// separator. Before the run, the `before_blocks` separator right before its first open
/// tag goes (`Let me check.\n<tool_call>`: content `Let me check.`); between two
/// blocks, a `between_blocks` separator the next open tag follows at once goes;
/// otherwise the run has ended and an `after_blocks` separator right after the last
/// block's close goes, whatever follows it. Blocks inside reasoning keep the rule of
/// `between_blocks` when it is left out.
///
/// Each separator is non-empty whitespace of at most [`SEPARATOR_MAX`] bytes: a
/// streaming parser holds at most one separator (with a tag) before it can decide.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSeparators {
    /// Right before the open tag of a block that text (or the start of the content)
    /// precedes (Qwen3.5's `\n\n`, Qwen2.5's `\n`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before_blocks: Vec<String>,
    /// Between a block's close and the next block's open tag. Left out: a run of at
    /// most 64 newlines the next open tag follows is dropped, and otherwise is text (the
    /// rule of dialects that declare no separators).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between_blocks: Option<Vec<String>>,
    /// Right after the close of a block that no other block follows (Nemotron 3's and
    /// Laguna's `\n` after `</tool_call>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after_blocks: Vec<String>,
}

impl ToolSeparators {
    /// Nothing declared.
    pub fn is_empty(&self) -> bool {
        self.before_blocks.is_empty()
            && self.between_blocks.is_none()
            && self.after_blocks.is_empty()
    }
}

/// The separators a reasoning dialect's chat template writes around the reasoning tags
/// ([`ReasoningDialect::separators`]), each position as the exact strings it may be:
/// where several match, the longest is the separator. They are protocol, so they are
/// neither reasoning nor content; any other whitespace is text as written.
///
/// Each separator is non-empty whitespace of at most [`SEPARATOR_MAX`] bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReasoningSeparators {
    /// At the very start of a response that starts outside reasoning: what the
    /// template writes after a generation prompt that ends with the reasoning closed or
    /// not opened (GLM-4.5's `\n` before `<think>` or before the answer; Laguna's `\n`
    /// after the prompt's `</think>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub response_start: Vec<String>,
    /// Right after the open tag, or at the start of a response that starts inside
    /// reasoning (Qwen3's `\n` after `<think>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after_open: Vec<String>,
    /// Right before the close tag (Qwen3's `\n` before `</think>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before_close: Vec<String>,
    /// Right after the close tag (Qwen3's `\n\n` after `</think>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after_close: Vec<String>,
}

impl ReasoningSeparators {
    /// Nothing declared.
    pub fn is_empty(&self) -> bool {
        self.response_start.is_empty()
            && self.after_open.is_empty()
            && self.before_close.is_empty()
            && self.after_close.is_empty()
    }
}

/// Longest separator a dialect may declare, in bytes.
pub const SEPARATOR_MAX: usize = 16;

/// One kind of block, as the tool and response parsers arm it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockKind<'a> {
    /// The tags that open it.
    pub opens: Vec<&'a str>,
    /// The tags that close it (none: the block ends with its payload).
    pub closes: Vec<&'a str>,
    /// See [`BlockTags::tentative`].
    pub tentative: bool,
}

/// A content wrapper's tags ([`ToolDialect::content_wrappers`]): protocol markup
/// around the answer that is not part of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WrapperTags {
    /// The tag that opens the wrapped content (`<response>`).
    pub open: String,
    /// The tag that closes it (`</response>`).
    pub close: String,
}

/// Markup dropped from the text ([`ToolDialect::drop_markup`]): a fixed `tag`, or a
/// `prefix` up to and including the first `end` within 128 bytes (a citation's
/// `</co: 0:[1,2]>`); longer, it is text.
///
/// Either `tag` is set and nothing else, or `prefix` and `end` are (registration checks
/// it; none of them may be empty). The bound keeps the rule from holding back text without limit: a prefix
/// that does not end soon was not markup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DropMarkup {
    /// A fixed piece of markup dropped wherever it occurs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// The start of markup whose rest varies (`<co: `), dropped through `end`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// What ends a `prefix` rule's markup (`>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
}

/// Longest markup a [`DropMarkup`] prefix rule drops.
pub const DROP_MARKUP_MAX: usize = 128;

/// When a response starts inside reasoning: the rule of a
/// [`ReasoningDialect::starts_in_reasoning`], which follows what the model's chat
/// template writes at the end of the prompt for each value of the thinking switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StartMode {
    /// In reasoning unless thinking is switched off (Qwen3, R1 style templates that
    /// open `<think>` in the prompt).
    #[default]
    UnlessDisabled,
    /// In reasoning only when thinking is switched on (DeepSeek V3.x).
    WhenEnabled,
    /// Always starts in plain text; reasoning begins at an explicit open tag.
    Never,
    /// Always starts in reasoning, whatever the flags say (templates that always open
    /// the reasoning in the prompt: Qwen3 Thinking-2507, Step-3, MiniMax M2).
    Always,
}

/// What a tool call the model writes inside its reasoning is: the rule of a
/// [`ReasoningDialect::calls_in_reasoning`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallsInReasoning {
    /// A call, as outside reasoning (the tool open tags are armed in reasoning).
    #[default]
    Call,
    /// A draft: reasoning text, kept verbatim (the tool open tags are not armed in
    /// reasoning). Only for models whose template or recorded outputs show them
    /// drafting a call in reasoning and writing the real one after it (Magistral,
    /// Ministral 3 reasoning).
    Draft,
}

impl CallsInReasoning {
    fn is_call(&self) -> bool {
        *self == CallsInReasoning::Call
    }
}

/// A reasoning dialect: the tags around a model's reasoning and where a response
/// starts. It is a description, not a parser: the response parser does all buffering
/// and routing, so every reasoning dialect gets the same guarantees (any chunking, tags
/// split anywhere, tool calls inside reasoning).
///
/// Declared like a [`ToolDialect`]: from JSON ([`from_json`](Self::from_json)) or as a
/// value ([`new`](Self::new)), then registered with
/// [`registry::register_reasoning_dialect`](crate::registry::register_reasoning_dialect),
/// which checks that the name and tags are non-empty, the markup rules well formed and
/// every flag rule's key non-empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReasoningDialect {
    /// The registry name (`qwen3`), matched as tool dialect names are.
    pub name: String,
    /// Other names of the same dialect.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The tag that opens reasoning (`<think>`). A response that starts inside
    /// reasoning may still write it first: a leading open tag is dropped.
    pub open: String,
    /// The tag that ends reasoning (`</think>`); what follows is content.
    pub close: String,
    /// When a response starts inside reasoning (`unless_disabled` when left out).
    #[serde(default)]
    pub starts_in_reasoning: StartMode,
    /// Other spellings of the open tag (Granite's "Here is my thought process:" beside
    /// "Here's ...", Gemma 4's channel with and without its `thought` label).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_aliases: Vec<String>,
    /// Other spellings of the close tag.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub close_aliases: Vec<String>,
    /// Text the model may write first, in place of the open tag, when reasoning began
    /// implicitly: dropped like a leading open tag (Gemma 4 after a prompt that
    /// pre-opened `<|channel>` writes only its `thought\n` self label; SGLang's
    /// `think_start_self_label`). Anywhere else it is text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub start_labels: Vec<String>,
    /// Reasoning is not split out: the output is content, this text (the open tag the
    /// template wrote in the prompt) put before it — the `*_append_think` variants, for
    /// clients that feed reasoning back inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline_prefix: Option<String>,
    /// One reasoning section only: after its close, an open tag is content (OLMo 3's
    /// text tags: a literal `<think>` in an answer must not re-enter reasoning).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub once: bool,
    /// A close tag before anything else, outside reasoning, is dropped (MiniMax M3's
    /// non-thinking turns may start with a stray `</mm:think>`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_leading_close: bool,
    /// A tool call ends the reasoning (its reference parser's "implicit end": Gemma 4,
    /// Solar Open2, Cohere): after the block, text is content. Otherwise a block entered
    /// from reasoning returns to reasoning (the seed's rule).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tool_ends_reasoning: bool,
    /// What a tool call written inside the reasoning is (`call` when left out): a
    /// call, or a `draft` that stays reasoning text.
    #[serde(default, skip_serializing_if = "CallsInReasoning::is_call")]
    pub calls_in_reasoning: CallsInReasoning,
    /// The whitespace the model's chat template writes around the reasoning tags (see
    /// [`ReasoningSeparators`]): neither reasoning nor content.
    #[serde(default, skip_serializing_if = "ReasoningSeparators::is_empty")]
    pub separators: ReasoningSeparators,
    /// Tags that wrap content (see [`ToolDialect::content_wrappers`]): a reasoning
    /// parser used without a tool parser still removes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content_wrappers: Vec<WrapperTags>,
    /// Markup dropped from the text (see [`ToolDialect::drop_markup`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_markup: Vec<DropMarkup>,
    /// The request flags this model's chat template reads to switch thinking, in order
    /// (the first one the request carries decides; see [`FlagRule`]). Empty:
    /// `enable_thinking`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking_flags: Vec<FlagRule>,
    /// The model's tokenizer decodes a newline as the two characters `\` and `n`
    /// (MiniCPM-V 4.6 / 4.7): in reasoning and content, outside code and math spans,
    /// `\n`, `\r` and `\r\n` are read back as a newline (the parsing rules, "Escaped
    /// newlines"). Tool calls are left as written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub escaped_newlines: bool,
    /// The tags carry a per-checkpoint suffix, as a tool dialect's may
    /// ([`ToolDialect::tag_suffix`]): `<think{suffix}>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_suffix: Option<TagSuffix>,
}

impl ReasoningDialect {
    /// A dialect named `name` with these tags that starts inside reasoning unless
    /// thinking is switched off ([`StartMode::UnlessDisabled`]); every other field at
    /// its default.
    ///
    /// ```
    /// use replyparse::{ReasoningDialect, StartMode};
    ///
    /// let d = ReasoningDialect {
    ///     starts_in_reasoning: StartMode::Never,
    ///     ..ReasoningDialect::new("acme_think", "<reason>", "</reason>")
    /// };
    /// assert!(!d.starts_in_reasoning(Some(true)));
    /// ```
    pub fn new(name: impl Into<String>, open: impl Into<String>, close: impl Into<String>) -> Self {
        ReasoningDialect {
            name: name.into(),
            aliases: Vec::new(),
            open: open.into(),
            close: close.into(),
            starts_in_reasoning: StartMode::default(),
            open_aliases: Vec::new(),
            close_aliases: Vec::new(),
            start_labels: Vec::new(),
            inline_prefix: None,
            once: false,
            drop_leading_close: false,
            tool_ends_reasoning: false,
            calls_in_reasoning: CallsInReasoning::Call,
            separators: ReasoningSeparators::default(),
            content_wrappers: Vec::new(),
            drop_markup: Vec::new(),
            thinking_flags: Vec::new(),
            escaped_newlines: false,
            tag_suffix: None,
        }
    }

    /// Whether thinking is on, off, or not said, for the request's flags as this
    /// dialect's template reads them.
    pub fn thinking(&self, flags: &ThinkingFlags<'_>) -> Option<bool> {
        // A template that always opens the reasoning reads no flag: only the caller's
        // own switch can say thinking is off (a kwarg such as `enable_thinking=false`
        // changes nothing the model sees).
        if self.starts_in_reasoning == StartMode::Always && self.thinking_flags.is_empty() {
            return flags.enable_thinking;
        }
        flags.resolve(&self.thinking_flags)
    }

    /// Whether a response starts in reasoning when thinking is `thinking` (resolved by
    /// [`thinking`](Self::thinking)).
    pub fn starts_in_reasoning(&self, enable_thinking: Option<bool>) -> bool {
        if self.inline_prefix.is_some() {
            return false;
        }
        match self.starts_in_reasoning {
            StartMode::UnlessDisabled => enable_thinking != Some(false),
            StartMode::WhenEnabled => enable_thinking == Some(true),
            StartMode::Never => false,
            StartMode::Always => true,
        }
    }

    /// Every tag that opens reasoning: the open tag, then its aliases.
    pub fn open_tags(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.open.as_str()).chain(self.open_aliases.iter().map(String::as_str))
    }

    /// Every tag that closes reasoning.
    pub fn close_tags(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.close.as_str()).chain(self.close_aliases.iter().map(String::as_str))
    }
}

/// A response parser's registry entry: `default` composes a reasoning and a tool
/// dialect; `gpt-oss` (OpenAI Harmony) is a dedicated parser; an entry with `framed`
/// is a framed-message dialect, declared as data and read by the one framed engine
/// ([`FramedSyntax`]: Muse, Beam, Inkling).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResponseDialect {
    /// The registry name (`gpt-oss`).
    pub name: String,
    /// Other names (`harmony`, `openai`).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The framing of a framed-message dialect: its markers, routes and call payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framed: Option<FramedSyntax>,
    /// A note for the dialect reference: where the format comes from, what is not
    /// known about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The JSON Schema of the declarations: `{"tool_dialect": ..., "reasoning_dialect":
/// ...}`, each a draft 2020-12 schema of the current shape (what [`ToolDialect`] and
/// [`ReasoningDialect`] serialize to and read). The Python package's declaration models
/// are checked against it.
pub fn declaration_schema() -> serde_json::Value {
    serde_json::json!({
        "tool_dialect": schemars::schema_for!(ToolDialect),
        "reasoning_dialect": schemars::schema_for!(ReasoningDialect),
    })
}
