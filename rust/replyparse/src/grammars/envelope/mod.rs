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
use crate::grammars::payload::{drive, PayloadGrammar, StateMachine, Step};
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

/// Serde's `skip_serializing_if` for the default container.
fn is_object(c: &Container) -> bool {
    *c == Container::Object
}

/// The default `name_field`, `name`.
fn default_name_field() -> String {
    "name".into()
}

/// The default `argument_field`, `arguments`.
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

/// What the value of the key just read is to the call: it decides how the value is
/// read ([`State::ValueStart`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// The function name (one of the name keys): a string, collected whole.
    Name,
    /// The arguments (the first argument key present; the key itself with
    /// `name_as_key`): streamed when an object or an array, collected whole otherwise.
    Arguments,
    /// The model's call id ([`EnvelopeSyntax::id_key`]): a string, collected whole.
    Id,
    /// Any other key, or a second argument key: its value is skipped.
    Other,
}

/// Where the grammar is in its payload; each state has one method
/// (`JsonEnvelope::on_<state>`). A state holds no more than its method needs besides
/// the grammar's fields: the value states hold the [`Field`] their value belongs to, so
/// its text goes to the right place once the value is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the payload's first byte (`{`, or `[` for an array). Whitespace before it
    /// is not consumed, so a block that turns out not to be a call is handed back whole.
    Open,
    /// Inside an array, before an element's `{` (or the closing `]`).
    ElementStart,
    /// In a sequence, after a separator: before the next call object's `{`.
    ObjectStart,
    /// After a call object's `{` or a member's `,`: a key, or the object's `}`.
    KeyOrEnd,
    /// Inside a key string, collected in `buf` until the scanner completes it (a key
    /// is compared whole, so it is never streamed).
    Key,
    /// After a key: its `:`. What the key names is in `field`.
    Colon,
    /// After `:`, before the first byte of a value of this field: the byte and the
    /// field decide whether the value is collected, streamed or skipped.
    ValueStart(Field),
    /// Inside a value of this field collected whole in `buf`: a name or an id (which
    /// mean something only complete) or arguments written as a string or a scalar
    /// (decoded once complete).
    Collect(Field),
    /// Inside the argument object or array, its source streamed as it is scanned.
    Arguments,
    /// Inside a value that is only scanned past (another key's).
    Skip,
    /// After a member's value: `,` or the object's `}`.
    AfterValue,
    /// After a call object: `,` / `]` in an array, the separator in a sequence (an
    /// object payload is done at its `}`).
    AfterObject,
    /// The payload ended, at its end or at a byte it cannot place: nothing more is
    /// consumed until [`PayloadGrammar::reset`].
    Done,
}

/// See the module docs.
#[derive(Debug)]
pub struct JsonEnvelope {
    /// The keys read as the name: `name_field` first, then `name_keys`.
    name_keys: Vec<String>,
    /// The keys read as the arguments: `argument_field` first, then `argument_keys`.
    argument_keys: Vec<String>,
    /// The key of the model's call id, if the dialect writes one.
    id_key: Option<String>,
    /// Each call is `{"NAME": {...}}`: the first key is the name.
    name_as_key: bool,
    /// What one payload holds.
    container: Container,
    /// For a sequence, the text between two objects (empty: a sequence of one).
    separator: String,
    /// Where the grammar is in the payload.
    state: State,
    /// The JSON scanner of the key or value being read (reset at each one's start).
    scan: JsonValueScanner,
    /// Source of the key or the collected value being read ([`State::Key`],
    /// [`State::Collect`]).
    buf: String,
    /// What the key just read names, until its value starts.
    field: Field,
    /// The payload's first byte was consumed: this payload is a call structure.
    began: bool,
    /// The end of input closed the payload before its end.
    cut: bool,
    /// The current object's arguments were read (or began): later argument keys are
    /// skipped, since two values concatenated would not be one JSON value.
    arguments_seen: bool,
    /// Keys seen in the current object (for name-as-key: the first one is the name).
    keys: usize,
    /// The name, held until the id (only with an id key), so the call's first delta
    /// carries the model's id.
    held_name: Option<String>,
    /// The model's call id, once read.
    id: Option<String>,
    /// The call was named: a later name (or id) key does not rename it.
    named: bool,
}

/// The offset of the first byte from `i` that is not JSON whitespace.
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

    /// [`State::Open`]: the payload's first byte, `[` for an array, else `{`. Anything
    /// else is not this payload: it ends unconsumed.
    fn on_open(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let b = text.as_bytes();
        let i = skip_ws(b, at);
        let Some(&c) = b.get(i) else {
            // Only whitespace so far: none of it is consumed.
            return Step::Wait(at);
        };
        match (self.container, c) {
            (Container::Array, b'[') => {
                self.began = true;
                self.state = State::ElementStart;
            }
            (Container::Object | Container::Sequence, b'{') => self.begin_object(calls, out),
            _ => {
                self.state = State::Done;
                return Step::Next(at);
            }
        }
        Step::Next(i + 1)
    }

    /// [`State::ElementStart`]: an element's `{`, or the array's `]`.
    fn on_element_start(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let b = text.as_bytes();
        let i = skip_ws(b, at);
        let Some(&c) = b.get(i) else {
            return Step::Wait(i);
        };
        match c {
            b'{' => {
                self.begin_object(calls, out);
                Step::Next(i + 1)
            }
            b']' => {
                self.state = State::Done;
                Step::Next(i + 1)
            }
            _ => {
                self.state = State::Done;
                Step::Next(i)
            }
        }
    }

    /// [`State::ObjectStart`]: the next object's `{` after a sequence's separator.
    fn on_object_start(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let b = text.as_bytes();
        let i = skip_ws(b, at);
        let Some(&c) = b.get(i) else {
            return Step::Wait(i);
        };
        if c == b'{' {
            self.begin_object(calls, out);
            Step::Next(i + 1)
        } else {
            self.state = State::Done;
            Step::Next(i)
        }
    }

    /// [`State::AfterObject`]: in an array, `,` (another element) or `]`; in a
    /// sequence, the separator, with the whitespace before it, or else the payload
    /// ends before that whitespace (it belongs to what follows the block).
    fn on_after_object(&mut self, text: &str, at: usize, final_: bool) -> Step {
        let b = text.as_bytes();
        let j = skip_ws(b, at);
        if self.container == Container::Array {
            let Some(&c) = b.get(j) else {
                return Step::Wait(j);
            };
            return match c {
                b',' => {
                    self.state = State::ElementStart;
                    Step::Next(j + 1)
                }
                b']' => {
                    self.state = State::Done;
                    Step::Next(j + 1)
                }
                _ => {
                    self.state = State::Done;
                    Step::Next(j)
                }
            };
        }
        let sep = self.separator.as_str();
        match head(&text[j..], sep) {
            Head::Tag if !sep.is_empty() => {
                self.state = State::ObjectStart;
                Step::Next(j + sep.len())
            }
            Head::Partial if !final_ && !sep.is_empty() => Step::Wait(at),
            _ => {
                self.state = State::Done;
                Step::Next(at)
            }
        }
    }

    /// [`State::KeyOrEnd`]: a key's opening quote (not consumed: the key's scanner
    /// reads it), the object's `}`, or a `,` (a stray one is skipped).
    fn on_key_or_end(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let b = text.as_bytes();
        let i = skip_ws(b, at);
        let Some(&c) = b.get(i) else {
            return Step::Wait(i);
        };
        match c {
            b',' => Step::Next(i + 1),
            b'"' => {
                self.scan.reset();
                self.buf.clear();
                self.state = State::Key;
                Step::Next(i)
            }
            b'}' => {
                self.object_closed(calls, out);
                Step::Next(i + 1)
            }
            _ => {
                self.stop(calls, out);
                Step::Next(i)
            }
        }
    }

    /// [`State::Key`]: the key string, collected whole; then what it names.
    fn on_key(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        let (i, status) = self.collect(text, at, final_);
        match status {
            ScanStatus::Incomplete => return Step::Wait(i),
            ScanStatus::Invalid => self.stop(calls, out),
            ScanStatus::Complete => {
                let key = decode_string(&self.buf);
                self.keys += 1;
                self.field = if self.name_as_key && self.keys == 1 {
                    // `{"NAME": {...}}`: the key is the name, its value the arguments.
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
        Step::Next(i)
    }

    /// [`State::Colon`]: the `:` after a key.
    fn on_colon(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let b = text.as_bytes();
        let i = skip_ws(b, at);
        let Some(&c) = b.get(i) else {
            return Step::Wait(i);
        };
        if c == b':' {
            self.state = State::ValueStart(self.field);
            Step::Next(i + 1)
        } else {
            self.stop(calls, out);
            Step::Next(i)
        }
    }

    /// [`State::ValueStart`]: the value's first byte (not consumed) chooses how it is
    /// read. A name or an id is a string collected whole; arguments are streamed when
    /// an object or an array, collected whole when a string or a bare scalar (short,
    /// and decoded or kept as written once complete); anything else is skipped.
    fn on_value_start(&mut self, field: Field, text: &str, at: usize) -> Step {
        let b = text.as_bytes();
        let i = skip_ws(b, at);
        let Some(&c) = b.get(i) else {
            return Step::Wait(i);
        };
        self.scan.reset();
        self.buf.clear();
        self.state = match (field, c) {
            (Field::Name | Field::Id, b'"') => State::Collect(field),
            (Field::Arguments, b'{' | b'[') => {
                self.arguments_seen = true;
                State::Arguments
            }
            (Field::Arguments, _) => State::Collect(field),
            _ => State::Skip,
        };
        Step::Next(i)
    }

    /// [`State::Collect`]: a value collected whole; once complete, the call's name,
    /// its id, or its arguments ([`collected_arguments`]).
    fn on_collect(
        &mut self,
        field: Field,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        let (i, status) = self.collect(text, at, final_);
        match status {
            ScanStatus::Incomplete => return Step::Wait(i),
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
        Step::Next(i)
    }

    /// [`State::Arguments`]: the argument value's source goes out as it is scanned,
    /// verbatim, up to the value's end.
    // Inlined into the driver: a long argument streams through this state, once or
    // twice per chunk.
    #[inline(always)]
    fn on_arguments(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        let (n, status) = self.scan.feed(&text.as_bytes()[at..], final_);
        calls.push_args(&text[at..at + n], out);
        self.value_scanned(at + n, status, calls, out)
    }

    /// [`State::Skip`]: a value no field reads, scanned past.
    fn on_skip(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        let (n, status) = self.scan.feed(&text.as_bytes()[at..], final_);
        self.value_scanned(at + n, status, calls, out)
    }

    /// [`State::AfterValue`]: `,` (another member) or the object's `}`.
    fn on_after_value(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let b = text.as_bytes();
        let i = skip_ws(b, at);
        let Some(&c) = b.get(i) else {
            return Step::Wait(i);
        };
        match c {
            b',' => {
                self.state = State::KeyOrEnd;
                Step::Next(i + 1)
            }
            b'}' => {
                self.object_closed(calls, out);
                Step::Next(i + 1)
            }
            _ => {
                self.stop(calls, out);
                Step::Next(i)
            }
        }
    }

    /// Scans the key or value being collected from `at` into `buf`: the offset after
    /// what was scanned, and the scanner's status.
    fn collect(&mut self, text: &str, at: usize, final_: bool) -> (usize, ScanStatus) {
        let (n, status) = self.scan.feed(&text.as_bytes()[at..], final_);
        self.buf.push_str(&text[at..at + n]);
        (at + n, status)
    }

    /// A streamed or skipped value was scanned up to `i`: it waits for more text, ends
    /// the payload (invalid JSON), or is complete.
    fn value_scanned(
        &mut self,
        i: usize,
        status: ScanStatus,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        match status {
            ScanStatus::Incomplete => return Step::Wait(i),
            ScanStatus::Invalid => self.stop(calls, out),
            ScanStatus::Complete => self.state = State::AfterValue,
        }
        Step::Next(i)
    }

    /// What a key names (without `name_as_key`).
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

    /// The model's call id: kept, and given with a held name.
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

impl StateMachine for JsonEnvelope {
    #[inline(always)]
    fn step(
        &mut self,
        text: &str,
        at: usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        final_: bool,
    ) -> Step {
        match self.state {
            State::Open => self.on_open(text, at, calls, out),
            State::ElementStart => self.on_element_start(text, at, calls, out),
            State::ObjectStart => self.on_object_start(text, at, calls, out),
            State::AfterObject => self.on_after_object(text, at, final_),
            State::KeyOrEnd => self.on_key_or_end(text, at, calls, out),
            State::Key => self.on_key(text, at, calls, out, final_),
            State::Colon => self.on_colon(text, at, calls, out),
            State::ValueStart(field) => self.on_value_start(field, text, at),
            State::Collect(field) => self.on_collect(field, text, at, calls, out, final_),
            State::Arguments => self.on_arguments(text, at, calls, out, final_),
            State::Skip => self.on_skip(text, at, calls, out, final_),
            State::AfterValue => self.on_after_value(text, at, calls, out),
            State::Done => Step::Wait(at),
        }
    }

    /// Input ended inside the payload. A call object the input ended in did not reach
    /// its own end (its closing brace): the call is cut, and nothing is closed for it
    /// (arguments collected as a string are not released). A sequence may end after
    /// any object; an array or an object the input ended in is cut. Before the
    /// payload's first byte nothing is decided: the tool parser has the whitespace.
    fn end_of_input(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if self.state == State::Open {
            return;
        }
        let inside = !matches!(
            self.state,
            State::AfterObject | State::ElementStart | State::ObjectStart
        );
        self.cut = inside || self.container == Container::Array;
        if inside {
            if let Some(name) = self.held_name.take() {
                // The id never came: the call is named without it.
                calls.set_name(&name, None, out);
            }
            calls.cut_call(out);
        }
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
        drive(self, text, calls, out, final_)
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

    /// Cut output: what streamed of a cut call stands (incremental mode), and nothing
    /// is completed for it: arguments collected as a string are not released, and no
    /// string or object is closed.
    #[test]
    fn cut_calls_keep_what_streamed_and_complete_nothing() {
        assert_eq!(
            parse(r#"{"name": "f", "arguments": {"a": "b"#).0,
            one("f", r#"{"a": "b"#)
        );
        assert_eq!(
            parse(r#"{"name": "f", "arguments": "{\"q\": \"rust b"#).0,
            one("f", "")
        );
        assert_eq!(
            parse(r#"{"name": "f", "arguments": "ab\u00"#).0,
            one("f", "")
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
