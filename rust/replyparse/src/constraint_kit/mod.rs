//! What every family's constraint writer uses: the Lark writer ([`lark`]), the
//! structural-tag nodes ([`structural`]), the arguments' layout ([`args`]), Python text
//! ([`pytext`]), the [`CallConstraint`] trait each family implements beside its grammar, the functions a
//! constraint allows ([`Function`]), what a markup cannot hold ([`Forbidden`]), the
//! reasoning section before the calls ([`ReasoningSection`]) and the helpers that place
//! the calls after it.
//!
//! The entry points that resolve a dialect and dispatch to its family's writer are
//! [`crate::constraint`]'s; the writers import this module, never those.

pub(crate) mod args;
pub(crate) mod lark;
pub(crate) mod pytext;
pub(crate) mod structural;

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde_json::Value;

use crate::error::Result;
use lark::Lark;

/// A reasoning section the constraint lets the model write before its calls.
///
/// Two shapes, because reasoning starts in two ways: when the response starts in
/// reasoning (the template opened it), the section is required and its open tag
/// optional (the prompt may hold it); when the response starts in content but the model
/// may open reasoning itself (Magistral's `[THINK]` when `reasoning_effort` asks), the
/// section is optional and begins with its open tag. Leaving the second out would
/// force such a model to call without thinking under `tool_choice="required"`, where a
/// peer (vLLM) lets reasoning finish before the call's constraint applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReasoningSection {
    /// The reasoning open tag (`<think>`).
    pub open: String,
    /// The reasoning close tag (`</think>`): after it, only calls.
    pub close: String,
    /// True: the response starts in reasoning (section required, open tag optional).
    /// False: the model may open it (section optional, open tag required).
    pub starts_inside: bool,
}

impl ReasoningSection {
    /// A section the response starts in (the Python API's `reasoning=(open, close)`).
    pub fn starting_inside(open: &str, close: &str) -> Self {
        ReasoningSection {
            open: open.to_owned(),
            close: close.to_owned(),
            starts_inside: true,
        }
    }
}

/// Which pieces of the tags the Lark grammar writes as single special tokens.
///
/// llguidance matches a token written unquoted (`<|call|>`) by its id and a quoted
/// string by its text; a tag that the tokenizer holds as one special token must be
/// written as a token (the model emits the id, and its text spelling would tokenize
/// differently), and a grammar naming a token the tokenizer lacks does not compile. The
/// structural tag is unaffected (xgrammar matches text).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SpecialTokens {
    /// Every `<|...|>` piece (Llama, InternLM, Kimi and Harmony markers, special in
    /// those models' vocabularies); other tags as text, which any tokenizer can spell.
    #[default]
    Markers,
    /// Every tag as text (a tokenizer without special markers).
    None,
    /// These exact strings, wherever a literal holds one (the longest first at a
    /// position); empty strings are ignored.
    Exact(BTreeSet<String>),
    /// The tag-like pieces (`<...>`, no whitespace or `<` / `>` inside) that are in the
    /// set: the answer of the engine's tokenizer about
    /// [`tag_like_pieces`](crate::constraint::tag_like_pieces). Llguidance
    /// counts tag-like added tokens of Hugging Face tokenizers (Qwen's `<tool_call>`,
    /// DeepSeek's `</think>`) as special, so only the tokenizer can say.
    TagLike(BTreeSet<String>),
}

/// One function the output may call, with the schema its arguments follow (an absent
/// or `null` schema is `{"type": "object"}`).
#[derive(Debug)]
pub(crate) struct Function<'a> {
    pub name: &'a str,
    pub params: Cow<'a, Value>,
}

/// The tags of the dialect a family's writer writes calls in (its syntax aside): what a
/// writer needs of the declaration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallTags<'a> {
    /// The dialect's name, for messages.
    pub name: &'a str,
    /// The block's open tag (empty for a marker-less dialect).
    pub open: &'a str,
    /// The block's close tag; none when the block ends with its payload.
    pub close: Option<&'a str>,
    /// The payload may also stand bare, with no open tag.
    pub bare_start: bool,
}

/// Substrings a tool name or a parameter key cannot hold in a markup: the call could
/// not be written (or read back) with them.
#[derive(Debug, Default)]
pub(crate) struct Forbidden {
    pub in_names: Vec<String>,
    pub in_keys: Vec<String>,
}

/// How one grammar family writes forced calls; implemented beside each family's
/// grammar, chosen by the entry points of [`crate::constraint`].
pub(crate) trait CallConstraint {
    /// The dialect's name, for messages.
    fn dialect_name(&self) -> &str;

    /// What names and keys cannot hold (nothing by default: JSON can write anything).
    fn forbidden(&self) -> Forbidden {
        Forbidden::default()
    }

    /// The structural tag's `format`, the reasoning section included. `many`: one or
    /// more calls (`required` with parallel calls allowed), else exactly one.
    fn structural_tag(
        &self,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<Value>;

    /// Writes the calls' rules (and the reasoning section's) and returns the body of
    /// the start rule.
    fn lark_start(
        &self,
        l: &mut Lark<'_>,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<String>;
}

// ---------------------------------------------------------------------------------------
// What the families share
// ---------------------------------------------------------------------------------------

/// The structural tag of calls written one per block, blocks on their own lines (JSON
/// envelope, XML), then trailing whitespace, after the reasoning section if any.
pub(crate) fn st_blocks(
    tags: Vec<Value>,
    many: bool,
    reasoning: Option<&ReasoningSection>,
) -> Value {
    let calls = structural::repeat(tags, "\n", many);
    st_after_reasoning(calls, reasoning)
}

/// The structural tag of calls inside one block (`open`, the calls, `close`: DSML,
/// Kimi), then trailing whitespace, after the reasoning section if any.
pub(crate) fn st_section(
    open: &str,
    tags: Vec<Value>,
    close: &str,
    many: bool,
    reasoning: Option<&ReasoningSection>,
) -> Value {
    let calls = structural::sequence(vec![
        structural::const_string(open),
        structural::repeat(tags, "", many),
        structural::const_string(close),
    ]);
    st_after_reasoning(calls, reasoning)
}

/// `calls`, then trailing whitespace, after the reasoning section if any.
pub(crate) fn st_after_reasoning(calls: Value, reasoning: Option<&ReasoningSection>) -> Value {
    let calls = structural::sequence(vec![calls, structural::regex(structural::WS_REGEX)]);
    let Some(r) = reasoning else {
        return calls;
    };
    let text = structural::any_text(&[&r.open, &r.close]);
    let opened = structural::tag(&r.open, text.clone(), &r.close);
    if !r.starts_inside {
        let think = structural::sequence(vec![opened, structural::regex(structural::WS_REGEX)]);
        return structural::or(vec![
            calls.clone(),
            structural::sequence(vec![think, calls]),
        ]);
    }
    let think = structural::or(vec![opened, structural::tag("", text, &r.close)]);
    structural::sequence(vec![think, structural::regex(structural::WS_REGEX), calls])
}

/// The Lark body of the calls: `call`, or one or more of it (`many`), inside
/// `block_open` ... `block_close` when the family writes every call in one block.
pub(crate) fn lark_calls(block_open: &str, call: &str, block_close: &str, many: bool) -> String {
    let inner = if many {
        format!("{call} (WS? {call})*")
    } else {
        call.to_owned()
    };
    if block_open.is_empty() {
        return inner;
    }
    if block_close.is_empty() {
        return format!("{block_open} WS? {inner}");
    }
    format!("{block_open} WS? {inner} WS? {block_close}")
}

/// The start rule's body for `calls` after the reasoning section (if any), then
/// trailing whitespace. A section the response starts in has an optional open tag
/// (templates often write it in the prompt); one the model may open is optional and
/// begins with its open tag ([`ReasoningSection`]).
pub(crate) fn lark_after_reasoning(
    l: &mut Lark<'_>,
    calls: &str,
    reasoning: Option<&ReasoningSection>,
) -> Result<String> {
    let Some(r) = reasoning else {
        return Ok(format!("{calls} WS?"));
    };
    let text = l.until("reasoning_text", &r.close)?;
    let open = l.lit(&r.open);
    if !r.starts_inside {
        l.rule("reasoning", &format!("{open} {text}"));
        return Ok(format!("(reasoning WS?)? {calls} WS?"));
    }
    l.rule("reasoning", &format!("({open})? {text}"));
    Ok(format!("reasoning WS? {calls} WS?"))
}
