//! The engine's top-level modules import one another one way only.
//!
//! Reads every `crate::<module>` path in `src/` (in `use` items or inline, grouped
//! `use crate::{a::X, b::Y}` included, root re-exports such as `crate::ToolSpec`
//! resolved to their module, and `super::` paths that climb out of a top-level module),
//! comments and string literals left out, test code included: tests count as imports.
//! It fails when two top-level modules import each other, directly or through others,
//! and names the cycle with a file and line for each step.
//!
//! `cargo test -p replyparse --test module_graph -- --nocapture` prints the graph, by
//! layer (each module imports only from the layers above its own line); see
//! `ARCHITECTURE.md` beside `Cargo.toml`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Where one module imports another: `file:line`.
type Evidence = BTreeMap<(String, String), String>;

#[test]
fn top_level_modules_import_one_way() {
    let (graph, evidence) = module_graph();
    print_layers(&graph);
    if let Some(cycle) = find_cycle(&graph) {
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|w| {
                let at = &evidence[&(w[0].clone(), w[1].clone())];
                format!("  {} -> {}  ({at})", w[0], w[1])
            })
            .collect();
        panic!(
            "top-level modules import each other: {}\n{}",
            cycle.join(" -> "),
            steps.join("\n")
        );
    }
}

/// The test's own reader on small inputs, so that a cycle it should see cannot go
/// unseen through a parsing slip.
#[test]
fn the_reader_sees_every_form_of_path() {
    let exports = BTreeMap::from([("ToolSpec".to_owned(), "request".to_owned())]);
    let src = r##"
        use crate::{calls::X, delta::{Y, Z}};
        // use crate::comment_only;
        /* crate::block_comment */
        let s = "crate::in_a_string"; let r = r#"crate::raw"#; let c = '{';
        fn f() -> crate::ToolSpec { crate::scan::lex::head() }
        mod tests { use super::super::super::config::P; }
        use super::sibling;
    "##;
    let got: BTreeSet<String> = imports(src, &["grammars".into(), "xml".into()], &exports)
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    let want = ["calls", "config", "delta", "request", "scan"];
    assert_eq!(got, want.iter().map(|s| s.to_string()).collect());
    let mut g = BTreeMap::new();
    g.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    g.insert("b".to_owned(), BTreeSet::from(["c".to_owned()]));
    g.insert("c".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(find_cycle(&g).unwrap(), ["a", "b", "c", "a"]);
    g.get_mut("c").unwrap().clear();
    assert_eq!(find_cycle(&g), None);
}

/// Every top-level module and the top-level modules it imports.
fn module_graph() -> (BTreeMap<String, BTreeSet<String>>, Evidence) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let exports = root_exports(&fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut evidence = Evidence::new();
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).unwrap();
        let path = module_path(rel);
        let Some(top) = path.first().cloned() else {
            continue; // lib.rs: the root declares and re-exports, it is no layer
        };
        let text = fs::read_to_string(&file).unwrap();
        graph.entry(top.clone()).or_default();
        for (to, line) in imports(&text, &path, &exports) {
            if to == top || !src_has_module(&src, &to) {
                continue;
            }
            let at = format!("src/{}:{line}", rel.display());
            evidence.entry((top.clone(), to.clone())).or_insert(at);
            graph.get_mut(&top).unwrap().insert(to);
        }
    }
    (graph, evidence)
}

fn src_has_module(src: &Path, name: &str) -> bool {
    src.join(format!("{name}.rs")).exists() || src.join(name).join("mod.rs").exists()
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
    out
}

/// The module path of a file under `src/`: `grammars/xml/mod.rs` is `grammars::xml`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    match last.as_str() {
        "lib.rs" | "mod.rs" => {}
        other => parts.push(other.trim_end_matches(".rs").to_owned()),
    }
    parts
}

/// What the crate root re-exports, by name: `pub use request::{ToolChoice, ToolSpec}`
/// makes `crate::ToolSpec` a path into `request`.
fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let code = strip(lib);
    let mut out = BTreeMap::new();
    for item in code.split(';') {
        let Some(rest) = item.trim().strip_prefix("pub use ") else {
            continue;
        };
        let rest = rest.trim().trim_start_matches("crate::");
        let Some((module, names)) = rest.split_once("::") else {
            continue;
        };
        let names = names.trim().trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.split(" as ").last().unwrap().trim();
            let name = name.rsplit("::").next().unwrap();
            if !name.is_empty() {
                out.insert(name.to_owned(), module.trim().to_owned());
            }
        }
    }
    out
}

/// The top-level modules `text` (the file at module path `path`) names, each with the
/// line it is first named on.
fn imports(
    text: &str,
    path: &[String],
    exports: &BTreeMap<String, String>,
) -> Vec<(String, usize)> {
    let code = strip(text);
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    // Inline modules open at a brace depth; `super::` climbs them first.
    let mut inline: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut line = 1;
    let mut i = 0;
    while i < bytes.len() {
        let rest = &code[i..];
        match bytes[i] {
            b'\n' => line += 1,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if inline.last() == Some(&depth) {
                    inline.pop();
                }
            }
            _ if word_at(&code, i, "mod") => {
                let after = rest[3..].trim_start();
                let name_len = ident_len(after);
                if after[name_len..].trim_start().starts_with('{') {
                    inline.push(depth);
                }
            }
            _ if word_at(&code, i, "crate") && rest[5..].starts_with("::") => {
                for m in targets(&rest[7..], exports) {
                    out.push((m, line));
                }
                i += 7;
                continue;
            }
            _ if word_at(&code, i, "super") && rest[5..].starts_with("::") => {
                let mut ups = 0;
                let mut tail = rest;
                while let Some(t) = tail.strip_prefix("super::") {
                    ups += 1;
                    tail = t.trim_start();
                }
                let here = path.len() + inline.len();
                if ups >= here {
                    out.extend(targets(tail, exports).into_iter().map(|m| (m, line)));
                }
                i += 7 * ups;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The top-level modules a path after `crate::` starts with (several for a group).
fn targets(after: &str, exports: &BTreeMap<String, String>) -> Vec<String> {
    let after = after.trim_start();
    if let Some(group) = after.strip_prefix('{') {
        let mut level = 0;
        let mut items = Vec::new();
        let mut start = 0;
        for (k, c) in group.char_indices() {
            match c {
                '{' => level += 1,
                '}' if level == 0 => {
                    items.push(&group[start..k]);
                    break;
                }
                '}' => level -= 1,
                ',' if level == 0 => {
                    items.push(&group[start..k]);
                    start = k + 1;
                }
                _ => {}
            }
        }
        return items
            .into_iter()
            .flat_map(|item| targets(item, exports))
            .collect();
    }
    let n = ident_len(after);
    let first = &after[..n];
    match exports.get(first) {
        Some(module) => vec![module.clone()],
        None if !first.is_empty() && first != "self" => vec![first.to_owned()],
        None => Vec::new(),
    }
}

fn ident_len(s: &str) -> usize {
    s.bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count()
}

/// Whether the keyword `word` stands at byte `i` of `code` (not inside an identifier).
fn word_at(code: &str, i: usize, word: &str) -> bool {
    let b = code.as_bytes();
    let before_ok = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    let end = i + word.len();
    before_ok
        && code[i..].starts_with(word)
        && b.get(end)
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
}

/// `text` with comments, string and char literals blanked (newlines kept, so lines
/// still count).
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |out: &mut String, s: &str| {
        out.extend(s.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
    };
    while i < b.len() {
        let rest = &text[i..];
        let end = if rest.starts_with("//") {
            rest.find('\n').unwrap_or(rest.len())
        } else if rest.starts_with("/*") {
            rest.find("*/").map_or(rest.len(), |k| k + 2)
        } else if let Some(n) = raw_string_len(rest) {
            n
        } else if rest.starts_with('"') || rest.starts_with("b\"") {
            let open = rest.find('"').unwrap() + 1;
            let mut k = open;
            while k < rest.len() && rest.as_bytes()[k] != b'"' {
                k += if rest.as_bytes()[k] == b'\\' { 2 } else { 1 };
            }
            k + 1
        } else if rest.starts_with('\'') {
            char_literal_len(rest).unwrap_or(0)
        } else {
            0
        };
        if end == 0 {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        } else {
            let end = end.min(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        }
    }
    out
}

/// The length of a raw string literal (`r"..."`, `r#"..."#`, `br"..."`) at the start.
fn raw_string_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("br").or_else(|| s.strip_prefix('r'))?;
    let hashes = body.bytes().take_while(|b| *b == b'#').count();
    if body.as_bytes().get(hashes) != Some(&b'"') {
        return None;
    }
    let close = format!("\"{}", "#".repeat(hashes));
    let prefix = s.len() - body.len() + hashes + 1;
    let end = s[prefix..].find(&close)?;
    Some(prefix + end + close.len())
}

/// The length of a char literal at the start (`'{'`, `'\n'`), or None for a lifetime.
fn char_literal_len(s: &str) -> Option<usize> {
    let mut chars = s.char_indices().skip(1);
    let (_, c) = chars.next()?;
    if c == '\\' {
        return s[2..].find('\'').map(|k| k + 3);
    }
    let (k, next) = chars.next()?;
    (next == '\'').then_some(k + 1)
}

/// A cycle of the graph, as a path that ends where it starts, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        marks.insert(n.to_owned(), Mark::Open);
        stack.push(n.to_owned());
        for m in graph.get(n).into_iter().flatten() {
            match marks.get(m) {
                Some(Mark::Open) => {
                    let from = stack.iter().position(|s| s == m).unwrap();
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                Some(Mark::Done) => {}
                None => {
                    if let Some(c) = visit(m, graph, marks, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        marks.insert(n.to_owned(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for n in graph.keys() {
        if !marks.contains_key(n) {
            if let Some(c) = visit(n, graph, &mut marks, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// Prints the graph by layer: a module's layer is one more than the highest layer it
/// imports from (modules in a cycle are printed last, unlayered).
fn print_layers(graph: &BTreeMap<String, BTreeSet<String>>) {
    let mut layer: BTreeMap<&str, usize> = BTreeMap::new();
    while layer.len() < graph.len() {
        let before = layer.len();
        for (m, deps) in graph {
            if layer.contains_key(m.as_str()) {
                continue;
            }
            if deps.iter().all(|d| layer.contains_key(d.as_str())) {
                let l = deps
                    .iter()
                    .map(|d| layer[d.as_str()] + 1)
                    .max()
                    .unwrap_or(0);
                layer.insert(m, l);
            }
        }
        if layer.len() == before {
            break;
        }
    }
    println!("module graph of src/ (each module imports only from lower layers):");
    let top = layer.values().copied().max().unwrap_or(0);
    for l in 0..=top {
        for (m, _) in layer.iter().filter(|(_, v)| **v == l) {
            let deps: Vec<&str> = graph[*m].iter().map(String::as_str).collect();
            println!("  L{l}  {m:<16} -> {}", deps.join(", "));
        }
    }
    for m in graph.keys().filter(|m| !layer.contains_key(m.as_str())) {
        let deps: Vec<&str> = graph[m].iter().map(String::as_str).collect();
        println!("  ??  {m:<16} -> {}  (in a cycle)", deps.join(", "));
    }
}
