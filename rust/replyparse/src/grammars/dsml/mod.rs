//! DSML, the tool-call markup of DeepSeek V3.2 and V4 (and GigaChat 3.5, whose GCML is
//! DSML with the `｜GCML｜` namespace: a declaration, `token` below).
//!
//! ```text
//! \n\n<｜DSML｜function_calls>                       (V4: tool_calls; the outer block)
//! <｜DSML｜invoke name="get_weather">                 one call
//! <｜DSML｜parameter name="city" string="true">北京</｜DSML｜parameter>
//! <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
//! </｜DSML｜invoke>
//! <｜DSML｜invoke name="...">...</｜DSML｜invoke>      more calls in the same block
//! </｜DSML｜function_calls>
//! ```
//!
//! Facts from DeepSeek's own encoder (`encoding_dsv32.py`, V4 alike): the assistant turn
//! is `reasoning</think>content` followed by `"\n\n" + block`, always — even with empty
//! content — so the two newlines are part of the protocol and the dialects declare them
//! in the open tag (as the seed did); the bare tag is declared as an open alias, so a
//! block written without them is still a call rather than markup shown as content. The
//! bars are U+FF5C (full width). String parameters are written "as is without any
//! escaping or quotes" (`string="true"`); every other type is its JSON text
//! (`string="false"`).
//!
//! This module is one payload = one `invoke` element; the [`ToolParser`] driver finds
//! the next `invoke` (via [`PayloadGrammar::starts_payload`]) or the block close. The
//! markup is data: [`DsmlSyntax`] gives the marker and element names and every tag is
//! derived from it.
//!
//! Output: the arguments object built incrementally, `{"P": value, "Q": value}`:
//! - `string="true"`: the raw text streams at once as a JSON string, escaped as it
//!   arrives (`"`, `\`, control characters; non-ASCII is kept as is, never `\uXXXX`).
//!   Only the parameter close tag ends it: any other tag-like text is data. Only a
//!   possible prefix of that close tag is held back. The close tag itself is data too
//!   unless the next parameter, a DSML close tag (`</｜DSML｜invoke>`, the block close)
//!   or the end of input follows it (after whitespace): DeepSeek's encoder writes string
//!   values as is, so a value holding `</｜DSML｜parameter>` (an agent writing DSML, or a
//!   parser's fixture) reaches the output unescaped, and taking the first close tag
//!   would cut the value and turn the rest of it into stray text, or into calls (an
//!   `<｜DSML｜invoke` later in the value). The text after such a close tag is held until
//!   a later close tag that markup follows (the earlier ones were data: the value stays
//!   whole) or until the invoke closes or the input ends first (the first close tag
//!   ended the value; the rest is stray, as before). An invoke close counts only where
//!   the next invoke, the block close or the end of input follows it: one followed by
//!   more value text is part of the value. The XML values follow the same
//!   rule. DeepSeek's own parser (`parse_message_from_completion_text`) takes the first
//!   `/｜DSML｜parameter` and rejects the message instead.
//! - any other `string` value (or none): the JSON source, copied verbatim as it
//!   arrives. A [`JsonValueScanner`] follows it so that the close tag inside one of its
//!   strings is data; once the value is complete (or something that is not JSON
//!   appears) the text up to the parameter close tag is still copied verbatim:
//!   malformed values are kept as written, up to the protocol boundary. Leading
//!   whitespace is JSON whitespace and is dropped.
//! - A key is written only once its value begins, so input that ends right after a
//!   parameter's open tag never produces a key without a value. A value that is
//!   complete (close tag seen) but empty gives `""` for a string parameter (the model
//!   wrote the empty string) and `null` for any other: `null` is JSON's absence of a
//!   value, and it keeps the arguments a JSON object instead of `{"P": }`.
//! - Duplicate parameters are kept, in order. `}` is written when the invoke closes, by
//!   anything that ends it early (the block close, stray markup), or by the end of input.
//!
//! Identity first: the call begins at `<｜DSML｜invoke` and its name (the `name`
//! attribute) is given when the tag's `>` arrives, before any argument text. At the end
//! of input a name attribute whose closing quote was written still counts; a cut one
//! does not (no invented names).
//!
//! Invariant: every byte is looked at once. Tag heads are compared only at the position
//! the state expects them (at most one tag length held), values are searched with the
//! shared [`TagSet`] (held suffix bounded by the close tag length), and a tag's
//! attribute text is moved into `header` as it arrives.
//!
//! [`ToolParser`]: crate::tool::ToolParser

pub(crate) mod constraint;

use std::sync::Arc;

use memchr::memchr2;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::syntax::FieldError;
use crate::calls::CallEmitter;
use crate::delta::DeltaSink;
use crate::grammars::payload::PayloadGrammar;
use crate::grammars::schema::escape_json_into;
use crate::scan::json_scan::{JsonValueScanner, ScanStatus};
use crate::scan::lex::{head, partial, ws_len, Head};
use crate::scan::prefix::TagSet;

/// The syntax of a `dsml` dialect: its inner markup (DeepSeek's when left out). Tags are `<{token}{invoke}`, `</{token}{invoke}>`,
/// `<{token}{parameter}` and `</{token}{parameter}>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DsmlSyntax {
    /// The marker every tag name starts with: `｜DSML｜` (full-width bars, U+FF5C).
    #[serde(default = "default_token")]
    pub token: String,
    /// The call element's name.
    #[serde(default = "default_invoke")]
    pub invoke: String,
    /// The parameter element's name.
    #[serde(default = "default_parameter")]
    pub parameter: String,
}

/// DeepSeek's marker, when a declaration leaves `token` out.
fn default_token() -> String {
    "｜DSML｜".into()
}
/// DeepSeek's call element, when a declaration leaves `invoke` out.
fn default_invoke() -> String {
    "invoke".into()
}
/// DeepSeek's parameter element, when a declaration leaves `parameter` out.
fn default_parameter() -> String {
    "parameter".into()
}

impl DsmlSyntax {
    /// Checks the markup: the token and the two element names are non-empty.
    pub fn validate(&self) -> Result<(), FieldError> {
        for (field, v) in [
            ("token", &self.token),
            ("invoke", &self.invoke),
            ("parameter", &self.parameter),
        ] {
            if v.is_empty() {
                return Err(FieldError::new(field, "is empty"));
            }
        }
        Ok(())
    }
}

impl Default for DsmlSyntax {
    fn default() -> Self {
        DsmlSyntax {
            token: default_token(),
            invoke: default_invoke(),
            parameter: default_parameter(),
        }
    }
}

/// Where the driver is in one invoke (one payload). Each state has its method,
/// `DsmlGrammar::on_<state>`, which says what the state reads; here, what each one
/// means and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before `<｜DSML｜invoke` (whitespace was skipped by the tool parser). Holds at
    /// most a possible prefix of that tag, unconsumed.
    InvokeStart,
    /// Reading the invoke tag's attributes, up to `>`. `header` holds them: the name
    /// is given whole, once its closing quote is written.
    InvokeHeader,
    /// Inside an invoke: a parameter, the invoke close, or something that ends it.
    /// Holds at most a possible prefix of a tag, unconsumed.
    Body,
    /// Reading a parameter tag's attributes, up to `>`. `header` holds them: the key
    /// and the `string` attribute are read from them whole.
    ParamHeader,
    /// A `string="true"` value, streamed escaped as it arrives. Holds only a possible
    /// prefix of the parameter close tag, unconsumed.
    StrValue,
    /// After a parameter close tag in a string value that something other than markup
    /// follows: it may be data. Held until decided (module docs): the text from that
    /// close tag on stays unconsumed, `scanned` bytes of it searched already.
    StrTentative,
    /// Before the first non-whitespace byte of a JSON value. Holds nothing: the
    /// whitespace is consumed and dropped.
    JsonStart,
    /// Inside a JSON value, copied as it arrives while the lexical scanner (`scan`)
    /// follows it, so a close tag inside one of its strings is data.
    JsonScan,
    /// After the JSON value (or after text that is not JSON), up to the close tag,
    /// copied as it arrives. Holds only a possible prefix of the close tag.
    JsonTail,
    /// The invoke ended (its close, or text that is no part of it): the driver
    /// consumes nothing more until [`PayloadGrammar::reset`].
    Done,
}

/// The value of attribute `key` in a tag's attribute text (`name="x" string="true"`),
/// if its closing quote was written.
fn attribute<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let mut s = header;
    loop {
        s = s.trim_start();
        let eq = s.find('=')?;
        let k = s[..eq].trim();
        let after = s[eq + 1..].trim_start();
        let value = after.strip_prefix('"')?;
        let close = value.find('"')?;
        if k == key {
            return Some(&value[..close]);
        }
        s = &value[close + 1..];
    }
}

/// What a parameter close tag in a string value is, by what follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Follow {
    /// It ends the value.
    Structural,
    /// Value text, if a later close tag ends the value.
    Data,
    /// Not known until more text arrives.
    Hold,
}

/// What a state's method did with the text it was given ([`DsmlGrammar::consume`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// It consumed this many bytes and the driver goes on: the state changed, or the
    /// method made progress the next call builds on.
    Next(usize),
    /// It consumed this many bytes and nothing more is decided in this chunk: more
    /// text is needed, or the payload ended.
    Stop(usize),
}

/// Longest whitespace run after a parameter close tag that the lookahead reads.
const MAX_FOLLOW_WS: usize = 256;

/// The DSML payload grammar of one dialect (see the module docs): one invoke per
/// payload, its arguments written as one JSON object.
///
/// The tags are derived from the declaration once and do not change; the other fields
/// describe the invoke and parameter being read, and [`PayloadGrammar::reset`] clears
/// them.
#[derive(Debug)]
pub struct DsmlGrammar {
    /// `<｜DSML｜invoke`: begins a payload.
    invoke_open: String,
    /// `</｜DSML｜invoke>`: ends it.
    invoke_close: String,
    /// `<｜DSML｜parameter`: begins a parameter.
    param_open: String,
    /// The parameter close tag: ends values.
    param_close: Arc<TagSet>,
    /// The parameter close tag, then the invoke close: what decides a tentative close
    /// tag.
    value_stops: Arc<TagSet>,
    /// What follows a parameter close tag that ends the value: the next parameter, or
    /// any DSML close tag.
    follows: [String; 2],
    /// In `StrTentative`: bytes of the held text (from the first close tag) already
    /// searched, so they are not searched again.
    scanned: usize,
    /// Where the driver is.
    state: State,
    /// Attribute text of the tag being read.
    header: String,
    /// Keys written in the current invoke.
    keys: usize,
    /// The current parameter's key, JSON-encoded, until its value begins.
    key: String,
    /// The current parameter's key was written (with the opening quote of a string).
    key_written: bool,
    /// In `JsonScan`: the lexical scanner following the JSON value.
    scan: JsonValueScanner,
    /// The payload began: a call was begun (its name may still be to come).
    began: bool,
    /// The current invoke's name was given (a nameless call's record gets no `{}`).
    named: bool,
}

impl DsmlGrammar {
    /// The grammar of a DSML markup; every tag is derived from `syntax` here, once per
    /// response.
    pub fn new(syntax: &DsmlSyntax) -> Self {
        let t = &syntax.token;
        DsmlGrammar {
            invoke_open: format!("<{t}{}", syntax.invoke),
            invoke_close: format!("</{t}{}>", syntax.invoke),
            param_open: format!("<{t}{}", syntax.parameter),
            param_close: TagSet::shared(&[format!("</{t}{}>", syntax.parameter)]),
            value_stops: TagSet::shared(&[
                format!("</{t}{}>", syntax.parameter),
                format!("</{t}{}>", syntax.invoke),
            ]),
            follows: [format!("<{t}{}", syntax.parameter), format!("</{t}")],
            scanned: 0,
            state: State::InvokeStart,
            header: String::new(),
            keys: 0,
            key: String::new(),
            key_written: false,
            scan: JsonValueScanner::new(),
            began: false,
            named: false,
        }
    }

    /// Reads tag attribute text into `header` up to `>` (consumed) or `<` (a malformed
    /// tag; not consumed). Names never contain either. Returns the bytes consumed and
    /// whether the tag ended.
    fn read_header(&mut self, rest: &str) -> (usize, bool) {
        match memchr2(b'>', b'<', rest.as_bytes()) {
            None => {
                self.header.push_str(rest);
                (rest.len(), false)
            }
            Some(k) => {
                self.header.push_str(&rest[..k]);
                (k + usize::from(rest.as_bytes()[k] == b'>'), true)
            }
        }
    }

    /// Writes the pending key (with the separator before it) and `value`.
    fn push_value(&mut self, value: &str, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        self.push_value_with(calls, out, value.len(), |s| s.push_str(value));
    }

    /// Writes the pending key (with the separator and the opening quote before it) and
    /// `raw` escaped as JSON string content.
    fn push_escaped(&mut self, raw: &str, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if raw.is_empty() {
            return;
        }
        let quote = !self.key_written;
        self.push_value_with(calls, out, raw.len() + raw.len() / 4 + 8, |s| {
            if quote {
                s.push('"');
            }
            escape_json_into(s, raw);
        });
    }

    /// The pending key (with the separator before it), then what `write` appends,
    /// written straight into the call's argument fragment.
    fn push_value_with(
        &mut self,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
        size_hint: usize,
        write: impl FnOnce(&mut String),
    ) {
        let head = !self.key_written;
        let sep = if self.keys == 0 { "{" } else { ", " };
        let key = &self.key;
        let hint = size_hint + if head { sep.len() + key.len() + 2 } else { 0 };
        calls.push_args_with(out, hint, |s| {
            if head {
                s.push_str(sep);
                s.push_str(key);
                s.push_str(": ");
            }
            write(s);
        });
        if head {
            self.key_written = true;
            self.keys += 1;
        }
    }

    /// Whether a parameter close tag followed by `after` ends the value (module docs). A
    /// whitespace run longer than [`MAX_FOLLOW_WS`] counts as structural, so what is held
    /// to decide stays bounded.
    fn close_follows(&self, after: &str, final_: bool) -> Follow {
        let ws = ws_len(after);
        if ws >= MAX_FOLLOW_WS {
            return Follow::Structural;
        }
        let next = &after[ws..];
        if self.follows.iter().any(|t| next.starts_with(t.as_str())) {
            return Follow::Structural;
        }
        if final_ {
            return if next.is_empty() {
                Follow::Structural
            } else {
                Follow::Data
            };
        }
        if next.is_empty() || self.follows.iter().any(|t| partial(next, t)) {
            Follow::Hold
        } else {
            Follow::Data
        }
    }

    /// Whether an invoke close tag met while a parameter close tag is tentative, followed
    /// by `after`, is the invoke's end: the next invoke, a DSML close tag other than the
    /// parameter close (the block close) or the end of input follows it. Otherwise it is
    /// value text (a value holding DSML markup).
    fn invoke_close_follows(&self, after: &str, final_: bool) -> Follow {
        let ws = ws_len(after);
        if ws >= MAX_FOLLOW_WS {
            return Follow::Structural;
        }
        let next = &after[ws..];
        let close_prefix = &self.follows[1];
        let param_close = self.param_close.text(0);
        if next.starts_with(self.invoke_open.as_str()) {
            return Follow::Structural;
        }
        if next.starts_with(close_prefix.as_str()) {
            return if next.starts_with(param_close) {
                Follow::Data
            } else if !final_ && partial(next, param_close) {
                Follow::Hold
            } else {
                Follow::Structural
            };
        }
        if final_ {
            return if next.is_empty() {
                Follow::Structural
            } else {
                Follow::Data
            };
        }
        if next.is_empty() || partial(next, &self.invoke_open) || partial(next, close_prefix) {
            Follow::Hold
        } else {
            Follow::Data
        }
    }

    /// Starts a parameter from its complete attribute text.
    fn begin_param(&mut self) {
        let name = attribute(&self.header, "name").unwrap_or("");
        self.key = serde_json::to_string(name).unwrap_or_else(|_| "\"\"".into());
        self.key_written = false;
        self.state = if attribute(&self.header, "string") == Some("true") {
            State::StrValue
        } else {
            State::JsonStart
        };
    }

    /// The parameter close tag was consumed: completes the value.
    fn end_param(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        match self.state {
            State::StrValue | State::StrTentative if !self.key_written => {
                self.push_value("\"\"", calls, out)
            }
            State::StrValue | State::StrTentative => calls.push_args("\"", out),
            _ if !self.key_written => self.push_value("null", calls, out),
            _ => {}
        }
        self.state = State::Body;
    }

    /// Gives the call its name from the invoke tag's `name` attribute, if its closing
    /// quote was written (a cut one is no name).
    fn set_name(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if let Some(name) = attribute(&self.header, "name") {
            calls.set_name(name, None, out);
            self.named = true;
        }
    }

    /// Closes the arguments object and the call; the payload is over.
    fn end_invoke(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if self.keys > 0 {
            calls.push_args("}", out);
        } else if self.named {
            calls.push_args("{}", out);
        }
        calls.end_call(out);
        self.state = State::Done;
    }

    /// The end of input inside an invoke, before its close: the call is cut. Value text
    /// the states held is sent as written, but nothing is closed for it (no closing
    /// quote, no closing brace); a cut header names nothing. Returns the bytes consumed
    /// from `rest`.
    fn end_of_input(
        &mut self,
        rest: &str,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> usize {
        let mut used = 0;
        match self.state {
            State::InvokeStart | State::Done => return 0,
            // The name attribute may be cut: the call names nothing.
            State::InvokeHeader => {
                self.header.push_str(rest);
                used = rest.len();
            }
            // A proper prefix of the parameter close tag at the end of input is markup
            // cut short, not data: it stays out of the value and is left unconsumed,
            // so the tool parser records it as stray block text.
            State::StrValue => {
                used = rest.len() - self.param_close.held_suffix(rest);
                self.push_escaped(&rest[..used], calls, out);
            }
            // Decided in `on_str_tentative` at the end of input (the first close tag
            // ends the value); kept for totality.
            State::StrTentative => {
                used = self.param_close.text(0).len().min(rest.len());
            }
            State::JsonTail => {
                used = rest.len() - self.param_close.held_suffix(rest);
                if used > 0 {
                    self.push_value(&rest[..used], calls, out);
                }
            }
            State::JsonStart | State::JsonScan => {
                if !rest.is_empty() {
                    self.push_value(rest, calls, out);
                }
                used = rest.len();
            }
            // A cut parameter tag writes nothing; a partial tag in the body is left to
            // the tool parser, which records it.
            State::ParamHeader | State::Body => {}
        }
        calls.cut_call(out);
        self.state = State::Done;
        used
    }
}

impl PayloadGrammar for DsmlGrammar {
    fn reset(&mut self) {
        self.state = State::InvokeStart;
        self.header.clear();
        self.keys = 0;
        self.key.clear();
        self.key_written = false;
        self.scan.reset();
        self.began = false;
        self.named = false;
        self.scanned = 0;
    }

    /// The driver: hands the unconsumed text to the method of the state the grammar is
    /// in until one of them needs more text or the invoke ends; at the end of input,
    /// closes what was opened.
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
                State::InvokeStart => self.on_invoke_start(rest, calls, out),
                State::InvokeHeader => self.on_invoke_header(rest, calls, out),
                State::Body => self.on_body(rest, calls, out),
                State::ParamHeader => self.on_param_header(rest),
                State::StrValue => self.on_str_value(rest, final_, calls, out),
                State::StrTentative => self.on_str_tentative(rest, final_, calls, out),
                State::JsonStart => self.on_json_start(rest),
                State::JsonScan => self.on_json_scan(rest, final_, calls, out),
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
        if final_ {
            i += self.end_of_input(&text[i..], calls, out);
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
        self.header.len() + self.key.len()
    }

    fn payload_marker(&self) -> Option<&str> {
        Some(&self.invoke_open)
    }

    /// Another invoke, or text that may still become one (a chunk can end inside the
    /// tag): the decision must not depend on where the chunk ended.
    fn starts_payload(&self, rest: &str) -> bool {
        !rest.is_empty() && !matches!(head(rest, &self.invoke_open), Head::Other)
    }
}

/// The states, one method each. A method receives the unconsumed text (`rest`), acts on
/// what it can decide from it, and says how many bytes it consumed and whether the
/// driver goes on (a `Step`). A method that changes the state says so by assigning
/// `self.state`; one that returns `Step::Next` without changing it has made progress
/// some other way (searched held text it will not search again).
impl DsmlGrammar {
    /// `InvokeStart`: the payload is one invoke; anything else is not a call, and the
    /// tool parser decides what it is (the block close, or stray text).
    fn on_invoke_start(
        &mut self,
        rest: &str,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        match head(rest, &self.invoke_open) {
            Head::Tag => {
                self.began = true;
                calls.begin_call(out);
                self.header.clear();
                self.state = State::InvokeHeader;
                Step::Next(self.invoke_open.len())
            }
            Head::Partial => Step::Stop(0),
            // Not a call: the tool parser decides (block close or stray text).
            Head::Other => {
                self.state = State::Done;
                Step::Stop(0)
            }
        }
    }

    /// `InvokeHeader`: the invoke tag's attribute text, moved into `header` as it
    /// arrives; at its `>` the call gets its name, before any argument (identity first).
    fn on_invoke_header(
        &mut self,
        rest: &str,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let (n, ended) = self.read_header(rest);
        if !ended {
            return Step::Stop(n);
        }
        self.set_name(calls, out);
        self.state = State::Body;
        Step::Next(n)
    }

    /// `Body`: inside the invoke, after whitespace: a parameter begins, or the invoke
    /// closes; anything else (the block close, markup that is no part of a call) ends
    /// the invoke there and the tool parser takes the rest.
    fn on_body(&mut self, rest: &str, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) -> Step {
        let ws = ws_len(rest);
        let rest = &rest[ws..];
        if rest.is_empty() {
            return Step::Stop(ws);
        }
        match (head(rest, &self.param_open), head(rest, &self.invoke_close)) {
            (Head::Tag, _) => {
                self.header.clear();
                self.state = State::ParamHeader;
                Step::Next(ws + self.param_open.len())
            }
            (_, Head::Tag) => {
                self.end_invoke(calls, out);
                Step::Next(ws + self.invoke_close.len())
            }
            (Head::Partial, _) | (_, Head::Partial) => Step::Stop(ws),
            // The block close, or markup that is not part of a call: the
            // invoke ends here and the tool parser takes the rest.
            (Head::Other, Head::Other) => {
                self.end_invoke(calls, out);
                Step::Next(ws)
            }
        }
    }

    /// `ParamHeader`: the parameter tag's attribute text, moved into `header`; at its
    /// `>` the key is known and the `string` attribute says how the value is read.
    fn on_param_header(&mut self, rest: &str) -> Step {
        let (n, ended) = self.read_header(rest);
        if !ended {
            return Step::Stop(n);
        }
        self.begin_param();
        Step::Next(n)
    }

    /// `StrValue`: a `string="true"` value, streamed escaped as it arrives; only a
    /// possible prefix of the parameter close tag is held. A close tag ends the value
    /// where markup or the end of input follows it; where text follows, it may be data
    /// and `StrTentative` decides; where nothing follows yet, it is held.
    fn on_str_value(
        &mut self,
        rest: &str,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        match self.param_close.find_or_held(rest, false) {
            Ok(m) => {
                self.push_escaped(&rest[..m.start], calls, out);
                match self.close_follows(&rest[m.end..], final_) {
                    Follow::Structural => {
                        self.end_param(calls, out);
                        Step::Next(m.end)
                    }
                    Follow::Hold => Step::Stop(m.start),
                    Follow::Data => {
                        // Perhaps `</｜DSML｜parameter>` inside the value.
                        self.scanned = m.end - m.start;
                        self.state = State::StrTentative;
                        Step::Next(m.start)
                    }
                }
            }
            Err(keep) => {
                self.push_escaped(&rest[..rest.len() - keep], calls, out);
                Step::Stop(rest.len() - keep)
            }
        }
    }

    /// `StrTentative`: `rest` starts at the first parameter close tag, held since;
    /// `scanned` bytes of it are known to decide nothing. A later parameter close tag
    /// that markup follows ends the value (the earlier ones were data); a real invoke
    /// close, or the end of input, before one means the first close tag ended it.
    fn on_str_tentative(
        &mut self,
        rest: &str,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let first_end = self.param_close.text(0).len();
        let from = self.scanned;
        match self.value_stops.find_or_held(&rest[from..], false) {
            Ok(m) if m.tag == 0 => {
                let (p, e) = (from + m.start, from + m.end);
                match self.close_follows(&rest[e..], final_) {
                    Follow::Structural => {
                        // This one ends the value: the earlier ones were data.
                        self.push_escaped(&rest[..p], calls, out);
                        self.end_param(calls, out);
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
            // The invoke close: a real one (what follows it is the next
            // invoke, the block close or the end of input) ends the invoke
            // with no later close tag that markup follows, so the first one
            // ended the value and the text after it is the tool parser's
            // (stray); one inside the value is data.
            // An invoke close that only the end of input follows leaves the value's
            // end undecided (more text might have made it data): the call is cut.
            Ok(m) if final_ && rest[from + m.end..].trim().is_empty() => {
                self.cut_rest(rest, calls, out)
            }
            Ok(m) => {
                let (p, e) = (from + m.start, from + m.end);
                match self.invoke_close_follows(&rest[e..], final_) {
                    Follow::Structural => {
                        self.end_param(calls, out);
                        Step::Next(first_end)
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
            // The input ended with the value's end undecided (only text followed its
            // first close tag): the invoke did not reach its close, so the call is cut
            // and the value is not ended for it; the tool parser records the rest.
            Err(_) if final_ => self.cut_rest(rest, calls, out),
            Err(keep) => {
                self.scanned = rest.len() - keep;
                Step::Stop(0)
            }
        }
    }

    /// The end of input with a value's end undecided: the call is cut, and the rest of
    /// the text (which more output might have made part of the value) is recorded
    /// whole, never read as further calls.
    fn cut_rest(&mut self, rest: &str, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) -> Step {
        calls.cut_call(out);
        if !rest.is_empty() {
            calls.record_stray(rest.to_owned(), false);
        }
        self.state = State::Done;
        Step::Next(rest.len())
    }

    /// `JsonStart`: before a JSON value's first byte; its leading whitespace is JSON
    /// whitespace and is dropped.
    fn on_json_start(&mut self, rest: &str) -> Step {
        let ws = ws_len(rest);
        if ws == rest.len() {
            return Step::Stop(ws);
        }
        self.scan.reset();
        self.state = State::JsonScan;
        Step::Next(ws)
    }

    /// `JsonScan`: inside a JSON value, copied verbatim as it arrives while the lexical
    /// scanner follows it, so a close tag inside one of its strings is data.
    fn on_json_scan(
        &mut self,
        rest: &str,
        final_: bool,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        let (n, st) = self.scan.feed(rest.as_bytes(), final_);
        if n > 0 {
            self.push_value(&rest[..n], calls, out);
        }
        if st == ScanStatus::Incomplete {
            return Step::Stop(n);
        }
        self.state = State::JsonTail;
        Step::Next(n)
    }

    /// `JsonTail`: after the JSON value (or text that is not JSON), up to the
    /// parameter close tag: copied verbatim, so a malformed value is kept as written up
    /// to the protocol boundary.
    fn on_json_tail(
        &mut self,
        rest: &str,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) -> Step {
        match self.param_close.find_or_held(rest, false) {
            Ok(m) => {
                if m.start > 0 {
                    self.push_value(&rest[..m.start], calls, out);
                }
                self.end_param(calls, out);
                Step::Next(m.end)
            }
            Err(keep) => {
                if rest.len() > keep {
                    self.push_value(&rest[..rest.len() - keep], calls, out);
                }
                Step::Stop(rest.len() - keep)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_unicode_kept() {
        let mut s = String::new();
        escape_json_into(&mut s, "a\u{1}b\u{8}\u{c}é😀\"\\\t\r");
        assert_eq!(s, "a\\u0001b\\b\\fé😀\\\"\\\\\\t\\r");
        let back: String = serde_json::from_str(&format!("\"{s}\"")).unwrap();
        assert_eq!(back, "a\u{1}b\u{8}\u{c}é😀\"\\\t\r");
    }

    #[test]
    fn attributes() {
        assert_eq!(attribute(" name=\"f\" string=\"true\"", "name"), Some("f"));
        assert_eq!(
            attribute(" name=\"f\" string=\"true\"", "string"),
            Some("true")
        );
        assert_eq!(attribute(" xname=\"f\"", "name"), None);
        assert_eq!(attribute(" name=\"f", "name"), None);
        assert_eq!(attribute(" name", "name"), None);
    }
}
