//! The grammar families: one module per family, each holding its payload grammar and
//! its declaration (the family's fields in `dialects.json`).
//!
//! A *family* is code: how one kind of markup is read. A *dialect* is data: the tags and
//! spellings one model family writes, declared in `dialects.json` (or registered at run
//! time) and read by its family's grammar. A dialect's payload syntax is one
//! [`Syntax`], tagged by its family; each family's module holds its syntax struct and that
//! struct's checks, its grammar and its constraint writer (`constraint.rs`, which uses
//! `crate::constraint_kit`). Adding a dialect of an existing family is a declaration;
//! adding a family is one module here plus one variant of [`Syntax`] (the only place that
//! names every family's grammar) and one arm where [`crate::constraint`] picks the
//! family's constraint writer.
//!
//! A grammar receives its own syntax and the dialect's tag spellings ([`Markers`]),
//! never the whole dialect: this layer knows no declaration.
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
//! - [`forms`]: one name with several payload forms, told apart at the first bytes;
//! - `literal`: Python literals and the argument-reading protocol, shared by the
//!   pythonic and Gemma families;
//! - [`payload`]: the contract every grammar implements ([`PayloadGrammar`]), and the
//!   driver the state-machine grammars share.

pub mod dsml;
pub mod envelope;
pub mod forms;
pub mod gemma;
pub mod header;
pub(crate) mod literal;
pub mod payload;
pub mod pythonic;
pub mod schema;
pub mod syntax;
pub mod xml;

pub use forms::FormDecl;
pub use payload::{BareCall, PayloadGrammar};
pub use syntax::{Family, FieldError, Markers, Syntax};

use crate::toolset::Schemas;

/// Builds the grammar of a dialect's syntax, and of its other payload forms if it
/// declares any. `schemas` are the request's parameter schemas, for grammars that
/// convert values by type.
pub fn grammar_for(
    syntax: &Syntax,
    forms: &[FormDecl],
    markers: &Markers<'_>,
    schemas: Schemas,
) -> Box<dyn PayloadGrammar> {
    if forms.is_empty() {
        return syntax.grammar(markers, schemas);
    }
    let others = forms
        .iter()
        .map(|f| (f.when.clone(), f.syntax.grammar(markers, schemas.clone())))
        .collect();
    Box::new(forms::Forms::new(syntax.grammar(markers, schemas), others))
}
