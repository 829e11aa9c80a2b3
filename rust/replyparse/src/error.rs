//! Errors the engine reports. Every one says what to do about it.

use std::fmt;

/// Which registry a name was looked up in (of an [`Error::UnknownParser`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParserKind {
    /// Tool parsers ([`ParserConfig::tool_parser`](crate::ParserConfig::tool_parser)).
    Tool,
    /// Reasoning parsers.
    Reasoning,
    /// Response parsers (`default`, `gpt-oss`).
    Response,
}

impl ParserKind {
    /// `"tool"`, `"reasoning"` or `"response"`, as messages say it.
    pub fn as_str(self) -> &'static str {
        match self {
            ParserKind::Tool => "tool",
            ParserKind::Reasoning => "reasoning",
            ParserKind::Response => "response",
        }
    }
}

/// Everything that can go wrong, as one enum; its `Display` says what happened and
/// what to do about it (the messages the Python exceptions carry).
///
/// The cases split in two. Configuration errors come when a parser, a constraint or a
/// declaration is built, before any text: [`UnknownParser`](Self::UnknownParser),
/// [`UnknownModel`](Self::UnknownModel), [`InvalidDialect`](Self::InvalidDialect),
/// [`InvalidTools`](Self::InvalidTools). Misuse of a parser comes while feeding it:
/// [`AlreadyFinished`](Self::AlreadyFinished), [`AlreadyStreamed`](Self::AlreadyStreamed),
/// [`BufferLimit`](Self::BufferLimit). Nothing the model writes is an error: malformed
/// markup stays text or is recorded in
/// [`rejected_calls`](crate::ResponseParser::rejected_calls).
///
/// ```
/// use replyparse::{Error, ParserConfig, ParserKind, ResponseParser};
///
/// let config = ParserConfig { tool_parser: Some("qwen3_codr".into()), ..Default::default() };
/// let err = ResponseParser::new(&config).unwrap_err();
/// assert!(matches!(err, Error::UnknownParser { kind: ParserKind::Tool, .. }));
/// assert!(err.to_string().contains("(did you mean \"qwen3coder\""), "{err}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A parser name that is not registered.
    UnknownParser {
        /// Which registry it was looked up in.
        kind: ParserKind,
        /// The name as given.
        name: String,
        /// Every accepted name and alias, sorted (the message suggests the closest).
        valid: Vec<String>,
    },
    /// A model the model table has no row for
    /// ([`parsers_for_model`](crate::parsers_for_model)).
    UnknownModel {
        /// The model id as given.
        model: String,
        /// The closest rows, best first, for the message to offer.
        candidates: Vec<ModelCandidate>,
        /// Why no dialect could be derived from the chat template given, when one was.
        derivation: Option<String>,
    },
    /// A dialect declaration that cannot work (empty open tag, clashing name, ...).
    InvalidDialect(String),
    /// Request tools or tool_choice that cannot be understood.
    InvalidTools(String),
    /// `stream_chunk` after the chunk marked `final`.
    AlreadyFinished,
    /// `parse_complete` on a parser that already streamed chunks: it would return only
    /// the rest of the response.
    AlreadyStreamed,
    /// The response held more bytes than its limit allows (see
    /// [`ParserConfig::max_buffered_bytes`](crate::ParserConfig::max_buffered_bytes));
    /// the parser is finished.
    BufferLimit {
        /// The limit in force.
        limit: usize,
        /// What the parser would have held.
        buffered: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownParser { kind, name, valid } => {
                write!(f, "unknown {} parser {:?}", kind.as_str(), name)?;
                let near = closest_names(name, valid);
                if !near.is_empty() {
                    write!(f, " (did you mean {}?)", one_of(&near))?;
                }
                write!(f, "; valid names: {}", valid.join(", "))
            }
            Error::UnknownModel {
                model,
                candidates,
                derivation,
            } => {
                let rows: Vec<String> = candidates
                    .iter()
                    .map(|c| c.describe(|k, v| format!("{k} {v:?}")))
                    .collect();
                write!(f, "{}", unknown_model_head(model, &rows))?;
                if let Some(why) = derivation {
                    write!(
                        f,
                        "; no dialect can be derived from its chat template: {why}"
                    )?;
                }
                write!(
                    f,
                    "; set the parsers in the ParserConfig, pass the chat template or the \
                     model_type, or use ParserChoice::fallback (the documented default)"
                )
            }
            Error::InvalidDialect(m) => write!(f, "invalid dialect declaration: {m}"),
            Error::InvalidTools(m) => write!(f, "invalid tools: {m}"),
            Error::BufferLimit { limit, buffered } => write!(
                f,
                "this response holds {buffered} bytes of unfinished markup, over the limit of \
                 {limit} (a typed value or arguments with no end in sight); the parser is \
                 finished: end the response, or raise max_buffered_bytes if such output is \
                 expected"
            ),
            Error::AlreadyFinished => write!(
                f,
                "this parser already received its final chunk; parsers are per response: \
                 create a new one for the next response"
            ),
            Error::AlreadyStreamed => write!(
                f,
                "parse_complete on a parser that already streamed chunks would return only \
                 the rest of the response; a parser either streams (end with an empty \
                 final chunk and aggregate the deltas) or parses one whole response: \
                 create a new one for parse_complete"
            ),
        }
    }
}

/// A model-table row offered when a model is unknown: the row's name and the parsers it
/// names, carried as data so that every caller can word the advice its own way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelCandidate {
    /// The row's name (`Qwen3-Coder`).
    pub row: String,
    /// The parsers the row names, as `(setting, name)`: `tool_parser`,
    /// `reasoning_parser` or `response_parser`, and a registry name.
    pub parsers: Vec<(&'static str, String)>,
    /// Why the row cannot be chosen, when it answers but this build cannot serve it.
    pub note: Option<String>,
}

impl ModelCandidate {
    /// The row with its parsers written by `setting(kind, name)`:
    /// `Qwen3-Coder (tool_parser "qwen3coder")` in Rust terms, `tool_parser="qwen3coder"`
    /// in Python's, `--tool-parser qwen3coder` on the command line.
    pub fn describe(&self, setting: impl Fn(&str, &str) -> String) -> String {
        let mut parts: Vec<String> = self.parsers.iter().map(|(k, v)| setting(k, v)).collect();
        parts.extend(self.note.clone());
        if parts.is_empty() {
            self.row.clone()
        } else {
            format!("{} ({})", self.row, parts.join(", "))
        }
    }
}

/// The first part of the unknown-model message, which every caller shares (each adds
/// the advice that fits it: Rust configuration, Python keywords, command-line flags);
/// `candidates` as [`ModelCandidate::describe`] writes them.
pub fn unknown_model_head(model: &str, candidates: &[String]) -> String {
    let mut s = format!("no model table row matches model {model:?}");
    if !candidates.is_empty() {
        s.push_str(&format!(
            "; closest model table rows: {}",
            candidates.join("; ")
        ));
    }
    s
}

/// The registered names closest to a mistyped one, best first (at most three): names
/// that contain it or that it contains once case, `-`, `_` and `.` are ignored, then
/// those within a small edit distance (a third of the name's length, at least one).
pub fn closest_names(name: &str, valid: &[String]) -> Vec<String> {
    let norm = |n: &str| -> Vec<char> {
        n.chars()
            .filter(|c| !matches!(c, '-' | '_' | '.'))
            .flat_map(char::to_lowercase)
            .collect()
    };
    let key = norm(name);
    if key.is_empty() {
        return Vec::new();
    }
    let limit = (key.len() / 3).max(1);
    let mut scored: Vec<(usize, usize, &str)> = Vec::new();
    let mut seen: Vec<Vec<char>> = Vec::new();
    for v in valid {
        let k = norm(v);
        if seen.contains(&k) {
            continue; // one spelling of a name is enough
        }
        let d = edit_distance(&key, &k);
        let contains = |a: &[char], b: &[char]| b.len() >= 3 && a.windows(b.len()).any(|w| w == b);
        let score = if contains(&k, &key) || contains(&key, &k) {
            // Containment ranks after the near misses of the same distance.
            d.min(limit)
        } else if d <= limit {
            d
        } else {
            continue;
        };
        seen.push(k);
        scored.push((score, d, v.as_str()));
    }
    scored.sort();
    scored
        .into_iter()
        .take(3)
        .map(|(_, _, n)| n.to_owned())
        .collect()
}

/// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
pub fn one_of(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// Levenshtein distance over characters.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, y) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(x != y))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

impl std::error::Error for Error {}

/// The crate's result type: [`Error`] is its error.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn unknown_names_suggest_the_closest_registered_ones() {
        let valid = names(&[
            "qwen",
            "qwen3",
            "qwen3coder",
            "qwen3_xml",
            "llama3",
            "kimi_k2",
        ]);
        assert_eq!(
            closest_names("qwen3_codr", &valid),
            names(&["qwen3coder", "qwen3", "qwen"])
        );
        assert_eq!(closest_names("Kimi-K2", &valid), names(&["kimi_k2"]));
        assert_eq!(closest_names("lama3", &valid), names(&["llama3"]));
        assert!(closest_names("zzzzzz", &valid).is_empty());
        let e = Error::UnknownParser {
            kind: ParserKind::Tool,
            name: "qwen3_codr".into(),
            valid: valid.clone(),
        };
        assert_eq!(
            e.to_string(),
            "unknown tool parser \"qwen3_codr\" (did you mean \"qwen3coder\", \"qwen3\" or \
             \"qwen\"?); valid names: qwen, qwen3, qwen3coder, qwen3_xml, llama3, kimi_k2"
        );
        let e = Error::UnknownParser {
            kind: ParserKind::Reasoning,
            name: "zzzzzz".into(),
            valid,
        };
        assert!(e
            .to_string()
            .starts_with("unknown reasoning parser \"zzzzzz\"; valid names: "));
    }
}
