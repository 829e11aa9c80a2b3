//! What a parser needs from the request: the tools it may call and the tool choice.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use crate::calls::AllowedNames;
use crate::error::{Error, Result};

/// One function the request exposes: its name and the JSON schema of its parameters.
///
/// That is all a parser needs of a tool: the name decides whether a call is sent, and
/// the schema types the values of dialects that write arguments as text (XML-like,
/// Python-like). Read one from an OpenAI tool with [`from_json`](Self::from_json), or a
/// request's whole `tools` array with [`list_from_json`](Self::list_from_json).
///
/// ```
/// use replyparse::ToolSpec;
///
/// let tool = ToolSpec::from_json(&serde_json::json!({
///     "type": "function",
///     "function": {"name": "get_weather", "parameters": {"type": "object"}},
/// }))?;
/// assert_eq!(tool.name, "get_weather");
/// # Ok::<(), replyparse::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The function name, as calls must spell it (compared exactly).
    pub name: String,
    /// The JSON schema of the parameters, when given; `None` (or `null`) types every
    /// value as the model wrote it.
    pub parameters: Option<Value>,
}

impl ToolSpec {
    /// Reads an OpenAI tool (`{"type": "function", "function": {"name": ...}}`) or a bare
    /// function definition (`{"name": ..., "parameters": ...}`).
    pub fn from_json(v: &Value) -> Result<Self> {
        let f = match v.get("function") {
            Some(f) => f,
            None => v,
        };
        if let Some(t) = v.get("type").and_then(Value::as_str) {
            if t != "function" {
                return Err(Error::InvalidTools(format!(
                    "tool type {t:?} is not supported; expected \"function\""
                )));
            }
        }
        let name = f
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| Error::InvalidTools(format!("a tool has no function name: {v}")))?;
        Ok(ToolSpec {
            name: name.to_owned(),
            parameters: f.get("parameters").cloned(),
        })
    }
}

impl ToolSpec {
    /// Reads a request's `tools` array from JSON text, as [`ToolSpec::from_json`] reads
    /// each tool, without building the rest of each tool: only the name and the
    /// parameter schema are kept (descriptions and other fields are skipped, unchecked).
    /// A request whose tools are not well formed is read by the general reader, which
    /// says what is wrong.
    pub fn list_from_json(src: &str) -> Result<Vec<ToolSpec>> {
        if let Some(tools) = read_tools(src) {
            return Ok(tools);
        }
        let v: Value = serde_json::from_str(src)
            .map_err(|e| Error::InvalidTools(format!("tools are not valid JSON: {e}")))?;
        let arr = v
            .as_array()
            .ok_or_else(|| Error::InvalidTools("tools must be a list".into()))?;
        arr.iter().map(ToolSpec::from_json).collect()
    }
}

/// The fast path of [`ToolSpec::list_from_json`]: None where the general reader must
/// decide.
fn read_tools(src: &str) -> Option<Vec<ToolSpec>> {
    let tools: Vec<ToolIn> = serde_json::from_str(src).ok()?;
    tools.into_iter().map(ToolIn::into_spec).collect()
}

/// One tool as the request spells it: an OpenAI tool or a bare function. Only what a
/// parser keeps is built (the name and the parameter schema); descriptions and other
/// fields are skipped (read, not built into values and copied, and not checked either:
/// a description the engine does not use cannot make a request fail).
///
/// Read from a JSON object only, keys in any order, a repeated key's last value winning,
/// as [`ToolSpec::from_json`] reads the general value; anything else makes the general
/// reader decide (and say what is wrong).
#[derive(Default)]
struct ToolIn {
    kind: Option<String>,
    /// Present (`Some`), even as `null` (`Some(None)`), or absent: a present `function`
    /// is where the name must be.
    function: Option<Option<FunctionIn>>,
    /// The name and parameters of a bare function definition.
    bare: FunctionIn,
}

#[derive(Default)]
struct FunctionIn {
    name: Option<String>,
    parameters: Option<Value>,
}

/// An object read field by field from a JSON map (a tool, or its `function`).
trait Fields: Default {
    const WHAT: &'static str;
    /// Reads the value of `key` (skipping one that is not wanted).
    fn field<'de, A: serde::de::MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> std::result::Result<(), A::Error>;
}

impl Fields for ToolIn {
    const WHAT: &'static str = "a tool object";

    fn field<'de, A: serde::de::MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> std::result::Result<(), A::Error> {
        match key {
            "type" => self.kind = map.next_value()?,
            "function" => self.function = Some(map.next_value()?),
            _ => self.bare.field(key, map)?,
        }
        Ok(())
    }
}

impl Fields for FunctionIn {
    const WHAT: &'static str = "a function object";

    fn field<'de, A: serde::de::MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> std::result::Result<(), A::Error> {
        match key {
            "name" => self.name = map.next_value()?,
            "parameters" => self.parameters = Some(map.next_value()?),
            _ => drop(map.next_value::<serde::de::IgnoredAny>()?),
        }
        Ok(())
    }
}

/// Reads a [`Fields`] object from a JSON map only (an array is refused; a repeated key's
/// last value wins, as in a `Value`).
struct FieldsVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Fields> serde::de::Visitor<'de> for FieldsVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(T::WHAT)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<T, A::Error> {
        let mut t = T::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            t.field(&key, &mut map)?;
        }
        Ok(t)
    }
}

impl<'de> serde::Deserialize<'de> for ToolIn {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_map(FieldsVisitor(std::marker::PhantomData))
    }
}

impl<'de> serde::Deserialize<'de> for FunctionIn {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_map(FieldsVisitor(std::marker::PhantomData))
    }
}

impl ToolIn {
    /// The tool, or None where `ToolSpec::from_json` would refuse it (it then says why).
    fn into_spec(self) -> Option<ToolSpec> {
        if self.kind.as_deref().is_some_and(|k| k != "function") {
            return None;
        }
        let f = match self.function {
            Some(f) => f?,
            None => self.bare,
        };
        Some(ToolSpec {
            name: f.name.filter(|n| !n.is_empty())?,
            parameters: f.parameters,
        })
    }
}

/// The request's `tool_choice`: whether the model may, must or must not call tools.
///
/// For parsing, `None` disarms tool markup (it stays content, as with no tools) and
/// `Function` accepts calls of that function only; `Auto` and `Required` parse alike.
/// `Required` and `Function` are what a decoding constraint enforces
/// ([`ToolConstraint`](crate::ToolConstraint)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// `"auto"`: the model decides (the default).
    #[default]
    Auto,
    /// `"none"`: no calls; tool markup the model writes anyway stays content.
    None,
    /// `"required"`: at least one call of any of the request's tools.
    Required,
    /// `{"type": "function", "function": {"name": ...}}`: exactly this function.
    Function(String),
}

impl ToolChoice {
    /// Reads `"auto" | "none" | "required"` or `{"type": "function", "function": {"name": ...}}`.
    pub fn from_json(v: &Value) -> Result<Self> {
        match v {
            Value::Null => Ok(ToolChoice::Auto),
            Value::String(s) => match s.as_str() {
                "auto" => Ok(ToolChoice::Auto),
                "none" => Ok(ToolChoice::None),
                "required" => Ok(ToolChoice::Required),
                other => Err(Error::InvalidTools(format!(
                    "tool_choice {other:?} is not one of \"auto\", \"none\", \"required\" or a named function"
                ))),
            },
            Value::Object(o) => o
                .get("function")
                .and_then(|f| f.get("name"))
                .or_else(|| o.get("name"))
                .and_then(Value::as_str)
                .map(|n| ToolChoice::Function(n.to_owned()))
                .ok_or_else(|| Error::InvalidTools(format!("tool_choice object has no function name: {v}"))),
            _ => Err(Error::InvalidTools(format!("tool_choice must be a string or an object, got {v}"))),
        }
    }
}

/// The tools and tool choice of one request, checked against each other: what a
/// [`ToolParser`](crate::ToolParser) built outside a
/// [`ResponseParser`](crate::ResponseParser) takes.
#[derive(Debug, Clone)]
pub struct ToolPolicy {
    /// The request's tools (empty when it has none).
    pub tools: Vec<ToolSpec>,
    /// The request's tool choice.
    pub choice: ToolChoice,
}

impl ToolPolicy {
    /// Checks and keeps the request's tools and choice. Fails with
    /// [`Error::InvalidTools`] when the choice names a function that is not among the
    /// tools, or is `Required` with no tools: no call could satisfy it.
    pub fn new(tools: Option<Vec<ToolSpec>>, choice: ToolChoice) -> Result<Self> {
        let tools = tools.unwrap_or_default();
        if let ToolChoice::Function(name) = &choice {
            if !tools.iter().any(|t| &t.name == name) {
                return Err(Error::InvalidTools(format!(
                    "tool_choice names {name:?}, which is not among the request's tools"
                )));
            }
        }
        if choice == ToolChoice::Required && tools.is_empty() {
            return Err(Error::InvalidTools(
                "tool_choice \"required\" needs at least one tool".into(),
            ));
        }
        Ok(ToolPolicy { tools, choice })
    }

    /// [`new`](Self::new) with the tools' names only: what a parser needs to accept
    /// calls, without a copy of the parameter schemas (often most of a request's tools).
    pub fn names_only(tools: Option<&[ToolSpec]>, choice: ToolChoice) -> Result<Self> {
        let names = tools.map(|tools| {
            tools
                .iter()
                .map(|t| ToolSpec {
                    name: t.name.clone(),
                    parameters: None,
                })
                .collect()
        });
        Self::new(names, choice)
    }

    /// Tool open tags are armed only when a call could be accepted: with no tools, or
    /// `tool_choice="none"`, tool markup stays text the client sees.
    pub fn armed(&self) -> bool {
        !self.tools.is_empty() && self.choice != ToolChoice::None
    }

    /// The names a parser may emit: the one function `tool_choice` names, otherwise
    /// every tool's.
    pub fn allowed(&self) -> AllowedNames {
        let names: HashSet<String> = match &self.choice {
            ToolChoice::Function(n) => std::iter::once(n.clone()).collect(),
            _ => self.tools.iter().map(|t| t.name.clone()).collect(),
        };
        AllowedNames::Only(Arc::new(names))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The general reader: every tool as a `Value`, through `ToolSpec::from_json`.
    fn general(src: &str) -> Option<Vec<ToolSpec>> {
        let v: Value = serde_json::from_str(src).ok()?;
        v.as_array()?
            .iter()
            .map(ToolSpec::from_json)
            .collect::<Result<_>>()
            .ok()
    }

    /// Random JSON in the shapes a tools array takes and the ones it should not: every
    /// field a tool has, repeated keys, nulls, wrong types, arrays in place of objects.
    fn tools_json(rng: &mut fastrand::Rng) -> String {
        fn any(rng: &mut fastrand::Rng, depth: u32) -> String {
            match rng.u8(..if depth > 2 { 6 } else { 8 }) {
                0 => "null".into(),
                1 => "true".into(),
                2 => "-1.5e3".into(),
                3 => r#""f""#.into(),
                4 => r#""""#.into(),
                5 => r#""na\u006de é""#.into(),
                6 => format!("[{}, {}]", any(rng, depth + 1), any(rng, depth + 1)),
                _ => object(rng, depth + 1, &["type", "properties", "name", "x"]),
            }
        }
        fn object(rng: &mut fastrand::Rng, depth: u32, keys: &[&str]) -> String {
            let fields: Vec<String> = (0..rng.usize(0..5))
                .map(|_| {
                    let k = keys[rng.usize(..keys.len())];
                    let v = match (k, rng.u8(..3)) {
                        ("type", 0) => r#""function""#.into(),
                        ("name", 0 | 1) => r#""get_weather""#.into(),
                        ("function", 0 | 1) => {
                            object(rng, depth + 1, &["name", "parameters", "description"])
                        }
                        ("parameters", 0) => {
                            r#"{"type": "object", "properties": {"n": {"type": "integer"}}}"#.into()
                        }
                        _ => any(rng, depth),
                    };
                    format!("{k:?}: {v}")
                })
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        let keys = ["type", "function", "name", "parameters", "description"];
        let tools: Vec<String> = (0..rng.usize(0..3))
            .map(|_| {
                if rng.u8(..10) == 0 {
                    any(rng, 1)
                } else {
                    object(rng, 0, &keys)
                }
            })
            .collect();
        format!("[{}]", tools.join(", "))
    }

    /// What the fast reader accepts, the general reader accepts too, as the same tools;
    /// and it decides most well-formed requests itself.
    #[test]
    fn the_fast_tools_reader_agrees_with_the_general_one() {
        let mut rng = fastrand::Rng::with_seed(5);
        let (mut fast, mut accepted) = (0, 0);
        for _ in 0..20_000 {
            let src = tools_json(&mut rng);
            let want = general(&src);
            accepted += usize::from(want.is_some());
            if let Some(got) = read_tools(&src) {
                fast += 1;
                assert_eq!(Some(got), want, "{src}");
            }
            assert_eq!(ToolSpec::list_from_json(&src).ok(), want, "{src}");
        }
        assert!(
            accepted > 2_000 && fast * 10 >= accepted * 9,
            "{fast} of {accepted}"
        );
    }

    /// A field the parser does not use is skipped unchecked by the fast reader (a
    /// decision: it cannot make a request fail), where the general one refuses it.
    #[test]
    fn unused_fields_are_not_checked() {
        let src = r#"[{"type": "function", "function": {"name": "f", "description": 1e400}}]"#;
        assert!(general(src).is_none());
        let tools = ToolSpec::list_from_json(src).unwrap();
        assert_eq!(tools[0].name, "f");
    }
}
