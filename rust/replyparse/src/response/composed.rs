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
//! Those three modes are [`Mode`]'s variants, and each holds what only it needs: in
//! plain text and reasoning, the wait to decide on entering it before the ordinary tag
//! search ([`PlainAt`], [`ReasoningAt`]); in a tool block, how it was opened
//! ([`Opened`]). A response starts in `Sep(ResponseStart)` or in `LeadingOpen`:
//!
//! ```text
//! plain      Sep(ResponseStart) -> Start { fresh: true }
//!            Start { fresh } -> Text                 or a bare payload: tool
//!            Sep(AfterClose) -> Start { fresh: false }  a reasoning close enters it
//!            BareNext -> AfterBlock                  or the next bare line: tool
//!            AfterBlock -> Sep(AfterBlocks) -> Text  entered when a block closes
//!            Unopened -> AfterBlock | Text         a payload without its open tag
//! reasoning  LeadingOpen -> AfterOpen -> Text        reasoning began implicitly
//!            AfterOpen -> Text                       entered at an open tag
//!            AfterBlock -> Text                      entered when a block closes
//! tool       Bare | Tag { set, tag }
//! ```
//!
//! The dialects' declared separators ([`ReasoningSeparators`], [`ToolSeparators`]) are
//! dropped at their positions: those after a tag or at the start by the `Sep` and
//! `AfterOpen` waits (and the between-blocks check of `AfterBlock`), those before a tag
//! as part of the tag, armed with each separator in front of it (`\n</think>`,
//! `\n\n<tool_call>`), so the tag search finds them where it finds the tag.
//!
//! `pending` is the only buffer: in plain and reasoning modes it holds at most a proper
//! prefix of an armed tag, or what one of the waits above holds (a proper prefix of a
//! declared separator, with the next open tag after a block; undeclared separator
//! newlines after a block, bounded by [`MAX_SEPARATOR_NEWLINES`]; a payload written
//! without its block's open tag, bounded by [`UnopenedRule::bound`], searched once and
//! read whole once its end arrives); in tool mode it
//! holds what the tool parser has not consumed yet. Every byte is therefore searched once, and the
//! per-chunk work is proportional to the new text plus one tag length.

use std::borrow::Cow;
use std::sync::Arc;

use crate::calls::{CallNote, RejectedCall};
use crate::config::ParserConfig;
use crate::delta::{Channel, DeltaSink, StreamItem};
use crate::dialect::{CallsInReasoning, ReasoningSeparators, ToolSeparators, UNOPENED_MAX};
use crate::error::{Error, Result};
use crate::registry::{self, ReasoningDialect, ToolDialect};
use crate::request::ToolPolicy;
use crate::scan::lex::{trim_ws, ws_len};
use crate::scan::prefix::{TagMatch, TagSet};
use crate::scan::special::SpecialTokens;
use crate::scan::tokens::{split_chunk, MarkerIds, MarkerSpans, Segment};
use crate::tool::{ToolParser, Unopened};
use crate::toolset::{RequestTools, ToolSet};

use super::newlines::NewlineRecovery;

/// Plain, reasoning or tool: the three modes of the module diagram, each with the state
/// only it needs, so that a combination no response reaches cannot be written down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Outside reasoning and tool blocks: text is content.
    Plain(PlainAt),
    /// Inside reasoning: text is reasoning (content with thinking disabled).
    Reasoning(ReasoningAt),
    /// Inside a tool block, opened as this says; the tool parser holds the block.
    Tool(Opened),
}

/// Where plain text is: a wait that must be decided before the tag search, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlainAt {
    /// The start of the content channel, nothing shown as content yet: of the output
    /// (`fresh`: nothing was emitted or consumed at all, so a stray reasoning close tag
    /// here is dropped) or right after reasoning closed. A bare payload may start here,
    /// after whitespace; whitespace is content whatever follows, so it is shown as it
    /// comes and the state stays ([`Composed::on_content_start`]).
    Start {
        /// Nothing but whitespace emitted, nothing consumed (the output's start).
        fresh: bool,
    },
    /// A declared separator may come here ([`SepAt`]): the longest that does is
    /// dropped; then the state that position leads to.
    Sep(SepAt),
    /// A bare line's call just closed (a marker-less lines dialect): the next line may
    /// be another call; then [`PlainAt::AfterBlock`].
    BareNext,
    /// A tool block just closed: newlines are separators if the next tool open tag
    /// follows them.
    AfterBlock,
    /// Nothing to decide: the tag search.
    Text,
    /// A payload written without its block's open tag began (the dialect's
    /// [`unopened_block`](ToolDialect::unopened_block)): the text from its first byte is
    /// held until its end shows whether it is a block ([`Composed::on_unopened`]). No
    /// end starts in the first `searched` bytes.
    Unopened {
        /// Held bytes already searched.
        searched: usize,
    },
}

/// Where reasoning text is: a wait that must be decided before the tag search, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReasoningAt {
    /// Reasoning began implicitly and nothing came yet: an open tag (or start label)
    /// the model writes anyway, after whitespace only, is dropped with that whitespace.
    LeadingOpen,
    /// Reasoning just began (at an open tag, or implicitly): a declared `after_open`
    /// separator is dropped if it comes.
    AfterOpen,
    /// A tool block entered from reasoning just closed, as [`PlainAt::AfterBlock`].
    AfterBlock,
    /// Nothing to decide: the tag search.
    Text,
}

/// A position in plain text where a declared separator may come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SepAt {
    /// The start of a response that starts outside reasoning (`response_start`); then
    /// [`PlainAt::Start`] with `fresh`.
    ResponseStart,
    /// Right after the reasoning close tag (`after_close`); then [`PlainAt::Start`].
    AfterClose,
    /// Right after a run of tool blocks (`after_blocks`); then [`PlainAt::Text`].
    AfterBlocks,
}

/// How the current tool block was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opened {
    /// A bare payload (no open tag), always from plain text.
    Bare,
    /// An open tag: the one at index `tag` of the armed set `set`. An abandoned block
    /// gives back that spelling, to the channel of the mode it was found in.
    Tag {
        /// The armed set the tag was found in (and so the mode the block returns to).
        set: ArmedSet,
        /// The tag's index in that set.
        tag: usize,
    },
}

/// What one state's handler did with the text it was given (the rest of the input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Consumed this many bytes; the state (possibly a new one) goes on with the rest.
    Next(usize),
    /// Consumed this many bytes; the rest is held until the next chunk.
    Wait(usize),
}

/// What an armed tag does when found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Enters reasoning (inside reasoning: dropped, the mode stays).
    ReasoningOpen,
    /// Leaves reasoning.
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
    /// A payload's open text written without the block's open tag: the held text
    /// starts there ([`PlainAt::Unopened`]).
    Unopened,
}

/// Which armed set a tag was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArmedSet {
    /// Plain text ([`Rules::plain`]).
    Plain,
    /// Plain text after a `once` dialect's reasoning closed ([`Rules::plain_after`]).
    PlainAfter,
    /// Reasoning ([`Rules::in_reasoning`]).
    Reasoning,
}

/// Whether a bare payload starts at the start of the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bare {
    /// It starts here.
    Start,
    /// Not known yet: hold the text.
    Hold,
    /// It does not: the text is ordinary plain text.
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

/// The dialects' content wrappers and dropped markup, armed in every mode, and the end
/// of each `DropUntil` rule. They are the dialect's protocol whether or not the request
/// arms tool calls; the reasoning dialect's own are added (a reasoning parser used
/// without a tool parser still removes them).
fn markup<'a>(
    tool: Option<&'a ToolDialect>,
    reasoning: Option<&'a ReasoningDialect>,
) -> (Vec<(Option<&'a str>, Role)>, Vec<String>) {
    let mut markup: Vec<(Option<&str>, Role)> = Vec::new();
    let mut drop_ends: Vec<String> = Vec::new();
    let wrappers = tool
        .iter()
        .flat_map(|d| d.content_wrappers.iter())
        .chain(reasoning.iter().flat_map(|r| r.content_wrappers.iter()));
    for w in wrappers {
        markup.push((Some(&w.open), Role::WrapperOpen));
        markup.push((Some(&w.close), Role::Drop));
    }
    let drops = tool
        .iter()
        .flat_map(|d| d.drop_markup.iter())
        .chain(reasoning.iter().flat_map(|r| r.drop_markup.iter()));
    for m in drops {
        if let Some(t) = &m.tag {
            markup.push((Some(t), Role::Drop));
        }
        if let (Some(p), Some(e)) = (&m.prefix, &m.end) {
            markup.push((Some(p), Role::DropUntil(drop_ends.len())));
            drop_ends.push(e.clone());
        }
    }
    (markup, drop_ends)
}

/// [`Rules::between_blocks`]: each open tag alone, and after each declared
/// `between_blocks` separator, with the separator's length.
fn between_candidates(seps: &[String], opens: &[String]) -> Vec<(String, usize)> {
    let mut cands: Vec<(String, usize)> = opens.iter().map(|o| (o.clone(), 0)).collect();
    for s in seps {
        cands.extend(opens.iter().map(|o| (format!("{s}{o}"), s.len())));
    }
    cands
}

/// [`Rules::start_ws_keep`] for the tags armed in plain text: the most leading
/// whitespace of a tag, `None` if a tag is whitespace only.
fn start_ws_keep(tags: &TagSet) -> Option<usize> {
    (0..tags.len()).try_fold(0, |keep, i| {
        let tag = tags.text(i);
        let ws = ws_len(tag);
        (ws < tag.len()).then_some(keep.max(ws))
    })
}

/// The open tags with a separator in front (`sep_opens`, each with its kind of block),
/// then the open text of a payload written without its open tag, if armed: the open
/// tags armed in plain text only.
fn sep_open_roles<'a>(
    sep_opens: &'a [(String, usize)],
    unopened: Option<&'a UnopenedRule>,
) -> Vec<(Option<&'a str>, Role)> {
    sep_opens
        .iter()
        .map(|(o, k)| (Some(o.as_str()), Role::ToolOpen(*k)))
        .chain(unopened.map(|u| (Some(u.open.as_str()), Role::Unopened)))
        .collect()
}

/// The tool open tags armed inside reasoning: none where the reasoning dialect says
/// calls there are drafts (reasoning text), else all of them.
fn reasoning_tool_opens<'a, 'b>(
    reasoning: Option<&ReasoningDialect>,
    opens: &'b [(Option<&'a str>, Role)],
) -> &'b [(Option<&'a str>, Role)] {
    if reasoning.is_some_and(|r| r.calls_in_reasoning == CallsInReasoning::Draft) {
        &[]
    } else {
        opens
    }
}

/// The tags armed in one mode, with their roles in the same order.
#[derive(Debug)]
struct Armed {
    /// The tags, searched together.
    tags: Arc<TagSet>,
    /// What each tag does, by its index in `tags`.
    roles: Vec<Role>,
    /// Where each tag's marker-token pieces are ([`MarkerIds::pieces`]), by its index in
    /// `tags`; empty when no marker token ids are known.
    pieces: Vec<Vec<(usize, usize)>>,
}

impl Armed {
    /// The set of the non-empty tags among `entries`, with their roles.
    fn new(entries: &[(Option<&str>, Role)]) -> Self {
        let live: Vec<(&str, Role)> = entries
            .iter()
            .filter_map(|(t, r)| t.filter(|t| !t.is_empty()).map(|t| (t, *r)))
            .collect();
        Armed {
            tags: TagSet::shared(&live.iter().map(|(t, _)| *t).collect::<Vec<_>>()),
            roles: live.iter().map(|(_, r)| *r).collect(),
            pieces: Vec::new(),
        }
    }

    /// Finds each tag's marker-token pieces among `ids`.
    fn set_pieces(&mut self, ids: &MarkerIds) {
        self.pieces = (0..self.tags.len())
            .map(|i| ids.pieces(self.tags.text(i)))
            .collect();
    }

    /// Whether the tag `m` found at offset `at` of the response is the marker (see
    /// [`crate::scan::tokens`]).
    fn is_marker(&self, m: &TagMatch, at: u64, spans: &MarkerSpans) -> bool {
        self.pieces
            .get(m.tag)
            .is_none_or(|p| spans.is_marker(at + m.start as u64, p))
    }
}

/// Counts reasoning tokens over the raw tag span, from token ids alone.
#[derive(Debug)]
struct TokenCounter {
    /// The reasoning open tag's token id.
    open: u32,
    /// The reasoning close tag's token id.
    close: u32,
    /// Between an open and a close id.
    inside: bool,
    /// Ids counted inside so far.
    count: usize,
}

/// The composed (`default`) parser: see the module docs. What it was built with
/// ([`Rules`]) is kept apart from what one response changes ([`State`]); the tool
/// parser holds both for its block.
#[derive(Debug)]
pub(super) struct Composed {
    /// What the parser was built with.
    rules: Rules,
    /// The tool parser, when the request arms tool calls.
    tool: Option<ToolParser>,
    /// What this response changed so far.
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
    /// How much of a whitespace run at the start of the content may still be part of a
    /// tag armed in plain text (the most leading whitespace of one: DSML's `\n\n`); the
    /// rest of the run is content whatever follows. `None` when a tag is whitespace
    /// only (the run then waits whole for what follows it).
    start_ws_keep: Option<usize>,
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
    /// The reasoning dialect's separators (none for an inline dialect).
    reasoning_seps: ReasoningSeparators,
    /// The tool dialect's `after_blocks` separators.
    after_blocks: Vec<String>,
    /// Each declared `between_blocks` separator followed by each spelling of an open
    /// tag (and each spelling alone), with the separator's length: what may follow a
    /// block in content when the next block follows at once. `None`: the newline rule
    /// ([`separator`](Composed::separator)).
    between_blocks: Option<Vec<(String, usize)>>,
    /// `enable_thinking=False`: what the model puts in reasoning is shown as content.
    reasoning_as_content: bool,
    /// The token ids of the markers, when the caller gave them: with ids fed, a tag
    /// spelt in ordinary tokens is text.
    marker_ids: MarkerIds,
    /// A block the model writes without its open tag, when the dialect declares one and
    /// the request arms tool calls.
    unopened: Option<UnopenedRule>,
}

/// How a block written without its open tag ends ([`Rules::unopened`]).
#[derive(Debug)]
struct UnopenedRule {
    /// The payload's open text, armed in plain text.
    open: String,
    /// The payload's close (tag 0), then every spelling of the block open tags (with
    /// their `before_blocks` separators): a real block opening ends the hold.
    stops: Arc<TagSet>,
    /// The close tag that must follow the payload's close.
    close: String,
    /// The held text's end lies within this many bytes.
    bound: usize,
    /// Where each of `stops`' marker-token pieces are, by its index; empty when no
    /// marker token ids are known. A stop spelt in ordinary tokens (a quoted open tag)
    /// neither ends the hold nor closes the block.
    stop_pieces: Vec<Vec<(usize, usize)>>,
    /// The close tag's marker-token pieces (see `stop_pieces`).
    close_pieces: Vec<(usize, usize)>,
}

/// Whether a held payload's close that ends at `after` in `window` ends the block: up
/// to [`MAX_HELD_WHITESPACE`] bytes of whitespace, then the close tag.
enum CloseAt {
    /// It does: the block ends here.
    End(usize),
    /// Not known yet: more text may complete the close tag.
    Hold,
    /// It does not.
    No,
}

impl UnopenedRule {
    /// The rule of the tool parser's dialect, if it declares one, searching for the
    /// open tags `opens` and `sep_opens` (with their separators) as well.
    fn new(
        tool: Option<&ToolParser>,
        opens: &[(Cow<str>, usize)],
        sep_opens: &[(String, usize)],
    ) -> Option<Self> {
        let u = tool?.dialect().unopened_block.as_ref()?;
        let stops: Vec<&str> = std::iter::once(u.payload_close.as_str())
            .chain(opens.iter().map(|(o, _)| o.as_ref()))
            .chain(sep_opens.iter().map(|(o, _)| o.as_str()))
            .filter(|t| !t.is_empty())
            .collect();
        Some(UnopenedRule {
            open: u.payload_open.clone(),
            stops: TagSet::shared(&stops),
            close: u.close.clone(),
            bound: UNOPENED_MAX,
            stop_pieces: Vec::new(),
            close_pieces: Vec::new(),
        })
    }

    /// Finds the marker-token pieces of the stops and the close tag among `ids`.
    fn set_pieces(&mut self, ids: &MarkerIds) {
        self.stop_pieces = (0..self.stops.len())
            .map(|i| ids.pieces(self.stops.text(i)))
            .collect();
        self.close_pieces = ids.pieces(&self.close);
    }

    /// Whether stop `tag`, found at offset `at` of the response, is the marker.
    fn stop_is_marker(&self, tag: usize, at: u64, spans: &MarkerSpans) -> bool {
        self.stop_pieces
            .get(tag)
            .is_none_or(|p| spans.is_marker(at, p))
    }

    /// See [`CloseAt`]; `shut`: the window will not grow; `base`: the window's offset in
    /// the response, where `spans` tell a close tag spelt in ordinary tokens (not one).
    fn close_at(
        &self,
        window: &str,
        after: usize,
        shut: bool,
        base: u64,
        spans: &MarkerSpans,
    ) -> CloseAt {
        let rest = &window[after..];
        let ws = rest
            .bytes()
            .take(MAX_HELD_WHITESPACE + 1)
            .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            .count();
        if ws > MAX_HELD_WHITESPACE {
            return CloseAt::No;
        }
        let r = &rest[ws..];
        if r.starts_with(self.close.as_str()) {
            if !spans.is_marker(base + (after + ws) as u64, &self.close_pieces) {
                return CloseAt::No;
            }
            CloseAt::End(after + ws + self.close.len())
        } else if !shut && self.close.starts_with(r) {
            CloseAt::Hold
        } else {
            CloseAt::No
        }
    }
}

impl Rules {
    /// The armed set `set` names.
    fn armed(&self, set: ArmedSet) -> &Armed {
        match set {
            ArmedSet::Plain => &self.plain,
            ArmedSet::PlainAfter => &self.plain_after,
            ArmedSet::Reasoning => &self.in_reasoning,
        }
    }
}

/// What one response changes: the mode (plain, reasoning or tool, as in the module
/// diagram, each with its own state), the one buffer, and the few facts about what was
/// seen that outlive a mode.
#[derive(Debug)]
struct State {
    /// The mode and what it waits for.
    mode: Mode,
    /// The one buffer (see the module docs).
    pending: String,
    /// The reasoning closed (at least once): a `once` dialect arms
    /// [`Rules::plain_after`] from then on.
    closed_once: bool,
    /// Text put before the output (an inline reasoning dialect), until it is written.
    inline_prefix: Option<String>,
    /// The reasoning token count, when the tag ids are known.
    tokens: Option<TokenCounter>,
    /// The input ended inside a tool block.
    ended_in_tool_block: bool,
    /// The final chunk was fed.
    finished: bool,
    /// Where marker tokens wrote their text (kept only with [`Rules::marker_ids`]).
    spans: MarkerSpans,
    /// The offset in the response of the text the current state's handler is given.
    at: u64,
    /// The escaped-newline recovery of the reasoning dialect that asks for it
    /// ([`ReasoningDialect::escaped_newlines`]): applied to each chunk's deltas.
    newlines: Option<NewlineRecovery>,
}

impl Composed {
    /// Builds a parser from registry names and the request's tools (`tools`, shared:
    /// the configuration's own are not read).
    pub(super) fn new(config: &ParserConfig, tools: Option<Arc<ToolSet>>) -> Result<Self> {
        let suffix = config.tag_suffix.as_deref();
        let tool = match config.tool_parser.as_deref().filter(|n| !n.is_empty()) {
            Some(n) => Some(registry::tool_dialect_with_suffix(n, suffix)?),
            None => None,
        };
        let reasoning = match config.reasoning_parser.as_deref().filter(|n| !n.is_empty()) {
            Some(n) => Some(registry::reasoning_dialect_with_suffix(n, suffix)?),
            None => None,
        };
        // The tools are shared by every parser of a request that sends them: the names
        // and schemas are the tool set's own, never copied per parser.
        let request = RequestTools::new(tools, config.tool_choice.clone())?;
        // Thinking as the reasoning dialect's template reads the request's flags.
        let thinking = reasoning
            .as_ref()
            .and_then(|r| r.thinking(&config.thinking_flags()));
        let mut parser = Self::build(
            tool,
            reasoning,
            &request,
            thinking,
            config.reasoning_tag_ids,
        );
        // What is held for a block without its open tag stays within the buffer limit.
        if let (Some(u), Some(max)) = (parser.rules.unopened.as_mut(), config.max_buffered_bytes) {
            u.bound = u.bound.min(max);
        }
        Ok(parser)
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
            &RequestTools::of_policy(policy),
            enable_thinking,
            reasoning_tag_ids,
        )
    }

    /// `from_dialects` with the request's checked tools.
    fn build(
        tool: Option<Arc<ToolDialect>>,
        reasoning: Option<Arc<ReasoningDialect>>,
        policy: &RequestTools,
        enable_thinking: Option<bool>,
        reasoning_tag_ids: Option<(u32, u32)>,
    ) -> Self {
        let (markup, drop_ends) = markup(tool.as_deref(), reasoning.as_deref());
        let bare_start = tool.as_ref().is_some_and(|d| d.bare_start) && policy.armed();
        let tool_parser = tool
            .as_ref()
            .filter(|_| policy.armed())
            .map(|d| ToolParser::for_request_tools(d.clone(), policy));
        // An inline dialect (`*_append_think`) splits nothing: no reasoning tag is armed.
        let split = reasoning.as_ref().filter(|r| r.inline_prefix.is_none());
        let r_opens: Vec<(Option<&str>, Role)> = split.map_or(Vec::new(), |r| {
            r.open_tags()
                .map(|t| (Some(t), Role::ReasoningOpen))
                .collect()
        });
        let r_seps = split.map_or_else(ReasoningSeparators::default, |r| r.separators.clone());
        // A declared `before_close` separator goes with the close tag: armed in front of
        // each spelling of it.
        let sep_closes: Vec<String> = split.map_or(Vec::new(), |r| {
            r.close_tags()
                .flat_map(|t| r_seps.before_close.iter().map(move |s| format!("{s}{t}")))
                .collect()
        });
        let r_closes: Vec<(Option<&str>, Role)> = split
            .map_or(Vec::new(), |r| {
                r.close_tags()
                    .map(|t| (Some(t), Role::ReasoningClose))
                    .collect()
            })
            .into_iter()
            .chain(
                sep_closes
                    .iter()
                    .map(|t| (Some(t.as_str()), Role::ReasoningClose)),
            )
            .collect();
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
        let t_seps = tool_parser
            .as_ref()
            .map_or_else(ToolSeparators::default, |t| t.dialect().separators.clone());
        // A declared `before_blocks` separator goes with the open tag, in content: armed
        // in front of each spelling of it (an abandoned block gives it back as text).
        let sep_opens: Vec<(String, usize)> = opens
            .iter()
            .filter(|(o, _)| !o.is_empty())
            .flat_map(|(o, k)| {
                t_seps
                    .before_blocks
                    .iter()
                    .map(move |s| (format!("{s}{o}"), *k))
            })
            .collect();
        // A payload written without its open tag is armed in plain text only, with them.
        let unopened = UnopenedRule::new(tool_parser.as_ref(), &opens, &sep_opens);
        let sep_opens = sep_open_roles(&sep_opens, unopened.as_ref());
        let plain = Armed::new(
            &[
                &r_opens[..],
                &stray_closes,
                &tool_opens,
                &sep_opens,
                &markup,
            ]
            .concat(),
        );
        // After the one reasoning section of a `once` dialect, open tags are text.
        let plain_after =
            Armed::new(&[&stray_closes[..], &tool_opens, &sep_opens, &markup].concat());
        // An open tag while already reasoning (a model repeating `<think>`) is protocol,
        // not reasoning text: it is dropped (the role keeps the mode).
        let r_tools = reasoning_tool_opens(split.map(|r| &**r), &tool_opens);
        let in_reasoning = Armed::new(&[&r_closes[..], &r_opens, r_tools, &markup].concat());
        // A marker-less dialect's empty open tag opens nothing.
        let tool_opens: Vec<String> = opens
            .iter()
            .filter(|(o, _)| !o.is_empty())
            .map(|(o, _)| o.to_string())
            .collect();
        drop((sep_opens, opens));
        let between_blocks = t_seps
            .between_blocks
            .as_deref()
            .map(|seps| between_candidates(seps, &tool_opens));
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
            mode: if starts {
                Mode::Reasoning(ReasoningAt::LeadingOpen)
            } else {
                Mode::Plain(PlainAt::Sep(SepAt::ResponseStart))
            },
            pending: String::new(),
            closed_once: false,
            inline_prefix: r.and_then(|r| r.inline_prefix.clone()),
            tokens: reasoning_tag_ids.map(|(open, close)| TokenCounter {
                open,
                close,
                inside: starts,
                count: 0,
            }),
            ended_in_tool_block: false,
            finished: false,
            spans: MarkerSpans::default(),
            at: 0,
            newlines: NewlineRecovery::of(r),
        };
        Composed {
            rules: Rules {
                tool_opens,
                drop_ends,
                bare_start,
                bare_lines,
                start_ws_keep: start_ws_keep(&plain.tags),
                plain,
                plain_after,
                in_reasoning,
                once: r.is_some_and(|r| r.once),
                tool_ends_reasoning: r.is_some_and(|r| r.tool_ends_reasoning),
                reasoning_seps: r_seps,
                after_blocks: t_seps.after_blocks,
                between_blocks,
                reasoning_as_content: enable_thinking == Some(false),
                reasoning,
                marker_ids: MarkerIds::default(),
                unopened,
            },
            tool,
            state,
        }
    }

    /// Sets the token ids of the markers (see [`crate::scan::tokens`]); before the
    /// first chunk.
    pub(super) fn set_marker_ids(&mut self, ids: MarkerIds) {
        for armed in [
            &mut self.rules.plain,
            &mut self.rules.plain_after,
            &mut self.rules.in_reasoning,
        ] {
            armed.set_pieces(&ids);
        }
        if let Some(u) = self.rules.unopened.as_mut() {
            u.set_pieces(&ids);
        }
        self.rules.marker_ids = ids;
    }

    /// The texts that may be marker tokens: every tag armed in plain text or
    /// reasoning, and each special piece of one (a `<|...|>` piece, or one the tool
    /// dialect lists, such as DSML's `｜DSML｜`), without repeats. A caller looks each up
    /// in the model's vocabulary and gives the ids of those that are single tokens.
    pub(super) fn marker_texts(&self) -> Vec<String> {
        let listed = self.tool.as_ref().map(|t| t.dialect().special());
        let rules: Vec<SpecialTokens<'_>> = std::iter::once(SpecialTokens::Markers)
            .chain(listed)
            .collect();
        let mut out: Vec<String> = Vec::new();
        for armed in [&self.rules.plain, &self.rules.in_reasoning] {
            for i in 0..armed.tags.len() {
                let tag = armed.tags.text(i);
                let pieces: Vec<(bool, &str)> = rules.iter().flat_map(|r| r.pieces(tag)).collect();
                let specials = pieces.iter().filter(|(special, _)| *special);
                for t in std::iter::once(tag).chain(specials.map(|(_, t)| *t)) {
                    let t = t.trim();
                    if !t.is_empty() && !out.iter().any(|o| o == t) {
                        out.push(t.to_owned());
                    }
                }
            }
        }
        out
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
        let start = out.len();
        self.route_chunk(text, token_ids, final_, out);
        if let Some(n) = self.state.newlines.as_mut() {
            n.apply(out, start, final_);
        }
        Ok(())
    }

    /// [`stream_chunk_into`](Self::stream_chunk_into) before the deltas are rewritten
    /// (escaped newlines).
    fn route_chunk(
        &mut self,
        text: &str,
        token_ids: Option<&[u32]>,
        final_: bool,
        out: &mut Vec<StreamItem>,
    ) {
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
        if self.rules.marker_ids.is_empty() {
            self.feed(text, sink, final_);
            return;
        }
        let rebuilt = match token_ids {
            None => {
                self.state.spans.without_ids(text.len());
                None
            }
            // No marker token in the chunk (the usual case): its text is ordinary.
            Some(ids)
                if !ids
                    .iter()
                    .any(|&id| self.rules.marker_ids.text(id).is_some()) =>
            {
                self.state.spans.ordinary(text.len());
                None
            }
            Some(ids) => {
                let marker_ids = &self.rules.marker_ids;
                let split = split_chunk(text, ids, |id| marker_ids.text(id));
                if split.aligned {
                    self.state.spans.record(&split.segments);
                    let len: usize = split.segments.iter().map(Segment::len).sum();
                    // Longer than the text: the text lost its markers, put back here.
                    (len != text.len())
                        .then(|| split.segments.iter().map(Segment::text).collect::<String>())
                } else {
                    // The ids cannot place the markers: the text rule, for this chunk.
                    self.state.spans.without_ids(text.len());
                    None
                }
            }
        };
        self.feed(rebuilt.as_deref().unwrap_or(text), sink, final_);
        let held = self.state.pending.len() as u64;
        self.state
            .spans
            .forget_before(self.state.spans.fed() - held);
    }

    /// Parses `text` after what is held.
    fn feed(&mut self, text: &str, sink: &mut DeltaSink, final_: bool) {
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
    }

    /// Parses `input` (the held text followed by the new chunk) and returns how much of
    /// it was consumed; the rest is held for the next chunk. Each turn hands the rest of
    /// the input to the current mode's handler, until one waits for more input.
    fn run(&mut self, input: &str, sink: &mut DeltaSink, final_: bool) -> usize {
        let mut pos = 0;
        // `input` ends with the last byte fed.
        let base = self.state.spans.fed().saturating_sub(input.len() as u64);
        loop {
            let text = &input[pos..];
            self.state.at = base + pos as u64;
            let step = match self.state.mode {
                Mode::Plain(at) => self.on_plain(at, text, sink, final_),
                Mode::Reasoning(at) => self.on_reasoning(at, text, sink, final_),
                Mode::Tool(opened) => self.on_tool(opened, text, sink, final_),
            };
            match step {
                Step::Next(used) => pos += used,
                Step::Wait(used) => return pos + used,
            }
        }
    }

    /// Plain text: its pending wait ([`PlainAt`]), or the tag search of the plain set.
    fn on_plain(&mut self, at: PlainAt, text: &str, sink: &mut DeltaSink, final_: bool) -> Step {
        match at {
            PlainAt::Text => self.search(self.plain_set(), None, text, sink, final_),
            PlainAt::Start { fresh } => self.on_content_start(fresh, text, sink, final_),
            PlainAt::Sep(at) => self.on_sep(at, text, final_),
            PlainAt::BareNext => self.on_bare_next(text, final_),
            PlainAt::AfterBlock => self.on_after_block(false, text, final_),
            PlainAt::Unopened { searched } => self.on_unopened(searched, text, sink, final_),
        }
    }

    /// Reasoning: its pending wait ([`ReasoningAt`]), or the tag search of the reasoning
    /// set.
    fn on_reasoning(
        &mut self,
        at: ReasoningAt,
        text: &str,
        sink: &mut DeltaSink,
        final_: bool,
    ) -> Step {
        match at {
            ReasoningAt::Text => self.search(ArmedSet::Reasoning, None, text, sink, final_),
            ReasoningAt::LeadingOpen => self.on_leading_open(text, final_),
            ReasoningAt::AfterOpen => {
                let seps = &self.rules.reasoning_seps.after_open;
                match anchored(text, seps.iter().map(|s| (s.as_str(), s.len())), final_) {
                    Anchored::Hold => Step::Wait(0),
                    Anchored::Drop(n) => {
                        self.state.mode = Mode::Reasoning(ReasoningAt::Text);
                        Step::Next(n)
                    }
                }
            }
            ReasoningAt::AfterBlock => self.on_after_block(true, text, final_),
        }
    }

    /// A tool block: the tool parser consumes what it can of `text`. Once the block
    /// closes, an abandoned block's text goes back to the channel it was entered from
    /// (its open tag's spelling, then what the block gives back), and the mode becomes
    /// the one the block returns to: reasoning for a block entered from reasoning, unless
    /// a call ends the reasoning there (the dialect's reference parser's "implicit end"),
    /// else plain text. After a block that was not abandoned, the separator wait comes
    /// first, and after a bare line's call the next-line wait before it.
    fn on_tool(&mut self, opened: Opened, text: &str, sink: &mut DeltaSink, final_: bool) -> Step {
        let tool = self.tool.as_mut().expect("tool mode implies a tool parser");
        let used = tool.feed_tool_block(text, sink, final_);
        if !tool.block_closed() {
            return Step::Wait(used);
        }
        let abandoned = tool.abandoned();
        self.state.ended_in_tool_block |= tool.truncated();
        let from_reasoning = matches!(
            opened,
            Opened::Tag {
                set: ArmedSet::Reasoning,
                ..
            }
        );
        if abandoned {
            let ch = text_channel(from_reasoning, self.rules.reasoning_as_content);
            if let Opened::Tag { set, tag } = opened {
                sink.text(ch, self.rules.armed(set).tags.text(tag));
            }
            sink.text(ch, tool.given_back());
        }
        let ended = from_reasoning && !abandoned && self.rules.tool_ends_reasoning;
        self.state.closed_once |= ended;
        self.state.mode = match (from_reasoning && !ended, abandoned) {
            (true, true) => Mode::Reasoning(ReasoningAt::Text),
            (true, false) => Mode::Reasoning(ReasoningAt::AfterBlock),
            (false, true) => Mode::Plain(PlainAt::Text),
            (false, false) if opened == Opened::Bare && self.rules.bare_lines => {
                Mode::Plain(PlainAt::BareNext)
            }
            (false, false) => Mode::Plain(PlainAt::AfterBlock),
        };
        Step::Next(used)
    }

    /// A payload written without its block's open tag ([`PlainAt::Unopened`]): `text`
    /// starts at its open text and is held, searched once from `searched`, until the
    /// payload's close, whitespace and the block's close tag end it within the bound
    /// ([`UnopenedRule`]). The held text is then read as one block: calls of request
    /// tools, sent whole, or content as written. A block open tag before that end, the
    /// bound reached first, or the end of output (unless the text is a well-formed
    /// beginning of calls, which are then cut) make it content too; the search goes on
    /// after it, so every byte is searched once.
    fn on_unopened(
        &mut self,
        searched: usize,
        text: &str,
        sink: &mut DeltaSink,
        final_: bool,
    ) -> Step {
        let rule = self.rules.unopened.as_ref().expect("armed");
        let (at, spans) = (self.state.at, &self.state.spans);
        let mut limit = rule.bound.min(text.len());
        while !text.is_char_boundary(limit) {
            limit -= 1;
        }
        if limit == 0 {
            // A bound below one character (a tiny buffer limit): the search still moves.
            limit = text.chars().next().map_or(0, char::len_utf8);
        }
        let window = &text[..limit];
        // The window grows no more: the input ended, or it reached the bound.
        let shut = final_ || text.len() >= rule.bound;
        let mut from = searched;
        let held = loop {
            match rule.stops.find_or_held(&window[from..], shut) {
                // A block's open tag spelt in ordinary tokens (quoted): text of the hold.
                Ok(m) if !rule.stop_is_marker(m.tag, at + (from + m.start) as u64, spans) => {
                    from += m.end;
                }
                // A block's open tag: the held text before it is content.
                Ok(m) if m.tag > 0 => return self.unopened_text(&text[..from + m.start], sink),
                Ok(m) => match rule.close_at(window, from + m.end, shut, at, spans) {
                    CloseAt::End(end) => {
                        let tool = self.tool.as_mut().expect("armed with tools");
                        return match tool.read_unopened(&text[..end], true, sink) {
                            Unopened::Calls => {
                                self.state.mode = Mode::Plain(PlainAt::AfterBlock);
                                Step::Next(end)
                            }
                            _ => self.unopened_text(&text[..end], sink),
                        };
                    }
                    CloseAt::Hold => break from + m.start,
                    CloseAt::No => {
                        let at = from + m.start;
                        from = at + window[at..].chars().next().map_or(1, char::len_utf8);
                    }
                },
                Err(keep) => break limit - keep,
            }
        };
        if !shut {
            self.state.mode = Mode::Plain(PlainAt::Unopened { searched: held });
            return Step::Wait(0);
        }
        if text.len() >= rule.bound {
            return self.unopened_text(window, sink);
        }
        // The output ended while holding.
        let tool = self.tool.as_mut().expect("armed with tools");
        if tool.read_unopened(text, false, sink) == Unopened::Cut {
            self.state.ended_in_tool_block = true;
            self.state.mode = Mode::Plain(PlainAt::Text);
            return Step::Next(text.len());
        }
        self.unopened_text(text, sink)
    }

    /// Held text that was no block: content, as written; the tag search goes on after it.
    fn unopened_text(&mut self, held: &str, sink: &mut DeltaSink) -> Step {
        sink.text(Channel::Content, held);
        self.state.mode = Mode::Plain(PlainAt::Text);
        Step::Next(held.len())
    }

    /// The start of the content channel ([`PlainAt::Start`]). Whitespace here is content
    /// in every outcome (before a bare payload, a tag or text), so it is shown as it
    /// arrives and the state stays: a long run is neither held nor parsed again on
    /// every chunk. Only its last [`Rules::start_ws_keep`] bytes wait, as they may begin
    /// a tag. After the whitespace a bare payload starts a block; otherwise the tag
    /// search decides, and the state ends once the search shows text that is not
    /// whitespace or consumes a tag.
    fn on_content_start(
        &mut self,
        fresh: bool,
        text: &str,
        sink: &mut DeltaSink,
        final_: bool,
    ) -> Step {
        let ws = ws_len(text);
        if let Some(keep) = self.rules.start_ws_keep {
            if ws > keep {
                sink.text(Channel::Content, &text[..ws - keep]);
                return Step::Next(ws - keep);
            }
        }
        match self.bare_payload(text, final_) {
            Bare::Hold => Step::Wait(0),
            Bare::Start => {
                // Whitespace before the payload is content, as before a tagged block.
                sink.text(Channel::Content, &text[..ws]);
                let tool = self.tool.as_mut().expect("bare start is armed");
                tool.start_bare_block();
                self.state.mode = Mode::Tool(Opened::Bare);
                Step::Next(ws)
            }
            Bare::No => self.search(self.plain_set(), Some(fresh), text, sink, final_),
        }
    }

    /// A declared separator may come here ([`PlainAt::Sep`]): the longest of the
    /// position's separators that `text` starts with goes (none: nothing goes), once no
    /// longer one can still match; then the state the position leads to.
    fn on_sep(&mut self, at: SepAt, text: &str, final_: bool) -> Step {
        let (seps, next) = match at {
            SepAt::ResponseStart => (
                &self.rules.reasoning_seps.response_start,
                PlainAt::Start { fresh: true },
            ),
            SepAt::AfterClose => (
                &self.rules.reasoning_seps.after_close,
                PlainAt::Start { fresh: false },
            ),
            SepAt::AfterBlocks => (&self.rules.after_blocks, PlainAt::Text),
        };
        match anchored(text, seps.iter().map(|s| (s.as_str(), s.len())), final_) {
            Anchored::Hold => Step::Wait(0),
            Anchored::Drop(n) => {
                self.state.mode = Mode::Plain(next);
                Step::Next(n)
            }
        }
    }

    /// After a bare line's call ([`PlainAt::BareNext`]): the whitespace up to the next
    /// line is the layout's when that line begins another call of a request tool (a new
    /// bare block starts after it); otherwise the whitespace and the rest are text (the
    /// separator wait, then the search), as is text after the call on its own line.
    /// The whitespace cannot be shown before that is known, so the wait is bounded: a
    /// run longer than [`MAX_HELD_WHITESPACE`] is text whatever follows.
    fn on_bare_next(&mut self, text: &str, final_: bool) -> Step {
        let ws = ws_len(text);
        let lead = &text[ws..];
        let tool = self.tool.as_mut().expect("a bare block was armed");
        let next = if ws > MAX_HELD_WHITESPACE {
            Some(false)
        } else if lead.is_empty() {
            final_.then_some(false)
        } else if !text[..ws].contains('\n') {
            // A call is one line: text after it on its line is content.
            Some(false)
        } else {
            tool.bare_call(lead, final_)
        };
        match next {
            None => Step::Wait(0),
            Some(true) => {
                tool.start_bare_block();
                self.state.mode = Mode::Tool(Opened::Bare);
                Step::Next(ws)
            }
            Some(false) => {
                self.state.mode = Mode::Plain(PlainAt::AfterBlock);
                Step::Next(0)
            }
        }
    }

    /// After a tool block ([`PlainAt::AfterBlock`], [`ReasoningAt::AfterBlock`]):
    /// newlines that the next tool open tag follows are separators and go (see
    /// [`separator`](Self::separator)); otherwise they are text of the mode's channel.
    /// Then the tag search.
    /// In content, a dialect that declares its `between_blocks` separators drops the
    /// longest one that the next open tag follows at once, and nothing else; when no
    /// block follows at once, the run of blocks has ended: its `after_blocks` separator
    /// comes next ([`SepAt::AfterBlocks`]).
    fn on_after_block(&mut self, reasoning: bool, text: &str, final_: bool) -> Step {
        let between = self.rules.between_blocks.as_ref().filter(|_| !reasoning);
        let used = if let Some(cands) = between {
            match anchored(text, cands.iter().map(|(c, n)| (c.as_str(), *n)), final_) {
                Anchored::Hold => return Step::Wait(0),
                // The next block follows (a whole candidate matched).
                Anchored::Drop(n) if matched(text, cands) => Some(n),
                Anchored::Drop(_) => None,
            }
        } else {
            match self.separator(text, final_) {
                Separator::Hold => return Step::Wait(0),
                Separator::Drop(n) => Some(n),
                Separator::Text => None,
            }
        };
        self.state.mode = match (reasoning, used) {
            (true, _) => Mode::Reasoning(ReasoningAt::Text),
            (false, Some(_)) => Mode::Plain(PlainAt::Text),
            (false, None) => Mode::Plain(PlainAt::Sep(SepAt::AfterBlocks)),
        };
        Step::Next(used.unwrap_or(0))
    }

    /// Reasoning began implicitly ([`ReasoningAt::LeadingOpen`]): an open tag the model
    /// writes anyway, after nothing but whitespace, is the protocol's tag (Kimi K2
    /// Thinking writes `\n<think>`), so it and that whitespace go; so does a start label
    /// (Gemma 4's `thought\n`). The whitespace waits for what follows it, so the wait is
    /// bounded: a run longer than [`MAX_HELD_WHITESPACE`] is reasoning text whatever
    /// follows (an open tag after it is still dropped, as inside reasoning; a start
    /// label is text).
    fn on_leading_open(&mut self, text: &str, final_: bool) -> Step {
        let ws = ws_len(text);
        let after = &text[ws..];
        let r = self.rules.reasoning.as_ref();
        let opens = || {
            r.into_iter().flat_map(|r| {
                r.open_tags()
                    .chain(r.start_labels.iter().map(String::as_str))
            })
        };
        let bounded = ws <= MAX_HELD_WHITESPACE;
        if bounded && !final_ && opens().any(|o| after.len() < o.len() && o.starts_with(after)) {
            return Step::Wait(0);
        }
        self.state.mode = Mode::Reasoning(ReasoningAt::AfterOpen);
        // The longest spelling that matches.
        let open = opens()
            .filter(|o| bounded && !o.is_empty() && after.starts_with(o))
            .max_by_key(|o| o.len());
        Step::Next(open.map_or(0, |o| ws + o.len()))
    }

    /// The tag search of plain text or reasoning (the [`PlainAt::Text`] and
    /// [`ReasoningAt::Text`] states, and the content start once no bare payload starts
    /// there: `start` is then `Some(fresh)`). Text up to the first armed tag of `set`
    /// goes to the mode's channel and the tag acts by its role ([`on_tag`](Self::on_tag));
    /// without a whole tag, all but a held tag prefix is shown.
    fn search(
        &mut self,
        set: ArmedSet,
        start: Option<bool>,
        text: &str,
        sink: &mut DeltaSink,
        final_: bool,
    ) -> Step {
        let armed = self.rules.armed(set);
        match armed.tags.find_or_held(text, final_) {
            Ok(m) if !armed.is_marker(&m, self.state.at, &self.state.spans) => {
                // Spelt in ordinary tokens: text, up to and including the spelling.
                let reasoning = set == ArmedSet::Reasoning;
                let shown = &text[..m.end];
                sink.text(
                    text_channel(reasoning, self.rules.reasoning_as_content),
                    shown,
                );
                if start.is_some() && !trim_ws(shown).is_empty() {
                    self.state.mode = Mode::Plain(PlainAt::Text);
                }
                Step::Next(m.end)
            }
            Ok(m) => self.on_tag(set, m, start == Some(true), text, sink, final_),
            Err(keep) => {
                let reasoning = set == ArmedSet::Reasoning;
                let shown = &text[..text.len() - keep];
                sink.text(
                    text_channel(reasoning, self.rules.reasoning_as_content),
                    shown,
                );
                if start.is_some() && !trim_ws(shown).is_empty() {
                    self.state.mode = Mode::Plain(PlainAt::Text);
                }
                Step::Wait(shown.len())
            }
        }
    }

    /// A whole tag `m` of the armed set `set`, found in `text`: the
    /// text before it goes to the mode's channel (less the protocol newline before a
    /// reasoning close), the search's state ends, and the tag acts by its role.
    /// `fresh`: nothing but whitespace was shown or consumed before `text`, so a stray
    /// reasoning close tag after whitespace only is the stray leading one, and goes.
    fn on_tag(
        &mut self,
        set: ArmedSet,
        m: TagMatch,
        fresh: bool,
        text: &str,
        sink: &mut DeltaSink,
        final_: bool,
    ) -> Step {
        let role = self.rules.armed(set).roles[m.tag];
        let reasoning = set == ArmedSet::Reasoning;
        let ch = text_channel(reasoning, self.rules.reasoning_as_content);
        let before = &text[..m.start];
        sink.text(ch, before);
        self.state.mode = if reasoning {
            Mode::Reasoning(ReasoningAt::Text)
        } else {
            Mode::Plain(PlainAt::Text)
        };
        match role {
            Role::ReasoningOpen => self.state.mode = Mode::Reasoning(ReasoningAt::AfterOpen),
            Role::ReasoningClose => {
                self.state.closed_once = true;
                self.state.mode = Mode::Plain(PlainAt::Sep(SepAt::AfterClose));
            }
            Role::StrayClose => {
                if !(fresh && trim_ws(before).is_empty()) {
                    sink.text(ch, &text[m.start..m.end]);
                }
            }
            Role::ToolOpen(kind) => {
                self.tool.as_mut().expect("armed").start_block_of(kind);
                self.state.mode = Mode::Tool(Opened::Tag { set, tag: m.tag });
            }
            Role::WrapperOpen => self.state.mode = Mode::Plain(PlainAt::Text),
            Role::Unopened => {
                self.state.mode = Mode::Plain(PlainAt::Unopened { searched: 0 });
                return Step::Next(m.start);
            }
            Role::Drop => {}
            Role::DropUntil(rule) => {
                match drop_until(&text[m.end..], &self.rules.drop_ends[rule], final_) {
                    Some(DropEnd::At(n)) => return Step::Next(m.end + n),
                    Some(DropEnd::Hold) => return Step::Wait(m.start),
                    // Not markup: the prefix is text.
                    None => sink.text(ch, &text[m.start..m.end]),
                }
            }
        }
        Step::Next(m.end)
    }

    /// The armed set of plain text now: without the reasoning open tags once a `once`
    /// dialect's reasoning closed.
    fn plain_set(&self) -> ArmedSet {
        if self.rules.once && self.state.closed_once {
            ArmedSet::PlainAfter
        } else {
            ArmedSet::Plain
        }
    }

    /// Whether a bare payload starts here, at the start of the content: after
    /// whitespace, a payload's start (`{`, `[`, or another form's). Whitespace alone is held
    /// until what follows it is known ([`on_content_start`](Self::on_content_start)
    /// shows all but the last [`Rules::start_ws_keep`] bytes of it first).
    fn bare_payload(&self, text: &str, final_: bool) -> Bare {
        if !self.rules.bare_start {
            return Bare::No;
        }
        let starts = self
            .tool
            .as_ref()
            .map_or(Vec::new(), |t| t.payload_starts());
        let lead = text.trim_start_matches([' ', '\t', '\n', '\r']);
        // An armed tag here (xLAM's `[TOOL_CALLS]` starts like its array) is the tag's.
        match self.rules.plain.tags.find_or_held(lead, final_) {
            Ok(m) if m.start == 0 => return Bare::No,
            Err(keep) if keep == lead.len() && keep > 0 && !final_ => return Bare::Hold,
            _ => {}
        }
        if starts.is_empty() {
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
        } else if starts.iter().any(|m| lead.starts_with(m)) {
            Bare::Start
        } else if !final_ && starts.iter().any(|m| m.starts_with(lead)) {
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

    /// Notes on calls that were sent, in order.
    pub fn call_notes(&self) -> &[CallNote] {
        self.tool.as_ref().map_or(&[], |t| t.call_notes())
    }

    /// Number of tool calls emitted so far.
    pub fn emitted_tool_calls(&self) -> usize {
        self.tool.as_ref().map_or(0, |t| t.emitted_calls())
    }

    /// Sends calls whole (whole-call mode); before the first chunk.
    pub(super) fn set_whole_calls(&mut self, whole: bool) {
        if let Some(t) = self.tool.as_mut() {
            t.set_whole_calls(whole);
        }
    }

    /// The index of the call the output ended inside, when its beginning was sent.
    pub fn cut_call(&self) -> Option<usize> {
        self.tool.as_ref().and_then(ToolParser::cut_call)
    }

    /// The final chunk arrived while a tool block was still open (truncated output).
    pub fn ended_in_tool_block(&self) -> bool {
        self.state.ended_in_tool_block
    }

    /// Bytes currently held back (a tag prefix, or unconsumed tool-block text).
    pub fn pending_len(&self) -> usize {
        self.state.pending.len()
    }

    /// Bytes held for this response: the pending text and every buffer of the tool
    /// parser.
    pub(super) fn buffered_bytes(&self) -> usize {
        self.state.pending.len()
            + self.tool.as_ref().map_or(0, |t| t.buffered_bytes())
            + self
                .state
                .newlines
                .as_ref()
                .map_or(0, NewlineRecovery::held)
    }

    /// Refuses further chunks after an error the caller must see (buffer limit).
    pub(super) fn finish_after_error(&mut self) {
        if matches!(self.state.mode, Mode::Tool(_)) {
            // The response ended inside a tool block: its open call is cut.
            if let Some(t) = self.tool.as_mut() {
                t.cut_open_call();
            }
            self.state.ended_in_tool_block = true;
        }
        self.state.finished = true;
    }

    /// The final chunk was fed (or an error ended the response).
    pub fn is_finished(&self) -> bool {
        self.state.finished
    }
}

/// The channel text goes to in plain or reasoning mode (`reasoning`), as the request's
/// thinking flag routes reasoning.
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

/// A whitespace run that waits for what follows it (before a leading reasoning open
/// tag, between two bare lines) is text once it is longer than this, whatever follows:
/// no template puts more there, and holding an unbounded run would make every chunk
/// parse it again. The decision depends only on the run itself, so it is the same
/// under any chunking.
pub(super) const MAX_HELD_WHITESPACE: usize = 64;

/// What a declared separator position holds at the start of the text.
enum Anchored {
    /// Not known yet: a candidate may still match (more text is coming).
    Hold,
    /// This many bytes are the separator (0: none).
    Drop(usize),
}

/// The separator at the start of `text` among `cands` (each a string to match and how
/// many of its bytes are the separator): the longest separator of a candidate that
/// `text` starts with. While a candidate is still a possible match (`text` a proper
/// prefix of it) and more text comes, nothing is decided: at most one candidate's
/// length is held, and the decision is the one the whole text gives.
fn anchored<'a>(
    text: &str,
    cands: impl Iterator<Item = (&'a str, usize)> + Clone,
    final_: bool,
) -> Anchored {
    if !final_
        && cands
            .clone()
            .any(|(c, _)| text.len() < c.len() && c.starts_with(text))
    {
        return Anchored::Hold;
    }
    Anchored::Drop(
        cands
            .filter(|(c, _)| text.starts_with(c))
            .map(|(_, n)| n)
            .max()
            .unwrap_or(0),
    )
}

/// Whether `text` starts with one of the candidates.
fn matched(text: &str, cands: &[(String, usize)]) -> bool {
    cands.iter().any(|(c, _)| text.starts_with(c.as_str()))
}

/// What the newlines right after a tool block are.
enum Separator {
    /// Not known yet: hold them.
    Hold,
    /// Separators: this many bytes go.
    Drop(usize),
    /// Text of the channel the block returned to.
    Text,
}
