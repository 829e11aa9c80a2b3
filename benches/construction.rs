//! Building a parser for a request with 50 realistic tools, the engine alone (what a
//! Rust server or router pays per request), beside building one without tools.
//!
//! The tools are those of `benches/bench_construction.py`: ten properties each (enum,
//! bounds, array, a nested object holding another, `anyOf` with null, `["integer",
//! "null"]`, an array of objects), about 1.7 KB of JSON per tool. Per dialect (one per
//! family):
//! - `none`: no tools;
//! - `specs`: the request's tools as `ToolSpec`s (`ParserConfig::tools`, the server
//!   having deserialised them), a tool set seen before: `ResponseParser::new` reads them
//!   once to find the shared set;
//! - `text`: the request's `tools` JSON text, seen before: `ToolSet::from_json` finds the
//!   shared set by the text (a comparison, no parsing), then `with_tool_set`;
//! - `held`: a set the server holds (`with_tool_set` with a clone of its `Arc`);
//! - `cold specs`, `cold text`: tools never seen before (one description differs).
//!
//! Before anything is timed, each dialect's parser built every way parses a call of the
//! eighth tool in its own syntax, whole and 3 bytes at a time, to the expected call.
//! Rounds interleave every variant; the figure is the fastest round's time per build and
//! its ratio to `none` within this run.
//!
//!     cargo bench -p replyparse-suite --bench construction

use std::sync::Arc;
use std::time::Instant;

use replyparse::{ParsedResponse, ParserConfig, ResponseParser, ToolSet, ToolSpec};
use serde_json::{json, Value};

const TOOLS: usize = 50;
const ROUNDS: usize = 9;
const BUILDS: usize = 200;

fn tool(i: usize, tag: &str) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": format!("tool_{i}_action"),
            "description": format!(
                "Performs action number {i} against the workspace{tag}. Use it when the user \
                 asks for operation {i}; it returns a JSON report with the status, the timings \
                 and any warnings."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path of the file or directory, relative to the root."},
                    "mode": {"type": "string", "enum": ["read", "write", "append", "delete"], "description": "What to do with the file."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Most items to return."},
                    "ratio": {"type": "number", "description": "Sampling ratio, 0 to 1."},
                    "recursive": {"type": "boolean", "description": "Whether to descend into subdirectories."},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Labels to attach."},
                    "options": {
                        "type": "object",
                        "description": "Advanced options.",
                        "properties": {
                            "encoding": {"type": "string", "enum": ["utf-8", "latin-1", "ascii"]},
                            "timeout": {"type": "integer"},
                            "retry": {"type": "object", "properties": {"attempts": {"type": "integer"}, "backoff": {"type": "number"}}}
                        }
                    },
                    "owner": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "Owner to set, or null to keep the current one."},
                    "priority": {"type": ["integer", "null"], "description": "Priority, or null for the default."},
                    "filters": {
                        "type": "array",
                        "description": "Filters applied in order.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "field": {"type": "string"},
                                "op": {"type": "string", "enum": ["eq", "ne", "lt", "gt"]},
                                "value": {"type": ["string", "number"]}
                            },
                            "required": ["field", "op"]
                        }
                    }
                },
                "required": ["path", "mode"]
            }
        }
    })
}

/// The request's `tools` JSON text (`tag` makes the content new).
fn tools_json(tag: &str) -> String {
    let tools: Vec<Value> = (0..TOOLS)
        .map(|i| tool(i, if i == 0 { tag } else { "" }))
        .collect();
    serde_json::to_string(&tools).expect("JSON")
}

const CALLED: &str = "tool_7_action";
const DSML: &str = "\u{ff5c}DSML\u{ff5c}";

/// The call of tool 7 in `dialect`'s syntax, and its parser configuration.
fn dialect(name: &str) -> (ParserConfig, String) {
    let args = r#"{"path": "src/app.py", "mode": "write", "limit": 20, "options": {"encoding": "utf-8", "retry": {"attempts": 3}}, "tags": ["a", "b"]}"#;
    let xml = [
        ("path", "src/app.py"),
        ("mode", "write"),
        ("limit", "20"),
        (
            "options",
            r#"{"encoding": "utf-8", "retry": {"attempts": 3}}"#,
        ),
        ("tags", r#"["a", "b"]"#),
    ];
    let named = |tool: Option<&str>, response: Option<&str>| ParserConfig {
        tool_parser: tool.map(Into::into),
        response_parser: response.map(Into::into),
        ..Default::default()
    };
    match name {
        "qwen" => (
            named(Some("qwen"), None),
            format!("<tool_call>\n{{\"name\": \"{CALLED}\", \"arguments\": {args}}}\n</tool_call>"),
        ),
        "qwen3coder" => {
            let ps: String = xml
                .iter()
                .map(|(k, v)| format!("<parameter={k}>\n{v}\n</parameter>\n"))
                .collect();
            (
                named(Some("qwen3coder"), None),
                format!("<tool_call>\n<function={CALLED}>\n{ps}</function>\n</tool_call>"),
            )
        }
        "glm47" => {
            let kv: String = xml
                .iter()
                .map(|(k, v)| format!("<arg_key>{k}</arg_key><arg_value>{v}</arg_value>"))
                .collect();
            (
                named(Some("glm47"), None),
                format!("<tool_call>{CALLED}{kv}</tool_call>"),
            )
        }
        "deepseek-v32" => {
            let ps: Vec<String> = xml
                .iter()
                .map(|(k, v)| {
                    let string = matches!(*k, "path" | "mode");
                    format!(
                        "<{DSML}parameter name=\"{k}\" string=\"{string}\">{v}</{DSML}parameter>"
                    )
                })
                .collect();
            (
                named(Some("deepseek-v32"), None),
                format!(
                    "\n\n<{DSML}function_calls>\n<{DSML}invoke name=\"{CALLED}\">\n{}\n</{DSML}invoke>\n</{DSML}function_calls>",
                    ps.join("\n")
                ),
            )
        }
        "kimi_k2" => (
            named(Some("kimi_k2"), None),
            format!(
                "<|tool_calls_section_begin|><|tool_call_begin|>functions.{CALLED}:0\
                 <|tool_call_argument_begin|>{args}<|tool_call_end|><|tool_calls_section_end|>"
            ),
        ),
        "pythonic" => (
            named(Some("pythonic"), None),
            format!(
                "[{CALLED}(path='src/app.py', mode='write', limit=20, options={{'encoding': \
                 'utf-8', 'retry': {{'attempts': 3}}}}, tags=['a', 'b'])]"
            ),
        ),
        "gemma4" => {
            let q = "<|\"|>";
            (
                named(Some("gemma4"), None),
                format!(
                    "<|tool_call>call:{CALLED}{{path:{q}src/app.py{q},mode:{q}write{q},limit:20,\
                     options:{{encoding:{q}utf-8{q},retry:{{attempts:3}}}},tags:[{q}a{q},{q}b{q}]}}<tool_call|>"
                ),
            )
        }
        "gpt-oss" => (
            named(None, Some("gpt-oss")),
            format!("<|channel|>commentary to=functions.{CALLED} <|constrain|>json<|message|>{args}<|call|>"),
        ),
        "beam" => {
            let ps: String = xml
                .iter()
                .map(|(k, v)| format!("<rfl:parameter name=\"{k}\">\n{v}\n</rfl:parameter>"))
                .collect();
            (
                named(None, Some("beam")),
                format!(
                    "<|start|>assistant to={CALLED}<|channel|>analysis <|constrain|>xml<|message|>{ps}<|call|>"
                ),
            )
        }
        other => panic!("no dialect {other}"),
    }
}

const DIALECTS: [&str; 9] = [
    "qwen",
    "qwen3coder",
    "glm47",
    "deepseek-v32",
    "kimi_k2",
    "pythonic",
    "gemma4",
    "gpt-oss",
    "beam",
];

/// Checks that `p` parses `text` to the call of tool 7, whole and in 3-byte chunks.
fn check(make: &dyn Fn() -> ResponseParser, text: &str, how: &str) {
    let want: Value = serde_json::from_str(
        r#"{"path": "src/app.py", "mode": "write", "limit": 20, "options": {"encoding": "utf-8", "retry": {"attempts": 3}}, "tags": ["a", "b"]}"#,
    )
    .expect("JSON");
    let whole = make().parse_complete(text, None).expect("parses");
    let mut p = make();
    let mut items = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let mut end = (at + 3).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        p.stream_chunk_into(&text[at..end], None, false, &mut items)
            .expect("streams");
        at = end;
    }
    p.stream_chunk_into("", None, true, &mut items)
        .expect("ends");
    let streamed = ParsedResponse::from_deltas(items.iter().map(|(d, _)| d));
    for m in [whole, streamed] {
        assert_eq!(m.tool_calls.len(), 1, "{how}: {text}");
        assert_eq!(m.tool_calls[0].function.name, CALLED, "{how}");
        let got: Value = serde_json::from_str(&m.tool_calls[0].function.arguments).expect("JSON");
        assert_eq!(got, want, "{how}");
    }
}

type Variant = (&'static str, Box<dyn Fn() -> f64>);

/// Seconds per build of `build` over inputs `prepare` makes. The inputs (a request's
/// deserialised tools) are made and dropped outside the timer; the parser is dropped
/// inside it.
fn timed<T>(prepare: impl Fn() -> Vec<T>, build: impl Fn(&T)) -> f64 {
    let inputs = prepare();
    let t = Instant::now();
    for x in &inputs {
        build(x);
    }
    let s = t.elapsed().as_secs_f64() / inputs.len() as f64;
    drop(inputs);
    s
}

/// Numbers that make tools never seen before (one counter for every dialect).
static FRESH: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn fresh() -> usize {
    FRESH.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn variants(config: &ParserConfig) -> Vec<Variant> {
    let text = Arc::new(tools_json(""));
    let specs = Arc::new(ToolSpec::list_from_json(&text).expect("tools"));
    let held = ToolSet::from_json(&text).expect("tools");
    ResponseParser::new(&ParserConfig {
        tools: Some(specs.to_vec()),
        ..config.clone()
    })
    .expect("builds");
    let c = config.clone();
    let mut out: Vec<Variant> = Vec::new();
    out.push((
        "none",
        Box::new(move || {
            timed(
                || vec![(); BUILDS],
                |()| drop(ResponseParser::new(&c).expect("builds")),
            )
        }),
    ));
    let (c, s) = (config.clone(), specs.clone());
    out.push((
        "specs",
        Box::new(move || {
            timed(
                || {
                    (0..BUILDS)
                        .map(|_| ParserConfig {
                            tools: Some(s.to_vec()),
                            ..c.clone()
                        })
                        .collect()
                },
                |cfg| drop(ResponseParser::new(cfg).expect("builds")),
            )
        }),
    ));
    let (c, t) = (config.clone(), text.clone());
    out.push((
        "text",
        Box::new(move || {
            timed(
                || (0..BUILDS).map(|_| t.to_string()).collect(),
                |src| {
                    let set = ToolSet::from_json(src).expect("tools");
                    drop(ResponseParser::with_tool_set(&c, Some(set)).expect("builds"))
                },
            )
        }),
    ));
    let c = config.clone();
    out.push((
        "held",
        Box::new(move || {
            timed(
                || vec![(); BUILDS],
                |()| drop(ResponseParser::with_tool_set(&c, Some(held.clone())).expect("builds")),
            )
        }),
    ));
    let c = config.clone();
    out.push((
        "cold specs",
        Box::new(move || {
            timed(
                || {
                    (0..BUILDS / 4)
                        .map(|_| {
                            let src = tools_json(&format!(" #{}", fresh()));
                            ParserConfig {
                                tools: Some(ToolSpec::list_from_json(&src).expect("tools")),
                                ..c.clone()
                            }
                        })
                        .collect()
                },
                |cfg| drop(ResponseParser::new(cfg).expect("builds")),
            )
        }),
    ));
    let c = config.clone();
    out.push((
        "cold text",
        Box::new(move || {
            timed(
                || {
                    (0..BUILDS / 4)
                        .map(|_| tools_json(&format!(" #{}", fresh())))
                        .collect()
                },
                |src| {
                    let set = ToolSet::from_json(src).expect("tools");
                    drop(ResponseParser::with_tool_set(&c, Some(set)).expect("builds"))
                },
            )
        }),
    ));
    out
}

fn main() {
    let text = tools_json("");
    let specs = ToolSpec::list_from_json(&text).expect("tools");
    let mut all = Vec::new();
    for name in DIALECTS {
        let (config, call) = dialect(name);
        let with = |tools: Vec<ToolSpec>| ParserConfig {
            tools: Some(tools),
            ..config.clone()
        };
        check(
            &|| ResponseParser::new(&with(specs.clone())).expect("builds"),
            &call,
            "specs",
        );
        let set = ToolSet::from_json(&text).expect("tools");
        check(
            &|| ResponseParser::with_tool_set(&config, Some(set.clone())).expect("builds"),
            &call,
            "set",
        );
        // Without tools the call is not armed: it stays content.
        let plain = ResponseParser::new(&config)
            .expect("builds")
            .parse_complete(&call, None);
        assert!(plain.expect("parses").tool_calls.is_empty(), "{name}");
        all.push((name, variants(&config)));
    }
    println!("checks passed: {} dialects", all.len());
    let mut best: Vec<Vec<f64>> = all
        .iter()
        .map(|(_, v)| vec![f64::INFINITY; v.len()])
        .collect();
    for _ in 0..ROUNDS {
        for (d, (_, vs)) in all.iter().enumerate() {
            for (i, (_, run)) in vs.iter().enumerate() {
                best[d][i] = best[d][i].min(run());
            }
        }
    }
    let names: Vec<&str> = all[0].1.iter().map(|(n, _)| *n).collect();
    println!("\nµs per build, {TOOLS} tools (fastest of {ROUNDS} rounds); ratio to `none` in ()");
    print!("{:<13}", "dialect");
    for n in &names {
        print!("{n:>18}");
    }
    println!();
    for (d, (name, _)) in all.iter().enumerate() {
        print!("{name:<13}");
        let none = best[d][0];
        for t in &best[d] {
            print!("{:>10.2} ({:>5.1})", t * 1e6, t / none);
        }
        println!();
    }
}
