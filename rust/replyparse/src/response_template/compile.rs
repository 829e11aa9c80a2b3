//! Compiling a template's fields into declarations of existing families: the
//! `tool_calls` field into a [`ToolDialect`] (JSON envelope, header + JSON, Gemma call
//! notation, XML-like, pythonic), the reasoning field into a [`ReasoningDialect`], the
//! content field's delimiters into content wrappers or dropped markup.
//!
//! Each construct maps onto a declaration field (the docs' table): literal delimiters
//! and their finite expansions are tags and aliases; whitespace at a delimiter's edge is
//! whitespace; a named capture between literals is the family's name rule; a `$`
//! closer is no closer; a zero-width opener of the reasoning (`^`, or a lookahead up to
//! its close) is a start rule. Anything else is refused, naming the field and the
//! construct.

use serde_json::Value;

use super::pattern::{Body, Delim, Piece, Seq};
use super::read::{placeholder, Delimiter, Field, Role, Template};
use crate::dialect::{DropMarkup, ReasoningDialect, StartMode, ToolDialect, WrapperTags};
use crate::grammars::envelope::{Container as EnvContainer, EnvelopeSyntax};
use crate::grammars::gemma::{GemmaSyntax, Values, CALL};
use crate::grammars::header::HeaderSyntax;
use crate::grammars::pythonic::{Container as PyContainer, PythonicSyntax};
use crate::grammars::xml::{ValueWhitespace, XmlSyntax};
use crate::grammars::Syntax;

/// What the fields compile to, before naming.
#[derive(Debug, Clone)]
pub(crate) struct Draft {
    /// The tool calls compiled, or why they cannot be (selection by their literal
    /// pieces may still read them).
    pub tool: Option<Result<ToolDialect, String>>,
    pub reasoning: Option<ReasoningDialect>,
    /// The reasoning opens at the start of the response by the template's own rule
    /// (`^`, or a lookahead up to the close), not only at a tag.
    pub start_rule: bool,
    /// What was read past, in plain words (end-of-turn markers dropped, ...).
    pub notes: Vec<String>,
}

/// Compiles every field. `name` is the name the declarations get.
pub(crate) fn compile(t: &Template, name: &str) -> Result<Draft, String> {
    let mut notes = Vec::new();
    let (reasoning, start_rule) = match t.field(Role::Reasoning) {
        Some(f) => {
            let (d, rule) = reasoning(f, name)?;
            (Some(d), rule)
        }
        None => (None, false),
    };
    let mut tool = t.field(Role::Tools).map(|f| tool(f, name));
    let mut reasoning = reasoning;
    if let Some(f) = t.field(Role::Content) {
        let (wrappers, dropped) = content(f)?;
        if !wrappers.is_empty() || !dropped.is_empty() {
            // The markup goes with a dialect that is in every parser built from the
            // template: the tool dialect, else the reasoning dialect.
            match (&mut tool, &mut reasoning) {
                (Some(Ok(d)), _) => {
                    d.content_wrappers = wrappers;
                    d.drop_markup = dropped;
                }
                (None | Some(Err(_)), Some(d)) => {
                    d.content_wrappers = wrappers;
                    d.drop_markup = dropped;
                }
                // Tool calls a registered dialect may still read by selection: that
                // dialect's own rules then apply.
                (Some(Err(_)), None) => {}
                (None, None) => notes.push(
                    "the content field's delimiters stay in the content: the template \
                     declares no reasoning or tool field to hold them"
                        .into(),
                ),
            }
        }
    }
    Ok(Draft {
        tool,
        reasoning,
        start_rule,
        notes,
    })
}

/// The delimiter read, or its refusal as a message naming the field's key.
fn delim<'a>(f: &Field, d: &'a Delimiter) -> Result<&'a Delim, String> {
    d.read
        .as_ref()
        .map_err(|e| format!("{}: {e}", f.path(d.key)))
}

fn refuse(f: &Field, key: &str, problem: impl std::fmt::Display) -> String {
    format!("{}: {problem}", f.path(key))
}

/// The literal of a one-literal alternative.
fn only_literal(seq: &[Piece]) -> Option<&str> {
    match seq {
        [Piece::Lit(l)] => Some(l),
        _ => None,
    }
}

/// A closer's literal tags (its `$` alternatives say the region may also end with the
/// text, which every region does), or a refusal.
fn close_literals(f: &Field, d: &Delimiter) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for alt in delim(f, d)?.trimmed() {
        match alt.as_slice() {
            [Piece::End] | [] => {}
            _ => match only_literal(&alt) {
                Some(l) => out.push(l.to_owned()),
                None => {
                    return Err(refuse(
                        f,
                        d.key,
                        format!("the closer {} is not literal text", show(&alt)),
                    ))
                }
            },
        }
    }
    Ok(out)
}

/// One alternative as a reader sees it, for messages.
fn show(seq: &Seq) -> String {
    let mut s = String::new();
    for p in seq {
        match p {
            Piece::Lit(l) => s.push_str(&format!("{l:?}")),
            Piece::Ws => s.push_str(" \\s* "),
            Piece::Capture { name, .. } => s.push_str(&format!(" (?P<{name}>...) ")),
            Piece::Start => s.push('^'),
            Piece::End => s.push('$'),
        }
    }
    s.trim().to_owned()
}

fn reasoning(f: &Field, name: &str) -> Result<(ReasoningDialect, bool), String> {
    if f.parser != "text" {
        return Err(refuse(
            f,
            "content",
            format!("reasoning is text, not {:?}", f.parser),
        ));
    }
    if f.transform.is_some() {
        return Err(refuse(f, "transform", "reasoning is text: no transform"));
    }
    let Some(close) = &f.close else {
        return Err(refuse(
            f,
            "close",
            "missing: reasoning that runs to the end of the text has no close tag",
        ));
    };
    let closes = close_literals(f, close)?;
    if closes.is_empty() {
        return Err(refuse(f, close.key, "no literal close tag"));
    }
    let mut opens: Vec<String> = Vec::new();
    let mut start_rule = false;
    match &f.open {
        None => start_rule = true,
        Some(o) => {
            if let Some(body) = &o.lookahead {
                // `(?=[\s\S]*?</think>)`: the reasoning runs from the start of the
                // response up to its close.
                let lits: Vec<String> = body
                    .trimmed()
                    .iter()
                    .filter_map(|a| only_literal(a).map(str::to_owned))
                    .collect();
                if lits.is_empty() || !lits.iter().all(|l| closes.contains(l)) {
                    return Err(refuse(
                        f,
                        o.key,
                        "a lookahead opener looks ahead to something other than the close",
                    ));
                }
                start_rule = true;
            } else {
                for alt in delim(f, o)?.trimmed() {
                    match alt.as_slice() {
                        [Piece::Start] | [] => start_rule = true,
                        _ => match only_literal(&alt) {
                            Some(l) => opens.push(l.to_owned()),
                            None => {
                                return Err(refuse(
                                    f,
                                    o.key,
                                    format!("the opener {} is not literal text", show(&alt)),
                                ))
                            }
                        },
                    }
                }
            }
        }
    }
    if opens.is_empty() {
        // Opened by the start rule only: the open tag is the close tag's opening
        // counterpart (`</think>` -> `<think>`), which a model that starts in reasoning
        // may still write first.
        let derived = closes[0]
            .strip_prefix("</")
            .map(|rest| format!("<{rest}"))
            .ok_or_else(|| {
                refuse(
                    f,
                    "open",
                    "reasoning opened only at the start needs a close tag of the form \
                     </tag> (its open tag is <tag>)",
                )
            })?;
        opens.push(derived);
    }
    let mut d = ReasoningDialect::new(name, opens[0].clone(), closes[0].clone());
    d.open_aliases = opens[1..].to_vec();
    d.close_aliases = closes[1..].to_vec();
    d.starts_in_reasoning = if start_rule {
        StartMode::UnlessDisabled
    } else {
        StartMode::Never
    };
    Ok((d, start_rule))
}

/// The content field's delimiters: wrappers around the content (an explicit field),
/// or end-of-turn markers (the implicit field's closers), dropped.
fn content(f: &Field) -> Result<(Vec<WrapperTags>, Vec<DropMarkup>), String> {
    if f.parser != "text" {
        return Err(refuse(
            f,
            "content",
            format!("content is text, not {:?}", f.parser),
        ));
    }
    if f.transform.is_some() {
        return Err(refuse(f, "transform", "content is text: no transform"));
    }
    let closes = match &f.close {
        Some(c) => close_literals(f, c)?,
        None => Vec::new(),
    };
    let drop = |tags: &[String]| -> Vec<DropMarkup> {
        tags.iter()
            .map(|t| DropMarkup {
                tag: Some(t.clone()),
                prefix: None,
                end: None,
            })
            .collect()
    };
    let Some(open) = &f.open else {
        return Ok((Vec::new(), drop(&closes)));
    };
    let mut opens = Vec::new();
    for alt in delim(f, open)?.trimmed() {
        match only_literal(&alt) {
            Some(l) => opens.push(l.to_owned()),
            None => {
                return Err(refuse(
                    f,
                    open.key,
                    format!("the opener {} is not literal text", show(&alt)),
                ))
            }
        }
    }
    if closes.is_empty() {
        return Ok((Vec::new(), drop(&opens)));
    }
    let mut wrappers = Vec::new();
    for o in &opens {
        for c in &closes {
            wrappers.push(WrapperTags {
                open: o.clone(),
                close: c.clone(),
            });
        }
    }
    Ok((wrappers, Vec::new()))
}

/// Where a tool call's name and arguments come from, as the transform says.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// The whole parsed value (`{content}`).
    Content,
    /// A key of the parsed object (`{content.args}`; with `transform_each`, `{args}`).
    Key(String),
    /// A named group of the opener (`{name}`).
    Capture(String),
}

/// What the transform makes of a region.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shape {
    /// `{"type": "function", "function": "{content}"}`: the value is `{name, arguments}`.
    Whole,
    /// `{"function": {"name": N, "arguments": A}}`, per element with `transform_each`.
    Parts {
        name: Source,
        args: Source,
        each: bool,
    },
}

fn shape(f: &Field, captures: &[String]) -> Result<Shape, String> {
    let path = "transform";
    let Some(Value::Object(t)) = &f.transform else {
        return Err(refuse(
            f,
            path,
            "missing: a tool call is built by a transform into {\"type\": \"function\", \
             \"function\": ...}",
        ));
    };
    for key in t.keys() {
        match key.as_str() {
            "type" if t[key] == Value::String("function".into()) => {}
            "function" => {}
            _ => {
                return Err(refuse(
                    f,
                    path,
                    format!("key {key:?}: a call is {{\"type\": \"function\", \"function\": ...}}"),
                ))
            }
        }
    }
    let source = |s: &Value| -> Result<Source, String> {
        let parts = s.as_str().and_then(placeholder).ok_or_else(|| {
            refuse(
                f,
                path,
                format!("{s} is not a placeholder such as {{content}}"),
            )
        })?;
        match parts.as_slice() {
            ["content"] if !f.transform_each => Ok(Source::Content),
            ["content", key] if !f.transform_each => Ok(Source::Key((*key).to_owned())),
            [key] if f.transform_each => Ok(Source::Key((*key).to_owned())),
            [g] if captures.iter().any(|c| c == g) => Ok(Source::Capture((*g).to_owned())),
            _ => Err(refuse(
                f,
                path,
                format!(
                    "{s}: only {{content}}, one key of it, or an opener's group is read \
                     (no deeper paths)"
                ),
            )),
        }
    };
    match t.get("function") {
        Some(v @ Value::String(_)) if !f.transform_each => match source(v)? {
            Source::Content => Ok(Shape::Whole),
            _ => Err(refuse(f, path, "function is {content} or an object")),
        },
        Some(Value::Object(func)) => {
            for key in func.keys() {
                if key != "name" && key != "arguments" {
                    return Err(refuse(
                        f,
                        path,
                        format!("function key {key:?}: a function has a name and arguments"),
                    ));
                }
            }
            let (Some(n), Some(a)) = (func.get("name"), func.get("arguments")) else {
                return Err(refuse(f, path, "function needs a name and arguments"));
            };
            Ok(Shape::Parts {
                name: source(n)?,
                args: source(a)?,
                each: f.transform_each,
            })
        }
        _ => Err(refuse(f, path, "function is {content} or an object")),
    }
}

/// An opener split around the name it captures: `[A] [ws] [B] (?P<g>...) [C]`.
#[derive(Debug, Clone)]
struct NamedOpener {
    /// The literal before the capture (block tag and, without whitespace between them,
    /// the call's own opening).
    head: Vec<String>,
    /// The literal after a whitespace run, before the capture (`<function=`).
    inner: Option<String>,
    /// The group's name.
    group: String,
    /// The literal right after the name (`>`, `\n`), in any alternative.
    after: Option<String>,
    /// Some alternative has nothing after the name.
    after_optional: bool,
}

fn named_opener(f: &Field, o: &Delimiter) -> Result<NamedOpener, String> {
    let alts = delim(f, o)?.trimmed();
    let mut out: Option<NamedOpener> = None;
    for alt in &alts {
        let bad = || {
            refuse(
                f,
                o.key,
                format!(
                    "{} is not `literal [\\s*] [literal] (?P<name>...) [literal]`",
                    show(alt)
                ),
            )
        };
        let (head, inner, group, body, after) = match alt.as_slice() {
            [Piece::Lit(a), Piece::Capture { name, body }, rest @ ..] => {
                (a, None, name, body, rest)
            }
            [Piece::Lit(a), Piece::Ws, Piece::Lit(b), Piece::Capture { name, body }, rest @ ..] => {
                (a, Some(b.clone()), name, body, rest)
            }
            _ => return Err(bad()),
        };
        if *body != Body::Word {
            return Err(refuse(
                f,
                o.key,
                format!("the name group (?P<{group}>...) matches any text, not a name"),
            ));
        }
        let after = match after {
            [] => None,
            [Piece::Lit(c)] => Some(c.clone()),
            _ => return Err(bad()),
        };
        match &mut out {
            None => {
                out = Some(NamedOpener {
                    head: vec![head.clone()],
                    inner,
                    group: group.clone(),
                    after_optional: after.is_none(),
                    after,
                })
            }
            Some(n) => {
                if n.inner != inner || &n.group != group {
                    return Err(refuse(
                        f,
                        o.key,
                        "alternatives differ in more than the first literal",
                    ));
                }
                if !n.head.contains(head) {
                    n.head.push(head.clone());
                }
                match (&n.after, after) {
                    (_, None) => n.after_optional = true,
                    (None, Some(c)) => n.after = Some(c),
                    (Some(a), Some(c)) if *a == c => {}
                    (Some(_), Some(_)) => {
                        return Err(refuse(
                            f,
                            o.key,
                            "alternatives end the name with different text",
                        ))
                    }
                }
            }
        }
    }
    out.ok_or_else(|| refuse(f, o.key, "no alternative"))
}

/// `<tool_call><function=` -> (`<tool_call>`, `<function=`): a literal that holds a
/// second tag is the block's tag and the call's opening.
fn split_tags(lit: &str) -> (String, String) {
    match lit.rfind("><") {
        Some(i) => (lit[..=i].to_owned(), lit[i + 1..].to_owned()),
        None => (lit.to_owned(), String::new()),
    }
}

fn tool(f: &Field, name: &str) -> Result<ToolDialect, String> {
    let Some(open) = &f.open else {
        return Err(refuse(
            f,
            "open",
            "missing: tool calls are a delimited region (an opener)",
        ));
    };
    if open.lookahead.is_some() {
        return Err(refuse(f, open.key, "a lookahead does not open tool calls"));
    }
    let closes = match &f.close {
        Some(c) => close_literals(f, c)?,
        None => Vec::new(),
    };
    let captures: Vec<String> = delim(f, open)?
        .alts
        .iter()
        .flatten()
        .filter_map(|p| match p {
            Piece::Capture { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    let shape = shape(f, &captures)?;
    let named = matches!(
        &shape,
        Shape::Parts {
            name: Source::Capture(_),
            ..
        }
    );
    let (opens, syntax) = match (f.parser.as_str(), &shape) {
        ("json", _) if !named => (plain_opens(f, open)?, envelope(f, &shape)?),
        (
            "json",
            Shape::Parts {
                args: Source::Content,
                each: false,
                ..
            },
        ) => named_json(f, open)?,
        (
            "xml-inline",
            Shape::Parts {
                args: Source::Content,
                each: false,
                ..
            },
        ) if named => xml(f, open)?,
        (
            "python-call-list",
            Shape::Parts {
                name: Source::Key(n),
                args: Source::Key(a),
                each: true,
            },
        ) if n == "name" && a == "arguments" => (
            plain_opens(f, open)?,
            Syntax::Pythonic(PythonicSyntax {
                container: PyContainer::List,
            }),
        ),
        (parser, _) => {
            return Err(refuse(
                f,
                "content",
                format!(
                    "the content parser {parser:?} with this transform has no family: tool \
                     calls are read as JSON objects, a name captured by the opener with JSON \
                     or xml-inline arguments, or a python-call-list"
                ),
            ))
        }
    };
    let mut d = ToolDialect::new(
        name,
        opens[0].clone(),
        closes.first().map(String::as_str),
        syntax,
    );
    d.open_aliases = opens[1..].to_vec();
    d.close_aliases = closes.iter().skip(1).cloned().collect();
    Ok(d)
}

/// Openers that are literal text: the block's tags.
fn plain_opens(f: &Field, o: &Delimiter) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for alt in delim(f, o)?.trimmed() {
        match only_literal(&alt) {
            Some(l) => out.push(l.to_owned()),
            None => {
                return Err(refuse(
                    f,
                    o.key,
                    format!("the opener {} is not literal text", show(&alt)),
                ))
            }
        }
    }
    Ok(out)
}

fn json_args(f: &Field) -> (bool, Option<String>) {
    let unquoted = f
        .content_args
        .get("unquoted_keys")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let quote = match f.content_args.get("string_delims") {
        Some(Value::Array(pairs)) => match pairs.as_slice() {
            [Value::Array(pair)] => match pair.as_slice() {
                [Value::String(a), Value::String(b)] if a == b => Some(a.clone()),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    };
    (unquoted, quote)
}

fn envelope(f: &Field, shape: &Shape) -> Result<Syntax, String> {
    let (unquoted, quote) = json_args(f);
    if unquoted || quote.is_some() || f.content_args.contains_key("string_delims") {
        return Err(refuse(
            f,
            "content_args",
            "JSON with unquoted keys or other string quotes is read only as the Gemma call \
             notation (a name captured after `call:`)",
        ));
    }
    let mut env = EnvelopeSyntax::default();
    match shape {
        Shape::Whole => {
            env.name_field = "name".into();
            env.argument_field = "arguments".into();
        }
        Shape::Parts {
            name: Source::Key(n),
            args: Source::Key(a),
            each,
        } => {
            env.name_field = n.clone();
            env.argument_field = a.clone();
            if *each {
                env.container = EnvContainer::Array;
            }
        }
        _ => {
            return Err(refuse(
                f,
                "transform",
                "a JSON call takes its name and arguments from keys of the object",
            ))
        }
    }
    Ok(Syntax::JsonEnvelope(env))
}

/// A name captured by the opener, JSON arguments: the Gemma call notation (`call:NAME`
/// with its quote token) or header + JSON.
fn named_json(f: &Field, o: &Delimiter) -> Result<(Vec<String>, Syntax), String> {
    let n = named_opener(f, o)?;
    let (unquoted, quote) = json_args(f);
    if unquoted || quote.is_some() {
        let Some(quote) = quote.filter(|_| unquoted) else {
            return Err(refuse(
                f,
                "content_args",
                "the Gemma call notation has unquoted keys and one string quote token",
            ));
        };
        if n.inner.is_some() || n.after.is_some() {
            return Err(refuse(
                f,
                o.key,
                "the Gemma call notation is `TAG call:(?P<name>...)` followed by the arguments",
            ));
        }
        let mut opens = Vec::new();
        for h in &n.head {
            match h.strip_suffix(CALL).filter(|t| !t.is_empty()) {
                Some(tag) => opens.push(tag.to_owned()),
                None => {
                    return Err(refuse(
                        f,
                        o.key,
                        format!("{h:?} does not end with the block tag then `call:`"),
                    ))
                }
            }
        }
        let syntax = Syntax::Gemma(GemmaSyntax {
            quote,
            values: Values::Literal,
        });
        return Ok((opens, syntax));
    }
    let mut h = HeaderSyntax::default();
    let mut opens = n.head.clone();
    if let Some(inner) = &n.inner {
        h.call_begin = Some(inner.clone());
    }
    match (&n.after, n.after_optional) {
        (Some(a), optional) => {
            h.args_marker = Some(a.clone());
            h.args_on_brace = optional;
        }
        (None, _) => h.args_on_brace = true,
    }
    opens.dedup();
    Ok((opens, Syntax::Header(h)))
}

/// A name captured by the opener, xml-inline arguments: the XML-like family, its
/// parameter markup read from the `tag_pattern`.
fn xml(f: &Field, o: &Delimiter) -> Result<(Vec<String>, Syntax), String> {
    let n = named_opener(f, o)?;
    let mut x = XmlSyntax {
        function_open: String::new(),
        function_name_end: String::new(),
        function_close: None,
        param_open: String::new(),
        param_name_end: String::new(),
        value_open: None,
        value_close: String::new(),
        trim_value_newline: false,
        value_whitespace: None,
        name_attr: None,
        key_attr: None,
        type_attr: None,
        type_element: None,
        entities: false,
        unquote: false,
        cdata: false,
        python_values: false,
        skip: Vec::new(),
        json_body: None,
        json_call: None,
        nested: None,
        untyped_json: false,
        one_block: false,
    };
    let mut opens = Vec::new();
    let mut function_open = n.inner.clone();
    for h in &n.head {
        if n.inner.is_some() {
            opens.push(h.clone());
            continue;
        }
        let (tag, fo) = split_tags(h);
        match &function_open {
            None => function_open = Some(fo),
            Some(prev) if *prev == fo => {}
            Some(_) => {
                return Err(refuse(
                    f,
                    o.key,
                    "alternatives open the function with different text",
                ))
            }
        }
        opens.push(tag);
    }
    x.function_open = function_open.unwrap_or_default();
    // The name also ends where a parameter begins, so a name end the template makes
    // optional (GLM's `\n?`) is read as the name end.
    x.function_name_end = match &n.after {
        Some(a) => a.clone(),
        None => {
            return Err(refuse(
                f,
                o.key,
                "nothing ends the function name (a literal after the name group)",
            ))
        }
    };
    tag_pattern(f, &mut x)?;
    match f.content_args.get("value_parser") {
        None => {}
        Some(Value::Object(p)) => match p.get("name").and_then(Value::as_str) {
            Some("text") => {}
            // A value JSON-decoded when it is JSON: what a value the schema does not type
            // becomes here too.
            Some("json") => x.untyped_json = true,
            _ => {
                return Err(refuse(
                    f,
                    "content_args.value_parser",
                    "only the text and json value parsers are read",
                ))
            }
        },
        Some(_) => {
            return Err(refuse(
                f,
                "content_args.value_parser",
                "must be an object {name, args}",
            ))
        }
    }
    Ok((opens, Syntax::Xml(x)))
}

/// `LIT (?P<key>...) LIT [\s*] [LIT] [\s*] (?P<value>.*?) [\s*] LIT` into the parameter
/// markup.
fn tag_pattern(f: &Field, x: &mut XmlSyntax) -> Result<(), String> {
    let key = "content_args.tag_pattern";
    let Some(Value::String(p)) = f.content_args.get("tag_pattern") else {
        return Err(refuse(f, key, "missing (xml-inline needs one)"));
    };
    let d = super::pattern::read(p).map_err(|e| refuse(f, key, e))?;
    let [alt] = d.alts.as_slice() else {
        return Err(refuse(
            f,
            key,
            "alternatives are not read (one parameter form)",
        ));
    };
    // Whitespace at a literal's edge beside a whitespace run is part of the run.
    let mut seq: Vec<Piece> = Vec::new();
    for (i, p) in alt.iter().enumerate() {
        match p {
            Piece::Lit(l) => {
                let mut l = l.as_str();
                if i > 0 && alt[i - 1] == Piece::Ws {
                    l = l.trim_start();
                }
                if alt.get(i + 1) == Some(&Piece::Ws) {
                    l = l.trim_end();
                }
                if !l.is_empty() {
                    seq.push(Piece::Lit(l.to_owned()));
                }
            }
            p => seq.push(p.clone()),
        }
    }
    let bad = || {
        refuse(
            f,
            key,
            format!(
                "{} is not `LIT (?P<key>...) LIT [LIT] (?P<value>.*?) LIT`",
                show(&seq)
            ),
        )
    };
    let mut it = seq.iter().filter(|p| **p != Piece::Ws);
    let (
        Some(Piece::Lit(po)),
        Some(Piece::Capture {
            name: k,
            body: Body::Word,
        }),
        Some(Piece::Lit(pe)),
    ) = (it.next(), it.next(), it.next())
    else {
        return Err(bad());
    };
    let rest: Vec<&Piece> = it.collect();
    let (vo, v, vc) = match rest.as_slice() {
        [Piece::Capture {
            name,
            body: Body::Any,
        }, Piece::Lit(vc)] => (None, name, vc),
        [Piece::Lit(vo), Piece::Capture {
            name,
            body: Body::Any,
        }, Piece::Lit(vc)] => (Some(vo.clone()), name, vc),
        _ => return Err(bad()),
    };
    if k != "key" || v != "value" {
        return Err(refuse(f, key, "the groups are named key and value"));
    }
    let vpos = seq
        .iter()
        .position(|p| matches!(p, Piece::Capture { name, .. } if name == "value"))
        .expect("found above");
    let trimmed = seq[vpos - 1] == Piece::Ws || seq.get(vpos + 1) == Some(&Piece::Ws);
    x.param_open = po.clone();
    x.param_name_end = pe.clone();
    x.value_open = vo;
    x.value_close = vc.clone();
    x.value_whitespace = Some(if trimmed {
        ValueWhitespace::Trim
    } else {
        ValueWhitespace::Keep
    });
    Ok(())
}
