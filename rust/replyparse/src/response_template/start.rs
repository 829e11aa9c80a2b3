//! Where a response starts: inside the reasoning or not, for each value of the thinking
//! switch, read from the generation prompt the model's chat template writes.
//!
//! transformers reads the start state from each request's prompt: it cuts the prompt
//! after the last `start_anchor` and runs the template over the rest. A streaming
//! parser decides before the first byte, so the prompt is rendered once per value of
//! the switch (unset, on, off) when the parser is chosen, and the same reading gives a
//! start rule ([`StartMode`]) and the flag the template reads.

use serde_json::{json, Map, Value};

use super::pattern::{Delim, Piece};
use crate::chat_template::ChatTemplate;
use crate::dialect::StartMode;

/// What the generation prompts say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StartFacts {
    pub mode: StartMode,
    /// The flag the template reads (none: no flag tried changes the prompt).
    pub flag: Option<&'static str>,
    /// In plain words.
    pub how: String,
}

/// The flags tried, in order: the first that changes the prompt is the template's.
const FLAGS: [&str; 2] = ["enable_thinking", "thinking"];

/// Reads the start rule from `chat_template`'s generation prompts. `anchor`: the
/// template's start anchor; `opens` / `closes`: the reasoning tags; `start_rule`: the
/// reasoning opens at the start of the response by the template's own rule.
pub(crate) fn derive(
    chat_template: &str,
    anchor: &Delim,
    opens: &[String],
    closes: &[String],
    start_rule: bool,
) -> Result<StartFacts, String> {
    let template = ChatTemplate::new(chat_template).map_err(|e| e.to_string())?;
    let messages = [json!({"role": "user", "content": "Hello"})];
    let render = |kwargs: Map<String, Value>| -> Result<String, String> {
        template
            .render(&messages, None, true, &kwargs)
            .map_err(|e| e.to_string())
    };
    let alts = anchor.trimmed();
    let anchors: Vec<&str> = alts
        .iter()
        .filter_map(|alt| match alt.as_slice() {
            [Piece::Lit(l)] => Some(l.as_str()),
            _ => None,
        })
        .collect();
    let state = |prompt: &str| in_reasoning(prompt, &anchors, opens, closes, start_rule);
    let unset_prompt = render(Map::new())?;
    let unset = state(&unset_prompt);
    for key in FLAGS {
        let with = |on: bool| {
            let mut m = Map::new();
            m.insert(key.into(), Value::Bool(on));
            render(m)
        };
        let (on_prompt, off_prompt) = (with(true)?, with(false)?);
        if on_prompt == off_prompt {
            continue;
        }
        let (on, off) = (state(&on_prompt), state(&off_prompt));
        let mode = match (unset, off, on) {
            (true, false, _) => StartMode::UnlessDisabled,
            (true, true, _) => StartMode::Always,
            (false, _, true) => StartMode::WhenEnabled,
            (false, _, false) => StartMode::Never,
        };
        let how = format!(
            "the chat template's generation prompt ends {} with {key} unset, {} with it on, \
             {} with it off",
            inside(unset),
            inside(on),
            inside(off)
        );
        return Ok(StartFacts {
            mode,
            flag: Some(key),
            how,
        });
    }
    Ok(StartFacts {
        mode: if unset {
            StartMode::Always
        } else {
            StartMode::Never
        },
        flag: None,
        how: format!(
            "the chat template's generation prompt ends {} and no thinking flag changes it",
            inside(unset)
        ),
    })
}

fn inside(b: bool) -> &'static str {
    if b {
        "inside the reasoning"
    } else {
        "outside the reasoning"
    }
}

/// Whether a prompt ends inside the reasoning: from the start of its last anchor, the
/// last reasoning tag decides (an open tag: inside; a close tag: outside); with none,
/// the template's start rule does.
pub(crate) fn in_reasoning(
    prompt: &str,
    anchors: &[&str],
    opens: &[String],
    closes: &[String],
    start_rule: bool,
) -> bool {
    // The anchor is looked for from its start: an anchor that holds the reasoning's
    // tags (`<|im_start|>assistant\n<think>`) says where the reasoning stands too.
    let from = anchors
        .iter()
        .filter_map(|a| prompt.rfind(a))
        .max()
        .unwrap_or(0);
    let tail = &prompt[from..];
    let mut last: Option<bool> = None;
    let mut i = 0;
    while i < tail.len() {
        let rest = &tail[i..];
        // Longest tag first, so an open tag inside a close tag is not read as one.
        let close = closes
            .iter()
            .filter(|c| rest.starts_with(c.as_str()))
            .map(String::len)
            .max();
        let open = opens
            .iter()
            .filter(|o| rest.starts_with(o.as_str()))
            .map(String::len)
            .max();
        match (open, close) {
            (Some(o), Some(c)) if c >= o => {
                last = Some(false);
                i += c;
            }
            (Some(o), _) => {
                last = Some(true);
                i += o;
            }
            (None, Some(c)) => {
                last = Some(false);
                i += c;
            }
            (None, None) => i += rest.chars().next().map_or(1, char::len_utf8),
        }
    }
    last.unwrap_or(start_rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags() -> (Vec<String>, Vec<String>) {
        (vec!["<think>".into()], vec!["</think>".into()])
    }

    #[test]
    fn the_last_tag_after_the_anchor_decides() {
        let (o, c) = tags();
        let a = ["<|im_start|>assistant\n"];
        let p = "<|im_start|>user\n<think>x</think><|im_start|>assistant\n<think>\n";
        assert!(in_reasoning(p, &a, &o, &c, false));
        let p = "<|im_start|>assistant\n<think>\n\n</think>\n\n";
        assert!(!in_reasoning(p, &a, &o, &c, true));
        // An earlier turn's open tag is before the anchor.
        let p = "<think>\n<|im_start|>assistant\n";
        assert!(!in_reasoning(p, &a, &o, &c, false));
        assert!(in_reasoning(p, &a, &o, &c, true));
    }

    #[test]
    fn a_qwen3_5_style_template_starts_in_reasoning_unless_disabled() {
        let template = "{{ '<|im_start|>assistant\\n' }}{% if enable_thinking is defined and \
                        enable_thinking is false %}{{ '<think>\\n\\n</think>\\n\\n' }}{% else %}\
                        {{ '<think>\\n' }}{% endif %}";
        let (o, c) = tags();
        let anchor = Delim::literals(&["<|im_start|>assistant\n"]);
        let f = derive(template, &anchor, &o, &c, false).unwrap();
        assert_eq!(f.mode, StartMode::UnlessDisabled);
        assert_eq!(f.flag, Some("enable_thinking"));
    }
}
