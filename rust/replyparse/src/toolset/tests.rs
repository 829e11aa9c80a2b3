use serde_json::json;

use super::*;

fn spec(name: &str, parameters: Option<Value>) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        parameters,
    }
}

/// Random JSON values of every kind: nesting, unicode, integers past `i64`, floats.
fn value(rng: &mut fastrand::Rng, depth: u32) -> Value {
    match rng.u8(..if depth > 3 { 7 } else { 9 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.bool()),
        2 => json!(rng.i64(..)),
        3 => json!(rng.u64(..)),
        4 => json!(rng.f64() * 1e6 - 5e5),
        5 => json!(["", "a", "北京", "\u{0}", "type", "\"q\""][rng.usize(..6)]),
        6 => json!(rng.u8(..3)),
        7 => Value::Array((0..rng.usize(..4)).map(|_| value(rng, depth + 1)).collect()),
        _ => Value::Object(
            (0..rng.usize(..4))
                .map(|_| {
                    (
                        ["type", "a", "b", "é"][rng.usize(..4)].to_owned(),
                        value(rng, depth + 1),
                    )
                })
                .collect(),
        ),
    }
}

fn key_of(v: &Value) -> Vec<u8> {
    let mut k = ToolsKey::request();
    k.value(v);
    k.finish()
}

/// One content, one key; different content, different keys (integers and floats
/// apart, as the schema reading tells them apart); every value reads back as itself.
#[test]
fn the_key_is_the_content() {
    let mut rng = fastrand::Rng::with_seed(11);
    let values: Vec<Value> = (0..3000).map(|_| value(&mut rng, 0)).collect();
    for (i, a) in values.iter().enumerate() {
        let ka = key_of(a);
        assert_eq!(Reader::at(&ka, 1).value(), *a, "{a}");
        assert_eq!(Reader::at(&ka, 1).skip_from(), ka.len(), "{a}");
        let b = &values[(i * 7 + 1) % values.len()];
        assert_eq!(ka == key_of(b), a == b, "{a} / {b}");
    }
    assert_ne!(key_of(&json!(1)), key_of(&json!(1.0)));
    assert_ne!(key_of(&json!({"a": "b"})), key_of(&json!(["a", "b"])));
    assert_ne!(
        key_of(&json!({"a": 1, "b": 2})),
        key_of(&json!({"b": 2, "a": 1}))
    );
}

#[test]
fn equal_tools_share_one_set_and_different_ones_do_not() {
    let params = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let a = ToolSet::new(&[spec("f", Some(params.clone())), spec("g", None)]);
    let b = ToolSet::new(&[spec("f", Some(params.clone())), spec("g", None)]);
    assert!(Arc::ptr_eq(&a, &b));
    let deep = json!({"type": "object", "properties": {"n": {"type": "number"}}});
    let c = ToolSet::new(&[spec("f", Some(deep)), spec("g", None)]);
    assert!(!Arc::ptr_eq(&a, &c));
    assert_eq!(a.schema("f").map(|s| &**s), Some(&params));
    assert_eq!(a.schema("g"), None);
    assert_eq!(a.specs(), vec![spec("f", Some(params)), spec("g", None)]);
    assert_eq!(a.names().collect::<Vec<_>>(), ["f", "g"]);
}

/// A name given twice types values by the last schema given for it, as a map of the
/// tools by name would.
#[test]
fn a_repeated_name_takes_the_last_schema() {
    let (one, two) = (json!({"type": "object"}), json!({"type": "array"}));
    let set = ToolSet::new(&[
        spec("f", Some(one)),
        spec("f", Some(two.clone())),
        spec("f", None),
    ]);
    assert_eq!(set.schema("f").map(|s| &**s), Some(&two));
    // Declared `null` last, the name's parameters type nothing.
    let set = ToolSet::new(&[spec("f", Some(two)), spec("f", Some(Value::Null))]);
    assert_eq!(set.schema("f"), None);
    let text =
        r#"[{"name": "f", "parameters": {"type": "object"}}, {"name": "f", "parameters": null}]"#;
    assert_eq!(ToolSet::from_json(text).unwrap().schema("f"), None);
}

#[test]
fn text_sets_are_read_as_the_json_reader_reads_them() {
    let src = r#"[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},
                  {"name": "g", "parameters": null}]"#;
    let a = ToolSet::from_json(src).unwrap();
    assert!(Arc::ptr_eq(&a, &ToolSet::from_json(src).unwrap()));
    assert_eq!(
        a.specs(),
        vec![spec("f", Some(json!({"type": "object"}))), spec("g", None)]
    );
    let bad = r#"[{"type": "retrieval"}]"#;
    assert!(matches!(
        ToolSet::from_json(bad),
        Err(Error::InvalidTools(_))
    ));
}

/// A request key is read as `ToolSpec::from_json` reads each tool.
#[test]
fn request_keys_are_read_as_the_json_reader_reads_tools() {
    let mut rng = fastrand::Rng::with_seed(3);
    let shapes = [
        json!({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}),
        json!({"function": {"name": "f", "description": "d", "parameters": null}}),
        json!({"name": "g", "parameters": {"properties": {}}}),
        json!({"type": 3, "function": {"name": "h"}}),
        json!({"type": "retrieval", "function": {"name": "f"}}),
        json!({"type": "function", "function": {"name": ""}}),
        json!({"type": "function"}),
        json!({"function": null, "name": "f"}),
        json!({"function": {"name": 5}}),
        json!([1]),
    ];
    for _ in 0..500 {
        let tools: Vec<Value> = (0..rng.usize(..4))
            .map(|_| shapes[rng.usize(..shapes.len())].clone())
            .collect();
        let want: Result<Vec<ToolSpec>> = tools
            .iter()
            .map(|t| {
                ToolSpec::from_json(t).map(|mut s| {
                    s.parameters = s.parameters.filter(|p| !p.is_null());
                    s
                })
            })
            .collect();
        let mut key = ToolsKey::request();
        key.value(&Value::Array(tools.clone()));
        let got = key.tool_set().map(|s| s.specs());
        match (&got, &want) {
            (Ok(g), Ok(w)) => assert_eq!(g, w, "{tools:?}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{tools:?}: {got:?} / {want:?}"),
        }
    }
}

#[test]
fn an_unfinished_key_is_refused() {
    let mut key = ToolsKey::request();
    key.begin_array(0);
    assert!(key.tool_set().is_err());
    key.end();
    assert!(key.tool_set().unwrap().is_empty());
}

#[test]
fn the_request_checks_the_choice_against_the_tools() {
    let set = ToolSet::new(&[spec("f", None)]);
    let named = |n: &str| ToolChoice::Function(n.into());
    assert!(RequestTools::new(Some(set.clone()), named("f")).is_ok());
    for (tools, choice) in [
        (Some(set.clone()), named("g")),
        (None, named("f")),
        (None, ToolChoice::Required),
        (Some(ToolSet::new(&[])), ToolChoice::Required),
    ] {
        let policy = ToolPolicy::new(tools.as_ref().map(|s| s.specs()), choice.clone());
        let request = RequestTools::new(tools, choice);
        assert_eq!(
            request.unwrap_err().to_string(),
            policy.unwrap_err().to_string()
        );
    }
    let r = RequestTools::new(Some(set.clone()), ToolChoice::Auto).unwrap();
    assert!(r.armed());
    assert!(matches!(r.allowed(), AllowedNames::Only(n) if Arc::ptr_eq(&n, &set.names)));
    let none = RequestTools::new(Some(set), ToolChoice::None).unwrap();
    assert!(!none.armed());
}

#[test]
fn the_cache_stays_bounded() {
    for i in 0..TOOL_SET_CACHE_ENTRIES + 20 {
        ToolSet::new(&[spec(
            &format!("bounded_{i}"),
            Some(json!({"type": "object"})),
        )]);
        let (entries, bytes) = SETS.size();
        assert!(entries <= TOOL_SET_CACHE_ENTRIES && bytes <= TOOL_SET_CACHE_BYTES);
    }
}

/// Threads building sets of overlapping tools get one set per content.
#[test]
fn threads_share_one_set_per_content() {
    let contents: Vec<Vec<ToolSpec>> = (0..6)
        .map(|i| {
            (0..=i)
                .map(|j| {
                    spec(
                        &format!("shared_{j}"),
                        Some(json!({"type": "object", "n": j})),
                    )
                })
                .collect()
        })
        .collect();
    let sets: Vec<Vec<Arc<ToolSet>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| contents.iter().map(|c| ToolSet::new(c)).collect::<Vec<_>>()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for per_thread in &sets[1..] {
        for (a, b) in per_thread.iter().zip(&sets[0]) {
            assert!(Arc::ptr_eq(a, b) || a.key == b.key);
        }
    }
    for (set, tools) in sets[0].iter().zip(&contents) {
        assert_eq!(&set.specs(), tools);
    }
}

/// A set of names is the set of those names as specs without parameters.
#[test]
fn a_set_of_names_is_the_specs_without_parameters() {
    let by_names = ToolSet::of_names(&["names_f", "names_g"]);
    let by_specs = ToolSet::new(&[spec("names_f", None), spec("names_g", None)]);
    assert!(Arc::ptr_eq(&by_names, &by_specs) || by_names.key == by_specs.key);
    assert_eq!(by_names.schema("names_f"), None);
    assert!(by_names.has("names_g") && !by_names.has("names_h"));
}
