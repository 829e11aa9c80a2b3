//! A lexical, incremental scanner that finds where one JSON value ends.
//!
//! It tracks container depth, strings and escapes, and nothing else: it never builds
//! the value. That keeps the model's bytes as written (duplicate keys, spacing, number
//! spelling), avoids a second copy of large values, and lets the caller stream the
//! consumed source at once. State survives between calls, so every byte is looked at
//! once however the text is chunked.
//!
//! Invariants:
//! - `feed` consumes either the whole input (the value continues) or stops exactly after
//!   the value's last byte (`Complete`) or before a byte that cannot belong to it
//!   (`Invalid`). Consumed bytes are never offered again.
//! - Depth is a counter, not recursion: any nesting depth is handled in constant stack.
//! - Only `<` and `` ` `` are rejected outside strings. `<` is the first byte of nearly
//!   every protocol tag this crate knows and `` ` `` of a markdown fence (DeepSeek V3's
//!   closing ```` ``` ````, xLAM's fenced block), and neither is a JSON token, so
//!   malformed arguments end at the tag or fence instead of swallowing it; other
//!   oddities (single quotes, bare words) are kept as written, because the parser
//!   preserves data rather than validating it.

use memchr::memchr2;

use crate::scan::swar;

/// The next quote or backslash.
///
/// In code strings an escape comes every dozen bytes or so (`\n`, `\"`), and token-sized
/// chunks are the common case while streaming; for such short distances entering the
/// vectorised search costs more than the search. So the first `HEAD` bytes are checked
/// a word at a time (`swar`), and only a longer run goes to `memchr2`.
#[inline]
fn find_quote_or_backslash(hay: &[u8]) -> Option<usize> {
    const HEAD: usize = 32;
    let head = &hay[..hay.len().min(HEAD)];
    let found = swar::find(
        head,
        |x| swar::eq(x, b'"') | swar::eq(x, b'\\'),
        |b| b == b'"' || b == b'\\',
    );
    if found.is_some() || hay.len() <= HEAD {
        return found;
    }
    memchr2(b'"', b'\\', &hay[HEAD..]).map(|p| p + HEAD)
}

/// Outcome of feeding one slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanStatus {
    /// The value continues past the input.
    Incomplete,
    /// The value ended; the consumed count includes its last byte.
    Complete,
    /// The input holds a byte that cannot continue the value; the consumed count stops
    /// before it.
    Invalid,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the first byte of the value (leading whitespace is skipped).
    Start,
    /// Inside a string. `root` is true when the string is the whole value.
    Str {
        escaped: bool,
        root: bool,
    },
    /// Inside an object or array, outside any string.
    Container,
    /// A bare number or literal as the whole value.
    Scalar,
    Done,
}

/// A lexical, incremental scanner that finds where one JSON value ends in streamed text
/// (the invariants are in this module's docs, `scan/json_scan.rs`).
#[derive(Debug, Clone)]
pub struct JsonValueScanner {
    state: State,
    depth: u64,
    /// The value is a bare scalar that only the end of input ended (`12` may have been
    /// `123`): a caller applying the cut-output rule treats it as unfinished.
    ended_by_input: bool,
}

impl Default for JsonValueScanner {
    fn default() -> Self {
        Self::new()
    }
}

const fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

const fn is_scalar_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')
}

/// Bytes that matter outside strings inside a container; everything else is skipped.
static CONTAINER_STOP: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'{' as usize] = true;
    t[b'[' as usize] = true;
    t[b'}' as usize] = true;
    t[b']' as usize] = true;
    t[b'<' as usize] = true;
    t[b'`' as usize] = true;
    t
};

impl JsonValueScanner {
    /// A scanner before the first byte of a value.
    pub fn new() -> Self {
        JsonValueScanner {
            state: State::Start,
            depth: 0,
            ended_by_input: false,
        }
    }

    /// Forgets everything, ready for a new value.
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// Whether the value ended only because the input did: a bare scalar running to
    /// the end of the final input, which more text could have continued.
    pub fn ended_by_end_of_input(&self) -> bool {
        self.ended_by_input
    }

    /// Scans `input`, the text right after what was consumed before. `final_` says no
    /// more text follows, which completes a bare scalar value.
    ///
    /// Returns the number of bytes consumed and the status.
    pub fn feed(&mut self, input: &[u8], final_: bool) -> (usize, ScanStatus) {
        let mut i = 0;
        let n = input.len();
        loop {
            match self.state {
                State::Done => return (i, ScanStatus::Complete),
                State::Start => {
                    while i < n && is_ws(input[i]) {
                        i += 1;
                    }
                    if i == n {
                        return (i, ScanStatus::Incomplete);
                    }
                    match input[i] {
                        b'{' | b'[' => {
                            self.depth = 1;
                            self.state = State::Container;
                        }
                        b'"' => {
                            self.state = State::Str {
                                escaped: false,
                                root: true,
                            }
                        }
                        b if is_scalar_byte(b) => self.state = State::Scalar,
                        _ => return (i, ScanStatus::Invalid),
                    }
                    i += 1;
                }
                State::Str { escaped, root } => {
                    if escaped {
                        if i == n {
                            return (i, ScanStatus::Incomplete);
                        }
                        i += 1;
                    }
                    // Bulk skip to the next quote or backslash: strings dominate real
                    // arguments, and this is where the scanner spends its time.
                    match find_quote_or_backslash(&input[i..]) {
                        None => {
                            self.state = State::Str {
                                escaped: false,
                                root,
                            };
                            return (n, ScanStatus::Incomplete);
                        }
                        Some(off) => {
                            i += off;
                            if input[i] == b'\\' {
                                i += 1;
                                self.state = State::Str {
                                    escaped: true,
                                    root,
                                };
                            } else {
                                i += 1;
                                if root {
                                    self.state = State::Done;
                                    return (i, ScanStatus::Complete);
                                }
                                self.state = State::Container;
                            }
                        }
                    }
                }
                State::Container => {
                    while i < n && !CONTAINER_STOP[input[i] as usize] {
                        i += 1;
                    }
                    if i == n {
                        return (i, ScanStatus::Incomplete);
                    }
                    match input[i] {
                        b'"' => {
                            self.state = State::Str {
                                escaped: false,
                                root: false,
                            }
                        }
                        b'{' | b'[' => self.depth += 1,
                        b'}' | b']' => {
                            self.depth -= 1;
                            if self.depth == 0 {
                                self.state = State::Done;
                                return (i + 1, ScanStatus::Complete);
                            }
                        }
                        _ => return (i, ScanStatus::Invalid),
                    }
                    i += 1;
                }
                State::Scalar => {
                    while i < n && is_scalar_byte(input[i]) {
                        i += 1;
                    }
                    if i < n || final_ {
                        self.ended_by_input = i == n;
                        self.state = State::Done;
                        return (i, ScanStatus::Complete);
                    }
                    return (i, ScanStatus::Incomplete);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` in chunks of `size` and returns (end offset, status).
    fn scan_chunked(text: &str, size: usize) -> (usize, ScanStatus) {
        let b = text.as_bytes();
        let mut sc = JsonValueScanner::new();
        let mut pos = 0;
        while pos < b.len() {
            let end = (pos + size).min(b.len());
            let final_ = end == b.len();
            let (used, st) = sc.feed(&b[pos..end], final_);
            pos += used;
            if st != ScanStatus::Incomplete {
                return (pos, st);
            }
            // Incomplete means everything offered was consumed.
            assert_eq!(pos, end);
        }
        (pos, ScanStatus::Incomplete)
    }

    const SIZES: [usize; 6] = [1, 4, 8, 16, 256, usize::MAX];

    #[test]
    fn stops_at_end_of_root_value_at_every_chunk_size() {
        let cases = [
            (r#"{"a": 1} trailing"#, 8),
            (r#"  [1, [2, {"x": "]}"}]]</tool_call>"#, 23),
            (r#""a \" quoted \\" rest"#, 16),
            (r#"{"k": "va\\"}, {"#, 13),
            ("-12.5e3,", 7),
            ("true}", 4),
            (r#"{"u": "北京 \u00e9 ☃"}x"#, 26),
        ];
        for (text, end) in cases {
            for size in SIZES {
                let (pos, st) = scan_chunked(text, size.min(text.len()));
                assert_eq!(st, ScanStatus::Complete, "{text:?} size {size}");
                assert_eq!(pos, end, "{text:?} size {size}");
            }
        }
    }

    #[test]
    fn root_scalar_needs_final_or_delimiter() {
        let mut sc = JsonValueScanner::new();
        assert_eq!(sc.feed(b"123", false), (3, ScanStatus::Incomplete));
        assert_eq!(sc.feed(b"4", true), (1, ScanStatus::Complete));
    }

    /// A markdown fence after cut arguments (DeepSeek V3's `{"a": 1` then "```") ends
    /// them; inside a string a backtick is data.
    #[test]
    fn fence_outside_string_is_a_boundary() {
        let text = "{\"a\": [1\n```<end>";
        for size in SIZES {
            let (pos, st) = scan_chunked(text, size.min(text.len()));
            assert_eq!((pos, st), (9, ScanStatus::Invalid), "size {size}");
        }
        let text = "{\"a\": \"```\"}```";
        for size in SIZES {
            assert_eq!(
                scan_chunked(text, size.min(text.len())),
                (text.len() - 3, ScanStatus::Complete),
                "size {size}"
            );
        }
    }

    #[test]
    fn protocol_tag_outside_string_is_a_boundary() {
        let text = r#"{"a": 1</tool_call>"#;
        for size in SIZES {
            let (pos, st) = scan_chunked(text, size.min(text.len()));
            assert_eq!((pos, st), (7, ScanStatus::Invalid), "size {size}");
        }
        // Inside a string the same bytes are data.
        let text = r#"{"a": "</tool_call>"}"#;
        assert_eq!(scan_chunked(text, 3), (text.len(), ScanStatus::Complete));
    }

    #[test]
    fn many_short_strings_with_escapes() {
        let mut text = String::from("[");
        for i in 0..10_000 {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&format!(r#""s{i}\"\\\n""#));
        }
        text.push_str("]tail");
        let want = text.len() - 4;
        for size in SIZES {
            assert_eq!(
                scan_chunked(&text, size.min(text.len())),
                (want, ScanStatus::Complete),
                "size {size}"
            );
        }
    }

    #[test]
    fn deep_nesting_without_recursion() {
        let depth = 1_000_000;
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert_eq!(
            scan_chunked(&text, 4096),
            (text.len(), ScanStatus::Complete)
        );
    }

    #[test]
    fn incomplete_value_consumes_everything() {
        let text = r#"{"a": [1, "unfinished"#;
        for size in SIZES {
            let (pos, st) = scan_chunked(text, size.min(text.len()));
            assert_eq!((pos, st), (text.len(), ScanStatus::Incomplete));
        }
    }

    #[test]
    fn leading_garbage_is_invalid() {
        let mut sc = JsonValueScanner::new();
        assert_eq!(sc.feed(b"  <x", false), (2, ScanStatus::Invalid));
    }
}
