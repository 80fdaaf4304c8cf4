"""JSON columns are read by ``adapters.db.engine.json_loads``: the same values as
``json.loads``, the common ones ({}, null, []) without the parser."""

from starburst.adapters.db.engine import json_loads


def test_common_json_values_are_read_fresh_from_bytes_and_text() -> None:
    for text in (b"{}", "{}"):
        first, second = json_loads(text), json_loads(text)
        assert first == {} and first is not second  # a caller may change its own copy
    assert json_loads(b"null") is None and json_loads("null") is None
    assert json_loads(b"[]") == [] and json_loads(b"[]") is not json_loads(b"[]")


def test_other_json_values_go_to_the_parser() -> None:
    assert json_loads(b'{"queue": "default", "after": [1, null]}') == {
        "queue": "default",
        "after": [1, None],
    }
    assert json_loads('["afterok:j1"]') == ["afterok:j1"]
    assert json_loads(b" {} ") == {}
