//! Tool calls: the call probes, the section each one adds to a turn, and the family
//! that reads it.
//!
//! Every call probe is a turn with the content [`CONTENT`] and one or more calls; the
//! same turn without calls is the baseline. What the calls add (the diff of the two
//! renders, fixed to marker boundaries) is the *section*. Four sections are read: one
//! call with a string and an integer argument, one call with no arguments, two calls,
//! and one call with a boolean, a list and an object argument (the notation probe).
//! Each family's reader ([`envelope`], [`header`], [`tagged`], [`pythonic`]) says
//! whether the sections are its markup and what its fields are; the first that
//! recognises them decides. A section no family recognises is refused.

use serde_json::{json, Map, Value as Json};

use super::diff::{diff, split_ws};
use super::families::{envelope, header, pythonic, tagged};
use super::probes::{
    after_user, ProbeCall, Prober, Turn, ARG_BOOL, ARG_INT, ARG_LIST, ARG_MARK, ARG_OBJ, ARG_STR,
    CONTENT, FN1, FN2, ID1, ID2, VAL_INT, VAL_MARK, VAL_STR,
};
use super::turn::PromptOf;

/// The private-use characters the sections' probe names and ids are replaced with
/// where calls are compared with each other.
pub(crate) const NAME_MARK: &str = "\u{E000}";
pub(crate) const ID_MARK: &str = "\u{E001}";

/// Where the template writes a turn's content when the turn has calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ContentPlace {
    Before,
    After,
    Dropped,
}

/// The sections of the call probes.
#[derive(Debug, Clone)]
pub(crate) struct Sections {
    /// One call: `FN1(ARG_STR="XXXX", ARG_INT=4231)`, id [`ID1`].
    pub one: String,
    /// One call with no arguments: `FN2()`.
    pub zero: Option<String>,
    /// Two calls: `FN1(ARG_STR="XXXX")`, `FN2()`, ids [`ID1`], [`ID2`].
    pub two: Option<String>,
    /// One call with a boolean, a list and an object argument.
    pub typed: Option<String>,
    /// What the template wrote where the two-call probe failed, if it did.
    pub two_refused: Option<String>,
    pub content: ContentPlace,
    /// Whitespace between the content and the first call's markup.
    pub before_blocks: Vec<String>,
    /// Whitespace after the last call's markup, before the end of the turn.
    pub after_blocks: Vec<String>,
    /// What ends a turn whose content follows its calls, where it is not what ends a
    /// turn without calls (Gemma 4 opens the tool's response instead).
    pub turn_end: Option<String>,
}

/// The arguments of the typed probe.
pub(crate) fn typed_arguments() -> Json {
    json!({ARG_STR: VAL_STR, ARG_BOOL: true, ARG_LIST: ["YYYY", 2], ARG_OBJ: {"k": null},
           ARG_MARK: VAL_MARK})
}

/// The diff of a turn with calls against `plain` (the same turn without them): the
/// middle of the turn with calls, its whole text after the user's turn, and where the
/// content is.
fn section_of(
    prober: &mut Prober<'_>,
    base: &PromptOf,
    plain: &str,
    calls: Vec<ProbeCall>,
) -> Result<(String, String, ContentPlace), String> {
    let with = prober
        .history(&Turn::calls(CONTENT, calls), &base.setting.kwargs())
        .map_err(|e| e.to_string())?;
    let Some(b) = after_user(&with) else {
        return Err("the template does not write the user's message".into());
    };
    let (mut p, mut s) = diff(plain, b);
    // The first call's name in what the calls add (a template may list the tools'
    // names after the user's turn too).
    let first = [FN1, FN2]
        .iter()
        .filter_map(|n| b[p..].find(n).map(|i| p + i))
        .min();
    let place = match (b.find(CONTENT), first) {
        (None, _) => ContentPlace::Dropped,
        (Some(c), Some(f)) if c < f => ContentPlace::Before,
        (Some(_), _) => ContentPlace::After,
    };
    // The content is the turn's, not the calls': what the two renders share stops at
    // it (a template that writes the calls as a message of their own repeats the end
    // of the content's message before them, which is then the calls' opening).
    if let Some(c) = b.find(CONTENT) {
        match place {
            ContentPlace::Before => {
                p = p.min(c + CONTENT.len());
                // The end of the content's turn, repeated after the calls' message, is
                // the end of the turn, not the calls' close.
                let eot = plain
                    .find(CONTENT)
                    .map_or("", |i| &plain[i + CONTENT.len()..]);
                let middle = &b[p..b.len() - s];
                if !eot.trim().is_empty() && middle.ends_with(eot) && middle.len() > eot.len() {
                    s += eot.len();
                }
            }
            ContentPlace::After => s = b.len() - c,
            ContentPlace::Dropped => {}
        }
    }
    Ok((b[p..b.len() - s].to_owned(), b.to_owned(), place))
}

/// Why no section could be read.
#[derive(Debug, Clone)]
pub(crate) enum NoSections {
    /// The template renders a turn with calls but writes no call.
    NoCalls(String),
    /// The template fails on a turn with calls.
    Fails(String),
}

/// Reads the sections under the setting `base`.
pub(crate) fn sections(prober: &mut Prober<'_>, base: &PromptOf) -> Result<Sections, NoSections> {
    let flags = base.setting.kwargs();
    // The argument form: the one under which the call shows, readable.
    prober
        .find_args_form(&flags, |text| {
            after_user(text).is_some_and(|t| {
                t.contains(FN1)
                    && t.contains(ARG_STR)
                    && t.contains(VAL_STR)
                    && !t.contains(&format!("'{ARG_STR}'"))
            })
        })
        .map_err(|(rendered, tried)| {
            if rendered {
                NoSections::NoCalls(format!(
                    "the template writes no tool call in the history ({tried})"
                ))
            } else {
                NoSections::Fails(format!(
                    "the template fails on a turn with a tool call ({tried})"
                ))
            }
        })?;
    let fails = |e: String| NoSections::Fails(e);
    let plain = prober
        .history(&Turn::content(CONTENT), &flags)
        .map_err(|e| fails(e.to_string()))?;
    let plain = after_user(&plain)
        .ok_or_else(|| fails("the template does not write the user's message".into()))?
        .to_owned();
    let one_call = vec![ProbeCall::new(
        FN1,
        json!({ARG_STR: VAL_STR, ARG_INT: VAL_INT}),
        ID1,
    )];
    let (middle, whole, content) = section_of(prober, base, &plain, one_call).map_err(fails)?;
    let end_after = |text: &str| {
        text.find(CONTENT)
            .map(|i| text[i + CONTENT.len()..].to_owned())
    };
    let turn_end = match (content, end_after(&whole), end_after(&plain)) {
        (ContentPlace::After, Some(a), Some(b)) if a.trim() != b.trim() && !a.trim().is_empty() => {
            Some(a.trim().to_owned())
        }
        _ => None,
    };
    if !middle.contains(FN1) {
        return Err(NoSections::NoCalls(
            "the template does not write the call's name".into(),
        ));
    }
    let (lead, core, trail) = split_ws(&middle);
    let mut before_blocks = Vec::new();
    let mut after_blocks = Vec::new();
    if content == ContentPlace::Before {
        // The whitespace between the content and the call, whole (the diff may have
        // counted some of it as common to both renders).
        let c = whole.find(CONTENT).expect("content found") + CONTENT.len();
        let start = whole.find(core).unwrap_or(c);
        let between = &whole[c..start.max(c)];
        if !between.is_empty() && between.trim().is_empty() {
            before_blocks.push(between.to_owned());
        }
    } else if !lead.is_empty() {
        before_blocks.push(lead.to_owned());
    }
    if !trail.is_empty() && content != ContentPlace::After {
        after_blocks.push(trail.to_owned());
    }
    let one = core.to_owned();
    let zero = section_of(
        prober,
        base,
        &plain,
        vec![ProbeCall::new(FN2, json!({}), ID1)],
    )
    .ok()
    .map(|(m, _, _)| m.trim().to_owned());
    let two_calls = vec![
        ProbeCall::new(FN1, json!({ARG_STR: VAL_STR}), ID1),
        ProbeCall::new(FN2, json!({}), ID2),
    ];
    let (two, two_refused) = match section_of(prober, base, &plain, two_calls) {
        Ok((m, _, _)) if m.contains(FN2) && m.contains(FN1) => (Some(m.trim().to_owned()), None),
        Ok(_) => (None, Some("it writes only one of two calls".to_owned())),
        Err(e) => (None, Some(format!("it fails on two calls ({e})"))),
    };
    let typed = section_of(
        prober,
        base,
        &plain,
        vec![ProbeCall::new(FN1, typed_arguments(), ID1)],
    )
    .ok()
    .map(|(m, _, _)| m.trim().to_owned());
    Ok(Sections {
        one,
        zero,
        two,
        typed,
        two_refused,
        content,
        before_blocks,
        after_blocks,
        turn_end,
    })
}

/// What a family reader makes of the sections.
#[derive(Debug, Clone)]
pub(crate) struct CallShape {
    /// The family's name, for what the derivation reports.
    pub family: &'static str,
    pub open: String,
    pub close: Option<String>,
    /// The syntax, as a declaration writes it (`{"family": ..., ...}`).
    pub syntax: Json,
    /// Whitespace between two blocks (when each call is a block of its own).
    pub between_blocks: Vec<String>,
    /// What the reader noticed (kept in the derivation's findings).
    pub notes: Vec<String>,
    /// Markup the template writes after the calls' block to end a turn with calls
    /// (an end-of-sequence token a turn without calls does not get): not the block's.
    pub turn_end: Option<String>,
}

/// Splits the text after a call's payload into the block's close tag (its first tag,
/// `None` when there is no text) and the rest, which ends the turn.
pub(crate) fn close_and_rest(text: &str) -> (Option<String>, Option<String>) {
    use super::diff::{segments, Kind};
    let text = text.trim();
    if text.is_empty() {
        return (None, None);
    }
    let segs = segments(text);
    if segs.len() <= 1 || segs[0].kind != Kind::Marker {
        return (Some(text.to_owned()), None);
    }
    let first = segs[0].text;
    let rest = text[first.len()..].trim();
    (
        Some(first.to_owned()),
        Some(rest.to_owned()).filter(|r| !r.is_empty()),
    )
}

/// The section with the probe names and ids replaced by [`NAME_MARK`] and [`ID_MARK`].
pub(crate) fn normalized(section: &str) -> String {
    section
        .replace(FN1, NAME_MARK)
        .replace(FN2, NAME_MARK)
        .replace(ID1, ID_MARK)
        .replace(ID2, ID_MARK)
}

/// The family whose markup the sections are, and its fields.
pub(crate) fn classify(s: &Sections) -> Result<CallShape, String> {
    if let Some(shape) = envelope::read(s)? {
        return Ok(shape);
    }
    if let Some(shape) = header::read(s)? {
        return Ok(shape);
    }
    if let Some(shape) = pythonic::read(s)? {
        return Ok(shape);
    }
    if let Some(shape) = tagged::read(s)? {
        return Ok(shape);
    }
    Err(format!(
        "the template writes a call as {:?}, which is none of the families a dialect can \
         declare (a JSON envelope, a header and JSON arguments, XML-like tags, Python or \
         Gemma call notation)",
        s.one
    ))
}

/// The tool dialect declaration of `shape` with the separators of `s`.
pub(crate) fn declaration(name: &str, shape: &CallShape, s: &Sections) -> Json {
    let mut d = Map::new();
    d.insert("name".into(), json!(name));
    d.insert("syntax".into(), shape.syntax.clone());
    d.insert("open".into(), json!(shape.open));
    d.insert("close".into(), json!(shape.close));
    let mut seps = Map::new();
    if !s.before_blocks.is_empty() {
        seps.insert("before_blocks".into(), json!(s.before_blocks));
    }
    if !shape.between_blocks.is_empty() {
        seps.insert("between_blocks".into(), json!(shape.between_blocks));
    }
    if !s.after_blocks.is_empty() {
        seps.insert("after_blocks".into(), json!(s.after_blocks));
    }
    if !seps.is_empty() {
        d.insert("separators".into(), Json::Object(seps));
    }
    Json::Object(d)
}
