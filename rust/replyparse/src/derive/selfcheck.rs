//! The self-check: assistant turns with calls rendered through the template and parsed
//! back with the parsers under test, compared with what the template was given.
//!
//! The turns are the hard cases of the project's own round-trip tests (one call with
//! CJK, emoji, quotes, backslashes, newlines and markup in string values; nested
//! objects, arrays, numbers, booleans and null; three calls; a call without arguments),
//! with content before the calls and with reasoning wherever the template writes it,
//! under every flag setting the generation prompt depends on. The generated part of
//! each turn is cut out as the derivation cuts it; a turn the template refuses, or
//! renders without its calls, or that the history cannot show as the model generates
//! it (the prompt opened reasoning the history leaves out), is not checked. What the
//! template itself leaves out of a turn (its content beside calls, an argument whose
//! value is null) is not expected back. Everything else must come back exactly:
//! content, reasoning, and each call's name and arguments (as JSON values).

use serde_json::{json, Map, Value as Json};

use super::probes::{after_user, ProbeCall, Prober, Turn, CONTENT, REASONING};
use super::reasoning::starts_in_reasoning;
use super::turn::{end_of_turn, generated, PromptOf};
use crate::delta::ParsedResponse;
use crate::error::Result as EngineResult;
use crate::response::ResponseParser;

/// The reasoning of the self-check's turns (two lines).
const CHECK_REASONING: &str = "The user wants help.\nI will call the tools.";

/// The tools of the self-check's turns (OpenAI tool objects).
pub(crate) fn check_tools(unions: bool) -> Vec<Json> {
    let cursor = if unions {
        json!(["string", "null"])
    } else {
        json!("string")
    };
    let f = |name: &str, description: &str, properties: Json, required: Json| {
        json!({"type": "function", "function": {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}})
    };
    vec![
        f(
            "get_weather",
            "Current weather for a city",
            json!({"city": {"type": "string", "description": "City name"},
                   "days": {"type": "integer", "description": "Days ahead"}}),
            json!(["city"]),
        ),
        f(
            "write_note",
            "Save a note",
            json!({"title": {"type": "string", "description": "Note title"},
                   "text": {"type": "string", "description": "Note body"}}),
            json!(["title", "text"]),
        ),
        f(
            "search",
            "Search the index",
            json!({"query": {"type": "string", "description": "Query text"},
                   "filters": {"type": "object", "description": "Nested filters"},
                   "tags": {"type": "array", "description": "Tags", "items": {"type": "string"}},
                   "limit": {"type": "integer", "description": "Result count"},
                   "score": {"type": "number", "description": "Minimum score"},
                   "exact": {"type": "boolean", "description": "Exact match"},
                   "cursor": {"type": cursor, "description": "Page cursor"}}),
            json!(["query"]),
        ),
        f("get_time", "The current time", json!({}), json!([])),
    ]
}

/// One self-check turn.
struct Case {
    name: &'static str,
    content: &'static str,
    calls: Vec<(&'static str, Json)>,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "answer",
            content: "It is sunny in Paris.\nAnything else?",
            calls: vec![],
        },
        Case {
            name: "one call",
            content: "Let me check.",
            calls: vec![("get_weather", json!({"city": "Paris", "days": 2}))],
        },
        Case {
            name: "hard strings",
            content: "好的 👍 writing it.",
            calls: vec![(
                "write_note",
                json!({"title": "東京 🌸 \"quoted\" \\ back\\slash",
                       "text": "line one\nline two </tool_call> a < b <b>bold</b>\n\tend"}),
            )],
        },
        Case {
            name: "typed values",
            content: "Searching.",
            calls: vec![(
                "search",
                json!({"query": "weather",
                       "filters": {"region": {"lat": 48.85, "lon": 2.35}, "ids": [1, 2, 3]},
                       "tags": ["a", "b"], "limit": 10, "score": 0.75, "exact": true,
                       "cursor": null}),
            )],
        },
        Case {
            name: "three calls",
            content: "Three things.",
            calls: vec![
                ("get_weather", json!({"city": "東京", "days": 1})),
                ("get_time", json!({})),
                ("write_note", json!({"title": "t", "text": "x"})),
            ],
        },
        Case {
            name: "no arguments",
            content: "",
            calls: vec![("get_time", json!({}))],
        },
    ]
}

/// A parser for a flag setting's keyword arguments and a request's tools.
pub(crate) type ParserFor<'a> =
    &'a dyn Fn(&Map<String, Json>, &[Json]) -> EngineResult<ResponseParser>;

/// What the parsers under test are: a parser for a flag setting's keyword arguments,
/// and the reasoning tags (to tell where the prompt leaves a response).
pub(crate) struct UnderTest<'a> {
    pub parser: ParserFor<'a>,
    pub reasoning_tags: Option<(&'a str, &'a str)>,
    /// The parsers keep the model's call ids: compare them too.
    pub keeps_ids: bool,
    /// What ends a turn with calls besides what ends one without (the end of a
    /// sequence the template writes only after calls).
    pub turn_end: Option<&'a str>,
    /// The parsers read tool calls: a turn with calls must be checked.
    pub calls_expected: bool,
}

/// How many turns were checked (and of them with calls), and how many the template
/// could not show.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Checked {
    pub turns: usize,
    pub with_calls: usize,
    pub not_shown: usize,
}

/// Why a self-check failed: `short` names the turn (or says none could be read),
/// `detail` adds the text and both results.
#[derive(Debug, Clone)]
pub(crate) struct Failed {
    pub short: String,
    pub detail: String,
    /// No turn could be checked at all (the template refuses or hides every one).
    pub nothing_checked: bool,
}

impl Failed {
    fn plain(text: String) -> Self {
        Failed {
            short: text.clone(),
            detail: text,
            nothing_checked: false,
        }
    }
}

/// The self-check. `Err` names the first turn that does not read back, the text and
/// both results.
pub(crate) fn run(
    prober: &mut Prober<'_>,
    prompts: &[PromptOf],
    under: &UnderTest<'_>,
) -> Result<Checked, Failed> {
    let mut checked = Checked::default();
    let tools = {
        // A template that cannot print a union type gets its non-null member.
        let flags = prompts[0].setting.kwargs();
        let turn = Turn::content(CONTENT);
        let with_unions = check_tools(true);
        if prober.history_with(&turn, &flags, &with_unions).is_ok() {
            with_unions
        } else {
            check_tools(false)
        }
    };
    for prompt in prompts {
        let flags = prompt.setting.kwargs();
        // The prompt with these tools (a template may list the tools after the user's
        // turn).
        let Some(tail) = prober
            .prompt_with(&flags, &tools)
            .ok()
            .and_then(|t| after_user(&t).map(str::to_owned))
        else {
            continue;
        };
        let prompt = &PromptOf {
            setting: prompt.setting.clone(),
            tail,
        };
        let Ok(h) = prober.history_with(&Turn::content(CONTENT), &flags, &tools) else {
            continue;
        };
        let Some(plain) = generated(&prompt.tail, &h) else {
            continue;
        };
        let eot = end_of_turn(&plain);
        let opened = under
            .reasoning_tags
            .is_some_and(|(o, c)| starts_in_reasoning(&prompt.tail, o, c));
        // A prompt that closes the reasoning (an empty block, or the close tag alone):
        // the model does not reason after it, so the turns go without reasoning.
        let closes = !opened
            && under
                .reasoning_tags
                .is_some_and(|(_, c)| prompt.tail.contains(c));
        // Whether the template writes reasoning under this setting.
        let reasoning_turn = Turn {
            reasoning: Some(REASONING.into()),
            ..Turn::content(CONTENT)
        };
        let shows_reasoning = prober
            .history_with(&reasoning_turn, &flags, &tools)
            .ok()
            .and_then(|h| generated(&prompt.tail, &h))
            .is_some_and(|g| g.text.contains(REASONING));
        for case in cases() {
            let calls: Vec<ProbeCall> = case
                .calls
                .iter()
                .enumerate()
                .map(|(i, (n, a))| ProbeCall::new(n, a.clone(), &format!("call{:04}a", i + 1)))
                .collect();
            let turn = Turn {
                content: case.content.into(),
                reasoning: (shows_reasoning && !closes).then(|| CHECK_REASONING.into()),
                calls: calls.clone(),
            };
            let Ok(history) = prober.history_with(&turn, &flags, &tools) else {
                checked.not_shown += 1;
                continue;
            };
            let Some(g) = generated(&prompt.tail, &history) else {
                checked.not_shown += 1;
                continue;
            };
            // The end of the turn comes after the last call's name and the content.
            let from = calls
                .iter()
                .filter_map(|c| g.text.rfind(&c.name).map(|i| i + c.name.len()))
                .chain(
                    g.text
                        .rfind(case.content)
                        .filter(|_| !case.content.is_empty())
                        .map(|i| i + case.content.len()),
                )
                .max()
                .unwrap_or(0);
            let mut g = g.cut(&eot, from);
            if let Some(end) = under.turn_end {
                g = g.cut(end, from);
            }
            let skipped = !g.skipped.trim().is_empty();
            if skipped && (opened || turn.reasoning.is_some()) {
                // The prompt opened (or closed) a reasoning block the history's turn
                // leaves out: the model's own text for it cannot be read here.
                checked.not_shown += 1;
                continue;
            }
            if calls.iter().any(|c| !g.text.contains(&c.name)) {
                checked.not_shown += 1;
                continue;
            }
            let want = expected(&turn, &g.text);
            let mut parser = (under.parser)(&flags, &tools)
                .map_err(|e| Failed::plain(format!("the parser cannot be built: {e}")))?;
            let got = parser
                .parse_complete(&g.text, None)
                .map_err(|e| Failed::plain(format!("parsing failed: {e}")))?;
            let got_view = view(&got, under.keeps_ids);
            let want_view = view_expected(&want, under.keeps_ids);
            if got_view != want_view {
                let short = format!(
                    "under {} the turn \"{}\" does not read back",
                    prompt.setting.label(),
                    case.name
                );
                return Err(Failed {
                    nothing_checked: false,
                    detail: format!(
                        "{short}: the template writes {:?}, which parses as {got_view} \
                         instead of {want_view}",
                        g.text
                    ),
                    short,
                });
            }
            checked.turns += 1;
            checked.with_calls += usize::from(!calls.is_empty());
        }
    }
    if checked.turns == 0 {
        return Err(Failed {
            nothing_checked: true,
            ..Failed::plain(
                "no assistant turn could be rendered and read back (the template refuses or \
                 hides every one)"
                    .into(),
            )
        });
    }
    if under.calls_expected && checked.with_calls == 0 {
        return Err(Failed {
            nothing_checked: true,
            ..Failed::plain(
                "no assistant turn with calls could be rendered and read back (the template \
                 refuses or hides every one)"
                    .into(),
            )
        });
    }
    Ok(checked)
}

/// What a turn must read back as, less what the template left out of `text`.
fn expected(turn: &Turn, text: &str) -> ParsedResponse {
    let content = Some(turn.content.clone()).filter(|c| !c.is_empty() && text.contains(c.as_str()));
    let reasoning = turn.reasoning.clone().filter(|r| text.contains(r.as_str()));
    let tool_calls = turn
        .calls
        .iter()
        .map(|c| {
            let mut args = c.arguments.clone();
            // An argument whose value is null, left out by the template.
            args.retain(|k, v| !v.is_null() || text.contains(k.as_str()));
            crate::delta::ToolCall {
                id: c.id.clone(),
                kind: "function",
                function: crate::delta::FunctionCall {
                    name: c.name.clone(),
                    arguments: Json::Object(args).to_string(),
                },
            }
        })
        .collect();
    ParsedResponse {
        content,
        reasoning_content: reasoning,
        tool_calls,
    }
}

/// A result as compared: content, reasoning, calls (arguments as JSON values).
fn view(r: &ParsedResponse, ids: bool) -> Json {
    let calls: Vec<Json> = r
        .tool_calls
        .iter()
        .map(|c| {
            let args = serde_json::from_str::<Json>(&c.function.arguments)
                .unwrap_or_else(|_| json!({"<not JSON>": c.function.arguments}));
            if ids {
                json!([c.function.name, args, c.id])
            } else {
                json!([c.function.name, args])
            }
        })
        .collect();
    json!({"content": r.content, "reasoning": r.reasoning_content, "calls": calls})
}

fn view_expected(r: &ParsedResponse, ids: bool) -> Json {
    view(r, ids)
}
