//! A tool dialect's payload syntax: one type, tagged by its grammar family.
//!
//! In a declaration the syntax is one object whose `family` says which grammar reads
//! the payload and whose other fields are that family's (`{"family": "xml",
//! "function_name_end": ">", ...}`). Each family's struct and its checks sit beside its
//! grammar; this module only tells them apart, builds the grammar a syntax names, and
//! reports a bad field with its path inside the syntax.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::dsml::{DsmlGrammar, DsmlSyntax};
use super::envelope::{EnvelopeSyntax, JsonEnvelope};
use super::gemma::{GemmaGrammar, GemmaSyntax};
use super::header::{HeaderGrammar, HeaderSyntax};
use super::pythonic::{PythonicGrammar, PythonicSyntax};
use super::xml::{XmlGrammar, XmlSyntax};
use super::PayloadGrammar;
use crate::scan::special::SpecialTokens;
use crate::toolset::Schemas;

/// The payload grammar a tool dialect uses: the tag of its [`Syntax`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// `{"name": ..., "<argument_field>": {...}}` inside the outer tags.
    JsonEnvelope,
    /// Function-first XML-like markup whose values end at a close tag (Qwen3-Coder, GLM,
    /// MiniMax, Step-3, Kimi K3, ...).
    Xml,
    /// DeepSeek V3.2 / V4 DSML `invoke` elements.
    Dsml,
    /// A run of markers around a header (name, type, id) then JSON arguments: Kimi K2,
    /// DeepSeek V3 / V3.1, Mistral v11+. (`kimi` is its former name.)
    #[serde(alias = "kimi")]
    Header,
    /// Python call expressions (`[f(a=1), g()]`, or one per line).
    Pythonic,
    /// Gemma call notation (`call:NAME{key:value,...}`).
    Gemma,
}

impl Family {
    /// Every family, in declaration order.
    pub const ALL: [Family; 6] = [
        Family::JsonEnvelope,
        Family::Xml,
        Family::Dsml,
        Family::Header,
        Family::Pythonic,
        Family::Gemma,
    ];

    /// Whether the family's grammar converts values by the request's parameter schemas
    /// (XML values are text; JSON families stream the model's JSON as written). Only
    /// then does a parser take a copy of the schemas.
    pub fn uses_schemas(self) -> bool {
        // Pythonic: positional arguments take the declared parameters' names.
        // Gemma: bare scalars are typed by the schema too.
        matches!(self, Family::Xml | Family::Pythonic | Family::Gemma)
    }

    /// The family's name in declarations (`json_envelope`, `xml`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Family::JsonEnvelope => "json_envelope",
            Family::Xml => "xml",
            Family::Dsml => "dsml",
            Family::Header => "header",
            Family::Pythonic => "pythonic",
            Family::Gemma => "gemma",
        }
    }
}

/// A dialect's payload syntax: its family, and that family's fields.
///
/// A *family* is code: how one kind of markup is read. A *dialect* is data: the tags
/// and spellings one model family writes, read by its family's grammar. In a
/// declaration the syntax is one object whose `family` says which grammar reads the
/// payload and whose other fields are that family's (`{"family": "xml",
/// "function_name_end": ">", ...}`); in Rust it is this enum, one variant per family,
/// each holding its family's syntax type. A syntax read from JSON reports a bad field
/// with its path inside the syntax ([`from_value`](Self::from_value)); registration
/// checks the rest ([`validate`](Self::validate)).
///
/// What each family reads, inside the dialect's outer tags:
///
/// - `json_envelope`: a JSON object per call, `{"name": ..., "arguments": {...}}` with
///   the dialect's keys, or an array or sequence of them (Qwen / Hermes, Llama 3,
///   InternLM, Mistral before v11, Granite, xLAM, ...). Arguments stream as the model
///   wrote them.
/// - `xml`: function-first XML-like markup whose values end at a close tag
///   (`<function=NAME><parameter=KEY>VALUE</parameter></function>`: Qwen3-Coder, GLM,
///   MiniMax, Seed-OSS, Step-3.5, Kimi K3, ...). Values are text, typed by the tool's
///   JSON schema (or a type attribute) and converted to JSON.
/// - `dsml`: DeepSeek V3.2 / V4 `invoke` elements with `parameter` children, each
///   marked as a raw string or JSON.
/// - `header`: a run of markers around a header (the name, a type, the model's call
///   id), then the JSON arguments (Kimi K2, DeepSeek V3 / V3.1, Mistral v11+).
/// - `pythonic`: Python call expressions, `[get_weather(city="Paris")]`, converted to
///   JSON as they stream (Llama 3.2 / 4, OLMo 3, LFM2).
/// - `gemma`: Gemma call notation, `call:NAME{key:value}`, with a quote token for
///   strings (Gemma 4, FunctionGemma).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(tag = "family", rename_all = "snake_case")]
pub enum Syntax {
    /// A JSON object per call (see [`EnvelopeSyntax`]).
    JsonEnvelope(EnvelopeSyntax),
    /// Function-first XML-like markup (see [`XmlSyntax`]).
    Xml(XmlSyntax),
    /// DSML `invoke` elements (see [`DsmlSyntax`]).
    Dsml(DsmlSyntax),
    /// A header then JSON per call (see [`HeaderSyntax`]); `kimi` is its former name.
    #[serde(alias = "kimi")]
    Header(HeaderSyntax),
    /// Python call expressions (see [`PythonicSyntax`]).
    Pythonic(PythonicSyntax),
    /// Gemma call notation (see [`GemmaSyntax`]).
    Gemma(GemmaSyntax),
}

impl Default for Syntax {
    /// A JSON envelope with its default keys (`name`, `arguments`).
    fn default() -> Self {
        Syntax::JsonEnvelope(EnvelopeSyntax::default())
    }
}

/// A field of a declaration that cannot work: its path (inside the syntax, such as
/// `value_close` or `nested.item`; the dialect adds where the syntax sits) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field's path, dotted (`json_body.open`, `skip[0]`); empty for the whole.
    pub path: String,
    /// What is wrong with it.
    pub problem: String,
}

impl FieldError {
    /// A problem with the field at `path`.
    pub fn new(path: impl Into<String>, problem: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            problem: problem.into(),
        }
    }

    /// The error with `outer` put before its path (`syntax` + `value_close` is
    /// `syntax.value_close`).
    pub fn within(mut self, outer: &str) -> Self {
        self.path = join_path(outer, &self.path);
        self
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.problem)
        } else {
            write!(f, "{}: {}", self.path, self.problem)
        }
    }
}

/// `outer` and `inner` joined as one field path.
pub fn join_path(outer: &str, inner: &str) -> String {
    match (outer.is_empty(), inner.is_empty()) {
        (true, _) => inner.to_owned(),
        (_, true) => outer.to_owned(),
        _ if inner.starts_with('[') => format!("{outer}{inner}"),
        _ => format!("{outer}.{inner}"),
    }
}

impl Syntax {
    /// The syntax's family.
    pub fn family(&self) -> Family {
        match self {
            Syntax::JsonEnvelope(_) => Family::JsonEnvelope,
            Syntax::Xml(_) => Family::Xml,
            Syntax::Dsml(_) => Family::Dsml,
            Syntax::Header(_) => Family::Header,
            Syntax::Pythonic(_) => Family::Pythonic,
            Syntax::Gemma(_) => Family::Gemma,
        }
    }

    /// Checks what serde cannot: each family's own rules (non-empty markers, fields
    /// that contradict each other), with the bad field's path inside the syntax.
    pub fn validate(&self) -> Result<(), FieldError> {
        match self {
            Syntax::JsonEnvelope(s) => s.validate(),
            Syntax::Xml(s) => s.validate(),
            Syntax::Dsml(s) => s.validate(),
            Syntax::Header(s) => s.validate(),
            Syntax::Pythonic(_) => Ok(()),
            Syntax::Gemma(s) => s.validate(),
        }
    }

    /// Reads a syntax from its declaration object, with the path of a bad field inside
    /// it (serde's own error for a tagged enum stops at the enum).
    pub fn from_value(value: Value) -> Result<Syntax, FieldError> {
        let Value::Object(mut map) = value else {
            return Err(FieldError::new("", "a syntax is an object with a `family`"));
        };
        let family = map
            .remove("family")
            .ok_or_else(|| FieldError::new("family", "missing (the grammar family)"))?;
        let family =
            Family::deserialize(family).map_err(|e| FieldError::new("family", e.to_string()))?;
        Ok(match family {
            Family::JsonEnvelope => Syntax::JsonEnvelope(variant(map)?),
            Family::Xml => Syntax::Xml(variant(map)?),
            Family::Dsml => Syntax::Dsml(variant(map)?),
            Family::Header => Syntax::Header(variant(map)?),
            Family::Pythonic => Syntax::Pythonic(variant(map)?),
            Family::Gemma => Syntax::Gemma(variant(map)?),
        })
    }

    /// The grammar this syntax names. `markers` are the dialect's tag spellings (a
    /// grammar that reads up to the next marker stops there); `schemas` the request's
    /// parameter schemas, for a family that converts values by type.
    pub(crate) fn grammar(
        &self,
        markers: &Markers<'_>,
        schemas: Schemas,
    ) -> Box<dyn PayloadGrammar> {
        match self {
            Syntax::JsonEnvelope(s) => Box::new(JsonEnvelope::new(s)),
            Syntax::Xml(s) => Box::new(XmlGrammar::new(s.clone(), &markers.closes(), schemas)),
            Syntax::Dsml(s) => Box::new(DsmlGrammar::new(s)),
            Syntax::Header(s) => Box::new(HeaderGrammar::new(s, &markers.boundaries())),
            Syntax::Pythonic(s) => Box::new(PythonicGrammar::new(s, schemas)),
            Syntax::Gemma(s) => Box::new(GemmaGrammar::new(s, schemas, &markers.boundaries())),
        }
    }
}

/// One family's struct from the rest of the syntax object, with the path of a bad field.
fn variant<T: DeserializeOwned>(map: Map<String, Value>) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(Value::Object(map)).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        FieldError::new(path, e.into_inner().to_string())
    })
}

impl<'de> Deserialize<'de> for Syntax {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Syntax::from_value(Value::deserialize(d)?).map_err(D::Error::custom)
    }
}

/// What a grammar may need of its dialect's tags, borrowed from the declaration: the
/// close tag, and the open and close tags with their aliases, whose spellings (as
/// declared and as engines may decode them) [`boundaries`](Self::boundaries) lists.
#[derive(Debug, Clone, Copy)]
pub struct Markers<'a> {
    /// The open tag.
    pub open: &'a str,
    /// Other spellings of the open tag.
    pub open_aliases: &'a [String],
    /// The close tag; none when a block ends with its payload.
    pub close: Option<&'a str>,
    /// Other spellings of the close tag.
    pub close_aliases: &'a [String],
    /// Which pieces of the tags are single special tokens.
    pub special: SpecialTokens<'a>,
}

impl<'a> Markers<'a> {
    /// The declared close tag, then its aliases (none when a block ends with its
    /// payload).
    pub fn closes(&self) -> Vec<&'a str> {
        self.close
            .into_iter()
            .chain(self.close_aliases.iter().map(String::as_str))
            .collect()
    }

    /// Every spelling of the open tags, then of the close tags: where a grammar that
    /// reads up to the next marker must stop.
    pub fn boundaries(&self) -> Vec<Cow<'a, str>> {
        let opens = std::iter::once(self.open).chain(self.open_aliases.iter().map(String::as_str));
        let closes = self
            .close
            .into_iter()
            .chain(self.close_aliases.iter().map(String::as_str));
        let mut out = self.special.spellings_of(opens);
        out.extend(self.special.spellings_of(closes));
        out
    }
}
