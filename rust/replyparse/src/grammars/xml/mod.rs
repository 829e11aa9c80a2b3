//! The XML-like payload driver: sequential, function-first markup whose parameter values
//! end at a dialect's close tag (Qwen3-Coder, GLM-4.5/4.7, MiniMax M2 / M3, Seed-OSS,
//! Step-3 / 3.5, HY v3 / v4, MiMo V2, MiniCPM-5, dots, Solar Open2, LongCat gen 2,
//! Poolside, Ling 3, Spark 2.5, Kimi K3).
//!
//! ```text
//! function --> arg_start --> arg_name --> arg_value
//!                 ^                          |
//!                 +--------------------------+
//!                 +--- payload end ---> done
//! ```
//!
//! The seed gave each dialect three code hooks; here a dialect is its markup as data
//! ([`XmlSyntax`]), and this one driver owns every state transition, value streaming,
//! JSON output and schema conversion. The output is the arguments object built
//! incrementally: `{"key": value, ...}`.
//!
//! What a declaration says:
//! - the function: its open text (`<function=`, `<invoke`, `<tool_call>`, or nothing when
//!   the payload starts with the name, GLM), the end of its name or attribute text
//!   (`>`, `\n`, `<tool_sep>`, `<|sep|>`), its close (`</function>`, `</invoke>`);
//!   the name is that text, trimmed, or, with `name_attr`, one of its attributes
//!   (`<invoke name="F">`; quoted with `"` or `'` or not quoted, entities decoded with
//!   `entities`: the `attrs` module);
//! - a parameter: its open text and the end of its name or attribute text, the key being
//!   that text or its `key_attr` attribute, an optional value element
//!   (`<arg_value>`), and the value close; a value close holding `{key}` is per key, the
//!   parameter's element name being its key (MiniMax M3's `NS<city>...NS</city>`);
//! - `type_attr`: an attribute typing the value itself (Kimi K3's `type="number"`), which
//!   wins over the request's schema;
//! - how whitespace around a value is read ([`ValueWhitespace`]): kept (GLM-4.7),
//!   exactly one newline after the open and before the close tag is protocol
//!   (Qwen3-Coder, dots: a plain strip corrupts code-valued arguments), or trimmed
//!   (MiniMax M2, whose reference parser strips);
//! - `cdata`: a value written `<![CDATA[...]]>` is the text inside, as written (no tag
//!   inside it ends the value; MiniCPM-5);
//! - `python_values`: the template writes values with Python's `str()`, so an array or
//!   object may be a Python literal (Seed-OSS, MiniCPM-5);
//! - `skip`: markup dropped between parameters (MiniCPM-5's `<arguments>` wrapper);
//! - `json_body`: a call whose arguments are one JSON object in an element of its own
//!   (Kimi K3's `<|open|>json type="object"<|sep|>{...}<|close|>json<|sep|>`);
//! - `type_element`: an optional element between a key and its value element that names
//!   the value's type (K2 Horizon's `<ifm|arg_type>integer</ifm|arg_type>`): it picks
//!   among the types the schema allows, and types a value the schema does not describe
//!   ([`element_types`]);
//! - `json_call`: a function whose body is one JSON call object instead of a name and
//!   parameters (K2 Horizon's `<ifm|tool_call>{"name": ..., "arguments": {...}}`), or an
//!   array of them: read by the JSON-envelope grammar, up to the function close;
//! - `nested`: values written as child elements, converted to objects and arrays
//!   (the `nested` module, MiniMax M3).
//!
//! Invariants, for every declaration:
//! - A value whose type resolves to string streams at once, escaped, as it arrives; only
//!   a possible prefix of the value close tag (and what the whitespace policy may still
//!   drop: one trailing newline, or trailing whitespace for a trimmed value) is held
//!   back. Other types, element values and JSON bodies are held until the close tag,
//!   then converted ([`crate::grammars::schema`]).
//! - Only the value close tag ends a value: other tags inside a value (`<parameter=y>` in
//!   a code sample) are data, and so is the close tag itself unless the next parameter,
//!   the block close, the end of input, or a function close that the block close, the
//!   next function or the end of input follows, follows it (after whitespace; at most
//!   two close tags and [`MAX_LOOKAHEAD`] bytes are looked past, then the first reading
//!   wins): a value holding `</parameter>` stays whole (`State::Tentative`). A value
//!   whose close tag is missing ends at the block close that follows it (after the
//!   function close, if any) when only whitespace follows that to the end of output
//!   ([`XmlGrammar::value_close_missing`]). An
//!   element value ends at its matching close (same-named children counted).
//! - A key is written only once its value begins, so input that ends after a key never
//!   produces a key without a value; once the call is closed the arguments are always
//!   valid JSON, duplicate keys kept in order.
//! - `final` closes what was opened with what was written; it never invents a name or a
//!   value (a cut attribute quote is no name).
//! - Every byte is looked at a bounded number of times: held text is a tag prefix, a
//!   name or key, a typed value, or whitespace a policy may drop (moved into a buffer,
//!   not re-scanned).

pub(crate) mod attrs;
pub(crate) mod constraint;
pub(crate) mod nested;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::envelope::{Container, EnvelopeSyntax, JsonEnvelope};
use super::syntax::FieldError;
use crate::calls::CallEmitter;
use crate::delta::DeltaSink;
use crate::grammars::payload::PayloadGrammar;
use crate::grammars::schema;
use crate::scan::json_scan::{JsonValueScanner, ScanStatus};
use crate::scan::lex::{head, partial, ws_len, Head};
use crate::scan::prefix::{TagMatch, TagSet};
use crate::schema::{property, Ty, Types};
use crate::toolset::Schemas;

/// How whitespace around a value is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ValueWhitespace {
    /// Every byte between the tags is the value (GLM-4.7, Solar Open2, MiMo V2).
    Keep,
    /// One newline right after the value opens and one right before it closes are
    /// protocol, not data (Qwen3-Coder, dots).
    Newline,
    /// Leading and trailing whitespace is not part of the value (MiniMax M2: its
    /// reference parser strips the value).
    Trim,
}

/// A call whose arguments are one JSON object written in an element of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonBody {
    /// The element's open text (`<|open|>json`); its attribute text, if any, ends where
    /// a parameter tag's does (`param_name_end`).
    pub open: String,
    /// The element's close (`<|close|>json<|sep|>`).
    pub close: String,
}

/// An element that names the type of the value it precedes, written between the
/// parameter's key and its value element (K2 Horizon's
/// `<ifm|arg_type>integer</ifm|arg_type>`). Optional: a parameter without one is read
/// as always.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TypeElement {
    /// The element's open tag (`<ifm|arg_type>`).
    pub open: String,
    /// The element's close tag (`</ifm|arg_type>`).
    pub close: String,
}

/// A function whose body is a JSON call object, `{"name": ..., "arguments": {...}}`,
/// instead of a name and parameters (K2 Horizon's JSON tool-call format inside
/// `<ifm|tool_call>`): a body whose first byte (after whitespace) is `{` is one call
/// object, `[` an array of them. The object is read by the JSON-envelope grammar, so
/// the arguments stream as the model wrote them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonCall {
    /// The key holding the function name.
    #[serde(default = "default_name_field")]
    pub name_field: String,
    /// The key holding the arguments.
    #[serde(default = "default_argument_field")]
    pub argument_field: String,
    /// More keys that hold the arguments, after `argument_field`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argument_keys: Vec<String>,
}

/// The default `name_field` of a JSON call, `name`.
fn default_name_field() -> String {
    "name".into()
}

/// The default `argument_field` of a JSON call, `arguments`.
fn default_argument_field() -> String {
    "arguments".into()
}

impl JsonCall {
    /// The envelope syntax that reads such a body (`container`: one object or an array).
    fn envelope(&self, container: Container) -> EnvelopeSyntax {
        EnvelopeSyntax {
            name_field: self.name_field.clone(),
            argument_field: self.argument_field.clone(),
            argument_keys: self.argument_keys.clone(),
            container,
            ..EnvelopeSyntax::default()
        }
    }
}

/// Values written as child elements of the parameter's element (MiniMax M3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NestedValues {
    /// The element name of array items (`item`).
    #[serde(default = "default_item")]
    pub item: String,
}

/// The element name of array items when a declaration leaves it out.
fn default_item() -> String {
    "item".into()
}

/// The markup of one XML-like dialect (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct XmlSyntax {
    /// Text before the function name or attributes (`<function=`, `<invoke`); empty when
    /// the payload starts with them (GLM's name, MiniCPM-5's attributes after the block's
    /// `<function`).
    #[serde(default)]
    pub function_open: String,
    /// Ends the function name or attribute text and is consumed (`>`, `\n` for GLM,
    /// `<tool_sep>`, `<|sep|>`). The name also ends, without consuming it, where a
    /// parameter, the function close or the block close begins.
    pub function_name_end: String,
    /// Closes the function (`</function>`), when the dialect has one.
    #[serde(default)]
    pub function_close: Option<String>,
    /// Opens a parameter (`<parameter=`, `<arg_key>`, `<parameter`).
    pub param_open: String,
    /// Ends the parameter name or attribute text (`>`, `</arg_key>`, `<|sep|>`).
    pub param_name_end: String,
    /// Opens the value after the name, when the dialect has a separate element for it
    /// (`<arg_value>`).
    #[serde(default)]
    pub value_open: Option<String>,
    /// Ends the value (`</parameter>`, `</arg_value>`); `{key}` stands for the key when
    /// the parameter's element is named by it (`]<]minimax[>[</{key}>`).
    pub value_close: String,
    /// The former spelling of `value_whitespace: "newline"`.
    #[serde(default)]
    pub trim_value_newline: bool,
    /// How whitespace around a value is read; default `keep` (or `newline` with
    /// `trim_value_newline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_whitespace: Option<ValueWhitespace>,
    /// The function tag's attribute that holds the name (`name`, Kimi K3's `tool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_attr: Option<String>,
    /// The parameter tag's attribute that holds the key (`name`, Kimi K3's `key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_attr: Option<String>,
    /// The parameter tag's attribute that types the value (Kimi K3's `type`): `string`,
    /// `number`, `integer`, `boolean`, `null`, `object`, `array`; it wins over the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_attr: Option<String>,
    /// An optional element between the key and the value element that names the
    /// value's type (K2 Horizon's `<ifm|arg_type>`): it picks among the types the schema
    /// allows (a union) and types a value the schema does not describe; a single type
    /// the schema gives stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_element: Option<Box<TypeElement>>,
    /// Attribute values escape `&quot; &apos; &lt; &gt; &amp;`; decode them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub entities: bool,
    /// A name or key read as text (no `name_attr` / `key_attr`) written in quotes
    /// (`"f"` or `'f'`, as after MiniCPM-5's `<function name=`) loses them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unquote: bool,
    /// A value written `<![CDATA[...]]>` is the text inside, as written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cdata: bool,
    /// The template writes values with Python's `str()` (Seed-OSS, MiniCPM-5): an array
    /// or object value may be a Python literal (`['a', 'b']`, `{'k': None}`), read as
    /// the JSON value it spells where the schema types the value so
    /// (the parsing rules, "Python literals").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub python_values: bool,
    /// Markup dropped between parameters (MiniCPM-5's `<arguments>`, `</arguments>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip: Vec<String>,
    /// Arguments written as one JSON object element (Kimi K3). (This and the other
    /// element declarations few dialects use are boxed: every tool parser holds a copy
    /// of its syntax.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_body: Option<Box<JsonBody>>,
    /// A function whose body is a JSON call object (or an array of them) instead of a
    /// name and parameters (K2 Horizon's JSON tool-call format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_call: Option<Box<JsonCall>>,
    /// Values written as child elements (MiniMax M3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested: Option<NestedValues>,
    /// A value the request's schema does not type (no schema, a parameter it does not
    /// describe, or one without a type) is JSON when it is one JSON value (a number,
    /// `true`, `null`, an array, an object, a quoted string), else the text as a
    /// string: the template asks for lists and objects in JSON and scalars as they are
    /// (Muse). Without it such a value is a string.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untyped_json: bool,
    /// The model writes several calls as functions of one block (MiniMax, HY, Step-3,
    /// Kimi K3) rather than one block each (Qwen3-Coder, GLM). The parser reads both;
    /// the decoding constraint writes this one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_block: bool,
}

/// The placeholder for the key in a per-key value close.
pub const KEY_PLACEHOLDER: &str = "{key}";

impl XmlSyntax {
    /// The whitespace policy in force.
    pub fn whitespace(&self) -> ValueWhitespace {
        match self.value_whitespace {
            Some(w) => w,
            None if self.trim_value_newline => ValueWhitespace::Newline,
            None => ValueWhitespace::Keep,
        }
    }

    /// Whether the parameter's element is named by its key (`{key}` in the value close).
    pub fn element_keys(&self) -> bool {
        self.value_close.contains(KEY_PLACEHOLDER)
    }

    /// The value close of a parameter named `key`.
    pub fn value_close_for(&self, key: &str) -> String {
        self.value_close.replace(KEY_PLACEHOLDER, key)
    }

    /// Checks the markup: the function name end, parameter open, parameter name end
    /// and value close are non-empty, and the fields agree with each other.
    pub fn validate(&self) -> Result<(), FieldError> {
        for (field, v) in [
            ("function_name_end", &self.function_name_end),
            ("param_open", &self.param_open),
            ("param_name_end", &self.param_name_end),
            ("value_close", &self.value_close),
        ] {
            if v.is_empty() {
                return Err(FieldError::new(field, "is empty"));
            }
        }
        if self.trim_value_newline
            && self
                .value_whitespace
                .is_some_and(|w| w != ValueWhitespace::Newline)
        {
            return Err(FieldError::new(
                "trim_value_newline",
                "contradicts value_whitespace",
            ));
        }
        for (field, a) in [
            ("name_attr", &self.name_attr),
            ("key_attr", &self.key_attr),
            ("type_attr", &self.type_attr),
        ] {
            if a.as_deref()
                .is_some_and(|a| a.is_empty() || a.contains(['=', ' ']))
            {
                return Err(FieldError::new(
                    field,
                    "attribute names are non-empty words",
                ));
            }
        }
        self.validate_elements()
    }

    /// The checks of per-key value closes, nested values, skipped markup and the JSON
    /// body.
    fn validate_elements(&self) -> Result<(), FieldError> {
        if self.element_keys() && self.key_attr.is_some() {
            let problem = "value_close names the key ({key}): no key_attr then";
            return Err(FieldError::new("key_attr", problem));
        }
        if self.value_close == KEY_PLACEHOLDER {
            return Err(FieldError::new("value_close", "needs markup around {key}"));
        }
        if self.nested.is_some() && !self.element_keys() {
            let problem = "needs elements named by their key ({key} in value_close)";
            return Err(FieldError::new("nested", problem));
        }
        if self.nested.as_ref().is_some_and(|n| n.item.is_empty()) {
            return Err(FieldError::new("nested.item", "is empty"));
        }
        if let Some(k) = self.skip.iter().position(String::is_empty) {
            return Err(FieldError::new(format!("skip[{k}]"), "is empty"));
        }
        if let Some(j) = &self.json_body {
            for (field, v) in [("json_body.open", &j.open), ("json_body.close", &j.close)] {
                if v.is_empty() {
                    return Err(FieldError::new(field, "is empty"));
                }
            }
        }
        self.validate_typing_and_calls()
    }

    /// The checks of the type element and the JSON call body.
    fn validate_typing_and_calls(&self) -> Result<(), FieldError> {
        if let Some(t) = &self.type_element {
            for (field, v) in [
                ("type_element.open", &t.open),
                ("type_element.close", &t.close),
            ] {
                if v.is_empty() {
                    return Err(FieldError::new(field, "is empty"));
                }
            }
            // The element sits between the key and the value element: without one, the
            // value would start where the type element does.
            if self.value_open.as_deref().unwrap_or("").is_empty() {
                let problem = "needs a value element (value_open) for the type to precede";
                return Err(FieldError::new("type_element", problem));
            }
            if self.type_attr.is_some() {
                let problem = "a value is typed by an attribute or an element, not both";
                return Err(FieldError::new("type_element", problem));
            }
        }
        if let Some(j) = &self.json_call {
            for (field, v) in [
                ("json_call.name_field", &j.name_field),
                ("json_call.argument_field", &j.argument_field),
            ] {
                if v.is_empty() {
                    return Err(FieldError::new(field, "is empty"));
                }
            }
            if let Some(k) = j.argument_keys.iter().position(String::is_empty) {
                let field = format!("json_call.argument_keys[{k}]");
                return Err(FieldError::new(field, "is empty"));
            }
            // The body is told from a name by its first byte after the function's open
            // text; a payload that starts with the JSON is another form (`forms`).
            if self.function_open.is_empty() {
                let problem = "needs the function's open text (function_open) before the body";
                return Err(FieldError::new("json_call", problem));
            }
        }
        Ok(())
    }
}

/// Where the driver is in one function (one payload). Each state has its method,
/// `XmlGrammar::on_<state>`, which says what the state reads and why it holds what it
/// holds; here, what each one means and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the function (its open text or, for GLM, its name). Holds nothing: the
    /// leading whitespace stays unconsumed, so a block that is not a call goes back to
    /// the tool parser whole.
    Function,
    /// After the function's open text, with a JSON call body declared: its first byte
    /// (after whitespace, which is dropped) says a JSON call or a name. Holds nothing.
    Body,
    /// Inside a JSON call body, read by the JSON-envelope grammar (`json_object` or
    /// `json_array`), which holds what it needs (a key, the name).
    JsonCall,
    /// After a JSON call body, up to the function close. Holds at most a possible prefix
    /// of it, unconsumed.
    JsonCallEnd,
    /// Inside the function name (or its tag's attribute text). `buf` holds it, since
    /// a name is given whole (identity first) and only once its end is seen.
    Name,
    /// Between parameters: the next parameter, the JSON body, skipped markup, or the
    /// function or block close. Holds at most a possible prefix of one of those tags,
    /// unconsumed.
    ArgStart,
    /// Inside a parameter name (or its tag's attribute text). `buf` holds it: the key,
    /// its type attribute and its per-key close tag are read from it whole.
    ArgName,
    /// Between a parameter name and its value element (`<arg_value>`), where a type
    /// element may come first. Holds at most a possible prefix of one of those tags,
    /// unconsumed.
    ValueOpen,
    /// Inside the type element. `buf` holds its text: the type is read from it whole.
    TypeElem,
    /// Inside a value. A string value streams as it arrives, escaped; it holds only
    /// what may still turn out not to be value text: a possible prefix of the value
    /// close tag and, under the newline policy, the newline before it (both
    /// unconsumed), and whitespace a trimmed value, or one that may still be child
    /// elements, may drop (`ws_held`). Any other type is held in `buf` until the close
    /// tag: its text is converted whole (`3` of `30` is not yet the number).
    Value,
    /// Inside a value's `<![CDATA[` section: text as written, up to `]]>`. Holds at
    /// most a possible prefix of `]]>`, unconsumed.
    CData,
    /// Inside a value written as child elements. `buf` holds the elements whole: they
    /// are converted to an object or array only once the parameter's element closes.
    Element,
    /// After a value close tag that something other than markup follows: it may be
    /// data (a value holding `</parameter>`). Held until a later close tag that markup
    /// follows (then it was data), or the function or block close, or the end of input
    /// (then it ended the value). The text from the first close tag on stays
    /// unconsumed; `lead` and `scanned` say how much of it is known.
    Tentative,
    /// Inside the JSON body element's open tag; its attribute text is skipped.
    JsonHead,
    /// Inside the JSON body, followed by the lexical scanner so a close tag inside one
    /// of its strings is data. `buf` holds the body: it is checked whole before it
    /// becomes the arguments.
    JsonScan,
    /// After the JSON body's value, up to the element's close; `buf` goes on holding
    /// what is written there.
    JsonTail,
    /// The payload ended (its function closed, or text that is no part of it came):
    /// the driver consumes nothing more until [`PayloadGrammar::reset`].
    Done,
}

/// The XML-like payload grammar of one dialect (see the module docs): one function
/// per payload, its arguments written as one JSON object.
///
/// The fields set from the declaration (`syn`, `ws`, `block_closes`, `schemas`, the
/// tag sets but the per-key ones) do not change; the others describe the function,
/// parameter and value being read, and [`PayloadGrammar::reset`] clears them.
#[derive(Debug)]
pub struct XmlGrammar {
    /// The dialect's markup.
    syn: XmlSyntax,
    /// The whitespace policy of `syn`, resolved once.
    ws: ValueWhitespace,
    /// Every spelling of the outer block's close tag (the tag, then its aliases; none
    /// when the dialect has none): it ends a call whose function close is missing, and
    /// it is never consumed. A block opened by an alias (Hy3's
    /// `<tool_calls:opensource>`) closes with its own spelling.
    block_closes: Vec<String>,
    /// The request's parameter schemas, by function: they type the values.
    schemas: Schemas,
    /// The end of input may stand for the block close (a stop token the engine
    /// strips): see [`PayloadGrammar::set_end_may_close`].
    end_may_close: bool,
    /// Tags that end a function name.
    name_stops: Arc<TagSet>,
    /// The parameter name end (also the end of the JSON body's open tag).
    param_name_end: Arc<TagSet>,
    /// The value close of the current parameter (per key when the value close names
    /// the key: set by `start_param`).
    value_close: Arc<TagSet>,
    /// The value close of the current parameter's text (`value_close` with its key).
    value_close_text: String,
    /// Where the driver is.
    state: State,
    /// The payload began: a call was begun (its name may still be to come).
    began: bool,
    /// The function name, parameter name or typed value being collected.
    buf: String,
    /// The current function's name (its parameters' schemas are looked up by it).
    function: String,
    /// The current parameter's name, written with the first byte of its value.
    key: String,
    /// The current parameter's key was written (with the opening quote of a string).
    key_written: bool,
    /// Values written in the current call: the first key opens the object with `{`.
    params: usize,
    /// The current value's types: from its type attribute, or its schema. Empty: an
    /// untyped value read as JSON when it is JSON (`untyped_json`).
    types: Vec<Ty>,
    /// No value byte seen yet (for the protocol newline after the open tag).
    value_fresh: bool,
    /// The value's start was looked at (a CDATA section, child elements).
    decided: bool,
    /// Whitespace of a value held because the policy may drop it (trailing whitespace of
    /// a trimmed value, or the lead of a value that may still be child elements).
    ws_held: String,
    /// Value close, function close, block close: what decides a tentative close tag.
    value_stops: Arc<TagSet>,
    /// In `Tentative`: bytes of protocol newline held before the first close tag.
    lead: usize,
    /// In `Tentative`: bytes of the held text already searched (so it is not again).
    scanned: usize,
    /// `]]>`, for CDATA values.
    cdata_end: Arc<TagSet>,
    /// In `Element`: the open and close tag of the current key, and how deep the value
    /// is in same-named elements.
    element_tags: Arc<TagSet>,
    /// In `Element`: how many elements named by the key are open (1 at the value's).
    depth: usize,
    /// The JSON body's close.
    json_close: Arc<TagSet>,
    /// In `JsonScan`: the lexical scanner following the JSON body.
    scan: JsonValueScanner,
    /// The arguments were a JSON body (the object is written whole).
    json_args: bool,
    /// The type element's close.
    type_close: Arc<TagSet>,
    /// A type element was read for the current parameter (a second one is not looked
    /// for).
    type_read: bool,
    /// The grammar of a JSON call body holding one call object (with `json_call`).
    json_object: Option<Box<JsonEnvelope>>,
    /// The grammar of a JSON call body holding an array of call objects.
    json_array: Option<Box<JsonEnvelope>>,
    /// The current JSON call body is an array.
    json_in_array: bool,
}

/// What a value close tag is, by what follows it ([`XmlGrammar::close_follows`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Follow {
    /// It ends the value.
    Structural,
    /// It is value text.
    Data,
    /// Not known until more text arrives: held.
    Hold,
}

/// What a state's method did with the text it was given ([`XmlGrammar::consume`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// It consumed this many bytes and the driver goes on: the state changed, or the
    /// method made progress the next call builds on.
    Next(usize),
    /// It consumed this many bytes and nothing more is decided in this chunk: more
    /// text is needed, or the payload ended.
    Stop(usize),
}

/// Most bytes after a value close tag (in `Tentative`, after a function close) that the
/// lookahead reads to decide it ([`lookahead`]); where they do not decide, the close tag
/// ends the value.
const MAX_LOOKAHEAD: usize = 256;

/// Index of the function-name-end tag in `name_stops` (the only stop that is consumed).
const NAME_END: usize = 0;

/// Opens a CDATA section (with `cdata`).
const CDATA_OPEN: &str = "<![CDATA[";
/// Closes a CDATA section.
const CDATA_CLOSE: &str = "]]>";

/// JSON whitespace (what the policies trim).
fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// The lookahead window over `after`: its first `budget` bytes (to a character
/// boundary), and whether `after` reaches that bound. A decision read from the window
/// alone is the same whether the text arrived whole or in chunks: a stream holding less
/// than the bound waits, and once the bound is reached it reads what the whole text
/// would.
fn lookahead(after: &str, budget: usize) -> (&str, bool) {
    if after.len() < budget {
        return (after, false);
    }
    let mut end = budget;
    while !after.is_char_boundary(end) {
        end -= 1;
    }
    (&after[..end], true)
}

/// The type a type element names: its text trimmed, an item type after `[` left out
/// (the template writes `array[string]`), read as a schema type name (case aside).
/// `any` or another name gives no type.
fn type_name(text: &str) -> Option<Ty> {
    let base = text.trim();
    let base = base.split('[').next().unwrap_or(base).trim();
    Ty::from_name(&base.to_ascii_lowercase())
}

/// The types a value is read as when its type element names `named` and its schema
/// allows `schema`, or `None` where the schema's own reading stands.
///
/// The template writes the schema's type, or, where the schema is a union (`anyOf`,
/// `oneOf`, several types), the type of the value itself; `any` where the schema does
/// not describe the parameter. So the element picks the branch of a union (tried
/// first, the union's other types after it, so a value that is not of the named type
/// still reads as the schema allows), and types a value the schema says nothing about;
/// a single type the schema gives stands against it, as vLLM's and SGLang's K2 Horizon
/// parsers read it (the schema over a contradicting type element). An `integer` element
/// picks a union's `number` where the union has no `integer`.
fn element_types(schema: Types, named: Ty) -> Option<Vec<Ty>> {
    let declared = schema.declared();
    if declared.is_empty() {
        return Some(vec![named]);
    }
    if declared.len() == 1 && !schema.any() {
        return None;
    }
    let t = if schema.any() || schema.has(named) {
        named
    } else if named == Ty::Integer && schema.has(Ty::Number) {
        Ty::Number
    } else {
        return None;
    };
    // A string takes any text: nothing after it would be tried, and the value streams.
    if t == Ty::String {
        return Some(vec![Ty::String]);
    }
    let mut types = vec![t];
    types.extend(declared.iter().copied().filter(|d| *d != t));
    Some(types)
}

impl XmlGrammar {
    /// The grammar of `syn` in a block closed by `block_closes` (the close tag, then
    /// its aliases; none when the dialect has no close tag), typing values by the
    /// request's `schemas`. The tag sets are built here, once per response.
    pub fn new(syn: XmlSyntax, block_closes: &[&str], schemas: Schemas) -> Self {
        let block_closes: Vec<String> = block_closes
            .iter()
            .filter(|c| !c.is_empty())
            .map(|c| (*c).to_owned())
            .collect();
        let mut stops = vec![syn.function_name_end.as_str(), syn.param_open.as_str()];
        stops.extend(syn.function_close.as_deref());
        stops.extend(block_closes.iter().map(String::as_str));
        let value_close_text = if syn.element_keys() {
            String::new()
        } else {
            syn.value_close.clone()
        };
        let json_close = syn.json_body.as_ref().map_or("", |j| j.close.as_str());
        let type_close = syn.type_element.as_ref().map_or("", |t| t.close.as_str());
        let envelope = |c: Container| {
            syn.json_call
                .as_ref()
                .map(|j| Box::new(JsonEnvelope::new(&j.envelope(c))))
        };
        XmlGrammar {
            type_close: TagSet::shared(&[type_close]),
            type_read: false,
            json_object: envelope(Container::Object),
            json_array: envelope(Container::Array),
            json_in_array: false,
            value_stops: Self::stops_for(&syn, &value_close_text, &block_closes),
            lead: 0,
            scanned: 0,
            name_stops: TagSet::shared(&stops),
            param_name_end: TagSet::shared(&[&syn.param_name_end]),
            value_close: TagSet::shared(&[&value_close_text]),
            value_close_text,
            cdata_end: TagSet::shared(&[CDATA_CLOSE]),
            element_tags: TagSet::shared::<&str>(&[]),
            depth: 0,
            json_close: TagSet::shared(&[json_close]),
            scan: JsonValueScanner::new(),
            json_args: false,
            ws: syn.whitespace(),
            syn,
            block_closes,
            schemas,
            end_may_close: false,
            state: State::Function,
            began: false,
            buf: String::new(),
            function: String::new(),
            key: String::new(),
            key_written: false,
            params: 0,
            types: Vec::new(),
            value_fresh: true,
            decided: false,
            ws_held: String::new(),
        }
    }

    /// What decides a tentative value close: the value close itself (tag 0), the
    /// function close (tag 1, if any) and the block close's spellings.
    fn stops_for(syn: &XmlSyntax, value_close: &str, block_closes: &[String]) -> Arc<TagSet> {
        let mut value_stops = vec![value_close];
        value_stops.extend(syn.function_close.as_deref());
        value_stops.extend(block_closes.iter().map(String::as_str));
        if block_closes.is_empty() {
            value_stops.push("");
        }
        TagSet::shared(&value_stops)
    }

    /// The spelling of the block close that `r` begins with, if any.
    fn block_close_at(&self, r: &str) -> Option<&str> {
        self.block_closes
            .iter()
            .map(String::as_str)
            .find(|c| r.starts_with(c))
    }

    /// Whether `r` is a proper prefix of a spelling of the block close.
    fn partial_block_close(&self, r: &str) -> bool {
        self.block_closes.iter().any(|c| partial(r, c))
    }

    /// Whether the current value streams as a JSON string (else it is held and
    /// converted).
    fn string_value(&self) -> bool {
        schema::streams_as_string(&self.types)
    }

    /// Writes `, "key": ` (or `{"key": `) before the first byte of a value.
    fn write_key(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if self.key_written {
            return;
        }
        let mut s = String::with_capacity(self.key.len() + 8);
        s.push_str(if self.params == 0 { "{\"" } else { ", \"" });
        schema::escape_json_into(&mut s, &self.key);
        s.push_str("\": ");
        if self.string_value() {
            s.push('"');
        }
        calls.push_args(&s, out);
        self.key_written = true;
    }

    /// Value text that is known to belong to the value.
    fn value_text(&mut self, text: &str, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if text.is_empty() {
            return;
        }
        if self.string_value() {
            self.write_key(calls, out);
            // Room for a few escapes, so a fragment is allocated once.
            let hint = text.len() + text.len() / 4 + 8;
            calls.push_args_with(out, hint, |s| schema::escape_json_into(s, text));
        } else {
            self.buf.push_str(text);
        }
    }

    /// Releases the held whitespace as value text (something that is not whitespace
    /// followed it).
    fn release_ws(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if self.ws_held.is_empty() {
            return;
        }
        let held = std::mem::take(&mut self.ws_held);
        self.value_text(&held, calls, out);
        self.ws_held = held;
        self.ws_held.clear();
    }

    /// Value text under the whitespace policy: for a trimmed value, trailing whitespace
    /// is held until something else follows it (then it is data) or the value ends
    /// (then it is dropped).
    fn value_piece(&mut self, text: &str, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if self.ws != ValueWhitespace::Trim {
            return self.value_text(text, calls, out);
        }
        let kept = text.trim_end_matches(is_ws);
        if !kept.is_empty() {
            self.release_ws(calls, out);
            self.value_text(kept, calls, out);
        }
        self.ws_held.push_str(&text[kept.len()..]);
    }

    /// Ends the current value. `complete` is false when the input ended inside it: a
    /// value with no byte at all is then dropped (never invented).
    fn end_value(&mut self, complete: bool, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        // Whitespace still held is what the policy drops.
        self.ws_held.clear();
        if self.string_value() {
            if !self.key_written && !complete {
                return;
            }
            self.write_key(calls, out);
            calls.push_args("\"", out);
        } else {
            if self.buf.is_empty() && !complete {
                return;
            }
            self.write_key(calls, out);
            let v = match &self.syn.nested {
                // Text of a dialect that writes values as elements reads as its
                // elements do: an empty container is `[]` / `{}`.
                Some(_) => self.elements().convert(&self.buf, self.value_schema(), 0),
                None if self.types.is_empty() => schema::json_or_string(&self.buf),
                None => schema::convert_value(&self.buf, &self.types, self.syn.python_values),
            };
            calls.push_args(&v, out);
            self.buf.clear();
        }
        self.params += 1;
    }

    /// The element markup of a dialect whose values may be child elements.
    fn elements(&self) -> nested::Elements<'_> {
        nested::Elements {
            open: &self.syn.param_open,
            name_end: &self.syn.param_name_end,
            close: &self.syn.value_close,
            item: self.syn.nested.as_ref().map_or("item", |n| n.item.as_str()),
        }
    }

    /// The request's schema of the current parameter.
    fn value_schema(&self) -> Option<&serde_json::Value> {
        property(self.schemas.get(&self.function), &self.key)
    }

    /// Ends a value written as child elements (`raw`, the text inside its element).
    fn end_element(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        let v = self.elements().convert(&self.buf, self.value_schema(), 0);
        // The key is written as for a held (non-string) value.
        self.types = vec![Ty::Object];
        self.write_key(calls, out);
        calls.push_args(&v, out);
        self.buf.clear();
        self.params += 1;
    }

    /// Ends the payload: closes the arguments object of the open call.
    fn finish(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if self.began && !self.function.is_empty() && !self.json_args {
            calls.push_args(if self.params == 0 { "{}" } else { "}" }, out);
        }
        calls.end_call(out);
        self.state = State::Done;
    }

    /// Whether the input, ending with `rest` unconsumed, ended where a stop token the
    /// engine stripped closed the block ([`PayloadGrammar::set_end_may_close`]): the
    /// call's own end is the block close (no function close), and it is between
    /// parameters with only whitespace left. A parameter or value still open, a tag cut
    /// short or other text is not a boundary: the call is cut.
    fn ends_at_boundary(&self, rest: &str) -> bool {
        self.end_may_close
            && self.syn.function_close.is_none()
            && self.state == State::ArgStart
            && ws_len(rest) == rest.len()
    }

    /// Whether a value close tag followed by `after` ends the value, by what follows it
    /// (after whitespace): the next parameter, the block close or the end of input make
    /// it structural; the function close does when what follows that (after
    /// whitespace) is the block close, the next function or the end of input, so a value
    /// holding `</parameter></function>` and then more text stays whole. The lookahead
    /// passes at most two close tags (the function close, then the block close) and
    /// reads at most [`MAX_LOOKAHEAD`] bytes ([`lookahead`]): where that bound is reached
    /// before the text decides, the first reading wins (the close tag ends the value,
    /// and what the call then cannot place is recorded as stray block text), so the text
    /// held to decide stays bounded, and a chunked stream (deciding once the bound is
    /// reached) and the whole text (reading only to the bound) decide alike.
    fn close_follows(&self, after: &str, final_: bool) -> Follow {
        let (win, full) = lookahead(after, MAX_LOOKAHEAD);
        let ws = ws_len(win);
        let next = &win[ws..];
        let fclose = self.syn.function_close.as_deref().unwrap_or("");
        if !fclose.is_empty() {
            let seen = ws + fclose.len();
            if next.starts_with(fclose) {
                return self.function_close_follows(&after[seen..], MAX_LOOKAHEAD - seen, final_);
            }
            // What may still become the function close decides only once it is whole
            // (or cannot be): the next parameter's open tag may begin it (MiniMax's
            // `]<]minimax[>[<` begins `]<]minimax[>[</invoke>`), and the whole text
            // would look past it.
            if !final_ && !full && partial(next, fclose) {
                return Follow::Hold;
            }
        }
        let mut follows = vec![self.syn.param_open.as_str(), fclose];
        follows.extend(self.block_closes.iter().map(String::as_str));
        Self::decide(next, &follows, final_, full)
    }

    /// After a function close that a value close tag (or, in `Tentative`, value text)
    /// is followed by, with `budget` bytes of the lookahead left: the function ends here
    /// when the block close, the next function or the end of input follows.
    fn function_close_follows(&self, after: &str, budget: usize, final_: bool) -> Follow {
        let (win, full) = lookahead(after, budget);
        let next = &win[ws_len(win)..];
        let mut follows = vec![self.syn.function_open.as_str()];
        follows.extend(self.block_closes.iter().map(String::as_str));
        Self::decide(next, &follows, final_, full)
    }

    /// `next` (after whitespace, up to the end of the lookahead window) begins one of
    /// `follows` (structural), may still become one or the end of input (held), or is
    /// other text (data). `full`: the window ends at the lookahead bound, so nothing
    /// past `next` is read; undecided there, the first reading wins (structural).
    fn decide(next: &str, follows: &[&str], final_: bool, full: bool) -> Follow {
        if follows.iter().any(|t| !t.is_empty() && next.starts_with(t)) {
            return Follow::Structural;
        }
        let open = next.is_empty() || follows.iter().any(|t| partial(next, t));
        if full {
            return if open {
                Follow::Structural
            } else {
                Follow::Data
            };
        }
        if final_ {
            return if next.is_empty() {
                Follow::Structural
            } else {
                Follow::Data
            };
        }
        if open {
            Follow::Hold
        } else {
            Follow::Data
        }
    }

    /// Where the value text before a close tag ends: without the protocol newline.
    fn value_end(&self, before: &str) -> usize {
        if self.ws == ValueWhitespace::Newline && before.ends_with('\n') {
            before.len() - 1
        } else {
            before.len()
        }
    }

    /// Resolves a tentative close tag as the end of the value.
    fn first_close_ends_value(
        &mut self,
        first_end: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        self.end_value(true, calls, out);
        self.state = State::ArgStart;
        Step::Next(first_end)
    }

    /// Starts a parameter from its name or attribute text.
    fn start_param(&mut self, header: &str) {
        let key = match &self.syn.key_attr {
            Some(a) => attrs::attribute(header, a, self.syn.entities)
                .map(|k| k.into_owned())
                .unwrap_or_default(),
            None => self.text_name(header),
        };
        let own_type = self.syn.type_attr.as_deref().and_then(|a| {
            attrs::attribute(header, a, self.syn.entities).and_then(|t| Ty::from_name(t.trim()))
        });
        self.key = key;
        self.key_written = false;
        self.types = match own_type {
            Some(t) => vec![t],
            None => {
                let types = Types::of(property(self.schemas.get(&self.function), &self.key));
                if self.syn.untyped_json && types.declared().is_empty() {
                    Vec::new()
                } else {
                    types.into_try()
                }
            }
        };
        if self.syn.element_keys() {
            self.value_close_text = self.syn.value_close_for(&self.key);
            self.value_close = TagSet::shared(&[&self.value_close_text]);
            self.value_stops =
                Self::stops_for(&self.syn, &self.value_close_text, &self.block_closes);
        }
        self.value_fresh = true;
        self.decided = false;
        self.type_read = false;
        self.ws_held.clear();
        self.buf.clear();
    }

    /// The function name from its name or attribute text.
    fn name_of(&self, header: &str) -> String {
        match &self.syn.name_attr {
            Some(a) => attrs::attribute(header, a, self.syn.entities)
                .map(|n| n.trim().to_owned())
                .unwrap_or_default(),
            None => self.text_name(header),
        }
    }

    /// A name or key written as text: trimmed, and unquoted with `unquote`.
    fn text_name(&self, header: &str) -> String {
        let t = header.trim();
        if self.syn.unquote && t.len() >= 2 {
            for q in ['"', '\''] {
                if let Some(inner) = t.strip_prefix(q).and_then(|t| t.strip_suffix(q)) {
                    return inner.to_owned();
                }
            }
        }
        t.to_owned()
    }

    /// At a value's first bytes: a CDATA section or child elements. Returns `None` when
    /// the value goes on as text, or `Some(consumed)` when it was decided otherwise or
    /// must wait (`decided` stays false then).
    fn value_start(
        &mut self,
        rest: &str,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Option<usize> {
        if self.syn.nested.is_some() {
            // Leading whitespace is held until the first other byte says text or element.
            let ws = ws_len(rest);
            let r = &rest[ws..];
            let open = self.syn.param_open.as_str();
            let close = self.value_close_text.as_str();
            // `NS<` begins both a child element and the value's own close (`NS</a>`,
            // an empty value): held until the text says which, under any chunking.
            let wait =
                !final_ && (r.is_empty() || (head(r, open) == Head::Partial || partial(r, close)));
            let element = !wait && r.starts_with(open) && !r.starts_with(close);
            if element {
                self.ws_held.clear();
                self.buf.clear();
                self.depth = 1;
                let open_tag = format!("{open}{}{}", self.key, self.syn.param_name_end);
                let mut tags = vec![open_tag.as_str(), close];
                tags.extend(self.block_closes.iter().map(String::as_str));
                self.element_tags = TagSet::shared(&tags);
                self.decided = true;
                self.state = State::Element;
                return Some(ws);
            }
            if wait {
                self.ws_held.push_str(&rest[..ws]);
                return Some(ws);
            }
            self.decided = true;
            self.release_ws(calls, out);
            return None;
        }
        if self.syn.cdata {
            match head(rest, CDATA_OPEN) {
                Head::Tag => {
                    self.decided = true;
                    self.state = State::CData;
                    return Some(CDATA_OPEN.len());
                }
                Head::Partial if !final_ => return Some(0),
                _ => {}
            }
        }
        self.decided = true;
        None
    }
}

impl PayloadGrammar for XmlGrammar {
    fn reset(&mut self) {
        self.state = State::Function;
        self.began = false;
        self.buf.clear();
        self.function.clear();
        self.key.clear();
        self.key_written = false;
        self.params = 0;
        self.types.clear();
        self.value_fresh = true;
        self.decided = false;
        self.ws_held.clear();
        self.lead = 0;
        self.scanned = 0;
        self.depth = 0;
        self.scan.reset();
        self.json_args = false;
        self.type_read = false;
        self.json_in_array = false;
        for g in [&mut self.json_object, &mut self.json_array]
            .into_iter()
            .flatten()
        {
            g.reset();
        }
    }

    /// The driver: hands the unconsumed text to the method of the state the grammar is
    /// in until one of them needs more text or the payload ends, then closes what the
    /// end of input cut.
    fn consume(
        &mut self,
        text: &str,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> usize {
        let mut i = 0;
        loop {
            let rest = &text[i..];
            let step = match self.state {
                State::Done => break,
                State::Function => self.on_function(rest, final_, calls, out),
                State::Body => self.on_body(rest, final_, calls, out),
                State::JsonCall => self.on_json_call(rest, final_, calls, out),
                State::JsonCallEnd => self.on_json_call_end(rest, final_, calls, out),
                State::Name => self.on_name(rest, final_, calls, out),
                State::ArgStart => self.on_arg_start(rest, final_, calls, out),
                State::ArgName => self.on_arg_name(rest, final_),
                State::ValueOpen => self.on_value_open(rest),
                State::TypeElem => self.on_type_elem(rest, final_),
                State::Value => self.on_value(rest, final_, calls, out),
                State::CData => self.on_cdata(rest, final_, calls, out),
                State::Element => self.on_element(rest, calls, out),
                State::Tentative => self.on_tentative(rest, final_, calls, out),
                State::JsonHead => self.on_json_head(rest, final_),
                State::JsonScan => self.on_json_scan(rest, final_),
                State::JsonTail => self.on_json_tail(rest, calls, out),
            };
            match step {
                Step::Next(n) => i += n,
                Step::Stop(n) => {
                    i += n;
                    break;
                }
            }
        }
        if final_ && self.state != State::Done && self.began {
            if self.ends_at_boundary(&text[i..]) {
                // The stripped stop token stood here, after the call's last parameter.
                self.finish(calls, out);
                return text.len();
            }
            self.end_of_input(calls, out);
        }
        i
    }

    fn payload_closed(&self) -> bool {
        self.state == State::Done
    }

    fn set_end_may_close(&mut self, on: bool) {
        self.end_may_close = on;
    }

    fn started(&self) -> bool {
        self.began
    }

    /// The call is named: its parameters follow at once (Beam's body after a
    /// ` to=NAME` header).
    fn begin_named(
        &mut self,
        name: &str,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> bool {
        self.began = true;
        calls.begin_call(out);
        calls.set_name(name, None, out);
        self.function = calls.open_name().unwrap_or(name).to_owned();
        self.buf.clear();
        self.state = State::ArgStart;
        true
    }

    fn payload_marker(&self) -> Option<&str> {
        Some(self.syn.function_open.as_str()).filter(|o| !o.is_empty())
    }

    /// Another function, or text that may still become its open markup (a chunk can end
    /// inside it): the decision must not depend on where the chunk ended.
    fn starts_payload(&self, rest: &str) -> bool {
        let open = self.syn.function_open.as_str();
        !open.is_empty() && !rest.is_empty() && head(rest, open) != Head::Other
    }

    fn buffered_bytes(&self) -> usize {
        let json = match self.state {
            State::JsonCall => self.json_call_grammar().map_or(0, |g| g.buffered_bytes()),
            _ => 0,
        };
        self.buf.len() + self.key.len() + self.function.len() + self.ws_held.len() + json
    }
}

/// The states, one method each. A method receives the unconsumed text (`rest`), acts on
/// what it can decide from it, and says how many bytes it consumed and whether the
/// driver goes on (a `Step`). A method that changes the state says so by assigning
/// `self.state`; one that returns `Step::Next` without changing it has made progress
/// some other way (consumed bytes, or searched held text it will not search again).
impl XmlGrammar {
    /// `Function`: before the function. Whitespace before it is left to the tool parser,
    /// so a block that is not a call can be handed back whole. With an open text
    /// (`<function=`), the call begins once it is read whole; without one (GLM) the
    /// payload starts with the name, unless the block closes first.
    fn on_function(
        &mut self,
        rest: &str,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let ws = ws_len(rest);
        let r = &rest[ws..];
        if r.is_empty() {
            return Step::Stop(0);
        }
        let open = self.syn.function_open.as_str();
        let n = if open.is_empty() {
            if self.block_close_at(r).is_some() {
                self.state = State::Done;
                return Step::Stop(0);
            }
            if self.partial_block_close(r) && !final_ {
                return Step::Stop(0);
            }
            ws
        } else if r.starts_with(open) {
            ws + open.len()
        } else if partial(r, open) && !final_ {
            return Step::Stop(0);
        } else {
            // Not this dialect's function markup: the tool parser records it.
            self.state = State::Done;
            return Step::Stop(0);
        };
        self.began = true;
        self.buf.clear();
        if self.syn.json_call.is_some() {
            // The body's first byte says whether a call object or a name follows: the
            // call is begun by whichever grammar reads it.
            self.state = State::Body;
        } else {
            calls.begin_call(out);
            self.state = State::Name;
        }
        Step::Next(n)
    }

    /// `Body`: after the function's open text, with a JSON call body declared. `{` or
    /// `[` (after whitespace) begins a JSON call body, anything else the name. The
    /// whitespace is dropped (a name is trimmed, and the JSON grammar skips it).
    fn on_body(
        &mut self,
        rest: &str,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let ws = ws_len(rest);
        match rest.as_bytes().get(ws) {
            None if !final_ => Step::Stop(ws),
            Some(&c @ (b'{' | b'[')) => {
                self.json_in_array = c == b'[';
                if let Some(g) = self.json_call_grammar_mut() {
                    g.reset();
                }
                self.state = State::JsonCall;
                Step::Next(ws)
            }
            // A name, or nothing at the end of input (the call is cut before its name).
            _ => {
                calls.begin_call(out);
                self.state = State::Name;
                Step::Next(ws)
            }
        }
    }

    /// The JSON-envelope grammar of the current JSON call body.
    fn json_call_grammar(&self) -> Option<&JsonEnvelope> {
        let g = if self.json_in_array {
            &self.json_array
        } else {
            &self.json_object
        };
        g.as_deref()
    }

    /// As [`Self::json_call_grammar`], to drive it.
    fn json_call_grammar_mut(&mut self) -> Option<&mut JsonEnvelope> {
        let g = if self.json_in_array {
            &mut self.json_array
        } else {
            &mut self.json_object
        };
        g.as_deref_mut()
    }

    /// `JsonCall`: inside a JSON call body. The JSON-envelope grammar reads it (it begins,
    /// names and ends each call, streaming the arguments as written; a call object the
    /// output ended inside is cut by it) until the body's value ends, or a byte it cannot
    /// place ends it.
    fn on_json_call(
        &mut self,
        rest: &str,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let Some(g) = self.json_call_grammar_mut() else {
            self.state = State::Done;
            return Step::Stop(0);
        };
        let n = g.consume(rest, calls, out, final_);
        if g.payload_closed() {
            self.state = State::JsonCallEnd;
            Step::Next(n)
        } else {
            Step::Stop(n)
        }
    }

    /// `JsonCallEnd`: after a JSON call body, whitespace and the function close end the
    /// payload. Anything else ends it unconsumed (the tool parser records that text up
    /// to the block close or the next function); a possible prefix of the function close
    /// is held. The calls of the body were ended at their own end (the object's `}`), as
    /// in the JSON-envelope family.
    fn on_json_call_end(
        &mut self,
        rest: &str,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let ws = ws_len(rest);
        let r = &rest[ws..];
        let fclose = self.syn.function_close.as_deref().unwrap_or("");
        if !fclose.is_empty() && r.starts_with(fclose) {
            let n = ws + fclose.len();
            self.finish(calls, out);
            return Step::Next(n);
        }
        if !final_ && (r.is_empty() || partial(r, fclose)) {
            return Step::Stop(0);
        }
        self.finish(calls, out);
        Step::Stop(0)
    }

    /// `Name`: the function's name or attribute text, collected in `buf` until the name
    /// end (consumed) or a parameter, the function close or the block close (not
    /// consumed). The name is given before any argument byte (identity first); an empty
    /// name ends the payload, since a call is never given an invented name.
    fn on_name(
        &mut self,
        rest: &str,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        match self.name_stops.find_or_held(rest, final_) {
            Ok(m) => {
                self.buf.push_str(&rest[..m.start]);
                let n = if m.tag == NAME_END { m.end } else { m.start };
                let name = self.name_of(&self.buf);
                self.buf.clear();
                if name.is_empty() {
                    self.finish(calls, out);
                    return Step::Next(n);
                }
                calls.set_name(&name, None, out);
                // The name as the emitter took it (a doubled name read as its single).
                self.function = calls.open_name().map_or(name, str::to_owned);
                self.state = State::ArgStart;
                Step::Next(n)
            }
            Err(keep) => {
                self.buf.push_str(&rest[..rest.len() - keep]);
                Step::Stop(rest.len() - keep)
            }
        }
    }

    /// `ArgStart`: between parameters, after whitespace: the function close or the
    /// block close ends the call, skipped markup is dropped, the JSON body (only before
    /// any parameter) or a parameter begins. Text that may still become one of these is
    /// held; anything else ends the call, and the tool parser records it up to the
    /// block close.
    fn on_arg_start(
        &mut self,
        rest: &str,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let ws = ws_len(rest);
        let r = &rest[ws..];
        if r.is_empty() {
            return Step::Stop(ws);
        }
        let fclose = self.syn.function_close.as_deref().unwrap_or("");
        let json_open = self.syn.json_body.as_ref().map_or("", |j| j.open.as_str());
        let skip = self.syn.skip.iter().find(|s| r.starts_with(s.as_str()));
        // A key element's open (`NS<`) also begins its close tags (`NS</`):
        // the function and block close are looked for first, and a close
        // tag is no parameter.
        let after_open = r.strip_prefix(self.syn.param_open.as_str());
        let closing_tag = self.syn.element_keys() && after_open.is_some_and(|k| k.starts_with('/'));
        // `NS<` alone may still become `NS</invoke>`.
        let undecided = self.syn.element_keys() && after_open == Some("") && !final_;
        if !fclose.is_empty() && r.starts_with(fclose) {
            let n = ws + fclose.len();
            self.finish(calls, out);
            Step::Next(n)
        } else if self.block_close_at(r).is_some() {
            self.finish(calls, out);
            Step::Next(ws)
        } else if let Some(s) = skip {
            Step::Next(ws + s.len())
        } else if !json_open.is_empty() && self.params == 0 && r.starts_with(json_open) {
            let n = ws + json_open.len();
            self.buf.clear();
            self.state = State::JsonHead;
            Step::Next(n)
        } else if undecided {
            Step::Stop(ws)
        } else if !closing_tag && r.starts_with(&self.syn.param_open) {
            let n = ws + self.syn.param_open.len();
            self.buf.clear();
            self.state = State::ArgName;
            Step::Next(n)
        } else if self.may_become_markup(r, closing_tag) {
            if !final_ {
                return Step::Stop(ws);
            }
            // The output ended inside markup (a parameter or close tag cut short): the
            // call did not reach its end, so it is cut; the tool parser records the
            // cut tag.
            calls.cut_call(out);
            self.state = State::Done;
            Step::Next(ws)
        } else if !self.block_closes.is_empty()
            && r.len() < MAX_LOOKAHEAD
            && !self.block_closes.iter().any(|c| r.contains(c.as_str()))
        {
            // Unexpected text between parameters with no block close after it yet: held
            // (at most [`MAX_LOOKAHEAD`] bytes, past which it ends the call as below),
            // so every chunking decides as the whole output does.
            if !final_ {
                return Step::Stop(ws);
            }
            // The output ended before the block closed: the call never reached its
            // end (more text might have made the text before it part of a value), so
            // it is cut; the rest is recorded whole, never read as further calls.
            calls.cut_call(out);
            calls.record_stray(r.to_owned(), false);
            self.state = State::Done;
            Step::Next(rest.len())
        } else {
            // Unexpected text between parameters that the block close follows (or a
            // long run of it) ends the call here; the tool parser records the rest up
            // to the block close.
            self.finish(calls, out);
            Step::Next(ws)
        }
    }

    /// In `ArgStart`: whether `r`, all the text there is yet, may still become markup
    /// the state reads (a parameter, the function or block close, the JSON body,
    /// skipped markup), so it is held instead of ending the call. `closing_tag`: `r` is
    /// a key element's close tag (`NS</`), which may be the function or block close.
    fn may_become_markup(&self, r: &str, closing_tag: bool) -> bool {
        let fclose = self.syn.function_close.as_deref().unwrap_or("");
        let json_open = self.syn.json_body.as_ref().map_or("", |j| j.open.as_str());
        partial(r, &self.syn.param_open)
            || partial(r, fclose)
            || self.partial_block_close(r)
            || partial(r, json_open)
            || self.syn.skip.iter().any(|s| partial(r, s))
            || (closing_tag
                && self
                    .syn
                    .function_close
                    .iter()
                    .chain(&self.block_closes)
                    .any(|c| partial(r, c)))
    }

    /// `ArgName`: the parameter's name or attribute text, collected in `buf` up to the
    /// parameter name end. The key is not written yet (only with its value's first
    /// byte), so input cut here leaves no key without a value.
    fn on_arg_name(&mut self, rest: &str, final_: bool) -> Step {
        match self.param_name_end.find_or_held(rest, final_) {
            Ok(m) => {
                self.buf.push_str(&rest[..m.start]);
                let header = std::mem::take(&mut self.buf);
                self.start_param(&header);
                self.buf = header;
                self.buf.clear();
                self.state = if self.syn.value_open.is_some() {
                    State::ValueOpen
                } else {
                    State::Value
                };
                Step::Next(m.end)
            }
            Err(keep) => {
                self.buf.push_str(&rest[..rest.len() - keep]);
                Step::Stop(rest.len() - keep)
            }
        }
    }

    /// `ValueOpen`: between the parameter name and its value element (`<arg_value>`),
    /// after whitespace. A missing value element is tolerated: the value starts here.
    fn on_value_open(&mut self, rest: &str) -> Step {
        let open = self.syn.value_open.as_deref().unwrap_or("");
        let ws = ws_len(rest);
        let r = &rest[ws..];
        if let Some(t) = self.syn.type_element.as_ref().filter(|_| !self.type_read) {
            if r.starts_with(&t.open) {
                let n = ws + t.open.len();
                self.buf.clear();
                self.state = State::TypeElem;
                return Step::Next(n);
            }
            // As for the value element: a prefix held at the end of input is the tag cut
            // short, and the call is cut.
            if partial(r, &t.open) {
                return Step::Stop(ws);
            }
        }
        // At the end of input a proper prefix of the value element's open tag is that
        // tag cut short, not the value: the call is cut (the end of input's rule).
        if r.is_empty() || partial(r, open) {
            return Step::Stop(ws);
        }
        let n = ws + if r.starts_with(open) { open.len() } else { 0 };
        self.state = State::Value;
        Step::Next(n)
    }

    /// `TypeElem`: the type element's text, collected in `buf` up to its close; the type
    /// it names retypes the value ([`element_types`]), which has not begun yet, so a
    /// string value still streams.
    fn on_type_elem(&mut self, rest: &str, final_: bool) -> Step {
        match self.type_close.find_or_held(rest, final_) {
            Ok(m) => {
                self.buf.push_str(&rest[..m.start]);
                let named = type_name(&self.buf);
                self.buf.clear();
                let schema = Types::of(property(self.schemas.get(&self.function), &self.key));
                if let Some(types) = named.and_then(|t| element_types(schema, t)) {
                    self.types = types;
                }
                self.type_read = true;
                self.state = State::ValueOpen;
                Step::Next(m.end)
            }
            Err(keep) => {
                self.buf.push_str(&rest[..rest.len() - keep]);
                Step::Stop(rest.len() - keep)
            }
        }
    }

    /// `Value`: inside a value. Its leading whitespace goes by the policy
    /// ([`Self::value_lead`]), its first bytes may make it a CDATA section or child
    /// elements ([`Self::value_start`]); then it runs to the value close tag, which ends
    /// it only where markup or the end of input follows ([`Self::close_follows`]).
    fn on_value(
        &mut self,
        rest: &str,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        if self.value_fresh {
            if let Some(step) = self.value_lead(rest) {
                return step;
            }
        }
        if !self.decided {
            if let Some(n) = self.value_start(rest, final_, calls, out) {
                return if self.decided || n > 0 {
                    Step::Next(n)
                } else {
                    Step::Stop(n)
                };
            }
        }
        // Even at the end of input a proper prefix of a close tag is
        // held: it is markup cut short, not data, so it stays out of the
        // value and is left to the tool parser, which records it.
        match self.value_stops.find_or_held(rest, false) {
            Ok(m) if m.tag == 0 => self.value_close_tag(rest, m, final_, calls, out),
            Ok(m) => self.value_close_missing(rest, m, final_, calls, out),
            Err(keep) => self.value_run(rest, keep, final_, calls, out),
        }
    }

    /// In `Value`, the function close or the block close at `m`: the value's own close
    /// tag may be missing. It is, and the value ends here, when the block close follows
    /// (right here, or after the function close and whitespace, ending within
    /// [`MAX_LOOKAHEAD`] bytes of it) and nothing but whitespace (less than
    /// [`MAX_LOOKAHEAD`] bytes) follows that to the end of output; else the tag is value
    /// text.
    fn value_close_missing(
        &mut self,
        rest: &str,
        m: TagMatch,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let block_end = if m.tag == 1 && self.syn.function_close.is_some() {
            // Read to the lookahead bound only, as a stream holding this would.
            let (win, full) = lookahead(&rest[m.end..], MAX_LOOKAHEAD);
            let ws = ws_len(win);
            let next = &win[ws..];
            if let Some(c) = self.block_close_at(next) {
                Some(m.end + ws + c.len())
            } else if !final_ && !full && (next.is_empty() || self.partial_block_close(next)) {
                return self.hold_before(rest, m.start, calls, out);
            } else {
                None
            }
        } else {
            Some(m.end)
        };
        let Some(block_end) = block_end else {
            // Value text: the tag is data.
            self.value_fresh = false;
            self.value_piece(&rest[..m.end], calls, out);
            return Step::Next(m.end);
        };
        // Only whitespace up to the end of output may follow the block close: any
        // other text after it (an answer, more code) leaves the tags value text, so
        // what is held to decide stays a few bytes.
        let tail = &rest[block_end..];
        let ws = ws_len(tail);
        if ws >= MAX_LOOKAHEAD || ws < tail.len() {
            self.value_fresh = false;
            self.value_piece(&rest[..m.end], calls, out);
            return Step::Next(m.end);
        }
        if !final_ {
            return self.hold_before(rest, m.start, calls, out);
        }
        // The value's close tag is missing: it ends before the tag (without its
        // protocol newline), and the call ends at the function or block close.
        let v_end = self.value_end(&rest[..m.start]);
        if v_end > 0 {
            self.value_fresh = false;
        }
        self.value_piece(&rest[..v_end], calls, out);
        self.end_value(true, calls, out);
        self.state = State::ArgStart;
        Step::Next(m.start)
    }

    /// Value text up to `at` is known, the text from `at` is held undecided: what may
    /// be the protocol newline before a close tag is held with it.
    fn hold_before(
        &mut self,
        rest: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let v_end = self.value_end(&rest[..at]);
        if v_end > 0 {
            self.value_fresh = false;
        }
        self.value_piece(&rest[..v_end], calls, out);
        Step::Stop(v_end)
    }

    /// In `Value`, before any value byte: the whitespace the policy reads as protocol
    /// (one newline, or all of it for a trimmed value) is dropped. `None` when the value
    /// goes on here.
    fn value_lead(&mut self, rest: &str) -> Option<Step> {
        match self.ws {
            ValueWhitespace::Newline => {
                if rest.is_empty() {
                    return Some(Step::Stop(0));
                }
                if rest.starts_with('\n') {
                    self.value_fresh = false;
                    return Some(Step::Next(1));
                }
                None
            }
            ValueWhitespace::Trim => {
                let ws = ws_len(rest);
                if ws == rest.len() {
                    return Some(Step::Stop(ws));
                }
                self.value_fresh = false;
                Some(Step::Next(ws))
            }
            ValueWhitespace::Keep => None,
        }
    }

    /// In `Value`, a value close tag at `m`: the text before it is value text (without
    /// the protocol newline, once the tag ends the value), and what follows the tag
    /// says whether it ends the value, is data (then `Tentative` decides), or is not
    /// known yet (held).
    fn value_close_tag(
        &mut self,
        rest: &str,
        m: TagMatch,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        // The newline before the close tag is protocol (Qwen3-Coder)
        // once the tag ends the value.
        let v_end = self.value_end(&rest[..m.start]);
        if v_end > 0 {
            self.value_fresh = false;
        }
        self.value_piece(&rest[..v_end], calls, out);
        match self.close_follows(&rest[m.end..], final_) {
            Follow::Structural => {
                self.end_value(true, calls, out);
                self.state = State::ArgStart;
                Step::Next(m.end)
            }
            Follow::Hold => Step::Stop(v_end),
            Follow::Data => {
                // Perhaps `</parameter>` inside the value: decided by
                // what comes later (see `State::Tentative`).
                self.lead = m.start - v_end;
                self.scanned = m.end - v_end;
                self.state = State::Tentative;
                Step::Next(v_end)
            }
        }
    }

    /// In `Value`, no close tag in `rest`: all of it is value text but the `keep` bytes
    /// that may begin the close tag (and, under the newline policy, a trailing newline
    /// that may be the protocol one before it).
    fn value_run(
        &mut self,
        rest: &str,
        mut keep: usize,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let mut v = &rest[..rest.len() - keep];
        // A trailing newline may be the protocol one before the close.
        if self.ws == ValueWhitespace::Newline {
            if !final_ && v.ends_with('\n') {
                v = &v[..v.len() - 1];
                keep += 1;
            }
            if final_ {
                v = v.strip_suffix('\n').unwrap_or(v);
            }
        }
        if !v.is_empty() {
            self.value_fresh = false;
        }
        self.value_piece(v, calls, out);
        Step::Stop(rest.len() - keep)
    }

    /// `CData`: inside a value's `<![CDATA[` section: text as written, up to `]]>`, no
    /// other tag ending it; the value goes on after it (its close tag is still to come).
    fn on_cdata(
        &mut self,
        rest: &str,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        match self.cdata_end.find_or_held(rest, final_) {
            Ok(m) => {
                self.value_text(&rest[..m.start], calls, out);
                self.value_fresh = false;
                self.state = State::Value;
                Step::Next(m.end)
            }
            Err(keep) => {
                self.value_text(&rest[..rest.len() - keep], calls, out);
                self.value_fresh = false;
                Step::Stop(rest.len() - keep)
            }
        }
    }

    /// `Element`: inside a value written as child elements, held whole in `buf` until
    /// the close of the parameter's element (same-named children counted in `depth`),
    /// then converted. The block closing inside them ends the value as text and the
    /// call with it.
    fn on_element(&mut self, rest: &str, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) -> Step {
        match self.element_tags.find_or_held(rest, false) {
            Ok(m) if m.tag >= 2 => {
                // The block closed inside the elements: what was written is
                // text, and the call ends at the block close.
                self.buf.push_str(&rest[..m.start]);
                self.elements_as_text(true, calls, out);
                self.finish(calls, out);
                Step::Next(m.start)
            }
            Ok(m) => {
                self.depth = if m.tag == 0 {
                    self.depth + 1
                } else {
                    self.depth - 1
                };
                if self.depth == 0 {
                    self.buf.push_str(&rest[..m.start]);
                    self.end_element(calls, out);
                    self.state = State::ArgStart;
                } else {
                    self.buf.push_str(&rest[..m.end]);
                }
                Step::Next(m.end)
            }
            Err(keep) => {
                self.buf.push_str(&rest[..rest.len() - keep]);
                Step::Stop(rest.len() - keep)
            }
        }
    }

    /// In `Element`, the elements did not close (the block closed inside them, or the
    /// input ended): the value is the text written, as a string. `complete` as for
    /// [`Self::end_value`].
    fn elements_as_text(
        &mut self,
        complete: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) {
        self.types = vec![Ty::String];
        let held = std::mem::take(&mut self.buf);
        self.value_text(&held, calls, out);
        self.end_value(complete, calls, out);
    }

    /// `Tentative`: `rest` starts at the first value close tag (and its protocol
    /// newline, `lead` bytes), held since; `scanned` bytes of it are known to decide
    /// nothing. A later close tag that markup follows ends the value (every earlier one
    /// was data); the block close, a function close that ends the call
    /// ([`Self::function_close_follows`]), or the end of input, before one means the
    /// first close tag ended the value.
    fn on_tentative(
        &mut self,
        rest: &str,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let first_end = self.lead + self.value_close_text.len();
        let from = self.scanned;
        match self.value_stops.find_or_held(&rest[from..], false) {
            Ok(m) if m.tag == 0 => {
                let (p, e) = (from + m.start, from + m.end);
                match self.close_follows(&rest[e..], final_) {
                    Follow::Structural => {
                        // This one ends the value: every earlier close tag
                        // was data.
                        let v_end = self.value_end(&rest[..p]);
                        self.value_piece(&rest[..v_end], calls, out);
                        self.value_fresh = false;
                        self.end_value(true, calls, out);
                        self.state = State::ArgStart;
                        Step::Next(e)
                    }
                    Follow::Data => {
                        self.scanned = e;
                        Step::Next(0)
                    }
                    Follow::Hold => {
                        self.scanned = p;
                        Step::Stop(0)
                    }
                }
            }
            Ok(m) if m.tag == 1 && self.syn.function_close.is_some() => {
                // A function close: it ends the call only where the block close,
                // the next function or the end of input follows it; else it is data.
                let (p, e) = (from + m.start, from + m.end);
                match self.function_close_follows(&rest[e..], MAX_LOOKAHEAD, final_) {
                    Follow::Structural => self.first_close_ends_value(first_end, calls, out),
                    Follow::Data => {
                        self.scanned = e;
                        Step::Next(0)
                    }
                    Follow::Hold => {
                        self.scanned = p;
                        Step::Stop(0)
                    }
                }
            }
            // The block closed with no later value close tag (or the function did,
            // or the input ended): the first close tag ended the value and what
            // follows it is not a value; the call ends there.
            Ok(_) => self.first_close_ends_value(first_end, calls, out),
            // The input ended with the value's end undecided (what followed its first
            // close tag was not markup, and no later close tag came): the call did not
            // reach its end, so it is cut, and the value is not ended for it.
            Err(_) if final_ => {
                calls.cut_call(out);
                calls.record_stray(rest.to_owned(), false);
                self.state = State::Done;
                Step::Next(rest.len())
            }
            Err(keep) => {
                self.scanned = rest.len() - keep;
                Step::Stop(0)
            }
        }
    }

    /// `JsonHead`: inside the JSON body element's open tag, up to its end (the
    /// parameter name end); its attribute text is not read.
    fn on_json_head(&mut self, rest: &str, final_: bool) -> Step {
        match self.param_name_end.find_or_held(rest, final_) {
            Ok(m) => {
                self.buf.clear();
                self.scan.reset();
                self.state = State::JsonScan;
                Step::Next(m.end)
            }
            Err(keep) => Step::Stop(rest.len() - keep),
        }
    }

    /// `JsonScan`: inside the JSON body, held in `buf` while the lexical scanner
    /// follows it, so a close tag inside one of its strings is data.
    fn on_json_scan(&mut self, rest: &str, final_: bool) -> Step {
        let (n, st) = self.scan.feed(rest.as_bytes(), final_);
        self.buf.push_str(&rest[..n]);
        if st == ScanStatus::Incomplete {
            return Step::Stop(n);
        }
        self.state = State::JsonTail;
        Step::Next(n)
    }

    /// `JsonTail`: after the JSON body's value, up to the element's close; then the
    /// body becomes the arguments ([`Self::end_json_body`]).
    fn on_json_tail(
        &mut self,
        rest: &str,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        match self.json_close.find_or_held(rest, false) {
            Ok(m) => {
                self.buf.push_str(&rest[..m.start]);
                self.end_json_body(calls, out);
                self.state = State::ArgStart;
                Step::Next(m.end)
            }
            Err(keep) => {
                self.buf.push_str(&rest[..rest.len() - keep]);
                Step::Stop(rest.len() - keep)
            }
        }
    }

    /// The input ended inside the payload, before the call's own end (its function
    /// close, or the block close for a dialect without one): the call is cut. Nothing
    /// is closed for it: a value the model did not finish is not completed, and what
    /// is held (a typed value, whitespace, a close-tag prefix) is not released.
    fn end_of_input(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        calls.cut_call(out);
        self.buf.clear();
        self.ws_held.clear();
        self.state = State::Done;
    }
}

impl XmlGrammar {
    /// The JSON body's text is complete (or the input ended in it): a JSON object
    /// becomes the arguments as written; anything else is no arguments, and the text is
    /// recorded as stray block text (the arguments stay a JSON object, nothing is lost).
    fn end_json_body(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        let raw = std::mem::take(&mut self.buf);
        let body = raw.trim();
        if matches!(
            serde_json::from_str::<serde_json::Value>(body),
            Ok(serde_json::Value::Object(_))
        ) {
            calls.push_args(body, out);
            self.json_args = true;
        } else if !body.is_empty() {
            calls.record_stray(body.to_owned(), false);
        }
        self.buf = raw;
        self.buf.clear();
    }
}
