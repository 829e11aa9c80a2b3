//! The model table: the cases of `tests/model_cases.json` resolve as they say, every
//! row is reachable by its ids, model_types and fingerprints, every registered dialect is
//! served by a row or listed in the table's `by_name_only`, and the `out_of_scope` names
//! are registered as the table says.

use replyparse::internals::MODEL_TABLE_JSON;
use replyparse::{model_table, parsers_for_model, registry, Error};
use serde_json::Value;

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
    let text =
        std::fs::read_to_string(replyparse_suite::repo_root().join("tests/model_cases.json"))
            .unwrap();
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
/// where rows share a fingerprint or a model_type): no row is shadowed by another. A
/// row with the same ids as an earlier one refines it by template (a template revision
/// with other defaults): its ids alone give the earlier row, its fingerprints give it.
#[test]
fn every_row_is_reachable_by_what_it_declares() {
    let mut failures = Vec::new();
    let table = model_table();
    for (n, row) in table.iter().enumerate() {
        let by_id = table[..n]
            .iter()
            .find(|r| !row.ids.is_empty() && r.ids == row.ids)
            .map_or(row.name.as_str(), |r| r.name.as_str());
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
        let check_as = |want: &str,
                        what: String,
                        got: replyparse::Result<replyparse::ParserChoice>,
                        failures: &mut Vec<String>| match got {
            Ok(c) if c.row.as_deref() == Some(want) => {}
            Ok(c) => failures.push(format!("{}: {what} gives row {:?}", row.name, c.row)),
            Err(e) => failures.push(format!("{}: {what}: {e}", row.name)),
        };
        let check =
            |what: String,
             got: replyparse::Result<replyparse::ParserChoice>,
             failures: &mut Vec<String>| { check_as(&row.name, what, got, failures) };
        for p in &row.ids {
            let id = format!("org/{}", p.replace('*', "-x-"));
            check_as(
                by_id,
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

/// The table document as shipped (rows, `by_name_only`, `out_of_scope`).
fn table_doc() -> Value {
    serde_json::from_str(MODEL_TABLE_JSON).unwrap()
}

/// The table's `by_name_only` list as `kind:name` keys.
fn by_name_only() -> Vec<String> {
    let doc = table_doc();
    let entries = doc["by_name_only"].as_array().expect("a by_name_only list");
    entries
        .iter()
        .map(|e| {
            let mut fields: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
            fields.sort_unstable();
            assert_eq!(fields, ["kind", "name", "reason"], "{e}");
            assert!(!e["reason"].as_str().unwrap().is_empty(), "{e}");
            format!(
                "{}:{}",
                e["kind"].as_str().unwrap(),
                e["name"].as_str().unwrap()
            )
        })
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
        "no model row serves these, and the table's by_name_only list does not name them: \
         {missing:?}"
    );
    // The list names only registered dialects.
    for l in &listed {
        let (kind, name) = l.split_once(':').expect("kind:name");
        let ok = match kind {
            "tool" => registry::tool_dialect(name).is_ok(),
            "reasoning" => registry::reasoning_dialect(name).is_ok(),
            _ => registry::response_dialect(name).is_ok(),
        };
        assert!(ok, "by_name_only lists {l}, which is not registered");
    }
}

/// Each `out_of_scope` entry says whether its names are registered: not at all
/// (`alias_of` null), or as an alias of the dialect it names (whose tags are in scope).
#[test]
fn out_of_scope_names_are_unregistered_or_the_alias_they_say() {
    let doc = table_doc();
    let entries = doc["out_of_scope"]
        .as_array()
        .expect("an out_of_scope list");
    assert!(!entries.is_empty());
    for e in entries {
        let mut fields: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            ["alias_of", "kinds", "names", "reason", "what"],
            "{e}"
        );
        for kind in e["kinds"].as_array().unwrap() {
            for name in e["names"].as_array().unwrap() {
                let got = canonical(&format!("{}_parser", kind.as_str().unwrap()), name);
                assert_eq!(got.as_deref(), e["alias_of"].as_str(), "{kind} {name}");
            }
        }
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
