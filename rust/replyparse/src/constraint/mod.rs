//! Decoding constraints for `tool_choice="required"` and a named function.
//!
//! When a request forces a tool call, the serving engine has to constrain decoding so
//! that the model writes a call in its own dialect, and nothing else. This module builds
//! that constraint from the dialect declaration (the data the parser runs on) and the
//! request's tools, in the two forms engines take:
//!
//! - an xgrammar structural tag ([`structural_tag`]): `{"type": "structural_tag",
//!   "format": {...}}`, the `response_format` xgrammar compiles (formats `tag`,
//!   `sequence`, `or`, `const_string`, `regex`, `any_text`, `json_schema` with a `style`
//!   for the XML-like markups, `tags_with_separator`);
//! - an llguidance Lark grammar ([`lark_grammar`]): `%json` for schema-constrained
//!   values, lazy `suffix=` lexemes for raw text values, special tokens unquoted.
//!
//! Both describe the whole output: the reasoning section when the response starts in
//! reasoning, then the calls. `required`: one or more calls of any of the request's
//! tools (exactly one with `parallel_tool_calls` false); a named function: exactly one
//! call of it. `auto` and `none` constrain nothing (`Ok(None)`). What a dialect cannot
//! express is refused as [`Error::InvalidTools`] when the constraint is built, which a
//! server does when the request arrives, never mid-stream.
//!
//! The functions here take a dialect name and the request's tools, for a router or
//! gateway that has no parser configuration at hand; a server that has one gets the
//! same constraint from [`ToolConstraint::for_config`]. The dialect is a tool parser's
//! registry name, or `gpt-oss` (Harmony's calls).
//!
//! ```
//! use replyparse::constraint::{self, ConstraintOptions, ReasoningSection, SpecialTokens};
//! use replyparse::{ToolChoice, ToolSpec};
//!
//! let tools = [ToolSpec { name: "get_weather".into(), parameters: None }];
//! let options = ConstraintOptions {
//!     reasoning: Some(ReasoningSection::starting_inside("<think>", "</think>")),
//!     ..Default::default()
//! };
//! let c = constraint::tool_constraint(
//!     "qwen", &tools, &ToolChoice::Required, &options, &SpecialTokens::Markers,
//! ).unwrap().unwrap();
//! assert_eq!(c.structural_tag["type"], "structural_tag");
//! assert!(c.lark_grammar.starts_with("%llguidance {}\n\nstart: reasoning WS? call"));
//! // auto constrains nothing
//! assert!(constraint::structural_tag("qwen", &tools, &ToolChoice::Auto, &options)
//!     .unwrap().is_none());
//! ```

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::config::ParserConfig;
use crate::constraint_kit::lark::Lark;
use crate::constraint_kit::CallTags;
use crate::constraint_kit::{pytext, CallConstraint, Function};
pub use crate::constraint_kit::{ReasoningSection, SpecialTokens};
use crate::error::{Error, Result};
use crate::grammars::{dsml, envelope, gemma, header, pythonic, xml, Syntax};
use crate::registry::{self, ToolDialect};
use crate::request::{ToolChoice, ToolSpec};
use crate::response::ResponseParser;
use crate::response::{framed, harmony};
use crate::schema;

/// The decoding constraint of one request, in both forms: give the engine the one its
/// grammar backend takes. Both describe the same outputs: the reasoning section when
/// the response starts in reasoning (or may open it), then the calls the request's
/// `tool_choice` requires, in the dialect's own markup.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolConstraint {
    /// xgrammar: `{"type": "structural_tag", "format": {...}}`, a `response_format`.
    pub structural_tag: Value,
    /// llguidance: a Lark grammar.
    pub lark_grammar: String,
}

/// What the constraint allows besides the calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstraintOptions {
    /// The reasoning section before the calls, if any (see [`ReasoningSection`]). For
    /// Harmony any value allows `analysis` messages before the call (its channels, not
    /// tags, mark reasoning).
    pub reasoning: Option<ReasoningSection>,
    /// The request's `parallel_tool_calls`: false allows one call only.
    pub parallel_tool_calls: bool,
}

impl Default for ConstraintOptions {
    fn default() -> Self {
        ConstraintOptions {
            reasoning: None,
            parallel_tool_calls: true,
        }
    }
}

/// The reasoning tags most built-in reasoning dialects use (`<think>`, `</think>`), for
/// a [`ReasoningSection`] when a router knows no better.
pub const DEFAULT_REASONING: (&str, &str) = ("<think>", "</think>");

/// The markup a constraint is written in: a tool dialect (of its family), or Harmony,
/// a response parser with calls of its own.
#[derive(Debug)]
pub(crate) enum Dialect {
    Tool(Arc<ToolDialect>),
    Harmony,
    /// A framed-message response parser.
    Framed(Arc<registry::ResponseDialect>),
}

/// The constraint writer of a dialect: its family's (each beside its grammar, given
/// the dialect's syntax and tags), or Harmony's.
fn writer(d: &Dialect) -> Result<Box<dyn CallConstraint + '_>> {
    let t = match d {
        Dialect::Harmony => return Ok(Box::new(harmony::constraint::HarmonyCalls)),
        Dialect::Framed(r) => {
            let syntax = r.framed.as_ref().expect("a framed entry");
            return Ok(Box::new(framed::constraint::FramedCalls::new(
                &r.name, syntax,
            )?));
        }
        Dialect::Tool(t) => t,
    };
    let tags = CallTags {
        name: &t.name,
        open: &t.open,
        close: t.close.as_deref(),
        bare_start: t.bare_start,
    };
    Ok(match &t.syntax {
        Syntax::JsonEnvelope(syn) => Box::new(envelope::constraint::EnvelopeCalls { syn, d: tags }),
        Syntax::Xml(syn) => Box::new(xml::constraint::XmlCalls::new(syn, tags)),
        Syntax::Dsml(syn) => Box::new(dsml::constraint::DsmlCalls::new(syn, tags)),
        Syntax::Header(syn) => Box::new(header::constraint::HeaderCalls { syn, d: tags }),
        Syntax::Pythonic(syn) => Box::new(pythonic::constraint::PythonicCalls { syn, d: tags }),
        Syntax::Gemma(syn) => Box::new(gemma::constraint::GemmaCalls::new(syn, tags)),
    })
}

/// Resolves a dialect name: Harmony's names (`gpt-oss`, `harmony`, `openai`), or a tool
/// parser's name or alias (its tags unsuffixed, when they carry a checkpoint suffix:
/// [`ToolConstraint::for_config`] spells them for the configuration's).
pub(crate) fn resolve(name: &str) -> Result<Dialect> {
    if let Ok(r) = registry::response_dialect(name) {
        if r.name == harmony::NAME {
            return Ok(Dialect::Harmony);
        }
        if r.framed.is_some() {
            return Ok(Dialect::Framed(r));
        }
    }
    registry::tool_dialect_with_suffix(name, None)
        .map(Dialect::Tool)
        .map_err(|e| match e {
            Error::UnknownParser {
                kind,
                name,
                mut valid,
            } => {
                // Harmony also writes calls: say so among the valid names.
                if let Ok(h) = registry::response_dialect(harmony::NAME) {
                    valid.push(h.name.clone());
                    valid.extend(h.aliases.iter().cloned());
                }
                Error::UnknownParser { kind, name, valid }
            }
            other => other,
        })
}

/// The functions the output may call, or None when the choice constrains nothing.
pub(crate) fn select<'a>(
    tools: &'a [ToolSpec],
    choice: &ToolChoice,
) -> Result<Option<Vec<Function<'a>>>> {
    if matches!(choice, ToolChoice::Auto | ToolChoice::None) {
        return Ok(None);
    }
    let fns: Vec<Function<'a>> = tools
        .iter()
        .map(|t| Function {
            name: &t.name,
            // The schema as the constraint engines must read it to read it as
            // parsing does (`crate::schema`: Python type names, `nullable`).
            params: match &t.parameters {
                Some(p) if !p.is_null() => schema::normalized(p),
                _ => Cow::Owned(json!({"type": "object"})),
            },
        })
        .collect();
    if fns.is_empty() {
        let choice = match choice {
            ToolChoice::Function(name) => format!(
                r#"{{"type": "function", "function": {{"name": {}}}}}"#,
                pytext::string(name, true)
            ),
            _ => r#""required""#.to_owned(),
        };
        return Err(Error::InvalidTools(format!(
            "tool_choice {choice} needs at least one tool"
        )));
    }
    match choice {
        ToolChoice::Function(name) => match fns.into_iter().find(|f| f.name == name) {
            Some(f) => Ok(Some(vec![f])),
            None => Err(Error::InvalidTools(format!(
                "tool_choice names \"{name}\", which is not among the request's tools"
            ))),
        },
        _ => Ok(Some(fns)),
    }
}

/// Refuses a name or key the markup cannot hold.
fn check(b: &dyn CallConstraint, fns: &[Function<'_>]) -> Result<()> {
    let forbidden = b.forbidden();
    let holds = |text: &str, bad: &[String]| bad.iter().any(|s| !s.is_empty() && text.contains(s));
    for f in fns {
        if holds(f.name, &forbidden.in_names) {
            return Err(Error::InvalidTools(format!(
                "tool name {} cannot be written in the {} dialect's markup, so the tool call \
                 cannot be constrained",
                pytext::repr(f.name),
                b.dialect_name()
            )));
        }
        for (key, _) in schema::properties(&f.params).declared {
            if holds(key, &forbidden.in_keys) {
                return Err(Error::InvalidTools(format!(
                    "parameter {} of {} cannot be written in the {} dialect's markup, so the \
                     tool call cannot be constrained",
                    pytext::repr(key),
                    pytext::repr(f.name),
                    b.dialect_name()
                )));
            }
        }
    }
    Ok(())
}

/// A request's constraint inputs, resolved and checked: what both forms are built from.
struct Prepared<'a> {
    dialect: Dialect,
    fns: Vec<Function<'a>>,
    many: bool,
}

impl<'a> Prepared<'a> {
    fn new(
        dialect: &str,
        tools: &'a [ToolSpec],
        choice: &ToolChoice,
        options: &ConstraintOptions,
    ) -> Result<Option<Self>> {
        Self::of(resolve(dialect)?, tools, choice, options)
    }

    fn of(
        dialect: Dialect,
        tools: &'a [ToolSpec],
        choice: &ToolChoice,
        options: &ConstraintOptions,
    ) -> Result<Option<Self>> {
        let Some(fns) = select(tools, choice)? else {
            return Ok(None);
        };
        check(&*writer(&dialect)?, &fns)?;
        let many = *choice == ToolChoice::Required && options.parallel_tool_calls;
        Ok(Some(Prepared { dialect, fns, many }))
    }

    fn structural_tag(&self, options: &ConstraintOptions) -> Result<Value> {
        let b = writer(&self.dialect)?;
        let format = b.structural_tag(&self.fns, self.many, options.reasoning.as_ref())?;
        Ok(json!({"type": "structural_tag", "format": format}))
    }

    fn lark(&self, options: &ConstraintOptions, l: &mut Lark<'_>) -> Result<String> {
        let b = writer(&self.dialect)?;
        b.lark_start(l, &self.fns, self.many, options.reasoning.as_ref())
    }
}

/// The xgrammar structural tag that makes the output a call in `dialect`'s markup (a
/// tool parser's name, or `gpt-oss`), or None when `choice` is `auto` / `none`.
pub fn structural_tag(
    dialect: &str,
    tools: &[ToolSpec],
    choice: &ToolChoice,
    options: &ConstraintOptions,
) -> Result<Option<Value>> {
    match Prepared::new(dialect, tools, choice, options)? {
        Some(p) => p.structural_tag(options).map(Some),
        None => Ok(None),
    }
}

/// The llguidance Lark grammar that makes the output a call in `dialect`'s markup, or
/// None when `choice` is `auto` / `none`; `special` says which tag pieces are single
/// special tokens of the engine's tokenizer.
pub fn lark_grammar(
    dialect: &str,
    tools: &[ToolSpec],
    choice: &ToolChoice,
    options: &ConstraintOptions,
    special: &SpecialTokens,
) -> Result<Option<String>> {
    let Some(p) = Prepared::new(dialect, tools, choice, options)? else {
        return Ok(None);
    };
    let mut l = Lark::new(special);
    let start = p.lark(options, &mut l)?;
    Ok(Some(l.finish(&start)))
}

/// Both forms (None when `choice` is `auto` / `none`). Fails if either cannot be built:
/// a server does not know which one its engine will use.
pub fn tool_constraint(
    dialect: &str,
    tools: &[ToolSpec],
    choice: &ToolChoice,
    options: &ConstraintOptions,
    special: &SpecialTokens,
) -> Result<Option<ToolConstraint>> {
    both(
        Prepared::new(dialect, tools, choice, options)?,
        options,
        special,
    )
}

/// Both forms of a prepared request's constraint.
fn both(
    p: Option<Prepared<'_>>,
    options: &ConstraintOptions,
    special: &SpecialTokens,
) -> Result<Option<ToolConstraint>> {
    let Some(p) = p else {
        return Ok(None);
    };
    let structural_tag = p.structural_tag(options)?;
    let mut l = Lark::new(special);
    let start = p.lark(options, &mut l)?;
    Ok(Some(ToolConstraint {
        structural_tag,
        lark_grammar: l.finish(&start),
    }))
}

/// Every tag-like piece (`<...>` without whitespace, `<` or `>` inside) of the literals
/// the Lark grammar for these inputs holds, sorted; None when `choice` is `auto` /
/// `none`. Ask the engine's tokenizer which are one special token each and pass those
/// as [`SpecialTokens::TagLike`] (the tokenizer lives where the engine does: the crate
/// does not link one).
pub fn tag_like_pieces(
    dialect: &str,
    tools: &[ToolSpec],
    choice: &ToolChoice,
    options: &ConstraintOptions,
) -> Result<Option<Vec<String>>> {
    pieces(Prepared::new(dialect, tools, choice, options)?, options)
}

/// The tag-like pieces of a prepared request's Lark grammar.
fn pieces(p: Option<Prepared<'_>>, options: &ConstraintOptions) -> Result<Option<Vec<String>>> {
    let Some(p) = p else {
        return Ok(None);
    };
    // Which pieces are tokens changes how literals are written, never which literals
    // the grammar holds: one pass with none of them special sees every literal.
    let none = SpecialTokens::TagLike(BTreeSet::new());
    let mut l = Lark::new(&none);
    l.record_tag_like();
    p.lark(options, &mut l)?;
    Ok(Some(l.tag_like_seen()))
}

impl ToolConstraint {
    /// The decoding constraint of the parser `config` builds (None for `auto` /
    /// `none`), so that a server gets the parser and its constraint from one place.
    ///
    /// The dialect is the Harmony response parser's, or the tool parser's; the
    /// reasoning section comes first when the reasoning parser's start rule says the
    /// response starts in reasoning for the request's thinking flags, read as the
    /// parser reads them (Harmony: unless thinking is switched off). `required` or a named function without a tool parser is
    /// refused: no call could be parsed, and no constraint built.
    pub fn for_config(
        config: &ParserConfig,
        parallel_tool_calls: bool,
        special: &SpecialTokens,
    ) -> Result<Option<ToolConstraint>> {
        match constraint_inputs(config, parallel_tool_calls)? {
            Some((dialect, options)) => {
                let tools = config.tools.as_deref().unwrap_or_default();
                let p = Prepared::of(dialect, tools, &config.tool_choice, &options)?;
                both(p, &options, special)
            }
            None => Ok(None),
        }
    }

    /// [`tag_like_pieces`] of [`for_config`](Self::for_config)'s Lark grammar.
    pub fn tag_like_pieces_for_config(
        config: &ParserConfig,
        parallel_tool_calls: bool,
    ) -> Result<Option<Vec<String>>> {
        match constraint_inputs(config, parallel_tool_calls)? {
            Some((dialect, options)) => {
                let tools = config.tools.as_deref().unwrap_or_default();
                let p = Prepared::of(dialect, tools, &config.tool_choice, &options)?;
                pieces(p, &options)
            }
            None => Ok(None),
        }
    }
}

/// The dialect (its tags spelt for the configuration's suffix) and options of
/// `config`'s constraint, or None when nothing is constrained.
fn constraint_inputs(
    config: &ParserConfig,
    parallel_tool_calls: bool,
) -> Result<Option<(Dialect, ConstraintOptions)>> {
    let normalized = ResponseParser::normalized_config(config);
    let this: &ParserConfig = &normalized;
    let tools = this.tools.as_deref().unwrap_or_default();
    if select(tools, &this.tool_choice)?.is_none() {
        return Ok(None);
    }
    let named = |n: &Option<String>| n.clone().filter(|n| !n.is_empty());
    let response = match named(&this.response_parser) {
        Some(n) => Some(registry::response_dialect(&n)?),
        None => None,
    };
    let harmony = response.as_ref().is_some_and(|r| r.name == harmony::NAME);
    let framed = response
        .as_ref()
        .and_then(|r| r.framed.as_ref().map(|f| (r, f)));
    let (dialect, reasoning) = if let Some((r, f)) = framed {
        // A reasoning message may come first unless thinking is switched off.
        let on = this.thinking_flags().resolve(&[]) != Some(false);
        let section = framed::constraint::FramedCalls::reasoning(f).filter(|_| on);
        (Dialect::Framed(r.clone()), section)
    } else if harmony {
        let (open, close) = DEFAULT_REASONING;
        let on = this.thinking_flags().resolve(&[]) != Some(false);
        let tags = on.then(|| ReasoningSection::starting_inside(open, close));
        (Dialect::Harmony, tags)
    } else if let Some(tool_parser) = named(&this.tool_parser) {
        let suffix = this.tag_suffix.as_deref();
        let reasoning = match named(&this.reasoning_parser) {
            Some(n) => {
                let r = registry::reasoning_dialect_with_suffix(&n, suffix)?;
                let thinking = r.thinking(&this.thinking_flags());
                let starts_inside = r.starts_in_reasoning(thinking);
                // A model that starts in content may still open reasoning itself,
                // unless thinking is off or the dialect keeps reasoning inline in
                // the content (nothing is split off to make room for).
                let may_open =
                    thinking != Some(false) && r.inline_prefix.is_none() && !r.open.is_empty();
                (starts_inside || may_open).then(|| ReasoningSection {
                    open: r.open.clone(),
                    close: r.close.clone(),
                    starts_inside,
                })
            }
            None => None,
        };
        let dialect = match resolve(&tool_parser)? {
            Dialect::Tool(_) => {
                Dialect::Tool(registry::tool_dialect_with_suffix(&tool_parser, suffix)?)
            }
            harmony => harmony,
        };
        (dialect, reasoning)
    } else {
        return Err(Error::InvalidTools(
            "tool_choice 'required' or a named function needs a tool parser: without one \
             no call can be parsed and no decoding constraint can be built"
                .into(),
        ));
    };
    Ok(Some((
        dialect,
        ConstraintOptions {
            reasoning,
            parallel_tool_calls,
        },
    )))
}

#[cfg(test)]
pub(crate) mod tests;
