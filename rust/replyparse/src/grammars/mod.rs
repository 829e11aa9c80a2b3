//! The grammar families: one module per family, each holding its payload grammar and
//! its declaration (the family's fields in `dialects.json`).
//!
//! A *family* is code: how one kind of markup is read. A *dialect* is data: the tags and
//! spellings one model family writes, declared in `dialects.json` (or registered at run
//! time) and read by its family's grammar. Adding a dialect of an existing family is a
//! declaration; adding a family is one module here plus one arm in [`grammar_for`] (the
//! only place that names every family's type) and one in [`constraint_for`] (its
//! decoding constraint, in the family's `constraint.rs`).
//!
//! - [`envelope`]: a JSON object per call behind a tag (Qwen / Hermes, Llama 3, InternLM);
//! - [`xml`] with [`schema`]: function-first markup whose values end at a close tag
//!   (Qwen3-Coder, GLM, MiniMax M2 / M3, Seed-OSS, Step-3 / 3.5, HY, MiMo, MiniCPM-5,
//!   dots, Solar Open2, LongCat gen 2, Poolside, Ling 3, Spark 2.5, Kimi K3), values
//!   typed by the request's JSON schema or by their own type attribute;
//! - [`dsml`]: DeepSeek V3.2 / V4 `invoke` elements (and GigaChat 3.5's GCML namespace);
//! - [`header`]: a header + JSON per call (Kimi K2, DeepSeek V3 / V3.1, Mistral v11+);
//! - [`pythonic`]: Python call expressions, arguments converted to JSON as they stream
//!   (Llama 3.2 / 4, OLMo 3, LFM2);
//! - [`gemma`]: Gemma call notation `call:NAME{key:value}`, a quote token for strings,
//!   bare scalars typed by their literal form and the schema (Gemma 4, FunctionGemma);
//! - [`forms`]: one name with several payload forms, told apart at the first bytes.

pub mod dsml;
pub mod envelope;
pub mod forms;
pub mod gemma;
pub mod header;
pub(crate) mod literal;
pub mod payload;
pub mod pythonic;
pub mod schema;
pub mod xml;

use serde::{Deserialize, Serialize};

pub use payload::{BareCall, PayloadGrammar};

use crate::constraint::Dialect;
use crate::constraint_kit::CallConstraint;
use crate::registry::ToolDialect;
use crate::request::Schemas;

/// The payload grammar a tool dialect uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// `{"name": ..., "<argument_field>": {...}}` inside the outer tags.
    JsonEnvelope,
    /// Function-first XML-like markup whose values end at a close tag (Qwen3-Coder, GLM,
    /// MiniMax, Step-3, Kimi K3, ...); the syntax is the dialect's `xml` field.
    Xml,
    /// DeepSeek V3.2 / V4 DSML `invoke` elements; the markup is the dialect's `dsml`
    /// field (DeepSeek's when absent).
    Dsml,
    /// A run of markers around a header (name, type, id) then JSON arguments: Kimi K2,
    /// DeepSeek V3 / V3.1, Mistral v11+; the syntax is the dialect's `header` field.
    /// (`kimi` is its former name.)
    #[serde(alias = "kimi")]
    Header,
    /// Python call expressions (`[f(a=1), g()]`, or one per line); the layout is the
    /// dialect's `pythonic` field.
    Pythonic,
    /// Gemma call notation (`call:NAME{key:value,...}`); the quote token and value
    /// style are the dialect's `gemma` field.
    Gemma,
}

impl Family {
    /// Whether the family's grammar converts values by the request's parameter schemas
    /// (XML values are text; JSON families stream the model's JSON as written). Only
    /// then does a parser take a copy of the schemas.
    pub fn uses_schemas(self) -> bool {
        // Pythonic: positional arguments take the declared parameters' names.
        // Gemma: bare scalars are typed by the schema too.
        matches!(self, Family::Xml | Family::Pythonic | Family::Gemma)
    }
}

/// Builds the grammar of a dialect's family (and of its other payload forms, if it
/// declares any). `schemas` are the request's parameter schemas, for grammars that
/// convert values by type.
pub fn grammar_for(d: &ToolDialect, schemas: Schemas) -> Box<dyn PayloadGrammar> {
    if d.forms.is_empty() {
        return family_grammar(d, schemas);
    }
    let others = d
        .forms
        .iter()
        .map(|f| (f.when.clone(), family_grammar(&d.form(f), schemas.clone())))
        .collect();
    Box::new(forms::Forms::new(family_grammar(d, schemas), others))
}

/// The grammar of the dialect's own family.
fn family_grammar(d: &ToolDialect, schemas: Schemas) -> Box<dyn PayloadGrammar> {
    match d.family {
        Family::JsonEnvelope => Box::new(envelope::JsonEnvelope::new(
            &d.name_field,
            &d.argument_field,
            &d.envelope.clone().unwrap_or_default(),
        )),
        Family::Xml => Box::new(xml::XmlGrammar::new(
            d.xml
                .clone()
                .expect("xml dialects carry their syntax (validated at registration)"),
            d.close.as_deref(),
            schemas,
        )),
        Family::Dsml => Box::new(dsml::DsmlGrammar::new(&d.dsml.clone().unwrap_or_default())),
        Family::Header => Box::new(header::HeaderGrammar::new(
            &d.header.clone().unwrap_or_default(),
            &boundaries(d),
        )),
        Family::Pythonic => Box::new(pythonic::PythonicGrammar::new(
            &d.pythonic.clone().unwrap_or_default(),
            schemas,
        )),
        Family::Gemma => Box::new(gemma::GemmaGrammar::new(
            &d.gemma.clone().unwrap_or_default(),
            schemas,
            &boundaries(d),
        )),
    }
}

/// Every spelling of the dialect's open and close tags: where a grammar that reads up to
/// the next marker must stop.
fn boundaries(d: &ToolDialect) -> Vec<std::borrow::Cow<'_, str>> {
    d.open_spellings()
        .into_iter()
        .chain(d.close_spellings())
        .collect()
}

/// Builds the tool-call constraint writer of a dialect's family (see
/// [`crate::constraint`]); Harmony, a response parser with calls, has its own.
pub(crate) fn constraint_for(d: &Dialect) -> Box<dyn CallConstraint + '_> {
    match d {
        Dialect::Harmony => Box::new(crate::response::harmony::constraint::HarmonyCalls),
        Dialect::Tool(t) => match t.family {
            Family::JsonEnvelope => Box::new(envelope::constraint::EnvelopeCalls(t)),
            Family::Xml => Box::new(xml::constraint::XmlCalls::new(t)),
            Family::Dsml => Box::new(dsml::constraint::DsmlCalls::new(t)),
            Family::Header => Box::new(header::constraint::HeaderCalls(t)),
            Family::Pythonic => Box::new(pythonic::constraint::PythonicCalls(t)),
            Family::Gemma => Box::new(gemma::constraint::GemmaCalls::new(t)),
        },
    }
}
