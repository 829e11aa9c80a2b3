//! Forced calls in an XML-like dialect: each call is its own block, `open`, the
//! function (its open text and name), the parameters, the function close, `close`.
//!
//! The Lark grammar follows any declared markup: names and keys as text or in their
//! attribute (written `name="F"`), a value's own type attribute (one alternative per
//! type the schema allows: `type="string"` with raw text, the others with JSON source),
//! element-named keys (each key's own close tag). It writes the canonical form only:
//! no CDATA, no skipped wrappers, no JSON body, no nested elements (object values are
//! JSON source, which the parser reads as such). The structural tag uses xgrammar's
//! `json_schema` styles, which exist for three markups (Qwen3-Coder's `qwen_xml`, GLM's
//! `glm_xml`, MiniMax's `minimax_xml`, the last inside one block of invokes); another
//! declared markup is refused there, with its Lark grammar still available.

use serde_json::{json, Value};

use super::{ValueWhitespace, XmlSyntax};
use crate::constraint_kit::lark::{self, Lark, KEY_NAME};
use crate::constraint_kit::structural as st;
use crate::constraint_kit::CallTags;
use crate::constraint_kit::{lark_after_reasoning, lark_calls, pytext, st_blocks, st_section};
use crate::constraint_kit::{CallConstraint, Forbidden, Function, ReasoningSection};
use crate::error::{Error, Result};
use crate::schema::{self, Types};

/// The markup fields xgrammar's styles fix: function open, name end, function close,
/// parameter open, parameter name end, value open, value close.
type Shape<'a> = (
    &'a str,
    &'a str,
    Option<&'a str>,
    &'a str,
    &'a str,
    Option<&'a str>,
    &'a str,
);

/// `qwen_xml`: `<function=F>` `<parameter=P>V</parameter>` `</function>`.
const QWEN_XML: Shape<'static> = (
    "<function=",
    ">",
    Some("</function>"),
    "<parameter=",
    ">",
    None,
    "</parameter>",
);
/// `glm_xml`: `F\n` `<arg_key>P</arg_key><arg_value>V</arg_value>`.
const GLM_XML: Shape<'static> = (
    "",
    "\n",
    None,
    "<arg_key>",
    "</arg_key>",
    Some("<arg_value>"),
    "</arg_value>",
);
/// `minimax_xml`: `<invoke name="F">` `<parameter name="P">V</parameter>` `</invoke>`
/// (names in the `name` attribute).
const MINIMAX_XML: Shape<'static> = (
    "<invoke",
    ">",
    Some("</invoke>"),
    "<parameter",
    ">",
    None,
    "</parameter>",
);

/// The markup of `x` in the fields the styles fix, to compare with theirs.
fn shape(x: &XmlSyntax) -> Shape<'_> {
    (
        &x.function_open,
        &x.function_name_end,
        x.function_close.as_deref(),
        &x.param_open,
        &x.param_name_end,
        x.value_open.as_deref(),
        &x.value_close,
    )
}

/// The xgrammar style of a markup, if it has one: the tag shape, names as text (or in
/// `name` attributes for MiniMax's), and nothing the styles cannot write.
fn style(x: &XmlSyntax) -> Option<&'static str> {
    let plain = x.type_attr.is_none() && x.nested.is_none() && !x.unquote;
    let text_names = x.name_attr.is_none() && x.key_attr.is_none();
    let attr_names =
        x.name_attr.as_deref() == Some("name") && x.key_attr.as_deref() == Some("name");
    match shape(x) {
        QWEN_XML if plain && text_names => Some("qwen_xml"),
        GLM_XML if plain && text_names => Some("glm_xml"),
        MINIMAX_XML if plain && attr_names => Some("minimax_xml"),
        _ => None,
    }
}

/// The constraint writer of one XML-like dialect (see the module docs).
pub(crate) struct XmlCalls<'a> {
    /// The dialect's name (for messages) and its block's open and close tags.
    d: CallTags<'a>,
    /// The dialect's markup.
    x: &'a XmlSyntax,
}

impl<'a> XmlCalls<'a> {
    /// The writer for markup `x` inside the dialect's tags `d`.
    pub(crate) fn new(x: &'a XmlSyntax, d: CallTags<'a>) -> Self {
        XmlCalls { d, x }
    }

    /// The block close, empty when the dialect has none.
    fn close(&self) -> &str {
        self.d.close.unwrap_or("")
    }

    /// The function's open markup with its name as text: `<function=F>`, `"F">` after
    /// MiniCPM-5's `<function name=`.
    fn function_head(&self, name: &str) -> String {
        let x = self.x;
        // A name end that is whitespace (GLM's newline) is JSON-like whitespace the `WS?`
        // before the first parameter covers; a visible one is markup.
        let end = &x.function_name_end;
        let end = if pytext::has_non_space(end) {
            end.as_str()
        } else {
            ""
        };
        let quote = if x.unquote { "\"" } else { "" };
        format!("{}{quote}{name}{quote}{end}", x.function_open)
    }
}

/// xgrammar nodes the shared helpers do not write.
fn optional(content: Value) -> Value {
    json!({"type": "optional", "content": content})
}

/// Zero or more of `content`.
fn star(content: Value) -> Value {
    json!({"type": "star", "content": content})
}

/// Optional whitespace, as the shared structural-tag helpers write it.
fn ws() -> Value {
    st::regex(st::WS_REGEX)
}

/// A regex matching `text` literally.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$/-".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Other attributes after an attribute name (Kimi K3's `index="1"`).
const MORE_ATTRS: &str = r#"( [A-Za-z_][A-Za-z0-9_]*="[^"<>]*")*"#;

impl XmlCalls<'_> {
    /// A raw value up to and including `close`, constrained where the schema has a raw
    /// form (enums; integer, number, boolean, null; JSON objects / arrays); free text
    /// otherwise (as the Lark grammar's `text_value`).
    fn st_value(&self, sub: Option<&Value>, close: &str) -> Value {
        let null = Value::Null;
        let sub = sub.unwrap_or(&null);
        let nl = || {
            st::regex(if self.x.whitespace() == ValueWhitespace::Newline {
                "\n?"
            } else {
                ""
            })
        };
        if let Some(values) = schema::enum_values(sub) {
            let raws: Vec<String> = values.iter().map(|v| lark::raw(v)).collect();
            if raws.iter().all(|r| !r.contains(close)) {
                let alts = raws.iter().map(|r| st::const_string(r)).collect();
                return st::sequence(vec![nl(), st::or(alts), nl(), st::const_string(close)]);
            }
        }
        if Types::of(Some(sub)).is_text() || schema::enum_values(sub).is_some() {
            st::tag("", st::any_text(&[]), close)
        } else {
            st::sequence(vec![
                ws(),
                st::json_schema(sub, None),
                ws(),
                st::const_string(close),
            ])
        }
    }

    /// One parameter (`key` None: any key) in the generic structural tag.
    fn st_param(&self, key: Option<&str>, sub: Option<&Value>) -> Result<Value> {
        let x = self.x;
        let close = match key {
            Some(k) => x.value_close_for(k),
            None if x.element_keys() => {
                return Err(Error::InvalidTools(format!(
                    "the {} dialect closes each value with its own key's tag, so a parameter \
                     of a schema that declares no properties cannot be constrained",
                    self.d.name
                )))
            }
            None => x.value_close.clone(),
        };
        let mut seq = vec![ws()];
        let key_re = r#"[^<>"\s]+"#;
        match (&x.key_attr, key) {
            (Some(a), Some(k)) => {
                seq.push(st::const_string(&format!("{} {a}=\"{k}\"", x.param_open)))
            }
            (Some(a), None) => seq.push(st::regex(&format!(
                "{}{}",
                regex_escape(&format!("{} {a}=\"", x.param_open)),
                format_args!("{key_re}\"")
            ))),
            (None, Some(k)) => seq.push(st::const_string(&format!("{}{k}", x.param_open))),
            (None, None) => seq.push(st::regex(&format!(
                "{}{key_re}",
                regex_escape(&x.param_open)
            ))),
        }
        let value_open: Vec<Value> = given(x.value_open.as_deref())
            .map(|v| vec![ws(), st::const_string(v)])
            .unwrap_or_default();
        let end = st::const_string(&x.param_name_end);
        let Some(type_attr) = &x.type_attr else {
            seq.push(end);
            seq.extend(value_open);
            seq.push(self.st_value(sub, &close));
            return Ok(st::sequence(seq));
        };
        let types = Types::of(sub);
        let mut alts = Vec::new();
        if types.is_text() {
            let mut a = vec![
                st::const_string(&format!(" {type_attr}=\"string\"")),
                end.clone(),
            ];
            a.extend(value_open.clone());
            a.push(self.st_value(sub, &close));
            alts.push(st::sequence(a));
        }
        let others = lark::json_type_names(&types).join("|");
        if !others.is_empty() {
            let empty = json!({});
            let mut a = vec![
                st::regex(&format!(" {}=\"({others})\"", regex_escape(type_attr))),
                end,
            ];
            a.extend(value_open);
            a.extend([
                ws(),
                st::json_schema(sub.unwrap_or(&empty), None),
                ws(),
                st::const_string(&close),
            ]);
            alts.push(st::sequence(a));
        }
        seq.push(st::or(alts));
        Ok(st::sequence(seq))
    }

    /// The structural tag of a markup xgrammar has no style for, from its generic
    /// formats: each function a `tag` (its open markup with the name as `begin`), the
    /// parameters in schema order inside (required ones mandatory, the others
    /// `optional`; any key, `star`, when the schema declares none), values as
    /// [`st_value`](Self::st_value) writes them; one block of functions or a block each,
    /// as the dialect writes several calls.
    fn generic_structural_tag(
        &self,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<Value> {
        let x = self.x;
        let (open, close) = (self.d.open, self.close());
        let fclose = given(x.function_close.as_deref());
        let mut tags = Vec::new();
        for f in fns {
            let mut content = Vec::new();
            let head = match &x.name_attr {
                Some(a) => {
                    content.push(st::regex(MORE_ATTRS));
                    content.push(st::const_string(&x.function_name_end));
                    format!("{} {a}=\"{}\"", x.function_open, f.name)
                }
                None => self.function_head(f.name),
            };
            let props = schema::properties(&f.params);
            for (key, sub) in &props.declared {
                let sub = Some(*sub).filter(|s| !s.is_null());
                let p = self.st_param(Some(key), sub)?;
                content.push(if props.is_required(key) {
                    p
                } else {
                    optional(p)
                });
            }
            if props.open {
                content.push(star(self.st_param(None, None)?));
            }
            content.push(ws());
            if x.one_block {
                let Some(fclose) = fclose else {
                    return Err(Error::InvalidTools(format!(
                        "the {} dialect writes several functions in one block without a \
                         function close, so tool_choice required / named cannot be constrained",
                        self.d.name
                    )));
                };
                tags.push(st::tag(&head, st::sequence(content), fclose));
            } else {
                if let Some(fclose) = fclose {
                    content.extend([st::const_string(fclose), ws()]);
                }
                tags.push(st::tag(
                    &format!("{open}{head}"),
                    st::sequence(content),
                    close,
                ));
            }
        }
        Ok(if x.one_block {
            st_section(open, tags, close, many, reasoning)
        } else {
            st_blocks(tags, many, reasoning)
        })
    }
}

/// `text` unless it is empty or `None`.
fn given(text: Option<&str>) -> Option<&str> {
    text.filter(|t| !t.is_empty())
}

impl CallConstraint for XmlCalls<'_> {
    fn dialect_name(&self) -> &str {
        self.d.name
    }

    /// A name ends at the name end (or, for a whitespace name end, at any whitespace),
    /// a parameter or the block close; a key at the key end. In an attribute, or
    /// quoted, neither holds a quote (nor an `&` where entities are decoded).
    fn forbidden(&self) -> Forbidden {
        let x = self.x;
        let mut in_names = vec![x.param_open.clone(), self.close().to_owned()];
        if pytext::has_non_space(&x.function_name_end) {
            in_names.push(x.function_name_end.clone());
        } else {
            in_names.extend([" ", "\t", "\n", "\r"].map(String::from));
        }
        let mut in_keys = vec![x.param_name_end.clone()];
        let quoted = ["\"".to_owned()]
            .into_iter()
            .chain(x.entities.then(|| "&".to_owned()));
        if x.name_attr.is_some() || x.unquote {
            in_names.extend(quoted.clone());
        }
        if x.key_attr.is_some() {
            in_keys.extend(quoted);
        }
        if x.element_keys() {
            in_keys.extend(["/", "<", " "].map(String::from));
        }
        Forbidden { in_names, in_keys }
    }

    fn structural_tag(
        &self,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<Value> {
        let (open, close) = (&self.d.open, self.close());
        match style(self.x) {
            Some("qwen_xml") => {
                let tags = fns
                    .iter()
                    .map(|f| {
                        st::tag(
                            &format!("{open}\n<function={}>\n", f.name),
                            st::json_schema(&f.params, Some("qwen_xml")),
                            &format!("\n</function>\n{close}"),
                        )
                    })
                    .collect();
                Ok(st_blocks(tags, many, reasoning))
            }
            Some("glm_xml") => {
                let tags = fns
                    .iter()
                    .map(|f| {
                        st::tag(
                            &format!("{open}{}", f.name),
                            st::json_schema(&f.params, Some("glm_xml")),
                            close,
                        )
                    })
                    .collect();
                Ok(st_blocks(tags, many, reasoning))
            }
            Some(_) => {
                // MiniMax's: one block holding the invokes.
                let tags = fns
                    .iter()
                    .map(|f| {
                        st::tag(
                            &format!("<invoke name=\"{}\">\n", f.name),
                            st::json_schema(&f.params, Some("minimax_xml")),
                            "</invoke>\n",
                        )
                    })
                    .collect();
                Ok(st_section(
                    &format!("{open}\n"),
                    tags,
                    close,
                    many,
                    reasoning,
                ))
            }
            None => self.generic_structural_tag(fns, many, reasoning),
        }
    }

    fn lark_start(
        &self,
        l: &mut Lark<'_>,
        fns: &[Function<'_>],
        many: bool,
        reasoning: Option<&ReasoningSection>,
    ) -> Result<String> {
        let x = self.x;
        let trims = x.whitespace() == ValueWhitespace::Newline;
        let mut param = |l: &mut Lark<'_>,
                         rule: &str,
                         key: Option<&str>,
                         sub: Option<&Value>|
         -> Result<String> {
            let name = key.map_or(KEY_NAME.to_owned(), |k| pytext::string(k, false));
            let close = match key {
                Some(k) => x.value_close_for(k),
                None if x.element_keys() => {
                    return Err(Error::InvalidTools(format!(
                        "the {} dialect closes each value with its own key's tag, so a \
                         parameter of a schema that declares no properties cannot be \
                         constrained",
                        self.d.name
                    )))
                }
                None => x.value_close.clone(),
            };
            let mut head = match &x.key_attr {
                Some(a) => format!(
                    r#"{} {name} {}"#,
                    l.lit(&format!("{} {a}=\"", x.param_open)),
                    l.lit("\"")
                ),
                None => format!("{} {name}", l.lit(&x.param_open)),
            };
            let end = l.lit(&x.param_name_end);
            let value_open = given(x.value_open.as_deref())
                .map(|v| format!(" WS? {}", l.lit(v)))
                .unwrap_or_default();
            let Some(type_attr) = &x.type_attr else {
                head.push_str(&format!(" {end}{value_open}"));
                let value = lark::text_value(l, &format!("{rule}_v"), sub, &close, trims)?;
                return Ok(l.rule(rule, &format!("WS? {head} {value}")));
            };
            // The value's own type: raw text for `string`, JSON source for the others.
            let types = Types::of(sub);
            let mut alts = Vec::new();
            if types.is_text() {
                let raw = lark::text_value(l, &format!("{rule}_s"), sub, &close, trims)?;
                let t = l.lit(&format!(" {type_attr}=\"string\""));
                alts.push(format!("{t} {end}{value_open} {raw}"));
            }
            let others = lark::json_type_names(&types);
            if !others.is_empty() {
                let empty = serde_json::json!({});
                let js = l.rule(
                    &format!("{rule}_j"),
                    &lark::json_schema(sub.unwrap_or(&empty)),
                );
                let names: Vec<String> = others.iter().map(|t| pytext::string(t, false)).collect();
                let (open_t, q, c) = (
                    l.lit(&format!(" {type_attr}=\"")),
                    l.lit("\""),
                    l.lit(&close),
                );
                alts.push(format!(
                    "{open_t} ({}) {q} {end}{value_open} WS? {js} WS? {c}",
                    names.join(" | ")
                ));
            }
            Ok(l.rule(rule, &format!("WS? {head} ({})", alts.join(" | "))))
        };
        let mut calls = Vec::new();
        for (i, f) in fns.iter().enumerate() {
            let head = match &x.name_attr {
                // Other attributes may follow the name (Kimi K3's `index="1"`).
                Some(a) => format!(
                    r#"{} (/ [A-Za-z_][A-Za-z0-9_]*="[^"<>]*"/)* {}"#,
                    l.lit(&format!("{} {a}=\"{}\"", x.function_open, f.name)),
                    l.lit(&x.function_name_end)
                ),
                None => l.lit(&self.function_head(f.name)),
            };
            let mut body = Vec::new();
            if !x.one_block {
                body.extend([l.lit(self.d.open), "WS?".into()]);
            }
            body.push(head);
            body.push(lark::params(l, &format!("p_{i}"), &f.params, &mut param)?);
            if let Some(function_close) = given(x.function_close.as_deref()) {
                body.extend(["WS?".into(), l.lit(function_close)]);
            }
            if !x.one_block {
                body.extend(["WS?".into(), l.lit(self.close())]);
            }
            calls.push(l.rule(&format!("call_{i}"), &lark::join_nonempty(&body)));
        }
        let call = l.rule("call", &calls.join(" | "));
        let calls = if x.one_block {
            let (open, close) = (l.lit(self.d.open), l.lit(self.close()));
            lark_calls(&open, &call, &close, many)
        } else {
            lark_calls("", &call, "", many)
        };
        lark_after_reasoning(l, &calls, reasoning)
    }
}
