//! Derivations of the vendored chat templates (tests/templates in the repository).

use std::path::PathBuf;

use serde_json::Map;

use super::DerivedDialect;

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
