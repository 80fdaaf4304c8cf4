"""Bad values fail ``helm template`` (as they fail ``helm install``) with the field named.

The schema is strict (``additionalProperties: false`` everywhere), so a misspelt key is an
error, not a silently ignored value; combinations the schema cannot express fail in the
templates with a message naming the fields to set. Its ``settings`` and ``priceTable`` parts
are generated (``tests/helm/values_schema.py``); ``test_settings_schema.py`` proves they are
current and agree with Starburst.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helm.conftest import CHART, DB, run_helm

BAD: list[tuple[dict[str, Any], str]] = [
    ({"database": DB, "controler": {"replicas": 2}}, "controler"),
    ({"database": DB, "controller": {"replicas": "two"}}, "controller.replicas"),
    ({"database": DB, "controller": {"replicas": 0}}, "controller.replicas"),
    ({"database": DB, "settings": {"polcy": "compute"}}, "polcy"),
    ({"database": DB, "settings": {"policy": "cheapest"}}, "settings.policy"),
    ({"database": DB, "settings": {"budget": -1}}, "settings.budget"),
    ({"database": DB, "settings": {"cluster": "local"}}, "cluster"),
    ({"database": DB, "cloud": {"provider": "aws"}}, "cloud.provider"),
    ({"database": {"url": "mysql://db/starburst"}}, "database.url"),
    ({"database": DB, "bootstrapAdmin": {"token": "guessable"}}, "bootstrapAdmin.token"),
    ({"database": DB, "ingress": {"enabled": "yes"}}, "ingress.enabled"),
    ({"database": DB, "image": {"pullPolicy": "Sometimes"}}, "image.pullPolicy"),
    ({"database": DB, "port": 80}, "port"),
    ({}, "database.url"),
    ({"database": DB, "settings": {"onprem_rates": {"A100": -1}}}, "settings.onprem_rates.A100"),
    ({"database": DB, "settings": {"budget_alerts": [0.8, 0]}}, "settings.budget_alerts.1"),
    ({"database": DB, "settings": {"budget_webhook": "ftp://x"}}, "settings.budget_webhook"),
    ({"database": DB, "settings": {"max_job_cloud_price": 0}}, "settings.max_job_cloud_price"),
    ({"database": DB, "settings": {"queue_cap": "unlimited"}}, "settings.queue_cap"),
    ({"database": DB, "settings": {"skypilot_api_token": "sky_x"}}, "skypilot_api_token"),
    ({"database": DB, "settings": {"auth": False}}, "allow_insecure_no_auth"),
    ({"database": DB, "postgresql": {"uid": 0}}, "postgresql.uid"),
    (
        {"database": DB, "priceTable": {"taken": "d", "gpus": {"T4": {"aws": {"on_demand": -1}}}}},
        "priceTable.gpus.T4.aws.on_demand",
    ),
    (
        {"database": DB, "priceTable": {"taken": "d", "gpus": {"T4": {"aws": {"spto": 1}}}}},
        "priceTable.gpus.T4.aws",
    ),
    ({"database": DB, "priceTable": {"gpus": {"T4": {"aws": {"on_demand": 1}}}}}, "taken"),
    (
        {
            "database": DB,
            "priceTable": {
                "taken": "d",
                "max_gpu_per_node": 4,
                "gpus": {"T4": {"aws": {"on_demand": 1}}},
            },
        },
        "max_gpu_per_node",
    ),
    (
        {"database": DB, "cloud": {"skypilot": {"credentials": {"existingSecret": "c"}}}},
        "cloud.skypilot.credentials.files",
    ),
]


@pytest.mark.parametrize(("values", "field"), BAD, ids=[field for _, field in BAD])
def test_bad_values_fail_naming_the_field(
    values: dict[str, Any], field: str, helm: Path, tmp_path: Path
) -> None:
    done = run_helm(helm, "template", "sb", str(CHART), values=values, tmp=tmp_path)
    assert done.returncode != 0
    assert field in done.stderr, done.stderr


def _objects(node: Any, where: str = "") -> list[tuple[str, dict[str, Any]]]:
    if not isinstance(node, dict):
        return []
    found = [(where, node)] if node.get("type") == "object" and "properties" in node else []
    for key, child in node.get("properties", {}).items():
        found += _objects(child, f"{where}.{key}")
    return found


def test_every_object_of_the_schema_is_closed() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    for where, node in _objects(schema):
        assert node.get("additionalProperties") is False, where or "(root)"


def test_values_yaml_documents_every_line() -> None:
    """Every key has a comment line above it; requests/limits explain themselves."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    parents: list[tuple[int, str]] = []  # (indent, key) of the enclosing keys
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "- ")):
            continue
        indent = len(line) - len(line.lstrip())
        while parents and parents[-1][0] >= indent:
            parents.pop()
        key = stripped.split(":", 1)[0]
        inside_resources = bool(parents) and parents[-1][1] == "resources"
        if not inside_resources and not lines[number - 2].strip().startswith("#"):
            pytest.fail(f"values.yaml:{number} has no comment above it: {stripped}")
        parents.append((indent, key))
