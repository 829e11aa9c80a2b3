//! Tag search and tag-prefix tables.
//!
//! A chunk may end anywhere, including inside a tag, so the text at the end of the
//! pending buffer that could still become a tag must be held back. Which text that is
//! follows from the tags alone: the longest suffix of the buffer that is a proper prefix
//! of some armed tag. The seed declared these prefixes per tokenizer; here they are
//! derived, so the parser is correct under any chunking (every character, bursts,
//! token boundaries).
//!
//! Invariant: `held_suffix` looks at no more than `tag.len() - 1` bytes per tag, so the
//! cost per chunk is O(tag length), never O(text already seen).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use aho_corasick::{AhoCorasick, MatchKind};

/// One tag with its Knuth–Morris–Pratt failure table.
#[derive(Debug, Clone)]
struct Tag {
    bytes: Box<[u8]>,
    /// `fail[i]`: length of the longest proper prefix of `bytes[..=i]` that is also a
    /// suffix of it.
    fail: Box<[usize]>,
}

impl Tag {
    fn new(text: &str) -> Self {
        let bytes: Box<[u8]> = text.as_bytes().into();
        let mut fail = vec![0usize; bytes.len()];
        let mut k = 0;
        for i in 1..bytes.len() {
            while k > 0 && bytes[i] != bytes[k] {
                k = fail[k - 1];
            }
            if bytes[i] == bytes[k] {
                k += 1;
            }
            fail[i] = k;
        }
        Tag {
            bytes,
            fail: fail.into(),
        }
    }

    /// Length of the longest proper prefix of the tag that `hay` ends with.
    fn held_suffix(&self, hay: &[u8]) -> usize {
        let n = self.bytes.len();
        if n < 2 {
            return 0;
        }
        let start = hay.len().saturating_sub(n - 1);
        let mut k = 0;
        for &b in &hay[start..] {
            while k > 0 && b != self.bytes[k] {
                k = self.fail[k - 1];
            }
            if b == self.bytes[k] {
                k += 1;
            }
            if k == n {
                // A whole tag inside the tail: keep only what can still extend.
                k = self.fail[n - 1];
            }
        }
        k
    }
}

/// A set of tags armed in one parser mode: leftmost search for whole tags and the
/// held-suffix rule for partial ones.
#[derive(Debug, Clone)]
pub struct TagSet {
    tags: Vec<Tag>,
    texts: Vec<String>,
    finder: Option<AhoCorasick>,
    /// The distinct first bytes of the tags, when there are at most three: a haystack
    /// (or tail) without any of them holds no tag and no start of one, which `memchr`
    /// answers faster than the automaton is entered for a token-sized chunk.
    first_bytes: Option<Vec<u8>>,
    /// Every first byte of a tag, as a table, for token-sized haystacks.
    is_first: [bool; 256],
    /// The longest tag, in bytes: only that many bytes minus one can be held.
    max_len: usize,
    /// Some tag occurs inside another one other than as its suffix (`<answer>` in
    /// `<answer>\n`): a match near the end of a chunk may then still lose to a longer
    /// tag that more text completes, so [`find_or_held`](Self::find_or_held) checks.
    contained: bool,
}

/// Whether `needle` occurs in `hay`, byte-wise (a tag minus its last byte may end inside
/// a multi-byte character, as `◁/think▷` does, so this cannot slice a `str`).
fn contains_bytes(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// A whole tag found in a haystack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagMatch {
    /// Which tag, as its position in the list the set was built from.
    pub tag: usize,
    pub start: usize,
    pub end: usize,
}

impl TagSet {
    /// Builds the set. Empty strings are dropped (a dialect without a close tag), so
    /// `TagMatch::tag` indexes the non-empty tags in their given order.
    pub fn new<S: AsRef<str>>(tags: &[S]) -> Self {
        // An empty pattern would match everywhere; a missing tag is simply not armed.
        let texts: Vec<String> = tags
            .iter()
            .map(|t| t.as_ref().to_owned())
            .filter(|t| !t.is_empty())
            .collect();
        let finder = if texts.is_empty() {
            None
        } else {
            // Tags are a handful of short literals: construction cannot fail.
            Some(
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&texts)
                    .expect("tag automaton"),
            )
        };
        let mut first: Vec<u8> = texts.iter().map(|t| t.as_bytes()[0]).collect();
        first.sort_unstable();
        first.dedup();
        let mut is_first = [false; 256];
        for &b in &first {
            is_first[usize::from(b)] = true;
        }
        let contained = texts.iter().enumerate().any(|(i, a)| {
            texts.iter().enumerate().any(|(j, b)| {
                i != j
                    && b.len() > a.len()
                    && contains_bytes(&b.as_bytes()[..b.len() - 1], a.as_bytes())
            })
        });
        TagSet {
            contained,
            tags: texts.iter().map(|t| Tag::new(t)).collect(),
            max_len: texts.iter().map(String::len).max().unwrap_or(0),
            texts,
            finder,
            first_bytes: (first.len() <= 3).then_some(first),
            is_first,
        }
    }

    /// False only when `hay` certainly contains no first byte of a tag.
    fn may_contain_tag_start(&self, hay: &[u8]) -> bool {
        if hay.len() < 16 {
            // Token-sized: a table lookup per byte beats memchr's dispatch.
            return hay.iter().any(|&b| self.is_first[usize::from(b)]);
        }
        match self.first_bytes.as_deref() {
            Some([]) => false,
            Some(&[a]) => memchr::memchr(a, hay).is_some(),
            Some(&[a, b]) => memchr::memchr2(a, b, hay).is_some(),
            Some(&[a, b, c]) => memchr::memchr3(a, b, c, hay).is_some(),
            _ => true,
        }
    }

    /// The set for these tags, built once per process and shared. Building the search
    /// automaton costs far more than parsing a typical response, and every parser of a
    /// dialect arms the same few tags.
    ///
    /// The lookup borrows the tags (their hash, then a comparison in the hash's
    /// bucket): every parser built looks up several sets, and building an owned key per
    /// lookup was a measurable part of making a parser.
    pub fn shared<S: AsRef<str>>(tags: &[S]) -> Arc<TagSet> {
        type Bucket = Vec<(Box<[String]>, Arc<TagSet>)>;
        static CACHE: OnceLock<Mutex<HashMap<u64, Bucket>>> = OnceLock::new();
        let mut h = std::hash::DefaultHasher::new();
        for t in tags {
            t.as_ref().hash(&mut h);
        }
        let cache = CACHE.get_or_init(Default::default);
        // The map is only ever inserted into whole, so a poisoned lock is consistent.
        let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
        let bucket = map.entry(h.finish()).or_default();
        let same = |key: &[String]| {
            key.len() == tags.len() && key.iter().zip(tags).all(|(k, t)| k == t.as_ref())
        };
        if let Some((_, set)) = bucket.iter().find(|(key, _)| same(key)) {
            return set.clone();
        }
        let set = Arc::new(TagSet::new(tags));
        let key = tags.iter().map(|t| t.as_ref().to_owned()).collect();
        bucket.push((key, set.clone()));
        set
    }

    /// How many tags the set holds (match indices are below it).
    pub fn len(&self) -> usize {
        self.tags.len()
    }

    pub fn is_empty(&self) -> bool {
        self.finder.is_none()
    }

    pub fn text(&self, tag: usize) -> &str {
        &self.texts[tag]
    }

    /// The leftmost whole tag in `hay`.
    pub fn find(&self, hay: &str) -> Option<TagMatch> {
        let finder = self.finder.as_ref()?;
        if !self.may_contain_tag_start(hay.as_bytes()) {
            return None;
        }
        let m = finder.find(hay)?;
        Some(TagMatch {
            tag: m.pattern().as_usize(),
            start: m.start(),
            end: m.end(),
        })
    }

    /// The leftmost whole tag in `hay`, or else the number of bytes at its end that must
    /// be held ([`held_suffix`](Self::held_suffix); none when `final_`, as the input
    /// ended). The same answers as the two calls, in one look at a token-sized haystack
    /// without any tag's first byte (most chunks), which the two calls would each make.
    pub fn find_or_held(&self, hay: &str, final_: bool) -> Result<TagMatch, usize> {
        if hay.len() < 16 && !self.may_contain_tag_start(hay.as_bytes()) {
            return Err(0);
        }
        match self.find(hay) {
            // A longer tag may still match at or before this one once more text comes:
            // hold from where it would start.
            Some(m) if self.contained && !final_ => {
                let keep = self.held_suffix(hay);
                if keep >= hay.len() - m.start {
                    Err(keep)
                } else {
                    Ok(m)
                }
            }
            Some(m) => Ok(m),
            None if final_ => Err(0),
            None => Err(self.held_suffix(hay)),
        }
    }

    /// Number of bytes at the end of `hay` that may be the start of a tag and must be
    /// held until more text arrives. Always a char boundary of `hay`: the held bytes
    /// equal the start of a tag, which begins with a whole character.
    pub fn held_suffix(&self, hay: &str) -> usize {
        let bytes = hay.as_bytes();
        let tail = &bytes[bytes.len().saturating_sub(self.max_len.saturating_sub(1))..];
        if !self.may_contain_tag_start(tail) {
            return 0;
        }
        self.tags
            .iter()
            .map(|t| t.held_suffix(bytes))
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tag that is a proper prefix of another (`<answer>` and `<answer>\n`) is not
    /// taken at the end of a chunk that more text could turn into the longer one.
    #[test]
    fn contained_tags_wait_for_the_longer_match() {
        let set = TagSet::new(&["<answer>\n", "<answer>", "a<x>b", "<x>"]);
        assert_eq!(set.find_or_held("x<answer>", false), Err(8));
        let m = set.find_or_held("x<answer>", true).unwrap();
        assert_eq!((m.tag, m.start, m.end), (1, 1, 9));
        let m = set.find_or_held("x<answer>\n", false).unwrap();
        assert_eq!((m.tag, m.end), (0, 10));
        let m = set.find_or_held("x<answer>y", false).unwrap();
        assert_eq!(m.tag, 1);
        // A longer tag starting before the match.
        assert_eq!(set.find_or_held("a<x>", false), Err(4));
        assert_eq!(set.find_or_held("a<x>b", false).unwrap().tag, 2);
        assert_eq!(set.find_or_held("c<x>", false).unwrap().tag, 3);
        // Without containment the first match stands at once.
        let plain = TagSet::new(&["<a>", "</a>"]);
        assert!(!plain.contained);
        assert!(plain.find_or_held("<a>", false).is_ok());
    }

    /// Tags whose last character is multi-byte (Kimi's `◁think▷`) build a set: the
    /// containment check works on bytes.
    #[test]
    fn multi_byte_tags_build_a_set() {
        let set = TagSet::new(&["◁think▷", "◁/think▷"]);
        assert!(!set.contained);
        let m = set.find_or_held("a◁/think▷b", false).unwrap();
        assert_eq!((m.tag, m.start), (1, 1));
        assert!(!TagSet::new(&["y", "◁x▷y"]).contained, "only at the end");
        assert!(TagSet::new(&["▷", "◁x▷y"]).contained);
    }

    /// One set per tag list, looked up with borrowed tags; lists that differ only in
    /// order, in how they are cut, or by an empty tag are other lists.
    #[test]
    fn shared_sets_are_one_per_tag_list() {
        let a = TagSet::shared(&["<a>", "</a>"]);
        let owned = [String::from("<a>"), String::from("</a>")];
        assert!(Arc::ptr_eq(&a, &TagSet::shared(&owned)));
        for other in [
            &["</a>", "<a>"][..],
            &["<a></a>"][..],
            &["<a>", "</a>", ""][..],
            &["<a>"][..],
        ] {
            let o = TagSet::shared(other);
            assert!(!Arc::ptr_eq(&a, &o), "{other:?}");
            assert!(Arc::ptr_eq(&o, &TagSet::shared(other)), "{other:?}");
        }
    }

    fn naive_held(tags: &[&str], hay: &str) -> usize {
        let mut best = 0;
        for t in tags {
            for l in 1..t.len() {
                if hay.as_bytes().ends_with(&t.as_bytes()[..l]) {
                    best = best.max(l);
                }
            }
        }
        best
    }

    /// `find_or_held` answers what `find` and then `held_suffix` answer, on every
    /// prefix of a corpus of tags, partial tags and text, short and long.
    #[test]
    fn find_or_held_is_find_then_held_suffix() {
        let set = TagSet::new(&["<tool_call>", "</think>", "\n\n<｜DSML｜function_calls>"]);
        let corpus = "ab<tool_ca</thi</think>x\n\n<｜DS<tool_call>y\n\n<｜DSML｜function_calls>zz<";
        let long = format!("{}{corpus}", "x".repeat(40));
        for text in [corpus, long.as_str()] {
            for start in 0..text.len() {
                for end in start..=text.len() {
                    if !text.is_char_boundary(start) || !text.is_char_boundary(end) {
                        continue;
                    }
                    let hay = &text[start..end];
                    for final_ in [false, true] {
                        let want = match set.find(hay) {
                            Some(m) => Ok(m),
                            None if final_ => Err(0),
                            None => Err(set.held_suffix(hay)),
                        };
                        assert_eq!(set.find_or_held(hay, final_), want, "{hay:?} {final_}");
                    }
                }
            }
        }
    }

    #[test]
    fn held_suffix_matches_naive_definition() {
        let tags = [
            "<tool_call>",
            "</think>",
            "\n\n<｜DSML｜function_calls>",
            "aab",
        ];
        let set = TagSet::new(&tags);
        let corpus = "xx<tool_ca</thi</think\n\n<｜DS\n<｜DSML｜functionaaaab<";
        for end in 0..=corpus.len() {
            if !corpus.is_char_boundary(end) {
                continue;
            }
            let hay = &corpus[..end];
            assert_eq!(set.held_suffix(hay), naive_held(&tags, hay), "hay={hay:?}");
        }
    }

    #[test]
    fn overlapping_self_prefix() {
        let set = TagSet::new(&["aab"]);
        assert_eq!(set.held_suffix("aaaa"), 2);
        assert_eq!(set.held_suffix("aab"), 0);
        assert_eq!(set.held_suffix("aaba"), 1);
    }

    #[test]
    fn find_leftmost() {
        let set = TagSet::new(&["<tool_call>", "</think>"]);
        let m = set.find("ab</think>c<tool_call>").unwrap();
        assert_eq!((m.tag, m.start, m.end), (1, 2, 10));
        assert!(set.find("nothing").is_none());
    }

    #[test]
    fn empty_set_holds_nothing() {
        let set = TagSet::new::<&str>(&[]);
        assert!(set.is_empty());
        assert_eq!(set.held_suffix("<"), 0);
        assert!(set.find("<tool_call>").is_none());
    }

    #[test]
    fn held_suffix_is_bounded_by_tag_length() {
        let set = TagSet::new(&["<tool_call>"]);
        let long = "<".repeat(100_000);
        assert_eq!(set.held_suffix(&long), 1);
    }
}
