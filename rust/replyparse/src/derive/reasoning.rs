//! Reasoning: the tags around the reasoning, the whitespace the template writes around
//! them, and where a response starts under each flag setting.
//!
//! The probe is a turn with reasoning and content. Its generated part is
//! `[ws] [OPEN ws] REASON_PART ws CLOSE ws A_ASST_MSG`: the open tag is there when the
//! model writes it; when the generation prompt opened the reasoning, it is the prompt's
//! last marker. Each tag must be one marker (`<think>`, `[THINK]`, `◁think▷`,
//! `<seed:think>`); more markup between the close and the content is refused, not
//! guessed at. The start rule is read off each setting's generation prompt: a response
//! starts in reasoning when the prompt's last reasoning tag is the open tag.

use serde_json::Value as Json;

use super::diff::{segments, split_ws, Kind};
use super::probes::{Prober, Turn, CONTENT, REASONING};
use super::turn::{generated, PromptOf};
use crate::dialect::{ReasoningSeparators, StartMode};
use crate::thinking::FlagRule;

/// What the reasoning probes found.
#[derive(Debug, Clone)]
pub(crate) struct Reasoning {
    pub open: String,
    pub close: String,
    pub separators: ReasoningSeparators,
    pub start: StartMode,
    pub flags: Vec<FlagRule>,
    /// Per setting (in the order given), whether a response starts in reasoning.
    pub starts: Vec<bool>,
}

/// Whether a prompt tail leaves the response inside reasoning: its last open tag
/// comes after its last close tag.
pub(crate) fn starts_in_reasoning(tail: &str, open: &str, close: &str) -> bool {
    match (tail.rfind(open), tail.rfind(close)) {
        (Some(o), Some(c)) => o > c,
        (Some(_), None) => true,
        _ => false,
    }
}

fn push_sep(list: &mut Vec<String>, ws: &str) {
    if !ws.is_empty() && !list.iter().any(|s| s == ws) {
        list.push(ws.to_owned());
    }
}

/// One marker, alone: the text is exactly one bracketed marker.
fn one_marker(text: &str) -> bool {
    let segs = segments(text);
    segs.len() == 1 && segs[0].kind == Kind::Marker
}

/// Finds the reasoning tags and start rules. `Ok(None)`: the template writes no
/// reasoning and no generation prompt leaves the response in something the history
/// does not show. `Err`: the template's reasoning cannot be read as one open and one
/// close tag, or a generation prompt cannot be explained.
pub(crate) fn analyse(
    prober: &mut Prober<'_>,
    prompts: &[PromptOf],
) -> Result<Option<Reasoning>, String> {
    // The first setting whose history shows the reasoning.
    let mut found = None;
    for (i, p) in prompts.iter().enumerate() {
        if let Some(history) = prober.find_reasoning_key(&p.setting.kwargs()) {
            found = Some((i, history));
            break;
        }
    }
    let Some((at, history)) = found else {
        return no_reasoning(prober, prompts);
    };
    let prompt = &prompts[at];
    let g = generated(&prompt.tail, &history).expect("the history holds the user's turn");
    if !g.skipped.trim().is_empty() {
        return Err(format!(
            "under {} the generation prompt ends with {:?}, which the history's reasoning \
             turn does not start with",
            prompt.setting.label(),
            g.skipped
        ));
    }
    let text = &g.text;
    let (Some(r), Some(c)) = (
        text.find(REASONING),
        text.rfind(CONTENT).filter(|&c| c > text.find(REASONING).unwrap_or(usize::MAX)),
    ) else {
        return Err(format!(
            "the template writes the reasoning after the content ({text:?})"
        ));
    };
    let (lead_b, core_b, trail_b) = split_ws(&text[..r]);
    let (lead_a, close, trail_a) = split_ws(&text[r + REASONING.len()..c]);
    if close.is_empty() {
        return Err(format!(
            "the template writes nothing between the reasoning and the content \
             ({text:?}): no close tag to read"
        ));
    }
    if !one_marker(close) {
        return Err(format!(
            "the template writes {close:?} between the reasoning and the content, not one \
             close tag"
        ));
    }
    let mut separators = ReasoningSeparators::default();
    let open = if core_b.is_empty() {
        // The generation prompt opened the reasoning: its last marker is the open tag.
        let (_, core, trail) = split_ws(&prompt.tail);
        let last = segments(core).last().copied();
        match last {
            Some(s) if s.kind == Kind::Marker => {
                push_sep(&mut separators.after_open, &format!("{trail}{}", &text[..r]));
                s.text.to_owned()
            }
            _ => {
                return Err(format!(
                    "the reasoning starts the turn with no open tag, and the generation \
                     prompt ({:?}) does not end with one",
                    prompt.tail
                ))
            }
        }
    } else {
        if !one_marker(core_b) {
            return Err(format!(
                "the template writes {core_b:?} before the reasoning, not one open tag"
            ));
        }
        push_sep(&mut separators.response_start, lead_b);
        push_sep(&mut separators.after_open, trail_b);
        core_b.to_owned()
    };
    push_sep(&mut separators.before_close, lead_a);
    push_sep(&mut separators.after_close, trail_a);
    let starts: Vec<bool> = prompts
        .iter()
        .map(|p| starts_in_reasoning(&p.tail, &open, &close))
        .collect();
    // What a turn without reasoning writes where the response starts (a newline before
    // the answer, an empty block's trailing whitespace).
    for (p, &in_reasoning) in prompts.iter().zip(&starts) {
        if in_reasoning {
            continue;
        }
        let Ok(h) = prober.history(&Turn::content(CONTENT), &p.setting.kwargs()) else {
            continue;
        };
        let Some(g) = generated(&p.tail, &h) else { continue };
        if !g.skipped.is_empty() {
            continue;
        }
        let Some(c) = g.text.find(CONTENT) else { continue };
        let head = &g.text[..c];
        let (lead, core, trail) = split_ws(head);
        if core.is_empty() {
            push_sep(&mut separators.response_start, lead);
        } else if let Some(rest) = core.strip_prefix(open.as_str()) {
            if rest.trim().strip_suffix(close).is_some_and(|m| m.trim().is_empty()) {
                push_sep(&mut separators.response_start, lead);
                push_sep(&mut separators.after_close, trail);
            }
        }
    }
    let (start, flags) = start_rule(prompts, &starts)?;
    Ok(Some(Reasoning {
        open,
        close: close.to_owned(),
        separators,
        start,
        flags,
        starts,
    }))
}

/// No reasoning in the history: fine, unless a generation prompt writes something the
/// history leaves out (a reasoning block the template never shows: where reasoning
/// ends cannot be read from it).
fn no_reasoning(
    prober: &mut Prober<'_>,
    prompts: &[PromptOf],
) -> Result<Option<Reasoning>, String> {
    for p in prompts {
        let h = prober
            .history(&Turn::content(CONTENT), &p.setting.kwargs())
            .map_err(|e| format!("under {} a turn with content fails: {e}", p.setting.label()))?;
        let g = generated(&p.tail, &h).ok_or("the template does not write the user's message")?;
        if !g.skipped.trim().is_empty() {
            return Err(format!(
                "under {} the generation prompt ends with {:?}, which the template's history \
                 never writes (it writes no reasoning either), so where the model's reply \
                 starts cannot be read from it",
                p.setting.label(),
                g.skipped
            ));
        }
    }
    Ok(None)
}

/// The start mode and flag rules that give `starts` (per prompt) from the request's
/// flags: the default prompt's state is the mode's default; each flag the template
/// reads becomes a rule naming the values that switch it.
fn start_rule(prompts: &[PromptOf], starts: &[bool]) -> Result<(StartMode, Vec<FlagRule>), String> {
    let default = starts[0];
    let mut rules: Vec<FlagRule> = Vec::new();
    let mut keys: Vec<&str> = Vec::new();
    for p in &prompts[1..] {
        if let Some((k, _)) = &p.setting.flag {
            if !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    for key in keys {
        // The values of this flag whose prompt differs; every other value gives the
        // default prompt.
        let seen: Vec<(&Json, bool)> = prompts
            .iter()
            .zip(starts)
            .filter_map(|(p, &s)| match &p.setting.flag {
                Some((k, v)) if k == key => Some((v, s)),
                _ => None,
            })
            .collect();
        if seen.iter().all(|&(_, s)| s == default) {
            continue; // the flag changes the prompt, not where the response starts
        }
        let state = |v: &Json| seen.iter().find(|(x, _)| *x == v).map_or(default, |&(_, s)| s);
        let (t, f) = (state(&Json::Bool(true)), state(&Json::Bool(false)));
        let boolean = seen.iter().all(|(v, _)| v.is_boolean());
        let rule = if boolean && t && !f {
            FlagRule::key(key)
        } else if default {
            FlagRule {
                off: seen.iter().filter(|&&(_, s)| !s).map(|(v, _)| (*v).clone()).collect(),
                ..FlagRule::key(key)
            }
        } else {
            FlagRule {
                on: seen.iter().filter(|&&(_, s)| s).map(|(v, _)| (*v).clone()).collect(),
                ..FlagRule::key(key)
            }
        };
        if boolean && !t && f {
            return Err(format!(
                "{key}=true starts the response outside reasoning and {key}=false inside it"
            ));
        }
        rules.push(rule);
    }
    let mode = match (default, rules.is_empty()) {
        (true, true) => StartMode::Always,
        (false, true) => StartMode::Never,
        (true, false) => StartMode::UnlessDisabled,
        (false, false) => StartMode::WhenEnabled,
    };
    Ok((mode, rules))
}
