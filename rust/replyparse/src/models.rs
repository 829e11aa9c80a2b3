//! Choosing the parsers from the model: the model table (`models.json`, data) and its
//! resolution. The rules, and the cache, are documented where users read them:
//! [`parsers_for_model`].

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::cache::{sampled_hash, Cache, Limits, Sizes};
use crate::config::ParserConfig;
use crate::derive::{self, CheckFailed, DerivedDialect};
use crate::dialect::SuffixedTags;
use crate::error::{Error, ModelCandidate, ParserKind, Result};
use crate::registry;

/// The table as shipped (JSON text), which the Python package reads.
pub const MODEL_TABLE_JSON: &str = include_str!("../models.json");

/// One row of the model table ([`model_table`]): how to recognise a family of models,
/// and which parsers serve it.
///
/// A row matches by chat-template fingerprint, by HF `model_type` or by model-id
/// pattern (see [`parsers_for_model`] for the order). Rows are data: the table is
/// `models.json` in the crate, embedded at compile time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelRow {
    /// A label for the model family (what `detect` prints).
    pub name: String,
    /// Model-id patterns: lower-cased, `_` read as `-`, `*` any text, unanchored (see
    /// [`parsers_for_model`]).
    #[serde(default)]
    pub ids: Vec<String>,
    /// HF `config.model_type` values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_types: Vec<String>,
    /// Chat-template fingerprints: each a set of markers that must all occur.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub templates: Vec<Vec<String>>,
    /// The tool parser the row names, if any (a registry name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_parser: Option<String>,
    /// The reasoning parser the row names, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_parser: Option<String>,
    /// The response parser the row names, if any (`gpt-oss`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_parser: Option<String>,
    /// Where the row comes from (for maintainers; not shown in a choice's `reason`).
    pub source: String,
    /// A mistake of another stack this row corrects, or a decision taken (for
    /// maintainers; not shown in a choice's `reason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Table {
    #[serde(rename = "_comment")]
    _comment: Option<String>,
    models: Vec<ModelRow>,
}

/// The parsers chosen for a model, and why: what [`parsers_for_model`] answers.
///
/// The names are registered in this build (a name the row gives that is not registered
/// is left out, and `reason` says so), so a configuration made from them
/// ([`config`](Self::config)) builds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParserChoice {
    /// The tool parser (its canonical registry name), or `None`.
    pub tool_parser: Option<String>,
    /// The reasoning parser, or `None`.
    pub reasoning_parser: Option<String>,
    /// The response parser (`gpt-oss`), or `None` for the default composition.
    pub response_parser: Option<String>,
    /// Which rule matched, in plain words, and any name left out.
    pub reason: String,
    /// The table row chosen (`None` for the documented default).
    pub row: Option<String>,
    /// The checkpoint's tag suffix, when the chosen dialects' tags carry one (see
    /// [`TagSuffix`](crate::TagSuffix)) and the chat template given shows it (`""`:
    /// the unsuffixed tags); `None` otherwise. [`config`](Self::config) passes it on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_suffix: Option<String>,
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
            tag_suffix: None,
        }
    }

    /// A parser configuration with these parsers (request fields unset).
    pub fn config(&self) -> ParserConfig {
        ParserConfig {
            tool_parser: self.tool_parser.clone(),
            reasoning_parser: self.reasoning_parser.clone(),
            response_parser: self.response_parser.clone(),
            tag_suffix: self.tag_suffix.clone(),
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

/// The model table as shipped: every row, in table order. The table is embedded in the
/// crate and parsed once, on first use (the crate's tests check it, so this cannot fail
/// at run time).
///
/// ```
/// let row = replyparse::model_table().iter().find(|r| r.name == "Qwen3-Coder").unwrap();
/// assert_eq!(row.tool_parser.as_deref(), Some("qwen3coder"));
/// ```
pub fn model_table() -> &'static [ModelRow] {
    static TABLE: OnceLock<Vec<ModelRow>> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str::<Table>(MODEL_TABLE_JSON)
            .expect("models.json is valid (tested)")
            .models
    })
}

/// The table's rows resolved against the registry of one generation (the registry
/// may gain dialects at run time: a Python declaration).
fn resolved_rows() -> Arc<Vec<Resolved>> {
    static ROWS: Mutex<Option<(u64, Arc<Vec<Resolved>>)>> = Mutex::new(None);
    // Read before resolving: rows resolved while a registration lands are tagged with
    // the older generation, so they are resolved again next time.
    let generation = registry::generation();
    if let Some((g, rows)) = &*lock(&ROWS) {
        if *g == generation {
            return rows.clone();
        }
    }
    let rows = Arc::new(model_table().iter().map(Resolved::new).collect::<Vec<_>>());
    *lock(&ROWS) = Some((generation, rows.clone()));
    rows
}

/// The cache's data stays consistent if a panic unwinds while it is held (every
/// update is one assignment or push), so a poisoned lock is still usable.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Most answers [`parsers_for_model`] keeps (see the module docs, "Caching").
pub const CHOICE_CACHE_ENTRIES: usize = 256;
/// Most bytes of keys (model, model_type, chat template) and reasons it keeps.
pub const CHOICE_CACHE_BYTES: usize = 4 << 20;
/// A key longer than this (a very long chat template) is answered, not kept.
pub const CHOICE_CACHE_MAX_KEY_BYTES: usize = 256 << 10;

/// A cached answer's key: the model, the model_type and the chat template.
struct ChoiceKey {
    model: Box<str>,
    model_type: Option<Box<str>>,
    template: Option<Box<str>>,
    /// The render options as canonical JSON ("" for none).
    options: Box<str>,
}

/// A cache key: the model, the model_type, the chat template and the render options
/// (canonical JSON text, "" for none).
type Key<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a str);

impl ChoiceKey {
    fn is(&self, key: Key<'_>) -> bool {
        let (model, model_type, template, options) = key;
        &*self.model == model
            && self.model_type.as_deref() == model_type
            && self.template.as_deref() == template
            && &*self.options == options
    }
}

static CHOICES: Cache<ChoiceKey, Result<ParserChoice>> = Cache::new(Limits {
    entries: CHOICE_CACHE_ENTRIES,
    bytes: CHOICE_CACHE_BYTES,
    key_bytes: CHOICE_CACHE_MAX_KEY_BYTES,
});

/// The key's hash: the model, the model_type and the template's length and ends, so
/// its cost does not grow with the template (the full key is compared on a match).
fn key_hash(key: Key<'_>) -> u64 {
    let (model, model_type, template, options) = key;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    model.hash(&mut h);
    model_type.hash(&mut h);
    options.hash(&mut h);
    if let Some(t) = template {
        sampled_hash(t.as_bytes()).hash(&mut h);
    }
    h.finish()
}

fn answer_bytes(answer: &Result<ParserChoice>) -> usize {
    match answer {
        Ok(c) => c.reason.len() + c.row.as_ref().map_or(0, String::len) + 64,
        Err(Error::UnknownModel {
            model,
            candidates,
            derivation,
        }) => {
            model.len()
                + candidates.iter().map(|c| c.row.len() + 64).sum::<usize>()
                + derivation.as_ref().map_or(0, String::len)
                + 64
        }
        Err(_) => 64,
    }
}

/// Chooses the parsers for a model from the model table, so users can serve
/// `Qwen/Qwen3-Coder-30B-A3B-Instruct` or `deepseek-ai/DeepSeek-V3.1` without knowing
/// parser names. Fails with [`Error::UnknownModel`] (naming the closest rows) when
/// nothing matches; [`ParserChoice::fallback`] is the documented default for callers
/// that want one.
///
/// ```
/// let choice = replyparse::parsers_for_model("deepseek-ai/DeepSeek-V3.1", None, None)?;
/// assert_eq!(choice.tool_parser.as_deref(), Some("deepseek_v31"));
/// assert_eq!(choice.row.as_deref(), Some("DeepSeek-V3.1"));
/// # Ok::<(), replyparse::Error>(())
/// ```
///
/// # How a row is chosen
///
/// Each level breaks the ties of the one before:
///
/// 1. the chat template, when given: a row matches when every marker of one of its
///    fingerprints (sets of marker strings the template writes) occurs in the template;
///    the fingerprint with the most markers, then the longest markers, wins (the
///    Qwen3.5 template holds the Qwen3-Coder markers plus `<think>`). But the rows the
///    model id names (level 3) come first when the template does not contradict them:
///    a row without fingerprints, or one whose fingerprint the template holds. So
///    `Qwen/QwQ-32B` with its template (which holds the Hermes markers) stays QwQ,
///    while `Qwen/Qwen3-8B` with a Harmony template (`<|channel|>`, and none of the
///    Qwen3 row's markers) is gpt-oss. Among the rows the id names, those whose best
///    fingerprint the template holds come first (a template revision that defaults
///    thinking off is told from the released one by a marker more);
/// 2. the HF `config.model_type`, exactly (lower-cased): several rows may share one
///    (`deepseek_v3` is V3, R1 and V3.1), then the id decides, else the first of them;
/// 3. model-id patterns: lower-cased, `_` read as `-`, `*` any text, unanchored; the
///    longest pattern (its literal characters) wins, so `hermes-3-llama` beats
///    `llama-3.1` and `deepseek-v3.2-exp` beats `deepseek-v3.2`.
///
/// Then table order. A name the row gives that is not registered in this build is left
/// out of the choice (its reason says so); a row with nothing registered still takes
/// part in the matching, and if it wins the model is unknown (better than falling
/// through to a row that answers less well).
///
/// The choice's `reason` says in plain words which rule matched (the template's
/// markers, the `model_type`, the id pattern); the row's `source` and `note` are data
/// for maintainers (see [`ModelRow`]) and are not part of it.
///
/// # Models the table does not know
///
/// Given the chat template, the answer does not rest on markers alone:
///
/// - a row only the template's markers chose (neither the model id nor the
///   `model_type` names it) is self-checked: turns with tool calls are rendered through
///   the template and parsed back with the row's parsers. When they read back, the row
///   stands and the reason says so; when they do not, the dialect derived from the
///   template ([`dialect_from_chat_template`](crate::dialect_from_chat_template)) takes
///   its place, and the reason says why; when none can be derived either, the row
///   stands and the reason says both;
/// - a model no row matches gets the dialect derived from its template (registered
///   under a `derived-` name, `row` left `None`); when none can be derived, the error
///   ([`Error::UnknownModel`]) carries the reason;
/// - a row the model id or `model_type` names is never replaced.
///
/// The self-check and the derivation are paid once per template (their answers are
/// cached, and so is the choice).
///
/// # Caching
///
/// Servers choose per request, so answers (errors included) are cached per exact
/// `(model, model_type, chat_template, render options)`. The cache is bounded: at most 256 entries and
/// 4 MiB of keys and reasons; a key over 256 KiB is answered but not kept, and when
/// full the least recently used entry goes. A lookup hashes the model, the model_type
/// and the template's length and two ends (constant time, whatever the template's
/// size), then compares the candidate's key in full, so a hash collision costs a
/// comparison, never a wrong answer. Answers depend on the registry, so registering a
/// dialect ([`registry::generation`]) empties the cache.
pub fn parsers_for_model(
    model: &str,
    model_type: Option<&str>,
    chat_template: Option<&str>,
) -> Result<ParserChoice> {
    parsers_for_model_with(model, model_type, chat_template, &serde_json::Map::new())
}

/// [`parsers_for_model`], with the render options a dialect is derived from the chat
/// template with (and a row chosen by the template's markers alone is self-checked
/// with): the keyword arguments the template is rendered with besides the messages
/// and tools, as for [`dialect_from_chat_template`](crate::dialect_from_chat_template)
/// (`bos_token`, `eos_token`, another variable the template reads; the thinking flags
/// are probed, not given). Without a chat template they change nothing. Answers are
/// cached per options too.
///
/// ```
/// use replyparse::{parsers_for_model, parsers_for_model_with};
///
/// // A template that cannot render without a variable its server passes.
/// let template = r#"{%- if not turn_end %}{{ raise_exception("turn_end is required") }}{% endif %}
/// {%- for m in messages %}<|im_start|>{{ m.role }}
/// {{ m.content }}
/// {%- for c in m.tool_calls or [] %}
/// <call>{{ {"name": c.function.name, "arguments": c.function.arguments} | tojson }}</call>
/// {%- endfor %}{{ turn_end }}
/// {% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
/// {% endif %}"#;
/// assert!(parsers_for_model("acme/unknown-7b", None, Some(template)).is_err());
/// let mut options = serde_json::Map::new();
/// options.insert("turn_end".into(), "<|im_end|>".into());
/// let choice = parsers_for_model_with("acme/unknown-7b", None, Some(template), &options)?;
/// assert!(choice.tool_parser.as_deref().is_some_and(|n| n.starts_with("derived-")));
/// # Ok::<(), replyparse::Error>(())
/// ```
pub fn parsers_for_model_with(
    model: &str,
    model_type: Option<&str>,
    chat_template: Option<&str>,
    render_options: &serde_json::Map<String, serde_json::Value>,
) -> Result<ParserChoice> {
    let generation = registry::generation();
    let options = if render_options.is_empty() {
        String::new()
    } else {
        derive::canonical(render_options)
    };
    let key = (model, model_type, chat_template, options.as_str());
    let hash = key_hash(key);
    let is = |k: &ChoiceKey| k.is(key);
    if let Some(answer) = CHOICES.get(generation, hash, is) {
        return answer;
    }
    let chosen = choose_by(&resolved_rows(), model, model_type, chat_template);
    let answer = match chat_template.filter(|t| !t.is_empty()) {
        Some(t) => with_template(chosen, model, t, render_options),
        None => match chosen {
            Chosen::Row { choice, .. } => Ok(choice),
            Chosen::NoRow(e) | Chosen::Inactive(e) => Err(e),
        },
    };
    let key = || ChoiceKey {
        model: model.into(),
        model_type: model_type.map(Into::into),
        template: chat_template.map(Into::into),
        options: options.as_str().into(),
    };
    let sizes = Sizes {
        key: model.len()
            + model_type.map_or(0, str::len)
            + chat_template.map_or(0, str::len)
            + options.len(),
        value: answer_bytes(&answer),
    };
    CHOICES.put(generation, hash, is, key, &answer, sizes);
    answer
}

/// Markers as a reader sees them: `<tool_call>`, `<function=` and `<parameter=`.
fn markers(set: &[String]) -> String {
    let quoted: Vec<String> = set.iter().map(|m| format!("{m:?}")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The choice itself (uncached), as the table alone answers it.
#[cfg(test)]
fn choose(
    rows: &[Resolved],
    model: &str,
    model_type: Option<&str>,
    chat_template: Option<&str>,
) -> Result<ParserChoice> {
    match choose_by(rows, model, model_type, chat_template) {
        Chosen::Row { choice, .. } => Ok(choice),
        Chosen::NoRow(e) | Chosen::Inactive(e) => Err(e),
    }
}

/// What the table answers, and how.
enum Chosen {
    /// A row; `fingerprint_only` when only the chat template's markers chose it (no
    /// model id pattern, no model_type).
    Row {
        choice: ParserChoice,
        fingerprint_only: bool,
    },
    /// No row matches.
    NoRow(Error),
    /// The row that answers is not served by this build.
    Inactive(Error),
}

/// The choice itself (uncached), saying how it was made.
fn choose_by(
    rows: &[Resolved],
    model: &str,
    model_type: Option<&str>,
    chat_template: Option<&str>,
) -> Chosen {
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
        let confirmed = named_and_not_contradicted(rows, &id_scores, &t_scores);
        if confirmed.is_empty() {
            candidates.retain(|&i| t_scores[i].is_some_and(|(n, l, _)| (n, l) == best));
            by.push("template");
        } else {
            // Among the rows the id names, one whose fingerprint the template holds
            // outranks one it does not decide (the Qwen3.5 revision that defaults
            // thinking off holds one marker more than the released template), the
            // best fingerprint first.
            let best_confirmed = confirmed
                .iter()
                .filter_map(|&i| t_scores[i].map(|(n, l, _)| (n, l)))
                .max();
            candidates = confirmed;
            if let Some(best) = best_confirmed {
                candidates.retain(|&i| t_scores[i].is_some_and(|(n, l, _)| (n, l) == best));
            }
            by.push("template_agrees");
        }
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
        return Chosen::NoRow(Error::UnknownModel {
            model: model.to_owned(),
            candidates: closest(rows, &id),
            derivation: None,
        });
    }
    let chosen = candidates[0];
    let r = &rows[chosen];
    if !r.active() {
        // The row that answers is not served by this build: say so rather than fall
        // through to a row that answers less well.
        return Chosen::Inactive(Error::UnknownModel {
            model: model.to_owned(),
            candidates: vec![ModelCandidate {
                row: r.row.name.clone(),
                parsers: Vec::new(),
                note: Some(format!(
                    "needs {}, not registered in this build",
                    r.missing.join(", ")
                )),
            }],
            derivation: None,
        });
    }
    let mut why = Vec::new();
    for level in &by {
        match *level {
            "template" => {
                let (_, _, set) = t_scores[chosen].expect("a template candidate");
                why.push(format!(
                    "the chat template contains {}",
                    markers(&r.row.templates[set])
                ));
            }
            "template_agrees" => why.push(match t_scores[chosen] {
                Some((_, _, set)) => format!(
                    "the chat template contains {}",
                    markers(&r.row.templates[set])
                ),
                None => "the chat template says nothing against the model id".to_owned(),
            }),
            "model_type" => why.push(format!(
                "the model_type is {:?}",
                model_type.expect("a model_type candidate")
            )),
            _ => {
                let (_, p) = id_scores[chosen].expect("an id candidate");
                why.push(format!(
                    "the model id {model:?} contains {:?} (the longest matching pattern)",
                    r.patterns[p].text
                ));
            }
        }
    }
    if candidates.len() > 1 {
        why.push(format!(
            "{} rows match equally; the first in the table is taken",
            candidates.len()
        ));
    }
    let mut reason = format!("{}: {}", r.row.name, why.join("; "));
    if !r.missing.is_empty() {
        reason.push_str(&format!(
            "; not registered in this build, so left out: {}",
            r.missing.join(", ")
        ));
    }
    Chosen::Row {
        choice: ParserChoice {
            tool_parser: r.tool.clone(),
            reasoning_parser: r.reasoning.clone(),
            response_parser: r.response.clone(),
            reason,
            row: Some(r.row.name.clone()),
            tag_suffix: template.and_then(|t| suffix_in_template(r, t)),
        },
        fingerprint_only: by == ["template"],
    }
}

/// A derived dialect as the choice for a model: its names, and why.
fn derived_choice(d: &DerivedDialect, reason: String) -> ParserChoice {
    ParserChoice {
        tool_parser: d.tool_parser.as_ref().map(|t| t.name.clone()),
        reasoning_parser: d.reasoning_parser.as_ref().map(|r| r.name.clone()),
        response_parser: None,
        reason,
        row: None,
        tag_suffix: None,
    }
}

/// The answer once the chat template has had its say: a row chosen by its markers
/// alone is kept only if the template's own tool calls read back with the row's
/// parsers, else a dialect derived from the template takes its place (when one can
/// be); a model no row matches gets the derived dialect (when one can be derived).
/// A row the model id or model_type names is never replaced.
fn with_template(
    chosen: Chosen,
    model: &str,
    template: &str,
    options: &serde_json::Map<String, serde_json::Value>,
) -> Result<ParserChoice> {
    let derive = || derive::dialect_from_chat_template(template, options);
    match chosen {
        Chosen::Row {
            choice,
            fingerprint_only: false,
        } => Ok(choice),
        Chosen::Row {
            mut choice,
            fingerprint_only: true,
        } => match derive::check_parsers(template, options, &choice.config()) {
            Ok(()) => {
                choice
                    .reason
                    .push_str("; the template's own tool calls read back with these parsers");
                Ok(choice)
            }
            Err(CheckFailed::NotChecked(why)) => {
                choice.reason.push_str(&format!(
                    " (the template's own tool calls could not be checked: {why})"
                ));
                Ok(choice)
            }
            Err(CheckFailed::Fails(failed)) => match derive() {
                Ok(d) => {
                    let row = choice.row.as_deref().unwrap_or("the row");
                    Ok(derived_choice(
                        &d,
                        format!(
                            "{}, but the template's own tool calls do not read back with \
                             {row}'s parsers ({failed}); a dialect derived from the chat \
                             template instead: {} ({})",
                            choice.reason,
                            d.name,
                            d.summary()
                        ),
                    ))
                }
                Err(refused) => {
                    choice.reason.push_str(&format!(
                        " (the template's own tool calls do not read back with these \
                         parsers: {failed}; and no dialect can be derived from it: {})",
                        refused.brief()
                    ));
                    Ok(choice)
                }
            },
        },
        Chosen::NoRow(Error::UnknownModel {
            model: m,
            candidates,
            ..
        }) => match derive() {
            Ok(d) => Ok(derived_choice(
                &d,
                format!(
                    "no model table row matches {model:?}: a dialect derived from its chat \
                     template, {} ({})",
                    d.name,
                    d.summary()
                ),
            )),
            Err(refused) => Err(Error::UnknownModel {
                model: m,
                candidates,
                derivation: Some(refused.brief().to_owned()),
            }),
        },
        Chosen::NoRow(e) | Chosen::Inactive(e) => Err(e),
    }
}

/// The tag suffix `template` writes the chosen dialects' suffixed tags with (None when
/// they have none, or the template shows none).
fn suffix_in_template(r: &Resolved, template: &str) -> Option<String> {
    let tool = r
        .tool
        .as_deref()
        .and_then(|n| registry::tool_dialect(n).ok());
    let reasoning = r
        .reasoning
        .as_deref()
        .and_then(|n| registry::reasoning_dialect(n).ok());
    let tags = SuffixedTags::of(tool.as_deref(), reasoning.as_deref());
    if tags.is_empty() {
        return None;
    }
    tags.in_template(template)
}

/// The rows the model id names (those with its longest matching pattern) that the chat
/// template does not contradict: a row with fingerprints contradicts a template that
/// holds none of them (the template is another family's); a row with none cannot.
///
/// An exact model id outranks a fingerprint that is not specific to one family (the
/// Hermes markers `<tool_call>` and `</tool_call>` are in the QwQ, Qwen2.5 and Granite
/// 4.0 templates too); a template whose markers deny the id's row still wins.
fn named_and_not_contradicted(
    rows: &[Resolved],
    id_scores: &[Option<(usize, usize)>],
    t_scores: &[Option<(usize, usize, usize)>],
) -> Vec<usize> {
    let Some(best) = id_scores.iter().flatten().map(|&(l, _)| l).max() else {
        return Vec::new();
    };
    (0..rows.len())
        .filter(|&i| id_scores[i].is_some_and(|(l, _)| l == best))
        .filter(|&i| rows[i].row.templates.is_empty() || t_scores[i].is_some())
        .collect()
}

/// The rows closest to the id by name: the longest run of letters and digits the id's
/// last part shares with a row's id patterns (at least four: a family's name, not a
/// word such as `model`), best first, then in table order; at most three.
fn closest(rows: &[Resolved], id: &str) -> Vec<ModelCandidate> {
    // Letters and digits only: separators say nothing about the family.
    let squash = |s: &str| -> String { s.chars().filter(char::is_ascii_alphanumeric).collect() };
    let tail = squash(id.rsplit('/').next().unwrap_or(id));
    let mut scored: Vec<(usize, usize, &ModelRow)> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.active())
        .filter_map(|(i, r)| {
            let s = r
                .patterns
                .iter()
                .flat_map(|p| p.parts.iter().map(|part| squash(part)))
                .map(|part| common_run(&tail, &part))
                .max()?;
            (s >= 4).then_some((s, i, &r.row))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, _, row)| candidate(row))
        .collect()
}

/// A row as an unknown model's candidate: its name and the parsers it names.
fn candidate(r: &ModelRow) -> ModelCandidate {
    let parsers = [
        ("tool_parser", &r.tool_parser),
        ("reasoning_parser", &r.reasoning_parser),
        ("response_parser", &r.response_parser),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.clone().map(|v| (k, v)))
    .collect();
    ModelCandidate {
        row: r.name.clone(),
        parsers,
        note: None,
    }
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

    /// A row choosing dialects whose tags carry a checkpoint suffix gets the suffix
    /// from the template given (rendered, or its text), and passes it to its config.
    #[test]
    fn a_chosen_suffixed_dialect_gets_the_templates_suffix() {
        let row = ModelRow {
            name: "Hy v4 (test)".into(),
            ids: vec!["acme/hy4".into()],
            model_types: vec![],
            templates: vec![],
            tool_parser: Some("hy_v4".into()),
            reasoning_parser: Some("hy_v4".into()),
            response_parser: None,
            source: "test".into(),
            note: None,
        };
        let rows = [Resolved::new(&row)];
        let hy3 = include_str!("../../../tests/templates/hy3.jinja");
        let c = choose(&rows, "acme/hy4", None, Some(hy3)).unwrap();
        assert_eq!(c.tag_suffix.as_deref(), Some(":opensource"), "{}", c.reason);
        assert_eq!(c.config().tag_suffix.as_deref(), Some(":opensource"));
        let c = choose(&rows, "acme/hy4", None, Some("<think:ab> hi")).unwrap();
        assert_eq!(c.tag_suffix.as_deref(), Some(":ab"));
        assert_eq!(
            choose(&rows, "acme/hy4", None, None).unwrap().tag_suffix,
            None
        );
        assert_eq!(
            choose(&rows, "acme/hy4", None, Some("no tags"))
                .unwrap()
                .tag_suffix,
            None
        );
        // Dialects without suffixed tags: nothing is read.
        let plain = ModelRow {
            tool_parser: Some("hy_v3".into()),
            reasoning_parser: Some("hy_v3".into()),
            ..row
        };
        let c = choose(&[Resolved::new(&plain)], "acme/hy4", None, Some(hy3)).unwrap();
        assert_eq!(c.tag_suffix, None);
    }

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
    fn reasons_say_which_rule_matched_in_plain_words() {
        let c = parsers_for_model("Qwen/Qwen3-Coder-30B-A3B-Instruct", None, None).unwrap();
        assert_eq!(
            c.reason,
            "Qwen3-Coder: the model id \"Qwen/Qwen3-Coder-30B-A3B-Instruct\" contains \
             \"qwen3-coder\" (the longest matching pattern)"
        );
        let c = parsers_for_model("my/model", None, Some("{{ '<|channel|>' }}")).unwrap();
        assert_eq!(
            c.reason,
            "gpt-oss: the chat template contains \"<|channel|>\" (the template's own tool \
             calls could not be checked: the template does not write the user's message)"
        );
        let c = parsers_for_model("deepseek-ai/DeepSeek-V3.1", Some("deepseek_v3"), None).unwrap();
        assert!(
            c.reason
                .contains("the model_type is \"deepseek_v3\"; the model id"),
            "{}",
            c.reason
        );
        // Every row's reason speaks of the rule only: never the row's source or note.
        for row in model_table() {
            let Some(id) = row.ids.first() else { continue };
            let Ok(c) = parsers_for_model(&id.replace('*', "x"), None, None) else {
                continue;
            };
            for private in ["dialects_", "§", "research", "SMG", "issue"] {
                assert!(!c.reason.contains(private), "{}: {}", row.name, c.reason);
            }
            if c.row.as_deref() == Some(row.name.as_str()) {
                assert!(!c.reason.contains(&row.source), "{}", c.reason);
            }
        }
    }

    #[test]
    fn the_cache_compares_whole_keys_not_their_hashes() {
        // Same length, same ends and samples (what the hash reads), different middles.
        let (a, b) = (1000..)
            .map(|n| {
                let pad = "x".repeat(n);
                (
                    format!("{pad}<|channel|>{pad}"),
                    format!("{pad}<|chanXel|>{pad}"),
                )
            })
            .find(|(a, b)| key_hash(("m", None, Some(a), "")) == key_hash(("m", None, Some(b), "")))
            .expect("a colliding pair");
        for _ in 0..2 {
            let got = parsers_for_model("m", None, Some(&a)).unwrap();
            assert_eq!(got.response_parser.as_deref(), Some("gpt-oss"));
            assert!(parsers_for_model("m", None, Some(&b)).is_err());
        }
    }

    #[test]
    fn the_cache_is_bounded_and_keeps_what_is_used() {
        let hot = "Qwen/Qwen3-8B";
        // Tests running beside this one register dialects, and a registration empties
        // the cache: an attempt during which the registry changed proves nothing.
        let kept = (0..20).find_map(|_| {
            let generation = registry::generation();
            parsers_for_model(hot, None, None).unwrap();
            for i in 0..CHOICE_CACHE_ENTRIES * 2 {
                let _ = parsers_for_model(&format!("acme/model-{i}"), None, None);
                if i % 16 == 0 {
                    let _ = parsers_for_model(hot, None, None); // used: not the oldest
                }
                let (entries, bytes) = CHOICES.size();
                assert!(entries <= CHOICE_CACHE_ENTRIES);
                assert!(bytes <= CHOICE_CACHE_BYTES);
            }
            let key = (hot, None, None, "");
            let hit = CHOICES.get(generation, key_hash(key), |k: &ChoiceKey| k.is(key));
            (registry::generation() == generation).then_some(hit.is_some())
        });
        assert_eq!(kept, Some(true), "the key in use was evicted");
        // A key over the bound is answered, not kept.
        let long = "y".repeat(CHOICE_CACHE_MAX_KEY_BYTES + 1);
        let before = CHOICES.size().0;
        assert!(parsers_for_model("acme/long", None, Some(&long)).is_err());
        assert!(CHOICES.size().0 <= before);
    }

    /// A model known by its template alone: choosing for it again after a registration
    /// (its own derivation's, another model's) emptied the choice cache answers from the
    /// derivation cache; the template is derived once.
    #[test]
    fn a_derived_choice_is_derived_once() {
        let _serial = crate::derive::tests::CACHE_LOCK
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let template = |tag: &str| {
            format!(
                "{{%- for m in messages %}}<|im_start|>{{{{ m.role }}}}\n{{{{ m.content }}}}\
                 {{%- for c in m.tool_calls or [] %}}<{tag}>{{{{ {{\"name\": c.function.name, \
                 \"arguments\": c.function.arguments}} | tojson }}}}</{tag}>{{%- endfor %}}\
                 <|im_end|>\n{{% endfor %}}{{% if add_generation_prompt %}}<|im_start|>assistant\n\
                 {{% endif %}}"
            )
        };
        let (mine, other) = (template("once_a"), template("once_b"));
        let first = parsers_for_model("acme/derived-once", None, Some(&mine)).unwrap();
        let derived = derive::dialect_from_chat_template(&mine, &serde_json::Map::new()).unwrap();
        assert_eq!(first.tool_parser.as_deref(), Some(derived.name.as_str()));
        let generation = registry::generation();
        parsers_for_model("acme/derived-other", None, Some(&other)).unwrap();
        assert!(registry::generation() > generation, "a registration since");
        let again = parsers_for_model("acme/derived-once", None, Some(&mine)).unwrap();
        assert_eq!(again.tool_parser, first.tool_parser);
        let same = derive::dialect_from_chat_template(&mine, &serde_json::Map::new()).unwrap();
        assert!(Arc::ptr_eq(&derived, &same), "derived once");
    }

    /// With a chat template: a model no row matches gets the dialect derived from it;
    /// a row its markers alone chose is kept when the template's own calls read back
    /// with it, replaced by the derived dialect when they do not; a row the model id
    /// names is never replaced.
    #[test]
    fn templates_are_checked_and_unknown_models_get_a_derived_dialect() {
        let _serial = crate::derive::tests::CACHE_LOCK
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let lfm2 = include_str!("../../../tests/templates/lfm2.jinja");
        let c = parsers_for_model("acme/unknown-lfm", None, Some(lfm2)).unwrap();
        let name = c.tool_parser.clone().unwrap();
        assert!(name.starts_with("derived-"), "{c:?}");
        assert_eq!(c.row, None);
        assert!(
            c.reason
                .starts_with("no model table row matches \"acme/unknown-lfm\": a dialect derived"),
            "{}",
            c.reason
        );
        let d = registry::tool_dialect(&name).unwrap();
        assert_eq!(d.family(), crate::Family::Pythonic);
        crate::ResponseParser::new(&c.config()).unwrap();

        // GLM-4.7's markers are also Qwen3's fingerprint; its calls are not Qwen3's.
        let glm = include_str!("../../../tests/templates/glm-4.7-flash.jinja");
        let c = parsers_for_model("acme/unknown-glm", None, Some(glm)).unwrap();
        assert!(
            c.tool_parser.as_deref().unwrap().starts_with("derived-"),
            "{c:?}"
        );
        assert!(
            c.reason.contains("do not read back with") && c.reason.contains("derived"),
            "{}",
            c.reason
        );
        // The model id names GLM-4.7's row: it stands.
        let c = parsers_for_model("zai-org/GLM-4.7-Flash", None, Some(glm)).unwrap();
        assert_eq!(c.tool_parser.as_deref(), Some("glm47"), "{}", c.reason);

        // A fingerprint whose dialect reads the template's calls is kept, and says so.
        let coder = include_str!("../../../tests/templates/qwen3-coder.jinja");
        let c = parsers_for_model("acme/unknown-coder", None, Some(coder)).unwrap();
        assert_eq!(c.tool_parser.as_deref(), Some("qwen3coder"));
        assert!(
            c.reason.ends_with("read back with these parsers"),
            "{}",
            c.reason
        );

        // Nothing to derive: the model stays unknown, and the error says why.
        let plain = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}\
                     {% if add_generation_prompt %}<|assistant|>{% endif %}";
        let e = parsers_for_model("acme/plain", None, Some(plain)).unwrap_err();
        assert!(
            e.to_string()
                .contains("no dialect can be derived from its chat template"),
            "{e}"
        );
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
