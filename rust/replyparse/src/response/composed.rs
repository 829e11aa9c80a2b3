//! The composed (`default`) response parser: plain / reasoning / tool routing over one
//! pending buffer, for a reasoning dialect and a tool dialect declared as data.
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

use std::borrow::Cow;
use std::sync::Arc;

use crate::calls::RejectedCall;
use crate::config::ParserConfig;
use crate::delta::{Channel, DeltaSink, StreamItem};
use crate::error::{Error, Result};
use crate::registry::{self, ReasoningDialect, ToolDialect};
use crate::request::{ToolPolicy, ToolSpec};
use crate::scan::prefix::TagSet;
use crate::tool::ToolParser;

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

/// The composed (`default`) parser: see the module docs. What it was built with
/// ([`Rules`]) is kept apart from what one response changes ([`State`]); the tool
/// parser holds both for its block.
#[derive(Debug)]
pub(super) struct Composed {
    rules: Rules,
    tool: Option<ToolParser>,
    state: State,
}

/// What a composed parser is built with, set once from the declarations and the
/// request: the armed tags of each mode and the dialects' rules.
#[derive(Debug)]
struct Rules {
    /// The reasoning dialect, if any.
    reasoning: Option<Arc<ReasoningDialect>>,
    /// Every spelling of every kind's open tag (for the newlines between two blocks).
    tool_opens: Vec<String>,
    /// The end of each `DropUntil` rule.
    drop_ends: Vec<String>,
    /// The dialect's payload may stand bare at the start of the content.
    bare_start: bool,
    /// The bare payload has no marker (pythonic lines): a line that begins a call of a
    /// request tool starts it, and another such line may follow it.
    bare_lines: bool,
    /// The tags armed outside reasoning.
    plain: Armed,
    /// `plain` without the reasoning open tags, once a `once` dialect's reasoning closed.
    plain_after: Armed,
    /// The tags armed inside reasoning.
    in_reasoning: Armed,
    /// One reasoning section only (see [`ReasoningDialect::once`]).
    once: bool,
    /// A tool block ends the reasoning (see [`ReasoningDialect::tool_ends_reasoning`]).
    tool_ends_reasoning: bool,
    /// One newline on each side of the reasoning close tag is protocol.
    close_newlines: bool,
    /// `enable_thinking=False`: what the model puts in reasoning is shown as content.
    reasoning_as_content: bool,
}

/// What one response changes: the mode (plain, reasoning or tool, as in the module
/// diagram), the one buffer, and the facts about what was seen that the rules read.
#[derive(Debug)]
struct State {
    /// The tag (index in the armed set the block was opened from) that opened the
    /// current tool block: an abandoned block gives back that spelling. `usize::MAX`
    /// for a bare block, which has none.
    opened_by: usize,
    /// A bare line's call just closed: the next line may be another call.
    bare_next: bool,
    /// At the start of the content channel (of the output, or right after reasoning):
    /// nothing shown as content yet.
    content_start: bool,
    /// The armed set the current tool block's open tag was found in.
    opened_in: ArmedSet,
    /// The reasoning closed (at least once).
    closed_once: bool,
    /// A newline right after the close tag is protocol: dropped when it comes.
    eat_newline: bool,
    /// Text put before the output (an inline reasoning dialect), until it is written.
    inline_prefix: Option<String>,
    /// Nothing has been emitted or consumed yet (a stray leading close tag is dropped).
    nothing_yet: bool,
    /// Plain, reasoning or tool: the three modes of the module diagram.
    mode: Mode,
    /// The one buffer (see the module docs).
    pending: String,
    /// A tool block just closed: leading newlines are separators if the next tool
    /// open tag follows them.
    after_block: bool,
    /// Reasoning began implicitly and nothing has been emitted: a leading open tag is
    /// dropped.
    leading_open: bool,
    /// The final chunk was fed.
    finished: bool,
    /// The reasoning token count, when the tag ids are known.
    tokens: Option<TokenCounter>,
    /// The input ended inside a tool block.
    ended_in_tool_block: bool,
}

impl Composed {
    /// Builds a parser from registry names and the request's tool policy.
    pub(super) fn new(config: &ParserConfig) -> Result<Self> {
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
        let state = State {
            opened_by: 0,
            bare_next: false,
            content_start: !starts,
            opened_in: ArmedSet::Plain,
            closed_once: false,
            eat_newline: false,
            inline_prefix: r.and_then(|r| r.inline_prefix.clone()),
            nothing_yet: true,
            mode: if starts { Mode::Reasoning } else { Mode::Plain },
            pending: String::new(),
            after_block: false,
            leading_open: starts,
            finished: false,
            tokens: reasoning_tag_ids.map(|(open, close)| TokenCounter {
                open,
                close,
                inside: starts,
                count: 0,
            }),
            ended_in_tool_block: false,
        };
        Composed {
            rules: Rules {
                tool_opens,
                drop_ends,
                bare_start,
                bare_lines,
                plain,
                plain_after,
                in_reasoning,
                once: r.is_some_and(|r| r.once),
                tool_ends_reasoning: r.is_some_and(|r| r.tool_ends_reasoning),
                close_newlines: r.is_some_and(|r| r.close_newlines),
                reasoning_as_content: enable_thinking == Some(false),
                reasoning,
            },
            tool,
            state,
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
        if self.state.finished {
            return Err(Error::AlreadyFinished);
        }
        if let (Some(tc), Some(ids)) = (self.state.tokens.as_mut(), token_ids) {
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
            if let Some(prefix) = self.state.inline_prefix.take() {
                sink.text(Channel::Content, &prefix);
            }
        }
        if self.state.pending.is_empty() {
            // Nothing held (the usual case): parse the chunk where it is and keep only
            // what it leaves unconsumed, instead of copying all of it into `pending`.
            let used = self.run(text, sink, final_);
            self.state.pending.push_str(&text[used..]);
        } else {
            let mut pending = std::mem::take(&mut self.state.pending);
            pending.push_str(text);
            let used = self.run(&pending, sink, final_);
            pending.drain(..used);
            self.state.pending = pending;
        }
        if final_ {
            self.state.finished = true;
            self.state.pending.clear();
        }
        Ok(())
    }

    /// Parses `input` (the held text followed by the new chunk) and returns how much of
    /// it was consumed; the rest is held for the next chunk.
    fn run(&mut self, input: &str, sink: &mut DeltaSink, final_: bool) -> usize {
        let mut pos = 0;
        loop {
            match self.state.mode {
                Mode::Tool { from_reasoning } => {
                    let tool = self.tool.as_mut().expect("tool mode implies a tool parser");
                    let used = tool.feed_tool_block(&input[pos..], sink, final_);
                    pos += used;
                    if !tool.block_closed() {
                        break;
                    }
                    let abandoned = tool.abandoned();
                    self.state.ended_in_tool_block |= tool.truncated();
                    if abandoned {
                        let ch = text_channel(from_reasoning, self.rules.reasoning_as_content);
                        // The block's own spelling of the open tag goes back (a bare
                        // block has none), then what the block gives back.
                        let armed = match self.state.opened_in {
                            ArmedSet::Plain => &self.rules.plain,
                            ArmedSet::PlainAfter => &self.rules.plain_after,
                            ArmedSet::Reasoning => &self.rules.in_reasoning,
                        };
                        if self.state.opened_by != usize::MAX {
                            sink.text(ch, armed.tags.text(self.state.opened_by));
                        }
                        sink.text(ch, tool.given_back());
                    }
                    // A call ends the reasoning where the dialect's reference parser
                    // says so ("implicit end"); otherwise the block returns to where it
                    // was entered from.
                    let ended = from_reasoning && !abandoned && self.rules.tool_ends_reasoning;
                    self.state.mode = if from_reasoning && !ended {
                        Mode::Reasoning
                    } else {
                        Mode::Plain
                    };
                    if ended {
                        self.state.closed_once = true;
                    }
                    self.state.after_block = !abandoned;
                    self.state.bare_next =
                        self.rules.bare_lines && !abandoned && self.state.opened_by == usize::MAX;
                }
                Mode::Plain | Mode::Reasoning => {
                    let reasoning = self.state.mode == Mode::Reasoning;
                    let text = &input[pos..];
                    if self.state.leading_open {
                        // Reasoning began implicitly: an open tag the model writes anyway,
                        // after nothing but whitespace, is the protocol's tag (Kimi K2
                        // Thinking writes "\n<think>"), so it and that whitespace go; so
                        // does a start label (Gemma 4's `thought\n`).
                        let after = text.trim_start_matches([' ', '\t', '\n', '\r']);
                        let r = self.rules.reasoning.as_ref();
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
                        self.state.leading_open = false;
                        // The longest spelling that matches.
                        if let Some(o) = opens()
                            .filter(|o| !o.is_empty() && after.starts_with(o))
                            .max_by_key(|o| o.len())
                        {
                            pos += text.len() - after.len() + o.len();
                            continue;
                        }
                    }
                    if self.state.eat_newline && !reasoning {
                        if text.is_empty() && !final_ {
                            break;
                        }
                        self.state.eat_newline = false;
                        if text.starts_with('\n') {
                            pos += 1;
                            continue;
                        }
                    }
                    if self.state.bare_next && !reasoning {
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
                                self.state.opened_by = usize::MAX;
                                self.state.after_block = false;
                                self.state.mode = Mode::Tool {
                                    from_reasoning: false,
                                };
                                continue;
                            }
                            // The block ended: this line and the rest are content.
                            Some(false) => self.state.bare_next = false,
                        }
                    }
                    if self.state.after_block {
                        match self.separator(text, final_) {
                            Separator::Hold => break,
                            Separator::Drop(n) => pos += n,
                            Separator::Text => {}
                        }
                        self.state.after_block = false;
                        continue;
                    }
                    if self.state.content_start && !reasoning {
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
                                self.state.opened_by = usize::MAX;
                                self.state.content_start = false;
                                self.state.mode = Mode::Tool {
                                    from_reasoning: false,
                                };
                                continue;
                            }
                            Bare::No => self.state.content_start = false,
                        }
                    }
                    let which = if reasoning {
                        ArmedSet::Reasoning
                    } else if self.rules.once && self.state.closed_once {
                        ArmedSet::PlainAfter
                    } else {
                        ArmedSet::Plain
                    };
                    let armed = match which {
                        ArmedSet::Plain => &self.rules.plain,
                        ArmedSet::PlainAfter => &self.rules.plain_after,
                        ArmedSet::Reasoning => &self.rules.in_reasoning,
                    };
                    let ch = text_channel(reasoning, self.rules.reasoning_as_content);
                    match armed.tags.find_or_held(text, final_) {
                        Ok(m) => {
                            let role = armed.roles[m.tag];
                            // The protocol newline before a close tag (Step-3.5) goes.
                            let before = &text[..m.start];
                            let before =
                                if role == Role::ReasoningClose && self.rules.close_newlines {
                                    before.strip_suffix('\n').unwrap_or(before)
                                } else {
                                    before
                                };
                            sink.text(ch, before);
                            if m.start > 0 && !reasoning {
                                self.state.content_start = false;
                            }
                            let first = self.state.nothing_yet && before.trim().is_empty();
                            self.state.nothing_yet = false;
                            pos += m.end;
                            match role {
                                Role::ReasoningOpen => self.state.mode = Mode::Reasoning,
                                Role::ReasoningClose => {
                                    self.state.mode = Mode::Plain;
                                    self.state.content_start = true;
                                    self.state.closed_once = true;
                                    self.state.eat_newline = self.rules.close_newlines;
                                }
                                Role::StrayClose => {
                                    if !first {
                                        sink.text(ch, &text[m.start..m.end]);
                                    }
                                }
                                Role::ToolOpen(kind) => {
                                    self.state.opened_in = which;
                                    self.state.opened_by = m.tag;
                                    self.state.content_start = false;
                                    self.tool.as_mut().expect("armed").start_block_of(kind);
                                    self.state.mode = Mode::Tool {
                                        from_reasoning: reasoning,
                                    };
                                }
                                Role::WrapperOpen => self.state.mode = Mode::Plain,
                                Role::Drop => {}
                                Role::DropUntil(rule) => {
                                    match drop_until(
                                        &text[m.end..],
                                        &self.rules.drop_ends[rule],
                                        final_,
                                    ) {
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
                                && self.rules.close_newlines
                                && !final_
                                && text[..text.len() - keep].ends_with('\n')
                            {
                                keep += 1;
                            }
                            sink.text(ch, &text[..text.len() - keep]);
                            if text.len() > keep {
                                self.state.nothing_yet = false;
                                if !reasoning {
                                    self.state.content_start = false;
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
        if !self.rules.bare_start {
            return Bare::No;
        }
        let marker = self
            .tool
            .as_ref()
            .and_then(|t| t.payload_marker())
            .unwrap_or("");
        let lead = text.trim_start_matches([' ', '\t', '\n', '\r']);
        // An armed tag here (xLAM's `[TOOL_CALLS]` starts like its array) is the tag's.
        match self.rules.plain.tags.find_or_held(lead, final_) {
            Ok(m) if m.start == 0 => return Bare::No,
            Err(keep) if keep == lead.len() && keep > 0 && !final_ => return Bare::Hold,
            _ => {}
        }
        if marker.is_empty() {
            if !self.rules.bare_lines {
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
        if nl == 0 || nl > MAX_SEPARATOR_NEWLINES || self.rules.tool_opens.is_empty() {
            return Separator::Text;
        }
        // Any kind of block's open tag after the newlines makes them separators.
        let mut hold = false;
        for open in &self.rules.tool_opens {
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
        self.state.tokens.as_ref().map(|t| t.count)
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
        self.state.ended_in_tool_block
    }

    /// Bytes currently held back (a tag prefix, or unconsumed tool-block text).
    pub fn pending_len(&self) -> usize {
        self.state.pending.len()
    }

    pub(super) fn buffered_bytes(&self) -> usize {
        self.state.pending.len() + self.tool.as_ref().map_or(0, |t| t.buffered_bytes())
    }

    /// Refuses further chunks after an error the caller must see (buffer limit).
    pub(super) fn finish_after_error(&mut self) {
        self.state.finished = true;
    }

    pub fn is_finished(&self) -> bool {
        self.state.finished
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
pub(super) const MAX_SEPARATOR_NEWLINES: usize = 64;

enum Separator {
    Hold,
    Drop(usize),
    Text,
}
