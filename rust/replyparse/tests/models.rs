//! The model table (issue 19): the research's cases resolve as the research says, every
//! row is reachable by its ids, model_types and fingerprints, and every registered
//! dialect is served by a row or listed in the README as "by name only".

use std::path::Path;

use replyparse::models::model_table;
use replyparse::{parsers_for_model, registry, Error};
use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// A name as this build registers it: the canonical name, or `None` when the dialect is
/// not registered (the table leaves such names out).
fn canonical(kind: &str, name: &Value) -> Option<String> {
    let n = name.as_str()?;
    match kind {
        "tool_parser" => registry::tool_dialect(n).ok().map(|d| d.name.clone()),
        "reasoning_parser" => registry::reasoning_dialect(n).ok().map(|d| d.name.clone()),
        _ => registry::response_dialect(n).ok().map(|d| d.name.clone()),
    }
}

#[test]
fn the_research_cases_resolve() {
    let text = std::fs::read_to_string(repo().join("tests/model_cases.json")).unwrap();
    let cases: Value = serde_json::from_str(&text).unwrap();
    let mut failures = Vec::new();
    let mut n = 0;
    for c in cases["cases"].as_array().unwrap() {
        n += 1;
        let model = c["model"].as_str().unwrap();
        let model_type = c["model_type"].as_str();
        let template = c["chat_template"].as_str();
        let label = format!("{model} / {model_type:?} / {template:?}");
        let e = &c["expect"];
        let wants: Vec<Option<String>> = ["tool_parser", "reasoning_parser", "response_parser"]
            .iter()
            .map(|k| canonical(k, &e[k]))
            .collect();
        let got = match parsers_for_model(model, model_type, template) {
            Ok(g) => g,
            // Nothing the research names for it is registered in this build.
            Err(Error::UnknownModel { .. }) if wants.iter().all(Option::is_none) => continue,
            Err(e) => {
                failures.push(format!("{label}: {e}"));
                continue;
            }
        };
        for (kind, have) in [
            ("tool_parser", &got.tool_parser),
            ("reasoning_parser", &got.reasoning_parser),
            ("response_parser", &got.response_parser),
        ] {
            let want = canonical(kind, &e[kind]);
            if &want != have {
                failures.push(format!(
                    "{label}: {kind} {have:?}, expected {want:?} ({})",
                    got.reason
                ));
            }
        }
        assert!(!got.reason.is_empty());
    }
    assert!(n > 100, "{n} cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every row answers to each of its own ids, model_types and fingerprints (with its id,
/// where rows share a fingerprint or a model_type): no row is shadowed by another.
#[test]
fn every_row_is_reachable_by_what_it_declares() {
    let mut failures = Vec::new();
    for row in model_table() {
        let registered = [
            row.tool_parser
                .as_deref()
                .map(registry::tool_dialect)
                .map(|r| r.is_ok()),
            row.reasoning_parser
                .as_deref()
                .map(registry::reasoning_dialect)
                .map(|r| r.is_ok()),
            row.response_parser
                .as_deref()
                .map(registry::response_dialect)
                .map(|r| r.is_ok()),
        ];
        if !registered.contains(&Some(true)) {
            continue; // nothing of it is registered in this build: skipped by design
        }
        let first_id = row.ids.first().map(|p| p.replace('*', "-x-"));
        let check = |what: String,
                     got: replyparse::Result<replyparse::ParserChoice>,
                     failures: &mut Vec<String>| match got {
            Ok(c) if c.row.as_deref() == Some(row.name.as_str()) => {}
            Ok(c) => failures.push(format!("{}: {what} gives row {:?}", row.name, c.row)),
            Err(e) => failures.push(format!("{}: {what}: {e}", row.name)),
        };
        for p in &row.ids {
            let id = format!("org/{}", p.replace('*', "-x-"));
            check(
                format!("id {id:?}"),
                parsers_for_model(&id, None, None),
                &mut failures,
            );
        }
        for t in &row.model_types {
            let id = first_id.clone().unwrap_or_else(|| "org/unknown".into());
            check(
                format!("model_type {t:?} with id {id:?}"),
                parsers_for_model(&id, Some(t), None),
                &mut failures,
            );
        }
        for set in &row.templates {
            let template = set.join("\n");
            let id = first_id.clone().unwrap_or_else(|| "org/unknown".into());
            check(
                format!("template {set:?} with id {id:?}"),
                parsers_for_model(&id, None, Some(&template)),
                &mut failures,
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The README's "by name only" list: `- \`name\` ...` lines under that heading.
fn by_name_only() -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let start = readme
        .find("By name only")
        .expect("README has a 'By name only' list");
    readme[start..]
        .lines()
        .skip(1)
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| l.starts_with("- "))
        .filter_map(|l| l.split('`').nth(1).map(str::to_owned))
        .collect()
}

#[test]
fn every_registered_dialect_is_reachable_from_a_row_or_listed_by_name_only() {
    let listed = by_name_only();
    let mut served = std::collections::BTreeSet::new();
    for row in model_table() {
        for (kind, n) in [
            ("tool", &row.tool_parser),
            ("reasoning", &row.reasoning_parser),
            ("response", &row.response_parser),
        ] {
            let Some(n) = n.as_deref() else { continue };
            let c = match kind {
                "tool" => registry::tool_dialect(n).ok().map(|d| d.name.clone()),
                "reasoning" => registry::reasoning_dialect(n).ok().map(|d| d.name.clone()),
                _ => registry::response_dialect(n).ok().map(|d| d.name.clone()),
            };
            if let Some(c) = c {
                served.insert(format!("{kind}:{c}"));
            }
        }
    }
    let mut missing = Vec::new();
    for d in registry::tool_dialects() {
        let key = format!("tool:{}", d.name);
        if !served.contains(&key) && !listed.contains(&key) {
            missing.push(key);
        }
    }
    for d in registry::reasoning_dialects() {
        let key = format!("reasoning:{}", d.name);
        if !served.contains(&key) && !listed.contains(&key) {
            missing.push(key);
        }
    }
    let responses: std::collections::BTreeSet<String> = registry::response_parser_names()
        .iter()
        .map(|n| registry::response_dialect(n).unwrap().name.clone())
        .collect();
    for name in responses {
        // `default` is the composition every other row builds.
        let key = format!("response:{name}");
        if name != "default" && !served.contains(&key) && !listed.contains(&key) {
            missing.push(key);
        }
    }
    assert!(
        missing.is_empty(),
        "no model row serves these, and the README's 'By name only' list does not name \
         them: {missing:?}"
    );
    // The list names only registered dialects.
    for l in &listed {
        let (kind, name) = l.split_once(':').expect("kind:name");
        let ok = match kind {
            "tool" => registry::tool_dialect(name).is_ok(),
            "reasoning" => registry::reasoning_dialect(name).is_ok(),
            _ => registry::response_dialect(name).is_ok(),
        };
        assert!(ok, "README lists {l}, which is not registered");
    }
}

#[test]
fn unknown_models_fail_naming_candidates_and_the_config_builds() {
    match parsers_for_model("acme/Qwen-Mystery-7B", None, None) {
        Err(Error::UnknownModel { candidates, .. }) => assert!(!candidates.is_empty()),
        other => panic!("{other:?}"),
    }
    let (config, choice) =
        replyparse::config_for_model("deepseek-ai/DeepSeek-V3.1", Some("deepseek_v3"), None)
            .unwrap();
    assert_eq!(choice.tool_parser.as_deref(), Some("deepseek_v31"));
    assert!(choice.reason.contains("model_type"), "{}", choice.reason);
    replyparse::ResponseParser::new(&config).unwrap();
}
