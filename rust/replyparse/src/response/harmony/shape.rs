//! What a Harmony header looks like, checked one character at a time.
//!
//! A real header is a handful of words between special tokens:
//!
//! ```text
//! <|start|>ROLE[ to=RECIPIENT]<|channel|>CHANNEL[ to=RECIPIENT][ TYPE][<|constrain|>TYPE]<|message|>
//! ```
//!
//! The parser trusts a header it is already in (after `<|start|>`, or at the start of
//! the output, right after the prompt's `<|start|>assistant`) and reads it leniently.
//! This check is for the two places where a header is only *possible*, so prose must not
//! pass for one:
//! - a `<|start|>` or `<|channel|>` inside a message body opens a new message only if a
//!   header of this shape follows up to `<|message|>` (the model left out `<|end|>`);
//!   anything else is body text;
//! - text before the first tag of a header that no `<|start|>` opened (the role part at
//!   the start of the output, ` to=functions.f`) is a role part only in this shape;
//!   otherwise it is text the model wrote outside any message.
//!
//! Words are names (alphanumerics and `_ - . =`: OpenAI function names are
//! `[A-Za-z0-9_-]`, recipients `functions.NAME`, `browser.search`), so sentences, punctuation, JSON
//! and newlines fail at once. Spaces: one between words, and one more beside a special
//! token, which is how an engine decodes special tokens with
//! `spaces_between_special_tokens=True` (`<|channel|> commentary to=functions.f  <|constrain|> json <|message|>`:
//! Hugging Face's decoder joins the runs of text and special tokens with `" "`, doubling
//! a space the model wrote before a special token). The whole header is bounded by
//! [`super::MAX_HEADER_BYTES`].
//!
//! Checking is incremental (each character once) and a violation is reported at the
//! character or tag where it becomes certain, so the decision, and where text is given
//! back, depends only on the text, never on where chunks end.

use super::MAX_HEADER_BYTES;

/// The part of a header being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Seg {
    /// Text before the first tag of a header no `<|start|>` opened: empty, `ROLE`,
    /// `to=R` or `ROLE to=R`.
    RolePart,
    /// After `<|start|>`: `ROLE` then optionally `to=R`.
    Start,
    /// After `<|channel|>`: `CHANNEL`, then optionally `to=R` and a content type.
    Channel,
    /// After `<|constrain|>`: exactly one `TYPE`.
    Constrain,
}

/// The tags a header may contain after its first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HeaderTag {
    Channel,
    Constrain,
}

/// An incremental header-shape check; see the module docs.
#[derive(Debug, Clone)]
pub(super) struct Shape {
    seg: Seg,
    /// The segment's main word (role, channel or type) has been read.
    main: bool,
    /// A `to=R` word has been read in this segment.
    to: bool,
    /// A channel segment's content-type word has been read.
    typ: bool,
    /// Characters of the current word (0: between words).
    word_len: usize,
    /// How many characters of `to=` the current word starts with; `u8::MAX` once it
    /// cannot start with it.
    to_matched: u8,
    /// The current run of spaces.
    spaces: u8,
    /// Bytes checked, tags included.
    len: usize,
}

/// The shape check failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct NotAHeader;

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '=')
}

impl Shape {
    /// A check starting in `seg`; `tag_len` is the length of the tag that opened it
    /// (0 for a role part).
    pub(super) fn new(seg: Seg, tag_len: usize) -> Self {
        Shape {
            seg,
            main: false,
            to: false,
            typ: false,
            word_len: 0,
            to_matched: 0,
            spaces: 0,
            len: tag_len,
        }
    }

    /// Checks `text` (which holds no tag). `Err(at)`: the byte offset in `text` where
    /// the shape fails; the check must not be fed again after that.
    pub(super) fn push_text(&mut self, text: &str) -> Result<(), usize> {
        for (at, c) in text.char_indices() {
            self.len += c.len_utf8();
            if self.len > MAX_HEADER_BYTES {
                return Err(at);
            }
            if c == ' ' {
                if self.word_len > 0 {
                    self.end_word().map_err(|NotAHeader| at)?;
                }
                self.spaces += 1;
                // One between words plus one beside a special token, at most.
                if self.spaces > 2 {
                    return Err(at);
                }
            } else if is_word_char(c) {
                if self.word_len == 0 {
                    // A word after a word needs exactly one space between them (two
                    // only appear beside a special token).
                    if (self.main || self.to || self.typ) && self.spaces != 1 {
                        return Err(at);
                    }
                    self.spaces = 0;
                    self.to_matched = 0;
                }
                if usize::from(self.to_matched) == self.word_len && self.word_len < 3 {
                    self.to_matched = if c == ['t', 'o', '='][self.word_len] {
                        self.to_matched + 1
                    } else {
                        u8::MAX
                    };
                }
                self.word_len += 1;
            } else {
                return Err(at);
            }
        }
        Ok(())
    }

    /// A tag follows the checked text: `Channel` after a start segment, `Constrain`
    /// after a channel segment; anything else is not a header.
    pub(super) fn push_tag(&mut self, tag: HeaderTag, tag_len: usize) -> Result<(), NotAHeader> {
        self.end_segment()?;
        let next = match (self.seg, tag) {
            (Seg::Start, HeaderTag::Channel) => Seg::Channel,
            (Seg::Channel, HeaderTag::Constrain) => Seg::Constrain,
            _ => return Err(NotAHeader),
        };
        *self = Shape::new(next, self.len + tag_len);
        if self.len > MAX_HEADER_BYTES {
            return Err(NotAHeader);
        }
        Ok(())
    }

    /// `<|message|>` follows: whether the header is complete.
    pub(super) fn complete(&mut self) -> bool {
        self.end_segment().is_ok()
    }

    /// The text checked so far is a whole role part (see [`Seg::RolePart`]).
    pub(super) fn role_part(text: &str) -> bool {
        let mut s = Shape::new(Seg::RolePart, 0);
        s.push_text(text).is_ok() && s.end_segment().is_ok()
    }

    /// Ends the current segment: its last word is classified and its main word, where
    /// required, is present.
    fn end_segment(&mut self) -> Result<(), NotAHeader> {
        if self.word_len > 0 {
            self.end_word()?;
        }
        match self.seg {
            Seg::RolePart => Ok(()),
            _ if self.main => Ok(()),
            _ => Err(NotAHeader),
        }
    }

    /// Classifies the word just read against the segment's slots.
    fn end_word(&mut self) -> Result<(), NotAHeader> {
        let is_to = self.to_matched == 3;
        if is_to && self.word_len == 3 {
            return Err(NotAHeader); // `to=` with no recipient
        }
        self.word_len = 0;
        self.spaces = 0;
        let slot = if is_to {
            // A recipient follows the main word, or stands alone in a role part.
            match self.seg {
                Seg::RolePart => &mut self.to,
                Seg::Start | Seg::Channel if self.main => &mut self.to,
                _ => return Err(NotAHeader),
            }
        } else {
            match self.seg {
                Seg::RolePart if !self.to => &mut self.main,
                Seg::RolePart => return Err(NotAHeader),
                _ if !self.main => &mut self.main,
                Seg::Channel => &mut self.typ,
                _ => return Err(NotAHeader),
            }
        };
        if *slot {
            return Err(NotAHeader);
        }
        *slot = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks a whole header given as (tag, text) segments: the first is the opening
    /// segment; `true` when `<|message|>` may follow.
    fn header(open: Seg, parts: &[(Option<HeaderTag>, &str)]) -> bool {
        let mut s = Shape::new(open, 9);
        for (tag, text) in parts {
            if let Some(t) = tag {
                if s.push_tag(*t, 11).is_err() {
                    return false;
                }
            }
            if s.push_text(text).is_err() {
                return false;
            }
        }
        s.complete()
    }

    const CH: Option<HeaderTag> = Some(HeaderTag::Channel);
    const CO: Option<HeaderTag> = Some(HeaderTag::Constrain);

    #[test]
    fn real_headers_pass_joined_and_spaced() {
        assert!(header(Seg::Start, &[(None, "assistant"), (CH, "analysis")]));
        assert!(header(
            Seg::Start,
            &[
                (None, "assistant"),
                (CH, "commentary to=functions.get_weather "),
                (CO, "json")
            ]
        ));
        assert!(header(
            Seg::Start,
            &[(None, "assistant to=functions.f"), (CH, "commentary json")]
        ));
        assert!(header(Seg::Channel, &[(None, "final")]));
        // As decoded with spaces_between_special_tokens=True.
        assert!(header(
            Seg::Start,
            &[
                (None, " assistant "),
                (CH, " commentary to=functions.f  "),
                (CO, " json ")
            ]
        ));
        assert!(header(Seg::Channel, &[(None, " final ")]));
    }

    #[test]
    fn prose_fails() {
        for text in [
            "this is prose",
            "final answer: yes",
            "final\n",
            "{\"a\": 1}",
            "final  word", // two spaces between words
            "   final",    // three spaces
            "to=functions.f",
            "final to= ",
            "final to=a to=b",
            "final json extra",
            "",
            " ",
        ] {
            assert!(!header(Seg::Channel, &[(None, text)]), "{text:?}");
        }
        // A start segment needs a role; the role is not a recipient.
        assert!(!header(Seg::Start, &[(None, "")]));
        assert!(!header(Seg::Start, &[(None, "to=functions.f")]));
        assert!(!header(Seg::Start, &[(None, "assistant json")]));
        // Tags out of order.
        assert!(!header(Seg::Start, &[(None, "assistant"), (CO, "json")]));
        assert!(!header(Seg::Channel, &[(None, "final"), (CH, "final")]));
        assert!(!header(Seg::Channel, &[(None, "final"), (CO, "")]));
        assert!(!header(Seg::Channel, &[(None, "final"), (CO, "json x")]));
        // Bounded.
        let long = "x".repeat(MAX_HEADER_BYTES);
        assert!(!header(Seg::Channel, &[(None, &long)]));
    }

    #[test]
    fn violations_are_reported_where_they_become_certain() {
        let mut s = Shape::new(Seg::Channel, 11);
        assert_eq!(s.push_text("final answer: yes"), Err(12)); // the ':'
        let mut s = Shape::new(Seg::Channel, 11);
        assert_eq!(s.push_text("a b c d"), Err(5)); // the space after the third word
        let mut s = Shape::new(Seg::Channel, 11);
        assert_eq!(s.push_text("final\nx"), Err(5));
        // Fed in pieces, the same place.
        let mut s = Shape::new(Seg::Channel, 11);
        assert_eq!(s.push_text("a b"), Ok(()));
        assert_eq!(s.push_text(" c d"), Err(2));
    }

    #[test]
    fn role_parts() {
        for ok in [
            "",
            " ",
            " to=functions.f",
            " to=functions.f ",
            "functions.search",
            "assistant",
            " assistant to=functions.f ",
        ] {
            assert!(Shape::role_part(ok), "{ok:?}");
        }
        for bad in [
            "Hello world",
            "Sure! Here it is:",
            "to=a to=b",
            "to=functions.f assistant",
            "line\n",
        ] {
            assert!(!Shape::role_part(bad), "{bad:?}");
        }
    }
}
