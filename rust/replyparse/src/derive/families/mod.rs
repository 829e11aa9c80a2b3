//! One reader per grammar family: each looks at the call probes' sections and says
//! whether they are its markup, and with which fields.

pub(crate) mod envelope;
pub(crate) mod header;
pub(crate) mod pythonic;
pub(crate) mod tagged;

use serde_json::Value as Json;

/// The JSON value that starts at byte `at` of `text`: `(at, end, value)`.
pub(crate) fn json_at(text: &str, at: usize) -> Option<(usize, usize, Json)> {
    let mut values = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Json>();
    match values.next() {
        Some(Ok(v)) => Some((at, at + values.byte_offset(), v)),
        _ => None,
    }
}
