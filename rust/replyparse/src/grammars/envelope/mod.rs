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

pub(crate) mod constraint;

use crate::calls::CallEmitter;
use crate::delta::DeltaSink;
use crate::scan::json_scan::{JsonValueScanner, ScanStatus};
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
    /// The end of input closed the envelope before its `}`.
    cut: bool,
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
    pub fn new(name_field: &str, argument_field: &str) -> Self {
        JsonEnvelope {
            name_field: name_field.to_owned(),
            argument_field: argument_field.to_owned(),
            state: State::Open,
            scan: JsonValueScanner::new(),
            buf: String::new(),
            field: Field::Other,
            began: false,
            cut: false,
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
    fn finish(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
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
        self.cut = false;
        self.arguments_seen = false;
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
                        (Field::Name, b'"') => State::Collect(field),
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
                        ScanStatus::Invalid => self.finish(calls, out),
                        ScanStatus::Complete => {
                            if field == Field::Name {
                                calls.set_name(&decode_string(&self.buf), None, out);
                            } else {
                                self.arguments_seen = true;
                                calls.push_args(&collected_arguments(&self.buf, true), out);
                            }
                            self.buf.clear();
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
            if self.state == State::Collect(Field::Arguments) {
                calls.push_args(&collected_arguments(&self.buf, false), out);
            }
            self.cut = true;
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

    fn buffered_bytes(&self) -> usize {
        self.buf.len()
    }

    fn cut_by_end_of_input(&self) -> bool {
        self.cut
    }

    fn payload_marker(&self) -> Option<&str> {
        Some("{")
    }

    fn starts_payload(&self, rest: &str) -> bool {
        rest.starts_with('{')
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
            let mut g = JsonEnvelope::new("name", "arguments");
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
