//! What a parser needs from the request: the tools it may call and the tool choice.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::calls::AllowedNames;
use crate::error::{Error, Result};

/// One function the request exposes.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    /// The JSON schema of the parameters, when given.
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

/// The request's `tool_choice`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    #[default]
    Auto,
    None,
    Required,
    /// Exactly this function.
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

/// Parameter schemas of the request's functions, by name.
pub type Schemas = Arc<HashMap<String, Value>>;

/// The parameter schemas of `tools` by function name (a copy the grammar keeps).
pub fn schemas_of(tools: &[ToolSpec]) -> Schemas {
    Arc::new(
        tools
            .iter()
            .filter_map(|t| t.parameters.clone().map(|p| (t.name.clone(), p)))
            .collect(),
    )
}

/// Resolved tool policy of one request.
#[derive(Debug, Clone)]
pub struct ToolPolicy {
    pub tools: Vec<ToolSpec>,
    pub choice: ToolChoice,
}

impl ToolPolicy {
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

    /// Parameter schemas by function name, for grammars that convert values by type.
    pub fn schemas(&self) -> Schemas {
        schemas_of(&self.tools)
    }

    pub fn allowed(&self) -> AllowedNames {
        let names: HashSet<String> = match &self.choice {
            ToolChoice::Function(n) => std::iter::once(n.clone()).collect(),
            _ => self.tools.iter().map(|t| t.name.clone()).collect(),
        };
        AllowedNames::Only(Arc::new(names))
    }
}
