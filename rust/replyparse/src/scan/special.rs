//! Special tokens inside markers, and the spellings engines decode them to.
//!
//! Many markers are several tokens: InternLM opens a call with
//! `<|action_start|><|plugin|>`, DSML tags are `<` + the added token `｜DSML｜` + text.
//! An engine that keeps special tokens in the text decodes such a marker in one of two
//! ways: joined (the tokenizer's own decode), or with one space between consecutive
//! pieces when a piece is a special token — Hugging Face's slow-tokenizer decode with
//! `spaces_between_special_tokens=True`, vLLM's default, joins the runs of special
//! tokens and of text with `" "`, so `<|action_start|><|plugin|>` arrives as
//! `<|action_start|> <|plugin|>` (SGLang's InternLM detector matches only that form).
//! A parser must accept both, and nothing more: the spaced form is exactly one space at
//! a piece boundary, never other whitespace, so prose is not taken for a marker.
//!
//! Which pieces are special tokens is dialect data ([`SpecialTokens`]): by default the
//! `<|...|>` pieces (Llama, InternLM, Kimi and Harmony markers are special tokens of
//! those models' vocabularies); a dialect whose markers use other tokens lists them.
//! When an engine strips special tokens (`skip_special_tokens=True`) the markers are
//! gone from the text and only token ids tell where a call was: with the marker tokens'
//! ids, a chunk fed with its ids gets its markers back ([`super::tokens`]); from text
//! alone that case cannot be parsed.

use std::borrow::Cow;

/// The pieces of a dialect's markers that are single special (or added) tokens.
#[derive(Debug, Clone, Copy)]
pub enum SpecialTokens<'a> {
    /// Every `<|...|>` piece (no whitespace, `<`, `>` or `|` inside the bars).
    Markers,
    /// Exactly these strings.
    Listed(&'a [String]),
}

impl SpecialTokens<'_> {
    /// Every spelling of each of `tags`, the tags as declared first, then as an engine
    /// may decode them ([`spellings`](Self::spellings)), no repeats.
    pub fn spellings_of<'t>(&self, tags: impl Iterator<Item = &'t str>) -> Vec<Cow<'t, str>> {
        let tags: Vec<&str> = tags.collect();
        let mut out: Vec<Cow<'t, str>> = tags.iter().map(|t| Cow::Borrowed(*t)).collect();
        for t in &tags {
            for s in self.spellings(t) {
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        out
    }

    /// The first special piece in `s` at or after `from`: (start, end).
    fn next(&self, s: &str, from: usize) -> Option<(usize, usize)> {
        match self {
            SpecialTokens::Markers => {
                let mut at = from;
                while let Some(off) = s[at..].find("<|") {
                    let start = at + off;
                    let body = &s[start + 2..];
                    let len = body
                        .find(|c: char| c == '|' || c == '<' || c == '>' || c.is_whitespace())
                        .unwrap_or(body.len());
                    if len > 0 && body[len..].starts_with("|>") {
                        return Some((start, start + 2 + len + 2));
                    }
                    at = start + 1;
                }
                None
            }
            // Leftmost, then longest, of the listed tokens.
            SpecialTokens::Listed(list) => list
                .iter()
                .filter(|t| !t.is_empty())
                .filter_map(|t| s[from..].find(t.as_str()).map(|i| (from + i, t.len())))
                .min_by_key(|&(i, len)| (i, usize::MAX - len))
                .map(|(i, len)| (i, i + len)),
        }
    }

    /// `tag` split into runs: `(is_special, text)`, in order, covering it exactly.
    pub fn pieces<'t>(&self, tag: &'t str) -> Vec<(bool, &'t str)> {
        let mut out = Vec::new();
        let mut pos = 0;
        while let Some((start, end)) = self.next(tag, pos) {
            if start > pos {
                out.push((false, &tag[pos..start]));
            }
            out.push((true, &tag[start..end]));
            pos = end;
        }
        if pos < tag.len() {
            out.push((false, &tag[pos..]));
        }
        out
    }

    /// Every spelling of `tag` an engine may decode it to, the tag itself first: with
    /// or without one space at each boundary between two pieces of which at least one
    /// is special. A tag without such a boundary has one spelling, borrowed.
    pub fn spellings<'t>(&self, tag: &'t str) -> Vec<Cow<'t, str>> {
        let pieces = self.pieces(tag);
        // Boundaries where the decoder may put a space; a piece that already ends or
        // starts with a space there gets none (the decoder's join would double it, but
        // the tag's own text then shows which spelling the dialect uses).
        let spaced: Vec<usize> = (1..pieces.len())
            .filter(|&i| pieces[i - 1].0 || pieces[i].0)
            .filter(|&i| !pieces[i - 1].1.ends_with(' ') && !pieces[i].1.starts_with(' '))
            .collect();
        if spaced.is_empty() {
            return vec![Cow::Borrowed(tag)];
        }
        // Few boundaries in real markers (at most a handful), so all subsets are few.
        let n = spaced.len().min(8);
        (0u32..1 << n)
            .map(|mask| {
                if mask == 0 {
                    return Cow::Borrowed(tag);
                }
                let mut s = String::with_capacity(tag.len() + n);
                for (i, (_, text)) in pieces.iter().enumerate() {
                    if let Some(b) = spaced[..n].iter().position(|&j| j == i) {
                        if mask & (1 << b) != 0 {
                            s.push(' ');
                        }
                    }
                    s.push_str(text);
                }
                Cow::Owned(s)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(rule: SpecialTokens<'_>, tag: &str) -> Vec<String> {
        rule.spellings(tag)
            .into_iter()
            .map(Cow::into_owned)
            .collect()
    }

    #[test]
    fn markers_are_the_bar_pieces() {
        let p = SpecialTokens::Markers.pieces("<|a|><|b|>x<| c|><|d");
        assert_eq!(
            p,
            vec![(true, "<|a|>"), (true, "<|b|>"), (false, "x<| c|><|d")]
        );
        assert_eq!(
            SpecialTokens::Markers.pieces("<tool_call>"),
            vec![(false, "<tool_call>")]
        );
    }

    #[test]
    fn spellings_space_each_special_boundary_once() {
        assert_eq!(
            all(SpecialTokens::Markers, "<|action_start|><|plugin|>"),
            ["<|action_start|><|plugin|>", "<|action_start|> <|plugin|>"]
        );
        // A single special token, or plain text: one spelling, borrowed.
        let one = SpecialTokens::Markers.spellings("<|python_tag|>");
        assert!(matches!(one[..], [Cow::Borrowed("<|python_tag|>")]));
        assert_eq!(all(SpecialTokens::Markers, "<tool_call>"), ["<tool_call>"]);
        let dsml = ["｜DSML｜".to_string()];
        let mut got = all(SpecialTokens::Listed(&dsml), "</｜DSML｜invoke>");
        got.sort();
        assert_eq!(
            got,
            [
                "</ ｜DSML｜ invoke>",
                "</ ｜DSML｜invoke>",
                "</｜DSML｜ invoke>",
                "</｜DSML｜invoke>"
            ]
        );
        // An existing space at a boundary gets no second one.
        assert_eq!(
            all(SpecialTokens::Markers, "<|a|> b"),
            ["<|a|> b"],
            "no double space"
        );
    }

    #[test]
    fn listed_tokens_match_leftmost_longest() {
        let list = ["<|a|>".to_string(), "<|a|><|b|>".to_string()];
        assert_eq!(
            SpecialTokens::Listed(&list).pieces("x<|a|><|b|>"),
            vec![(false, "x"), (true, "<|a|><|b|>")]
        );
    }
}
