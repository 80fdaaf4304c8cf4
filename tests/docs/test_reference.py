"""The generated reference pages name everything they describe.

``docs/gen/reference.py`` writes the CLI, REST API, settings and Helm values pages from the
code at every build of the site; these tests hold each page to its source: every command and
group of the typer app, every operation of the OpenAPI document, every field of ``Settings``
with its environment variable, and every key of the chart's values schema.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "docs_reference", ROOT / "docs" / "gen" / "reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


REFERENCE = generator()


def headings(page: str) -> set[str]:
    return set(re.findall(r"^## `([^`]+)`$", page, flags=re.M))


def test_the_cli_page_has_every_command_and_group() -> None:
    from starburst.cli.main import COMMANDS, GROUPS

    page = REFERENCE.cli_page()
    paths = {path for path, _ in REFERENCE.cli_commands()}
    assert headings(page) == paths
    # the walk reaches the leaves of every group, not only the top level
    assert {f"starburst {name}" for name in (*COMMANDS, *GROUPS)} < paths
    assert "starburst admin tokens issue" in paths
    assert "`--gpus <int range>`" in page  # options appear with their help


def test_the_api_page_has_every_operation() -> None:
    document = REFERENCE.openapi_document()
    operations = {f"{m.upper()} {path}" for path, ops in document["paths"].items() for m in ops}
    assert len(operations) > 20
    assert headings(REFERENCE.api_page()) == operations


def test_the_settings_page_has_every_setting_with_its_variable() -> None:
    from starburst.settings import Settings

    page = REFERENCE.settings_page()
    rows = {
        (match.group(1), match.group(2))
        for match in re.finditer(r"^\| `(\w+)` \| `(STARBURST_\w+)` \|", page, flags=re.M)
    }
    assert rows == {(name, f"STARBURST_{name.upper()}") for name in Settings.model_fields}


def test_the_helm_page_has_every_value() -> None:
    schema = json.loads((ROOT / "helm" / "starburst" / "values.schema.json").read_text())
    keys = set(re.findall(r"^\| `([\w.]+)` \|", REFERENCE.helm_page(), flags=re.M))
    expected = {key for key, _ in REFERENCE.helm_keys(schema)}
    assert keys == expected
    assert {"image.repository", "cloud.skypilot.apiServer.token.value", "settings"} <= keys
    # the chart's settings are the Settings fields, which the settings page lists
    from starburst.settings import Settings

    assert set(schema["properties"]["settings"]["properties"]) <= set(Settings.model_fields)


def test_the_helm_comments_are_read_per_key() -> None:
    text = "# -- The image.\nimage:\n  # -- Its tag,\n  # continued.\n  tag: x\nport: 1\n"
    assert REFERENCE.values_comments(text) == {
        "image": "The image.",
        "image.tag": "Its tag, continued.",
    }
