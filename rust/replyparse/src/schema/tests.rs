//! The reading of each rule of the module docs, one test per rule.

use serde_json::{json, Value};

use super::*;
use Ty::*;

/// (declared types, any) of a schema.
fn types(schema: Value) -> (Vec<Ty>, bool) {
    let t = Types::of(Some(&schema));
    (t.declared().to_vec(), t.any())
}

fn typed(d: &[Ty]) -> (Vec<Ty>, bool) {
    (d.to_vec(), false)
}

#[test]
fn type_names_and_python_spellings() {
    assert_eq!(types(json!({"type": "string"})), typed(&[String]));
    assert_eq!(
        types(json!({"type": ["integer", "null"]})),
        typed(&[Integer, Null])
    );
    for (name, ty) in [
        ("str", String),
        ("int", Integer),
        ("float", Number),
        ("double", Number),
        ("bool", Boolean),
        ("dict", Object),
        ("list", Array),
        ("tuple", Array),
    ] {
        assert_eq!(types(json!({ "type": name })), typed(&[ty]), "{name}");
        assert_eq!(Ty::from_name(ty.name()), Some(ty));
    }
    // Repeats are read once, in first place.
    assert_eq!(
        types(json!({"type": ["int", "integer", "null"]})),
        typed(&[Integer, Null])
    );
}

#[test]
fn unknown_names_allow_any_value() {
    let any = (Vec::new(), true);
    for schema in [
        json!({"type": "foo"}),
        json!({"type": []}),
        json!({"type": 3}),
        json!({}),
        json!({"description": "no type"}),
        json!(true),
        json!(null),
    ] {
        assert_eq!(types(schema.clone()), any, "{schema}");
        assert_eq!(Types::of(Some(&schema)).into_try(), [String], "{schema}");
    }
    assert_eq!(Types::of(None), Types::unrestricted());
    assert_eq!(Types::of(property(None, "p")).into_try(), [String]);
    let no_props = json!({"properties": {}});
    assert_eq!(
        Types::of(property(Some(&no_props), "p")).into_try(),
        [String]
    );
    // The known names beside an unknown one are still tried first.
    assert_eq!(
        types(json!({"type": ["integer", 1]})),
        (vec![Integer], true)
    );
    assert_eq!(
        types(json!({"type": ["object", "foo"]})),
        (vec![Object], true)
    );
}

#[test]
fn nullable_adds_null_to_type() {
    assert_eq!(
        types(json!({"type": "string", "nullable": true})),
        typed(&[String, Null])
    );
    assert_eq!(
        types(json!({"type": ["integer", "null"], "nullable": true})),
        typed(&[Integer, Null])
    );
    assert_eq!(
        types(json!({"type": "integer", "nullable": false})),
        typed(&[Integer])
    );
    // Without `type` it adds nothing (OpenAPI 3.0.3).
    assert_eq!(types(json!({"nullable": true})), (vec![], true));
}

#[test]
fn unions_of_alternatives() {
    assert_eq!(
        types(json!({"anyOf": [{"type": "number"}, {"type": "string"}]})),
        typed(&[Number, String])
    );
    assert_eq!(
        types(json!({"oneOf": [{"type": "boolean"}]})),
        typed(&[Boolean])
    );
    let any_of = json!({"anyOf": [{"type": "integer"}, {"type": ["null", "integer"]}]});
    assert_eq!(types(any_of), typed(&[Integer, Null]));
    let nested = json!({"anyOf": [{"oneOf": [{"type": "integer"}]}, {"type": "array"}]});
    assert_eq!(types(nested), typed(&[Integer, Array]));
    // An alternative without type information allows any value.
    assert_eq!(
        types(json!({"anyOf": [{"type": "integer"}, {}]})),
        (vec![Integer], true)
    );
    assert_eq!(
        types(json!({"oneOf": [{"type": "string"}, {}]})),
        (vec![String], true)
    );
    // pydantic's Optional: anyOf with null.
    assert_eq!(
        types(json!({"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]})),
        typed(&[String, Null])
    );
    // An empty or malformed list is not read.
    let empty = json!({"anyOf": [], "oneOf": [{"type": "boolean"}]});
    assert_eq!(types(empty), typed(&[Boolean]));
    assert_eq!(types(json!({"anyOf": {"x": 1}})), (vec![], true));
}

#[test]
fn keywords_narrow_one_another() {
    // Untyped alternatives leave `type` as it is.
    let s = json!({"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]});
    assert_eq!(types(s), typed(&[Object]));
    let s = json!({"type": ["integer", "string"], "oneOf": [{"type": "string"}]});
    assert_eq!(types(s), typed(&[String]));
    let s = json!({"anyOf": [{"type": "integer"}, {"type": "string"}],
                   "oneOf": [{"type": "string"}, {"type": "integer"}]});
    assert_eq!(types(s), typed(&[Integer, String]));
    // A contradicting keyword is ignored.
    let odd = json!({"anyOf": {"x": 1}, "oneOf": [{"type": "boolean"}], "type": "null"});
    assert_eq!(types(odd), typed(&[Null]));
}

#[test]
fn enums_and_consts() {
    assert_eq!(types(json!({"enum": [1, 2]})), typed(&[Integer]));
    assert_eq!(types(json!({"enum": ["low", "high"]})), typed(&[String]));
    assert_eq!(types(json!({"const": true})), typed(&[Boolean]));
    assert_eq!(types(json!({"const": null})), typed(&[Null]));
    assert_eq!(types(json!({"enum": [1.5, 2]})), typed(&[Number, Integer]));
    // Strings last: raw `1` is the member 1.
    assert_eq!(
        types(json!({"enum": ["a", 1, null]})),
        typed(&[Integer, Null, String])
    );
    // `type` narrows the members' types, in the members' order.
    assert_eq!(
        types(json!({"type": ["string", "integer"], "enum": ["a", 1, true]})),
        typed(&[Integer, String])
    );
    // `const` wins over `enum`; an empty enum is not read.
    assert_eq!(
        types(json!({"const": 2.5, "enum": ["x"]})),
        typed(&[Number])
    );
    assert_eq!(
        types(json!({"enum": [], "type": "integer"})),
        typed(&[Integer])
    );
    // Nullable with an enum: null only if the enum lists it (OpenAPI 3.0.3).
    assert_eq!(
        types(json!({"type": "string", "nullable": true, "enum": ["a"]})),
        typed(&[String])
    );
    assert_eq!(
        enum_values(&json!({"const": null})).unwrap(),
        [&json!(null)]
    );
    assert_eq!(enum_values(&json!({"enum": []})), None);
    assert_eq!(enum_values(&json!({"enum": "a"})), None);
    assert_eq!(enum_values(&json!([1])), None);
}

#[test]
fn what_raw_text_may_be() {
    let t = |s: Value| Types::of(Some(&s));
    assert!(t(json!({"type": "string"})).only(String));
    assert!(t(json!({"type": ["integer", "string"]})).is_text());
    assert!(t(json!({"anyOf": [{"type": "integer"}, {}]})).is_text());
    assert!(!t(json!({"type": "int"})).is_text());
    assert!(!t(json!({"anyOf": [{"type": "string"}, {}]})).only(String));
    assert_eq!(t(json!({"type": "int"})).into_try(), [Integer]);
    assert_eq!(t(json!({"description": "x"})).into_try(), [String]);
}

#[test]
fn deep_alternatives_are_bounded() {
    let mut s = json!({"type": "integer"});
    for _ in 0..100 {
        s = json!({"anyOf": [s]});
    }
    // Past the depth limit an alternative reads as any value.
    assert_eq!(types(s.clone()), (vec![], true));
    assert!(member(&s, "k").is_none());
    let mut s = json!({"type": "integer"});
    for _ in 0..MAX_DEPTH {
        s = json!({"anyOf": [s]});
    }
    assert_eq!(types(s), typed(&[Integer]));
}

#[test]
fn declared_properties_close_the_keys() {
    let s = json!({"properties": {"b": {}, "a": {}}, "required": ["a", 3]});
    let p = properties(&s);
    let keys: Vec<&str> = p.declared.iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, ["b", "a"]);
    assert_eq!(p.required, ["a"]);
    assert!(p.is_required("a") && !p.is_required("b"));
    assert!(!p.open);
    assert!(properties(&json!({"type": "object"})).open);
    assert!(!properties(&json!({"additionalProperties": false})).open);
    assert!(properties(&json!({"additionalProperties": {}})).open);
    assert!(properties(&json!(true)).open);
    assert_eq!(properties(&json!({"required": "ab"})).required, ["a", "b"]);
    assert_eq!(
        properties(&json!({"required": {"x": 1, "y": 2}})).required,
        ["x", "y"]
    );
    assert!(properties(&json!({"required": 3})).required.is_empty());
}

#[test]
fn parameters_and_nested_values() {
    let params = json!({"properties": {"p": {"type": "integer"}}});
    assert_eq!(
        property(Some(&params), "p"),
        Some(&json!({"type": "integer"}))
    );
    assert_eq!(property(Some(&params), "q"), None);
    assert_eq!(property(None, "p"), None);
    assert_eq!(property(Some(&json!({"properties": [1]})), "0"), None);
    // A nested key's schema: the object's own, else the first alternative declaring it.
    let limit = json!({"oneOf": [{"type": "integer"},
        {"type": "object", "properties": {"max": {"type": "integer"}}}]});
    assert_eq!(member(&limit, "max"), Some(&json!({"type": "integer"})));
    assert_eq!(member(&limit, "min"), None);
    let own = json!({"properties": {"a": {"type": "string"}},
        "anyOf": [{"properties": {"a": {"type": "integer"}}}]});
    assert_eq!(member(&own, "a"), Some(&json!({"type": "string"})));
    let filter = json!({"anyOf": [{"type": "array", "items": {"type": "string"}},
        {"type": "object"}]});
    assert_eq!(items(&filter), Some(&json!({"type": "string"})));
    assert_eq!(items(&json!({"items": true})), Some(&json!(true)));
    assert_eq!(items(&json!({"type": "array"})), None);
}

#[test]
fn normalized_for_constraint_engines() {
    let plain = json!({"type": "object", "properties": {"a": {"type": ["integer", "null"]},
        "b": {"type": ["string"]}, "c": {"enum": ["int"]}}});
    assert!(matches!(normalized(&plain), Cow::Borrowed(_)));
    let s = json!({"type": "dict", "properties": {
        "a": {"type": "int", "description": "x"},
        "b": {"type": "string", "nullable": true},
        "c": {"type": ["list", "null"], "items": {"type": "float"}},
        "d": {"anyOf": [{"type": "bool"}, {"type": "foo"}]},
        "e": {"type": "foo", "default": {"type": "int"}},
        "f": {"type": "null", "nullable": true}},
        "additionalProperties": {"type": "str"},
        "$defs": {"m": {"type": "tuple", "prefixItems": [{"type": "double"}]}}});
    let want = json!({"type": "object", "properties": {
        "a": {"type": "integer", "description": "x"},
        "b": {"type": ["string", "null"], "nullable": true},
        "c": {"type": ["array", "null"], "items": {"type": "number"}},
        "d": {"anyOf": [{"type": "boolean"}, {}]},
        "e": {"default": {"type": "int"}},
        "f": {"type": "null", "nullable": true}},
        "additionalProperties": {"type": "string"},
        "$defs": {"m": {"type": "array", "prefixItems": [{"type": "number"}]}}});
    let got = normalized(&s);
    assert_eq!(*got, want);
    // Key order is kept where `type` is removed.
    let keys: Vec<&str> = got["properties"]["e"]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(keys, ["default"]);
    // The normalized schema reads as the original does.
    for key in ["a", "b", "c", "d", "e", "f"] {
        assert_eq!(
            Types::of(property(Some(&s), key)),
            Types::of(property(Some(&got), key)),
            "{key}"
        );
    }
}

#[test]
fn narrowing_keeps_the_first_keywords_order() {
    // `type` with an unknown name allows any type: anyOf's types, `type`'s first.
    let s = json!({"type": ["integer", "foo"],
                   "anyOf": [{"type": "string"}, {"type": "integer"}]});
    assert_eq!(types(s), typed(&[Integer, String]));
    // Both allow any type besides their own: either's types, any type still.
    let s = json!({"type": ["integer", "foo"], "anyOf": [{"type": "null"}, {}]});
    assert_eq!(types(s), (vec![Integer, Null], true));
    // A typed keyword narrows one that allows any type to its own types.
    let s = json!({"type": "boolean", "anyOf": [{"type": "integer"}, {}]});
    assert_eq!(types(s), typed(&[Boolean]));
}
