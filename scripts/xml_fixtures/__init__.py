"""The fixture files of the generalised XML-like dialects, as data (written by
`scripts/make_xml_fixtures.py`):

- `table.py`: one row per dialect (tags, markup writer, reasoning, the cases it adds or
  leaves out, the file's description);
- `markup.py`: how each markup writes one function call;
- `matrix.py`: the behaviour-matrix cases every dialect's file holds;
- `cases_qwen_xml.py`, `cases_glm_xml.py`, `cases_invoke_xml.py`, `cases_kimi_k3.py`:
  the cases only some dialects of each markup family have (peers' examples, forms only
  that dialect writes);
- `model.py`: the shared tool set, `Dialect` and the expected-arguments helpers.
"""
