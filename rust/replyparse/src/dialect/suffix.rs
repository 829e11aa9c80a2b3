//! Tags that carry a checkpoint suffix: one dialect, many spellings of its tags.
//!
//! Some vendors ship each checkpoint with its own spelling of the structural tokens: a
//! suffix after the tag name, the same on every tag (Tencent Hunyuan's `<think:6124c78e>`,
//! `<tool_calls:6124c78e>`; other checkpoints of the same family write `<think>`). A
//! dialect says so by writing [`SUFFIX_PLACEHOLDER`] where the suffix goes in its tags
//! (`<think{suffix}>`) and declaring the suffix's shape ([`TagSuffix`]). A parser is then
//! built for one suffix ([`ParserConfig::tag_suffix`](crate::ParserConfig::tag_suffix);
//! none: the unsuffixed tags), read from what the checkpoint ships:
//! [`SuffixedTags::in_vocab`] (its tokenizer's vocabulary), [`SuffixedTags::in_template`]
//! (its chat template). The dialect built for a suffix is an ordinary declaration with
//! the placeholder replaced everywhere, so it gets every guarantee the others have.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{ReasoningDialect, ToolDialect};
use crate::chat_template::ChatTemplate;
use crate::error::{Error, Result};

/// Where a suffix goes in a tag of a dialect that declares [`TagSuffix`].
pub const SUFFIX_PLACEHOLDER: &str = "{suffix}";

/// Longest suffix read or accepted, in bytes.
pub const SUFFIX_MAX: usize = 64;

/// The shape of a checkpoint suffix (a dialect's `tag_suffix`): `starts_with` followed by
/// one to [`SUFFIX_MAX`] bytes in all, none of them whitespace, `<`, `>` or the
/// character that follows [`SUFFIX_PLACEHOLDER`] in a tag (`>` in `<think{suffix}>`).
/// The empty suffix (the unsuffixed tags) is always allowed.
///
/// vLLM reads Hunyuan v4's suffix as `(:[^\s>]+)?` after the tag name
/// (`detect_token_suffix`): `{"starts_with": ":"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TagSuffix {
    /// What every non-empty suffix begins with (`:`).
    pub starts_with: String,
}

impl TagSuffix {
    /// Why `suffix` is not a suffix of this shape for tags whose placeholder is followed
    /// by one of `ends` (None: it is one).
    fn refuse(&self, suffix: &str, ends: &[char]) -> Option<String> {
        if suffix.is_empty() {
            return None;
        }
        if !suffix.starts_with(&self.starts_with) || suffix.len() == self.starts_with.len() {
            return Some(format!(
                "does not start with {:?} and go on after it",
                self.starts_with
            ));
        }
        if suffix.len() > SUFFIX_MAX {
            return Some(format!("is longer than {SUFFIX_MAX} bytes"));
        }
        let tail = &suffix[self.starts_with.len()..];
        if let Some(c) = tail.chars().find(|&c| stops(c, ends)) {
            return Some(format!("holds {c:?}"));
        }
        None
    }
}

/// A character that ends a suffix (never part of one).
fn stops(c: char, ends: &[char]) -> bool {
    c.is_whitespace() || c == '<' || c == '>' || ends.contains(&c)
}

/// Every string of a JSON value, mutably.
fn each_string(v: &mut Value, f: &mut impl FnMut(&mut String)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter_mut().for_each(|x| each_string(x, f)),
        Value::Object(map) => map.values_mut().for_each(|x| each_string(x, f)),
        _ => {}
    }
}

/// A declaration as JSON, without its `tag_suffix` field.
fn declaration<T: Serialize>(d: &T) -> Map<String, Value> {
    let Ok(Value::Object(mut map)) = serde_json::to_value(d) else {
        unreachable!("a declaration serializes to an object")
    };
    map.remove("tag_suffix");
    map
}

/// The strings of a declaration that hold the placeholder (its suffixed tags).
fn placeholder_strings<T: Serialize>(d: &T) -> Vec<String> {
    let mut v = Value::Object(declaration(d));
    let mut out = Vec::new();
    each_string(&mut v, &mut |s| {
        if s.contains(SUFFIX_PLACEHOLDER) && !out.contains(s) {
            out.push(s.clone());
        }
    });
    out
}

/// The characters that follow the placeholder in `tags`.
fn ends_of(tags: &[String]) -> Vec<char> {
    let mut out = Vec::new();
    for t in tags {
        for (i, _) in t.match_indices(SUFFIX_PLACEHOLDER) {
            if let Some(c) = t[i + SUFFIX_PLACEHOLDER.len()..].chars().next() {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// `d` with the placeholder replaced by `suffix` in every string and no `tag_suffix`.
fn substituted<T: Serialize + DeserializeOwned>(d: &T, suffix: &str) -> T {
    let mut v = Value::Object(declaration(d));
    each_string(&mut v, &mut |s| {
        if s.contains(SUFFIX_PLACEHOLDER) {
            *s = s.replace(SUFFIX_PLACEHOLDER, suffix);
        }
    });
    serde_json::from_value(v).expect("a declaration reads back what it wrote")
}

/// Checks a dialect's suffix declaration: declared exactly when a string of it holds
/// the placeholder, and `starts_with` a short non-empty text no suffix stops at.
fn check_declared<T: Serialize>(
    suffix: Option<&TagSuffix>,
    d: &T,
) -> std::result::Result<(), String> {
    let tags = placeholder_strings(d);
    match (suffix, tags.is_empty()) {
        (None, true) => Ok(()),
        (None, false) => Err(format!(
            "{:?} holds {SUFFIX_PLACEHOLDER} but tag_suffix is not declared",
            tags[0]
        )),
        (Some(_), true) => Err(format!(
            "tag_suffix is declared but no tag holds {SUFFIX_PLACEHOLDER}"
        )),
        (Some(s), false) => {
            if s.starts_with.is_empty()
                || s.starts_with.len() >= SUFFIX_MAX
                || s.starts_with.chars().any(|c| stops(c, &ends_of(&tags)))
            {
                return Err(format!(
                    "tag_suffix.starts_with {:?} is not 1 to {} bytes without whitespace, \
                     `<`, `>` or the character after {SUFFIX_PLACEHOLDER}",
                    s.starts_with,
                    SUFFIX_MAX - 1
                ));
            }
            Ok(())
        }
    }
}

impl ToolDialect {
    /// This dialect with its tags spelt for `suffix` (see [`TagSuffix`]): the placeholder
    /// replaced in every string, `tag_suffix` gone. A dialect without suffixed tags is
    /// returned as it is, whatever the suffix. A suffix of the wrong shape is
    /// [`Error::InvalidDialect`].
    ///
    /// ```
    /// use replyparse::registry;
    ///
    /// let d = registry::tool_dialect("hy_v4")?.with_tag_suffix(":6124c78e")?;
    /// assert_eq!(d.open, "<tool_calls:6124c78e>");
    /// let plain = registry::tool_dialect("hy_v4")?.with_tag_suffix("")?;
    /// assert_eq!(plain.open, "<tool_calls>");
    /// # Ok::<(), replyparse::Error>(())
    /// ```
    pub fn with_tag_suffix(&self, suffix: &str) -> Result<ToolDialect> {
        spelt(self, &self.name, self.tag_suffix.as_ref(), suffix)
    }

    /// The tags (and other strings) of this declaration that hold the placeholder.
    pub fn suffixed_tags(&self) -> Vec<String> {
        placeholder_strings(self)
    }
}

impl ReasoningDialect {
    /// This dialect with its tags spelt for `suffix`, as
    /// [`ToolDialect::with_tag_suffix`] does.
    ///
    /// ```
    /// use replyparse::registry;
    ///
    /// let d = registry::reasoning_dialect("hy_v4")?.with_tag_suffix(":6124c78e")?;
    /// assert_eq!((d.open.as_str(), d.close.as_str()), ("<think:6124c78e>", "</think:6124c78e>"));
    /// # Ok::<(), replyparse::Error>(())
    /// ```
    pub fn with_tag_suffix(&self, suffix: &str) -> Result<ReasoningDialect> {
        spelt(self, &self.name, self.tag_suffix.as_ref(), suffix)
    }

    /// The tags of this declaration that hold the placeholder.
    pub fn suffixed_tags(&self) -> Vec<String> {
        placeholder_strings(self)
    }
}

/// `d` (named `name`, whose suffix shape is `shape`) with its tags spelt for `suffix`:
/// the one body of both dialect kinds' `with_tag_suffix`.
fn spelt<T: Serialize + DeserializeOwned + Clone>(
    d: &T,
    name: &str,
    shape: Option<&TagSuffix>,
    suffix: &str,
) -> Result<T> {
    let Some(shape) = shape else {
        return Ok(d.clone());
    };
    let tags = placeholder_strings(d);
    if let Some(why) = shape.refuse(suffix, &ends_of(&tags)) {
        return Err(bad_suffix(name, suffix, &why));
    }
    Ok(substituted(d, suffix))
}

fn bad_suffix(name: &str, suffix: &str, why: &str) -> Error {
    Error::InvalidDialect(format!("{name}: the tag suffix {suffix:?} {why}"))
}

/// The suffix declaration of a tool dialect, checked (for registration).
pub(crate) fn check_tool_suffix(d: &ToolDialect) -> std::result::Result<(), String> {
    check_declared(d.tag_suffix.as_ref(), d)
}

/// The suffix declaration of a reasoning dialect, checked (for registration).
pub(crate) fn check_reasoning_suffix(d: &ReasoningDialect) -> std::result::Result<(), String> {
    check_declared(d.tag_suffix.as_ref(), d)
}

/// One suffixed tag, split at its placeholder, with the shape its dialect declares.
#[derive(Debug, Clone)]
struct Pattern {
    before: String,
    after: String,
    shape: TagSuffix,
    ends: Vec<char>,
}

impl Pattern {
    /// The suffix `rest` (the text right after `before`) spells this tag with, if it
    /// spells it.
    fn read<'t>(&self, rest: &'t str) -> Option<&'t str> {
        if rest.starts_with(&self.after) {
            return Some("");
        }
        if !rest.starts_with(&self.shape.starts_with) {
            return None;
        }
        let lead = self.shape.starts_with.len();
        let end = rest[lead..]
            .char_indices()
            .find(|&(_, c)| stops(c, &self.ends))
            .map_or(rest.len(), |(i, _)| lead + i);
        let suffix = &rest[..end];
        (end > lead && end <= SUFFIX_MAX && rest[end..].starts_with(&self.after)).then_some(suffix)
    }
}

/// The suffixed tags of the dialects a parser is built from, as patterns that find the
/// checkpoint's suffix in what the checkpoint ships: its tokenizer's vocabulary
/// ([`in_vocab`](Self::in_vocab)) or its chat template ([`in_template`](Self::in_template)).
///
/// Each finds every spelling of a suffixed tag (`<think>`, `<think:6124c78e>`) and
/// answers the suffix most of them carry, the first one met on a tie; `None` when
/// no suffixed tag occurs (nothing to say: the unsuffixed tags apply).
///
/// ```
/// use replyparse::{registry, SuffixedTags};
///
/// let tool = registry::tool_dialect("hy_v4")?;
/// let reasoning = registry::reasoning_dialect("hy_v4")?;
/// let tags = SuffixedTags::of(Some(&tool), Some(&reasoning));
/// let vocab = [("<think:6124c78e>", 7), ("</think:6124c78e>", 8), ("hello", 9)];
/// assert_eq!(tags.in_vocab(vocab).as_deref(), Some(":6124c78e"));
/// assert_eq!(tags.in_vocab([("<think>", 1)]).as_deref(), Some(""));
/// assert_eq!(tags.in_vocab([("hello", 1)]), None);
/// # Ok::<(), replyparse::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct SuffixedTags {
    patterns: Vec<Pattern>,
}

impl SuffixedTags {
    /// The suffixed tags of a tool and a reasoning dialect (either may be absent).
    pub fn of(tool: Option<&ToolDialect>, reasoning: Option<&ReasoningDialect>) -> Self {
        let mut patterns = Vec::new();
        let mut add = |shape: Option<&TagSuffix>, tags: Vec<String>| {
            let Some(shape) = shape else { return };
            let ends = ends_of(&tags);
            for t in tags {
                // A tag's first placeholder splits it; a tag with two reads its first.
                let (before, after) = t.split_once(SUFFIX_PLACEHOLDER).expect("holds it");
                if before.is_empty() {
                    continue;
                }
                patterns.push(Pattern {
                    before: before.to_owned(),
                    after: after.replace(SUFFIX_PLACEHOLDER, ""),
                    shape: shape.clone(),
                    ends: ends.clone(),
                });
            }
        };
        if let Some(d) = tool {
            add(d.tag_suffix.as_ref(), placeholder_strings(d));
        }
        if let Some(d) = reasoning {
            add(d.tag_suffix.as_ref(), placeholder_strings(d));
        }
        SuffixedTags { patterns }
    }

    /// Whether neither dialect has suffixed tags (no suffix to find).
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The suffix the vocabulary's tokens spell the suffixed tags with: every token
    /// that is a whole suffixed tag votes for its suffix; ties go to the lowest id.
    pub fn in_vocab<'a>(&self, tokens: impl IntoIterator<Item = (&'a str, u32)>) -> Option<String> {
        let mut votes = Votes::default();
        for (text, id) in tokens {
            for p in &self.patterns {
                let Some(rest) = text.strip_prefix(p.before.as_str()) else {
                    continue;
                };
                if let Some(s) = p.read(rest) {
                    if rest.len() == s.len() + p.after.len() {
                        votes.add(s, u64::from(id));
                        break;
                    }
                }
            }
        }
        votes.winner()
    }

    /// The suffix the suffixed tags are spelt with in `text`: every occurrence votes;
    /// ties go to the first.
    pub fn in_text(&self, text: &str) -> Option<String> {
        let mut votes = Votes::default();
        for p in &self.patterns {
            for (at, _) in text.match_indices(p.before.as_str()) {
                if let Some(s) = p.read(&text[at + p.before.len()..]) {
                    votes.add(s, at as u64);
                }
            }
        }
        votes.winner()
    }

    /// The suffix a chat template writes its suffixed tags with: first in what it
    /// renders for one user message with the generation prompt (what the model
    /// continues from, with the template's default flags), then, if that shows no
    /// suffixed tag (or the template does not render), in its source text.
    pub fn in_template(&self, source: &str) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let rendered = ChatTemplate::new(source).ok().and_then(|t| {
            t.render(
                &[json!({"role": "user", "content": "Hi"})],
                None,
                true,
                &Map::new(),
            )
            .ok()
        });
        rendered
            .and_then(|r| self.in_text(&r))
            .or_else(|| self.in_text(source))
    }
}

/// Votes for suffixes: count, then the first key met.
#[derive(Debug, Default)]
struct Votes {
    tally: HashMap<String, (usize, u64)>,
}

impl Votes {
    fn add(&mut self, suffix: &str, key: u64) {
        let e = self.tally.entry(suffix.to_owned()).or_insert((0, key));
        e.0 += 1;
        e.1 = e.1.min(key);
    }

    fn winner(self) -> Option<String> {
        self.tally
            .into_iter()
            .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.1 .1.cmp(&a.1 .1)))
            .map(|(s, _)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hunyuan v4's declarations, as `dialects.json` has them (the registry is a layer
    /// above this module).
    fn hy_tool() -> ToolDialect {
        ToolDialect::from_json(
            r#"{"name": "hy_v4", "open": "<tool_calls{suffix}>", "close": "</tool_calls{suffix}>",
                "syntax": {"family": "xml", "function_open": "<tool_call{suffix}>",
                           "function_name_end": "\n", "function_close": "</tool_call{suffix}>",
                           "param_open": "<arg_key{suffix}>", "param_name_end": "</arg_key{suffix}>",
                           "value_open": "<arg_value{suffix}>", "value_close": "</arg_value{suffix}>"},
                "tag_suffix": {"starts_with": ":"}}"#,
        )
        .unwrap()
    }

    fn hy_reasoning() -> ReasoningDialect {
        ReasoningDialect::from_json(
            r#"{"name": "hy_v4", "open": "<think{suffix}>", "close": "</think{suffix}>",
                "tag_suffix": {"starts_with": ":"}}"#,
        )
        .unwrap()
    }

    fn hy() -> SuffixedTags {
        SuffixedTags::of(Some(&hy_tool()), Some(&hy_reasoning()))
    }

    #[test]
    fn the_vocabulary_decides_by_its_whole_tokens() {
        let t = hy();
        // A token that only starts like a tag, or carries whitespace, is not one.
        let vocab = [
            ("<think:x y>", 1),
            ("<thinking>", 2),
            ("<tool_calls:ab>", 30),
            ("</tool_calls:ab>", 31),
            ("<arg_key:ab>", 32),
            ("<think>", 40),
        ];
        assert_eq!(t.in_vocab(vocab).as_deref(), Some(":ab"));
        assert_eq!(
            t.in_vocab([("<think>", 3), ("</think>", 4)]).as_deref(),
            Some("")
        );
        // A tie goes to the lower id.
        let tie = [("<think:b>", 9), ("<think:a>", 5)];
        assert_eq!(t.in_vocab(tie).as_deref(), Some(":a"));
        assert_eq!(t.in_vocab([(":", 1), ("<", 2)]), None);
    }

    #[test]
    fn text_votes_and_a_template_is_read_rendered_first() {
        let t = hy();
        assert_eq!(
            t.in_text("x <think:6124c78e>y</think:6124c78e> <tool_call> z")
                .as_deref(),
            Some(":6124c78e")
        );
        // Built by the template at render time (Hy3's `'<think{}>'.format(HYTK)`): the
        // source holds no tag, the rendered prompt does.
        let template = "{%- set HYTK = ':opensource' %}{{ bos }}{% for m in messages %}\
                        {{ m.content }}{% endfor %}{% if add_generation_prompt %}\
                        {{ '<think{}>'.format(HYTK) }}{% endif %}";
        assert_eq!(t.in_template(template).as_deref(), Some(":opensource"));
        // A template that does not render is read as text.
        assert_eq!(
            t.in_template("{% if %}'<arg_key:zz>'").as_deref(),
            Some(":zz")
        );
        assert_eq!(t.in_template("no tags"), None);
        assert_eq!(SuffixedTags::default().in_template("<think:a>"), None);
    }

    #[test]
    fn a_dialect_is_spelt_for_a_suffix_of_its_shape() {
        let d = hy_reasoning();
        assert_eq!(d.suffixed_tags(), ["<think{suffix}>", "</think{suffix}>"]);
        let s = d.with_tag_suffix(":a+b(c").unwrap();
        assert_eq!(s.open, "<think:a+b(c>");
        assert!(s.tag_suffix.is_none() && s.suffixed_tags().is_empty());
        for bad in [
            "x",
            ":",
            ":a b",
            ":a>",
            &format!(":{}", "a".repeat(SUFFIX_MAX)),
        ] {
            let e = d.with_tag_suffix(bad).unwrap_err().to_string();
            assert!(
                e.contains("hy_v4") && e.contains("tag suffix"),
                "{bad:?}: {e}"
            );
        }
        let t = hy_tool().with_tag_suffix(":z").unwrap();
        assert_eq!(
            (t.open.as_str(), t.close.as_deref()),
            ("<tool_calls:z>", Some("</tool_calls:z>"))
        );
        let crate::grammars::Syntax::Xml(x) = &t.syntax else {
            panic!("xml")
        };
        assert_eq!(x.value_close, "</arg_value:z>");
        // No suffixed tags: any suffix leaves the dialect as it is.
        let q = ReasoningDialect::new("q", "<think>", "</think>");
        assert_eq!(q.with_tag_suffix(":x").unwrap(), q);
    }

    #[test]
    fn the_declaration_and_its_placeholders_agree() {
        let mut d = hy_reasoning();
        assert!(check_tool_suffix(&hy_tool()).is_ok());
        assert!(check_reasoning_suffix(&d).is_ok());
        let shape = d.tag_suffix.take();
        assert!(check_reasoning_suffix(&d)
            .unwrap_err()
            .contains("not declared"));
        d.tag_suffix = shape;
        d.open = "<think>".into();
        d.close = "</think>".into();
        assert!(check_reasoning_suffix(&d).unwrap_err().contains("no tag"));
        d.close = "</think{suffix}>".into();
        d.tag_suffix = Some(TagSuffix {
            starts_with: "a>".into(),
        });
        assert!(check_reasoning_suffix(&d)
            .unwrap_err()
            .contains("starts_with"));
    }
}
