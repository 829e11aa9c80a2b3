//! Markers by token id: telling a marker the model emitted as its special token from
//! the same text spelt with ordinary tokens.
//!
//! A dialect's markers (`<tool_call>`, `<|tool_calls_section_begin|>`, Harmony's
//! `<|call|>`) are special tokens of the model's vocabulary. A model that quotes one in
//! prose — explaining its own format, echoing a document — writes the same characters
//! with ordinary tokens, and after decoding the two are the same text. Only the token
//! ids tell them apart. When the caller gives the ids of the marker tokens
//! ([`MarkerIds`]) and feeds each chunk with its token ids, a marker counts only where a
//! special token wrote it; any other spelling of it is text. Without ids, or for a
//! chunk fed without ids, the text rule stands: every spelling is the marker.
//!
//! Aligning a chunk's ids with its text ([`split_chunk`]) needs no vocabulary:
//! - the text keeps the special tokens (decoded with `skip_special_tokens=False`): each
//!   special id is found in the text, in order. A chunk of one token, or whose text
//!   spells each marker no more often than its ids hold it, aligns exactly. When a
//!   chunk of several tokens spells a marker more often than it holds the token, the
//!   spellings taken as markers are the ones the ids pin down (a special token right
//!   before another, or last in the chunk, sits right before it, or at the end), else
//!   the last ones: a model that quotes a marker does so before it writes it more often
//!   than after;
//! - the text lost the special tokens (`skip_special_tokens=True`): each special id is
//!   put back as its text, and the chunk's text placed at its first run of ordinary
//!   ids (or before the first special id when it has none: text a detokenizer
//!   released late belongs to earlier tokens). This is exact for one token per chunk
//!   and for chunks whose ordinary tokens form one run.
//!
//! [`MarkerSpans`] remembers, by absolute offset in the text the parser was fed, where
//! special tokens wrote their text and which stretches came without ids; a parser that
//! finds a marker asks it whether each special-token piece of the marker
//! ([`MarkerIds::pieces`]) is one of those ([`MarkerSpans::is_marker`]). It forgets what
//! lies before the parser's held text, so it holds as many entries as the held text has
//! special tokens.

use std::collections::VecDeque;

/// The token ids of a dialect's marker tokens: each special (or added) token's text and
/// id, as the model's tokenizer has them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MarkerIds {
    /// Sorted by id; ids are distinct.
    by_id: Vec<(u32, String)>,
}

impl MarkerIds {
    /// The table of `(text, id)` pairs. Empty texts are left out; an id given twice
    /// keeps its last text.
    pub fn new<S: AsRef<str>>(pairs: &[(S, u32)]) -> Self {
        let mut by_id: Vec<(u32, String)> = Vec::with_capacity(pairs.len());
        for (text, id) in pairs {
            let text = text.as_ref();
            if text.is_empty() {
                continue;
            }
            match by_id.iter_mut().find(|(i, _)| i == id) {
                Some(entry) => entry.1 = text.to_owned(),
                None => by_id.push((*id, text.to_owned())),
            }
        }
        by_id.sort_unstable_by_key(|(id, _)| *id);
        MarkerIds { by_id }
    }

    /// No marker token is known: the text rule alone decides.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The text of a marker token id.
    pub fn text(&self, id: u32) -> Option<&str> {
        self.by_id
            .binary_search_by_key(&id, |(i, _)| *i)
            .ok()
            .map(|k| self.by_id[k].1.as_str())
    }

    /// Where marker tokens' texts occur in `tag`, leftmost and then longest, without
    /// overlap: `(offset, length)` of each. A tag without any is spelt in ordinary
    /// tokens only (Seed-OSS's `<seed:tool_call>`), and token ids say nothing about it.
    pub fn pieces(&self, tag: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < tag.len() {
            let found = self
                .by_id
                .iter()
                .filter_map(|(_, t)| tag[at..].find(t.as_str()).map(|i| (at + i, t.len())))
                .min_by_key(|&(i, len)| (i, usize::MAX - len));
            let Some((i, len)) = found else { break };
            out.push((i, len));
            at = i + len;
        }
        out
    }
}

/// One piece of a chunk, aligned with its token ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment<'a> {
    /// Text of ordinary tokens, and how many ordinary ids the chunk gave for it.
    Text(&'a str, usize),
    /// A marker token's text, written by its special id.
    Special(&'a str),
}

impl<'a> Segment<'a> {
    /// The segment's text.
    pub fn text(&self) -> &'a str {
        match self {
            Segment::Text(t, _) | Segment::Special(t) => t,
        }
    }

    /// The segment's length in bytes.
    pub fn len(&self) -> usize {
        self.text().len()
    }
}

/// One chunk split at its marker ids ([`split_chunk`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<'a> {
    /// The chunk's text and markers, in order.
    pub segments: Vec<Segment<'a>>,
    /// The ids place every marker: the text keeps them all, or lost them all and its
    /// ordinary tokens form at most one run. Otherwise the segments follow the
    /// stripped rule of the module docs, which may misplace text.
    pub aligned: bool,
}

/// Splits one chunk into the text of its runs of ordinary ids and the texts of its
/// marker ids, in order (see the module docs for the alignment). `text_of` gives a
/// marker id's text; ids it does not know are ordinary tokens. The segments' texts
/// joined are `text` when the text keeps the markers; otherwise they are `text` with
/// the markers put back.
pub fn split_chunk<'a, 't: 'a>(
    text: &'a str,
    ids: &[u32],
    text_of: impl Fn(u32) -> Option<&'t str>,
) -> Split<'a> {
    // The chunk as runs of ordinary ids between marker ids: runs[i] before specials[i],
    // the last run after the last marker.
    let mut specials: Vec<&'a str> = Vec::new();
    let mut runs: Vec<usize> = vec![0];
    for &id in ids {
        match text_of(id) {
            Some(t) => {
                specials.push(t);
                runs.push(0);
            }
            None => *runs.last_mut().expect("one run per marker, plus one") += 1,
        }
    }
    if specials.is_empty() {
        return Split {
            segments: vec![Segment::Text(text, ids.len())],
            aligned: true,
        };
    }
    let segments = match kept_positions(text, &specials, &runs) {
        Some(at) => {
            let mut out = Vec::with_capacity(2 * specials.len() + 1);
            let mut from = 0;
            for (k, (&p, &tag)) in at.iter().zip(&specials).enumerate() {
                out.push(Segment::Text(&text[from..p], runs[k]));
                out.push(Segment::Special(&text[p..p + tag.len()]));
                from = p + tag.len();
            }
            out.push(Segment::Text(&text[from..], runs[specials.len()]));
            return Split {
                segments: out,
                aligned: true,
            };
        }
        None => stripped(text, &specials, &runs),
    };
    // Lost them all (no marker's text in the chunk) and one run at most: exact.
    let none_kept = specials.iter().all(|t| !text.contains(t));
    let one_run = runs.iter().filter(|&&n| n > 0).count() <= 1;
    Split {
        segments,
        aligned: none_kept && (one_run || text.is_empty()),
    }
}

/// Where each marker of the chunk sits in `text`, when the text keeps all of them in
/// order: the latest positions that keep them in order, except that a marker with no
/// ordinary id after it sits right before the next one (or at the end of the chunk)
/// when the text has it there.
fn kept_positions(text: &str, specials: &[&str], runs: &[usize]) -> Option<Vec<usize>> {
    // The earliest positions: whether they are all there, and the lower bound of each.
    let mut earliest = Vec::with_capacity(specials.len());
    let mut from = 0;
    for tag in specials {
        let at = from + text[from..].find(tag)?;
        earliest.push(at);
        from = at + tag.len();
    }
    let mut at = vec![0; specials.len()];
    let mut end = text.len();
    for k in (0..specials.len()).rev() {
        let tag = specials[k];
        let low = earliest[k];
        let adjacent = end
            .checked_sub(tag.len())
            .filter(|&p| runs[k + 1] == 0 && p >= low && text[p..end] == *tag);
        // `earliest` keeps every marker in order, so the tag occurs in text[low..end].
        at[k] = adjacent.unwrap_or_else(|| low + text[low..end].rfind(tag).unwrap_or(0));
        end = at[k];
    }
    Some(at)
}

/// The segments of a chunk whose text lost its markers: every marker put back as its
/// text, the text at the first run of ordinary ids (before the first marker when the
/// chunk has no ordinary id).
fn stripped<'a>(text: &'a str, specials: &[&'a str], runs: &[usize]) -> Vec<Segment<'a>> {
    let first_run = runs.iter().position(|&n| n > 0).unwrap_or(0);
    let mut out = Vec::with_capacity(2 * specials.len() + 1);
    for (k, &n) in runs.iter().enumerate() {
        let piece = if k == first_run { text } else { "" };
        out.push(Segment::Text(piece, n));
        if let Some(tag) = specials.get(k) {
            out.push(Segment::Special(tag));
        }
    }
    out
}

/// Where, in the text a parser was fed, special tokens wrote their text and which
/// stretches came without token ids: what decides whether a marker found there is one
/// (see the module docs). Offsets count bytes from the start of the response.
#[derive(Debug, Clone, Default)]
pub struct MarkerSpans {
    /// Bytes fed so far.
    fed: u64,
    /// The spans of marker tokens, in order: `(start, end)`.
    specials: VecDeque<(u64, u64)>,
    /// The stretches fed without ids, in order, adjacent ones merged.
    unknown: VecDeque<(u64, u64)>,
}

impl MarkerSpans {
    /// Bytes fed so far: the offset the next fed text starts at.
    pub fn fed(&self) -> u64 {
        self.fed
    }

    /// Records `len` bytes of ordinary tokens.
    pub fn ordinary(&mut self, len: usize) {
        self.fed += len as u64;
    }

    /// Records `len` bytes written by one marker token.
    pub fn special(&mut self, len: usize) {
        let start = self.fed;
        self.fed += len as u64;
        if len > 0 {
            self.specials.push_back((start, self.fed));
        }
    }

    /// Records `len` bytes fed without token ids: every spelling there is a marker.
    pub fn without_ids(&mut self, len: usize) {
        let start = self.fed;
        self.fed += len as u64;
        if len == 0 {
            return;
        }
        match self.unknown.back_mut() {
            Some(last) if last.1 == start => last.1 = self.fed,
            _ => self.unknown.push_back((start, self.fed)),
        }
    }

    /// Records a chunk split by [`split_chunk`], fed as its segments' texts.
    pub fn record(&mut self, segments: &[Segment<'_>]) {
        for s in segments {
            match s {
                Segment::Text(t, _) => self.ordinary(t.len()),
                Segment::Special(t) => self.special(t.len()),
            }
        }
    }

    /// Whether the tag found at offset `at`, whose marker-token pieces are `pieces`
    /// ([`MarkerIds::pieces`]), is the marker: each piece was written by a marker token
    /// exactly there, or lies in a stretch fed without ids.
    pub fn is_marker(&self, at: u64, pieces: &[(usize, usize)]) -> bool {
        pieces.iter().all(|&(off, len)| {
            let (s, e) = (at + off as u64, at + (off + len) as u64);
            let special = self
                .specials
                .binary_search_by_key(&s, |&(start, _)| start)
                .is_ok_and(|k| self.specials[k].1 == e);
            special || self.unknown.iter().any(|&(us, ue)| us <= s && e <= ue)
        })
    }

    /// Forgets what ends at or before `at`: the parser will not look there again.
    pub fn forget_before(&mut self, at: u64) {
        while self.specials.front().is_some_and(|&(_, e)| e <= at) {
            self.specials.pop_front();
        }
        while self.unknown.front().is_some_and(|&(_, e)| e <= at) {
            self.unknown.pop_front();
        }
    }

    /// Entries held (what [`forget_before`](Self::forget_before) bounds).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.specials.len() + self.unknown.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALL: u32 = 7;
    const END: u32 = 8;

    fn text_of(id: u32) -> Option<&'static str> {
        match id {
            CALL => Some("<c>"),
            END => Some("<e>"),
            _ => None,
        }
    }

    fn joined(segs: &[Segment<'_>]) -> String {
        segs.iter()
            .map(|s| match s {
                Segment::Text(t, _) | Segment::Special(t) => *t,
            })
            .collect()
    }

    #[test]
    fn one_token_chunks_align_exactly() {
        assert_eq!(
            split_chunk("<c>", &[CALL], text_of).segments,
            [
                Segment::Text("", 0),
                Segment::Special("<c>"),
                Segment::Text("", 0)
            ]
        );
        // The marker's text from an ordinary token is text.
        assert_eq!(
            split_chunk("<c>", &[1], text_of).segments,
            [Segment::Text("<c>", 1)]
        );
        // Stripped: put back.
        assert_eq!(joined(&split_chunk("", &[CALL], text_of).segments), "<c>");
    }

    #[test]
    fn several_spellings_take_the_pinned_or_last_ones() {
        // Quoted, then written: the last spelling is the marker.
        let segs = split_chunk("say <c> then<c>", &[1, 2, 3, CALL], text_of).segments;
        assert_eq!(segs[0], Segment::Text("say <c> then", 3));
        assert_eq!(segs[1], Segment::Special("<c>"));
        // Written, then quoted after ordinary text, the call pinned right before <e>.
        let segs = split_chunk("{}<c><e>x <c> y", &[1, CALL, END, 2, 3], text_of).segments;
        assert_eq!(segs[0], Segment::Text("{}", 1));
        assert_eq!(segs[1], Segment::Special("<c>"));
        assert_eq!(segs[3], Segment::Special("<e>"));
        assert_eq!(segs[4], Segment::Text("x <c> y", 2));
        assert_eq!(joined(&segs), "{}<c><e>x <c> y");
    }

    #[test]
    fn stripped_text_goes_to_the_first_ordinary_run() {
        let split = split_chunk("hi", &[END, 1, CALL], text_of);
        assert_eq!(joined(&split.segments), "<e>hi<c>");
        assert!(split.aligned);
        let split = split_chunk("late", &[CALL], text_of);
        assert_eq!(joined(&split.segments), "late<c>");
        assert!(split.aligned);
        // Two runs of ordinary ids: where the markers were is not known.
        let split = split_chunk("a b", &[1, CALL, 2], text_of);
        assert!(!split.aligned);
        // One marker kept, the other lost: not aligned either.
        assert!(!split_chunk("x<c>", &[END, 1, CALL], text_of).aligned);
    }

    #[test]
    fn spans_decide_markers() {
        let ids = MarkerIds::new(&[("<|a|>", 1), ("<|b|>", 2)]);
        assert_eq!(ids.pieces("<|a|> <|b|>x"), [(0, 5), (6, 5)]);
        assert!(ids.pieces("<tool>").is_empty());
        let mut spans = MarkerSpans::default();
        spans.ordinary(3);
        spans.special(5);
        spans.without_ids(4);
        spans.without_ids(6);
        assert!(spans.is_marker(3, &[(0, 5)]));
        assert!(!spans.is_marker(0, &[(0, 5)]), "ordinary bytes");
        assert!(spans.is_marker(9, &[(0, 5)]), "inside merged id-less text");
        assert!(
            !spans.is_marker(6, &[(0, 5)]),
            "across a special and id-less text"
        );
        assert!(spans.is_marker(0, &[]), "a tag without marker tokens");
        spans.forget_before(8);
        assert_eq!(spans.held(), 1);
    }
}
