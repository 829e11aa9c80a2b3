//! A parser is used either for streaming or for one complete parse: `parse_complete`
//! after `stream_chunk` would return only the rest of the response, so it is refused.

use replyparse::{Error, ParserConfig, ResponseParser, ToolSpec};

fn parser(response_parser: Option<&str>) -> ResponseParser {
    ResponseParser::new(&ParserConfig {
        tool_parser: response_parser.is_none().then(|| "qwen".into()),
        response_parser: response_parser.map(Into::into),
        tools: Some(vec![ToolSpec {
            name: "f".into(),
            parameters: None,
        }]),
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn parse_complete_after_streaming_is_refused() {
    for response_parser in [None, Some("gpt-oss")] {
        let mut p = parser(response_parser);
        p.stream_chunk("Hello, ", None, false).unwrap();
        let e = p.parse_complete("world", None).unwrap_err();
        assert_eq!(e, Error::AlreadyStreamed);
        assert!(e.to_string().contains("create a new one"), "{e}");
        // The stream itself carries on.
        p.stream_chunk("world", None, true).unwrap();
        // After the final chunk, the finished parser says so, as before.
        assert_eq!(
            p.parse_complete("x", None).unwrap_err(),
            Error::AlreadyFinished
        );
    }
}

#[test]
fn a_fresh_parser_parses_complete_once() {
    let mut p = parser(None);
    let m = p.parse_complete("hi", None).unwrap();
    assert_eq!(m.content.as_deref(), Some("hi"));
    assert_eq!(
        p.parse_complete("hi", None).unwrap_err(),
        Error::AlreadyFinished
    );
}
