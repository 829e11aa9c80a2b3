//! The regex subset a delimiter may use: what a literal-tag engine can stream with a
//! bounded hold.
//!
//! A `response_template` writes its delimiters as Python regexes (the `regex` module,
//! `DOTALL`, no `MULTILINE`). [`read`] parses one with `regex-syntax` and expands it into
//! a finite set of alternatives, each a sequence of [`Piece`]s: literal text, a run of
//! whitespace, a named capture, the start or the end of the text. Whatever has no such
//! finite reading (a free repetition such as `[^<]*` or `.*?` outside a capture, a
//! lookaround anywhere but as a whole reasoning opener, a backreference, a class of
//! more than a few characters outside a capture) is refused, naming the construct:
//! a parser could only read it by holding text without bound.

use regex_syntax::hir::{Class, Hir, HirKind, Look};

/// Most alternatives a delimiter may expand to (vLLM's grammar builder allows 16).
pub(crate) const MAX_ALTERNATIVES: usize = 32;

/// Largest character class outside a capture that is read as its characters.
const MAX_CLASS_CHARS: usize = 8;

/// One piece of a delimiter alternative.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Literal text.
    Lit(String),
    /// A run of whitespace (`\s*`, `\s+`, `[ \t]*`): its length is free.
    Ws,
    /// A named capture group.
    Capture { name: String, body: Body },
    /// `^` / `\A`: the start of the text.
    Start,
    /// `$` / `\Z`: the end of the text.
    End,
}

/// What a named capture matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Body {
    /// Any text, lazily (`.*?`, `[\s\S]*?`): a value up to the next delimiter.
    Any,
    /// One or more characters of a class (`\w+`, `[^>\n]+`, `\S+?`): a name or key.
    Word,
}

/// One reading of a delimiter.
pub(crate) type Seq = Vec<Piece>;

/// A delimiter read: its alternatives (at least one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Delim {
    pub alts: Vec<Seq>,
}

impl Delim {
    /// A delimiter given as literal text (or a list of literals).
    pub(crate) fn literals<S: AsRef<str>>(lits: &[S]) -> Delim {
        Delim {
            alts: lits
                .iter()
                .map(|l| vec![Piece::Lit(l.as_ref().to_owned())])
                .collect(),
        }
    }

    /// The alternatives with a whitespace run at either edge left out (`</think>\s*`
    /// is the tag `</think>`: the whitespace after it is whitespace, read as such).
    pub(crate) fn trimmed(&self) -> Vec<Seq> {
        let mut out: Vec<Seq> = Vec::new();
        for alt in &self.alts {
            let mut s: &[Piece] = alt;
            while let [Piece::Ws, rest @ ..] = s {
                s = rest;
            }
            while let [rest @ .., Piece::Ws] = s {
                s = rest;
            }
            let s = s.to_vec();
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    /// The literal text every match of every alternative contains, piece by piece:
    /// what a reader can recognise the delimiter by.
    pub(crate) fn literal_pieces(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for alt in &self.alts {
            for p in alt {
                if let Piece::Lit(l) = p {
                    if !out.contains(&l.as_str()) {
                        out.push(l);
                    }
                }
            }
        }
        out
    }
}

/// A delimiter that cannot be read: the message names the construct.
pub(crate) type Refusal = String;

/// Reads a Python regex delimiter.
pub(crate) fn read(pattern: &str) -> Result<Delim, Refusal> {
    let hir = parse(pattern)?;
    let alts = expand(&hir).map_err(|e| name_repetition(pattern, e))?;
    Ok(Delim { alts })
}

/// Marks a refusal's free repetition: `{REP}` in it is replaced by the first free
/// repetition of the source outside a named group, as written (`[^<]*`).
const REP: &str = "{REP}";

fn name_repetition(pattern: &str, e: Refusal) -> Refusal {
    if !e.contains(REP) {
        return e;
    }
    let translated = python_to_rust(pattern);
    let written = regex_syntax::ast::parse::Parser::new()
        .parse(&translated)
        .ok()
        .and_then(|ast| first_free_repetition(&ast, false))
        .and_then(|span| {
            translated
                .get(span.start.offset..span.end.offset)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "repetition".to_owned());
    e.replace(REP, &written)
}

/// The span of the first unbounded repetition outside a named group that repeats more
/// than whitespace.
fn first_free_repetition(
    ast: &regex_syntax::ast::Ast,
    in_named: bool,
) -> Option<regex_syntax::ast::Span> {
    use regex_syntax::ast::{Ast, GroupKind, RepetitionKind, RepetitionRange};
    match ast {
        Ast::Repetition(r) => {
            let unbounded = matches!(
                r.op.kind,
                RepetitionKind::ZeroOrMore
                    | RepetitionKind::OneOrMore
                    | RepetitionKind::Range(RepetitionRange::AtLeast(_))
            );
            let ws = matches!(&*r.ast, Ast::ClassPerl(c) if c.kind == regex_syntax::ast::ClassPerlKind::Space && !c.negated);
            if unbounded && !in_named && !ws {
                return Some(r.span);
            }
            first_free_repetition(&r.ast, in_named)
        }
        Ast::Group(g) => {
            let named = in_named || matches!(g.kind, GroupKind::CaptureName { .. });
            first_free_repetition(&g.ast, named)
        }
        Ast::Concat(c) => c
            .asts
            .iter()
            .find_map(|a| first_free_repetition(a, in_named)),
        Ast::Alternation(a) => a
            .asts
            .iter()
            .find_map(|a| first_free_repetition(a, in_named)),
        _ => None,
    }
}

/// The literal texts anywhere in a pattern (empty when it does not parse): what
/// selection recognises a delimiter by when it cannot be read as a whole.
pub(crate) fn literal_text(pattern: &str) -> Vec<String> {
    fn walk(hir: &Hir, out: &mut Vec<String>) {
        if let HirKind::Literal(l) = hir.kind() {
            if let Ok(s) = std::str::from_utf8(&l.0) {
                out.push(s.to_owned());
            }
        }
        for sub in hir.kind().subs() {
            walk(sub, out);
        }
    }
    let mut out = Vec::new();
    if let Ok(hir) = parse(pattern) {
        walk(&hir, &mut out);
    }
    out
}

/// Reads a whole-pattern lookahead `(?=BODY)`: the body's delimiter, or `None` when the
/// pattern is not one. Only the whole pattern may be a lookahead; anywhere else a
/// lookaround is refused by [`read`].
pub(crate) fn read_lookahead(pattern: &str) -> Result<Option<Delim>, Refusal> {
    let Some(body) = pattern
        .strip_prefix("(?=")
        .and_then(|rest| rest.strip_suffix(')'))
    else {
        return Ok(None);
    };
    // `(?=a)(?=b)` strips to `a)(?=b`, which does not parse: the lookahead must be the
    // whole pattern.
    let Ok(hir) = parse(body) else {
        return Ok(None);
    };
    Ok(Some(Delim {
        alts: expand_lookahead(&hir)?,
    }))
}

/// A lookahead body is `free text, then a delimiter` (`[\s\S]*?</think>`): the free
/// part is allowed there (it is what the lookahead looks past), the rest is read as a
/// delimiter.
fn expand_lookahead(hir: &Hir) -> Result<Vec<Seq>, Refusal> {
    if let HirKind::Concat(subs) = hir.kind() {
        if let Some((first, rest)) = subs.split_first() {
            if is_any_repetition(first) {
                let rest = Hir::concat(rest.to_vec());
                return expand(&rest);
            }
        }
    }
    Err(format!(
        "the lookahead `(?={hir})` is not `(?=[\\s\\S]*?CLOSE)` (reasoning up to its close)"
    ))
}

fn parse(pattern: &str) -> Result<Hir, Refusal> {
    let translated = python_to_rust(pattern);
    regex_syntax::ParserBuilder::new()
        .dot_matches_new_line(true)
        .build()
        .parse(&translated)
        .map_err(|e| describe_parse_error(&translated, &e))
}

/// Python spells the end of the text `\Z`; `regex-syntax` spells it `\z`.
fn python_to_rust(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('Z') => out.push_str("\\z"),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn describe_parse_error(pattern: &str, e: &regex_syntax::Error) -> Refusal {
    use regex_syntax::ast::ErrorKind as A;
    if let regex_syntax::Error::Parse(p) = e {
        let span = p.span();
        let at = pattern
            .get(span.start.offset..span.end.offset)
            .filter(|s| !s.is_empty())
            .map(|s| format!(" `{s}`"))
            .unwrap_or_default();
        return match p.kind() {
            A::UnsupportedLookAround => format!(
                "a lookaround{at} inside the pattern cannot stream with bounded holding \
                 (only a whole-pattern `(?=...)` reasoning opener is read)"
            ),
            A::UnsupportedBackreference => {
                format!("a backreference{at} cannot stream with bounded holding")
            }
            _ => format!("the regex is not read: {}", p.kind()),
        };
    }
    format!("the regex is not read: {e}")
}

/// Expands `hir` into its finite set of piece sequences, or refuses.
fn expand(hir: &Hir) -> Result<Vec<Seq>, Refusal> {
    let alts = match hir.kind() {
        HirKind::Empty => vec![Vec::new()],
        HirKind::Literal(l) => {
            let text = String::from_utf8(l.0.to_vec())
                .map_err(|_| "a literal that is not UTF-8 text".to_owned())?;
            vec![vec![Piece::Lit(text)]]
        }
        HirKind::Class(c) => class_chars(c)
            .ok_or_else(|| {
                format!(
                    "the class `{hir}` outside a capture has too many members to read as \
                     literals"
                )
            })?
            .into_iter()
            .map(|ch| vec![Piece::Lit(ch.to_string())])
            .collect(),
        HirKind::Look(look) => match look {
            Look::Start => vec![vec![Piece::Start]],
            Look::End => vec![vec![Piece::End]],
            _ => return Err(format!("the assertion `{hir}` is not read")),
        },
        HirKind::Repetition(rep) => {
            if is_whitespace_class(&rep.sub) && !(rep.max.is_some() && single_char(&rep.sub)) {
                vec![vec![Piece::Ws]]
            } else if rep.min == 0 && rep.max == Some(1) {
                let mut out = vec![Vec::new()];
                out.extend(expand(&rep.sub)?);
                out
            } else if rep.max == Some(rep.min) && rep.min <= 4 {
                let one = expand(&rep.sub)?;
                let mut out = vec![Vec::new()];
                for _ in 0..rep.min {
                    out = product(&out, &one)?;
                }
                out
            } else {
                return Err(format!(
                    "the free repetition `{REP}` cannot stream with bounded holding \
                     (a reader would hold text until it knows where the repetition ends)"
                ));
            }
        }
        HirKind::Capture(cap) => match &cap.name {
            None => expand(&cap.sub)?,
            Some(name) => {
                let body = capture_body(&cap.sub).ok_or_else(|| {
                    format!(
                        "the capture `(?P<{name}>{})` is neither a name (`\\w+`, \
                         `[^>\\n]+`) nor a value (`.*?`)",
                        cap.sub
                    )
                })?;
                vec![vec![Piece::Capture {
                    name: name.to_string(),
                    body,
                }]]
            }
        },
        HirKind::Concat(subs) => {
            let mut out = vec![Vec::new()];
            for sub in subs {
                out = product(&out, &expand(sub)?)?;
            }
            out
        }
        HirKind::Alternation(subs) => {
            let mut out = Vec::new();
            for sub in subs {
                for alt in expand(sub)? {
                    if !out.contains(&alt) {
                        out.push(alt);
                    }
                }
            }
            if out.len() > MAX_ALTERNATIVES {
                return Err(too_many());
            }
            out
        }
    };
    Ok(alts.into_iter().map(merge).collect())
}

fn too_many() -> Refusal {
    format!("the pattern expands to more than {MAX_ALTERNATIVES} alternatives")
}

/// Every `a` followed by every `b`.
fn product(a: &[Seq], b: &[Seq]) -> Result<Vec<Seq>, Refusal> {
    if a.len() * b.len() > MAX_ALTERNATIVES {
        return Err(too_many());
    }
    let mut out = Vec::with_capacity(a.len() * b.len());
    for x in a {
        for y in b {
            let mut s = x.clone();
            s.extend(y.iter().cloned());
            let s = merge(s);
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    Ok(out)
}

/// Adjacent literals joined; adjacent whitespace runs joined.
fn merge(seq: Seq) -> Seq {
    let mut out: Seq = Vec::with_capacity(seq.len());
    for p in seq {
        match (out.last_mut(), p) {
            (Some(Piece::Lit(a)), Piece::Lit(b)) => a.push_str(&b),
            (Some(Piece::Ws), Piece::Ws) => {}
            (_, Piece::Lit(b)) if b.is_empty() => {}
            (_, p) => out.push(p),
        }
    }
    out
}

/// The members of a small class, in order.
fn class_chars(c: &Class) -> Option<Vec<char>> {
    let mut out = Vec::new();
    match c {
        Class::Unicode(u) => {
            for r in u.ranges() {
                for ch in r.start()..=r.end() {
                    out.push(ch);
                    if out.len() > MAX_CLASS_CHARS {
                        return None;
                    }
                }
            }
        }
        Class::Bytes(b) => {
            for r in b.ranges() {
                for byte in r.start()..=r.end() {
                    if !byte.is_ascii() {
                        return None;
                    }
                    out.push(char::from(byte));
                    if out.len() > MAX_CLASS_CHARS {
                        return None;
                    }
                }
            }
        }
    }
    Some(out)
}

fn single_char(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Literal(l) => std::str::from_utf8(&l.0).is_ok_and(|s| s.chars().count() == 1),
        HirKind::Class(c) => class_chars(c).is_some_and(|v| v.len() == 1),
        _ => false,
    }
}

/// A class (or a one-character literal) of whitespace only: `\s`, `[ \t]`, `\n`.
fn is_whitespace_class(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Class(Class::Unicode(u)) => u
            .ranges()
            .iter()
            .all(|r| (r.start()..=r.end()).all(char::is_whitespace)),
        HirKind::Class(Class::Bytes(b)) => b
            .ranges()
            .iter()
            .all(|r| (r.start()..=r.end()).all(|c| c.is_ascii_whitespace())),
        HirKind::Literal(l) => std::str::from_utf8(&l.0)
            .is_ok_and(|s| !s.is_empty() && s.chars().all(char::is_whitespace)),
        _ => false,
    }
}

/// Whether a class matches every character (`.` under DOTALL, `[\s\S]`).
fn is_any_class(hir: &Hir) -> bool {
    let HirKind::Class(Class::Unicode(u)) = hir.kind() else {
        return false;
    };
    let covered: u64 = u
        .ranges()
        .iter()
        .map(|r| u64::from(r.end()) - u64::from(r.start()) + 1)
        .sum();
    // Every scalar value: U+0000..U+10FFFF (a range may span the surrogates, which no
    // char is).
    covered == 0x11_0000 || covered == 0x11_0000 - 0x800
}

/// `X*` or `X*?` where X is any character: free text.
fn is_any_repetition(hir: &Hir) -> bool {
    matches!(hir.kind(), HirKind::Repetition(r) if r.min == 0 && r.max.is_none() && is_any_class(&r.sub))
}

/// What a named capture's body is, if it is one the compiler reads.
fn capture_body(sub: &Hir) -> Option<Body> {
    if is_any_repetition(sub) {
        return Some(Body::Any);
    }
    match sub.kind() {
        HirKind::Repetition(r) if r.max.is_none() && r.min <= 1 => match r.sub.kind() {
            HirKind::Class(_) if !is_any_class(&r.sub) => Some(Body::Word),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Piece {
        Piece::Lit(s.into())
    }

    fn word(name: &str) -> Piece {
        Piece::Capture {
            name: name.into(),
            body: Body::Word,
        }
    }

    #[test]
    fn literals_classes_and_whitespace() {
        assert_eq!(
            read(r"</think>\s*").unwrap().alts,
            vec![vec![lit("</think>"), Piece::Ws]]
        );
        assert_eq!(
            read(r"<\|im_end\|>\s*").unwrap().trimmed(),
            vec![vec![lit("<|im_end|>")]]
        );
        assert_eq!(
            read(r"<tool_call>\s*<function=(?P<name>[^\n>]+)>")
                .unwrap()
                .alts,
            vec![vec![
                lit("<tool_call>"),
                Piece::Ws,
                lit("<function="),
                word("name"),
                lit(">")
            ]]
        );
    }

    #[test]
    fn finite_alternatives_and_optional_groups_expand() {
        let d = read(r"\n?</response>").unwrap();
        assert_eq!(
            d.alts,
            vec![vec![lit("</response>")], vec![lit("\n</response>")]]
        );
        let d = read(r"(?:<turn\|>|<\|tool_response>|<eos>)\s*|$").unwrap();
        assert_eq!(
            d.trimmed(),
            vec![
                vec![lit("<turn|>")],
                vec![lit("<|tool_response>")],
                vec![lit("<eos>")],
                vec![Piece::End],
            ]
        );
        let d = read(r"(?:^|<think>\s*)").unwrap();
        assert_eq!(d.trimmed(), vec![vec![Piece::Start], vec![lit("<think>")]]);
        assert_eq!(read(r"\Z").unwrap().alts, vec![vec![Piece::End]]);
    }

    #[test]
    fn constructs_that_cannot_stream_are_named() {
        let e = read(r"(?:<\|message_model\|>)?[^<]*<\|content_thinking\|>").unwrap_err();
        assert!(e.contains("free repetition") && e.contains("[^<]"), "{e}");
        let e = read(r"<\|channel\|>commentary to=functions\.(?P<name>\w+).*?<\|message\|>")
            .unwrap_err();
        assert!(e.contains("free repetition"), "{e}");
        let e = read(r"<(?P<key>\w+)>\s*(?P<value>.*?)\s*</\1>").unwrap_err();
        assert!(e.contains("backreference") && e.contains(r"\1"), "{e}");
        let e = read(r"(?P<value>.*?)(?=<rfl:parameter)").unwrap_err();
        assert!(e.contains("lookaround"), "{e}");
        let e = read(r"[a-z]+x").unwrap_err();
        assert!(e.contains("free repetition"), "{e}");
    }

    #[test]
    fn a_whole_pattern_lookahead_is_read_as_its_body() {
        let d = read_lookahead(r"(?=[\s\S]*?</think>)").unwrap().unwrap();
        assert_eq!(d.alts, vec![vec![lit("</think>")]]);
        assert_eq!(read_lookahead("<think>").unwrap(), None);
        assert!(read_lookahead(r"(?=x+y)").is_err());
    }
}
