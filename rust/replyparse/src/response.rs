//! The response state machine: plain / reasoning / tool routing over one pending buffer.
//!
//! ```text
//! plain     -- reasoning open --> reasoning
//! reasoning -- reasoning close -> plain
//! plain     -- tool open -------> tool -- block closed --> plain
//! reasoning -- tool open -------> tool -- block closed --> reasoning
//! ```
//!
//! `pending` is the only buffer: in plain and reasoning modes it holds at most a proper
//! prefix of an armed tag (plus separator newlines after a block); in tool mode it holds
//! what the tool parser has not consumed yet. Every byte is therefore searched once,
//! and the per-chunk work is proportional to the new text plus one tag length.
//!
//! [`ResponseParser`] is the public facade: this composition is the `default` response
//! parser; `gpt-oss` is the dedicated Harmony parser of [`crate::grammars::harmony`].

use std::borrow::Cow;
use std::sync::Arc;

use crate::calls::RejectedCall;
use crate::delta::{Channel, DeltaSink, ParsedResponse, StreamItem};
use crate::error::{Error, Result};
use crate::grammars::harmony::{self, HarmonyParser};
use crate::registry::{self, ReasoningDialect, ToolDialect};
use crate::request::{ToolChoice, ToolPolicy, ToolSpec};
use crate::scan::prefix::TagSet;
use crate::thinking::ThinkingFlags;
use crate::tool::ToolParser;

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
    /// [`DEFAULT_MAX_BUFFERED_BYTES`]). See [`ResponseParser::buffered_bytes`].
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

    /// Whether the parser built from this config reads the tools' parameter schemas
    /// (only a grammar that converts values by type does). A caller holding the tools
    /// in another form, such as Python objects, can then skip converting the schemas.
    /// Fails on an unknown name, as [`ResponseParser::new`] does.
    pub fn uses_tool_schemas(&self) -> Result<bool> {
        if self.normalized().dedicated()? {
            // Harmony arguments are the model's JSON as written.
            return Ok(false);
        }
        match self.tool_parser.as_deref().filter(|n| !n.is_empty()) {
            Some(n) => Ok(registry::tool_dialect(n)?.family.uses_schemas()),
            None => Ok(false),
        }
    }

    /// Whether this config names a dedicated response parser (Harmony) rather than
    /// the composition of a reasoning and a tool dialect.
    fn dedicated(&self) -> Result<bool> {
        match self.response_parser.as_deref().filter(|n| !n.is_empty()) {
            Some(name) => Ok(registry::response_dialect(name)?.name == harmony::NAME),
            None => Ok(false),
        }
    }

    /// The config with a reasoning parser name that names the gpt-oss response parser
    /// (vLLM's `openai_gptoss`, SGLang's `gpt-oss` are reasoning parser names there) read
    /// as that response parser: Harmony's channels carry the reasoning, so a server that
    /// sets only a reasoning parser for gpt-oss gets the Harmony parser.
    pub fn normalized(&self) -> std::borrow::Cow<'_, ParserConfig> {
        let set = |n: &Option<String>| n.as_deref().is_some_and(|n| !n.is_empty());
        if set(&self.response_parser) || set(&self.tool_parser) {
            return std::borrow::Cow::Borrowed(self);
        }
        let Some(name) = self.reasoning_parser.as_deref().filter(|n| !n.is_empty()) else {
            return std::borrow::Cow::Borrowed(self);
        };
        let harmony = registry::reasoning_dialect(name).is_err()
            && registry::response_dialect(name).is_ok_and(|r| r.name == harmony::NAME);
        if !harmony {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut c = self.clone();
        c.response_parser = c.reasoning_parser.take();
        std::borrow::Cow::Owned(c)
    }
}

/// The default buffer limit. Text streams as it arrives; what is held is a tag prefix, a
/// name or key, arguments written before their function name, or a typed XML value until
/// its close tag. 64 MiB of that is far beyond any real response, and well below what
/// would hurt a server holding many responses.
pub const DEFAULT_MAX_BUFFERED_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Plain,
    Reasoning,
    /// Inside a tool block entered from `Plain` or `Reasoning`.
    Tool {
        from_reasoning: bool,
    },
}

/// What an armed tag does when found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    ReasoningOpen,
    ReasoningClose,
    /// Opens a tool block of this kind ([`ToolDialect::block_kinds`]).
    ToolOpen(usize),
    /// A content wrapper's open tag: dropped; it ends reasoning.
    WrapperOpen,
    /// Dropped markup: a wrapper's close tag, a fixed citation tag.
    Drop,
    /// A reasoning close tag outside reasoning: dropped before anything else (a stray
    /// leading one), text after.
    StrayClose,
    /// A prefix dropped with the text up to and including its end (a citation's
    /// `</co: 0:[1,2]>`): the index of its rule in `drop_ends`.
    DropUntil(usize),
}

/// Which armed set a tag was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArmedSet {
    Plain,
    PlainAfter,
    Reasoning,
}

/// Whether a bare payload starts at the start of the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bare {
    Start,
    Hold,
    No,
}

/// Where dropped markup ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DropEnd {
    /// This many bytes after its prefix, its end included.
    At(usize),
    /// Not known yet: hold the prefix.
    Hold,
}

/// The end of markup whose prefix was just found, within
/// [`registry::DROP_MARKUP_MAX`] bytes; `None` when there is none (the prefix is text).
fn drop_until(rest: &str, end: &str, final_: bool) -> Option<DropEnd> {
    let window = &rest.as_bytes()[..rest.len().min(registry::DROP_MARKUP_MAX)];
    match memchr::memmem::find(window, end.as_bytes()) {
        Some(i) => Some(DropEnd::At(i + end.len())),
        None if !final_ && rest.len() < registry::DROP_MARKUP_MAX => Some(DropEnd::Hold),
        None => None,
    }
}

/// The tags armed in one mode, with their roles in the same order.
#[derive(Debug)]
struct Armed {
    tags: Arc<TagSet>,
    roles: Vec<Role>,
}

impl Armed {
    fn new(entries: &[(Option<&str>, Role)]) -> Self {
        let live: Vec<(&str, Role)> = entries
            .iter()
            .filter_map(|(t, r)| t.filter(|t| !t.is_empty()).map(|t| (t, *r)))
            .collect();
        Armed {
            tags: TagSet::shared(&live.iter().map(|(t, _)| *t).collect::<Vec<_>>()),
            roles: live.iter().map(|(_, r)| *r).collect(),
        }
    }
}

/// Counts reasoning tokens over the raw tag span, from token ids alone.
#[derive(Debug)]
struct TokenCounter {
    open: u32,
    close: u32,
    inside: bool,
    count: usize,
}

/// The composed (`default`) parser: see the module docs.
#[derive(Debug)]
struct Composed {
    reasoning: Option<Arc<ReasoningDialect>>,
    tool: Option<ToolParser>,
    /// Every spelling of every kind's open tag (for the newlines between two blocks).
    tool_opens: Vec<String>,
    /// The tag (index in the armed set the block was opened from) that opened the
    /// current tool block: an abandoned block gives back that spelling. `usize::MAX`
    /// for a bare block, which has none.
    opened_by: usize,
    /// The end of each `DropUntil` rule.
    drop_ends: Vec<String>,
    /// The dialect's payload may stand bare at the start of the content.
    bare_start: bool,
    /// The bare payload has no marker (pythonic lines): a line that begins a call of a
    /// request tool starts it, and another such line may follow it.
    bare_lines: bool,
    /// A bare line's call just closed: the next line may be another call.
    bare_next: bool,
    /// At the start of the content channel (of the output, or right after reasoning):
    /// nothing shown as content yet.
    content_start: bool,
    plain: Armed,
    /// `plain` without the reasoning open tags, once a `once` dialect's reasoning closed.
    plain_after: Armed,
    /// The armed set the current tool block's open tag was found in.
    opened_in: ArmedSet,
    /// The reasoning closed (at least once).
    closed_once: bool,
    once: bool,
    tool_ends_reasoning: bool,
    close_newlines: bool,
    /// A newline right after the close tag is protocol: dropped when it comes.
    eat_newline: bool,
    /// Text put before the output (an inline reasoning dialect), until it is written.
    inline_prefix: Option<String>,
    /// Nothing has been emitted or consumed yet (a stray leading close tag is dropped).
    nothing_yet: bool,
    in_reasoning: Armed,
    mode: Mode,
    pending: String,
    /// A tool block just closed: leading newlines are separators if the next tool
    /// open tag follows them.
    after_block: bool,
    /// Reasoning began implicitly and nothing has been emitted: a leading open tag is
    /// dropped.
    leading_open: bool,
    /// `enable_thinking=False`: what the model puts in reasoning is shown as content.
    reasoning_as_content: bool,
    finished: bool,
    tokens: Option<TokenCounter>,
    ended_in_tool_block: bool,
}

impl Composed {
    /// Builds a parser from registry names and the request's tool policy.
    fn new(config: &ParserConfig) -> Result<Self> {
        let tool = match config.tool_parser.as_deref().filter(|n| !n.is_empty()) {
            Some(n) => Some(registry::tool_dialect(n)?),
            None => None,
        };
        let reasoning = match config.reasoning_parser.as_deref().filter(|n| !n.is_empty()) {
            Some(n) => Some(registry::reasoning_dialect(n)?),
            None => None,
        };
        // The policy needs the tools' names; the tool parser copies their schemas from
        // the request once, and only for a grammar that uses them (copying the schemas
        // dominated building a parser).
        let policy = ToolPolicy::names_only(config.tools.as_deref(), config.tool_choice.clone())?;
        // Thinking as the reasoning dialect's template reads the request's flags.
        let thinking = reasoning
            .as_ref()
            .and_then(|r| r.thinking(&config.thinking_flags()));
        Ok(Self::build(
            tool,
            reasoning,
            &policy,
            config.tools.as_deref().unwrap_or_default(),
            thinking,
            config.reasoning_tag_ids,
        ))
    }

    /// Builds a parser from resolved dialects.
    pub fn from_dialects(
        tool: Option<Arc<ToolDialect>>,
        reasoning: Option<Arc<ReasoningDialect>>,
        policy: &ToolPolicy,
        enable_thinking: Option<bool>,
        reasoning_tag_ids: Option<(u32, u32)>,
    ) -> Self {
        Self::build(
            tool,
            reasoning,
            policy,
            &policy.tools,
            enable_thinking,
            reasoning_tag_ids,
        )
    }

    /// `from_dialects` with the tools whose parameter schemas the grammar may use.
    fn build(
        tool: Option<Arc<ToolDialect>>,
        reasoning: Option<Arc<ReasoningDialect>>,
        policy: &ToolPolicy,
        tools: &[ToolSpec],
        enable_thinking: Option<bool>,
        reasoning_tag_ids: Option<(u32, u32)>,
    ) -> Self {
        // Content wrappers and dropped markup are the dialect's protocol whether or not
        // the request arms tool calls.
        // The reasoning dialect's own are added (a reasoning parser used without a tool
        // parser still removes them).
        let mut markup: Vec<(&str, Role)> = Vec::new();
        let mut drop_ends: Vec<String> = Vec::new();
        let wrappers = tool
            .iter()
            .flat_map(|d| d.content_wrappers.iter())
            .chain(reasoning.iter().flat_map(|r| r.content_wrappers.iter()));
        for w in wrappers {
            markup.push((&w.open, Role::WrapperOpen));
            markup.push((&w.close, Role::Drop));
        }
        let drops = tool
            .iter()
            .flat_map(|d| d.drop_markup.iter())
            .chain(reasoning.iter().flat_map(|r| r.drop_markup.iter()));
        for m in drops {
            if let Some(t) = &m.tag {
                markup.push((t, Role::Drop));
            }
            if let (Some(p), Some(e)) = (&m.prefix, &m.end) {
                markup.push((p, Role::DropUntil(drop_ends.len())));
                drop_ends.push(e.clone());
            }
        }
        let markup: Vec<(Option<&str>, Role)> =
            markup.into_iter().map(|(t, r)| (Some(t), r)).collect();
        let bare_start = tool.as_ref().is_some_and(|d| d.bare_start) && policy.armed();
        let tool_parser = tool
            .as_ref()
            .filter(|_| policy.armed())
            .map(|d| ToolParser::for_tools(d.clone(), policy, tools));
        // An inline dialect (`*_append_think`) splits nothing: no reasoning tag is armed.
        let split = reasoning.as_ref().filter(|r| r.inline_prefix.is_none());
        let r_opens: Vec<(Option<&str>, Role)> = split.map_or(Vec::new(), |r| {
            r.open_tags()
                .map(|t| (Some(t), Role::ReasoningOpen))
                .collect()
        });
        let r_closes: Vec<(Option<&str>, Role)> = split.map_or(Vec::new(), |r| {
            r.close_tags()
                .map(|t| (Some(t), Role::ReasoningClose))
                .collect()
        });
        // Outside reasoning a close tag is text, unless a stray leading one is dropped.
        let stray_closes: Vec<(Option<&str>, Role)> = split
            .filter(|r| r.drop_leading_close)
            .map_or(Vec::new(), |r| {
                r.close_tags()
                    .map(|t| (Some(t), Role::StrayClose))
                    .collect()
            });
        // Every kind of block's open tags (and their aliases) open a block of that kind,
        // in every spelling an engine may decode them to.
        let kinds = tool_parser
            .as_ref()
            .map_or(Vec::new(), |t| t.dialect().block_kinds());
        let opens: Vec<(Cow<str>, usize)> = kinds
            .iter()
            .enumerate()
            .flat_map(|(k, kind)| {
                let d = tool_parser
                    .as_ref()
                    .expect("kinds imply a tool parser")
                    .dialect();
                d.spellings_of(kind.opens.iter().copied())
                    .into_iter()
                    .map(move |o| (o, k))
            })
            .collect();
        let tool_opens: Vec<(Option<&str>, Role)> = opens
            .iter()
            .map(|(o, k)| (Some(o.as_ref()), Role::ToolOpen(*k)))
            .collect();
        let plain = Armed::new(&[&r_opens[..], &stray_closes, &tool_opens, &markup].concat());
        // After the one reasoning section of a `once` dialect, open tags are text.
        let plain_after = Armed::new(&[&stray_closes[..], &tool_opens, &markup].concat());
        // An open tag while already reasoning (a model repeating `<think>`) is protocol,
        // not reasoning text: it is dropped (the role keeps the mode).
        let in_reasoning = Armed::new(&[&r_closes[..], &r_opens, &tool_opens, &markup].concat());
        // A marker-less dialect's empty open tag opens nothing.
        let tool_opens: Vec<String> = opens
            .iter()
            .filter(|(o, _)| !o.is_empty())
            .map(|(o, _)| o.to_string())
            .collect();
        drop(opens);
        let tool = tool_parser;
        let bare_lines = bare_start
            && tool
                .as_ref()
                .is_some_and(|t| t.payload_marker().is_none_or(str::is_empty));
        let starts = reasoning
            .as_ref()
            .is_some_and(|r| r.starts_in_reasoning(enable_thinking));
        let r = reasoning.as_deref();
        Composed {
            tool,
            tool_opens,
            opened_by: 0,
            drop_ends,
            bare_start,
            bare_lines,
            bare_next: false,
            content_start: !starts,
            plain,
            plain_after,
            opened_in: ArmedSet::Plain,
            closed_once: false,
            once: r.is_some_and(|r| r.once),
            tool_ends_reasoning: r.is_some_and(|r| r.tool_ends_reasoning),
            close_newlines: r.is_some_and(|r| r.close_newlines),
            eat_newline: false,
            inline_prefix: r.and_then(|r| r.inline_prefix.clone()),
            nothing_yet: true,
            in_reasoning,
            mode: if starts { Mode::Reasoning } else { Mode::Plain },
            pending: String::new(),
            after_block: false,
            leading_open: starts,
            reasoning_as_content: enable_thinking == Some(false),
            finished: false,
            tokens: reasoning_tag_ids.map(|(open, close)| TokenCounter {
                open,
                close,
                inside: starts,
                count: 0,
            }),
            ended_in_tool_block: false,
            reasoning,
        }
    }

    /// Feeds one engine chunk (any size, any boundary) and returns its deltas in the
    /// model's channel order. `final_` means the response ended: ambiguous text is
    /// released and an open tool block is closed.
    pub fn stream_chunk_into(
        &mut self,
        text: &str,
        token_ids: Option<&[u32]>,
        final_: bool,
        out: &mut Vec<StreamItem>,
    ) -> Result<()> {
        if self.finished {
            return Err(Error::AlreadyFinished);
        }
        if let (Some(tc), Some(ids)) = (self.tokens.as_mut(), token_ids) {
            for &id in ids {
                if id == tc.open {
                    tc.inside = true;
                } else if id == tc.close {
                    tc.inside = false;
                } else if tc.inside {
                    tc.count += 1;
                }
            }
        }
        let sink = &mut DeltaSink::new(out);
        if !text.is_empty() || final_ {
            if let Some(prefix) = self.inline_prefix.take() {
                sink.text(Channel::Content, &prefix);
            }
        }
        if self.pending.is_empty() {
            // Nothing held (the usual case): parse the chunk where it is and keep only
            // what it leaves unconsumed, instead of copying all of it into `pending`.
            let used = self.run(text, sink, final_);
            self.pending.push_str(&text[used..]);
        } else {
            let mut pending = std::mem::take(&mut self.pending);
            pending.push_str(text);
            let used = self.run(&pending, sink, final_);
            pending.drain(..used);
            self.pending = pending;
        }
        if final_ {
            self.finished = true;
            self.pending.clear();
        }
        Ok(())
    }

    /// Parses `input` (the held text followed by the new chunk) and returns how much of
    /// it was consumed; the rest is held for the next chunk.
    fn run(&mut self, input: &str, sink: &mut DeltaSink, final_: bool) -> usize {
        let mut pos = 0;
        loop {
            match self.mode {
                Mode::Tool { from_reasoning } => {
                    let tool = self.tool.as_mut().expect("tool mode implies a tool parser");
                    let used = tool.feed_tool_block(&input[pos..], sink, final_);
                    pos += used;
                    if !tool.block_closed() {
                        break;
                    }
                    let abandoned = tool.abandoned();
                    self.ended_in_tool_block |= tool.truncated();
                    if abandoned {
                        let ch = text_channel(from_reasoning, self.reasoning_as_content);
                        // The block's own spelling of the open tag goes back (a bare
                        // block has none), then what the block gives back.
                        let armed = match self.opened_in {
                            ArmedSet::Plain => &self.plain,
                            ArmedSet::PlainAfter => &self.plain_after,
                            ArmedSet::Reasoning => &self.in_reasoning,
                        };
                        if self.opened_by != usize::MAX {
                            sink.text(ch, armed.tags.text(self.opened_by));
                        }
                        sink.text(ch, tool.given_back());
                    }
                    // A call ends the reasoning where the dialect's reference parser
                    // says so ("implicit end"); otherwise the block returns to where it
                    // was entered from.
                    let ended = from_reasoning && !abandoned && self.tool_ends_reasoning;
                    self.mode = if from_reasoning && !ended {
                        Mode::Reasoning
                    } else {
                        Mode::Plain
                    };
                    if ended {
                        self.closed_once = true;
                    }
                    self.after_block = !abandoned;
                    self.bare_next = self.bare_lines && !abandoned && self.opened_by == usize::MAX;
                }
                Mode::Plain | Mode::Reasoning => {
                    let reasoning = self.mode == Mode::Reasoning;
                    let text = &input[pos..];
                    if self.leading_open {
                        // Reasoning began implicitly: an open tag the model writes anyway,
                        // after nothing but whitespace, is the protocol's tag (Kimi K2
                        // Thinking writes "\n<think>"), so it and that whitespace go; so
                        // does a start label (Gemma 4's `thought\n`).
                        let after = text.trim_start_matches([' ', '\t', '\n', '\r']);
                        let r = self.reasoning.as_ref();
                        let opens = || {
                            r.into_iter().flat_map(|r| {
                                r.open_tags()
                                    .chain(r.start_labels.iter().map(String::as_str))
                            })
                        };
                        if !final_ && opens().any(|o| after.len() < o.len() && o.starts_with(after))
                        {
                            break;
                        }
                        self.leading_open = false;
                        // The longest spelling that matches.
                        if let Some(o) = opens()
                            .filter(|o| !o.is_empty() && after.starts_with(o))
                            .max_by_key(|o| o.len())
                        {
                            pos += text.len() - after.len() + o.len();
                            continue;
                        }
                    }
                    if self.eat_newline && !reasoning {
                        if text.is_empty() && !final_ {
                            break;
                        }
                        self.eat_newline = false;
                        if text.starts_with('\n') {
                            pos += 1;
                            continue;
                        }
                    }
                    if self.bare_next && !reasoning {
                        let ws =
                            text.len() - text.trim_start_matches([' ', '\t', '\n', '\r']).len();
                        let lead = &text[ws..];
                        let tool = self.tool.as_mut().expect("a bare block was armed");
                        let next = if !lead.is_empty() && !text[..ws].contains('\n') {
                            // A call is one line: text after it on its line is content.
                            Some(false)
                        } else if lead.is_empty() {
                            (final_).then_some(false)
                        } else {
                            tool.bare_call(lead, final_)
                        };
                        match next {
                            None => break,
                            Some(true) => {
                                // The whitespace between two calls is the layout's.
                                pos += ws;
                                tool.start_bare_block();
                                self.opened_by = usize::MAX;
                                self.after_block = false;
                                self.mode = Mode::Tool {
                                    from_reasoning: false,
                                };
                                continue;
                            }
                            // The block ended: this line and the rest are content.
                            Some(false) => self.bare_next = false,
                        }
                    }
                    if self.after_block {
                        match self.separator(text, final_) {
                            Separator::Hold => break,
                            Separator::Drop(n) => pos += n,
                            Separator::Text => {}
                        }
                        self.after_block = false;
                        continue;
                    }
                    if self.content_start && !reasoning {
                        match self.bare_payload(text, final_) {
                            Bare::Hold => break,
                            Bare::Start => {
                                // Whitespace before the payload is content, as before a
                                // tagged block.
                                let ws = text.len()
                                    - text.trim_start_matches([' ', '\t', '\n', '\r']).len();
                                sink.text(Channel::Content, &text[..ws]);
                                pos += ws;
                                let tool = self.tool.as_mut().expect("bare start is armed");
                                tool.start_bare_block();
                                self.opened_by = usize::MAX;
                                self.content_start = false;
                                self.mode = Mode::Tool {
                                    from_reasoning: false,
                                };
                                continue;
                            }
                            Bare::No => self.content_start = false,
                        }
                    }
                    let which = if reasoning {
                        ArmedSet::Reasoning
                    } else if self.once && self.closed_once {
                        ArmedSet::PlainAfter
                    } else {
                        ArmedSet::Plain
                    };
                    let armed = match which {
                        ArmedSet::Plain => &self.plain,
                        ArmedSet::PlainAfter => &self.plain_after,
                        ArmedSet::Reasoning => &self.in_reasoning,
                    };
                    let ch = text_channel(reasoning, self.reasoning_as_content);
                    match armed.tags.find_or_held(text, final_) {
                        Ok(m) => {
                            let role = armed.roles[m.tag];
                            // The protocol newline before a close tag (Step-3.5) goes.
                            let before = &text[..m.start];
                            let before = if role == Role::ReasoningClose && self.close_newlines {
                                before.strip_suffix('\n').unwrap_or(before)
                            } else {
                                before
                            };
                            sink.text(ch, before);
                            if m.start > 0 && !reasoning {
                                self.content_start = false;
                            }
                            let first = self.nothing_yet && before.trim().is_empty();
                            self.nothing_yet = false;
                            pos += m.end;
                            match role {
                                Role::ReasoningOpen => self.mode = Mode::Reasoning,
                                Role::ReasoningClose => {
                                    self.mode = Mode::Plain;
                                    self.content_start = true;
                                    self.closed_once = true;
                                    self.eat_newline = self.close_newlines;
                                }
                                Role::StrayClose => {
                                    if !first {
                                        sink.text(ch, &text[m.start..m.end]);
                                    }
                                }
                                Role::ToolOpen(kind) => {
                                    self.opened_in = which;
                                    self.opened_by = m.tag;
                                    self.content_start = false;
                                    self.tool.as_mut().expect("armed").start_block_of(kind);
                                    self.mode = Mode::Tool {
                                        from_reasoning: reasoning,
                                    };
                                }
                                Role::WrapperOpen => self.mode = Mode::Plain,
                                Role::Drop => {}
                                Role::DropUntil(rule) => {
                                    match drop_until(&text[m.end..], &self.drop_ends[rule], final_)
                                    {
                                        Some(DropEnd::At(n)) => pos += n,
                                        Some(DropEnd::Hold) => {
                                            pos -= m.end - m.start;
                                            break;
                                        }
                                        // Not markup: the prefix is text.
                                        None => sink.text(ch, &text[m.start..m.end]),
                                    }
                                }
                            }
                        }
                        Err(mut keep) => {
                            // A trailing newline may be the protocol one before a close.
                            if reasoning
                                && self.close_newlines
                                && !final_
                                && text[..text.len() - keep].ends_with('\n')
                            {
                                keep += 1;
                            }
                            sink.text(ch, &text[..text.len() - keep]);
                            if text.len() > keep {
                                self.nothing_yet = false;
                                if !reasoning {
                                    self.content_start = false;
                                }
                            }
                            pos += text.len() - keep;
                            break;
                        }
                    }
                }
            }
        }
        pos
    }

    /// Whether a bare payload starts here, at the start of the content: after
    /// whitespace, the grammar's payload marker (`{`, `[`). Whitespace alone is held
    /// until what follows it is known.
    fn bare_payload(&self, text: &str, final_: bool) -> Bare {
        if !self.bare_start {
            return Bare::No;
        }
        let marker = self
            .tool
            .as_ref()
            .and_then(|t| t.payload_marker())
            .unwrap_or("");
        let lead = text.trim_start_matches([' ', '\t', '\n', '\r']);
        // An armed tag here (xLAM's `[TOOL_CALLS]` starts like its array) is the tag's.
        match self.plain.tags.find_or_held(lead, final_) {
            Ok(m) if m.start == 0 => return Bare::No,
            Err(keep) if keep == lead.len() && keep > 0 && !final_ => return Bare::Hold,
            _ => {}
        }
        if marker.is_empty() {
            if !self.bare_lines {
                return Bare::No;
            }
            let tool = self.tool.as_ref().expect("bare start is armed");
            match (lead.is_empty(), final_) {
                (true, false) => Bare::Hold,
                (true, true) => Bare::No,
                _ => match tool.bare_call(lead, final_) {
                    None => Bare::Hold,
                    Some(true) => Bare::Start,
                    Some(false) => Bare::No,
                },
            }
        } else if lead.starts_with(marker) {
            Bare::Start
        } else if !final_ && marker.starts_with(lead) {
            Bare::Hold
        } else {
            Bare::No
        }
    }

    /// Newlines right after a tool block are dropped only once the next tool open tag
    /// is confirmed after them; otherwise they belong to the channel the block returned
    /// to. Tags that themselves start with newlines (DSML) keep theirs.
    fn separator(&self, text: &str, final_: bool) -> Separator {
        if text.is_empty() && !final_ {
            return Separator::Hold;
        }
        let nl = text.bytes().take_while(|&b| b == b'\n').count();
        if nl == 0 || nl > MAX_SEPARATOR_NEWLINES || self.tool_opens.is_empty() {
            return Separator::Text;
        }
        // Any kind of block's open tag after the newlines makes them separators.
        let mut hold = false;
        for open in &self.tool_opens {
            let tag_nl = open.bytes().take_while(|&b| b == b'\n').count();
            if nl < tag_nl {
                // Fewer newlines than the tag's own: while only newlines arrived, more
                // may follow (one chunk per newline must decide as the whole text
                // does); otherwise at most a partial tag, handled by the search.
                hold |= !final_ && nl == text.len();
                continue;
            }
            let candidate = &text[nl - tag_nl..];
            if candidate.starts_with(open.as_str()) {
                return Separator::Drop(nl - tag_nl);
            }
            hold |= !final_ && open.starts_with(candidate);
        }
        if hold {
            Separator::Hold
        } else {
            Separator::Text
        }
    }

    /// Reasoning tokens counted from token ids (tool tokens inside reasoning included),
    /// when the tag ids were given.
    pub fn reasoning_tokens(&self) -> Option<usize> {
        self.tokens.as_ref().map(|t| t.count)
    }

    /// Calls and block text that did not reach the client, in order.
    pub fn rejected_calls(&self) -> &[RejectedCall] {
        self.tool.as_ref().map_or(&[], |t| t.rejected_calls())
    }

    /// Number of tool calls emitted so far.
    pub fn emitted_tool_calls(&self) -> usize {
        self.tool.as_ref().map_or(0, |t| t.emitted_calls())
    }

    /// The final chunk arrived while a tool block was still open (truncated output).
    pub fn ended_in_tool_block(&self) -> bool {
        self.ended_in_tool_block
    }

    /// Bytes currently held back (a tag prefix, or unconsumed tool-block text).
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    fn buffered_bytes(&self) -> usize {
        self.pending.len() + self.tool.as_ref().map_or(0, |t| t.buffered_bytes())
    }

    /// Refuses further chunks after an error the caller must see (buffer limit).
    fn finish_after_error(&mut self) {
        self.finished = true;
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }
}

/// A response parser: the `default` composition of a reasoning and a tool dialect, or a
/// dedicated parser (`gpt-oss`, [`crate::grammars::harmony`]) for a protocol whose channels that
/// composition cannot express. One public type, so servers and bindings drive every
/// response parser alike.
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
}

/// `expr` on whichever parser the façade holds (both have the same inherent methods;
/// a match, not a trait object, so the per-chunk call stays direct).
macro_rules! each {
    ($inner:expr, $p:ident => $e:expr) => {
        match $inner {
            Inner::Composed($p) => $e,
            Inner::Harmony($p) => $e,
        }
    };
}

impl ResponseParser {
    /// Builds a parser from registry names and the request's tool policy.
    /// `response_parser` picks the parser (`default` when unset); a dedicated parser
    /// refuses a `tool_parser` or `reasoning_parser` it would otherwise ignore.
    pub fn new(config: &ParserConfig) -> Result<Self> {
        let config = &*config.normalized();
        let inner = if config.dedicated()? {
            Inner::Harmony(HarmonyParser::new(config)?)
        } else {
            Inner::Composed(Composed::new(config)?)
        };
        Ok(ResponseParser {
            inner,
            max_buffered: config
                .max_buffered_bytes
                .unwrap_or(DEFAULT_MAX_BUFFERED_BYTES),
            buffered: 0,
            streamed: false,
        })
    }

    /// Builds the `default` parser from resolved dialects.
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
        let items = self.stream_chunk(text, token_ids, true)?;
        Ok(ParsedResponse::from_deltas(items.iter().map(|(d, _)| d)))
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

    /// Number of tool calls emitted so far.
    pub fn emitted_tool_calls(&self) -> usize {
        each!(&self.inner, p => p.emitted_tool_calls())
    }

    /// The final chunk arrived while a tool block (or call message) was still open.
    pub fn ended_in_tool_block(&self) -> bool {
        each!(&self.inner, p => p.ended_in_tool_block())
    }

    /// Bytes currently held back.
    pub fn pending_len(&self) -> usize {
        each!(&self.inner, p => p.pending_len())
    }

    pub fn is_finished(&self) -> bool {
        each!(&self.inner, p => p.is_finished())
    }
}

/// The channel text goes to in plain or reasoning mode.
fn text_channel(reasoning: bool, reasoning_as_content: bool) -> Channel {
    if reasoning && !reasoning_as_content {
        Channel::Reasoning
    } else {
        Channel::Content
    }
}

/// A run of newlines after a tool block longer than this is text, whatever follows: no
/// template separates blocks with more, and holding an unbounded run would make every
/// chunk rescan it. The decision depends only on the run itself, so it is the same under
/// any chunking.
const MAX_SEPARATOR_NEWLINES: usize = 64;

enum Separator {
    Hold,
    Drop(usize),
    Text,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::{DeltaMessage, ParsedResponse};
    use crate::testutil::{chunking_invariant, feed, tool_specs};

    fn tools(names: &[&str]) -> Option<Vec<ToolSpec>> {
        Some(tool_specs(names))
    }

    /// Stray text inside a tool block does not swallow the calls after it: the tool
    /// parser resynchronises at the grammar's next payload marker and records only the
    /// junk between (SMG has a regression test for exactly this), under every chunking.
    #[test]
    fn stray_text_resynchronises_at_the_next_call() {
        let w = r#"{"name": "get_weather", "arguments": {"city": "A"}}"#;
        let q = r#"{"name": "search", "arguments": {"query": "q"}}"#;
        let dsml_call = |name: &str, body: &str| {
            format!("<｜DSML｜invoke name=\"{name}\">\n{body}</｜DSML｜invoke>\n")
        };
        let q_param = "<｜DSML｜parameter name=\"query\" string=\"true\">q</｜DSML｜parameter>\n";
        let kimi_q = "<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{\"query\": \"q\"}<|tool_call_end|>";
        type Case<'a> = (&'a str, String, Vec<(&'a str, &'a str)>, Vec<&'a str>);
        let cases: Vec<Case> = vec![
            (
                "qwen",
                format!("<tool_call>\n{w}, {q}\n</tool_call>"),
                vec![
                    ("get_weather", r#"{"city": "A"}"#),
                    ("search", r#"{"query": "q"}"#),
                ],
                vec![", "],
            ),
            (
                "qwen",
                format!("<tool_call>\n{w} junk; {q} tail\n</tool_call>"),
                vec![
                    ("get_weather", r#"{"city": "A"}"#),
                    ("search", r#"{"query": "q"}"#),
                ],
                vec!["junk; ", "tail\n"],
            ),
            (
                "deepseek-v32",
                format!(
                    "\n\n<｜DSML｜function_calls>\n{}{}</｜DSML｜function_calls>",
                    dsml_call("", q_param),
                    dsml_call("search", q_param)
                ),
                vec![("search", r#"{"query": "q"}"#)],
                vec![],
            ),
            (
                "deepseek-v32",
                format!(
                    "\n\n<｜DSML｜function_calls>\nnoise\n{}</｜DSML｜function_calls>",
                    dsml_call("search", q_param)
                ),
                vec![("search", r#"{"query": "q"}"#)],
                vec!["noise\n"],
            ),
            (
                "kimi_k2",
                format!("<|tool_calls_section_begin|>noise {kimi_q}<|tool_calls_section_end|>"),
                vec![("search", r#"{"query": "q"}"#)],
                vec!["noise "],
            ),
        ];
        for (dialect, text, want, stray) in cases {
            let cfg = config(dialect, None, None);
            let (r, rejected) = crate::testutil::chunking_invariant_rejected(&cfg, &text, false);
            assert_eq!(crate::testutil::calls(&r), want, "{dialect}: {text:?}");
            let got: Vec<&str> = rejected
                .iter()
                .filter(|c| c.reason == crate::RejectReason::StrayText)
                .map(|c| c.raw.as_str())
                .collect();
            assert_eq!(got, stray, "{dialect}: {text:?}");
        }
    }

    /// Reasoning tags are protocol: a leading `<think>` after whitespace (reasoning
    /// begun implicitly) and a repeated `<think>` while reasoning never reach
    /// `reasoning_content`; whitespace alone before the tag goes with it.
    #[test]
    fn leftover_reasoning_tags_are_dropped() {
        let cfg = config("qwen", Some("qwen3"), None);
        for (text, reasoning, content) in [
            ("\n<think>plan</think>answer", "plan", "answer"),
            ("  \n <think>\nplan</think>answer", "\nplan", "answer"),
            ("<think>a<think>b</think>c", "ab", "c"),
            ("a<think>b</think>c", "ab", "c"),
            // Not only whitespace before it: an explicit open tag inside reasoning.
            ("x <think>y</think>z", "x y", "z"),
            // Whitespace without a tag stays reasoning.
            ("  plan</think>answer", "  plan", "answer"),
        ] {
            let r = assert_chunking_invariant(&cfg, text);
            assert_eq!(r.reasoning_content.as_deref(), Some(reasoning), "{text:?}");
            assert_eq!(r.content.as_deref(), Some(content), "{text:?}");
        }
        // From plain text (thinking off), an explicit block still opens once.
        let cfg = config("qwen", Some("qwen3"), Some(false));
        let r = assert_chunking_invariant(&cfg, "hi<think>a<think>b</think>c");
        assert_eq!(r.content.as_deref(), Some("hiabc"));
    }

    /// At the end of input a held proper prefix of a value's close tag is markup cut
    /// short, not data: it stays out of the value (string, typed or JSON) and is
    /// recorded as stray block text, the block as cut — for every family whose values
    /// end at a close tag, under every chunking.
    #[test]
    fn held_close_prefix_at_end_is_markup() {
        let cases = [
            (
                "qwen3coder",
                "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</param",
                r#"{"city": "Paris"}"#,
                "</param",
            ),
            (
                "glm47",
                "<tool_call>get_weather\n<arg_key>city</arg_key><arg_value>Paris</arg_va",
                r#"{"city": "Paris"}"#,
                "</arg_va",
            ),
            (
                "deepseek-v32",
                "\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜para",
                r#"{"city": "Paris"}"#,
                "</｜DSML｜para",
            ),
            (
                "deepseek-v4",
                "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜",
                r#"{"days": 3}"#,
                "</｜DSML｜",
            ),
        ];
        for (dialect, text, args, held) in cases {
            let cfg = config(dialect, None, None);
            let (r, rejected) = crate::testutil::chunking_invariant_rejected(&cfg, text, false);
            assert_eq!(
                crate::testutil::calls(&r),
                [("get_weather", args)],
                "{dialect}"
            );
            assert_eq!(r.content, None, "{dialect}");
            let stray: Vec<&str> = rejected.iter().map(|c| c.raw.as_str()).collect();
            assert_eq!(
                stray,
                [held],
                "{dialect}: the cut tag is in the diagnostics"
            );
            let mut p = ResponseParser::new(&cfg).unwrap();
            p.parse_complete(text, None).unwrap();
            assert!(p.ended_in_tool_block(), "{dialect}");
        }
    }

    /// Markers of several special tokens also open and close blocks as engines decode
    /// them with `spaces_between_special_tokens` (one space between the tokens), under
    /// every chunking; other whitespace is not a marker, and a spaced open tag of a
    /// block abandoned at the end of input goes back as written.
    #[test]
    fn spaced_special_token_markers() {
        let cfg = config("internlm", None, None);
        let env = r#"{"name": "get_weather", "parameters": {"city": "Paris"}}"#;
        for open in ["<|action_start|><|plugin|>", "<|action_start|> <|plugin|>"] {
            let text = format!("Sure. {open} \n{env} <|action_end|> done");
            let r = assert_chunking_invariant(&cfg, &text);
            assert_eq!(
                crate::testutil::calls(&r),
                [("get_weather", r#"{"city": "Paris"}"#)],
                "{text:?}"
            );
            assert_eq!(r.content.as_deref(), Some("Sure.  done"));
        }
        for prose in [
            "<|action_start|>  <|plugin|>",
            "<|action_start|>\n<|plugin|>",
        ] {
            let text = format!("{prose}{env}<|action_end|>");
            let r = assert_chunking_invariant(&cfg, &text);
            assert!(r.tool_calls.is_empty(), "{prose:?}");
        }
        // llama3 has no close tag: an open tag followed by no envelope is abandoned and
        // given back in the spelling it was written in.
        let mut d = (*registry::tool_dialect("llama3").unwrap()).clone();
        d.name = "spaced-test-llama".into();
        d.aliases.clear();
        d.open = "<|python_tag|><|x|>".into();
        registry::register_tool_dialect(d, true).unwrap();
        let cfg = config("spaced-test-llama", None, None);
        let r = assert_chunking_invariant(&cfg, "a <|python_tag|> <|x|> plain words");
        assert_eq!(
            r.content.as_deref(),
            Some("a <|python_tag|> <|x|> plain words")
        );
        assert!(r.tool_calls.is_empty());
    }

    /// The start rule reads the flag the reasoning dialect declares: DeepSeek's
    /// template reads `thinking` (then `enable_thinking`); Qwen3's reads
    /// `enable_thinking`, from the argument or from the kwargs.
    #[test]
    fn thinking_flags_switch_the_start_rule() {
        let text = "plan</think>answer";
        let parse = |reasoning: &str, kwargs: serde_json::Value, arg: Option<bool>| {
            let cfg = ParserConfig {
                reasoning_parser: Some(reasoning.into()),
                enable_thinking: arg,
                chat_template_kwargs: kwargs.as_object().cloned(),
                ..Default::default()
            };
            let m = ResponseParser::new(&cfg)
                .unwrap()
                .parse_complete(text, None)
                .unwrap();
            (m.reasoning_content, m.content)
        };
        let thought = (Some("plan".to_string()), Some("answer".to_string()));
        let plain = (None, Some(text.to_string()));
        assert_eq!(
            parse("deepseek-v3", serde_json::json!({"thinking": true}), None),
            thought
        );
        assert_eq!(
            parse(
                "deepseek-v3",
                serde_json::json!({"enable_thinking": true}),
                None
            ),
            thought
        );
        assert_eq!(parse("deepseek-v3", serde_json::json!({}), None), plain);
        assert_eq!(
            parse("deepseek-v3", serde_json::json!({}), Some(true)),
            thought
        );
        // The first flag the request carries decides; the explicit switch over all.
        let both = serde_json::json!({"thinking": false, "enable_thinking": true});
        assert_eq!(parse("deepseek-v3", both, None), plain);
        assert_eq!(
            parse(
                "deepseek-v3",
                serde_json::json!({"thinking": false}),
                Some(true)
            ),
            thought
        );
        assert_eq!(parse("qwen3", serde_json::json!({}), None), thought);
        assert_eq!(
            parse("qwen3", serde_json::json!({"enable_thinking": false}), None).0,
            None
        );
        // Qwen3 does not read `thinking`.
        assert_eq!(
            parse("qwen3", serde_json::json!({"thinking": false}), None),
            thought
        );
        // The explicit switch wins over the kwarg.
        assert_eq!(
            parse(
                "qwen3",
                serde_json::json!({"enable_thinking": false}),
                Some(true)
            ),
            thought
        );
    }

    /// Only an XML-family grammar reads schemas; Harmony never does, whatever tool
    /// parser is named beside it; an unknown name fails as building the parser does.
    #[test]
    fn uses_tool_schemas_follows_the_grammar() {
        for (tool, response, want) in [
            ("qwen3coder", None, true),
            ("glm47", None, true),
            ("qwen", None, false),
            ("deepseek-v32", None, false),
            ("qwen3coder", Some("gpt-oss"), false),
            ("qwen3coder", Some("default"), true),
        ] {
            let c = ParserConfig {
                response_parser: response.map(Into::into),
                ..config(tool, None, None)
            };
            assert_eq!(c.uses_tool_schemas().unwrap(), want, "{tool} {response:?}");
        }
        assert!(config("no-such-parser", None, None)
            .uses_tool_schemas()
            .is_err());
    }

    fn config(tool: &str, reasoning: Option<&str>, thinking: Option<bool>) -> ParserConfig {
        ParserConfig {
            tool_parser: Some(tool.into()),
            reasoning_parser: reasoning.map(Into::into),
            tools: tools(&["get_weather", "search"]),
            enable_thinking: thinking,
            ..Default::default()
        }
    }

    /// Whole, every character, and every single cut point give the same result.
    fn assert_chunking_invariant(cfg: &ParserConfig, text: &str) -> ParsedResponse {
        chunking_invariant(cfg, text, false)
    }

    const QWEN: &str = "<think>\nplan</think>\n\nHi.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"北京\"}}\n</tool_call>\n<tool_call>\n{\"arguments\": {\"q\": \"x\"}, \"name\": \"search\"}\n</tool_call>\nBye";

    #[test]
    fn qwen_full_response_under_every_chunking() {
        let r = assert_chunking_invariant(&config("qwen", Some("qwen3"), None), QWEN);
        assert_eq!(r.reasoning_content.as_deref(), Some("\nplan"));
        assert_eq!(r.content.as_deref(), Some("\n\nHi.\nBye"));
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].function.arguments, "{\"city\": \"北京\"}");
        assert_eq!(r.tool_calls[1].function.name, "search");
        assert_eq!(r.tool_calls[1].function.arguments, "{\"q\": \"x\"}");
    }

    #[test]
    fn stream_chunk_into_appends_without_merging_into_earlier_chunks() {
        let cfg = config("qwen", None, None);
        let mut p = ResponseParser::new(&cfg).unwrap();
        let mut out = Vec::new();
        p.stream_chunk_into("Hello, ", None, false, &mut out)
            .unwrap();
        p.stream_chunk_into("world", None, false, &mut out).unwrap();
        // Two chunks, two deltas: a chunk's deltas never fold into an earlier chunk's.
        let texts: Vec<_> = out.iter().map(|(d, _)| d.content.as_deref()).collect();
        assert_eq!(texts, [Some("Hello, "), Some("world")]);
        // A reused buffer gives, chunk by chunk, what `stream_chunk` returns.
        let (mut a, mut b) = (
            ResponseParser::new(&cfg).unwrap(),
            ResponseParser::new(&cfg).unwrap(),
        );
        let mut buf = Vec::new();
        let chunks = [
            "a<tool",
            "_call>{\"name\": \"search\", \"arg",
            "uments\": {}}</tool_call>b",
        ];
        for (i, c) in chunks.iter().enumerate() {
            buf.clear();
            b.stream_chunk_into(c, None, false, &mut buf).unwrap();
            let mut want = a.stream_chunk(c, None, false).unwrap();
            // Call ids are random per parser.
            for (x, y) in buf.iter_mut().zip(&mut want) {
                for (p, q) in x.0.tool_calls.iter_mut().zip(&mut y.0.tool_calls) {
                    assert_eq!(p.id.is_some(), q.id.take().is_some());
                    p.id = None;
                }
            }
            assert_eq!(buf, want, "chunk {i}");
        }
    }

    #[test]
    fn stream_chunk_into_appends_nothing_on_error() {
        let cfg = ParserConfig {
            max_buffered_bytes: Some(8),
            ..config("qwen", None, None)
        };
        let mut p = ResponseParser::new(&cfg).unwrap();
        let mut out = vec![(DeltaMessage::default(), false)];
        // Arguments before the name are held until the name arrives: over the limit.
        let text = "x<tool_call>{\"arguments\": {\"q\": \"0123456789\"";
        let err = p.stream_chunk_into(text, None, false, &mut out);
        assert!(matches!(err, Err(Error::BufferLimit { .. })), "{err:?}");
        assert_eq!(out.len(), 1, "only what was there before");
        let again = p.stream_chunk_into("rch\"", None, false, &mut out);
        assert!(matches!(again, Err(Error::AlreadyFinished)));
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn channel_order_is_kept_within_one_chunk() {
        let cfg = config("qwen", Some("qwen3"), None);
        let text = "a<tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>b</think>c";
        let items = feed(&cfg, text, &[]);
        let channels: Vec<Channel> = items.iter().map(|(d, _)| d.channel()).collect();
        assert_eq!(
            channels,
            vec![
                Channel::Reasoning,
                Channel::Tool,
                Channel::Reasoning,
                Channel::Content
            ]
        );
        assert!(items
            .iter()
            .all(|(d, f)| *f == (d.channel() == Channel::Tool)));
    }

    #[test]
    fn tool_inside_reasoning_returns_to_reasoning() {
        let cfg = config("qwen", Some("qwen3"), None);
        let text = "think<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": 1}}</tool_call>more</think>answer";
        let r = assert_chunking_invariant(&cfg, text);
        assert_eq!(r.reasoning_content.as_deref(), Some("thinkmore"));
        assert_eq!(r.content.as_deref(), Some("answer"));
        assert_eq!(r.tool_calls.len(), 1);
    }

    #[test]
    fn no_tools_keeps_markup_as_content() {
        let mut cfg = config("qwen", None, None);
        cfg.tools = None;
        let text = "x<tool_call>{\"name\": \"f\"}</tool_call>";
        let r = assert_chunking_invariant(&cfg, text);
        assert_eq!(r.content.as_deref(), Some(text));
        assert!(r.tool_calls.is_empty());
        cfg.tools = tools(&["f"]);
        cfg.tool_choice = ToolChoice::None;
        let r = assert_chunking_invariant(&cfg, text);
        assert_eq!(r.content.as_deref(), Some(text));
    }

    #[test]
    fn thinking_disabled_routes_reasoning_to_content() {
        let cfg = config("qwen", Some("qwen3"), Some(false));
        let r = assert_chunking_invariant(&cfg, "<think>a</think>b");
        assert_eq!(r.content.as_deref(), Some("ab"));
        assert_eq!(r.reasoning_content, None);
        let r = assert_chunking_invariant(&cfg, "plain");
        assert_eq!(r.content.as_deref(), Some("plain"));
    }

    #[test]
    fn start_rules_and_leading_open_tag() {
        let r =
            assert_chunking_invariant(&config("qwen", Some("qwen3"), None), "<think>r</think>c");
        assert_eq!(
            (r.reasoning_content.as_deref(), r.content.as_deref()),
            (Some("r"), Some("c"))
        );
        let r = assert_chunking_invariant(&config("qwen", Some("qwen3"), None), "r</think>c");
        assert_eq!(
            (r.reasoning_content.as_deref(), r.content.as_deref()),
            (Some("r"), Some("c"))
        );
        let r = assert_chunking_invariant(&config("qwen", Some("deepseek-v3"), None), "r</think>c");
        assert_eq!(r.content.as_deref(), Some("r</think>c"));
        let r = assert_chunking_invariant(
            &config("qwen", Some("deepseek-v3"), Some(true)),
            "r</think>c",
        );
        assert_eq!(r.reasoning_content.as_deref(), Some("r"));
        // Reasoning only, never closed.
        let r = assert_chunking_invariant(
            &config("qwen", Some("qwen3"), None),
            "<think>still thinking <",
        );
        assert_eq!(r.reasoning_content.as_deref(), Some("still thinking <"));
        assert_eq!(r.content, None);
    }

    #[test]
    fn separator_newlines_between_blocks() {
        let cfg = config("qwen", None, None);
        let call = "<tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>";
        let text = format!("{call}\n\n{call}\n\ntail\n");
        let r = assert_chunking_invariant(&cfg, &text);
        assert_eq!(r.content.as_deref(), Some("\n\ntail\n"));
        assert_eq!(r.tool_calls.len(), 2);
        let text = format!("{call}\n");
        assert_eq!(
            assert_chunking_invariant(&cfg, &text).content.as_deref(),
            Some("\n")
        );
    }

    #[test]
    fn unknown_names_are_recorded_and_indices_stay_contiguous() {
        let cfg = config("qwen", None, None);
        let text = "<tool_call>{\"name\": \"nope\", \"arguments\": {\"a\": 1}}</tool_call><tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>";
        let mut p = ResponseParser::new(&cfg).unwrap();
        let items = p.stream_chunk(text, None, true).unwrap();
        let r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].function.name, "search");
        assert!(items
            .iter()
            .flat_map(|(d, _)| &d.tool_calls)
            .all(|t| t.index == 0));
        assert_eq!(p.rejected_calls().len(), 1);
        assert_eq!(p.rejected_calls()[0].name.as_deref(), Some("nope"));
        assert_eq!(p.rejected_calls()[0].raw, "{\"a\": 1}");
    }

    #[test]
    fn truncated_and_unclosed_blocks() {
        let cfg = config("qwen", None, None);
        let r = assert_chunking_invariant(
            &cfg,
            "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": \"ab",
        );
        assert_eq!(r.tool_calls[0].function.arguments, "{\"q\": \"ab");
        let r = assert_chunking_invariant(
            &cfg,
            "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": 1}}",
        );
        assert_eq!(r.tool_calls[0].function.arguments, "{\"q\": 1}");
        let r = assert_chunking_invariant(&cfg, "<tool_call>{\"name\": \"search\"");
        assert_eq!(r.tool_calls[0].function.arguments, "{}");
        let mut p = ResponseParser::new(&cfg).unwrap();
        p.stream_chunk("<tool_call>{\"name\": \"sea", None, true)
            .unwrap();
        assert!(p.ended_in_tool_block());
    }

    #[test]
    fn protocol_markers_inside_strings_are_data() {
        let cfg = config("qwen", None, None);
        let text = "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": \"</tool_call><tool_call>\"}}</tool_call>";
        let r = assert_chunking_invariant(&cfg, text);
        assert_eq!(
            r.tool_calls[0].function.arguments,
            "{\"q\": \"</tool_call><tool_call>\"}"
        );
    }

    #[test]
    fn llama3_and_internlm() {
        let cfg = config("llama3", None, None);
        let r = assert_chunking_invariant(
            &cfg,
            "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"x\"}} after",
        );
        assert_eq!(r.tool_calls[0].function.arguments, "{\"q\": \"x\"}");
        assert_eq!(r.content.as_deref(), Some(" after"));
        let r = assert_chunking_invariant(&cfg, "<|python_tag|>print(1)");
        assert_eq!(r.content.as_deref(), Some("<|python_tag|>print(1)"));
        assert!(r.tool_calls.is_empty());
        let cfg = config("internlm", Some("intern-s1"), None);
        let r = assert_chunking_invariant(
            &cfg,
            "<think>r</think>ok<|action_start|><|plugin|>\n{\"name\": \"search\", \"parameters\": {\"q\": 2}}<|action_end|>",
        );
        assert_eq!(r.content.as_deref(), Some("ok"));
        assert_eq!(r.tool_calls[0].function.arguments, "{\"q\": 2}");
    }

    #[test]
    fn stray_block_text_is_recorded_not_shown() {
        let cfg = config("qwen", None, None);
        let mut p = ResponseParser::new(&cfg).unwrap();
        let items = p
            .stream_chunk("<tool_call>not json</tool_call>after", None, true)
            .unwrap();
        let r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
        assert_eq!(r.content.as_deref(), Some("after"));
        assert_eq!(p.rejected_calls()[0].raw, "not json");
    }

    #[test]
    fn feeding_after_final_is_an_error() {
        let mut p = ResponseParser::new(&config("qwen", None, None)).unwrap();
        p.stream_chunk("x", None, true).unwrap();
        assert_eq!(
            p.stream_chunk("y", None, false).unwrap_err(),
            Error::AlreadyFinished
        );
    }

    #[test]
    fn reasoning_tokens_count_the_raw_span() {
        let mut cfg = config("qwen", Some("qwen3"), None);
        cfg.reasoning_tag_ids = Some((1, 2));
        let mut p = ResponseParser::new(&cfg).unwrap();
        // <think> a b <tool_call> c </tool_call> </think> d
        p.stream_chunk("", Some(&[1, 10, 11, 20, 12, 21]), false)
            .unwrap();
        p.stream_chunk("", Some(&[2, 13]), true).unwrap();
        assert_eq!(p.reasoning_tokens(), Some(5));
    }

    #[test]
    fn pending_stays_small_while_streaming_a_long_argument() {
        let cfg = config("qwen", None, None);
        let mut p = ResponseParser::new(&cfg).unwrap();
        p.stream_chunk(
            "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": \"",
            None,
            false,
        )
        .unwrap();
        let mut max_pending = 0;
        for _ in 0..100_000 {
            p.stream_chunk("abc<", None, false).unwrap();
            max_pending = max_pending.max(p.pending_len());
        }
        assert!(max_pending < 16, "pending grew to {max_pending}");
    }

    #[test]
    fn long_whitespace_runs_are_not_held() {
        let cfg = config("qwen", None, None);
        let mut p = ResponseParser::new(&cfg).unwrap();
        p.stream_chunk("<tool_call>", None, false).unwrap();
        for _ in 0..10_000 {
            p.stream_chunk(" ", None, false).unwrap();
            assert_eq!(p.pending_len(), 0);
        }
        p.stream_chunk("{\"name\": \"search\"}</tool_call>", None, false)
            .unwrap();
        let mut max_pending = 0;
        for _ in 0..10_000 {
            p.stream_chunk("\n", None, false).unwrap();
            max_pending = max_pending.max(p.pending_len());
        }
        assert!(max_pending <= MAX_SEPARATOR_NEWLINES, "{max_pending}");
    }

    #[test]
    fn abandoned_llama3_block_keeps_its_whitespace() {
        let cfg = config("llama3", None, None);
        let r = assert_chunking_invariant(&cfg, "<|python_tag|>  \n print(1)");
        assert_eq!(r.content.as_deref(), Some("<|python_tag|>  \n print(1)"));
    }
}
