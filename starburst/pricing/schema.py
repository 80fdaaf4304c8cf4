"""The price table's JSON Schema (draft-07), for tools that check a table before Starburst does.

The Helm chart embeds it in ``values.schema.json`` under ``priceTable``, so a bad entry fails
``helm install`` naming it (``priceTable.gpus.H100.aws.on_demand: Must be greater than or
equal to 0``) instead of the controller at start-up.

``parse_price_table`` (``table.py``) stays the authority; this schema says the same thing in
JSON Schema terms, and a test runs both over the same good and bad tables. Where they differ,
on purpose:

- the schema cannot see that two names are one: GPUs that are aliases or differ in case
  (``A100`` and ``A100-40GB``, ``T4`` and ``t4``), clouds that differ in case (``aws`` and
  ``AWS``). The loader refuses those; the chart's migration hook runs it
  (``python -m starburst.pricing check``) before an install or upgrade changes anything;
- the schema is stricter on the top level: only the keys the shipped table has (a misspelt
  ``max_gpus_per_node`` is an error, not silently ignored), and ``currency``/``unit`` only
  ``USD``/``gpu-hour``, the one currency and unit Starburst reads prices in.
"""

from __future__ import annotations

from typing import Any

_PRICE: dict[str, Any] = {
    "type": "number",
    "minimum": 0,
    "description": "US dollars per GPU-hour (finite, ≥ 0).",
}

#: One cloud's prices of one GPU type.
RATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["on_demand"],
    "properties": {
        "on_demand": _PRICE,
        "spot": {**_PRICE, "type": ["number", "null"], "description": "Omitted: no spot."},
    },
}

PRICE_TABLE_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Starburst price table",
    "type": "object",
    "additionalProperties": False,
    "required": ["taken", "gpus"],
    "properties": {
        "taken": {
            "type": "string",
            "pattern": "\\S",
            "description": "The date the prices were read (YYYY-MM-DD).",
        },
        "currency": {"type": "string", "enum": ["USD"]},
        "unit": {"type": "string", "enum": ["gpu-hour"]},
        "regions": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "The region each cloud's prices are quoted for.",
        },
        "max_gpus_per_node": {
            "type": "integer",
            "minimum": 1,
            "description": "The most GPUs one instance has (default 8).",
        },
        "gpus": {
            "type": "object",
            "minProperties": 1,
            "description": "GPU type → cloud → {on_demand, spot}.",
            "additionalProperties": {
                "type": "object",
                "minProperties": 1,
                "additionalProperties": RATE_SCHEMA,
            },
        },
    },
}
