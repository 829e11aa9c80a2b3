//! The template source as transformers' Jinja environment reads it, rewritten for
//! minijinja where the two grammars differ.
//!
//! transformers registers an extension for `{% generation %}` ... `{% endgeneration %}`
//! (it renders its body and, when asked, records where the body went). minijinja has no
//! custom tags, so each such tag becomes `{% if true %}` / `{% endif %}` with its
//! whitespace-control marks kept: same output, same trimming, same line numbers.
//! `{% do %}` is minijinja's and not transformers' (the `do` extension is not loaded
//! there), so it is refused as Jinja refuses it.

/// A tag the scanner found, by byte range of the whole `{% ... %}` and its name.
struct Tag {
    start: usize,
    end: usize,
    /// The tag's text between the delimiters and whitespace-control marks, trimmed.
    body_start: usize,
    body_end: usize,
}

/// Scans from `from` (just after an opening `{{` or `{%`) to the matching closer,
/// skipping string literals and balanced brackets as Jinja's lexer does. Returns the
/// offset of the closer, or `None` when the source ends first.
fn find_close(src: &[u8], from: usize, closer: &[u8; 2]) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = from;
    while i < src.len() {
        match src[i] {
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < src.len() && src[i] != q {
                    i += if src[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b'}' if depth > 0 => depth -= 1,
            c if depth == 0 && c == closer[0] && src.get(i + 1) == Some(&closer[1]) => {
                return Some(i)
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Every `{% ... %}` tag outside comments and raw blocks, in order.
fn tags(source: &str) -> Vec<Tag> {
    let src = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut in_raw = false;
    while let Some(off) = memchr::memchr(b'{', &src[i..]) {
        let open = i + off;
        let next = src.get(open + 1).copied();
        i = open + 1;
        let closer: &[u8; 2] = match next {
            Some(b'#') if !in_raw => {
                match memchr::memmem::find(&src[open + 2..], b"#}") {
                    Some(p) => i = open + 2 + p + 2,
                    None => break,
                }
                continue;
            }
            Some(b'{') if !in_raw => b"}}",
            Some(b'%') => b"%}",
            _ => continue,
        };
        let Some(close) = find_close(src, open + 2, closer) else {
            break;
        };
        i = close + 2;
        if closer == b"}}" {
            continue;
        }
        let mut body_start = open + 2;
        let mut body_end = close;
        if matches!(src.get(body_start), Some(b'-' | b'+')) {
            body_start += 1;
        }
        if body_end > body_start && matches!(src[body_end - 1], b'-' | b'+') {
            body_end -= 1;
        }
        let body = source[body_start..body_end].trim();
        let body_start = body_start + source[body_start..body_end].find(body).unwrap_or(0);
        let body_end = body_start + body.len();
        if in_raw && body != "endraw" {
            continue;
        }
        in_raw = body == "raw";
        out.push(Tag {
            start: open,
            end: close + 2,
            body_start,
            body_end,
        });
    }
    out
}

/// The source with `{% generation %}` tags rewritten, or the message of the syntax
/// error Jinja would raise (with the line).
pub(crate) fn prepare(source: &str) -> Result<std::borrow::Cow<'_, str>, (String, usize)> {
    let mut out = String::new();
    let mut copied = 0;
    for tag in tags(source) {
        let body = &source[tag.body_start..tag.body_end];
        let name = body
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .next()
            .unwrap_or("");
        let replacement = match name {
            "generation" if body == "generation" => "if true",
            "endgeneration" if body == "endgeneration" => "endif",
            "do" => {
                let line = source[..tag.start].matches('\n').count() + 1;
                return Err(("Encountered unknown tag 'do'".into(), line));
            }
            _ => continue,
        };
        debug_assert!(tag.end > tag.body_end);
        out.push_str(&source[copied..tag.body_start]);
        out.push_str(replacement);
        copied = tag.body_end;
    }
    if copied == 0 {
        return Ok(std::borrow::Cow::Borrowed(source));
    }
    out.push_str(&source[copied..]);
    Ok(std::borrow::Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_tags_become_blocks() {
        let src =
            "{%- generation -%}x{% endgeneration %}{{ '{% generation %}' }}{# {% generation %} #}";
        assert_eq!(
            prepare(src).unwrap(),
            "{%- if true -%}x{% endif %}{{ '{% generation %}' }}{# {% generation %} #}"
        );
        let raw = "{% raw %}{% generation %}{% endraw %}";
        assert_eq!(prepare(raw).unwrap(), raw);
    }

    #[test]
    fn do_is_refused_with_its_line() {
        assert_eq!(prepare("a\n{% do x %}").unwrap_err().1, 2);
    }
}
