//! Derivations of the vendored chat templates (tests/templates in the repository).

use std::path::PathBuf;

use serde_json::Map;

use super::DerivedDialect;

/// Held by tests that fill the derivation cache and by tests that need their derived
/// dialects to stay registered while they look at them (the cache is per process).
pub(crate) static CACHE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn templates() -> Vec<(String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/templates");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("tests/templates")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    out.sort();
    out
}

/// Prints what every vendored template derives to (a development aid).
#[test]
#[ignore = "prints every derivation; run with --ignored --nocapture"]
fn print_every_derivation() {
    let only = std::env::var("DERIVE_ONLY").ok();
    for (name, text) in templates() {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        match DerivedDialect::derive(&text, &Map::new()) {
            Ok(d) => {
                println!("{name}: OK {} ({} renders)", d.summary(), d.renders);
                let (_, recorded) = super::derive_fuel(&text);
                println!("  fuel {recorded}");
                if let Some(t) = &d.tool_parser {
                    println!("  tool {}", serde_json::to_string(t).unwrap());
                }
                if let Some(r) = &d.reasoning_parser {
                    println!("  reasoning {}", serde_json::to_string(r).unwrap());
                }
                for f in &d.findings {
                    println!("  - {f}");
                }
            }
            Err(e) => println!("{name}: REFUSED {}", e.reason),
        }
    }
}

/// A small template whose calls are JSON in `<call{tag}>` blocks.
fn tagged_template(tag: usize) -> String {
    format!(
        "{{%- for m in messages %}}<|im_start|>{{{{ m.role }}}}\n{{{{ m.content }}}}\
         {{%- for c in m.tool_calls or [] %}}<call{tag}>{{{{ {{\"name\": c.function.name, \
         \"arguments\": c.function.arguments}} | tojson }}}}</call{tag}>{{%- endfor %}}\
         <|im_end|>\n{{% endfor %}}{{% if add_generation_prompt %}}<|im_start|>assistant\n\
         {{% endif %}}"
    )
}

/// The cache is bounded: the least recently used derivation goes, and its dialects
/// are unregistered; a cached answer is the same value, not a new derivation.
#[test]
fn the_cache_is_bounded_and_evicted_dialects_are_unregistered() {
    use super::cache::{derived_cache_info, dialect_from_chat_template, DERIVED_CACHE_ENTRIES};
    use crate::registry;

    let _serial = CACHE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let first = dialect_from_chat_template(&tagged_template(0), &Map::new()).unwrap();
    assert_eq!(first.tool_parser.as_ref().unwrap().open, "<call0>");
    let again = dialect_from_chat_template(&tagged_template(0), &Map::new()).unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&first, &again),
        "answered from the cache"
    );
    assert!(registry::tool_dialect(&first.name).is_ok());
    for i in 1..=DERIVED_CACHE_ENTRIES + 1 {
        dialect_from_chat_template(&tagged_template(i), &Map::new()).unwrap();
        assert!(derived_cache_info().entries <= DERIVED_CACHE_ENTRIES);
    }
    assert!(
        registry::tool_dialect(&first.name).is_err(),
        "the evicted derivation's dialect is unregistered"
    );
    // Asked again, it is derived again, to the same declaration.
    let back = dialect_from_chat_template(&tagged_template(0), &Map::new()).unwrap();
    assert_eq!(back.tool_parser, first.tool_parser);
    assert!(registry::tool_dialect(&first.name).is_ok());
}

/// Keeping a derivation registers its dialects, which moves the registry's generation;
/// that leaves the derivation cache as it is (a derivation reads the template alone), so
/// a second model's derivation does not cost the first one its own again.
#[test]
fn registrations_do_not_empty_the_cache() {
    use super::cache::dialect_from_chat_template;
    use crate::registry;

    let _serial = CACHE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let first = dialect_from_chat_template(&tagged_template(3000), &Map::new()).unwrap();
    let before = registry::generation();
    dialect_from_chat_template(&tagged_template(3001), &Map::new()).unwrap();
    assert!(
        registry::generation() > before,
        "the second derivation was registered"
    );
    let again = dialect_from_chat_template(&tagged_template(3000), &Map::new()).unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&first, &again),
        "answered from the cache, not derived again"
    );
    assert!(registry::tool_dialect(&first.name).is_ok());
}

/// An export reads back to the same value; a declaration named otherwise is refused.
#[test]
fn exports_read_back() {
    let d = DerivedDialect::derive(&tagged_template(1000), &Map::new()).unwrap();
    let back = DerivedDialect::from_json(&d.to_json()).unwrap();
    assert_eq!(back, d);
    let mut bad: serde_json::Value = serde_json::from_str(&d.to_json()).unwrap();
    bad["tool_parser"]["name"] = "other".into();
    assert!(DerivedDialect::from_json(&bad.to_string()).is_err());
}

/// The renders of one derivation share a fuel budget: a template that does a lot of
/// work on every render is refused once the budget is spent, not rendered dozens of
/// times at the cost of each.
#[test]
fn a_derivation_has_a_fuel_budget() {
    use crate::chat_template::ChatTemplate;

    let heavy = format!(
        "{{% for i in range(500) %}}{{% for j in range(400) %}}{{% endfor %}}{{% endfor %}}{}",
        tagged_template(2000)
    );
    let (_, fuel) = ChatTemplate::new(&heavy)
        .unwrap()
        .render_counting_fuel(&[], None, false, &Map::new())
        .unwrap();
    assert!(
        fuel < ChatTemplate::DEFAULT_FUEL && fuel * 60 > super::probes::DERIVE_FUEL,
        "one render uses {fuel}: within a render's budget, not within a derivation's"
    );
    let err = DerivedDialect::derive(&heavy, &Map::new()).unwrap_err();
    assert!(err.reason.contains("fuel"), "{}", err.reason);
}

/// A template reading two thinking flags: the one it obeys when a request sends both
/// (and they disagree) comes first among the derived rules.
#[test]
fn flag_rules_follow_the_templates_precedence() {
    use crate::dialect::StartMode;

    let template = |first: &str, second: &str| {
        format!(
            "{{%- for m in messages %}}<|im_start|>{{{{ m.role }}}}\n\
             {{% if m.reasoning_content %}}<think>\n{{{{ m.reasoning_content }}}}\n</think>\n\n\
             {{% endif %}}{{{{ m.content }}}}<|im_end|>\n{{% endfor %}}\
             {{%- if add_generation_prompt %}}<|im_start|>assistant\n\
             {{%- if {first} is defined %}}{{% set on = {first} %}}\
             {{%- elif {second} is defined %}}{{% set on = {second} %}}\
             {{%- else %}}{{% set on = false %}}{{% endif %}}\
             {{%- if on %}}<think>\n{{% endif %}}{{% endif %}}"
        )
    };
    for (first, second) in [
        ("thinking", "enable_thinking"),
        ("enable_thinking", "thinking"),
    ] {
        let d = DerivedDialect::derive(&template(first, second), &Map::new()).unwrap();
        let r = d.reasoning_parser.unwrap();
        assert_eq!(r.starts_in_reasoning, StartMode::WhenEnabled);
        let keys: Vec<&str> = r.thinking_flags.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys, [first, second], "{:?}", d.findings);
    }
}
