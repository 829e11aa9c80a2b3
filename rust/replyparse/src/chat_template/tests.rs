//! Unit tests of the renderer: each transformers behaviour the configuration copies.
//! (tests/test_template_render.py compares whole templates with transformers itself.)

use serde_json::{json, Map, Value as Json};

use super::{render_chat_template, ChatTemplate, TemplateError, TemplateErrorKind};

fn render_with(template: &str, messages: Json, kwargs: Json) -> Result<String, TemplateError> {
    let messages = messages.as_array().cloned().unwrap_or_default();
    let kwargs: Map<String, Json> = kwargs.as_object().cloned().unwrap_or_default();
    render_chat_template(template, &messages, None, false, &kwargs)
}

fn ok(template: &str, kwargs: Json) -> String {
    render_with(template, json!([]), kwargs).unwrap()
}

fn err(template: &str, kwargs: Json) -> TemplateError {
    render_with(template, json!([]), kwargs).unwrap_err()
}

#[test]
fn trims_blocks_like_transformers() {
    let t = "{% if true %}\n  a\n{% endif %}\n  {% if true %}b{% endif %}\n";
    assert_eq!(ok(t, json!({})), "  a\nb");
}

#[test]
fn values_print_as_python_str() {
    let out = ok(
        "{{ x }}|{{ x.b | string }}|{{ x.b | join(',') }}|{{ x.b[4] }}|{{ x.b[0] / 2 }}",
        json!({"x": {"a": "it's", "b": [1, 2.5, true, null, 1e-7], "c": "x\ny", "d": "\u{a0}"}}),
    );
    assert_eq!(
        out,
        "{'a': \"it's\", 'b': [1, 2.5, True, None, 1e-07], 'c': 'x\\ny', 'd': '\\xa0'}\
         |[1, 2.5, True, None, 1e-07]|1,2.5,True,None,1e-07|1e-07|0.5"
    );
}

#[test]
fn tojson_is_python_json_dumps() {
    let x = json!({"b": [1, 2.0, 1e-7, 1e16, true, null], "a": "é<&>'\"\n😀", "e": {}, "f": []});
    let cases = [
        (
            "{{ x | tojson }}",
            "{\"b\": [1, 2.0, 1e-07, 1e+16, true, null], \"a\": \"é<&>'\\\"\\n😀\", \"e\": {}, \"f\": []}",
        ),
        (
            "{{ x.a | tojson(ensure_ascii=True) }}",
            "\"\\u00e9<&>'\\\"\\n\\ud83d\\ude00\"",
        ),
        (
            "{{ x | tojson(separators=(',', ':'), sort_keys=True) }}",
            "{\"a\":\"é<&>'\\\"\\n😀\",\"b\":[1,2.0,1e-07,1e+16,true,null],\"e\":{},\"f\":[]}",
        ),
        ("{{ x.b[:2] | tojson(indent=2) }}", "[\n  1,\n  2.0\n]"),
        ("{{ x.e | tojson(indent='\t') }}", "{}"),
        ("{{ {'k': [1]} | tojson(False, '--') }}", "{\n--\"k\": [\n----1\n--]\n}"),
    ];
    for (template, want) in cases {
        assert_eq!(ok(template, json!({"x": x})), want, "{template}");
    }
    assert_eq!(
        err("{{ missing | tojson }}", json!({})).kind,
        TemplateErrorKind::Render
    );
}

#[test]
fn raise_exception_reports_the_message_and_line() {
    let e = err(
        "line one\n{{ raise_exception('roles must alternate') }}",
        json!({}),
    );
    assert_eq!(e.kind, TemplateErrorKind::Raised);
    assert_eq!(e.message, "roles must alternate");
    assert_eq!(e.line, Some(2));
    assert_eq!(
        e.to_string(),
        "the chat template raised an exception at line 2: roles must alternate"
    );
}

#[test]
fn syntax_errors_name_the_line() {
    let e = ChatTemplate::new("ok\n{% if x %}\n{% endfor %}").unwrap_err();
    assert_eq!(e.kind, TemplateErrorKind::Syntax);
    assert_eq!(e.line, Some(3));
    assert!(
        e.to_string()
            .starts_with("chat template syntax error at line 3: "),
        "{e}"
    );
    assert_eq!(
        ChatTemplate::new("{% do x %}").unwrap_err().kind,
        TemplateErrorKind::Syntax
    );
}

#[test]
fn undefined_values_are_lenient_as_jinja_default() {
    let t = "[{{ missing }}]{% for x in missing %}x{% endfor %}{{ missing | default('d') }}\
             {{ missing is defined }}{{ missing | length }}{% if not missing %}!{% endif %}";
    assert_eq!(ok(t, json!({})), "[]dFalse0!");
    let e = err("{{ missing.attr }}", json!({}));
    assert_eq!(e.kind, TemplateErrorKind::Render);
    assert_eq!(e.line, Some(1));
}

#[test]
fn loop_controls_and_insertion_order() {
    let t = "{% for k, v in d.items() %}{% if v == 2 %}{% continue %}{% endif %}\
             {% if v == 4 %}{% break %}{% endif %}{{ k }}{% endfor %}";
    let d = json!({"z": 1, "y": 2, "a": 3, "b": 4, "c": 5});
    assert_eq!(ok(t, json!({"d": d})), "za");
}

#[test]
fn generation_tag_renders_its_body() {
    let t =
        "{% for m in messages %}{% generation %}\n{{ m.content }}\n{% endgeneration %}{% endfor %}";
    let out = render_with(
        t,
        json!([{"role": "assistant", "content": "hi"}]),
        json!({}),
    )
    .unwrap();
    assert_eq!(out, "hi\n");
}

#[test]
fn strftime_now_is_the_current_date() {
    let year = ok("{{ strftime_now('%Y') }}", json!({}));
    let now: i64 = jiff::ZonedDateTime::now().year().into();
    let year: i64 = year.parse().unwrap();
    assert!((year - now).abs() <= 1, "{year} {now}");
    assert_eq!(ok("{{ strftime_now('%d %b %Y') }}", json!({})).len(), 11);
}

#[test]
fn python_methods() {
    let t = "{{ s.strip() }}|{{ s.split() }}|{{ s.rsplit(' ', 1) }}|{{ s.lstrip(' a') }}|\
             {{ s.startswith((' ', 'x')) }}|{{ d.get('k', 'none') }}|{{ d.get('x') }}|\
             {{ s.strip().partition(' ') }}|{{ '-'.join(['a', 'b']) }}|{{ s.count('a') }}|\
             {{ 'a\\r\\nb'.splitlines() }}|{{ s.find('b') }}|{{ d.keys() | list }}";
    let out = ok(t, json!({"s": " a b ", "d": {"x": 1}}));
    assert_eq!(
        out,
        "a b|['a', 'b']|[' a b', '']|b |True|none|1|('a', ' ', 'b')|a-b|1|['a', 'b']|3|['x']"
    );
    let e = err("{{ l.append(1) }}", json!({"l": []}));
    assert!(
        e.message
            .contains("access to attribute 'append' of 'list' object is unsafe"),
        "{e}"
    );
    assert!(err("{{ d.update({}) }}", json!({"d": {}}))
        .message
        .contains("unsafe"));
    assert!(err("{{ ', '.join([1]) }}", json!({}))
        .message
        .contains("expected str instance"));
}

#[test]
fn type_tests_follow_jinja() {
    let t = "{{ s is sequence }}{{ d is sequence }}{{ n is sequence }}{{ s is iterable }}\
             {{ d is iterable }}{{ n is iterable }}{{ missing is iterable }}{{ true is number }}";
    assert_eq!(
        ok(t, json!({"s": "ab", "d": {}, "n": 1})),
        "TrueTrueFalseTrueTrueFalseTrueTrue"
    );
    // minijinja's filters that Jinja does not have fail as they do in transformers.
    assert_eq!(
        err("{{ 'a b' | split }}", json!({})).kind,
        TemplateErrorKind::Render
    );
}

#[test]
fn reasoning_is_aliased_as_transformers_does() {
    let t = "{% for m in messages %}{{ m | list }}:{{ m.reasoning_content }}/{{ m.thinking }}\n{% endfor %}";
    let messages = json!([
        {"role": "assistant", "reasoning": "r1", "content": "c"},
        {"role": "assistant", "content": "c", "thinking": "t", "reasoning_content": "rc"},
        {"role": "user", "content": "u", "reasoning_content": null},
    ]);
    assert_eq!(
        render_with(t, messages, json!({})).unwrap(),
        "['thinking', 'role', 'reasoning', 'content', 'reasoning_content']:r1/r1\n\
         ['thinking', 'role', 'content', 'reasoning_content']:rc/t\n\
         ['role', 'content', 'reasoning_content']:None/\n"
    );
}

#[test]
fn context_matches_render_jinja_template() {
    let t = "{{ tools }}|{{ documents }}|{{ add_generation_prompt }}|{{ bos_token }}";
    assert_eq!(ok(t, json!({"bos_token": "<s>"})), "None|None|False|<s>");
    let tools = [json!({"type": "function"})];
    let out = ChatTemplate::new(t)
        .unwrap()
        .render(&[], Some(&tools), true, &Map::new())
        .unwrap();
    assert_eq!(out, "[{'type': 'function'}]|None|True|");
    let e = err("", json!({"messages": []}));
    assert_eq!(e.kind, TemplateErrorKind::InvalidInput);
    let e = render_with("", json!(["not an object"]), json!({})).unwrap_err();
    assert_eq!(e.kind, TemplateErrorKind::InvalidInput);
}

/// A template that would run for hours stops at its fuel budget, quickly, with an
/// error that says so.
#[test]
fn fuel_bounds_hostile_templates() {
    let hostile = [
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "{% set ns = namespace(s='xy') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        "{% for i in range(100) %}{{ 'x' * 10000000 }}{% endfor %}",
        "{% for i in range(100000) %}{{ i | string * 1000 }}{% endfor %}",
    ];
    // Fuel, not a clock, is what stops them: a wall-clock bound would fail on a loaded
    // machine, and a render that fuel did not stop would not return at all.
    for template in hostile {
        let e = match render_with(template, json!([]), json!({})) {
            Ok(text) => panic!("{template} rendered {} bytes", text.len()),
            Err(e) => e,
        };
        assert_eq!(e.kind, TemplateErrorKind::OutOfFuel, "{template}: {e}");
        assert!(e.to_string().contains("ran out of fuel"), "{e}");
    }
    // Unbounded recursion stops at the recursion limit instead.
    let e = err(
        "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
        json!({}),
    );
    assert_eq!(e.kind, TemplateErrorKind::Render);

    let mut template = ChatTemplate::new(hostile[0]).unwrap();
    template.set_fuel(Some(1000));
    let e = template.render(&[], None, false, &Map::new()).unwrap_err();
    assert_eq!(e.kind, TemplateErrorKind::OutOfFuel);
    assert!(e.message.contains("1000"), "{e}");
}

#[test]
fn fuel_used_is_reported() {
    let template = ChatTemplate::new("{% for m in messages %}{{ m.content }}{% endfor %}").unwrap();
    let messages = vec![json!({"role": "user", "content": "hi"}); 10];
    let (text, used) = template
        .render_counting_fuel(&messages, None, false, &Map::new())
        .unwrap();
    assert_eq!(text, "hi".repeat(10));
    assert!(used > 10 && used < 1000, "{used}");
}

#[test]
fn a_compiled_template_is_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<ChatTemplate>();
    let template = std::sync::Arc::new(ChatTemplate::new("{{ messages | length }}").unwrap());
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let template = template.clone();
            std::thread::spawn(move || {
                let messages = vec![json!({"role": "user", "content": "x"}); i];
                template
                    .render(&messages, None, false, &Map::new())
                    .unwrap()
            })
        })
        .collect();
    let out: Vec<String> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(out, ["0", "1", "2", "3"]);
}
