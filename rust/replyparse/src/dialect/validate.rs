//! The checks a declaration must pass beyond its types, one function per concern, each
//! naming the bad field by its path. The syntax's own checks are its family's
//! ([`crate::grammars::Syntax::validate`]).

use super::{ReasoningDialect, ResponseDialect, ToolDialect, SEPARATOR_MAX};
use crate::error::{Error, Result};
use crate::grammars::pythonic::Container;
use crate::grammars::{FieldError, Syntax};

/// The declaration error of dialect `name` for a bad field.
pub(crate) fn invalid(name: &str, e: FieldError) -> Error {
    let name = if name.is_empty() { "(unnamed)" } else { name };
    Error::InvalidDialect(format!("{name}: {e}"))
}

/// Checks a response parser's entry: its name, and a framed dialect's framing (its
/// markers, routes and call payload).
pub(crate) fn validate_response_dialect(d: &ResponseDialect) -> Result<()> {
    let check = || -> std::result::Result<(), FieldError> {
        non_empty("name", &d.name)?;
        if let Some(f) = &d.framed {
            f.validate().map_err(|e| e.within("framed"))?;
        }
        Ok(())
    };
    check().map_err(|e| invalid(&d.name, e))
}

/// Checks a tool dialect declaration: its tags, its kinds of block, its markup rules,
/// its syntax and its other forms, its prefix lists.
pub(crate) fn validate_tool_dialect(d: &ToolDialect) -> Result<()> {
    check_tool(d).map_err(|e| invalid(&d.name, e))
}

fn check_tool(d: &ToolDialect) -> std::result::Result<(), FieldError> {
    non_empty("name", &d.name)?;
    check_tags(d)?;
    check_blocks(d)?;
    check_markup(&d.content_wrappers, &d.drop_markup)?;
    d.syntax.validate().map_err(|e| e.within("syntax"))?;
    let seps = &d.separators;
    check_separators("separators.before_blocks", &seps.before_blocks)?;
    if let Some(between) = &seps.between_blocks {
        check_separators("separators.between_blocks", between)?;
    }
    check_separators("separators.after_blocks", &seps.after_blocks)?;
    super::suffix::check_tool_suffix(d).map_err(|m| FieldError::new("tag_suffix", m))?;
    if d.tag_suffix.is_some() {
        // The unsuffixed spelling is what a parser given no suffix uses.
        let plain = d
            .with_tag_suffix("")
            .map_err(|e| FieldError::new("tag_suffix", e.to_string()))?;
        check_tool(&plain)?;
    }
    check_unopened(d)?;
    for (k, f) in d.forms.iter().enumerate() {
        let at = format!("forms[{k}]");
        if f.when.is_empty() {
            return Err(FieldError::new(format!("{at}.when"), "is empty"));
        }
        f.syntax
            .validate()
            .map_err(|e| e.within(&format!("{at}.syntax")))?;
    }
    check_prefixes(d)
}

/// A block written without its open tag: its strings are non-empty, its payload open
/// is what the grammar's payloads begin with and no open tag, and its close is one of
/// the dialect's close tags.
fn check_unopened(d: &ToolDialect) -> std::result::Result<(), FieldError> {
    let Some(u) = &d.unopened_block else {
        return Ok(());
    };
    non_empty("unopened_block.payload_open", &u.payload_open)?;
    non_empty("unopened_block.payload_close", &u.payload_close)?;
    non_empty("unopened_block.close", &u.close)?;
    let grammar = d.grammar(crate::toolset::Schemas::default());
    if grammar.payload_marker() != Some(u.payload_open.as_str()) {
        return Err(FieldError::new(
            "unopened_block.payload_open",
            "is not what the syntax's payloads begin with (its function open)",
        ));
    }
    if d.open_tags().any(|o| o == u.payload_open) {
        return Err(FieldError::new(
            "unopened_block.payload_open",
            "is an open tag of the dialect",
        ));
    }
    if !d.close_tags().any(|c| c == u.close) {
        return Err(FieldError::new(
            "unopened_block.close",
            "is not one of the dialect's close tags",
        ));
    }
    Ok(())
}

fn non_empty(field: &str, v: &str) -> std::result::Result<(), FieldError> {
    if v.is_empty() {
        return Err(FieldError::new(field, "is empty"));
    }
    Ok(())
}

/// Each entry of `list` is non-empty.
fn entries_non_empty(field: &str, list: &[String]) -> std::result::Result<(), FieldError> {
    match list.iter().position(String::is_empty) {
        Some(k) => Err(FieldError::new(format!("{field}[{k}]"), "is empty")),
        None => Ok(()),
    }
}

/// The open tag (empty only for a marker-less dialect), the close tag and the aliases.
fn check_tags(d: &ToolDialect) -> std::result::Result<(), FieldError> {
    // Only a marker-less dialect, pythonic lines that stand bare, has no open tag (every
    // other family's bare payload has a marker, and its constraint writes the tag).
    let lines = matches!(&d.syntax, Syntax::Pythonic(p) if p.container == Container::Lines);
    if d.open.is_empty() && !(d.bare_start && lines) {
        return Err(FieldError::new(
            "open",
            "is empty (only a bare_start pythonic lines dialect has no open tag)",
        ));
    }
    entries_non_empty("open_aliases", &d.open_aliases)?;
    entries_non_empty("close_aliases", &d.close_aliases)?;
    if d.close.is_none() && !d.close_aliases.is_empty() {
        return Err(FieldError::new("close_aliases", "need a close tag"));
    }
    if d.close.as_deref() == Some("") {
        return Err(FieldError::new(
            "close",
            "is empty (use null for a block that ends with its payload)",
        ));
    }
    Ok(())
}

/// Each further kind of block has an open tag, and a non-empty close tag when given.
fn check_blocks(d: &ToolDialect) -> std::result::Result<(), FieldError> {
    for (k, b) in d.blocks.iter().enumerate() {
        non_empty(&format!("blocks[{k}].open"), &b.open)?;
        if b.close.as_deref() == Some("") {
            return Err(FieldError::new(
                format!("blocks[{k}].close"),
                "is empty (use null for a block that ends with its payload)",
            ));
        }
    }
    Ok(())
}

/// Content wrappers have both tags; each drop-markup rule is a tag, or a prefix with
/// an end.
fn check_markup(
    wrappers: &[super::WrapperTags],
    drops: &[super::DropMarkup],
) -> std::result::Result<(), FieldError> {
    for (k, w) in wrappers.iter().enumerate() {
        non_empty(&format!("content_wrappers[{k}].open"), &w.open)?;
        non_empty(&format!("content_wrappers[{k}].close"), &w.close)?;
    }
    for (k, m) in drops.iter().enumerate() {
        let tag = m.tag.as_deref().is_some_and(|t| !t.is_empty());
        let prefix = m.prefix.as_deref().is_some_and(|t| !t.is_empty())
            && m.end.as_deref().is_some_and(|t| !t.is_empty());
        if tag == prefix || (tag && (m.prefix.is_some() || m.end.is_some())) {
            return Err(FieldError::new(
                format!("drop_markup[{k}]"),
                "is a non-empty `tag`, or a `prefix` with an `end`",
            ));
        }
    }
    Ok(())
}

/// Each separator is non-empty whitespace of at most [`SEPARATOR_MAX`] bytes, and none
/// is listed twice.
fn check_separators(field: &str, list: &[String]) -> std::result::Result<(), FieldError> {
    for (k, s) in list.iter().enumerate() {
        let at = format!("{field}[{k}]");
        if s.is_empty() || s.len() > SEPARATOR_MAX {
            return Err(FieldError::new(
                at,
                format!("is not 1 to {SEPARATOR_MAX} bytes long"),
            ));
        }
        if !s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
            return Err(FieldError::new(
                at,
                format!("{s:?} is not whitespace (spaces, tabs, newlines)"),
            ));
        }
        if list[..k].contains(s) {
            return Err(FieldError::new(at, format!("{s:?} is listed twice")));
        }
    }
    Ok(())
}

/// Each declared prefix is a proper prefix of its tag.
fn check_prefixes(d: &ToolDialect) -> std::result::Result<(), FieldError> {
    for (field, tag, prefixes) in [
        ("open_prefixes", Some(&d.open), &d.open_prefixes),
        ("close_prefixes", d.close.as_ref(), &d.close_prefixes),
    ] {
        for (k, p) in prefixes.iter().enumerate() {
            let ok = tag
                .is_some_and(|t| t.len() > p.len() && t.starts_with(p.as_str()) && !p.is_empty());
            if !ok {
                return Err(FieldError::new(
                    format!("{field}[{k}]"),
                    format!("{p:?} is not a proper prefix of its tag"),
                ));
            }
        }
    }
    Ok(())
}

/// Checks a reasoning dialect declaration: its name, tags, markup rules and flags.
pub(crate) fn validate_reasoning_dialect(d: &ReasoningDialect) -> Result<()> {
    check_reasoning(d).map_err(|e| invalid(&d.name, e))
}

fn check_reasoning(d: &ReasoningDialect) -> std::result::Result<(), FieldError> {
    non_empty("name", &d.name)?;
    non_empty("open", &d.open)?;
    non_empty("close", &d.close)?;
    entries_non_empty("open_aliases", &d.open_aliases)?;
    entries_non_empty("close_aliases", &d.close_aliases)?;
    check_markup(&d.content_wrappers, &d.drop_markup)?;
    let seps = &d.separators;
    check_separators("separators.response_start", &seps.response_start)?;
    check_separators("separators.after_open", &seps.after_open)?;
    check_separators("separators.before_close", &seps.before_close)?;
    check_separators("separators.after_close", &seps.after_close)?;
    for (k, f) in d.thinking_flags.iter().enumerate() {
        non_empty(&format!("thinking_flags[{k}].key"), &f.key)?;
    }
    super::suffix::check_reasoning_suffix(d).map_err(|m| FieldError::new("tag_suffix", m))?;
    if d.tag_suffix.is_some() {
        // The unsuffixed spelling is what a parser given no suffix uses.
        let plain = d
            .with_tag_suffix("")
            .map_err(|e| FieldError::new("tag_suffix", e.to_string()))?;
        check_reasoning(&plain)?;
    }
    Ok(())
}
