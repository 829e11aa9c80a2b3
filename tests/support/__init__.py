"""Helpers the tests share (the data they read is in `tests/fixtures/` and
`tests/model_cases.json`):

- `fixture_files`: reading, checking and merging the fixture data files into cases;
- `envelope_cases`, `xml_cases`, `dsml_kimi_cases`, `harmony_cases`: one dialect family's
  fixture cases and the helpers that write its markup;
- `chunking`: chunkings (including real tokenizers' boundaries), feeding a parser,
  rebuilding a result from deltas and the invariants every delta stream must satisfy;
- `serving_cases`, `serving_rebuild`, `sdk_accumulate`: scripted outputs for the serving
  tests, rebuilding a message from wire events, and the official SDKs' accumulators;
- `reference_encoders`: the vendors' own encoders for round-trip tests;
- `lark_check`: checking constraint grammars with llguidance;
- `json_values`: comparing parsed JSON with rendered values.
"""
