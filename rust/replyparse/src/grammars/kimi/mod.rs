//! Kimi K2 tool-call sections.
//!
//! ```text
//! <|tool_calls_section_begin|>                                     (the outer block)
//! <|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "北京"}<|tool_call_end|>
//! <|tool_call_begin|>functions.search:1<|tool_call_argument_begin|>{...}<|tool_call_end|>
//! <|tool_calls_section_end|>
//! ```
//!
//! Facts (Kimi K2's tool-call guide and chat template, and the serving engines' parsers):
//! every marker is one special token; the section tags also occur in a singular spelling
//! (`<|tool_call_section_begin|>` / `<|tool_call_section_end|>`), declared as the
//! dialect's open and close aliases; the call id is `functions.NAME:N`, with `N` a
//! counter over the conversation, and the chat template renders tool results by that id,
//! so it is kept as the call id the client sees.
//!
//! One payload is one call. The id runs up to the argument marker (ids never contain
//! `<`, so it is found with one byte search and no tag prefix needs holding); surrounding
//! whitespace is trimmed. The function name is the id without its `functions.` prefix
//! and its `:N` counter — the seed's rule; a dotted name such as `mcp.read` stays whole.
//! The arguments are JSON source, streamed verbatim as they arrive and followed by a
//! [`JsonValueScanner`], so markers inside JSON strings are data; leading whitespace is
//! dropped. After the value, `<|tool_call_end|>` ends the call; anything else (the
//! section end of a call that never wrote its end marker, the next call's begin marker,
//! or stray text) ends the call too and is left to the [`ToolParser`], which closes the
//! block, starts the next payload, or records the stray text. An empty argument value
//! gives `{}`.
//!
//! The markers are the protocol's special tokens, not free text, so they are constants
//! here rather than dialect data; a future dialect of this family with other tokens
//! would move them into a syntax field like [`crate::grammars::dsml::DsmlSyntax`].
//!
//! [`ToolParser`]: crate::tool::ToolParser

pub(crate) mod constraint;

use memchr::memchr;

use crate::calls::CallEmitter;
use crate::delta::DeltaSink;
use crate::scan::json_scan::{JsonValueScanner, ScanStatus};
use crate::scan::lex::{head, ws_len, Head};
use crate::tool::PayloadGrammar;

/// Opens a call; the id follows.
pub const CALL_BEGIN: &str = "<|tool_call_begin|>";
/// Ends the id; the arguments follow.
pub const ARGUMENT_BEGIN: &str = "<|tool_call_argument_begin|>";
/// Ends a call.
pub const CALL_END: &str = "<|tool_call_end|>";
/// The namespace prefix of ids.
const ID_PREFIX: &str = "functions.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    /// Before `<|tool_call_begin|>` (whitespace was skipped by the tool parser).
    #[default]
    Start,
    /// Reading the id, up to `<|tool_call_argument_begin|>`.
    Id,
    /// Before the first non-whitespace byte of the arguments.
    ArgsStart,
    Args,
    /// After the arguments value: `<|tool_call_end|>` or whatever ends the call.
    AfterArgs,
    Done,
}

/// The function name of a call id: `functions.get_weather:0` -> `get_weather`.
pub fn function_name(id: &str) -> &str {
    let id = id.strip_prefix(ID_PREFIX).unwrap_or(id);
    match id.rsplit_once(':') {
        Some((name, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => id,
    }
}

/// See the module docs.
#[derive(Debug, Default)]
pub struct KimiGrammar {
    state: State,
    id: String,
    scan: JsonValueScanner,
    began: bool,
}

impl KimiGrammar {
    pub fn new() -> Self {
        Self::default()
    }

    fn end(&mut self, calls: &mut CallEmitter, out: &mut DeltaSink<'_>) {
        calls.end_call(out);
        self.state = State::Done;
    }
}

impl PayloadGrammar for KimiGrammar {
    fn reset(&mut self) {
        self.state = State::Start;
        self.id.clear();
        self.scan.reset();
        self.began = false;
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
                State::Start => match head(rest, CALL_BEGIN) {
                    Head::Tag => {
                        i += CALL_BEGIN.len();
                        self.began = true;
                        calls.begin_call(out);
                        self.id.clear();
                        self.state = State::Id;
                    }
                    Head::Partial => break,
                    // Not a call: the tool parser decides (section end or stray text).
                    Head::Other => {
                        self.state = State::Done;
                        break;
                    }
                },
                State::Id => {
                    let Some(lt) = memchr(b'<', rest.as_bytes()) else {
                        self.id.push_str(rest);
                        i = text.len();
                        break;
                    };
                    self.id.push_str(&rest[..lt]);
                    i += lt;
                    match head(&rest[lt..], ARGUMENT_BEGIN) {
                        Head::Tag => {
                            i += ARGUMENT_BEGIN.len();
                            let id = self.id.trim();
                            let name = function_name(id);
                            if !name.is_empty() {
                                calls.set_name(name, Some(id), out);
                            }
                            self.state = State::ArgsStart;
                        }
                        Head::Partial => break,
                        // A marker other than the argument begin: the call has no name.
                        Head::Other => self.end(calls, out),
                    }
                }
                State::ArgsStart => {
                    i += ws_len(rest);
                    if i == text.len() {
                        break;
                    }
                    self.scan.reset();
                    self.state = State::Args;
                }
                State::Args => {
                    let (n, st) = self.scan.feed(rest.as_bytes(), final_);
                    calls.push_args(&rest[..n], out);
                    i += n;
                    if st == ScanStatus::Incomplete {
                        break;
                    }
                    self.state = State::AfterArgs;
                }
                State::AfterArgs => {
                    i += ws_len(rest);
                    match head(&text[i..], CALL_END) {
                        Head::Tag => {
                            i += CALL_END.len();
                            self.end(calls, out);
                        }
                        Head::Partial => break,
                        Head::Other => self.end(calls, out),
                    }
                }
            }
        }
        if final_ && !matches!(self.state, State::Start | State::Done) {
            // Input ended inside a call: it ends with what was written; an id without
            // its argument marker may be cut, so it names nothing.
            self.end(calls, out);
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
        self.id.len()
    }

    fn payload_marker(&self) -> Option<&str> {
        Some(CALL_BEGIN)
    }

    /// Another call, or text that may still become its begin marker.
    fn starts_payload(&self, rest: &str) -> bool {
        !rest.is_empty() && !matches!(head(rest, CALL_BEGIN), Head::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::ParsedResponse;
    use crate::request::ToolChoice;
    use crate::response::{ParserConfig, ResponseParser};
    use crate::testutil::{chunking_invariant, tool_specs};

    /// Ids are the model's own here, so they take part in the comparison.
    fn parse(cfg: &ParserConfig, text: &str) -> ParsedResponse {
        chunking_invariant(cfg, text, true)
    }

    fn config(names: &[&str]) -> ParserConfig {
        ParserConfig {
            tool_parser: Some("kimi-k2".into()),
            reasoning_parser: Some("kimi_k2".into()),
            tools: Some(tool_specs(names)),
            tool_choice: ToolChoice::Auto,
            ..Default::default()
        }
    }

    fn calls(r: &ParsedResponse) -> Vec<(&str, &str, &str)> {
        r.tool_calls
            .iter()
            .map(|c| {
                (
                    c.id.as_str(),
                    c.function.name.as_str(),
                    c.function.arguments.as_str(),
                )
            })
            .collect()
    }

    fn call(id: &str, args: &str) -> String {
        format!("<|tool_call_begin|>{id}<|tool_call_argument_begin|>{args}<|tool_call_end|>")
    }

    #[test]
    fn realistic_section_under_every_chunking() {
        let cfg = config(&["get_weather", "search"]);
        let args = r#"{"city": "北京", "q": "<|tool_call_end|><|tool_calls_section_end|> \"x\"", "n": [1, {"a": null}]}"#;
        let text = format!(
            "Need data.</think>Let me check.<|tool_calls_section_begin|>\n{}\n{}\n<|tool_calls_section_end|>\nDone.",
            call("functions.get_weather:0", args),
            call("functions.search:1", "{}"),
        );
        let r = parse(&cfg, &text);
        assert_eq!(r.reasoning_content.as_deref(), Some("Need data."));
        assert_eq!(r.content.as_deref(), Some("Let me check.\nDone."));
        assert_eq!(
            calls(&r),
            vec![
                ("functions.get_weather:0", "get_weather", args),
                ("functions.search:1", "search", "{}"),
            ]
        );
    }

    #[test]
    fn singular_section_spelling() {
        let cfg = config(&["f"]);
        let text = format!(
            "</think><|tool_call_section_begin|>{}<|tool_call_section_end|>x",
            call("functions.f:0", "{\"a\": 1}")
        );
        let r = parse(&cfg, &text);
        assert_eq!(calls(&r), vec![("functions.f:0", "f", "{\"a\": 1}")]);
        assert_eq!(r.content.as_deref(), Some("x"));
    }

    #[test]
    fn call_without_end_marker_is_closed_by_the_section_end() {
        let cfg = config(&["f", "g"]);
        let text = "</think><|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{\"a\": 1}<|tool_call_begin|>functions.g:1<|tool_call_argument_begin|>{\"b\": 2<|tool_calls_section_end|>after";
        let r = parse(&cfg, text);
        assert_eq!(
            calls(&r),
            vec![
                ("functions.f:0", "f", "{\"a\": 1}"),
                ("functions.g:1", "g", "{\"b\": 2"),
            ]
        );
        assert_eq!(r.content.as_deref(), Some("after"));
    }

    #[test]
    fn truncated_input() {
        let cfg = config(&["f", "g"]);
        let done = call("functions.f:0", "{}");
        for (tail, expect) in [
            ("", vec![("functions.f:0", "f", "{}")]),
            (
                "<|tool_call_begin|>functions.g:1<|tool_call_argument_begin|>{\"q\": \"ab",
                vec![
                    ("functions.f:0", "f", "{}"),
                    ("functions.g:1", "g", "{\"q\": \"ab"),
                ],
            ),
            (
                "<|tool_call_begin|>functions.g:1<|tool_call_argument_begin|>",
                vec![("functions.f:0", "f", "{}"), ("functions.g:1", "g", "{}")],
            ),
            // An id cut before its argument marker names nothing.
            (
                "<|tool_call_begin|>functions.g:1",
                vec![("functions.f:0", "f", "{}")],
            ),
            ("<|tool_call_be", vec![("functions.f:0", "f", "{}")]),
        ] {
            let text = format!("</think><|tool_calls_section_begin|>{done}{tail}");
            let r = parse(&cfg, &text);
            assert_eq!(calls(&r), expect, "{tail:?}");
            assert_eq!(r.content, None, "{tail:?}");
        }
    }

    #[test]
    fn names_from_ids() {
        assert_eq!(function_name("functions.get_weather:0"), "get_weather");
        assert_eq!(function_name("functions.mcp.read:12"), "mcp.read");
        assert_eq!(function_name("get_weather:3"), "get_weather");
        assert_eq!(function_name("functions.f"), "f");
        assert_eq!(function_name("functions.f:x"), "f:x");
    }

    #[test]
    fn unknown_names_are_dropped_and_indices_stay_contiguous() {
        let cfg = config(&["f"]);
        let text = format!(
            "</think><|tool_calls_section_begin|>{}{}{}<|tool_calls_section_end|>",
            call("functions.rm:0", "{\"p\": \"/\"}"),
            call("functions.f:1", "{}"),
            call(" functions.f:2 ", " {\"x\": 1} "),
        );
        let r = parse(&cfg, &text);
        assert_eq!(
            calls(&r),
            vec![
                ("functions.f:1", "f", "{}"),
                ("functions.f:2", "f", "{\"x\": 1}")
            ]
        );
        let mut p = ResponseParser::new(&cfg).unwrap();
        p.parse_complete(&text, None).unwrap();
        assert_eq!(p.rejected_calls()[0].name.as_deref(), Some("rm"));
        assert_eq!(p.rejected_calls()[0].raw, "{\"p\": \"/\"}");
    }

    #[test]
    fn stray_text_after_arguments_is_recorded() {
        let cfg = config(&["f"]);
        let text = "</think><|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{} oops<|tool_call_end|><|tool_calls_section_end|>z";
        let r = parse(&cfg, text);
        assert_eq!(calls(&r), vec![("functions.f:0", "f", "{}")]);
        assert_eq!(r.content.as_deref(), Some("z"));
        let mut p = ResponseParser::new(&cfg).unwrap();
        p.parse_complete(text, None).unwrap();
        assert_eq!(p.rejected_calls()[0].raw, "oops<|tool_call_end|>");
    }

    #[test]
    fn pending_is_bounded_while_streaming_arguments() {
        let cfg = config(&["f"]);
        let mut p = ResponseParser::new(&cfg).unwrap();
        p.stream_chunk(
            "</think><|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{\"q\": \"",
            None,
            false,
        )
        .unwrap();
        for _ in 0..20_000 {
            p.stream_chunk("ab<|tool_call_end|>", None, false).unwrap();
            assert_eq!(p.pending_len(), 0);
        }
    }
}
