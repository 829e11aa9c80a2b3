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
    /// Tags the template wraps the content in (`<|START_TEXT|>` ... `<|END_TEXT|>`):
    /// protocol, not content.
    pub content_wrapper: Option<(String, String)>,
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

/// A tag: a marker, and the words written right after it (`<think>`,
/// `<|channel>thought`), with no whitespace; the whole text must be one.
fn one_tag(text: &str) -> bool {
    let segs = segments(text);
    !segs.is_empty()
        && segs[0].kind == Kind::Marker
        && segs[1..].iter().all(|s| s.kind == Kind::Word)
}

/// The last tag of `text`: from its last marker to its end, when only words follow it.
fn last_tag(text: &str) -> Option<&str> {
    let segs = segments(text);
    let i = segs.iter().rposition(|s| s.kind == Kind::Marker)?;
    if segs[i + 1..].iter().any(|s| s.kind != Kind::Word) {
        return None;
    }
    let start: usize = segs[..i].iter().map(|s| s.text.len()).sum();
    Some(&text[start..])
}

/// The first tag of `text`: its first marker and the words right after it, and the
/// rest.
fn first_tag(text: &str) -> Option<(&str, &str)> {
    let segs = segments(text);
    if segs.first()?.kind != Kind::Marker {
        return None;
    }
    // Words written right after the marker belong to the tag when whitespace or the
    // end follows them (`<|channel>thought\n`), not when another marker does.
    let words = segs[1..]
        .iter()
        .take_while(|s| s.kind == Kind::Word)
        .count();
    let ends = segs.get(1 + words).is_none_or(|s| s.kind == Kind::Space);
    let n = 1 + if ends { words } else { 0 };
    let len: usize = segs[..n].iter().map(|s| s.text.len()).sum();
    Some((&text[..len], &text[len..]))
}

/// Finds the reasoning tags and start rules. `Ok(None)`: the template writes no
/// reasoning and no generation prompt leaves the response in something the history
/// does not show. `Err`: the template's reasoning cannot be read as one open and one
/// close tag, or a generation prompt cannot be explained.
pub(crate) fn analyse(
    prober: &mut Prober<'_>,
    prompts: &[PromptOf],
) -> Result<Option<Reasoning>, String> {
    // The settings whose history shows the reasoning; the first whose history also
    // extends its prompt is read (a prompt that closes the reasoning writes an empty
    // block the history's turn replaces).
    let mut shown = Vec::new();
    for (i, p) in prompts.iter().enumerate() {
        if let Some(history) = prober.find_reasoning_key(&p.setting.kwargs()) {
            let g = generated(&p.tail, &history).expect("the history holds the user's turn");
            let extends = g.skipped.trim().is_empty();
            shown.push((i, g));
            if extends {
                break;
            }
        }
    }
    let Some((at, g)) = shown
        .iter()
        .find(|(_, g)| g.skipped.trim().is_empty())
        .or(shown.first())
        .cloned()
    else {
        return match from_prompts(prober, prompts)? {
            Some(tags) => finish(prober, prompts, tags, ReasoningSeparators::default()),
            None => no_reasoning(prober, prompts),
        };
    };
    let prompt = &prompts[at];
    if !g.skipped.trim().is_empty() {
        return Err(format!(
            "under {} the generation prompt ends with {:?}, which the history's reasoning \
             turn does not start with (and under no setting does the history extend the \
             prompt)",
            prompt.setting.label(),
            g.skipped
        ));
    }
    let text = &g.text;
    let r = text.find(REASONING).expect("the reasoning is shown");
    let Some(c) = text[r..].find(CONTENT).map(|c| c + r) else {
        return Err(format!(
            "the template writes the reasoning after the content ({text:?})"
        ));
    };
    let (lead_b, core_b, trail_b) = split_ws(&text[..r]);
    let (lead_a, core_a, trail_a) = split_ws(&text[r + REASONING.len()..c]);
    let Some((close, rest)) = first_tag(core_a) else {
        return Err(format!(
            "the template writes {core_a:?} between the reasoning and the content: no close \
             tag to read"
        ));
    };
    // Markup between the close tag and the content: a tag that wraps the content,
    // when a turn without reasoning writes the content between it and another tag.
    let content_wrapper = if rest.is_empty() {
        None
    } else {
        let wrapper = wrapper_of(prober, &prompt.setting.kwargs(), rest);
        if wrapper.is_none() {
            return Err(format!(
                "the template writes {rest:?} between the reasoning's close tag {close:?} and \
                 the content"
            ));
        }
        wrapper
    };
    let mut separators = ReasoningSeparators::default();
    let open = if core_b.is_empty() {
        // The generation prompt opened the reasoning: its last tag is the open tag.
        let (_, core, trail) = split_ws(&prompt.tail);
        match last_tag(core) {
            Some(tag) => {
                push_sep(
                    &mut separators.after_open,
                    &format!("{trail}{}", &text[..r]),
                );
                tag.to_owned()
            }
            None => {
                return Err(format!(
                    "the reasoning starts the turn with no open tag, and the generation \
                     prompt ({:?}) does not end with one",
                    prompt.tail
                ))
            }
        }
    } else {
        if !one_tag(core_b) {
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
    let mut found = finish(prober, prompts, (open, close.to_owned()), separators)?;
    if let Some(r) = &mut found {
        r.content_wrapper = content_wrapper;
    }
    Ok(found)
}

/// The content wrapper that opens with `open`: a turn without reasoning writes `open`
/// right before the content and one tag right after it, which closes the wrapper.
fn wrapper_of(
    prober: &mut Prober<'_>,
    flags: &serde_json::Map<String, Json>,
    open: &str,
) -> Option<(String, String)> {
    let h = prober.history(&Turn::content(CONTENT), flags).ok()?;
    let tail = super::probes::after_user(&h)?;
    let c = tail.find(CONTENT)?;
    if !tail[..c].ends_with(open) {
        return None;
    }
    let after = &tail[c + CONTENT.len()..];
    let first = segments(after).first().copied()?;
    (first.kind == Kind::Marker && one_tag(open)).then(|| (open.to_owned(), first.text.to_owned()))
}

/// The tags from the generation prompts alone, where the template writes no reasoning
/// in the history but shows both tags: a setting's prompt ends with the open tag and
/// the history's turn, at that place, starts with the close tag right before the
/// content (the reasoning dropped, its close kept: DeepSeek V3.1's `<think>` prompt
/// and `</think>answer` turn).
fn from_prompts(
    prober: &mut Prober<'_>,
    prompts: &[PromptOf],
) -> Result<Option<(String, String)>, String> {
    let mut found: Option<(String, String)> = None;
    for p in prompts {
        let Ok(h) = prober.history(&Turn::content(CONTENT), &p.setting.kwargs()) else {
            continue;
        };
        let Some(g) = generated(&p.tail, &h) else {
            continue;
        };
        if g.skipped.trim().is_empty() {
            continue;
        }
        let Some(open) = last_tag(g.skipped.trim()) else {
            continue;
        };
        let text = g.text.trim_start();
        let Some(close) = segments(text)
            .first()
            .filter(|s| s.kind == Kind::Marker)
            .map(|s| s.text)
        else {
            continue;
        };
        let rest = &text[close.len()..];
        if close == open || !rest.trim_start().starts_with(CONTENT) {
            continue;
        }
        let pair = (open.to_owned(), close.to_owned());
        match &found {
            Some(f) if *f != pair => {
                return Err(format!(
                    "the generation prompts open reasoning with {:?} and with {:?}",
                    f.0, pair.0
                ))
            }
            _ => found = Some(pair),
        }
    }
    Ok(found)
}

/// The dialect's start rule and the whitespace a turn without reasoning writes, for
/// the tags found.
fn finish(
    prober: &mut Prober<'_>,
    prompts: &[PromptOf],
    (open, close): (String, String),
    mut separators: ReasoningSeparators,
) -> Result<Option<Reasoning>, String> {
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
        let Some(g) = generated(&p.tail, &h) else {
            continue;
        };
        if !g.skipped.trim().is_empty() {
            continue;
        }
        let Some(c) = g.text.find(CONTENT) else {
            continue;
        };
        let head = &g.text[..c];
        let (lead, core, trail) = split_ws(head);
        if core.is_empty() {
            push_sep(&mut separators.response_start, lead);
        } else if let Some(rest) = core.strip_prefix(open.as_str()) {
            if rest
                .trim()
                .strip_suffix(close.as_str())
                .is_some_and(|m| m.trim().is_empty())
            {
                push_sep(&mut separators.response_start, lead);
                push_sep(&mut separators.after_close, trail);
            }
        }
    }
    let (start, mut flags) = start_rule(prompts, &starts)?;
    order_by_precedence(prober, &mut flags, (&open, &close));
    Ok(Some(Reasoning {
        open,
        close,
        separators,
        start,
        flags,
        starts,
        content_wrapper: None,
    }))
}

/// A value of the flag `rule` reads as thinking on (`true`) or off (`false`).
fn sample(rule: &FlagRule, on: bool) -> Option<Json> {
    let tried = super::turn::flag_values(&rule.key);
    let pick = |want: &dyn Fn(&Json) -> bool| tried.iter().find(|v| want(v)).cloned();
    if !rule.on.is_empty() {
        return if on {
            rule.on.first().cloned()
        } else {
            pick(&|v| !rule.on.contains(v))
        };
    }
    if !rule.off.is_empty() {
        return if on {
            pick(&|v| !rule.off.contains(v))
        } else {
            rule.off.first().cloned()
        };
    }
    Some(Json::Bool(on))
}

/// Orders the flag rules as the template weighs them when a request sends two that
/// disagree (the first rule a request carries decides): rule `a` goes before `b` when
/// the prompt with `a` on and `b` off, and the one with `a` off and `b` on, both start
/// where `a` says.
fn order_by_precedence(
    prober: &mut Prober<'_>,
    rules: &mut [FlagRule],
    (open, close): (&str, &str),
) {
    let mut wins = |a: &FlagRule, b: &FlagRule| -> bool {
        [true, false].iter().all(|&a_on| {
            let (Some(va), Some(vb)) = (sample(a, a_on), sample(b, !a_on)) else {
                return false;
            };
            let mut flags = serde_json::Map::new();
            flags.insert(a.key.clone(), va);
            flags.insert(b.key.clone(), vb);
            let Ok(p) = prober.prompt(&flags) else {
                return false;
            };
            super::probes::after_user(&p)
                .is_some_and(|tail| starts_in_reasoning(tail, open, close) == a_on)
        })
    };
    // Few rules (at most one per flag): a stable insertion order by the pairwise rule.
    for i in 1..rules.len() {
        let mut j = i;
        while j > 0 && wins(&rules[j], &rules[j - 1]) && !wins(&rules[j - 1], &rules[j]) {
            rules.swap(j, j - 1);
            j -= 1;
        }
    }
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
        let state = |v: &Json| {
            seen.iter()
                .find(|(x, _)| *x == v)
                .map_or(default, |&(_, s)| s)
        };
        let (t, f) = (state(&Json::Bool(true)), state(&Json::Bool(false)));
        let boolean = seen.iter().all(|(v, _)| v.is_boolean());
        let rule = if boolean && t && !f {
            FlagRule::key(key)
        } else if default {
            FlagRule {
                off: seen
                    .iter()
                    .filter(|&&(_, s)| !s)
                    .map(|(v, _)| (*v).clone())
                    .collect(),
                ..FlagRule::key(key)
            }
        } else {
            FlagRule {
                on: seen
                    .iter()
                    .filter(|&&(_, s)| s)
                    .map(|(v, _)| (*v).clone())
                    .collect(),
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
