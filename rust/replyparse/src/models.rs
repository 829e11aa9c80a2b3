//! Choosing the parsers from the model: the model table (`models.json`, data) and its
//! resolution.
//!
//! Users serve `Qwen/Qwen3-Coder-30B-A3B-Instruct` or `deepseek-ai/DeepSeek-V3.1` and
//! expect the right split without knowing parser names. The peers choose in documented
//! ways that go wrong (research/dialects_b.md Part 3); this table carries their correct
//! rows and an explicit row for every mistake the research lists.
//!
//! Resolution, in order, each level breaking the ties of the one before:
//!
//! 1. the chat template, when given: a row matches when every marker of one of its
//!    fingerprints (sets of marker strings the template writes) occurs in the template;
//!    the fingerprint with the most markers, then the longest markers, wins (the
//!    Qwen3.5 template holds the Qwen3-Coder markers plus `<think>`);
//! 2. the HF `config.model_type`, exactly (lower-cased): several rows may share one
//!    (`deepseek_v3` is V3, R1 and V3.1), then the id decides, else the first of them;
//! 3. model-id patterns: lower-cased, `_` read as `-`, `*` any text, unanchored; the
//!    longest pattern (its literal characters) wins, so `hermes-3-llama` beats
//!    `llama-3.1` and `deepseek-v3.2-exp` beats `deepseek-v3.2`.
//!
//! Then table order. A name the row gives that is not registered in this build is left
//! out of the choice (its reason says so); a row with nothing registered still takes
//! part in the matching, and if it wins the model is unknown (better than falling
//! through to a row that answers less well). The table may so name dialects that other
//! work is adding, and grows with them.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::config::ParserConfig;
use crate::error::{Error, ParserKind, Result};
use crate::registry;

/// The table as shipped (JSON text).
pub const MODEL_TABLE_JSON: &str = include_str!("../models.json");

/// One row of the model table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelRow {
    /// A label for the model family (what `detect` prints).
    pub name: String,
    /// Model-id patterns (see the module docs).
    #[serde(default)]
    pub ids: Vec<String>,
    /// HF `config.model_type` values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_types: Vec<String>,
    /// Chat-template fingerprints: each a set of markers that must all occur.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub templates: Vec<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_parser: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_parser: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_parser: Option<String>,
    /// Where the row comes from (the research section and the peers' sources).
    pub source: String,
    /// A peer's mistake this row corrects, or a decision taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Table {
    #[serde(rename = "_comment")]
    _comment: Option<String>,
    models: Vec<ModelRow>,
}

/// The parsers chosen for a model, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParserChoice {
    /// Registry names (canonical), or `None`.
    pub tool_parser: Option<String>,
    pub reasoning_parser: Option<String>,
    pub response_parser: Option<String>,
    /// Which rule matched, the row's source, and any name left out.
    pub reason: String,
    /// The table row chosen (`None` for the documented default).
    pub row: Option<String>,
}

impl ParserChoice {
    /// The documented default, for callers that ask for one when the model is unknown:
    /// Hermes-style `<tool_call>` JSON (`qwen`, the format most open models write) and
    /// no reasoning parser (a reasoning parser that starts in reasoning would hide the
    /// answer of a model that never thinks; `<think>` tags, if any, stay content).
    pub fn fallback(model: &str) -> ParserChoice {
        ParserChoice {
            tool_parser: Some("qwen".into()),
            reasoning_parser: None,
            response_parser: None,
            reason: format!(
                "no table row matches {model:?}: the documented default (Hermes <tool_call> \
                 JSON, no reasoning parser)"
            ),
            row: None,
        }
    }

    /// A parser configuration with these parsers (request fields unset).
    pub fn config(&self) -> ParserConfig {
        ParserConfig {
            tool_parser: self.tool_parser.clone(),
            reasoning_parser: self.reasoning_parser.clone(),
            response_parser: self.response_parser.clone(),
            ..Default::default()
        }
    }
}

/// A pattern, normalised, split at `*`.
#[derive(Debug)]
struct Pattern {
    text: String,
    parts: Vec<String>,
    len: usize,
}

impl Pattern {
    fn new(p: &str) -> Self {
        let norm = normalize_id(p);
        let parts: Vec<String> = norm
            .split('*')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        let len = parts.iter().map(String::len).sum();
        Pattern {
            text: p.to_owned(),
            parts,
            len,
        }
    }

    /// Whether the parts occur in order in `id` (already normalised).
    fn matches(&self, id: &str) -> bool {
        let mut rest = id;
        for part in &self.parts {
            match rest.find(part.as_str()) {
                Some(i) => rest = &rest[i + part.len()..],
                None => return false,
            }
        }
        !self.parts.is_empty()
    }
}

fn normalize_id(s: &str) -> String {
    s.trim().to_lowercase().replace('_', "-")
}

/// A row with its parsers resolved against the registry.
#[derive(Debug)]
struct Resolved {
    row: ModelRow,
    patterns: Vec<Pattern>,
    tool: Option<String>,
    reasoning: Option<String>,
    response: Option<String>,
    missing: Vec<String>,
}

fn canonical(name: &Option<String>, kind: ParserKind, missing: &mut Vec<String>) -> Option<String> {
    let n = name.as_deref()?;
    let found = match kind {
        ParserKind::Tool => registry::tool_dialect(n).map(|d| d.name.clone()),
        ParserKind::Reasoning => registry::reasoning_dialect(n).map(|d| d.name.clone()),
        ParserKind::Response => registry::response_dialect(n).map(|d| d.name.clone()),
    };
    match found {
        Ok(c) => Some(c),
        Err(_) => {
            missing.push(format!("{} parser {n:?}", kind.as_str()));
            None
        }
    }
}

impl Resolved {
    fn new(row: &ModelRow) -> Self {
        let mut missing = Vec::new();
        let tool = canonical(&row.tool_parser, ParserKind::Tool, &mut missing);
        let reasoning = canonical(&row.reasoning_parser, ParserKind::Reasoning, &mut missing);
        let response = canonical(&row.response_parser, ParserKind::Response, &mut missing);
        Resolved {
            patterns: row.ids.iter().map(|p| Pattern::new(p)).collect(),
            row: row.clone(),
            tool,
            reasoning,
            response,
            missing,
        }
    }

    fn active(&self) -> bool {
        self.tool.is_some() || self.reasoning.is_some() || self.response.is_some()
    }

    /// The best fingerprint this template holds: (markers, their total length).
    fn template_score(&self, template: &str) -> Option<(usize, usize, usize)> {
        self.row
            .templates
            .iter()
            .enumerate()
            .filter(|(_, set)| !set.is_empty() && set.iter().all(|m| template.contains(m.as_str())))
            .map(|(i, set)| (set.len(), set.iter().map(String::len).sum(), i))
            .max_by_key(|&(n, len, _)| (n, len))
    }

    /// The longest pattern matching `id`: (its length, its index).
    fn id_score(&self, id: &str) -> Option<(usize, usize)> {
        self.patterns
            .iter()
            .enumerate()
            .filter(|(_, p)| p.matches(id))
            .map(|(i, p)| (p.len, i))
            .max_by_key(|&(len, _)| len)
    }

    fn has_model_type(&self, model_type: &str) -> bool {
        self.row
            .model_types
            .iter()
            .any(|t| t.eq_ignore_ascii_case(model_type))
    }
}

/// The table as shipped, parsed (checked by the tests: it cannot fail at run time).
pub fn model_table() -> &'static [ModelRow] {
    static TABLE: OnceLock<Vec<ModelRow>> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str::<Table>(MODEL_TABLE_JSON)
            .expect("models.json is valid (tested)")
            .models
    })
}

/// Chooses the parsers for a model: see the module docs for the order. Fails with
/// [`Error::UnknownModel`] (naming the closest rows) when nothing matches;
/// [`ParserChoice::fallback`] is the documented default for callers that want one.
pub fn parsers_for_model(
    model: &str,
    model_type: Option<&str>,
    chat_template: Option<&str>,
) -> Result<ParserChoice> {
    // Resolved per call: the registry may gain dialects at run time (a Python
    // declaration), and the table is a few dozen rows.
    let rows: Vec<Resolved> = model_table().iter().map(Resolved::new).collect();
    let id = normalize_id(model);
    let model_type = model_type.map(str::trim).filter(|t| !t.is_empty());
    let template = chat_template.filter(|t| !t.is_empty());

    let id_scores: Vec<Option<(usize, usize)>> = rows.iter().map(|r| r.id_score(&id)).collect();
    let typed: Vec<bool> = rows
        .iter()
        .map(|r| model_type.is_some_and(|t| r.has_model_type(t)))
        .collect();
    // Level 1: the template's fingerprints.
    let t_scores: Vec<Option<(usize, usize, usize)>> = rows
        .iter()
        .map(|r| template.and_then(|t| r.template_score(t)))
        .collect();
    let best_t = t_scores.iter().flatten().map(|&(n, l, _)| (n, l)).max();
    let mut candidates: Vec<usize> = (0..rows.len()).collect();
    let mut by = Vec::new();
    if let Some(best) = best_t {
        candidates.retain(|&i| t_scores[i].is_some_and(|(n, l, _)| (n, l) == best));
        by.push("template");
    }
    // Level 2: model_type.
    if candidates.iter().any(|&i| typed[i]) {
        candidates.retain(|&i| typed[i]);
        by.push("model_type");
    }
    // Level 3: the id.
    let best_id = candidates
        .iter()
        .filter_map(|&i| id_scores[i])
        .map(|(l, _)| l)
        .max();
    if let Some(best) = best_id {
        candidates.retain(|&i| id_scores[i].is_some_and(|(l, _)| l == best));
        by.push("id");
    }
    if by.is_empty() {
        return Err(Error::UnknownModel {
            model: model.to_owned(),
            candidates: closest(&rows, &id),
        });
    }
    let chosen = candidates[0];
    let r = &rows[chosen];
    if !r.active() {
        // The row that answers is not served by this build: say so rather than fall
        // through to a row that answers less well.
        return Err(Error::UnknownModel {
            model: model.to_owned(),
            candidates: vec![format!(
                "{} (needs {}, not registered in this build)",
                r.row.name,
                r.missing.join(", ")
            )],
        });
    }
    let mut why = Vec::new();
    for level in &by {
        match *level {
            "template" => {
                let (_, _, set) = t_scores[chosen].expect("a template candidate");
                why.push(format!(
                    "the chat template writes {:?}",
                    r.row.templates[set]
                ));
            }
            "model_type" => why.push(format!(
                "model_type {:?}",
                model_type.expect("a model_type candidate")
            )),
            _ => {
                let (_, p) = id_scores[chosen].expect("an id candidate");
                why.push(format!(
                    "model id {model:?} matches {:?} (longest pattern)",
                    r.patterns[p].text
                ));
            }
        }
    }
    if candidates.len() > 1 {
        why.push(format!(
            "{} rows tie; the first in the table is taken",
            candidates.len()
        ));
    }
    let mut reason = format!("{}: {} [{}]", r.row.name, why.join("; "), r.row.source);
    if let Some(note) = &r.row.note {
        reason.push_str(&format!(" (note: {note})"));
    }
    if !r.missing.is_empty() {
        reason.push_str(&format!(
            "; not registered in this build, so left out: {}",
            r.missing.join(", ")
        ));
    }
    Ok(ParserChoice {
        tool_parser: r.tool.clone(),
        reasoning_parser: r.reasoning.clone(),
        response_parser: r.response.clone(),
        reason,
        row: Some(r.row.name.clone()),
    })
}

/// The rows whose patterns share the longest run of characters with the id (at least
/// three), best first, at most three.
fn closest(rows: &[Resolved], id: &str) -> Vec<String> {
    let tail = id.rsplit('/').next().unwrap_or(id);
    let mut scored: Vec<(usize, usize, &str)> = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let s = r
                .patterns
                .iter()
                .flat_map(|p| p.parts.iter())
                .map(|part| common_run(tail, part))
                .max()?;
            (s >= 3).then_some((s, i, r.row.name.as_str()))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, _, n)| n.to_owned())
        .collect()
}

/// Length of the longest common substring (bytes; ids are ASCII in practice).
fn common_run(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut best = 0;
    let mut prev = vec![0usize; b.len() + 1];
    for &x in a {
        let mut cur = vec![0usize; b.len() + 1];
        for (j, &y) in b.iter().enumerate() {
            if x == y {
                cur[j + 1] = prev[j] + 1;
                best = best.max(cur[j + 1]);
            }
        }
        prev = cur;
    }
    best
}

/// The configuration for a model (see [`parsers_for_model`]), with the choice and its
/// reason. Request fields (tools, flags) are left for the caller to set.
pub fn config_for_model(
    model: &str,
    model_type: Option<&str>,
    chat_template: Option<&str>,
) -> Result<(ParserConfig, ParserChoice)> {
    let choice = parsers_for_model(model, model_type, chat_template)?;
    Ok((choice.config(), choice))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_parses_and_every_row_is_matchable() {
        let table = model_table();
        assert!(table.len() > 40);
        for r in table {
            assert!(
                !r.ids.is_empty() || !r.templates.is_empty() || !r.model_types.is_empty(),
                "{} cannot be reached",
                r.name
            );
            assert!(!r.source.is_empty(), "{} cites no source", r.name);
            assert!(
                r.tool_parser.is_some()
                    || r.reasoning_parser.is_some()
                    || r.response_parser.is_some(),
                "{} names no parser",
                r.name
            );
        }
    }

    #[test]
    fn patterns_match_in_order_and_longest_wins() {
        let p = Pattern::new("Qwen3-*-Thinking-2507");
        assert!(p.matches(&normalize_id("Qwen/Qwen3-235B-A22B-Thinking-2507")));
        assert!(!p.matches(&normalize_id("Qwen/Qwen3-235B-A22B-Instruct-2507")));
        assert_eq!(p.len, "qwen3--thinking-2507".len());
        assert!(Pattern::new("kimi-k3").matches(&normalize_id("moonshotai/Kimi_K3")));
        assert!(
            !Pattern::new("*").matches("anything"),
            "an empty pattern matches nothing"
        );
    }

    #[test]
    fn unknown_models_name_the_closest_rows() {
        let e = parsers_for_model("acme/Qwen-Ultra-9000", None, None).unwrap_err();
        let Error::UnknownModel { candidates, .. } = &e else {
            panic!("{e}")
        };
        assert!(!candidates.is_empty(), "{e}");
        assert!(e.to_string().contains("Qwen"), "{e}");
        assert!(parsers_for_model("", None, None).is_err());
        let f = ParserChoice::fallback("acme/x");
        assert_eq!(f.tool_parser.as_deref(), Some("qwen"));
        assert_eq!(f.reasoning_parser, None);
    }

    #[test]
    fn for_model_gives_a_config_that_builds() {
        let (config, choice) =
            config_for_model("Qwen/Qwen3-Coder-30B-A3B-Instruct", None, None).unwrap();
        assert_eq!(config.tool_parser.as_deref(), Some("qwen3coder"));
        assert_eq!(choice.reasoning_parser, None);
        assert!(choice.reason.contains("qwen3-coder"), "{}", choice.reason);
        crate::ResponseParser::new(&config).unwrap();
    }
}
