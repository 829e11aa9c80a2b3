//! Small lexing helpers shared by the payload grammars.
//!
//! Every grammar asks the same two questions of the text at its position: how much JSON
//! whitespace comes first, and does the text start with a tag, or could it still become
//! the tag once more text arrives? Answering them in one place keeps the "hold a
//! possible prefix, never guess" rule identical across dialects.

/// How the text at a position relates to a tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// It starts with the tag.
    Tag,
    /// It is a proper prefix of the tag (possibly empty): wait for more text.
    Partial,
    /// Neither.
    Other,
}

/// Classifies `rest` against `tag`.
pub fn head(rest: &str, tag: &str) -> Head {
    if rest.starts_with(tag) {
        Head::Tag
    } else if tag.starts_with(rest) {
        Head::Partial
    } else {
        Head::Other
    }
}

/// Whether `rest` is a proper prefix of `tag` (more text may complete it).
pub fn partial(rest: &str, tag: &str) -> bool {
    rest.len() < tag.len() && tag.starts_with(rest)
}

/// `s` without its leading JSON whitespace. Other Unicode spaces are payload text.
pub fn trim_ws(s: &str) -> &str {
    s.trim_start_matches([' ', '\t', '\n', '\r'])
}

/// Length of the leading JSON whitespace of `s`.
pub fn ws_len(s: &str) -> usize {
    s.len() - trim_ws(s).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        assert_eq!(head("<a>x", "<a>"), Head::Tag);
        assert_eq!(head("<a", "<a>"), Head::Partial);
        assert_eq!(head("", "<a>"), Head::Partial);
        assert_eq!(head("<b", "<a>"), Head::Other);
        assert!(partial("", "<a>") && partial("<a", "<a>") && !partial("<a>", "<a>"));
        assert_eq!(ws_len(" \t\n\r\u{3000}x"), 4);
    }
}
