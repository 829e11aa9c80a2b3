//! The JSON-envelope payload grammar: `{"name": "f", "arguments": {...}}`.
//!
//! Qwen/Hermes, InternLM and Llama 3 wrap a call in one JSON object whose name and
//! argument keys differ per dialect. The grammar walks the envelope's top level
//! incrementally (key, colon, value, comma) and never builds a value:
//! - the argument value's source is streamed verbatim as it is scanned, so duplicate
//!   keys, spacing and number spellings reach the client as the model wrote them;
//! - an argument value written as a JSON *string* (`"arguments": "{\"a\":1}"`) is
//!   decoded once complete, because a chat API's `arguments` is the object's source;
//! - other values are scanned just far enough to find the next envelope field;
//! - arguments may come before the name: the call emitter holds them.
//!
//! The grammar consumes only the envelope. It stops at the first byte it cannot place
//! (for example a close tag after truncated arguments) and leaves the outer tags to the
//! tool parser.

use crate::calls::CallEmitter;
use crate::delta::DeltaToolCall;
use crate::json_scan::{JsonValueScanner, ScanStatus};
use crate::tool::PayloadGrammar;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Arguments,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the envelope's `{`.
    Open,
    /// After `{` or `,`: a key or the closing `}`.
    KeyOrEnd,
    /// Inside a key string.
    Key,
    Colon,
    /// Before the first byte of a value.
    ValueStart(Field),
    /// Inside a string value that is collected whole (name, or string arguments).
    Collect(Field),
    /// Inside the argument value, streaming its source.
    Arguments,
    /// Inside a value that is only skipped.
    Skip,
    AfterValue,
    Done,
}

/// See the module docs.
#[derive(Debug)]
pub struct JsonEnvelope {
    name_field: String,
    argument_field: String,
    state: State,
    scan: JsonValueScanner,
    /// Source of the key or string value being collected.
    buf: String,
    /// The field the current key names.
    field: Field,
    /// The envelope's `{` was seen: this payload is a call.
    began: bool,
    arguments_seen: bool,
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

impl JsonEnvelope {
    pub fn new(name_field: &str, argument_field: &str) -> Self {
        JsonEnvelope {
            name_field: name_field.to_owned(),
            argument_field: argument_field.to_owned(),
            state: State::Open,
            scan: JsonValueScanner::new(),
            buf: String::new(),
            field: Field::Other,
            began: false,
            arguments_seen: false,
        }
    }

    fn field_of(&self, key: &str) -> Field {
        if key == self.name_field {
            Field::Name
        } else if key == self.argument_field && !self.arguments_seen {
            // A second argument field is skipped: concatenating two objects would not
            // be one JSON value.
            Field::Arguments
        } else {
            Field::Other
        }
    }

    /// Ends the envelope (normally or not) and its call.
    fn finish(&mut self, calls: &mut CallEmitter, out: &mut Vec<DeltaToolCall>) {
        calls.end_call(out);
        self.state = State::Done;
    }
}

impl PayloadGrammar for JsonEnvelope {
    fn reset(&mut self) {
        self.state = State::Open;
        self.scan.reset();
        self.buf.clear();
        self.began = false;
        self.arguments_seen = false;
    }

    fn consume(
        &mut self,
        text: &str,
        calls: &mut CallEmitter,
        out: &mut Vec<DeltaToolCall>,
        final_: bool,
    ) -> usize {
        let b = text.as_bytes();
        let mut i = 0;
        loop {
            match self.state {
                State::Done => break,
                State::Open => {
                    // Leading whitespace is not consumed until the envelope starts, so a
                    // block that turns out not to be an envelope can be handed back whole.
                    let j = skip_ws(b, i);
                    if j == b.len() {
                        break;
                    }
                    if b[j] != b'{' {
                        self.state = State::Done;
                        break;
                    }
                    i = j + 1;
                    self.began = true;
                    calls.begin_call(out);
                    self.state = State::KeyOrEnd;
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
                            self.finish(calls, out);
                        }
                        _ => self.finish(calls, out),
                    }
                }
                State::Key => {
                    let (n, st) = self.scan.feed(&b[i..], final_);
                    self.buf.push_str(&text[i..i + n]);
                    i += n;
                    match st {
                        ScanStatus::Incomplete => break,
                        ScanStatus::Invalid => self.finish(calls, out),
                        ScanStatus::Complete => {
                            let key = decode_string(&self.buf);
                            self.field = self.field_of(&key);
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
                        self.finish(calls, out);
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
                        (Field::Name | Field::Arguments, b'"') => State::Collect(field),
                        (Field::Arguments, _) => {
                            self.arguments_seen = true;
                            State::Arguments
                        }
                        _ => State::Skip,
                    };
                }
                State::Collect(field) => {
                    let (n, st) = self.scan.feed(&b[i..], final_);
                    self.buf.push_str(&text[i..i + n]);
                    i += n;
                    match st {
                        ScanStatus::Incomplete => break,
                        ScanStatus::Invalid => self.finish(calls, out),
                        ScanStatus::Complete => {
                            let value = decode_string(&self.buf);
                            self.buf.clear();
                            if field == Field::Name {
                                calls.set_name(&value, None, out);
                            } else {
                                self.arguments_seen = true;
                                calls.push_args(&value, out);
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
                        ScanStatus::Invalid => self.finish(calls, out),
                        ScanStatus::Complete => self.state = State::AfterValue,
                    }
                }
                State::Skip => {
                    let (n, st) = self.scan.feed(&b[i..], final_);
                    i += n;
                    match st {
                        ScanStatus::Incomplete => break,
                        ScanStatus::Invalid => self.finish(calls, out),
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
                            self.finish(calls, out);
                        }
                        _ => self.finish(calls, out),
                    }
                }
            }
        }
        if final_ && self.state != State::Done && self.state != State::Open {
            // Input ended inside the envelope: the call ends with what was written.
            self.finish(calls, out);
        }
        i
    }

    fn payload_closed(&self) -> bool {
        self.state == State::Done
    }

    fn started(&self) -> bool {
        self.began
    }

    fn starts_payload(&self, rest: &str) -> bool {
        rest.starts_with('{')
    }
}
