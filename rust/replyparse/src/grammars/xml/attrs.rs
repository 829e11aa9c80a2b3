//! Tag attributes (`<invoke name="get_weather">`, `<|open|>argument key="x" type="number"<|sep|>`)
//! and the XML entities a dialect escapes in them.
//!
//! A tag's attribute text is what lies between its open text and its end
//! (` name="f" index="1"`). Values may be quoted with `"` or `'`, or not quoted (up to the
//! next whitespace), with optional whitespace around `=` (`name = "f"`, as dots and
//! MiniMax M2 tolerate). A quoted value whose closing quote was not written is absent:
//! at the end of input a cut name is never completed (no invented names).

use std::borrow::Cow;

/// The value of attribute `key` in `header`, entities decoded when `entities`.
pub(crate) fn attribute<'a>(header: &'a str, key: &str, entities: bool) -> Option<Cow<'a, str>> {
    let mut s = header;
    loop {
        s = s.trim_start();
        if s.is_empty() {
            return None;
        }
        let name_len = s
            .find(|c: char| c == '=' || c.is_whitespace())
            .unwrap_or(s.len());
        let name = &s[..name_len];
        let after = s[name_len..].trim_start();
        let Some(value_text) = after.strip_prefix('=') else {
            // A bare attribute (no value), or stray text: skip it.
            if name_len == 0 {
                // A lone character that starts no name (`=` was handled above): step over.
                let c = s.chars().next().map_or(1, char::len_utf8);
                s = &s[c..];
            } else {
                s = &s[name_len..];
            }
            continue;
        };
        let value_text = value_text.trim_start();
        let (value, rest) = match value_text.chars().next() {
            Some(q @ ('"' | '\'')) => {
                let inner = &value_text[1..];
                let close = inner.find(q)?;
                (&inner[..close], &inner[close + 1..])
            }
            _ => {
                let end = value_text
                    .find(char::is_whitespace)
                    .unwrap_or(value_text.len());
                (&value_text[..end], &value_text[end..])
            }
        };
        if name == key {
            return Some(if entities {
                decode_entities(value)
            } else {
                Cow::Borrowed(value)
            });
        }
        s = rest;
    }
}

/// `&quot;` `&apos;` `&lt;` `&gt;` `&amp;` decoded (one pass, so `&amp;lt;` is `&lt;`);
/// any other `&` is text.
pub(crate) fn decode_entities(s: &str) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find('&') {
        out.push_str(&rest[..p]);
        rest = &rest[p..];
        let hit = [
            ("&quot;", '"'),
            ("&apos;", '\''),
            ("&lt;", '<'),
            ("&gt;", '>'),
            ("&amp;", '&'),
        ]
        .into_iter()
        .find(|(e, _)| rest.starts_with(e));
        match hit {
            Some((e, c)) => {
                out.push(c);
                rest = &rest[e.len()..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_quoted_unquoted_and_spaced() {
        let h = r#" name="f" index='1' bare key = v2 type="a b""#;
        assert_eq!(attribute(h, "name", false).as_deref(), Some("f"));
        assert_eq!(attribute(h, "index", false).as_deref(), Some("1"));
        assert_eq!(attribute(h, "key", false).as_deref(), Some("v2"));
        assert_eq!(attribute(h, "type", false).as_deref(), Some("a b"));
        assert_eq!(attribute(h, "bare", false), None);
        assert_eq!(attribute(h, "nam", false), None);
        assert_eq!(attribute(" xname=\"f\"", "name", false), None);
        // A cut quoted value is absent; an unquoted one is whatever was written.
        assert_eq!(attribute(" name=\"get_wea", "name", false), None);
        assert_eq!(
            attribute(" name=get_wea", "name", false).as_deref(),
            Some("get_wea")
        );
        assert_eq!(
            attribute(" = = name=\"x\"", "name", false).as_deref(),
            Some("x")
        );
    }

    #[test]
    fn entities() {
        let h = r#" tool="a&amp;b&quot;c" key="&lt;&gt;&apos;&amp;lt;&x""#;
        assert_eq!(attribute(h, "tool", true).as_deref(), Some("a&b\"c"));
        assert_eq!(attribute(h, "key", true).as_deref(), Some("<>'&lt;&x"));
        assert_eq!(
            attribute(h, "tool", false).as_deref(),
            Some("a&amp;b&quot;c")
        );
    }
}
