//! The XML-like payload driver: sequential, function-first markup whose parameter values
//! end at a dialect's close tag (Qwen3-Coder, GLM-4.5/4.7).
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
//! - A value whose type resolves to string streams at once, escaped, as it arrives; only
//!   a possible prefix of the value close tag (and, for Qwen3-Coder, one trailing
//!   newline) is held back. Other types are held until the close tag, then converted
//!   ([`crate::grammars::schema`]).
//! - Only the value close tag ends a value: other tags inside a value (`<parameter=y>` in
//!   a code sample) are data, and so is the close tag itself unless the next parameter,
//!   the function close, the block close or the end of input follows it (after
//!   whitespace): a value holding `</parameter>` stays whole.
//! - A key is written only once its value begins, so input that ends after a key never
//!   produces a key without a value; once the call is closed the arguments are always
//!   valid JSON, duplicate keys kept in order.
//! - `final` closes what was opened with what was written; it never invents a name or a
//!   value.

pub(crate) mod constraint;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::calls::CallEmitter;
use crate::delta::DeltaSink;
use crate::grammars::schema::{self, Ty};
use crate::request::Schemas;
use crate::scan::lex::{head, partial, ws_len, Head};
use crate::scan::prefix::TagSet;
use crate::tool::PayloadGrammar;

/// The markup of one XML-like dialect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XmlSyntax {
    /// Text before the function name (`<function=`); empty when the payload starts with
    /// the name (GLM).
    #[serde(default)]
    pub function_open: String,
    /// Ends the function name and is consumed (`>`, or `\n` for GLM). The name also ends,
    /// without consuming it, where a parameter, the function close or the block close
    /// begins.
    pub function_name_end: String,
    /// Closes the function (`</function>`), when the dialect has one.
    #[serde(default)]
    pub function_close: Option<String>,
    /// Opens a parameter (`<parameter=`, `<arg_key>`).
    pub param_open: String,
    /// Ends the parameter name (`>`, `</arg_key>`).
    pub param_name_end: String,
    /// Opens the value after the name, when the dialect has a separate element for it
    /// (`<arg_value>`).
    #[serde(default)]
    pub value_open: Option<String>,
    /// Ends the value (`</parameter>`, `</arg_value>`).
    pub value_close: String,
    /// One newline right after the value opens and one right before it closes are
    /// protocol, not data (Qwen3-Coder).
    #[serde(default)]
    pub trim_value_newline: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the function (its open text or, for GLM, its name).
    Function,
    /// Inside the function name.
    Name,
    /// Between parameters.
    ArgStart,
    /// Inside a parameter name.
    ArgName,
    /// Between a parameter name and its value element.
    ValueOpen,
    /// Inside a value.
    Value,
    /// After a value close tag that something other than markup follows: it may be
    /// data (a value holding `</parameter>`). Held until a later close tag that markup
    /// follows (then it was data), or the function or block close, or the end of input
    /// (then it ended the value).
    Tentative,
    Done,
}

/// See the module docs.
#[derive(Debug)]
pub struct XmlGrammar {
    syn: XmlSyntax,
    block_close: String,
    schemas: Schemas,
    /// Tags that end a function name.
    name_stops: Arc<TagSet>,
    param_name_end: Arc<TagSet>,
    value_close: Arc<TagSet>,
    state: State,
    began: bool,
    /// The function name, parameter name or typed value being collected.
    buf: String,
    function: String,
    /// The current parameter's name, written with the first byte of its value.
    key: String,
    key_written: bool,
    params: usize,
    types: Vec<Ty>,
    /// No value byte seen yet (for the protocol newline after the open tag).
    value_fresh: bool,
    /// Value close, function close, block close: what decides a tentative close tag.
    value_stops: Arc<TagSet>,
    /// In `Tentative`: bytes of protocol newline held before the first close tag.
    lead: usize,
    /// In `Tentative`: bytes of the held text already searched (so it is not again).
    scanned: usize,
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

/// Longest whitespace run after a value close tag that the lookahead reads.
const MAX_FOLLOW_WS: usize = 256;

/// Index of the function-name-end tag in `name_stops` (the only stop that is consumed).
const NAME_END: usize = 0;

impl XmlGrammar {
    pub fn new(syn: XmlSyntax, block_close: Option<&str>, schemas: Schemas) -> Self {
        let block_close = block_close.unwrap_or("").to_owned();
        let mut stops = vec![syn.function_name_end.as_str(), syn.param_open.as_str()];
        stops.extend(syn.function_close.as_deref());
        stops.push(&block_close);
        let mut value_stops = vec![syn.value_close.as_str()];
        value_stops.extend(syn.function_close.as_deref());
        value_stops.push(&block_close);
        XmlGrammar {
            value_stops: TagSet::shared(&value_stops),
            lead: 0,
            scanned: 0,
            name_stops: TagSet::shared(&stops),
            param_name_end: TagSet::shared(&[&syn.param_name_end]),
            value_close: TagSet::shared(&[&syn.value_close]),
            syn,
            block_close,
            schemas,
            state: State::Function,
            began: false,
            buf: String::new(),
            function: String::new(),
            key: String::new(),
            key_written: false,
            params: 0,
            types: Vec::new(),
            value_fresh: true,
        }
    }

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

    /// Ends the current value. `complete` is false when the input ended inside it: a
    /// value with no byte at all is then dropped (never invented).
    fn end_value(&mut self, complete: bool, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
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
            let v = schema::convert(&self.buf, &self.types);
            calls.push_args(&v, out);
            self.buf.clear();
        }
        self.params += 1;
    }

    /// Ends the payload: closes the arguments object of the open call.
    fn finish(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        if self.began && !self.function.is_empty() {
            calls.push_args(if self.params == 0 { "{}" } else { "}" }, out);
        }
        calls.end_call(out);
        self.state = State::Done;
    }

    /// Whether a value close tag followed by `after` ends the value. vLLM's rule,
    /// which keeps a value holding the tag whole: the close tag is structural only when
    /// what follows it (after whitespace) is the next parameter, the function close,
    /// the block close or the end of input; otherwise it is data. A run of whitespace
    /// longer than [`MAX_FOLLOW_WS`] counts as structural, so the lookahead (held, and
    /// looked at again per chunk) stays bounded.
    fn close_follows(&self, after: &str, final_: bool) -> Follow {
        let ws = ws_len(after);
        if ws >= MAX_FOLLOW_WS {
            return Follow::Structural;
        }
        let next = &after[ws..];
        let fclose = self.syn.function_close.as_deref().unwrap_or("");
        let follows = [
            self.syn.param_open.as_str(),
            fclose,
            self.block_close.as_str(),
        ];
        if follows.iter().any(|t| !t.is_empty() && next.starts_with(t)) {
            return Follow::Structural;
        }
        if final_ {
            return if next.is_empty() {
                Follow::Structural
            } else {
                Follow::Data
            };
        }
        if next.is_empty() || follows.iter().any(|t| partial(next, t)) {
            Follow::Hold
        } else {
            Follow::Data
        }
    }

    /// Where the value text before a close tag ends: without the protocol newline.
    fn value_end(&self, before: &str) -> usize {
        if self.syn.trim_value_newline && before.ends_with('\n') {
            before.len() - 1
        } else {
            before.len()
        }
    }

    /// Resolves a tentative close tag as the end of the value.
    fn first_close_ends_value(
        &mut self,
        first_end: usize,
        i: &mut usize,
        calls: &mut CallEmitter,
        out: &mut DeltaSink<'_>,
    ) {
        self.end_value(true, calls, out);
        *i += first_end;
        self.state = State::ArgStart;
    }

    fn start_param(&mut self, key: &str) {
        self.key.clear();
        self.key.push_str(key.trim());
        self.key_written = false;
        let params = self.schemas.get(&self.function);
        self.types = schema::param_types(params, &self.key);
        self.value_fresh = true;
        self.buf.clear();
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
        self.lead = 0;
        self.scanned = 0;
    }

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
            match self.state {
                State::Done => break,
                State::Function => {
                    // Whitespace before the function is left to the tool parser, so a
                    // block that is not a call can be handed back whole.
                    let ws = ws_len(rest);
                    let r = &rest[ws..];
                    if r.is_empty() {
                        break;
                    }
                    let open = self.syn.function_open.as_str();
                    if open.is_empty() {
                        if !self.block_close.is_empty() && r.starts_with(&self.block_close) {
                            self.state = State::Done;
                            break;
                        }
                        if partial(r, &self.block_close) && !final_ {
                            break;
                        }
                        i += ws;
                    } else if r.starts_with(open) {
                        i += ws + open.len();
                    } else if partial(r, open) && !final_ {
                        break;
                    } else {
                        // Not this dialect's function markup: the tool parser records it.
                        self.state = State::Done;
                        break;
                    }
                    self.began = true;
                    calls.begin_call(out);
                    self.buf.clear();
                    self.state = State::Name;
                }
                State::Name => match self.name_stops.find_or_held(rest, final_) {
                    Ok(m) => {
                        self.buf.push_str(&rest[..m.start]);
                        i += if m.tag == NAME_END { m.end } else { m.start };
                        let name = self.buf.trim().to_owned();
                        self.buf.clear();
                        if name.is_empty() {
                            self.finish(calls, out);
                            continue;
                        }
                        calls.set_name(&name, None, out);
                        self.function = name;
                        self.state = State::ArgStart;
                    }
                    Err(keep) => {
                        self.buf.push_str(&rest[..rest.len() - keep]);
                        i += rest.len() - keep;
                        break;
                    }
                },
                State::ArgStart => {
                    let ws = ws_len(rest);
                    let r = &rest[ws..];
                    if r.is_empty() {
                        i += ws;
                        break;
                    }
                    let fclose = self.syn.function_close.as_deref().unwrap_or("");
                    if r.starts_with(&self.syn.param_open) {
                        i += ws + self.syn.param_open.len();
                        self.buf.clear();
                        self.state = State::ArgName;
                    } else if !fclose.is_empty() && r.starts_with(fclose) {
                        i += ws + fclose.len();
                        self.finish(calls, out);
                    } else if !self.block_close.is_empty() && r.starts_with(&self.block_close) {
                        i += ws;
                        self.finish(calls, out);
                    } else if !final_
                        && (partial(r, &self.syn.param_open)
                            || partial(r, fclose)
                            || partial(r, &self.block_close))
                    {
                        i += ws;
                        break;
                    } else {
                        // Unexpected text between parameters ends the call here; the
                        // tool parser records the rest up to the block close.
                        i += ws;
                        self.finish(calls, out);
                    }
                }
                State::ArgName => match self.param_name_end.find_or_held(rest, final_) {
                    Ok(m) => {
                        self.buf.push_str(&rest[..m.start]);
                        i += m.end;
                        let key = std::mem::take(&mut self.buf);
                        self.start_param(&key);
                        self.state = if self.syn.value_open.is_some() {
                            State::ValueOpen
                        } else {
                            State::Value
                        };
                    }
                    Err(keep) => {
                        self.buf.push_str(&rest[..rest.len() - keep]);
                        i += rest.len() - keep;
                        break;
                    }
                },
                State::ValueOpen => {
                    let open = self.syn.value_open.as_deref().unwrap_or("");
                    let ws = ws_len(rest);
                    let r = &rest[ws..];
                    if r.is_empty() || (partial(r, open) && !final_) {
                        i += ws;
                        break;
                    }
                    // A missing value element is tolerated: the value starts here.
                    i += ws + if r.starts_with(open) { open.len() } else { 0 };
                    self.state = State::Value;
                }
                State::Value => {
                    if self.value_fresh && self.syn.trim_value_newline {
                        if rest.is_empty() {
                            break;
                        }
                        if rest.starts_with('\n') {
                            i += 1;
                            self.value_fresh = false;
                            continue;
                        }
                    }
                    // Even at the end of input a proper prefix of the close tag is
                    // held: it is markup cut short, not data, so it stays out of the
                    // value and is left to the tool parser, which records it.
                    match self.value_close.find_or_held(rest, false) {
                        Ok(m) => {
                            // The newline before the close tag is protocol (Qwen3-Coder)
                            // once the tag ends the value.
                            let v_end = self.value_end(&rest[..m.start]);
                            if v_end > 0 {
                                self.value_fresh = false;
                            }
                            self.value_text(&rest[..v_end], calls, out);
                            match self.close_follows(&rest[m.end..], final_) {
                                Follow::Structural => {
                                    self.end_value(true, calls, out);
                                    i += m.end;
                                    self.state = State::ArgStart;
                                }
                                Follow::Hold => {
                                    i += v_end;
                                    break;
                                }
                                Follow::Data => {
                                    // Perhaps `</parameter>` inside the value: decided by
                                    // what comes later (see `State::Tentative`).
                                    i += v_end;
                                    self.lead = m.start - v_end;
                                    self.scanned = m.end - v_end;
                                    self.state = State::Tentative;
                                }
                            }
                        }
                        Err(mut keep) => {
                            let mut v = &rest[..rest.len() - keep];
                            // A trailing newline may be the protocol one before the close.
                            if self.syn.trim_value_newline && !final_ && v.ends_with('\n') {
                                v = &v[..v.len() - 1];
                                keep += 1;
                            }
                            if final_ && self.syn.trim_value_newline {
                                v = v.strip_suffix('\n').unwrap_or(v);
                            }
                            if !v.is_empty() {
                                self.value_fresh = false;
                            }
                            self.value_text(v, calls, out);
                            i += rest.len() - keep;
                            break;
                        }
                    }
                }
                State::Tentative => {
                    // `rest` starts at the first close tag (and its protocol newline), held
                    // since; `scanned` bytes of it are known to decide nothing.
                    let first_end = self.lead + self.syn.value_close.len();
                    let from = self.scanned;
                    match self.value_stops.find_or_held(&rest[from..], false) {
                        Ok(m) if m.tag == 0 => {
                            let (p, e) = (from + m.start, from + m.end);
                            match self.close_follows(&rest[e..], final_) {
                                Follow::Structural => {
                                    // This one ends the value: every earlier close tag
                                    // was data.
                                    let v_end = self.value_end(&rest[..p]);
                                    self.value_text(&rest[..v_end], calls, out);
                                    self.value_fresh = false;
                                    self.end_value(true, calls, out);
                                    i += e;
                                    self.state = State::ArgStart;
                                }
                                Follow::Data => self.scanned = e,
                                Follow::Hold => {
                                    self.scanned = p;
                                    break;
                                }
                            }
                        }
                        // The function or block closed with no later value close tag
                        // (or the input ended): the first close tag ended the value and
                        // what follows it is not a value; the call ends there.
                        Ok(_) => self.first_close_ends_value(first_end, &mut i, calls, out),
                        Err(_) if final_ => {
                            self.first_close_ends_value(first_end, &mut i, calls, out)
                        }
                        Err(keep) => {
                            self.scanned = rest.len() - keep;
                            break;
                        }
                    }
                }
            }
        }
        if final_ && self.state != State::Done && self.began {
            // Input ended inside the payload: close what was opened, invent nothing.
            if self.state == State::Value {
                self.end_value(false, calls, out);
            }
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
        self.buf.len() + self.key.len() + self.function.len()
    }
}

#[cfg(test)]
mod tests {
    use crate::delta::ParsedResponse;
    use crate::request::{ToolChoice, ToolSpec};
    use crate::response::{ParserConfig, ResponseParser};
    use crate::testutil::{calls, chunking_invariant};
    use serde_json::{json, Value};

    fn config(dialect: &str) -> ParserConfig {
        let weather = json!({"type": "object", "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "detail": {"type": ["boolean", "null"]},
            "ratio": {"anyOf": [{"type": "number"}, {"type": "string"}]},
            "opts": {"type": "object"},
            "tags": {"type": "array"},
        }});
        ParserConfig {
            tool_parser: Some(dialect.into()),
            reasoning_parser: Some("qwen3".into()),
            tools: Some(vec![
                ToolSpec {
                    name: "get_weather".into(),
                    parameters: Some(weather),
                },
                ToolSpec {
                    name: "run".into(),
                    parameters: None,
                },
            ]),
            tool_choice: ToolChoice::Auto,
            ..Default::default()
        }
    }

    /// The result under whole input, every character, and every single cut point, whose
    /// arguments must be valid JSON.
    fn parse(dialect: &str, text: &str) -> ParsedResponse {
        let whole = chunking_invariant(&config(dialect), text, false);
        for call in &whole.tool_calls {
            let v: Result<Value, _> = serde_json::from_str(&call.function.arguments);
            assert!(
                v.is_ok(),
                "invalid JSON arguments {:?}",
                call.function.arguments
            );
        }
        whole
    }

    /// A value close tag is structural only when markup (the next parameter, the
    /// function close, the block close) or the end of input follows it; otherwise it is
    /// data if a later close tag is structural, and the value stays whole (a coding
    /// agent writing a parser's fixture). Without a later one, the first tag ended the
    /// value and the rest is stray. Under every chunking.
    #[test]
    fn close_tag_inside_a_value_is_data() {
        let call = |body: &str| {
            format!("</think><tool_call>\n<function=run>\n{body}</function>\n</tool_call>")
        };
        let p = |k: &str, v: &str| format!("<parameter={k}>\n{v}\n</parameter>\n");
        for (body, args) in [
            (
                p("code", "x = \"</parameter>\"\ny = 1"),
                r#"{"code": "x = \"</parameter>\"\ny = 1"}"#,
            ),
            (
                p("code", "a</parameter>b</parameter>\nc"),
                r#"{"code": "a</parameter>b</parameter>\nc"}"#,
            ),
            // markup follows: structural, two parameters
            (
                format!("{}{}", p("a", "1"), p("b", "2")),
                r#"{"a": "1", "b": "2"}"#,
            ),
            // data close tag then the next parameter after a later structural one
            (
                format!("{}{}", p("a", "x</parameter>y"), p("b", "2")),
                r#"{"a": "x</parameter>y", "b": "2"}"#,
            ),
        ] {
            let r = parse("qwen3coder", &call(&body));
            assert_eq!(calls(&r), [("run", args)], "{body:?}");
            assert_eq!(r.content, None);
        }
        // No later close tag: the first one ended the value; the call ends there and
        // the rest of the block is stray.
        let text = call("<parameter=q>\nv\n</parameter>\noops\n");
        let cfg = config("qwen3coder");
        let (r, rejected) = crate::testutil::chunking_invariant_rejected(&cfg, &text, false);
        assert_eq!(calls(&r), [("run", r#"{"q": "v"}"#)]);
        assert_eq!(rejected[0].raw, "oops\n</function>\n");
        // The same at the end of input.
        let text = "<tool_call>\n<function=run>\n<parameter=q>\nv\n</parameter>\noops";
        let (r, rejected) = crate::testutil::chunking_invariant_rejected(&cfg, text, false);
        assert_eq!(calls(&r), [("run", r#"{"q": "v"}"#)]);
        assert_eq!(rejected[0].raw, "oops");
        // GLM's markup alike.
        let text = "<tool_call>run\n<arg_key>q</arg_key><arg_value>a</arg_value>b</arg_value><arg_key>z</arg_key><arg_value>1</arg_value></tool_call>";
        let r = parse("glm47", text);
        assert_eq!(calls(&r), [("run", r#"{"q": "a</arg_value>b", "z": "1"}"#)]);
    }

    #[test]
    fn qwen3coder_typed_values_and_protocol_newlines() {
        let text = "</think>Sure.\n<tool_call>\n<function=get_weather>\n<parameter=city>\n北京 \"centre\"\n</parameter>\n<parameter=days>\n 3 \n</parameter>\n<parameter=detail>\nTrue\n</parameter>\n<parameter=ratio>\nNaN\n</parameter>\n<parameter=opts>\n{\"a\": [1, 2]}\n</parameter>\n<parameter=tags>\n[\"x\"]\n</parameter>\n</function>\n</tool_call>";
        let r = parse("qwen3coder", text);
        assert_eq!(r.content.as_deref(), Some("Sure.\n"));
        assert_eq!(
            calls(&r),
            vec![(
                "get_weather",
                "{\"city\": \"北京 \\\"centre\\\"\", \"days\": 3, \"detail\": true, \"ratio\": \"NaN\", \"opts\": {\"a\": [1, 2]}, \"tags\": [\"x\"]}"
            )]
        );
    }

    #[test]
    fn qwen3coder_values_keep_tag_like_text_and_inner_newlines() {
        let text = "<tool_call>\n<function=run>\n<parameter=code>\nprint('<parameter=y>')\n\nx = \"</function>\"\n\n</parameter>\n</function>\n</tool_call>";
        let r = parse("qwen3coder", text);
        assert_eq!(
            calls(&r),
            vec![(
                "run",
                "{\"code\": \"print('<parameter=y>')\\n\\nx = \\\"</function>\\\"\\n\"}"
            )]
        );
    }

    #[test]
    fn duplicate_parameters_and_parallel_calls_keep_their_values() {
        let text = "<tool_call>\n<function=run>\n<parameter=a>\n1\n</parameter>\n<parameter=a>\n2\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=run>\n<parameter=a>\n3\n</parameter>\n</function>\n</tool_call>";
        let r = parse("qwen3coder", text);
        assert_eq!(
            calls(&r),
            vec![
                ("run", "{\"a\": \"1\", \"a\": \"2\"}"),
                ("run", "{\"a\": \"3\"}")
            ]
        );
        assert_eq!(r.content, None);
    }

    #[test]
    fn two_functions_in_one_block() {
        let text = "<tool_call>\n<function=run>\n</function>\n<function=get_weather>\n</function>\n</tool_call>";
        let r = parse("qwen3coder", text);
        assert_eq!(calls(&r), vec![("run", "{}"), ("get_weather", "{}")]);
    }

    #[test]
    fn no_argument_call_and_unknown_function() {
        let text = "<tool_call>\n<function=nope>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call><tool_call>\n<function=run>\n</function>\n</tool_call>";
        let r = parse("qwen3coder", text);
        assert_eq!(calls(&r), vec![("run", "{}")]);
    }

    #[test]
    fn truncated_input_closes_the_object_and_invents_nothing() {
        let r = parse(
            "qwen3coder",
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar",
        );
        assert_eq!(calls(&r), vec![("get_weather", "{\"city\": \"Par\"}")]);
        let r = parse(
            "qwen3coder",
            "<tool_call>\n<function=get_weather>\n<parameter=days>\n12",
        );
        assert_eq!(calls(&r), vec![("get_weather", "{\"days\": 12}")]);
        let r = parse(
            "qwen3coder",
            "<tool_call>\n<function=get_weather>\n<parameter=ci",
        );
        assert_eq!(calls(&r), vec![("get_weather", "{}")]);
        let r = parse("qwen3coder", "<tool_call>\n<function=get_wea");
        assert!(r.tool_calls.is_empty());
    }

    #[test]
    fn glm47_and_glm45() {
        let r = parse(
            "glm47",
            "<tool_call>get_weather<arg_key>city</arg_key><arg_value> Paris\n</arg_value><arg_key>days</arg_key><arg_value>2</arg_value></tool_call>",
        );
        assert_eq!(
            calls(&r),
            vec![("get_weather", "{\"city\": \" Paris\\n\", \"days\": 2}")]
        );
        let r = parse(
            "glm45",
            "</think>I'll check.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>\n</tool_call>\n<tool_call>run\n</tool_call>",
        );
        assert_eq!(r.content.as_deref(), Some("I'll check.\n"));
        assert_eq!(
            calls(&r),
            vec![("get_weather", "{\"city\": \"Oslo\"}"), ("run", "{}")]
        );
    }

    #[test]
    fn tool_inside_reasoning_resumes_reasoning() {
        let r = parse(
            "glm47",
            "think<tool_call>run<arg_key>x</arg_key><arg_value>1</arg_value></tool_call>more</think>done",
        );
        assert_eq!(r.reasoning_content.as_deref(), Some("thinkmore"));
        assert_eq!(r.content.as_deref(), Some("done"));
        assert_eq!(calls(&r), vec![("run", "{\"x\": \"1\"}")]);
    }

    #[test]
    fn long_string_value_streams_without_growing_pending() {
        let cfg = config("qwen3coder");
        let mut p = ResponseParser::new(&cfg).unwrap();
        p.stream_chunk(
            "<tool_call>\n<function=run>\n<parameter=data>\n",
            None,
            false,
        )
        .unwrap();
        let mut max_pending = 0;
        let mut emitted = 0;
        for _ in 0..(1 << 20) / 8 {
            for (d, _) in p.stream_chunk("ab\n<x>\"\n", None, false).unwrap() {
                emitted += d.tool_calls.len();
            }
            max_pending = max_pending.max(p.pending_len());
        }
        assert!(
            max_pending <= "</parameter>".len(),
            "pending grew to {max_pending}"
        );
        assert!(emitted > 100_000, "the value did not stream");
    }
}
