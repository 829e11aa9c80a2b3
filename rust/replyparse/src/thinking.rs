//! The request flags that switch reasoning on or off, read the way each model's chat
//! template reads them: see [`FlagRule`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One flag a chat template reads to switch thinking, in a reasoning dialect's
/// [`thinking_flags`](crate::ReasoningDialect::thinking_flags).
///
/// Whether a response starts inside reasoning is decided by the prompt, not by the
/// output: a thinking template writes the open tag into the generation prompt, so the
/// output holds only the close tag. Templates disagree on the switch: Qwen3 reads
/// `enable_thinking`, DeepSeek V3.1 `thinking`, MiniMax M3 `thinking_mode == "enabled"`,
/// Mistral and Solar the request's `reasoning_effort`. A reasoning dialect therefore
/// declares which flags its template reads (in order: the first one the request carries
/// decides), and the parser reads them from the request's `chat_template_kwargs` and its
/// `reasoning_effort` ([`ThinkingFlags`]).
///
/// The caller's own switch, [`ParserConfig::enable_thinking`](crate::ParserConfig::enable_thinking)
/// (an Anthropic request's `thinking`, a server's setting), decides for every dialect
/// when set, whatever flag its template reads, so `enable_thinking: Some(false)` always
/// means "no reasoning expected".
///
/// A value is read as the template reads it. With `on` / `off` lists, it is compared
/// with them; otherwise it is Jinja truthiness (`false`, `0`, `""`, `[]`, `{}` are off,
/// and `null` counts as not sent), so `{% if thinking %}` and the parser agree.
///
/// ```
/// use replyparse::{FlagRule, ThinkingFlags};
///
/// let kwargs = serde_json::json!({"thinking_mode": "disabled"});
/// let flags = ThinkingFlags {
///     chat_template_kwargs: kwargs.as_object(),
///     ..ThinkingFlags::default()
/// };
/// let rule = FlagRule { on: vec!["enabled".into()], ..FlagRule::key("thinking_mode") };
/// assert_eq!(flags.resolve(&[rule]), Some(false));
/// assert_eq!(flags.resolve(&[FlagRule::key("enable_thinking")]), None); // not sent
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlagRule {
    /// The key in `chat_template_kwargs` (`enable_thinking`, `thinking`,
    /// `thinking_mode`, ...). `reasoning_effort` is also read from the request's own
    /// `reasoning_effort` field, which wins over the kwarg of that name;
    /// `enable_thinking` is also the parser's explicit argument, which wins likewise.
    pub key: String,
    /// Values that mean "thinking on"; any other value means off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on: Vec<Value>,
    /// Values that mean "thinking off" (used when `on` is empty); any other value means
    /// on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub off: Vec<Value>,
}

impl FlagRule {
    /// A rule that reads `key` by truthiness.
    pub fn key(key: &str) -> Self {
        FlagRule {
            key: key.to_owned(),
            on: Vec::new(),
            off: Vec::new(),
        }
    }

    /// What this rule says of a value the request carries.
    fn read(&self, v: &Value) -> bool {
        if !self.on.is_empty() {
            self.on.contains(v)
        } else if !self.off.is_empty() {
            !self.off.contains(v)
        } else {
            truthy(v)
        }
    }
}

/// Jinja truthiness of a JSON value (`null` never reaches here: it is "not sent").
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// The thinking flags a request carries, borrowed from its configuration
/// ([`ParserConfig::thinking_flags`](crate::ParserConfig::thinking_flags)), as
/// [`FlagRule`]s read them.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThinkingFlags<'a> {
    /// The caller's explicit switch: when set, it decides.
    pub enable_thinking: Option<bool>,
    /// The request's `chat_template_kwargs`.
    pub chat_template_kwargs: Option<&'a Map<String, Value>>,
    /// The request's `reasoning_effort` (OpenAI Chat Completions; Responses'
    /// `reasoning.effort`).
    pub reasoning_effort: Option<&'a str>,
}

impl ThinkingFlags<'_> {
    /// Whether thinking is on (`Some(true)`), off (`Some(false)`) or not said
    /// (`None`): the explicit switch when set, else the first rule whose flag the
    /// request carries. An empty rule list reads `enable_thinking`, the rule of every
    /// dialect that declares none.
    pub fn resolve(&self, rules: &[FlagRule]) -> Option<bool> {
        if self.enable_thinking.is_some() {
            return self.enable_thinking;
        }
        if rules.is_empty() {
            return self.resolve(&[FlagRule::key("enable_thinking")]);
        }
        rules.iter().find_map(|r| self.read(r))
    }

    fn read(&self, rule: &FlagRule) -> Option<bool> {
        let kwarg = || {
            self.chat_template_kwargs
                .and_then(|m| m.get(&rule.key))
                .filter(|v| !v.is_null())
        };
        match rule.key.as_str() {
            "reasoning_effort" => match self.reasoning_effort {
                Some(e) => Some(rule.read(&Value::String(e.to_owned()))),
                None => kwarg().map(|v| rule.read(v)),
            },
            _ => kwarg().map(|v| rule.read(v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kwargs(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_explicit_switch_wins_then_the_default_rule_reads_enable_thinking() {
        let k = kwargs(json!({"enable_thinking": false}));
        let mut f = ThinkingFlags {
            chat_template_kwargs: Some(&k),
            ..Default::default()
        };
        assert_eq!(f.resolve(&[]), Some(false));
        f.enable_thinking = Some(true);
        assert_eq!(f.resolve(&[]), Some(true), "the explicit switch wins");
        let k = kwargs(json!({"thinking_mode": "enabled"}));
        let mode = [FlagRule {
            key: "thinking_mode".into(),
            on: vec![json!("enabled")],
            off: vec![],
        }];
        let f = ThinkingFlags {
            enable_thinking: Some(false),
            chat_template_kwargs: Some(&k),
            ..Default::default()
        };
        assert_eq!(
            f.resolve(&mode),
            Some(false),
            "whatever flag the template reads"
        );
        assert_eq!(ThinkingFlags::default().resolve(&[]), None);
    }

    #[test]
    fn first_flag_the_request_carries_decides() {
        let rules = [FlagRule::key("thinking"), FlagRule::key("enable_thinking")];
        let k = kwargs(json!({"enable_thinking": true, "thinking": false}));
        let f = ThinkingFlags {
            chat_template_kwargs: Some(&k),
            ..Default::default()
        };
        assert_eq!(f.resolve(&rules), Some(false));
        let k = kwargs(json!({"enable_thinking": true, "thinking": null}));
        let f = ThinkingFlags {
            chat_template_kwargs: Some(&k),
            ..Default::default()
        };
        assert_eq!(f.resolve(&rules), Some(true), "null is not sent");
    }

    #[test]
    fn values_read_as_the_template_reads_them() {
        let mode = [FlagRule {
            key: "thinking_mode".into(),
            on: vec![json!("enabled")],
            off: vec![],
        }];
        for (v, want) in [("enabled", true), ("disabled", false), ("auto", false)] {
            let k = kwargs(json!({ "thinking_mode": v }));
            let f = ThinkingFlags {
                chat_template_kwargs: Some(&k),
                ..Default::default()
            };
            assert_eq!(f.resolve(&mode), Some(want), "{v}");
        }
        let effort = [FlagRule {
            key: "reasoning_effort".into(),
            on: vec![],
            off: vec![json!("none"), json!("no_think")],
        }];
        let k = kwargs(json!({"reasoning_effort": "none"}));
        let mut f = ThinkingFlags {
            chat_template_kwargs: Some(&k),
            ..Default::default()
        };
        assert_eq!(f.resolve(&effort), Some(false));
        f.reasoning_effort = Some("high");
        assert_eq!(f.resolve(&effort), Some(true), "the request field wins");
        for (v, want) in [
            (json!(0), false),
            (json!(1), true),
            (json!(""), false),
            (json!("false"), true), // a non-empty string is true to Jinja
            (json!([]), false),
            (json!({"a": 1}), true),
        ] {
            let k = kwargs(json!({ "thinking": v.clone() }));
            let f = ThinkingFlags {
                chat_template_kwargs: Some(&k),
                ..Default::default()
            };
            assert_eq!(f.resolve(&[FlagRule::key("thinking")]), Some(want), "{v}");
        }
    }
}
