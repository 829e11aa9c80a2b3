//! Deriving a dialect from a model's chat template: see [`dialect_from_chat_template`].
//!
//! One module a concept: `probes` (the probe conversations and the renderer that
//! counts their cost), `diff` (common prefixes and suffixes fixed to marker
//! boundaries, text split into markers), `turn` (flag settings, the generated part of
//! a turn), `reasoning` (tags, separators, start rules), `calls` (the call probes'
//! sections and the family that reads them), `families` (one reader per grammar
//! family), `selfcheck` (render turns with calls, parse them back, compare), `cache`
//! (the bounded cache, registration, pinning).

mod cache;
mod calls;
mod diff;
mod families;
mod probes;
mod reasoning;
mod selfcheck;
mod turn;

#[cfg(test)]
pub(crate) mod tests;

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};

pub use cache::{
    derived_cache_info, dialect_from_chat_template, load_derived_dialect, DerivedCacheInfo,
    DERIVED_CACHE_BYTES, DERIVED_CACHE_ENTRIES,
};

use crate::chat_template::ChatTemplate;
use crate::config::ParserConfig;
use crate::dialect::{
    validate_reasoning_dialect, validate_tool_dialect, ReasoningDialect, Syntax, ToolDialect,
    SEPARATOR_MAX,
};
use crate::request::{ToolChoice, ToolPolicy, ToolSpec};
use crate::response::ResponseParser;
use crate::thinking::ThinkingFlags;
use calls::NoSections;
use probes::{Prober, Turn, CONTENT};
use selfcheck::UnderTest;
use turn::{generated, PromptOf};

/// Why no dialect could be derived from a chat template: the reason, in plain words
/// (what the template does that no declaration can say, or which turn failed the
/// self-check and how).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeriveError {
    /// The reason.
    pub reason: String,
    /// The reason in a few words (the self-check's failing turn without its text), for
    /// a choice's `reason`.
    brief: Option<String>,
}

impl DeriveError {
    fn new(reason: impl Into<String>) -> Self {
        DeriveError {
            reason: reason.into(),
            brief: None,
        }
    }

    /// The reason in a few words: what failed, without the text that shows it.
    pub fn brief(&self) -> &str {
        self.brief.as_deref().unwrap_or(&self.reason)
    }
}

impl fmt::Display for DeriveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no dialect can be derived from this chat template: {}",
            self.reason
        )
    }
}

impl std::error::Error for DeriveError {}

/// The dialects derived from a chat template: ordinary declarations of existing
/// families, registered under [`name`](Self::name), and what the derivation found.
///
/// Serialised (`serde_json`), it is the export a fleet pins: [`to_json`](Self::to_json)
/// writes it, [`load_derived_dialect`] reads it back and registers it, so a server
/// restarted with the same chat template uses the pinned declarations instead of
/// deriving them again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DerivedDialect {
    /// The registry name of both dialects: `derived-` and a stable hash of the chat
    /// template and the render options (the same text always gives the same name).
    pub name: String,
    /// The tool dialect, or `None` when the template writes no tool calls.
    pub tool_parser: Option<ToolDialect>,
    /// The reasoning dialect, or `None` when the template writes no reasoning.
    pub reasoning_parser: Option<ReasoningDialect>,
    /// What the derivation found, in plain words: the family, where a response starts
    /// under each flag setting, what could not be observed, what the self-check read.
    #[serde(default)]
    pub findings: Vec<String>,
    /// How many times the template was rendered to derive and check the dialects.
    #[serde(default)]
    pub renders: usize,
}

impl DerivedDialect {
    /// Derives the dialects of `template` (rendered with `options`: `bos_token`,
    /// `eos_token` and any other keyword argument the template reads), self-checks them,
    /// and returns them without registering or caching anything (see
    /// [`dialect_from_chat_template`] for the cached, registered derivation).
    pub fn derive(template: &str, options: &Map<String, Json>) -> Result<Self, DeriveError> {
        derive(template, options)
    }

    /// The export: this value as JSON text (what [`load_derived_dialect`] reads).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a derived dialect serialises")
    }

    /// Reads an export back and checks it: each dialect as registration checks it, and
    /// both named [`name`](Self::name).
    pub fn from_json(text: &str) -> crate::Result<Self> {
        let d: DerivedDialect = serde_json::from_str(text).map_err(|e| {
            crate::Error::InvalidDialect(format!("not a derived dialect export: {e}"))
        })?;
        if let Some(t) = &d.tool_parser {
            if t.name != d.name {
                return Err(crate::Error::InvalidDialect(format!(
                    "the tool dialect is named {:?}, the export {:?}",
                    t.name, d.name
                )));
            }
            validate_tool_dialect(t)?;
        }
        if let Some(r) = &d.reasoning_parser {
            if r.name != d.name {
                return Err(crate::Error::InvalidDialect(format!(
                    "the reasoning dialect is named {:?}, the export {:?}",
                    r.name, d.name
                )));
            }
            validate_reasoning_dialect(r)?;
        }
        Ok(d)
    }

    /// A parser configuration naming these dialects (request fields unset); they must
    /// be registered ([`dialect_from_chat_template`] and [`load_derived_dialect`] do).
    pub fn config(&self) -> ParserConfig {
        ParserConfig {
            tool_parser: self.tool_parser.as_ref().map(|d| d.name.clone()),
            reasoning_parser: self.reasoning_parser.as_ref().map(|d| d.name.clone()),
            ..ParserConfig::default()
        }
    }

    /// One line on what was derived: the family and tags, the reasoning tags and start.
    pub fn summary(&self) -> String {
        let tool = match &self.tool_parser {
            Some(t) => format!(
                "{} calls in {:?} ... {:?}",
                t.family().name(),
                t.open,
                t.close.as_deref().unwrap_or("")
            ),
            None => "no tool calls".into(),
        };
        let reasoning = match &self.reasoning_parser {
            Some(r) => format!(
                "reasoning {:?} ... {:?}, starting {}",
                r.open,
                r.close,
                start_words(r)
            ),
            None => "no reasoning".into(),
        };
        format!("{tool}; {reasoning}")
    }
}

fn start_words(r: &ReasoningDialect) -> String {
    use crate::dialect::StartMode;
    let flags: Vec<String> = r.thinking_flags.iter().map(|f| f.key.clone()).collect();
    let flags = if flags.is_empty() {
        "enable_thinking".to_owned()
    } else {
        flags.join(" / ")
    };
    match r.starts_in_reasoning {
        StartMode::Always => "in reasoning".into(),
        StartMode::Never => "in content".into(),
        StartMode::UnlessDisabled => format!("in reasoning unless {flags} switches it off"),
        StartMode::WhenEnabled => format!("in reasoning when {flags} switches it on"),
    }
}

/// A stable 64-bit FNV-1a hash (the registry name of a derived dialect must not change
/// between builds or platforms, as std's hasher may).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The options as canonical JSON text (keys sorted), for the name's hash.
pub(crate) fn canonical(options: &Map<String, Json>) -> String {
    let sorted: std::collections::BTreeMap<&String, &Json> = options.iter().collect();
    serde_json::to_string(&sorted).expect("JSON serialises")
}

/// The registry name of the dialects derived from `template` with `options`.
pub(crate) fn derived_name(template: &str, options: &Map<String, Json>) -> String {
    let opts = canonical(options);
    format!(
        "derived-{:016x}",
        fnv1a(&[template.as_bytes(), opts.as_bytes()])
    )
}

/// A whitespace separator a declaration may hold.
fn valid_separator(s: &str) -> bool {
    !s.is_empty() && s.len() <= SEPARATOR_MAX && s.trim().is_empty()
}

/// The separators of a declaration (JSON) that a declaration may hold; the others are
/// dropped and named in `notes`.
fn keep_valid_separators(decl: &mut Json, notes: &mut Vec<String>) {
    let Some(seps) = decl.get_mut("separators").and_then(Json::as_object_mut) else {
        return;
    };
    for (pos, list) in seps.iter_mut() {
        if let Some(items) = list.as_array_mut() {
            items.retain(|s| {
                let ok = s.as_str().is_some_and(valid_separator);
                if !ok {
                    notes.push(format!(
                        "the whitespace {s} the template writes at {pos} is longer than a \
                         separator may be; it is left to the text"
                    ));
                }
                ok
            });
        }
    }
    seps.retain(|_, v| v.as_array().is_none_or(|a| !a.is_empty()));
    if seps.is_empty() {
        decl.as_object_mut()
            .expect("an object")
            .remove("separators");
    }
}

/// The render options with `bos_token` and `eos_token` set when the caller gave none
/// (transformers always passes the tokenizer's; templates concatenate them).
fn with_special_tokens(options: &Map<String, Json>) -> Map<String, Json> {
    let mut o = options.clone();
    o.entry("bos_token").or_insert_with(|| json!("<s>"));
    o.entry("eos_token").or_insert_with(|| json!("</s>"));
    o
}

/// The derivation (uncached, unregistered).
fn derive(template: &str, options: &Map<String, Json>) -> Result<DerivedDialect, DeriveError> {
    derive_with(template, options, &mut None)
}

/// The derivation, and every render it made (uncached, unregistered): for the test
/// suite, which renders each again with transformers and compares.
#[cfg(feature = "internals")]
pub fn derive_recording_renders(
    template: &str,
    options: &Map<String, Json>,
) -> (
    Result<DerivedDialect, DeriveError>,
    Vec<probes::RecordedRender>,
) {
    let mut record = Some(Vec::new());
    let result = derive_with(template, options, &mut record);
    (result, record.unwrap_or_default())
}

#[cfg(feature = "internals")]
pub use probes::RecordedRender;

/// The fuel a derivation uses (a development aid for choosing the budget).
#[cfg(test)]
pub(crate) fn derive_fuel(template: &str) -> (bool, u64) {
    let mut compiled = ChatTemplate::new(template).expect("compiles");
    let mut prober = Prober::new(&mut compiled, with_special_tokens(&Map::new()));
    let ok = derive_probed(derived_name(template, &Map::new()), &mut prober).is_ok();
    (ok, prober.fuel)
}

/// The derivation; the renders are recorded into `record` when it is `Some`.
fn derive_with(
    template: &str,
    options: &Map<String, Json>,
    record: &mut Option<Vec<probes::RecordedRender>>,
) -> Result<DerivedDialect, DeriveError> {
    let name = derived_name(template, options);
    let mut compiled = ChatTemplate::new(template)
        .map_err(|e| DeriveError::new(format!("the chat template does not compile: {e}")))?;
    let mut prober = Prober::new(&mut compiled, with_special_tokens(options));
    prober.record = record.take();
    let result = derive_probed(name, &mut prober);
    *record = prober.record.take();
    result
}

/// The derivation with a prober ready.
fn derive_probed(name: String, prober: &mut Prober<'_>) -> Result<DerivedDialect, DeriveError> {
    prober.find_shape().map_err(|e| {
        DeriveError::new(format!(
            "the template fails on a plain conversation (a user's message and an answer): {e}"
        ))
    })?;
    let result = derive_steps(name, prober);
    if prober.out_of_fuel {
        return Err(DeriveError::new(format!(
            "rendering the probes ran out of fuel (each render may use {}, the derivation's \
             renders {} together): the template does far more work than a chat template \
             needs",
            ChatTemplate::DEFAULT_FUEL,
            probes::DERIVE_FUEL
        )));
    }
    result
}

/// The derivation's steps.
fn derive_steps(name: String, prober: &mut Prober<'_>) -> Result<DerivedDialect, DeriveError> {
    let prompts = turn::settings(prober).map_err(DeriveError::new)?;
    let mut findings = Vec::new();
    let found_reasoning = reasoning::analyse(prober, &prompts).map_err(DeriveError::new)?;
    // The calls are read under the first setting whose history extends its prompt.
    let base = prompts
        .iter()
        .position(|p| {
            prober
                .history(&Turn::content(CONTENT), &p.setting.kwargs())
                .ok()
                .and_then(|h| generated(&p.tail, &h))
                .is_some_and(|g| g.skipped.trim().is_empty())
        })
        .unwrap_or(0);
    let (tool, turn_end) = tool_dialect(&name, prober, &prompts[base], &mut findings)?;
    let reasoning = match &found_reasoning {
        Some(r) => Some(reasoning_dialect(&name, r, &prompts, &mut findings)?),
        None => None,
    };
    if tool.is_none() && reasoning.is_none() {
        return Err(DeriveError::new(
            "the template writes neither tool calls nor reasoning in an assistant turn, so \
             there is nothing to parse: every output is content",
        ));
    }
    let checked = self_check(
        prober,
        &prompts,
        tool.as_ref(),
        reasoning.as_ref(),
        turn_end.as_deref(),
    )?;
    findings.push(format!(
        "self-check: {} assistant turns rendered and read back ({} with calls){}",
        checked.turns,
        checked.with_calls,
        if checked.not_shown > 0 {
            format!(
                " ({} more the template refuses or cannot show as generated)",
                checked.not_shown
            )
        } else {
            String::new()
        }
    ));
    Ok(DerivedDialect {
        name,
        tool_parser: tool,
        reasoning_parser: reasoning,
        findings,
        renders: prober.renders,
    })
}

/// The tool dialect of the call probes under `base` (`None` when the template writes
/// no calls), and what ends a turn with calls.
fn tool_dialect(
    name: &str,
    prober: &mut Prober<'_>,
    base: &PromptOf,
    findings: &mut Vec<String>,
) -> Result<(Option<ToolDialect>, Option<String>), DeriveError> {
    let sections = match calls::sections(prober, base) {
        Ok(sections) => sections,
        Err(NoSections::NoCalls(why)) => {
            findings.push(format!("no tool dialect: {why}"));
            return Ok((None, None));
        }
        Err(NoSections::Fails(why)) => return Err(DeriveError::new(why)),
    };
    let shape = calls::classify(&sections).map_err(DeriveError::new)?;
    let mut notes = shape.notes.clone();
    let mut decl = calls::declaration(name, &shape, &sections);
    keep_valid_separators(&mut decl, &mut notes);
    let invalid = |e: crate::Error| {
        DeriveError::new(format!("the calls read as an invalid declaration: {e}"))
    };
    let d = ToolDialect::from_value(decl).map_err(invalid)?;
    validate_tool_dialect(&d).map_err(invalid)?;
    findings.push(format!(
        "tool calls: the {} family, in {:?} ... {:?}",
        shape.family,
        d.open,
        d.close.as_deref().unwrap_or("(the end of the call)")
    ));
    if sections.content == calls::ContentPlace::Dropped {
        findings.push("the template leaves a turn's content out when the turn has calls".into());
    }
    let turn_end = shape.turn_end.clone().or_else(|| sections.turn_end.clone());
    if let Some(end) = &turn_end {
        findings.push(format!(
            "the template ends a turn with calls with {end:?} (the end of the turn, not the \
             calls' markup)"
        ));
    }
    findings.extend(notes);
    Ok((Some(d), turn_end))
}

/// The reasoning dialect of what the reasoning probes found.
fn reasoning_dialect(
    name: &str,
    r: &reasoning::Reasoning,
    prompts: &[PromptOf],
    findings: &mut Vec<String>,
) -> Result<ReasoningDialect, DeriveError> {
    let mut decl = json!({
        "name": name, "open": r.open, "close": r.close,
        "starts_in_reasoning": r.start,
        "thinking_flags": r.flags,
        "separators": r.separators,
    });
    if let Some((open, close)) = &r.content_wrapper {
        decl["content_wrappers"] = json!([{"open": open, "close": close}]);
        findings.push(format!(
            "the template wraps the content in {open:?} ... {close:?} (protocol, dropped)"
        ));
    }
    let mut notes = Vec::new();
    keep_valid_separators(&mut decl, &mut notes);
    let invalid = |e: String| {
        DeriveError::new(format!(
            "the reasoning reads as an invalid declaration: {e}"
        ))
    };
    let d: ReasoningDialect = serde_json::from_value(decl).map_err(|e| invalid(e.to_string()))?;
    validate_reasoning_dialect(&d).map_err(|e| invalid(e.to_string()))?;
    let starts: Vec<String> = prompts
        .iter()
        .zip(&r.starts)
        .map(|(p, &s)| {
            format!(
                "under {} a response starts in {}",
                p.setting.label(),
                if s { "reasoning" } else { "content" }
            )
        })
        .collect();
    findings.push(format!(
        "reasoning: {:?} ... {:?}; {}",
        d.open,
        d.close,
        starts.join(", ")
    ));
    findings.extend(notes);
    Ok(d)
}

/// The self-check of the derived dialects.
fn self_check(
    prober: &mut Prober<'_>,
    prompts: &[PromptOf],
    tool: Option<&ToolDialect>,
    reasoning: Option<&ReasoningDialect>,
    turn_end: Option<&str>,
) -> Result<selfcheck::Checked, DeriveError> {
    let (tool_arc, reasoning_arc) = (
        tool.cloned().map(Arc::new),
        reasoning.cloned().map(Arc::new),
    );
    let factory = |kwargs: &Map<String, Json>, tools: &[Json]| -> crate::Result<ResponseParser> {
        let specs = tools
            .iter()
            .map(ToolSpec::from_json)
            .collect::<crate::Result<Vec<_>>>()?;
        let policy = ToolPolicy::new(Some(specs), ToolChoice::Auto)?;
        let thinking = reasoning_arc.as_ref().and_then(|r| {
            r.thinking(&ThinkingFlags {
                enable_thinking: None,
                chat_template_kwargs: Some(kwargs),
                reasoning_effort: kwargs.get("reasoning_effort").and_then(Json::as_str),
            })
        });
        Ok(ResponseParser::from_dialects(
            tool_arc.clone(),
            reasoning_arc.clone(),
            &policy,
            thinking,
            None,
        ))
    };
    let keeps_ids = tool.is_some_and(|t| match &t.syntax {
        Syntax::JsonEnvelope(e) => e.id_key.is_some(),
        Syntax::Header(h) => h.id_marker.is_some() || h.id_sep.is_some(),
        _ => false,
    });
    let under = UnderTest {
        parser: &factory,
        reasoning_tags: reasoning.map(|r| (r.open.as_str(), r.close.as_str())),
        keeps_ids,
        turn_end,
        calls_expected: tool.is_some(),
    };
    selfcheck::run(prober, prompts, &under).map_err(|e| DeriveError {
        reason: format!("the derived dialect fails its self-check: {}", e.detail),
        brief: Some(format!(
            "the derived dialect fails its self-check: {}",
            e.short
        )),
    })
}

/// Why parsers chosen some other way do not pass the self-check.
#[derive(Debug, Clone)]
pub(crate) enum CheckFailed {
    /// A turn with calls does not read back (named in a few words).
    Fails(String),
    /// No turn could be checked: the template fails on the probes, or refuses or hides
    /// every turn with calls.
    NotChecked(String),
}

/// The self-check of parsers chosen some other way (a model-table row chosen by the
/// template's markers alone): `Ok` when the template's turns with calls read back with
/// them.
pub(crate) fn check_parsers(
    template: &str,
    options: &Map<String, Json>,
    config: &ParserConfig,
) -> Result<(), CheckFailed> {
    let not_checked = |e: String| CheckFailed::NotChecked(e);
    let mut compiled = ChatTemplate::new(template).map_err(|e| not_checked(e.to_string()))?;
    let mut prober = Prober::new(&mut compiled, with_special_tokens(options));
    prober
        .find_shape()
        .map_err(|e| not_checked(e.to_string()))?;
    let prompts: Vec<PromptOf> = turn::settings(&mut prober).map_err(not_checked)?;
    for p in &prompts {
        if prober.find_reasoning_key(&p.setting.kwargs()).is_some() {
            break;
        }
    }
    // What ends a turn with calls (read as the derivation reads it: the self-check
    // must cut the turn where the model stops, whatever parsers read it).
    let turn_end = calls::sections(&mut prober, &prompts[0])
        .ok()
        .and_then(|s| {
            let shape = calls::classify(&s).ok().and_then(|c| c.turn_end);
            shape.or(s.turn_end)
        });
    let reasoning = config
        .reasoning_parser
        .as_deref()
        .and_then(|n| crate::registry::reasoning_dialect(n).ok());
    let factory = |kwargs: &Map<String, Json>, tools: &[Json]| -> crate::Result<ResponseParser> {
        let specs = tools
            .iter()
            .map(ToolSpec::from_json)
            .collect::<crate::Result<Vec<_>>>()?;
        let c = ParserConfig {
            tools: Some(specs),
            chat_template_kwargs: Some(kwargs.clone()),
            reasoning_effort: kwargs
                .get("reasoning_effort")
                .and_then(Json::as_str)
                .map(str::to_owned),
            ..config.clone()
        };
        ResponseParser::new(&c)
    };
    let under = UnderTest {
        parser: &factory,
        reasoning_tags: reasoning
            .as_ref()
            .map(|r| (r.open.as_str(), r.close.as_str())),
        keeps_ids: false,
        turn_end: turn_end.as_deref(),
        calls_expected: config.tool_parser.is_some() || config.response_parser.is_some(),
    };
    let checked = selfcheck::run(&mut prober, &prompts, &under);
    if prober.out_of_fuel {
        return Err(CheckFailed::NotChecked(
            "rendering the template ran out of fuel".into(),
        ));
    }
    checked.map(|_| ()).map_err(|e| {
        if e.nothing_checked {
            CheckFailed::NotChecked(e.short)
        } else {
            CheckFailed::Fails(e.short)
        }
    })
}
