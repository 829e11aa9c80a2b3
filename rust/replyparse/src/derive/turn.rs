//! The flag settings a template's generation prompt depends on, and the part of a
//! history render the model generates.
//!
//! The generated part of an assistant turn is the history after the prompt (the user's
//! turn with the generation prompt), when the history extends the prompt; otherwise it
//! is the history after the text the two share, and what the prompt wrote beyond it
//! (the generation prompt's *opener*, `<think>\n` say) is left out of the history: the
//! caller decides whether the turn can be read without it. The end of the turn is what
//! the template writes after the content of a turn without calls.

use serde_json::{Map, Value as Json};

use super::diff::{common_prefix, fix_prefix, segments, Kind};
use super::probes::{after_user, Prober, CONTENT};

/// The flags a template may read to switch thinking, with the values tried.
const FLAG_VALUES: [(&str, &[&str]); 5] = [
    ("enable_thinking", &["true", "false"]),
    ("thinking", &["true", "false"]),
    ("reasoning", &["true", "false"]),
    ("thinking_mode", &["\"enabled\"", "\"disabled\""]),
    (
        "reasoning_effort",
        &[
            "\"none\"",
            "\"minimal\"",
            "\"low\"",
            "\"medium\"",
            "\"high\"",
        ],
    ),
];

/// The values tried for a flag (none for a flag not probed).
pub(crate) fn flag_values(key: &str) -> Vec<Json> {
    FLAG_VALUES
        .iter()
        .filter(|(k, _)| *k == key)
        .flat_map(|(_, vs)| vs.iter())
        .map(|v| serde_json::from_str(v).expect("flag values are JSON"))
        .collect()
}

/// One flag setting: no flag (`default`) or one flag set to one value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Setting {
    /// `None` for the default (no flag given).
    pub flag: Option<(String, Json)>,
}

impl Setting {
    pub(crate) fn default_setting() -> Self {
        Setting { flag: None }
    }

    /// The keyword arguments of this setting.
    pub(crate) fn kwargs(&self) -> Map<String, Json> {
        let mut m = Map::new();
        if let Some((k, v)) = &self.flag {
            m.insert(k.clone(), v.clone());
        }
        m
    }

    /// `default`, or `FLAG=VALUE` (the value as JSON).
    pub(crate) fn label(&self) -> String {
        match &self.flag {
            None => "default".into(),
            Some((k, v)) => format!("{k}={v}"),
        }
    }
}

/// A setting with its prompt (the text after the user's turn).
#[derive(Debug, Clone)]
pub(crate) struct PromptOf {
    pub setting: Setting,
    pub tail: String,
}

/// The default setting and every flag value whose prompt differs from the default's
/// (a flag the template does not read changes nothing). A flag value the template
/// raises on is left out. Fails only when the default prompt does not render or holds
/// no user turn.
pub(crate) fn settings(prober: &mut Prober<'_>) -> Result<Vec<PromptOf>, String> {
    let default = prober
        .prompt(&Map::new())
        .map_err(|e| format!("the generation prompt does not render: {e}"))?;
    let Some(tail) = after_user(&default) else {
        return Err("the template does not write the user's message".into());
    };
    let mut out = vec![PromptOf {
        setting: Setting::default_setting(),
        tail: tail.to_owned(),
    }];
    for (flag, values) in FLAG_VALUES {
        for v in values {
            let value: Json = serde_json::from_str(v).expect("flag values are JSON");
            let setting = Setting {
                flag: Some((flag.to_owned(), value)),
            };
            let Ok(text) = prober.prompt(&setting.kwargs()) else {
                continue;
            };
            let Some(t) = after_user(&text) else { continue };
            if t != out[0].tail {
                out.push(PromptOf {
                    setting,
                    tail: t.to_owned(),
                });
            }
        }
    }
    Ok(out)
}

/// The part of one history render the model generates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Generated {
    /// The generated text, up to the end of the turn when [`cut`](Self::cut) found it.
    pub text: String,
    /// What the prompt wrote after the text the two share, which the history leaves
    /// out (empty when the history extends the prompt).
    pub skipped: String,
}

/// The generated part of `history` (a full render) after `prompt_tail`. Where the
/// history does not extend the prompt, it is the history after the text the two share,
/// less what it keeps of the end of the prompt's opener (a history turn that writes
/// only the `</think>` of the prompt's `<think></think>`).
pub(crate) fn generated(prompt_tail: &str, history: &str) -> Option<Generated> {
    let h = after_user(history)?;
    if let Some(rest) = h.strip_prefix(prompt_tail) {
        return Some(Generated {
            text: rest.to_owned(),
            skipped: String::new(),
        });
    }
    let p = common_prefix(prompt_tail, h);
    let p = fix_prefix(&h[..p], &[&prompt_tail[p..], &h[p..]]);
    let skipped = &prompt_tail[p..];
    let mut text = &h[p..];
    let opener = skipped.trim_end();
    let kept = segment_starts(opener)
        .into_iter()
        .filter(|&i| i > 0)
        .map(|i| &opener[i..])
        .find(|k| !k.trim().is_empty() && text.starts_with(k));
    if let Some(k) = kept {
        text = &text[k.len()..];
    }
    Some(Generated {
        text: text.to_owned(),
        skipped: skipped.to_owned(),
    })
}

/// Where each marker or word of `text` starts.
fn segment_starts(text: &str) -> Vec<usize> {
    let mut at = 0;
    let mut out = Vec::new();
    for s in segments(text) {
        if s.kind != Kind::Space {
            out.push(at);
        }
        at += s.text.len();
    }
    out
}

/// What ends a turn: the text the template writes after a turn's content, read from the
/// content probe's generated part.
pub(crate) fn end_of_turn(content_turn: &Generated) -> String {
    match content_turn.text.rfind(CONTENT) {
        Some(i) => content_turn.text[i + CONTENT.len()..].to_owned(),
        None => String::new(),
    }
}

impl Generated {
    /// The text cut at the end of the turn (`eot`): removed where it ends the text,
    /// else cut at its first occurrence from `from` on (a template may go on with more
    /// after a turn with calls); unchanged when it does not occur.
    pub(crate) fn cut(mut self, eot: &str, from: usize) -> Self {
        if eot.is_empty() {
            return self;
        }
        if let Some(rest) = self.text.strip_suffix(eot) {
            self.text = rest.to_owned();
            return self;
        }
        let from = from.min(self.text.len());
        if !self.text.is_char_boundary(from) {
            return self;
        }
        // The end whole, else its last marker (a turn whose content is wrapped ends
        // with the wrapper's close before it, which a turn with calls does not write).
        let core = eot.trim();
        let last = segments(core)
            .last()
            .filter(|s| s.kind == Kind::Marker)
            .map(|s| s.text);
        for end in std::iter::once(core).chain(last) {
            if end.is_empty() {
                continue;
            }
            if let Some(i) = self.text[from..].find(end) {
                self.text.truncate(from + i);
                break;
            }
        }
        self
    }
}
