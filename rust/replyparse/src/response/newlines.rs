//! Escaped-newline recovery: a reasoning dialect's
//! [`escaped_newlines`](crate::ReasoningDialect::escaped_newlines) rule, for models whose
//! tokenizer decodes a newline as the two characters `\` and `n` (MiniCPM-V 4.6 / 4.7,
//! as vLLM's `minicpmv` parser reads them).
//!
//! In reasoning and content (never in tool calls), outside code and math, `\n`, `\r` and
//! `\r\n` written with one backslash are a newline. Left as written: a run of two or more
//! backslashes (and the character after it), and everything inside inline code
//! (`` `...` ``), a code fence (```` ```...``` ````), math (`$...$`, `$$...$$`, `\(...\)`,
//! `\[...\]`), up to the span's closer. Each channel is read as one text (a span opened
//! in the reasoning stays open in the next reasoning text), but an escape is never
//! completed across a change of channel: the text a channel holds back is released, as
//! written, when another channel's delta comes.
//!
//! Streaming-safe and bounded: a chunk that ends where the rule cannot decide yet (a
//! backslash, `\r`, `\r\`, one or two backticks, a `$`, or the start of the open span's
//! closer) holds at most those three bytes back until the next chunk, so the result does
//! not depend on where chunks end. The state is the open span's kind, whether a run of
//! backslashes goes on, and the held bytes.

use std::mem;

use memchr::{memchr, memchr3};

use crate::delta::{Channel, DeltaMessage, StreamItem};
use crate::dialect::ReasoningDialect;

/// A span whose text is left as written, by its closer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Span {
    /// `` ` `` ... `` ` ``
    Tick,
    /// ```` ``` ```` ... ```` ``` ````
    Fence,
    /// `$` ... `$`
    Dollar,
    /// `$$` ... `$$`
    Dollars,
    /// `\(` ... `\)`
    Paren,
    /// `\[` ... `\]`
    Bracket,
}

impl Span {
    fn closer(self) -> &'static str {
        match self {
            Span::Tick => "`",
            Span::Fence => "```",
            Span::Dollar => "$",
            Span::Dollars => "$$",
            Span::Paren => "\\)",
            Span::Bracket => "\\]",
        }
    }
}

/// The recovery of one channel's text.
#[derive(Debug, Default)]
struct Text {
    /// The span the text is in, if any.
    span: Option<Span>,
    /// A run of two or more backslashes goes on: backslashes are copied.
    run: bool,
    /// Bytes held back (at most 3) until the next text decides them.
    held: String,
}

impl Text {
    /// The recovered form of `input` after what is held; `end` releases everything
    /// (the channel's text ended here).
    fn feed(&mut self, input: &str, end: bool, out: &mut String) {
        let joined;
        let text: &str = if self.held.is_empty() {
            input
        } else {
            joined = mem::take(&mut self.held) + input;
            &joined
        };
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if let Some(span) = self.span {
                let closer = span.closer();
                let Some(j) = memchr(closer.as_bytes()[0], &b[i..]).map(|j| i + j) else {
                    out.push_str(&text[i..]);
                    return;
                };
                out.push_str(&text[i..j]);
                let rest = &text[j..];
                if rest.starts_with(closer) {
                    out.push_str(closer);
                    self.span = None;
                    i = j + closer.len();
                } else if !end && closer.starts_with(rest) {
                    self.held.push_str(rest);
                    return;
                } else {
                    out.push_str(&rest[..1]);
                    i = j + 1;
                }
                continue;
            }
            if self.run {
                if b[i] == b'\\' {
                    out.push('\\');
                    i += 1;
                    continue;
                }
                self.run = false;
            }
            let Some(j) = memchr3(b'`', b'$', b'\\', &b[i..]).map(|j| i + j) else {
                out.push_str(&text[i..]);
                return;
            };
            out.push_str(&text[i..j]);
            let rest = &text[j..];
            let (keep, used, span) = match b[j] {
                b'`' if !end && (rest == "`" || rest == "``") => (None, 0, None),
                b'`' if rest.starts_with("```") => (Some("```"), 3, Some(Span::Fence)),
                b'`' => (Some("`"), 1, Some(Span::Tick)),
                b'$' if !end && rest == "$" => (None, 0, None),
                b'$' if rest.starts_with("$$") => (Some("$$"), 2, Some(Span::Dollars)),
                b'$' => (Some("$"), 1, Some(Span::Dollar)),
                _ if rest.starts_with("\\\\") => {
                    self.run = true;
                    (Some("\\\\"), 2, None)
                }
                _ if !end && matches!(rest, "\\" | "\\r" | "\\r\\") => (None, 0, None),
                _ if rest.starts_with("\\r\\n") => (Some("\n"), 4, None),
                _ if rest.starts_with("\\n") || rest.starts_with("\\r") => (Some("\n"), 2, None),
                _ if rest.starts_with("\\(") => (Some("\\("), 2, Some(Span::Paren)),
                _ if rest.starts_with("\\[") => (Some("\\["), 2, Some(Span::Bracket)),
                _ => (Some("\\"), 1, None),
            };
            let Some(keep) = keep else {
                // Undecided: the rest (at most three bytes) waits for the next text.
                self.held.push_str(rest);
                return;
            };
            out.push_str(keep);
            self.span = span.or(self.span);
            i = j + used;
        }
    }
}

/// The recovery of a response's reasoning and content.
#[derive(Debug, Default)]
pub(super) struct NewlineRecovery {
    reasoning: Text,
    content: Text,
}

impl NewlineRecovery {
    /// The recovery a response parser runs for reasoning dialect `d`: one when `d`
    /// declares [`escaped_newlines`](ReasoningDialect::escaped_newlines).
    pub(super) fn of(d: Option<&ReasoningDialect>) -> Option<Self> {
        d.filter(|d| d.escaped_newlines).map(|_| Self::default())
    }

    /// Bytes held back.
    pub(super) fn held(&self) -> usize {
        self.reasoning.held.len() + self.content.held.len()
    }

    /// Rewrites the deltas of one chunk, `items[start..]`, in place: their reasoning
    /// and content recovered, what a channel held released before another channel's
    /// delta (and everything at the `final_` chunk), deltas left empty removed.
    pub(super) fn apply(&mut self, items: &mut Vec<StreamItem>, start: usize, final_: bool) {
        if items.len() == start && !final_ && self.held() == 0 {
            return;
        }
        let chunk: Vec<StreamItem> = items.drain(start..).collect();
        let mut out = Out { items, start };
        for (d, flag) in chunk {
            match d.channel() {
                Channel::Tool => {
                    self.release(Channel::Tool, &mut out);
                    out.items.push((d, flag));
                }
                ch => {
                    self.release(ch, &mut out);
                    let text = match ch {
                        Channel::Reasoning => d.reasoning_content.unwrap_or_default(),
                        _ => d.content.unwrap_or_default(),
                    };
                    let mut s = String::with_capacity(text.len());
                    self.text(ch).feed(&text, false, &mut s);
                    out.text(ch, s);
                }
            }
        }
        if final_ {
            self.release(Channel::Tool, &mut out);
        }
    }

    fn text(&mut self, ch: Channel) -> &mut Text {
        match ch {
            Channel::Reasoning => &mut self.reasoning,
            _ => &mut self.content,
        }
    }

    /// Releases what the channels other than `next` hold: their text ends here.
    fn release(&mut self, next: Channel, out: &mut Out<'_>) {
        for ch in [Channel::Reasoning, Channel::Content] {
            if ch != next && !self.text(ch).held.is_empty() {
                let mut s = String::new();
                self.text(ch).feed("", true, &mut s);
                out.text(ch, s);
            }
        }
    }
}

/// The rewritten deltas of one chunk: text on the channel of the last one joins it.
struct Out<'a> {
    items: &'a mut Vec<StreamItem>,
    start: usize,
}

impl Out<'_> {
    fn text(&mut self, ch: Channel, s: String) {
        if s.is_empty() {
            return;
        }
        if self.items.len() > self.start {
            if let Some((last, _)) = self.items.last_mut() {
                let slot = match (ch, last.channel()) {
                    (Channel::Reasoning, Channel::Reasoning) => last.reasoning_content.as_mut(),
                    (Channel::Content, Channel::Content) => last.content.as_mut(),
                    _ => None,
                };
                if let Some(t) = slot {
                    t.push_str(&s);
                    return;
                }
            }
        }
        let mut d = DeltaMessage::default();
        match ch {
            Channel::Reasoning => d.reasoning_content = Some(s),
            _ => d.content = Some(s),
        }
        self.items.push((d, false));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(text: &str) -> String {
        let mut out = String::new();
        Text::default().feed(text, true, &mut out);
        out
    }

    /// vLLM's own example (`tests/parser/engine/test_minicpmv_reasoning.py`,
    /// `test_recover_newlines`).
    #[test]
    fn the_rule_on_the_peers_example() {
        let text = "first\\nsecond\\rthird\\r\\nfourth `code\\nvalue` \
                    ```python\\nvalue = '\\\\n'\\n``` \
                    $x\\ny$ $$x\\ny$$ \\(x\\ny\\) \\[x\\ny\\] escaped \\\\n";
        let want = "first\nsecond\nthird\nfourth `code\\nvalue` \
                    ```python\\nvalue = '\\\\n'\\n``` \
                    $x\\ny$ $$x\\ny$$ \\(x\\ny\\) \\[x\\ny\\] escaped \\\\n";
        assert_eq!(whole(text), want);
        assert_eq!(whole("a\\"), "a\\");
        assert_eq!(whole("a\\r"), "a\n");
        assert_eq!(whole("`"), "`");
        assert_eq!(whole("\\x \\\\\\n"), "\\x \\\\\\n");
    }

    #[test]
    fn any_split_gives_the_whole_result() {
        let texts = [
            "first\\nsecond `code\\nvalue` $x\\ny$ ```text\\nvalue\\n``` last\\r\\nline",
            "\\\\\\n \\\\n \\n\\r\\\\r\\n$$a\\nb$ $\\n$$ \\(x\\) \\[y\\]\\n``a``\\n",
            "\\",
            "\\r\\",
            "``",
            "$",
            "a\\)",
        ];
        for text in texts {
            let want = whole(text);
            for cut in (0..=text.len()).filter(|&c| text.is_char_boundary(c)) {
                let mut t = Text::default();
                let mut out = String::new();
                t.feed(&text[..cut], false, &mut out);
                assert!(t.held.len() <= 3, "{text:?} at {cut}: held {:?}", t.held);
                t.feed(&text[cut..], false, &mut out);
                t.feed("", true, &mut out);
                assert_eq!(out, want, "{text:?} cut at {cut}");
            }
            let mut t = Text::default();
            let mut out = String::new();
            for (i, c) in text.char_indices() {
                t.feed(&text[i..i + c.len_utf8()], false, &mut out);
            }
            t.feed("", true, &mut out);
            assert_eq!(out, want, "{text:?} by characters");
        }
    }

    #[test]
    fn a_channel_switch_releases_the_held_text() {
        let mut r = NewlineRecovery::default();
        let mut items = vec![(
            DeltaMessage {
                reasoning_content: Some("why\\".into()),
                ..Default::default()
            },
            false,
        )];
        r.apply(&mut items, 0, false);
        assert_eq!(items[0].0.reasoning_content.as_deref(), Some("why"));
        assert_eq!(r.held(), 1);
        let mut items = vec![(
            DeltaMessage {
                content: Some("nope\\".into()),
                ..Default::default()
            },
            false,
        )];
        r.apply(&mut items, 0, false);
        let got: Vec<_> = items
            .iter()
            .map(|(d, _)| (d.reasoning_content.clone(), d.content.clone()))
            .collect();
        assert_eq!(
            got,
            [(Some("\\".into()), None), (None, Some("nope".into()))],
            "the reasoning's backslash is released as written before the content"
        );
        let mut items = Vec::new();
        r.apply(&mut items, 0, true);
        assert_eq!(items[0].0.content.as_deref(), Some("\\"));
        assert_eq!(r.held(), 0);
    }
}
