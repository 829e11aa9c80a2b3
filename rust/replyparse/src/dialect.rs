//! Dialect declarations: the data a tool, reasoning or response parser is built from
//! (tags, the payload syntax, start rules), and the checks a declaration must pass.
//! [`crate::registry`] holds the registered ones by name.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
pub use crate::grammars::Family;
use crate::scan::special::SpecialTokens;
use crate::thinking::{FlagRule, ThinkingFlags};

/// A tool-call dialect: outer tags and grammar metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDialect {
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub family: Family,
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
    /// JSON envelope: the key holding the function name.
    #[serde(default = "default_name_field")]
    pub name_field: String,
    /// JSON envelope: the key holding the arguments.
    #[serde(default = "default_argument_field")]
    pub argument_field: String,
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
    /// The markup of an `xml` family dialect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xml: Option<crate::grammars::xml::XmlSyntax>,
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
    /// The envelope family's further fields (name / argument / id keys, name-as-key,
    /// array or sequence payloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<crate::grammars::envelope::EnvelopeSyntax>,
    /// The header family's markers (Kimi K2, DeepSeek V3 / V3.1, Mistral v11+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<crate::grammars::header::HeaderSyntax>,
    /// Other payload forms of this name, told apart at the payload's first bytes
    /// (Mistral's array form beside its header form): a payload that starts with a
    /// form's `when` is parsed by that form's family, anything else by the dialect's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forms: Vec<FormDecl>,
    /// The markup of a `dsml` family dialect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsml: Option<crate::grammars::dsml::DsmlSyntax>,
    /// The layout of a `pythonic` family dialect (a list, or one call per line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pythonic: Option<crate::grammars::pythonic::PythonicSyntax>,
    /// The quote token and value style of a `gemma` family dialect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gemma: Option<crate::grammars::gemma::GemmaSyntax>,
    /// The pieces of the markers that are single special (or added) tokens; absent:
    /// every `<|...|>` piece. Engines that keep special tokens in the text may decode a
    /// marker with one space at each boundary next to such a piece, so those spellings
    /// open and close blocks too (see [`crate::scan::special`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub special_tokens: Option<Vec<String>>,
}

impl ToolDialect {
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

    /// The dialect as one of its other forms declares it: the same tags, that form's
    /// family and fields, no further forms.
    pub fn form(&self, f: &FormDecl) -> ToolDialect {
        let mut d = self.clone();
        d.forms.clear();
        d.family = f.family;
        if let Some(n) = &f.name_field {
            d.name_field = n.clone();
        }
        if let Some(a) = &f.argument_field {
            d.argument_field = a.clone();
        }
        d.envelope = f.envelope.clone();
        d.xml = f.xml.clone();
        d.dsml = f.dsml.clone();
        d.header = f.header.clone();
        d.pythonic = f.pythonic.clone();
        // No form is of the gemma family.
        d.gemma = None;
        d
    }

    /// Which pieces of this dialect's markers are special tokens.
    pub fn special(&self) -> SpecialTokens<'_> {
        match &self.special_tokens {
            Some(list) => SpecialTokens::Listed(list),
            None => SpecialTokens::Markers,
        }
    }

    /// Every spelling that opens a block of the first kind: each open tag as declared
    /// and as engines may decode it (spaces beside its special tokens), declared tags
    /// first, no repeats.
    pub fn open_spellings(&self) -> Vec<Cow<'_, str>> {
        self.spellings_of(self.open_tags())
    }

    /// Every spelling that closes a block of the first kind, as
    /// [`open_spellings`](Self::open_spellings).
    pub fn close_spellings(&self) -> Vec<Cow<'_, str>> {
        self.spellings_of(self.close_tags())
    }

    /// The kinds of block: the first is `open` (and its aliases) closed by `close` (and
    /// its aliases); each of [`blocks`](Self::blocks) is another, with its own tags.
    pub fn block_kinds(&self) -> Vec<BlockKind<'_>> {
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
    pub fn spellings_of<'a>(&'a self, tags: impl Iterator<Item = &'a str>) -> Vec<Cow<'a, str>> {
        let tags: Vec<&str> = tags.collect();
        let special = self.special();
        let mut out: Vec<Cow<'a, str>> = tags.iter().map(|t| Cow::Borrowed(*t)).collect();
        for t in &tags {
            for s in special.spellings(t) {
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        out
    }
}

/// Another payload form of a dialect: its first bytes, its family and that family's
/// fields (the dialect's own tags and the rest of its declaration apply).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormDecl {
    /// The payload's first bytes (after whitespace) that select this form.
    pub when: String,
    pub family: Family,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_field: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_field: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<crate::grammars::envelope::EnvelopeSyntax>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xml: Option<crate::grammars::xml::XmlSyntax>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsml: Option<crate::grammars::dsml::DsmlSyntax>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<crate::grammars::header::HeaderSyntax>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pythonic: Option<crate::grammars::pythonic::PythonicSyntax>,
}

/// The tags of one more kind of block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockTags {
    pub open: String,
    /// `None`: the block ends with its payload.
    #[serde(default)]
    pub close: Option<String>,
    /// The block is a call only if it emits one; otherwise all of it, tags included,
    /// is given back as content (xLAM's fenced block: prose has code fences too).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tentative: bool,
}

/// One kind of block, as the tool and response parsers arm it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockKind<'a> {
    pub opens: Vec<&'a str>,
    pub closes: Vec<&'a str>,
    /// See [`BlockTags::tentative`].
    pub tentative: bool,
}

/// A content wrapper's tags.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrapperTags {
    pub open: String,
    pub close: String,
}

/// Markup dropped from the text: a fixed `tag`, or a `prefix` up to and including the
/// first `end` within [`DROP_MARKUP_MAX`] bytes (a citation's `</co: 0:[1,2]>`); longer,
/// it is text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropMarkup {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
}

/// Longest markup a [`DropMarkup`] prefix rule drops.
pub const DROP_MARKUP_MAX: usize = 128;

fn default_name_field() -> String {
    "name".into()
}
fn default_argument_field() -> String {
    "arguments".into()
}

/// When a response starts inside reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartMode {
    /// In reasoning unless thinking is switched off (Qwen3, R1 style templates that
    /// open `<think>` in the prompt).
    UnlessDisabled,
    /// In reasoning only when thinking is switched on (DeepSeek V3.x).
    WhenEnabled,
    /// Always starts in plain text; reasoning begins at an explicit open tag.
    Never,
    /// Always starts in reasoning, whatever the flags say (templates that always open
    /// the reasoning in the prompt: Qwen3 Thinking-2507, Step-3, MiniMax M2).
    Always,
}

/// A reasoning dialect: tags and start rule. It is a description, not a parser: the
/// response state machine does all buffering and routing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReasoningDialect {
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub open: String,
    pub close: String,
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
    /// One newline right before and one right after the close tag are protocol
    /// (Step-3.5 writes them around `</think>`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub close_newlines: bool,
    /// Tags that wrap content (see [`ToolDialect::content_wrappers`]): a reasoning
    /// parser used without a tool parser still removes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content_wrappers: Vec<WrapperTags>,
    /// Markup dropped from the text (see [`ToolDialect::drop_markup`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_markup: Vec<DropMarkup>,
    /// The request flags this model's chat template reads to switch thinking, in order
    /// (the first one the request carries decides; see [`crate::thinking`]). Empty:
    /// `enable_thinking`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking_flags: Vec<FlagRule>,
}

impl ReasoningDialect {
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

/// A top-level response parser. `default` composes a reasoning and a tool dialect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseDialect {
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
}

/// Checks a tool dialect declaration: what serde cannot say about its fields.
pub(crate) fn validate_tool_dialect(d: &ToolDialect) -> Result<()> {
    // Only a marker-less dialect, pythonic lines that stand bare, has no open tag (every
    // other family's bare payload has a marker, and its constraint writes the tag).
    let lines = d
        .pythonic
        .as_ref()
        .is_some_and(|p| p.container == crate::grammars::pythonic::Container::Lines);
    let marker_less = d.bare_start && d.family == crate::grammars::Family::Pythonic && lines;
    if d.open.is_empty() && !marker_less {
        return Err(Error::InvalidDialect(format!(
            "{}: open tag is empty",
            d.name
        )));
    }
    if d.open_aliases
        .iter()
        .chain(&d.close_aliases)
        .any(String::is_empty)
    {
        return Err(Error::InvalidDialect(format!(
            "{}: an alias tag is empty",
            d.name
        )));
    }
    if d.close.is_none() && !d.close_aliases.is_empty() {
        return Err(Error::InvalidDialect(format!(
            "{}: close_aliases need a close tag",
            d.name
        )));
    }
    if d.close.as_deref() == Some("") {
        return Err(Error::InvalidDialect(format!(
            "{}: close tag is empty (use null for a block that ends with its payload)",
            d.name
        )));
    }
    let bad = |what: &str| Err(Error::InvalidDialect(format!("{}: {what}", d.name)));
    for b in &d.blocks {
        if b.open.is_empty() || b.close.as_deref() == Some("") {
            return bad("a block's open tag, or its close tag when given, is empty");
        }
    }
    if d.content_wrappers
        .iter()
        .any(|w| w.open.is_empty() || w.close.is_empty())
    {
        return bad("a content wrapper's tag is empty");
    }
    for m in &d.drop_markup {
        let tag = m.tag.as_deref().is_some_and(|t| !t.is_empty());
        let prefix = m.prefix.as_deref().is_some_and(|t| !t.is_empty())
            && m.end.as_deref().is_some_and(|t| !t.is_empty());
        if tag == prefix || (tag && (m.prefix.is_some() || m.end.is_some())) {
            return bad("drop_markup entries are a non-empty `tag`, or a `prefix` with an `end`");
        }
    }
    for f in &d.forms {
        if f.when.is_empty() {
            return bad("a form's `when` is empty");
        }
        validate_tool_dialect(&d.form(f))?;
    }
    if let Some(h) = &d.header {
        let markers = [
            &h.call_begin,
            &h.type_sep,
            &h.id_marker,
            &h.args_marker,
            &h.args_suffix,
            &h.call_end,
        ];
        if markers.iter().any(|m| m.as_deref() == Some("")) {
            return bad("header markers, when given, are non-empty");
        }
        if h.args_marker.is_none() && !h.args_on_brace {
            return bad("a header needs an args_marker (or args_on_brace)");
        }
        if d.family != Family::Header {
            return bad("`header` is for the header family");
        }
    }
    if d.pythonic.is_some() && d.family != Family::Pythonic {
        return bad("`pythonic` is for the pythonic family");
    }
    if d.gemma.is_some() && d.family != Family::Gemma {
        return bad("`gemma` is for the gemma family");
    }
    if d.family == Family::Gemma {
        match &d.gemma {
            Some(g) if !g.quote.is_empty() => {}
            _ => return bad("a gemma dialect needs its `gemma` quote token"),
        }
    }
    if d.family == Family::Header && d.header.is_none() {
        return bad("a header dialect needs its `header` markers");
    }
    if let Some(e) = &d.envelope {
        if e.name_keys
            .iter()
            .chain(&e.argument_keys)
            .any(String::is_empty)
            || e.id_key.as_deref() == Some("")
            || e.separator.as_deref() == Some("")
        {
            return bad("envelope keys and the separator must be non-empty");
        }
        if d.family != Family::JsonEnvelope {
            return bad("`envelope` is for the json_envelope family");
        }
    }
    if d.family == Family::JsonEnvelope && (d.name_field.is_empty() || d.argument_field.is_empty())
    {
        return Err(Error::InvalidDialect(format!(
            "{}: name_field and argument_field must be non-empty",
            d.name
        )));
    }
    if let Some(x) = &d.dsml {
        if x.token.is_empty() || x.invoke.is_empty() || x.parameter.is_empty() {
            return Err(Error::InvalidDialect(format!(
                "{}: dsml token, invoke and parameter must be non-empty",
                d.name
            )));
        }
    }
    if d.family == Family::Xml {
        let Some(x) = &d.xml else {
            return Err(Error::InvalidDialect(format!(
                "{}: an xml dialect needs its `xml` syntax",
                d.name
            )));
        };
        if let Some(problem) = x.problem() {
            return Err(Error::InvalidDialect(format!("{}: {problem}", d.name)));
        }
    }
    for (tag, prefixes) in [
        (Some(&d.open), &d.open_prefixes),
        (d.close.as_ref(), &d.close_prefixes),
    ] {
        for p in prefixes {
            let ok = tag
                .is_some_and(|t| t.len() > p.len() && t.starts_with(p.as_str()) && !p.is_empty());
            if !ok {
                return Err(Error::InvalidDialect(format!(
                    "{}: {p:?} is not a proper prefix of its tag",
                    d.name
                )));
            }
        }
    }
    Ok(())
}

/// Checks a reasoning dialect declaration.
pub(crate) fn validate_reasoning_dialect(d: &ReasoningDialect) -> Result<()> {
    if d.open_tags().chain(d.close_tags()).any(str::is_empty) {
        return Err(Error::InvalidDialect(format!(
            "{}: reasoning tags must be non-empty",
            d.name
        )));
    }
    Ok(())
}
