//! Comparing two renders: their common prefix and suffix, moved off any marker they
//! would cut (llama.cpp's "tag boundary fixing"), and the text split into markers,
//! words and whitespace.
//!
//! A marker is bracketed: `<...>` (which covers `<|...|>`, `<｜...｜>`, `<tool_call>`,
//! `</x>`), `[...]` and `◁...▷`, on one line. Everything else is words and whitespace.

/// The brackets a marker may be written in.
const BRACKETS: [(char, char); 3] = [('<', '>'), ('[', ']'), ('◁', '▷')];

fn closer_of(c: char) -> Option<char> {
    BRACKETS.iter().find(|(o, _)| *o == c).map(|(_, cl)| *cl)
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Length in bytes of the longest common prefix of `a` and `b` (on a char boundary).
pub(crate) fn common_prefix(a: &str, b: &str) -> usize {
    let mut n = 0;
    for (x, y) in a.chars().zip(b.chars()) {
        if x != y {
            break;
        }
        n += x.len_utf8();
    }
    n
}

/// Length in bytes of the longest common suffix of `a` and `b`.
pub(crate) fn common_suffix(a: &str, b: &str) -> usize {
    let mut n = 0;
    for (x, y) in a.chars().rev().zip(b.chars().rev()) {
        if x != y {
            break;
        }
        n += x.len_utf8();
    }
    n
}

/// `prefix` (a common prefix of texts whose continuations are `next`) shortened so that
/// it does not end inside a marker or a word: an opening bracket it does not close is
/// left out with what follows it, and so is a word that a continuation goes on with.
pub(crate) fn fix_prefix(prefix: &str, next: &[&str]) -> usize {
    let mut end = prefix.len();
    // An opener not closed within the prefix: the marker is cut.
    let mut open: Option<(usize, char)> = None;
    for (i, c) in prefix.char_indices() {
        match open {
            Some((_, cl)) if c == cl => open = None,
            Some(_) if c == '\n' => open = None,
            _ => {}
        }
        if let Some(cl) = closer_of(c) {
            open = Some((i, cl));
        }
    }
    if let Some((i, _)) = open {
        end = i;
    }
    // A word a continuation goes on with (only when no marker was cut: the
    // continuations start where the prefix ends).
    let last = prefix[..end].chars().next_back();
    let continues = end == prefix.len()
        && next
            .iter()
            .any(|n| n.chars().next().is_some_and(is_word_char));
    if last.is_some_and(is_word_char) && continues {
        while let Some(c) = prefix[..end].chars().next_back() {
            if !is_word_char(c) {
                break;
            }
            end -= c.len_utf8();
        }
    }
    end
}

/// `suffix` (a common suffix of texts whose preceding parts are `prev`) shortened at
/// its start so that it does not begin inside a marker or a word. Returns how many bytes
/// of `suffix` to drop from its start.
pub(crate) fn fix_suffix(suffix: &str, prev: &[&str]) -> usize {
    let mut start = 0;
    // A closer before any opener: the marker is cut; drop through it.
    for (i, c) in suffix.char_indices() {
        if closer_of(c).is_some() || c == '\n' {
            break;
        }
        if BRACKETS.iter().any(|(_, cl)| *cl == c) {
            start = i + c.len_utf8();
            break;
        }
    }
    let first = suffix[start..].chars().next();
    let continues = start == 0
        && prev
            .iter()
            .any(|p| p.chars().next_back().is_some_and(is_word_char));
    if first.is_some_and(is_word_char) && continues {
        for (i, c) in suffix.char_indices() {
            if !is_word_char(c) {
                start = i;
                break;
            }
            start = i + c.len_utf8();
        }
    }
    start
}

/// The parts of two texts that differ: `(prefix, a_middle, b_middle, suffix)` byte
/// lengths are given as the common prefix length and the common suffix length, both
/// fixed to marker and word boundaries, never overlapping.
pub(crate) fn diff(a: &str, b: &str) -> (usize, usize) {
    let p = common_prefix(a, b);
    let p = fix_prefix(&a[..p], &[&a[p..], &b[p..]]);
    let (ra, rb) = (&a[p..], &b[p..]);
    let s = common_suffix(ra, rb);
    let drop = fix_suffix(
        &ra[ra.len() - s..],
        &[&ra[..ra.len() - s], &rb[..rb.len() - s]],
    );
    (p, s - drop)
}

/// What a piece of text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A bracketed marker, closed.
    Marker,
    /// An opening bracket not closed before the text ends (`<function=`, `<invoke name="`).
    Open,
    /// Text that is neither a marker nor whitespace.
    Word,
    /// Whitespace.
    Space,
}

/// A piece of text and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seg<'a> {
    pub kind: Kind,
    pub text: &'a str,
}

/// `text` split into markers, words and whitespace.
pub(crate) fn segments(text: &str) -> Vec<Seg<'_>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let c = rest.chars().next().expect("not empty");
        if c.is_whitespace() {
            let n = rest
                .char_indices()
                .find(|(_, c)| !c.is_whitespace())
                .map_or(rest.len(), |(j, _)| j);
            out.push(Seg {
                kind: Kind::Space,
                text: &rest[..n],
            });
            i += n;
            continue;
        }
        if let Some(cl) = closer_of(c) {
            let body = &rest[c.len_utf8()..];
            let stop = body
                .char_indices()
                .find(|&(_, d)| d == cl || d == '\n' || d == c);
            match stop {
                Some((j, d)) if d == cl => {
                    let n = c.len_utf8() + j + d.len_utf8();
                    out.push(Seg {
                        kind: Kind::Marker,
                        text: &rest[..n],
                    });
                    i += n;
                    continue;
                }
                None => {
                    out.push(Seg {
                        kind: Kind::Open,
                        text: rest,
                    });
                    break;
                }
                Some(_) => {} // not a marker: a word
            }
        }
        let n = rest
            .char_indices()
            .skip(1)
            .find(|&(_, d)| d.is_whitespace() || closer_of(d).is_some())
            .map_or(rest.len(), |(j, _)| j);
        out.push(Seg {
            kind: Kind::Word,
            text: &rest[..n],
        });
        i += n;
    }
    out
}

/// `text` without its leading and trailing whitespace, and the whitespace removed:
/// `(leading, core, trailing)`.
pub(crate) fn split_ws(text: &str) -> (&str, &str, &str) {
    let core_start = text.len() - text.trim_start().len();
    let core = text.trim();
    let lead = &text[..core_start];
    let trail = &text[core_start + core.len()..];
    (lead, core, trail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_stop_before_a_cut_marker() {
        let a = "x\n<think>\n";
        let b = "x\n<tool_call>";
        let (p, s) = diff(a, b);
        assert_eq!(&a[..p], "x\n");
        assert_eq!(s, 0);
    }

    #[test]
    fn suffixes_start_after_a_cut_marker() {
        let a = "<|tool_calls_section_begin|><|tool_call_begin|>functions.";
        let b = "<|tool_call_end|><|tool_call_begin|>functions.";
        let s = common_suffix(a, b);
        let drop = fix_suffix(&a[a.len() - s..], &[&a[..a.len() - s], &b[..b.len() - s]]);
        assert_eq!(&a[a.len() - s + drop..], "<|tool_call_begin|>functions.");
    }

    #[test]
    fn words_are_not_cut() {
        let (p, _) = diff("assistant A_ASST", "assistant AB");
        assert_eq!(p, "assistant ".len());
    }

    #[test]
    fn segments_tell_markers_words_and_space() {
        let segs = segments("<tool_call>\n<function=F");
        let kinds: Vec<_> = segs.iter().map(|s| (s.kind, s.text)).collect();
        assert_eq!(
            kinds,
            vec![
                (Kind::Marker, "<tool_call>"),
                (Kind::Space, "\n"),
                (Kind::Open, "<function=F"),
            ]
        );
        let segs = segments("\n```json\n{");
        assert_eq!(
            segs[1],
            Seg {
                kind: Kind::Word,
                text: "```json"
            }
        );
        let segs = segments("a < b");
        assert!(segs.iter().all(|s| s.kind != Kind::Marker));
    }
}
