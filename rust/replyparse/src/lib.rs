#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![warn(unnameable_types)]
#![warn(clippy::too_many_lines)]

// The engine's modules are private: the crate's surface is the list of re-exports
// below, plus three modules that group functions under a name (`constraint`,
// `registry`, `wire`). ARCHITECTURE.md beside Cargo.toml says how the modules depend on
// each other; `internals` holds what the repository's own crates need beyond the API.

mod cache;
mod calls;
mod chat_template;
mod config;
pub mod constraint;
mod constraint_kit;
mod delta;
mod derive;
mod dialect;
mod error;
mod grammars;
#[cfg(feature = "internals")]
pub mod internals;
mod models;
pub mod registry;
mod request;
mod response;
pub mod response_template;
mod scan;
mod schema;
mod serve;
mod thinking;
mod tool;
mod toolset;

#[cfg(test)]
mod tests;

pub use serve::wire;

// The parser and its configuration.
pub use config::{ParserConfig, DEFAULT_MAX_BUFFERED_BYTES};
pub use request::{ToolChoice, ToolPolicy, ToolSpec};
pub use response::ResponseParser;
pub use thinking::{FlagRule, ThinkingFlags};
pub use tool::ToolParser;
pub use toolset::ToolSet;

// Deltas, complete messages and what a parser reports beside them.
pub use calls::{AllowedNames, BuiltinCall, CallNote, NoteKind, RejectReason, RejectedCall};
pub use delta::{
    Channel, DeltaFunctionCall, DeltaMessage, DeltaSink, DeltaToolCall, DeltaToolCalls,
    FunctionCall, ParsedResponse, ResponseAccumulator, Role, StreamItem, ToolCall,
};

// Errors.
pub use error::{Error, ModelCandidate, ParserKind, Result};

// The serving path.
pub use serve::runner::{RunnerDelta, RunnerOptions, StreamRunner, Usage};
pub use serve::wire::{Encoder, Protocol, StreamMeta};
pub use serve::{EngineStep, ServeOptions, ServeStream, StreamEnd};

// Decoding constraints for `tool_choice`.
pub use constraint::{ConstraintOptions, ReasoningSection, SpecialTokens, ToolConstraint};

// Dialect declarations.
pub use dialect::{
    BlockTags, CallsInReasoning, DropMarkup, ReasoningDialect, ReasoningSeparators,
    ResponseDialect, StartMode, SuffixedTags, TagSuffix, ToolDialect, ToolSeparators,
    UnopenedBlock, WrapperTags, SEPARATOR_MAX, SUFFIX_MAX, SUFFIX_PLACEHOLDER, UNOPENED_MAX,
};
pub use dialect::{
    BodyBlock, CallName, CallPayload, ForcedCall, ForcedReasoning, FrameMarker, FrameRoute,
    FramedSyntax, MarkerRole, RouteTo,
};
pub use grammars::dsml::DsmlSyntax;
pub use grammars::envelope::{Container as EnvelopeContainer, EnvelopeSyntax};
pub use grammars::gemma::{GemmaSyntax, Values as GemmaValues};
pub use grammars::header::HeaderSyntax;
pub use grammars::pythonic::{Container as PythonicContainer, PythonicSyntax};
pub use grammars::xml::{
    JsonBody, JsonCall, NestedValues, TypeElement, ValueWhitespace, XmlSyntax,
};
pub use grammars::{Family, FieldError, FormDecl, Syntax};

// The model table.
pub use models::{
    config_for_model, model_table, parsers_for_model, parsers_for_model_with, ModelRow,
    ParserChoice,
};

// The chat-template renderer.
pub use chat_template::{render_chat_template, ChatTemplate, TemplateError, TemplateErrorKind};

// Dialects derived from a chat template.
pub use derive::{
    derived_cache_info, dialect_from_chat_template, load_derived_dialect, DeriveError,
    DerivedCacheInfo, DerivedDialect, DERIVED_CACHE_BYTES, DERIVED_CACHE_ENTRIES,
};
