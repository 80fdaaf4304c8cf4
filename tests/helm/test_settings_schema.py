"""The chart's ``settings`` schema is Settings': current, complete, and agreeing value by value.

- the committed ``values.schema.json`` is what ``tests/helm/values_schema.py`` generates from
  ``starburst.settings.Settings`` and ``starburst.pricing.schema`` today (a new or changed
  field fails here until the file is regenerated);
- every Settings field is either accepted under ``settings:`` or set by the chart
  (``CHART_OWNED``), never both, never neither;
- *agreement*: for every field, a spread of values of every JSON type (bounds, enum members,
  bad URLs, negative rates...) is run through the committed schema and through Settings
  (with the keys the chart sets). A value the schema accepts is one Settings accepts (else
  ``helm install`` would pass and the hook fail); a value Settings accepts is one the schema
  accepts, unless it is of a JSON type the field does not declare (pydantic's lax coercions:
  ``1`` for ``true``, ``"5"`` for ``5``), which the chart refuses on purpose;
- a none-spelled field (``queue_cap: none``) reaches the settings file as null.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import ValidationError

from starburst.settings import Settings
from tests.helm.conftest import CASES, CHART, Render, named
from tests.helm.values_schema import (
    CHART_OWNED,
    NONE,
    SCHEMA_FILE,
    chart_settings_defaults,
    generated,
    none_spelled,
    render,
)

#: What the chart always sets (``starburst.settingsFile``), for Settings to judge a value in.
CHART_FIXED: dict[str, Any] = {
    "cluster": "kubernetes",
    "cloud": "none",
    "api_host": "0.0.0.0",
    "api_port": 8080,
    "leader_election": "lease",
    "leader_name": "sb-starburst",
    "lease_namespace": "starburst",
    "state_dir": "/var/lib/starburst/state",
    "database_url": "postgresql://starburst:pw@db:5432/starburst",
}

CANDIDATES: list[Any] = [
    True,
    False,
    0,
    1,
    2,
    -1,
    2.0,
    0.5,
    1.5,
    -0.5,
    70000,
    "",
    "x",
    NONE,
    "5",
    "http://hooks.example.com/a",
    "ftp://hooks.example.com/a",
    "/var/lib/starburst/model.joblib",
    [],
    [0.8, 1.0],
    [0],
    [-0.5],
    ["x"],
    {},
    {"A100": 1.1, "*": 0.6},
    {"A100": -1},
    {"A100": "x"},
    None,
]


def committed() -> dict[str, Any]:
    return dict(json.loads(SCHEMA_FILE.read_text()))


def test_the_generated_parts_are_current() -> None:
    assert SCHEMA_FILE.read_text() == render(generated()), (
        "values.schema.json is behind starburst.settings / starburst.pricing.schema: run "
        "python -m tests.helm.values_schema"
    )


def test_every_setting_is_accepted_or_set_by_the_chart() -> None:
    accepted = set(committed()["properties"]["settings"]["properties"])
    owned = set(CHART_OWNED)
    assert not accepted & owned
    assert accepted | owned == set(Settings.model_fields), (
        "missing from the chart's settings schema: "
        f"{sorted(set(Settings.model_fields) - accepted - owned)}"
    )


def json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}[type(value)]


PYDANTIC_SCHEMA = Settings.model_json_schema()


def declared_kinds(field: str) -> set[str]:
    """The JSON types pydantic declares for ``field`` (``integer`` counts as a number)."""
    prop = PYDANTIC_SCHEMA["properties"][field]
    options = prop.get("anyOf", [prop])
    kinds = {o["type"] for o in options if "type" in o} or {"string"}  # $ref: an enum of str
    return kinds | ({"integer"} if "number" in kinds else set())


def declared_enum(field: str) -> list[Any]:
    """The members pydantic declares for an enum field (a Literal, or an Enum's $ref)."""
    prop = PYDANTIC_SCHEMA["properties"][field]
    if "$ref" in prop:
        prop = PYDANTIC_SCHEMA["$defs"][prop["$ref"].rsplit("/", 1)[-1]]
    return list(prop.get("enum", []))


@pytest.fixture
def clean_env() -> Iterator[None]:
    saved = {k: v for k, v in os.environ.items() if k.startswith("STARBURST_")}
    for name in saved:
        del os.environ[name]
    try:
        yield
    finally:
        os.environ.update(saved)


NONE_SPELLED = none_spelled()


def settings_accept(values: dict[str, Any]) -> bool:
    in_file = {k: (None if k in NONE_SPELLED and v == NONE else v) for k, v in values.items()}
    try:
        Settings(**{**CHART_FIXED, **in_file})
    except ValidationError:
        return False
    return True


SETTINGS_SCHEMA = committed()["properties"]["settings"]


@pytest.mark.usefixtures("clean_env")
@pytest.mark.parametrize("field", sorted(SETTINGS_SCHEMA["properties"]))
def test_schema_and_settings_agree_on_every_value(field: str) -> None:
    validator = jsonschema.Draft7Validator(SETTINGS_SCHEMA)
    base = chart_settings_defaults()
    prop = SETTINGS_SCHEMA["properties"][field]
    disagreements = []
    for value in [*CANDIDATES, *prop.get("enum", []), *declared_enum(field)]:
        values = {**base, field: value}
        schema_ok, settings_ok = validator.is_valid(values), settings_accept(values)
        coercion = json_kind(value) not in declared_kinds(field)
        if schema_ok != settings_ok and not (settings_ok and coercion):
            disagreements.append(f"{value!r}: schema {schema_ok}, Settings {settings_ok}")
    assert disagreements == [], f"{field}: {disagreements}"


def test_every_chart_owned_key_is_refused_under_settings() -> None:
    validator = jsonschema.Draft7Validator(SETTINGS_SCHEMA)
    for key in CHART_OWNED:
        errors = list(validator.iter_errors({key: "x"}))
        assert any(key in e.message for e in errors), key


def test_auth_off_needs_the_insecure_acknowledgement() -> None:
    validator = jsonschema.Draft7Validator(SETTINGS_SCHEMA)
    assert not validator.is_valid({"auth": False})
    assert validator.is_valid({"auth": False, "allow_insecure_no_auth": True})
    assert not settings_accept({"auth": False})


@pytest.mark.parametrize("field", none_spelled())
def test_none_spelled_settings_reach_the_file_as_null(field: str, render: Render) -> None:
    assert field in chart_settings_defaults()
    values = {**CASES["defaults"], "settings": {field: NONE}}
    config = named(render(values), "ConfigMap", "sb-starburst")["data"]["settings.yaml"]
    loaded = yaml.safe_load(config)
    assert field in loaded and loaded[field] is None


def test_the_chart_documents_where_owned_settings_come_from() -> None:
    comment = (CHART / "values.yaml").read_text().split("\nsettings:")[0].rsplit("\n\n", 1)[-1]
    for key in CHART_OWNED:
        stem = key.split("_api")[0] if key.startswith("skypilot") else key
        assert stem in comment, key


def test_the_shipped_examples_use_only_real_settings() -> None:
    validator = jsonschema.Draft7Validator(SETTINGS_SCHEMA)
    for path in sorted(Path(CHART.parents[1] / "deploy").glob("values-*.yaml")):
        settings = yaml.safe_load(path.read_text()).get("settings", {})
        assert validator.is_valid(settings), path.name
