//! Values written as child elements (MiniMax M3): `NS<shipping>NS<city>Singapore NS</city>NS</shipping>`.
//!
//! The element syntax is the parameters' own: an element opens with the parameter open
//! text, its name and the name end (`]<]minimax[>[<city>`) and closes with the value
//! close template for that name (`]<]minimax[>[</city>`). A value held whole (it is
//! converted only once complete, like every typed value) is turned into JSON here:
//!
//! - no child element: a leaf, converted by its schema ([`schema::convert`]); an empty
//!   leaf whose schema is a container is `[]` / `{}`;
//! - children all named the declared item element (`<item>`), or a schema that says
//!   array (and not object): an array, each child converted by the schema's `items`;
//! - otherwise an object: each child by its property's schema, in order, a repeated name
//!   collected into a list at its first place; text beside the children (mixed content)
//!   is kept under `"$text"`.
//!
//! Depth is bounded ([`MAX_DEPTH`]): deeper markup stays text. A malformed child (no
//! close) ends the children: the rest is text. The output is always valid JSON.

use serde_json::Value;

use crate::grammars::schema;
use crate::schema::{items, member, Ty, Types};

/// Deepest element nesting converted; below it the markup is kept as a string.
pub(crate) const MAX_DEPTH: usize = 64;

/// The element markup, from the dialect's parameter syntax.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Elements<'a> {
    /// Opens an element, before its name (`]<]minimax[>[<`).
    pub open: &'a str,
    /// Ends the element's name (`>`).
    pub name_end: &'a str,
    /// The close tag, `{key}` standing for the element's name.
    pub close: &'a str,
    /// The name of array items (`item`).
    pub item: &'a str,
}

impl Elements<'_> {
    /// The open tag of the element `name`.
    fn open_tag(&self, name: &str) -> String {
        format!("{}{name}{}", self.open, self.name_end)
    }

    /// The close tag of the element `name`.
    fn close_tag(&self, name: &str) -> String {
        self.close.replace("{key}", name)
    }

    /// Where the element whose content starts at `from` closes: (content end, after the
    /// close tag), counting nested elements of the same name.
    fn matching_close(&self, raw: &str, from: usize, name: &str) -> Option<(usize, usize)> {
        let (open, close) = (self.open_tag(name), self.close_tag(name));
        let mut depth = 1usize;
        let mut at = from;
        loop {
            let c = raw[at..].find(&close)? + at;
            let o = raw[at..c].find(&open).map(|p| p + at);
            match o {
                Some(o) => {
                    depth += 1;
                    at = o + open.len();
                }
                None => {
                    depth -= 1;
                    if depth == 0 {
                        return Some((c, c + close.len()));
                    }
                    at = c + close.len();
                }
            }
        }
    }

    /// The child elements of `raw` and the text between them.
    fn children<'r>(&self, raw: &'r str) -> (Vec<(&'r str, &'r str)>, String) {
        let mut kids = Vec::new();
        let mut text = String::new();
        let mut pos = 0;
        while let Some(p) = raw[pos..].find(self.open).map(|p| p + pos) {
            let name_start = p + self.open.len();
            let Some(name_len) = raw[name_start..].find(self.name_end) else {
                break;
            };
            let name = &raw[name_start..name_start + name_len];
            let content = name_start + name_len + self.name_end.len();
            if name.is_empty() || name.starts_with('/') || name.contains(self.open) {
                break;
            }
            let Some((end, after)) = self.matching_close(raw, content, name) else {
                break;
            };
            text.push_str(&raw[pos..p]);
            kids.push((name, &raw[content..end]));
            pos = after;
        }
        text.push_str(&raw[pos..]);
        (kids, text)
    }

    /// The JSON source of a value written as `raw` (the text inside its element).
    pub(crate) fn convert(&self, raw: &str, sch: Option<&Value>, depth: usize) -> String {
        let types = Types::of(sch).into_try();
        if depth >= MAX_DEPTH {
            return schema::convert(raw, &[Ty::String]);
        }
        let (kids, text) = self.children(raw);
        if kids.is_empty() {
            if raw.trim().is_empty() {
                if types.first() == Some(&Ty::Array) {
                    return "[]".into();
                }
                if types.first() == Some(&Ty::Object) {
                    return "{}".into();
                }
            }
            return schema::convert(raw, &types);
        }
        let all_items = kids.iter().all(|(n, _)| *n == self.item);
        let array = all_items || (types.contains(&Ty::Array) && !types.contains(&Ty::Object));
        if array {
            let item = sch.and_then(items);
            let parts: Vec<String> = kids
                .iter()
                .map(|(_, inner)| self.convert(inner, item, depth + 1))
                .collect();
            return format!("[{}]", parts.join(", "));
        }
        let mut members: Vec<(&str, Vec<String>)> = Vec::new();
        for (name, inner) in &kids {
            let v = self.convert(inner, sch.and_then(|s| member(s, name)), depth + 1);
            match members.iter_mut().find(|(k, _)| k == name) {
                Some((_, vs)) => vs.push(v),
                None => members.push((name, vec![v])),
            }
        }
        let mut out = String::from("{");
        let mut first = true;
        let mut member = |out: &mut String, key: &str, value: &str| {
            if !first {
                out.push_str(", ");
            }
            first = false;
            out.push('"');
            schema::escape_json_into(out, key);
            out.push_str("\": ");
            out.push_str(value);
        };
        if !text.trim().is_empty() {
            member(
                &mut out,
                "$text",
                &schema::convert(text.trim(), &[Ty::String]),
            );
        }
        for (key, vs) in &members {
            if vs.len() == 1 {
                member(&mut out, key, &vs[0]);
            } else {
                member(&mut out, key, &format!("[{}]", vs.join(", ")));
            }
        }
        out.push('}');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NS: &str = "]<]minimax[>[";

    fn el() -> Elements<'static> {
        Elements {
            open: "]<]minimax[>[<",
            name_end: ">",
            close: "]<]minimax[>[</{key}>",
            item: "item",
        }
    }

    fn t(name: &str, inner: &str) -> String {
        format!("{NS}<{name}>{inner}{NS}</{name}>")
    }

    #[test]
    fn objects_arrays_items_and_repeats() {
        let schema = json!({"type": "object", "properties": {
            "zip": {"type": "integer"}, "city": {"type": "string"}}});
        let raw = format!("{}{}", t("city", "Singapore"), t("zip", "018956"));
        // "018956" is not an integer (a leading zero): it stays a string.
        assert_eq!(
            el().convert(&raw, Some(&schema), 0),
            r#"{"city": "Singapore", "zip": "018956"}"#
        );
        let items = format!(
            "{}{}",
            t("item", &t("sku", "a")),
            t("item", &format!("{}{}", t("sku", "b"), t("qty", "5")))
        );
        let s = json!({"type": "array", "items": {"type": "object", "properties": {"qty": {"type": "integer"}}}});
        assert_eq!(
            el().convert(&items, Some(&s), 0),
            r#"[{"sku": "a"}, {"sku": "b", "qty": 5}]"#
        );
        let rep = format!("{}{}", t("tag", "a"), t("tag", "b"));
        assert_eq!(el().convert(&rep, None, 0), r#"{"tag": ["a", "b"]}"#);
        // Same-named nesting is matched by depth.
        let same = t("a", &t("a", "x"));
        assert_eq!(el().convert(&same, None, 0), r#"{"a": {"a": "x"}}"#);
        assert_eq!(el().convert(" ", Some(&json!({"type": "array"})), 0), "[]");
        let mixed = format!("note {}", t("k", "v"));
        assert_eq!(
            el().convert(&mixed, None, 0),
            r#"{"$text": "note", "k": "v"}"#
        );
        // A child with no close ends the children: text.
        let cut = format!("{NS}<k>v");
        assert_eq!(
            el().convert(&cut, None, 0),
            serde_json::to_string(&cut).unwrap()
        );
        let deep = (0..MAX_DEPTH + 3).fold("x".to_string(), |acc, _| t("d", &acc));
        serde_json::from_str::<Value>(&el().convert(&deep, None, 0)).unwrap();
    }
}
