"""The generated parts of the chart's ``values.schema.json``: ``settings`` and ``priceTable``.

``settings`` comes from ``starburst.settings.Settings`` (its pydantic JSON schema) and
``priceTable`` from ``starburst.pricing.schema``; the rest of the file is written by hand.
After changing either source, refresh the file::

    python -m tests.helm.values_schema

``tests/helm/test_values_schema.py`` fails until the committed file is what this module
generates, and runs Settings and the schema over the same values to prove they agree.

How Settings' schema (pydantic, draft 2020-12) becomes what the chart accepts (Helm 3 checks
draft-07):

- *chart-owned* fields (``CHART_OWNED``) are left out: the chart sets them itself or from its
  own values, so ``settings.cluster`` fails ``helm install`` naming the key;
- ``$ref`` to ``$defs`` is inlined; ``title``, ``default``, ``format`` and ``writeOnly`` go;
  ``anyOf [T, null]`` becomes ``type: [T, null]`` (the same values, clearer errors);
- *none-spelled* fields: Helm drops a null that overrides a default of ``values.yaml``, so a
  nullable field listed there (``queue_cap``) takes the string ``"none"`` for null, which the
  chart's ``starburst.settingsFile`` template turns back into null;
- ``REFINEMENTS``: bounds Settings enforces in field validators, which pydantic's schema does
  not show (a negative on-prem rate, a webhook that is not http(s));
- ``AUTH_RULE``: the pods listen on every address, so ``auth: false`` needs
  ``allow_insecure_no_auth: true`` (Settings' model validator, for the chart's api_host).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from starburst.pricing.schema import PRICE_TABLE_SCHEMA
from starburst.settings import Settings

CHART = Path(__file__).resolve().parents[2] / "helm" / "starburst"
SCHEMA_FILE = CHART / "values.schema.json"

#: Settings fields the chart sets, and where from; they are not accepted under ``settings:``.
CHART_OWNED: dict[str, str] = {
    "database_url": "database.url or database.existingSecret (an environment variable)",
    "state_dir": "/var/lib/starburst/state, made private in an emptyDir",
    "cluster": "always kubernetes",
    "kubeconfig": "in-cluster: the pods' ServiceAccount",
    "local_gpus": "nothing: the nodes of the cluster say their GPUs",
    "local_gpu_type": "nothing: the nodes of the cluster say their GPU types",
    "cloud": "cloud.provider",
    "price_table": "priceTable",
    "skypilot_api_server": "cloud.skypilot.apiServer.endpoint or its existingSecret",
    "skypilot_api_token": "cloud.skypilot.apiServer.token (a Secret, never the ConfigMap)",
    "skypilot_api_token_file": "the Secret of cloud.skypilot.apiServer.token, mounted",
    "api_host": "0.0.0.0 in the pods",
    "api_port": "port",
    "leader_election": "always lease",
    "leader_name": "the release's full name",
    "lease_namespace": "the release's namespace",
}

#: What field validators of Settings refuse, in JSON Schema terms (merged into the field).
REFINEMENTS: dict[str, dict[str, Any]] = {
    "onprem_rates": {"additionalProperties": {"type": "number", "minimum": 0}},
    "budget_alerts": {"items": {"type": "number", "exclusiveMinimum": 0}},
    "budget_webhook": {"pattern": "^https?://"},
    # empty, one uid or first-last (the bounds 1..MAX_UID stay the validator's)
    "local_job_uids": {"pattern": r"^\s*([0-9]+\s*(-\s*[0-9]+)?)?\s*$"},
}

AUTH_RULE: dict[str, Any] = {
    "if": {"properties": {"auth": {"const": False}}, "required": ["auth"]},
    "then": {
        "properties": {"allow_insecure_no_auth": {"const": True}},
        "required": ["allow_insecure_no_auth"],
    },
}

NONE = "none"
_DROPPED = ("title", "default", "format", "writeOnly")


def chart_settings_defaults() -> dict[str, Any]:
    """The ``settings:`` block of the chart's ``values.yaml``."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    return dict(values.get("settings") or {})


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return {k: _inline(v, defs) for k, v in node.items() if k not in _DROPPED}


def _fold_null(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf [T, {type: null}]`` → ``T`` with ``null`` added to its type (and enum)."""
    options = node.get("anyOf")
    if not options or {"type": "null"} not in options or len(options) != 2:
        return node
    (other,) = [o for o in options if o != {"type": "null"}]
    folded = {**{k: v for k, v in node.items() if k != "anyOf"}, **other}
    folded["type"] = [other["type"], "null"]
    if "enum" in folded:
        folded["enum"] = [*folded["enum"], None]
    return folded


def _types(node: dict[str, Any]) -> list[str]:
    kind = node.get("type", [])
    return list(kind) if isinstance(kind, list) else [kind]


def settings_schema() -> dict[str, Any]:
    """The ``settings`` property of values.schema.json, from Settings."""
    source = Settings.model_json_schema()
    defs = source.get("$defs", {})
    in_values = chart_settings_defaults()
    properties: dict[str, Any] = {}
    for name, raw in source["properties"].items():
        if name in CHART_OWNED:
            continue
        prop = _fold_null(_inline(raw, defs))
        for key, extra in REFINEMENTS.get(name, {}).items():
            prop[key] = {**prop[key], **extra} if isinstance(prop.get(key), dict) else extra
        if "null" in _types(prop) and name in in_values and "string" not in _types(prop):
            prop["type"] = [*_types(prop), "string"]
            prop["pattern"] = f"^{NONE}$"
            note = f'"{NONE}": no value (null; Helm drops nulls that override a default)'
            prop["description"] = f"{prop['description']} {note}" if "description" in prop else note
        properties[name] = dict(sorted(prop.items()))
    owned = "; ".join(f"{key}: {where}" for key, where in CHART_OWNED.items())
    return {
        "type": "object",
        "additionalProperties": False,
        "description": "Keys of starburst.settings.Settings (generated from it by "
        f"tests/helm/values_schema.py). Set by the chart instead: {owned}.",
        "properties": properties,
        **copy.deepcopy(AUTH_RULE),
    }


def none_spelled() -> list[str]:
    """Settings keys that take ``"none"`` for null in the chart's values."""
    props = settings_schema()["properties"]
    return sorted(k for k, p in props.items() if p.get("pattern") == f"^{NONE}$")


def price_table_schema() -> dict[str, Any]:
    """The ``priceTable`` property: the price table's schema, or ``{}`` (the shipped table)."""
    table = {k: v for k, v in PRICE_TABLE_SCHEMA.items() if k not in ("$schema", "title")}
    required = table.pop("required")
    return {
        **table,
        "description": "A price table replacing the shipped one whole (schema: "
        "starburst/pricing/schema.py; `python -m starburst.pricing show` prints the shipped "
        "table); {}: the shipped table.",
        "if": {"minProperties": 1},
        "then": {"required": required},
    }


def generated() -> dict[str, Any]:
    """values.schema.json with its generated parts regenerated (the rest as committed)."""
    schema = json.loads(SCHEMA_FILE.read_text())
    schema["properties"]["settings"] = settings_schema()
    schema["properties"]["priceTable"] = price_table_schema()
    return schema


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    SCHEMA_FILE.write_text(render(generated()))
    print(f"{SCHEMA_FILE} regenerated from starburst.settings and starburst.pricing.schema")
