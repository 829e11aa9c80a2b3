//! The JSON-envelope payload grammar: a call is a JSON object, `{"name": "f",
//! "arguments": {...}}`, behind some marker.
//!
//! About a third of the families the peers ship fit it (Qwen / Hermes, Llama 3 / 4,
//! InternLM, Granite, xLAM, Phi-4-mini, Jamba, Nemotron, Cohere, Apertus, Hunyuan, ...);
//! what differs is data ([`EnvelopeSyntax`]): which keys hold the name, the arguments and
//! the model's call id, whether the name is the key itself (`{"NAME": {...}}`), and what
//! one payload holds — one object, an array of objects (ended by its matching `]`, found
//! by the lexical scanner, never a regex), or a sequence of objects with a separator
//! (Llama 3.2's `;`). The outer markers are the tool parser's.
//!
//! The grammar walks the envelope's top level incrementally (key, colon, value, comma)
//! and never builds a value:
//! - the argument value's source is streamed verbatim as it is scanned, so duplicate
//!   keys, spacing and number spellings reach the client as the model wrote them;
//! - an argument value written as a JSON *string* (`"arguments": "{\"a\":1}"`, Granite
//!   4) is decoded once complete, because a chat API's `arguments` is the object's
//!   source; cut short, it is decoded as far as it goes;
//! - keys come in any order: arguments before the name are held by the call emitter
//!   (identity first); with an id key, the name is held until the id (or the object's
//!   end), so the call's first delta carries the model's id;
//! - the first of the argument keys present wins; other values are skipped.
//!
//! The grammar consumes only the payload. It stops at the first byte it cannot place
//! (for example a close tag after truncated arguments) and leaves the outer tags to the
//! tool parser.

pub(crate) mod constraint;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::syntax::FieldError;
use crate::calls::CallEmitter;
use crate::delta::DeltaSink;
use crate::grammars::payload::PayloadGrammar;
use crate::scan::json_scan::{JsonValueScanner, ScanStatus};
use crate::scan::lex::{head, Head};

/// What one payload of an envelope dialect holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Container {
    /// One call object.
    #[default]
    Object,
    /// An array of call objects, `[{...}, {...}]` (Granite 3, xLAM, Jamba, Cohere, ...).
    Array,
    /// Call objects separated by [`EnvelopeSyntax::separator`] (Llama 3.2's `;`).
    Sequence,
}

/// The syntax of a `json_envelope` dialect (`"syntax": {"family": "json_envelope", ...}`):
/// the keys of the name and arguments, more keys read as those, the model's call id,
/// name-as-key objects, and what one payload holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeSyntax {
    /// The key holding the function name.
    #[serde(default = "default_name_field")]
    pub name_field: String,
    /// The key holding the arguments.
    #[serde(default = "default_argument_field")]
    pub argument_field: String,
    /// More keys that hold the function name, after `name_field` (Cohere's `tool_name`
    /// beside `name`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub name_keys: Vec<String>,
    /// More keys that hold the arguments, after `argument_field` (models write
    /// `arguments` where the dialect declares `parameters`, and the reverse).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argument_keys: Vec<String>,
    /// The key whose string value is the model's call id, kept as the call id
    /// (Cohere's `tool_call_id`, Mistral's `id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_key: Option<String>,
    /// Each call is `{"NAME": {...arguments}}` (Apertus).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub name_as_key: bool,
    /// What one payload holds.
    #[serde(default, skip_serializing_if = "is_object")]
    pub container: Container,
    /// For a sequence: the text between two objects, besides whitespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separator: Option<String>,
}

fn is_object(c: &Container) -> bool {
    *c == Container::Object
}

fn default_name_field() -> String {
    "name".into()
}

fn default_argument_field() -> String {
    "arguments".into()
}

impl Default for EnvelopeSyntax {
    /// `name` and `arguments`, one object per payload, nothing more.
    fn default() -> Self {
        EnvelopeSyntax {
            name_field: default_name_field(),
            argument_field: default_argument_field(),
            name_keys: Vec::new(),
            argument_keys: Vec::new(),
            id_key: None,
            name_as_key: false,
            container: Container::Object,
            separator: None,
        }
    }
}

impl EnvelopeSyntax {
    /// Checks the keys: every key, and the separator when given, is non-empty.
    pub fn validate(&self) -> Result<(), FieldError> {
        for (field, key) in [
            ("name_field", &self.name_field),
            ("argument_field", &self.argument_field),
        ] {
            if key.is_empty() {
                return Err(FieldError::new(field, "is empty"));
            }
        }
        for (field, keys) in [
            ("name_keys", &self.name_keys),
            ("argument_keys", &self.argument_keys),
        ] {
            if let Some(k) = keys.iter().position(String::is_empty) {
                return Err(FieldError::new(format!("{field}[{k}]"), "is empty"));
            }
        }
        for (field, v) in [("id_key", &self.id_key), ("separator", &self.separator)] {
            if v.as_deref() == Some("") {
                return Err(FieldError::new(field, "is empty (leave it out instead)"));
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Arguments,
    Id,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the payload's first byte (`{`, or `[` for an array).
    Open,
    /// Inside an array, before an element (or the closing `]`).
    ElementStart,
    /// Before a call object's `{` (after a separator).
    ObjectStart,
    /// After `{` or `,`: a key or the closing `}`.
    KeyOrEnd,
    /// Inside a key string.
    Key,
    Colon,
    /// Before the first byte of a value.
    ValueStart(Field),
    /// Inside a string value that is collected whole (name, id, or string arguments).
    Collect(Field),
    /// Inside the argument value, streaming its source.
    Arguments,
    /// Inside a value that is only skipped.
    Skip,
    AfterValue,
    /// After a call object: `,` / `]` in an array, the separator in a sequence.
    AfterObject,
    Done,
}

/// See the module docs.
#[derive(Debug)]
pub struct JsonEnvelope {
    name_keys: Vec<String>,
    argument_keys: Vec<String>,
    id_key: Option<String>,
    name_as_key: bool,
    container: Container,
    separator: String,
    state: State,
    scan: JsonValueScanner,
    /// Source of the key or string value being collected.
    buf: String,
    /// The field the current key names.
    field: Field,
    /// The payload's first byte was seen: this payload is a call structure.
    began: bool,
    /// The end of input closed the payload before its end.
    cut: bool,
    arguments_seen: bool,
    /// Keys seen in the current object (for name-as-key: the first one is the name).
    keys: usize,
    /// The name, held until the id (only with an id key).
    held_name: Option<String>,
    id: Option<String>,
    named: bool,
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Decodes a complete JSON string literal; on a bad escape, keeps the raw inner text
/// rather than losing it.
fn decode_string(src: &str) -> String {
    serde_json::from_str::<String>(src).unwrap_or_else(|_| {
        src.get(1..src.len().saturating_sub(1))
            .unwrap_or("")
            .to_owned()
    })
}

/// The text to emit for an argument value that was collected whole: a JSON string is
/// decoded (a chat API's `arguments` is the object's source, and some models write it as
/// a string); `null` means no arguments (the call then gets `{}`); any other scalar is
/// kept as written. An unterminated string (input ended) is decoded as far as it goes.
fn collected_arguments(src: &str, complete: bool) -> String {
    if !src.starts_with('"') {
        return if src == "null" {
            String::new()
        } else {
            src.to_owned()
        };
    }
    if complete {
        return decode_string(src);
    }
    // Drop an escape cut short (at most `\uXXX`) until the prefix decodes.
    let mut end = src.len();
    for _ in 0..6 {
        if let Ok(s) = serde_json::from_str::<String>(&format!("{}\"", &src[..end])) {
            return s;
        }
        match src[..end].char_indices().next_back() {
            Some((i, _)) if i > 0 => end = i,
            _ => break,
        }
    }
    src[1..].to_owned()
}

impl JsonEnvelope {
    /// The grammar of one dialect's envelope syntax.
    pub fn new(syntax: &EnvelopeSyntax) -> Self {
        let keys = |first: &str, more: &[String]| {
            let mut v = vec![first.to_owned()];
            v.extend(more.iter().filter(|k| k.as_str() != first).cloned());
            v
        };
        JsonEnvelope {
            name_keys: keys(&syntax.name_field, &syntax.name_keys),
            argument_keys: keys(&syntax.argument_field, &syntax.argument_keys),
            id_key: syntax.id_key.clone(),
            name_as_key: syntax.name_as_key,
            container: syntax.container,
            separator: syntax.separator.clone().unwrap_or_default(),
            state: State::Open,
            scan: JsonValueScanner::new(),
            buf: String::new(),
            field: Field::Other,
            began: false,
            cut: false,
            arguments_seen: false,
            keys: 0,
            held_name: None,
            id: None,
            named: false,
        }
    }

    fn field_of(&self, key: &str) -> Field {
        if self.name_keys.iter().any(|k| k == key) {
            Field::Name
        } else if self.argument_keys.iter().any(|k| k == key) && !self.arguments_seen {
            // A second argument field is skipped: concatenating two objects would not
            // be one JSON value.
            Field::Arguments
        } else if self.id_key.as_deref() == Some(key) {
            Field::Id
        } else {
            Field::Other
        }
    }

    /// Starts a call object (its `{` was consumed).
    fn begin_object(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        self.began = true;
        calls.begin_call(out);
        self.arguments_seen = false;
        self.keys = 0;
        self.held_name = None;
        self.id = None;
        self.named = false;
        self.state = State::KeyOrEnd;
    }

    /// The name, given now, or held until the id when the dialect has an id key.
    fn name(&mut self, name: String, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if self.named || self.held_name.is_some() {
            return;
        }
        if self.id_key.is_some() && self.id.is_none() {
            self.held_name = Some(name);
        } else {
            calls.set_name(&name, self.id.as_deref(), out);
            self.named = true;
        }
    }

    fn id(&mut self, id: String, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if self.id.is_some() || self.named {
            return;
        }
        self.id = Some(id);
        if let Some(name) = self.held_name.take() {
            calls.set_name(&name, self.id.as_deref(), out);
            self.named = true;
        }
    }

    /// Ends the current call object (normally or not) and its call.
    fn end_object(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if let Some(name) = self.held_name.take() {
            // The id never came: the call is named without it.
            calls.set_name(&name, None, out);
        }
        calls.end_call(out);
    }

    /// Ends the object and, in a container, goes on to what follows it.
    fn object_closed(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        self.end_object(calls, out);
        self.state = match self.container {
            Container::Object => State::Done,
            Container::Array | Container::Sequence => State::AfterObject,
        };
    }

    /// Ends the payload at a byte it cannot place.
    fn stop(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        self.end_object(calls, out);
        self.state = State::Done;
    }
}

impl PayloadGrammar for JsonEnvelope {
    fn reset(&mut self) {
        self.state = State::Open;
        self.scan.reset();
        self.buf.clear();
        self.began = false;
        self.cut = false;
        self.arguments_seen = false;
        self.keys = 0;
        self.held_name = None;
        self.id = None;
        self.named = false;
    }

    fn consume(
        &mut self,
        text: &str,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> usize {
        let b = text.as_bytes();
        let mut i = 0;
        loop {
            match self.state {
                State::Done => break,
                State::Open => {
                    // Leading whitespace is not consumed until the payload starts, so a
                    // block that turns out not to be a call can be handed back whole.
                    let j = skip_ws(b, i);
                    if j == b.len() {
                        break;
                    }
                    let first = if self.container == Container::Array {
                        b'['
                    } else {
                        b'{'
                    };
                    if b[j] != first {
                        self.state = State::Done;
                        break;
                    }
                    i = j + 1;
                    if first == b'[' {
                        self.began = true;
                        self.state = State::ElementStart;
                    } else {
                        self.begin_object(calls, out);
                    }
                }
                State::ElementStart => {
                    i = skip_ws(b, i);
                    if i == b.len() {
                        break;
                    }
                    match b[i] {
                        b'{' => {
                            i += 1;
                            self.begin_object(calls, out);
                        }
                        b']' => {
                            i += 1;
                            self.state = State::Done;
                        }
                        _ => self.state = State::Done,
                    }
                }
                State::ObjectStart => {
                    i = skip_ws(b, i);
                    if i == b.len() {
                        break;
                    }
                    if b[i] == b'{' {
                        i += 1;
                        self.begin_object(calls, out);
                    } else {
                        self.state = State::Done;
                    }
                }
                State::AfterObject => {
                    let j = skip_ws(b, i);
                    if self.container == Container::Array {
                        i = j;
                        if i == b.len() {
                            break;
                        }
                        match b[i] {
                            b',' => {
                                i += 1;
                                self.state = State::ElementStart;
                            }
                            b']' => {
                                i += 1;
                                self.state = State::Done;
                            }
                            _ => self.state = State::Done,
                        }
                        continue;
                    }
                    // A sequence: the separator (whitespace before it is consumed with
                    // it), or the payload ends before the whitespace.
                    let sep = self.separator.as_str();
                    match head(&text[j..], sep) {
                        Head::Tag if !sep.is_empty() => {
                            i = j + sep.len();
                            self.state = State::ObjectStart;
                        }
                        Head::Partial if !final_ && !sep.is_empty() => break,
                        _ => self.state = State::Done,
                    }
                }
                State::KeyOrEnd => {
                    i = skip_ws(b, i);
                    if i == b.len() {
                        break;
                    }
                    match b[i] {
                        b',' => i += 1,
                        b'"' => {
                            self.scan.reset();
                            self.buf.clear();
                            self.state = State::Key;
                        }
                        b'}' => {
                            i += 1;
                            self.object_closed(calls, out);
                        }
                        _ => self.stop(calls, out),
                    }
                }
                State::Key => {
                    let (n, st) = self.scan.feed(&b[i..], final_);
                    self.buf.push_str(&text[i..i + n]);
                    i += n;
                    match st {
                        ScanStatus::Incomplete => break,
                        ScanStatus::Invalid => self.stop(calls, out),
                        ScanStatus::Complete => {
                            let key = decode_string(&self.buf);
                            self.keys += 1;
                            self.field = if self.name_as_key && self.keys == 1 {
                                // `{"NAME": {...}}`: the key is the name, its value the
                                // arguments.
                                self.name(key, calls, out);
                                Field::Arguments
                            } else if self.name_as_key {
                                Field::Other
                            } else {
                                self.field_of(&key)
                            };
                            self.state = State::Colon;
                        }
                    }
                }
                State::Colon => {
                    i = skip_ws(b, i);
                    if i == b.len() {
                        break;
                    }
                    if b[i] == b':' {
                        i += 1;
                        self.state = State::ValueStart(self.field);
                    } else {
                        self.stop(calls, out);
                    }
                }
                State::ValueStart(field) => {
                    i = skip_ws(b, i);
                    if i == b.len() {
                        break;
                    }
                    self.scan.reset();
                    self.buf.clear();
                    self.state = match (field, b[i]) {
                        (Field::Name | Field::Id, b'"') => State::Collect(field),
                        (Field::Arguments, b'{' | b'[') => {
                            self.arguments_seen = true;
                            State::Arguments
                        }
                        // A string or a bare scalar: short, collected whole (see below).
                        (Field::Arguments, _) => State::Collect(field),
                        _ => State::Skip,
                    };
                }
                State::Collect(field) => {
                    let (n, st) = self.scan.feed(&b[i..], final_);
                    self.buf.push_str(&text[i..i + n]);
                    i += n;
                    match st {
                        ScanStatus::Incomplete => break,
                        ScanStatus::Invalid => self.stop(calls, out),
                        ScanStatus::Complete => {
                            let value = std::mem::take(&mut self.buf);
                            match field {
                                Field::Name => self.name(decode_string(&value), calls, out),
                                Field::Id => self.id(decode_string(&value), calls, out),
                                _ => {
                                    self.arguments_seen = true;
                                    calls.push_args(&collected_arguments(&value, true), out);
                                }
                            }
                            self.state = State::AfterValue;
                        }
                    }
                }
                State::Arguments => {
                    let (n, st) = self.scan.feed(&b[i..], final_);
                    calls.push_args(&text[i..i + n], out);
                    i += n;
                    match st {
                        ScanStatus::Incomplete => break,
                        ScanStatus::Invalid => self.stop(calls, out),
                        ScanStatus::Complete => self.state = State::AfterValue,
                    }
                }
                State::Skip => {
                    let (n, st) = self.scan.feed(&b[i..], final_);
                    i += n;
                    match st {
                        ScanStatus::Incomplete => break,
                        ScanStatus::Invalid => self.stop(calls, out),
                        ScanStatus::Complete => self.state = State::AfterValue,
                    }
                }
                State::AfterValue => {
                    i = skip_ws(b, i);
                    if i == b.len() {
                        break;
                    }
                    match b[i] {
                        b',' => {
                            i += 1;
                            self.state = State::KeyOrEnd;
                        }
                        b'}' => {
                            i += 1;
                            self.object_closed(calls, out);
                        }
                        _ => self.stop(calls, out),
                    }
                }
            }
        }
        if final_ && !matches!(self.state, State::Done | State::Open) {
            let inside = !matches!(
                self.state,
                State::AfterObject | State::ElementStart | State::ObjectStart
            );
            // Input ended inside the payload: the call ends with what was written.
            if self.state == State::Collect(Field::Arguments) {
                calls.push_args(&collected_arguments(&self.buf, false), out);
            }
            // A sequence may end after any object; an array or an object is cut.
            self.cut = inside || self.container == Container::Array;
            if inside {
                self.end_object(calls, out);
            }
            self.state = State::Done;
        }
        i
    }

    fn payload_closed(&self) -> bool {
        self.state == State::Done
    }

    fn started(&self) -> bool {
        self.began
    }

    fn buffered_bytes(&self) -> usize {
        self.buf.len() + self.held_name.as_ref().map_or(0, String::len)
    }

    fn cut_by_end_of_input(&self) -> bool {
        self.cut
    }

    fn payload_marker(&self) -> Option<&str> {
        Some(if self.container == Container::Array {
            "["
        } else {
            "{"
        })
    }

    fn starts_payload(&self, rest: &str) -> bool {
        rest.starts_with(if self.container == Container::Array {
            '['
        } else {
            '{'
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::AllowedNames;
    use crate::delta::ParsedResponse;

    /// Runs one envelope payload through the grammar at every split point (and char by
    /// char) and returns (name, arguments) of the emitted call plus the consumed count.
    fn parse(payload: &str) -> (Vec<(String, String)>, usize) {
        let mut results = Vec::new();
        let cuts: Vec<Vec<usize>> = std::iter::once(vec![])
            .chain(
                (1..payload.len())
                    .filter(|&i| payload.is_char_boundary(i))
                    .map(|i| vec![i]),
            )
            .chain(std::iter::once(
                (1..payload.len())
                    .filter(|&i| payload.is_char_boundary(i))
                    .collect(),
            ))
            .collect();
        for cut in cuts {
            let mut g = JsonEnvelope::new(&EnvelopeSyntax::default());
            let mut calls = CallEmitter::new(AllowedNames::Any);
            let mut items = Vec::new();
            let mut pending = String::new();
            let mut consumed = 0;
            let mut last = 0;
            for &c in cut.iter().chain(std::iter::once(&payload.len())) {
                pending.push_str(&payload[last..c]);
                let out = &mut DeltaSink::new(&mut items);
                let n = g.consume(&pending, &mut calls, out, c == payload.len());
                pending.drain(..n);
                consumed += n;
                last = c;
            }
            calls.end_call(&mut DeltaSink::new(&mut items));
            let r = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
            let got: Vec<(String, String)> = r
                .tool_calls
                .into_iter()
                .map(|c| (c.function.name, c.function.arguments))
                .collect();
            results.push((got, consumed));
        }
        for r in &results[1..] {
            assert_eq!(
                r, &results[0],
                "chunking changed the result for {payload:?}"
            );
        }
        results.swap_remove(0)
    }

    fn one(name: &str, args: &str) -> Vec<(String, String)> {
        vec![(name.to_owned(), args.to_owned())]
    }

    #[test]
    fn arguments_stream_verbatim_and_stop_at_envelope_end() {
        let p = r#"{"name": "f", "arguments": {"a": [1, 2], "b": "x\"y", "a": 3}} tail"#;
        assert_eq!(
            parse(p),
            (
                one("f", r#"{"a": [1, 2], "b": "x\"y", "a": 3}"#),
                p.len() - 5
            )
        );
    }

    #[test]
    fn arguments_before_name() {
        let p = r#"{"arguments": {"q": "北京"}, "name": "search"}"#;
        assert_eq!(parse(p).0, one("search", r#"{"q": "北京"}"#));
    }

    #[test]
    fn string_null_and_missing_arguments() {
        assert_eq!(
            parse(r#"{"name": "f", "arguments": "{\"a\": 1}"}"#).0,
            one("f", r#"{"a": 1}"#)
        );
        assert_eq!(
            parse(r#"{"name": "f", "arguments": null}"#).0,
            one("f", "{}")
        );
        assert_eq!(parse(r#"{"name": "f"}"#).0, one("f", "{}"));
        assert_eq!(
            parse(r#"{"name": "f", "extra": {"x": [1]}}"#).0,
            one("f", "{}")
        );
    }

    #[test]
    fn truncated_values_are_kept_as_written() {
        assert_eq!(
            parse(r#"{"name": "f", "arguments": {"a": "b"#).0,
            one("f", r#"{"a": "b"#)
        );
        assert_eq!(
            parse(r#"{"name": "f", "arguments": "{\"q\": \"rust b"#).0,
            one("f", r#"{"q": "rust b"#)
        );
        assert_eq!(
            parse(r#"{"name": "f", "arguments": "ab\u00"#).0,
            one("f", "ab")
        );
        // A name cut short is never completed: the call is not emitted.
        assert_eq!(parse(r#"{"name": "fun"#).0, vec![]);
    }

    #[test]
    fn malformed_envelope_stops_at_the_protocol_boundary() {
        let p = r#"{"name": "f", "arguments": {"a": 1</tool_call>"#;
        let (calls, consumed) = parse(p);
        assert_eq!(calls, one("f", r#"{"a": 1"#));
        assert_eq!(&p[consumed..], "</tool_call>");
    }
}
