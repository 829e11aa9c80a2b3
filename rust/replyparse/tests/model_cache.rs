//! The model table's cache (`models.rs`, "Caching") stays right when the registry
//! changes at run time. Its own test binary: it registers a dialect, which the other
//! tests' expectations do not allow for.

use replyparse::registry;
use replyparse::{parsers_for_model, Error, ReasoningDialect};

#[test]
fn a_dialect_registered_at_run_time_changes_the_cached_choice() {
    // The Ling 3 row names a reasoning parser this build may not register.
    let model = "inclusionAI/Ling-3-flash";
    let before = parsers_for_model(model, None, None).unwrap();
    if registry::reasoning_dialect("ling3").is_ok() {
        return; // registered in this build: nothing to add at run time
    }
    assert_eq!(before.reasoning_parser, None);
    assert!(
        before.reason.contains("not registered"),
        "{}",
        before.reason
    );
    // Asked again, the cached answer is the same.
    assert_eq!(parsers_for_model(model, None, None).unwrap(), before);

    let generation = registry::generation();
    let d: ReasoningDialect =
        serde_json::from_str(
        r#"{"name": "ling3", "open": "<think>", "close": "</think>", "starts_in_reasoning": "never"}"#,
    )
            .unwrap();
    registry::register_reasoning_dialect(d, false).unwrap();
    assert!(registry::generation() > generation);

    let after = parsers_for_model(model, None, None).unwrap();
    assert_eq!(
        after.reasoning_parser.as_deref(),
        Some("ling3"),
        "{}",
        after.reason
    );
    assert!(!after.reason.contains("not registered"), "{}", after.reason);
    assert_eq!(after.tool_parser, before.tool_parser);
}

#[test]
fn unknown_models_are_answered_alike_every_time() {
    let first = parsers_for_model("acme/Qwen-Mystery-7B", None, None).unwrap_err();
    let second = parsers_for_model("acme/Qwen-Mystery-7B", None, None).unwrap_err();
    assert_eq!(first, second);
    let Error::UnknownModel { candidates, .. } = &first else {
        panic!("{first}")
    };
    assert!(candidates[0].row.starts_with("Qwen"), "{candidates:?}");
    // Rust advice: the configuration, and each row with its parsers.
    let text = first.to_string();
    assert!(
        text.contains("ParserConfig") && text.contains("ParserChoice::fallback"),
        "{text}"
    );
    let row = candidates[0].describe(|k, v| format!("{k}={v}"));
    assert!(row.contains("tool_parser="), "{row}");
    assert!(text.contains(&candidates[0].describe(|k, v| format!("{k} {v:?}"))));
}
