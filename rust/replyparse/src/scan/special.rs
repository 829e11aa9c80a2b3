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
//! The spaced decode also puts one space where a special token meets text, on both
//! sides; that space is the decoder's, not the model's. A marker spelt with the spaces
//! between its pieces shows that the text is a spaced decode, so its spellings take one
//! space on each outer side too ([`SpecialTokens::spellings`]). A single special token
//! cannot show how it was decoded (models write a space before one in joined decodes),
//! so a space beside it is text unless its dialect declares the spaced spellings.
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
    /// is special; then the spaced decode (one space at every such boundary) with the
    /// decoder's space on each outer side where the tag starts or ends with a special
    /// piece (` <|a|> <|b|>`, `<|a|> <|b|> `, ` <|a|> <|b|> `): the spaces inside show
    /// that the text is a spaced decode, which puts one space wherever the marker meets
    /// text, so that space is the marker's, not text. A single special token shows no
    /// such sign (a space beside it may be the model's), so it gets no outer spelling
    /// here: a dialect whose models are served with spaced decodes declares those as
    /// aliases. A tag without such a boundary has one spelling, borrowed.
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
        let lead = pieces.first().is_some_and(|&(special, _)| special);
        let trail = pieces.last().is_some_and(|&(special, _)| special);
        // Few boundaries in real markers (at most a handful), so all subsets are few.
        let n = spaced.len().min(8);
        let spell = |mask: u32| {
            let mut s = String::with_capacity(tag.len() + n + 2);
            for (i, (_, text)) in pieces.iter().enumerate() {
                if let Some(b) = spaced[..n].iter().position(|&j| j == i) {
                    if mask & (1 << b) != 0 {
                        s.push(' ');
                    }
                }
                s.push_str(text);
            }
            s
        };
        let mut out: Vec<Cow<'t, str>> = (0u32..1 << n)
            .map(|mask| match mask {
                0 => Cow::Borrowed(tag),
                _ => Cow::Owned(spell(mask)),
            })
            .collect();
        // The spaced decode with the decoder's outer spaces.
        let full = spell((1u32 << n) - 1);
        let outer = [(lead, false), (false, trail), (lead, trail)];
        for (before, after) in outer.into_iter().filter(|&(b, a)| b || a) {
            let s = format!(
                "{}{full}{}",
                if before { " " } else { "" },
                if after { " " } else { "" }
            );
            if !out.iter().any(|o| *o == s) {
                out.push(Cow::Owned(s));
            }
        }
        out
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
            [
                "<|action_start|><|plugin|>",
                "<|action_start|> <|plugin|>",
                " <|action_start|> <|plugin|>",
                "<|action_start|> <|plugin|> ",
                " <|action_start|> <|plugin|> "
            ]
        );
        // A single special token, or plain text: one spelling, borrowed.
        let one = SpecialTokens::Markers.spellings("<|python_tag|>");
        assert!(matches!(one[..], [Cow::Borrowed("<|python_tag|>")]));
        assert_eq!(all(SpecialTokens::Markers, "<tool_call>"), ["<tool_call>"]);
        let dsml = ["｜DSML｜".to_string()];
        let mut got = all(SpecialTokens::Listed(&dsml), "</｜DSML｜invoke>");
        got.sort();
        // Text on both outer sides: no outer space.
        assert_eq!(
            got,
            [
                "</ ｜DSML｜ invoke>",
                "</ ｜DSML｜invoke>",
                "</｜DSML｜ invoke>",
                "</｜DSML｜invoke>"
            ]
        );
        // A special piece at one end only: the decoder's space on that side.
        assert_eq!(
            all(SpecialTokens::Markers, "<|a|>b"),
            ["<|a|>b", "<|a|> b", " <|a|> b"]
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
