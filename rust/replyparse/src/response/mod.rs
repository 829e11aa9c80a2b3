//! The response layer: what turns a model's whole output into deltas.
//!
//! [`ResponseParser`] is the public facade. It holds one of two parsers: the composed
//! (`default`) parser of [`composed`], which routes plain text, reasoning and tool blocks
//! for a reasoning dialect and a tool dialect declared as data, or the dedicated Harmony
//! parser of [`harmony`] (`gpt-oss`), a whole response protocol of its own.

mod composed;
pub mod framed;
pub mod harmony;
mod newlines;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod testutil;

use std::borrow::Cow;
use std::sync::Arc;

use crate::cache::{Cache, Limits, Sizes};
use crate::calls::{BuiltinCall, CallNote, RejectedCall};
pub use crate::config::{ParserConfig, DEFAULT_MAX_BUFFERED_BYTES};
use crate::delta::{ParsedResponse, StreamItem};
use crate::error::{Error, Result};
use crate::registry::{self, ReasoningDialect, ToolDialect};
use crate::request::ToolPolicy;
use crate::scan::tokens::MarkerIds;
use crate::toolset::ToolSet;
use composed::Composed;
use framed::FramedParser;
use harmony::HarmonyParser;

/// The parser of one response: it turns the text a model decodes into `content`,
/// `reasoning_content` and `tool_calls`, as streaming deltas
/// ([`stream_chunk`](Self::stream_chunk)) or as one complete message
/// ([`parse_complete`](Self::parse_complete)).
///
/// Built from a [`ParserConfig`]: the `default` composition of a reasoning and a tool
/// dialect, or a dedicated parser (`gpt-oss`, OpenAI Harmony) for a protocol whose
/// channels that composition cannot express. One type, so servers and bindings drive
/// every response parser alike.
///
/// What a caller can rely on:
///
/// - **Any chunking.** Chunks need not align with tokens or tags: a tag split at any
///   character, one character at a time, a multi-token burst, or the whole response at
///   once give the same result.
/// - **One grammar.** `parse_complete(text)` is `stream_chunk(text, final = true)` plus
///   [`ParsedResponse::from_deltas`], so streaming and complete results cannot diverge.
/// - **Channel order.** One chunk may give several deltas, one per channel switch, in
///   the order the model wrote them (reasoning, tool, reasoning is three deltas).
/// - **Identity first.** A call's first delta carries its id, type and name; argument
///   text written before the name is held and released after it. Calls to names not
///   among the request's tools are not sent (see [`rejected_calls`](Self::rejected_calls))
///   and the calls sent are indexed 0, 1, 2, ... without gaps.
/// - **Nothing disappears.** Tool markup never reaches content or reasoning, and
///   without tools (or with `tool_choice` `none`) it is not markup at all: it stays
///   content. `final = true` releases what was held back, never inventing a name or a
///   value.
/// - **Linear cost.** Per chunk, the work is proportional to the new text plus at most
///   one tag length, never to what was seen before.
///
/// A parser is per response and stateful: build a fresh one for each response. Feeding
/// it after its final chunk is [`Error::AlreadyFinished`]; `parse_complete` after
/// streaming is [`Error::AlreadyStreamed`]. It is `Send`, so it can move between
/// threads, and needs `&mut` to feed, so it cannot be fed from two at once.
#[derive(Debug)]
pub struct ResponseParser {
    inner: Inner,
    max_buffered: usize,
    /// What the parser holds, measured after each chunk (state changes only there), so
    /// reading it costs nothing: a binding asks before every chunk.
    buffered: usize,
    /// A chunk was streamed: `parse_complete` would see only the rest of the response.
    streamed: bool,
}

// One per parser, never moved per chunk: boxing the larger variant would only add an
// indirection to every call.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum Inner {
    Composed(Composed),
    Harmony(HarmonyParser),
    Framed(FramedParser),
}

/// `expr` on whichever parser the façade holds (both have the same inherent methods;
/// a match, not a trait object, so the per-chunk call stays direct).
macro_rules! each {
    ($inner:expr, $p:ident => $e:expr) => {
        match $inner {
            Inner::Composed($p) => $e,
            Inner::Harmony($p) => $e,
            Inner::Framed($p) => $e,
        }
    };
}

impl ResponseParser {
    /// Whether the parser built from `config` reads the tools' parameter schemas (only
    /// a grammar that converts values by type does). A caller holding the tools in
    /// another form, such as Python objects, can then skip converting the schemas.
    /// Fails on an unknown name, as [`ResponseParser::new`] does.
    pub fn uses_tool_schemas(config: &ParserConfig) -> Result<bool> {
        match dedicated(&Self::normalized_config(config))? {
            // Harmony arguments are the model's JSON as written.
            Dedicated::Harmony => return Ok(false),
            Dedicated::Framed(d) => {
                return Ok(d.framed.as_ref().is_some_and(|f| f.uses_schemas()));
            }
            Dedicated::No => {}
        }
        match config.tool_parser.as_deref().filter(|n| !n.is_empty()) {
            Some(n) => Ok(registry::tool_dialect(n)?.family().uses_schemas()),
            None => Ok(false),
        }
    }

    /// `config` with a reasoning parser name that names a dedicated response parser
    /// (vLLM's `openai_gptoss`, SGLang's `gpt-oss`, `muse`, `inkling`, `beam` are
    /// reasoning parser names there) read as that response parser: its messages carry
    /// the reasoning, so a server that sets only a reasoning parser for such a model gets
    /// the response parser. This is the configuration [`new`](Self::new) builds from.
    pub fn normalized_config(config: &ParserConfig) -> Cow<'_, ParserConfig> {
        let set = |n: &Option<String>| n.as_deref().is_some_and(|n| !n.is_empty());
        if set(&config.response_parser) || set(&config.tool_parser) {
            return Cow::Borrowed(config);
        }
        let Some(name) = config.reasoning_parser.as_deref().filter(|n| !n.is_empty()) else {
            return Cow::Borrowed(config);
        };
        let dedicated = registry::reasoning_dialect(name).is_err()
            && registry::response_dialect(name)
                .is_ok_and(|r| r.name == harmony::NAME || r.framed.is_some());
        if !dedicated {
            return Cow::Borrowed(config);
        }
        let mut c = config.clone();
        c.response_parser = c.reasoning_parser.take();
        Cow::Owned(c)
    }

    /// Builds a parser from registry names and the request's tool policy.
    /// `response_parser` picks the parser (`default` when unset); a dedicated parser
    /// refuses a `tool_parser` or `reasoning_parser` it would otherwise ignore.
    ///
    /// The tools are read once per distinct tool set and shared ([`ToolSet`]): a
    /// request whose tools were seen before costs reading them, not converting them
    /// (their names only, for a parser that reads no schema).
    pub fn new(config: &ParserConfig) -> Result<Self> {
        let tools = match config.tools.as_deref() {
            None => None,
            Some(tools) if Self::uses_tool_schemas(config)? => Some(ToolSet::new(tools)),
            // The names are all such a parser reads of the tools.
            Some(tools) => {
                let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                Some(ToolSet::of_names(&names))
            }
        };
        Self::with_tool_set(config, tools)
    }

    /// [`new`](Self::new) with the request's tools given as a shared [`ToolSet`]
    /// (`None`: no tools) in place of [`ParserConfig::tools`], which is not read: a
    /// server that keeps the set of a tool list it serves often skips even reading it.
    pub fn with_tool_set(config: &ParserConfig, tools: Option<Arc<ToolSet>>) -> Result<Self> {
        let config = &*Self::normalized_config(config);
        let mut inner = match dedicated(config)? {
            Dedicated::Harmony => Inner::Harmony(HarmonyParser::new(config, tools)?),
            Dedicated::Framed(d) => Inner::Framed(FramedParser::new(
                &d.name,
                framed_syntax(&d),
                config,
                tools,
            )?),
            Dedicated::No => Inner::Composed(Composed::new(config, tools)?),
        };
        each!(&mut inner, p => p.set_whole_calls(config.whole_calls));
        if let Inner::Composed(p) = &mut inner {
            p.set_marker_ids(MarkerIds::new(&config.marker_token_ids));
        }
        Ok(ResponseParser {
            inner,
            max_buffered: config
                .max_buffered_bytes
                .unwrap_or(DEFAULT_MAX_BUFFERED_BYTES),
            buffered: 0,
            streamed: false,
        })
    }

    /// Builds the `default` parser from dialects the caller holds rather than names:
    /// a declaration kept outside the registry, say. `policy` is the request's tools and
    /// choice; `enable_thinking` decides the start as
    /// [`ParserConfig::enable_thinking`] does; `reasoning_tag_ids` are the reasoning
    /// tags' token ids, to count reasoning tokens. The buffer limit is the default one.
    ///
    /// The dialects are used as given, without the checks registration makes: pass
    /// declarations that [`registry::register_tool_dialect`] would accept, with their
    /// tags spelt for the checkpoint's suffix when they carry one
    /// ([`ToolDialect::with_tag_suffix`]; [`registry::tool_dialect_with_suffix`]).
    pub fn from_dialects(
        tool: Option<Arc<ToolDialect>>,
        reasoning: Option<Arc<ReasoningDialect>>,
        policy: &ToolPolicy,
        enable_thinking: Option<bool>,
        reasoning_tag_ids: Option<(u32, u32)>,
    ) -> Self {
        ResponseParser {
            inner: Inner::Composed(Composed::from_dialects(
                tool,
                reasoning,
                policy,
                enable_thinking,
                reasoning_tag_ids,
            )),
            max_buffered: DEFAULT_MAX_BUFFERED_BYTES,
            buffered: 0,
            streamed: false,
        }
    }

    /// Feeds one engine chunk (any size, any boundary) and returns its deltas in the
    /// model's channel order. `final_` means the response ended: ambiguous text is
    /// released and an open tool block or message is closed.
    pub fn stream_chunk(
        &mut self,
        text: &str,
        token_ids: Option<&[u32]>,
        final_: bool,
    ) -> Result<Vec<StreamItem>> {
        let mut items = Vec::new();
        self.stream_chunk_into(text, token_ids, final_, &mut items)?;
        Ok(items)
    }

    /// [`Self::stream_chunk`], appending the deltas to `out` instead of returning a new
    /// vector. A server that drains `out` after every chunk streams a whole response
    /// with one vector allocation; items already in `out` are left as they are. On an
    /// error nothing is appended.
    pub fn stream_chunk_into(
        &mut self,
        text: &str,
        token_ids: Option<&[u32]>,
        final_: bool,
        out: &mut Vec<StreamItem>,
    ) -> Result<()> {
        let start = out.len();
        self.streamed = true;
        each!(&mut self.inner, p => p.stream_chunk_into(text, token_ids, final_, out))?;
        let buffered = each!(&self.inner, p => p.buffered_bytes());
        self.buffered = buffered;
        if buffered > self.max_buffered {
            // The response cannot continue within its bound: end it here, loudly.
            out.truncate(start);
            self.poison();
            return Err(Error::BufferLimit {
                limit: self.max_buffered,
                buffered,
            });
        }
        Ok(())
    }

    /// Bytes the parser holds for this response: unconsumed text and every buffer of
    /// the grammar (names, keys, held arguments, typed values, capped diagnostics).
    pub fn buffered_bytes(&self) -> usize {
        self.buffered
    }

    /// Marks the parser finished after an error, so later chunks are refused.
    fn poison(&mut self) {
        each!(&mut self.inner, p => p.finish_after_error())
    }

    /// The whole response at once: `stream_chunk(text, final=True)` plus aggregation,
    /// on a parser that has not streamed ([`Error::AlreadyStreamed`] otherwise: the
    /// result would miss what was streamed).
    pub fn parse_complete(
        &mut self,
        text: &str,
        token_ids: Option<&[u32]>,
    ) -> Result<ParsedResponse> {
        if self.streamed && !self.is_finished() {
            return Err(Error::AlreadyStreamed);
        }
        if !self.streamed {
            // The complete parse is whole-call streaming aggregated: a cut call is left
            // out, and whole-call streams equal it by construction.
            each!(&mut self.inner, p => p.set_whole_calls(true));
        }
        let items = self.stream_chunk(text, token_ids, true)?;
        Ok(ParsedResponse::from_deltas(items.iter().map(|(d, _)| d)))
    }

    /// Switches whole-call streaming on or off ([`ParserConfig::whole_calls`]) before
    /// the first chunk: a server building a non-streaming response through the stream
    /// encoders sets it, so a cut call is left out as the complete parse leaves it out.
    /// [`Error::AlreadyStreamed`] once a chunk was fed.
    pub fn set_whole_calls(&mut self, whole: bool) -> Result<()> {
        if self.streamed {
            return Err(Error::AlreadyStreamed);
        }
        each!(&mut self.inner, p => p.set_whole_calls(whole));
        Ok(())
    }

    /// Gives the token ids of the markers ([`ParserConfig::marker_token_ids`]) before
    /// the first chunk: with them, a marker spelt in ordinary tokens is text in every
    /// chunk fed with its token ids. [`Error::AlreadyStreamed`] once a chunk was fed.
    /// The `gpt-oss` parser knows its tokens' ids and ignores these.
    pub fn set_marker_token_ids<S: AsRef<str>>(&mut self, ids: &[(S, u32)]) -> Result<()> {
        if self.streamed {
            return Err(Error::AlreadyStreamed);
        }
        match &mut self.inner {
            Inner::Composed(p) => p.set_marker_ids(MarkerIds::new(ids)),
            Inner::Framed(p) => p.set_marker_ids(ids),
            Inner::Harmony(_) => {}
        }
        Ok(())
    }

    /// The texts that may be the dialects' marker tokens, to look up in the model's
    /// vocabulary for [`set_marker_token_ids`](Self::set_marker_token_ids): every tag
    /// the parser searches for outside tool blocks, and each `<|...|>` piece of one.
    /// A text the vocabulary does not hold as one token is not a marker token (its
    /// spellings are always markers).
    pub fn marker_texts(&self) -> Vec<String> {
        match &self.inner {
            Inner::Composed(p) => p.marker_texts(),
            Inner::Harmony(_) => harmony::SPECIAL_TOKENS
                .iter()
                .map(|(t, _)| (*t).to_owned())
                .collect(),
            Inner::Framed(p) => p.marker_texts(),
        }
    }

    /// Reasoning tokens counted from token ids (`default`: when the tag ids were given;
    /// `gpt-oss`: once any ids were given).
    pub fn reasoning_tokens(&self) -> Option<usize> {
        each!(&self.inner, p => p.reasoning_tokens())
    }

    /// Calls and block text that did not reach the client, in order.
    pub fn rejected_calls(&self) -> &[RejectedCall] {
        each!(&self.inner, p => p.rejected_calls())
    }

    /// Notes on calls that did reach the client, in order: today, a finished call whose
    /// arguments are not one JSON object ([`NoteKind::ArgumentsNotObject`](crate::NoteKind::ArgumentsNotObject)).
    /// Such a call is sent as the model wrote it (the parser does not validate
    /// arguments); the note lets a server log it. Made once per call, when it ends, so
    /// it is the same under any chunking, streamed (either mode) or parsed whole; a cut
    /// call gets none (it is among the [`rejected_calls`](Self::rejected_calls)).
    pub fn call_notes(&self) -> &[CallNote] {
        each!(&self.inner, p => p.call_notes())
    }

    /// Messages addressed to a tool the request did not declare (Harmony's built-in
    /// recipients: `python`, `browser.*`, `container.*`), in order: neither calls nor
    /// content, kept for a server that implements such tools. Always empty for the
    /// `default` parser. A message the output ended inside is marked
    /// [`cut`](BuiltinCall::cut).
    pub fn builtin_calls(&self) -> &[BuiltinCall] {
        match &self.inner {
            Inner::Harmony(p) => p.builtin_calls(),
            Inner::Framed(p) => p.builtin_calls(),
            Inner::Composed(_) => &[],
        }
    }

    /// Number of tool calls emitted so far.
    pub fn emitted_tool_calls(&self) -> usize {
        each!(&self.inner, p => p.emitted_tool_calls())
    }

    /// The index of the call the output ended inside (a cut call), when its beginning
    /// was sent: in incremental streaming, what was sent of it stands, and this names it
    /// once the final chunk is in. `None` when no call was cut, and in whole-call mode
    /// (and the complete parse), where a cut call is never sent. Either way a cut call
    /// is recorded among the [`rejected_calls`](Self::rejected_calls) with reason
    /// [`Cut`](crate::RejectReason::Cut).
    pub fn cut_call(&self) -> Option<usize> {
        each!(&self.inner, p => p.cut_call())
    }

    /// The final chunk arrived while a tool block (or call message) was still open.
    pub fn ended_in_tool_block(&self) -> bool {
        each!(&self.inner, p => p.ended_in_tool_block())
    }

    /// Bytes currently held back.
    pub fn pending_len(&self) -> usize {
        each!(&self.inner, p => p.pending_len())
    }

    /// Whether the parser received its final chunk (or stopped at an error): it accepts
    /// no more text.
    pub fn is_finished(&self) -> bool {
        each!(&self.inner, p => p.is_finished())
    }
}

/// The framed syntax of a registered dialect, shared by its parsers: copied once per
/// dialect (and registry generation), not once per response.
fn framed_syntax(d: &Arc<registry::ResponseDialect>) -> Arc<crate::dialect::FramedSyntax> {
    static SYNTAXES: Cache<Arc<registry::ResponseDialect>, Arc<crate::dialect::FramedSyntax>> =
        Cache::new(Limits {
            entries: 64,
            bytes: 4 << 20,
            key_bytes: usize::MAX,
        });
    let generation = registry::generation();
    let hash = Arc::as_ptr(d) as u64;
    let is = |k: &Arc<registry::ResponseDialect>| Arc::ptr_eq(k, d);
    if let Some(s) = SYNTAXES.get(generation, hash, is) {
        return s;
    }
    let s = Arc::new(d.framed.clone().expect("a framed entry"));
    // The key holds the dialect, so its address is not reused while the entry lives.
    let sizes = Sizes {
        key: 0,
        value: 4096,
    };
    SYNTAXES
        .put(generation, hash, is, || d.clone(), &s, sizes)
        .shared
        .unwrap_or(s)
}

/// Which parser a configuration names.
enum Dedicated {
    /// The composition of a reasoning and a tool dialect (`default`).
    No,
    /// OpenAI Harmony (`gpt-oss`).
    Harmony,
    /// A framed-message dialect.
    Framed(Arc<registry::ResponseDialect>),
}

/// Whether `config` names a dedicated response parser (Harmony, a framed dialect)
/// rather than the composition of a reasoning and a tool dialect.
fn dedicated(config: &ParserConfig) -> Result<Dedicated> {
    let Some(name) = config.response_parser.as_deref().filter(|n| !n.is_empty()) else {
        return Ok(Dedicated::No);
    };
    let d = registry::response_dialect(name)?;
    Ok(if d.name == harmony::NAME {
        Dedicated::Harmony
    } else if d.framed.is_some() {
        Dedicated::Framed(d)
    } else {
        Dedicated::No
    })
}

/// A header that outgrew its bound, shown as content without its tags (the framed and
/// Harmony parsers' overflow): the tags were framing the model meant, the text between
/// them is what it wrote.
fn content_without_tags(
    tags: &crate::scan::prefix::TagSet,
    text: &str,
    sink: &mut crate::delta::DeltaSink,
) {
    let mut rest = text;
    while let Some(m) = tags.find(rest) {
        sink.text(crate::delta::Channel::Content, &rest[..m.start]);
        rest = &rest[m.end..];
    }
    sink.text(crate::delta::Channel::Content, rest);
}
