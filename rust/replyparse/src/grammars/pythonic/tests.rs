//! The pythonic grammar under every chunking (`chunking_invariant`), and the reader's
//! literal-to-JSON rules.

use serde_json::Value;

use super::value::{ArgsRead, ArgsReader, Read};

/// The reader on `args` (the text after `(`), whole: the JSON and where it stopped.
fn read(args: &str, params: &[&str]) -> (String, Read) {
    let mut r = ArgsReader::new();
    r.open(std::sync::Arc::new(
        params.iter().map(|s| s.to_string()).collect(),
    ));
    let st = r.feed(args, 0, true);
    let mut out = String::new();
    r.take_output(&mut out);
    (out, st)
}

#[test]
fn literals_convert_to_json() {
    for (args, want) in [
        (
            r#"a=1, b='x', c=True, d=None, e=false, f=null)"#,
            r#"{"a": 1, "b": "x", "c": true, "d": null, "e": false, "f": null}"#,
        ),
        (
            r#"l=[1, 2.5, -3], t=(1,), s={'a'}, e=[], d={})"#,
            r#"{"l": [1, 2.5, -3], "t": [1], "s": ["a"], "e": [], "d": {}}"#,
        ),
        (
            r#"d={'k': {'n': [1, {'x': "y"}]}, 1: 2, True: None})"#,
            r#"{"d": {"k": {"n": [1, {"x": "y"}]}, "1": 2, "true": null}}"#,
        ),
        (
            r#"q='Martha\'s Vineyard', m="\"cool units\"")"#,
            r#"{"q": "Martha's Vineyard", "m": "\"cool units\""}"#,
        ),
        (
            r#"month=07, day=05, big=123456789012345678901234567890, h=0x1F)"#,
            r#"{"month": 7, "day": 5, "big": 123456789012345678901234567890, "h": 31}"#,
        ),
        (
            r#"unit=celsius, s='a' "b", r=r'\d', tq='''x'y''')"#,
            r#"{"unit": "celsius", "s": "ab", "r": "\\d", "tq": "x'y"}"#,
        ),
        (
            r#"command='sed -n '360,450p' f.py')"#,
            r#"{"command": "sed -n '360,450p' f.py"}"#,
        ),
        (
            r#"inf=1e999, u='北京\n')"#,
            r#"{"inf": "1e999", "u": "北京\n"}"#,
        ),
        (")", "{}"),
        ("a=1,)", r#"{"a": 1}"#),
    ] {
        let (out, st) = read(args, &[]);
        assert!(
            matches!(st, Read::Closed(n) if n == args.len()),
            "{args}: {st:?}"
        );
        assert_eq!(out, want, "{args}");
        let _: Value = serde_json::from_str(&out).unwrap();
    }
}

#[test]
fn positional_arguments_take_declared_names() {
    let (out, _) = read(r#""Paris", 3, unit='c')"#, &["city", "days", "unit"]);
    assert_eq!(out, r#"{"city": "Paris", "days": 3, "unit": "c"}"#);
    // Past the declared parameters, or after a keyword: malformed, closed as read.
    let (out, st) = read(r#""Paris", 3)"#, &["city"]);
    assert_eq!(out, r#"{"city": "Paris"}"#);
    assert!(matches!(st, Read::Malformed(9)), "{st:?}");
    let (out, st) = read(r#"city="Paris", 3)"#, &["city", "days"]);
    assert_eq!(out, r#"{"city": "Paris"}"#);
    assert!(matches!(st, Read::Malformed(_)));
}

/// Cut output: at the end of input before the call's `)`, nothing is closed (no
/// string, container or object) and a key without a value is not written. What went
/// out is the start of what the whole call gives, unchanged.
#[test]
fn cut_input_closes_nothing_and_is_a_prefix_of_the_whole() {
    for (args, want) in [
        ("a=", "{"),
        ("a='xy", r#"{"a": "xy"#),
        ("a=[1, {'k': 'v", r#"{"a": [1, {"k": "v"#),
    ] {
        let (out, read_) = read(args, &[]);
        assert_eq!(out, want, "{args}");
        assert!(matches!(read_, Read::More(_)), "{args}: {read_:?}");
    }
    let args = r#"city='Pa\'ris', n=[1, 2.5e3, {'k': (True, None)}], s={'a', 'b'}, u="é\u00e9\U0001F600")"#;
    let (full, _) = read(args, &[]);
    assert!(serde_json::from_str::<Value>(&full).unwrap().is_object());
    for k in 0..args.len() {
        if args.is_char_boundary(k) {
            let (out, _) = read(&args[..k], &[]);
            assert!(
                full.starts_with(&out),
                "{k}: {out} is not a start of {full}"
            );
        }
    }
}
