"""The chart's ``priceTable``: its schema agrees with the loader, and the hook runs the loader.

- ``starburst.pricing.schema`` (embedded in ``values.schema.json``) and ``parse_price_table``
  judge the same tables alike, except where the schema module says they differ on purpose:
  names that are aliases or differ in case (the loader refuses them, the schema cannot see
  them) and unknown top-level keys, currency and unit (the schema refuses them);
- a table Helm renders (after its YAML round trip: an unquoted date, integers) is one the
  loader reads; the hook's ``python -m starburst.pricing check`` refuses what the schema let
  through, naming the entry, with a one-line message and exit 1;
- ``{}`` is the shipped table, and ``python -m starburst.pricing show`` prints it.
"""

from __future__ import annotations

import copy
import datetime
import subprocess
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from starburst.pricing import PriceTableError, parse_price_table
from starburst.pricing.schema import PRICE_TABLE_SCHEMA
from tests.helm.conftest import DB, Render, named

SHIPPED_TEXT = resources.files("starburst.pricing").joinpath("prices.yaml").read_text()
SHIPPED: dict[str, Any] = yaml.safe_load(SHIPPED_TEXT)

Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    def mutate(table: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = table
        for key in parents:
            node = node[key]
        node[last] = value

    return mutate


def _drop(path: str) -> Mutation:
    def mutate(table: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = table
        for key in parents:
            node = node[key]
        del node[last]

    return mutate


#: (name, mutation of the shipped table) judged alike by the schema and the loader.
ALIKE: list[tuple[str, Mutation]] = [
    ("as shipped", lambda t: None),
    ("negative on-demand", _set("gpus.H100.aws.on_demand", -1)),
    ("string price", _set("gpus.H100.aws.on_demand", "6.88")),
    ("boolean price", _set("gpus.H100.aws.spot", True)),
    ("no spot", _drop("gpus.H100.aws.spot")),
    ("null spot", _set("gpus.H100.aws.spot", None)),
    ("negative spot", _set("gpus.H100.aws.spot", -0.1)),
    ("no on-demand", _drop("gpus.H100.aws.on_demand")),
    ("misspelt rate key", _set("gpus.H100.aws.sopt", 1.0)),
    ("rate not a mapping", _set("gpus.H100.aws", 6.88)),
    ("GPU with no cloud", _set("gpus.H100", {})),
    ("GPU not a mapping", _set("gpus.H100", [1])),
    ("no GPUs", _set("gpus", {})),
    ("gpus a list", _set("gpus", ["H100"])),
    ("no gpus", _drop("gpus")),
    ("no taken", _drop("taken")),
    ("blank taken", _set("taken", "  ")),
    ("taken a number", _set("taken", 20250615)),
    ("region a number", _set("regions.aws", 1)),
    ("regions a string", _set("regions", "us")),
    ("max per node 16", _set("max_gpus_per_node", 16)),
    ("max per node 0", _set("max_gpus_per_node", 0)),
    ("max per node a string", _set("max_gpus_per_node", "8")),
    ("max per node true", _set("max_gpus_per_node", True)),
    ("max per node 1.5", _set("max_gpus_per_node", 1.5)),
    ("an unknown cloud", _set("gpus.H100.oracle", {"on_demand": 9.0})),
]

#: Refused by the loader only: the schema cannot see that two names are one.
LOADER_ONLY: list[tuple[str, Mutation, str]] = [
    ("alias twice", _set("gpus.A100-40GB", {"aws": {"on_demand": 4.0}}), "A100 is listed twice"),
    ("GPU case twice", _set("gpus.t4", {"aws": {"on_demand": 0.5}}), "T4 is listed twice"),
    ("cloud case twice", _set("gpus.T4.AWS", {"on_demand": 0.5}), "T4 on aws is listed twice"),
]

#: Refused by the schema only: stricter on the top level than the loader.
SCHEMA_ONLY: list[tuple[str, Mutation]] = [
    ("misspelt top-level key", _set("max_gpu_per_node", 4)),
    ("another currency", _set("currency", "EUR")),
    ("another unit", _set("unit", "gpu-second")),
]


def schema_accepts(table: Any) -> bool:
    return jsonschema.Draft7Validator(PRICE_TABLE_SCHEMA).is_valid(table)


def loader_accepts(table: Any) -> bool:
    try:
        parse_price_table(table)
    except PriceTableError:
        return False
    return True


def mutated(mutation: Mutation) -> dict[str, Any]:
    table = copy.deepcopy(SHIPPED)
    mutation(table)
    return table


@pytest.mark.parametrize(("name", "mutation"), ALIKE, ids=[n for n, _ in ALIKE])
def test_schema_and_loader_judge_a_table_alike(name: str, mutation: Mutation) -> None:
    table = mutated(mutation)
    assert schema_accepts(table) == loader_accepts(table), name


@pytest.mark.parametrize(
    ("name", "mutation", "message"), LOADER_ONLY, ids=[n for n, *_ in LOADER_ONLY]
)
def test_what_only_the_loader_sees(name: str, mutation: Mutation, message: str) -> None:
    table = mutated(mutation)
    assert schema_accepts(table)
    with pytest.raises(PriceTableError, match=message):
        parse_price_table(table)


@pytest.mark.parametrize(("name", "mutation"), SCHEMA_ONLY, ids=[n for n, _ in SCHEMA_ONLY])
def test_where_the_schema_is_stricter(name: str, mutation: Mutation) -> None:
    table = mutated(mutation)
    assert loader_accepts(table) and not schema_accepts(table)


def check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "starburst.pricing", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_hook_check_refuses_what_the_schema_let_through(render: Render, tmp_path: Path) -> None:
    """An alias twice passes ``helm template``; the hook's command refuses the rendered file."""
    table = mutated(LOADER_ONLY[0][1])
    config = named(render({"database": DB, "priceTable": table}), "ConfigMap", "sb-starburst-hook")
    path = tmp_path / "prices.yaml"
    path.write_text(config["data"]["prices.yaml"])
    done = check(path)
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert "A100 is listed twice" in done.stderr


def test_a_table_helm_rendered_is_one_the_loader_reads(render: Render, tmp_path: Path) -> None:
    """Helm's YAML round trip (an unquoted date, whole numbers) keeps the table readable."""
    table = {
        "taken": datetime.date(2026, 1, 5),  # written unquoted in the values file
        "max_gpus_per_node": 4,
        "gpus": {"T4": {"aws": {"on_demand": 1, "spot": 0.25}}},
    }
    config = named(render({"database": DB, "priceTable": table}), "ConfigMap", "sb-starburst")
    path = tmp_path / "prices.yaml"
    path.write_text(config["data"]["prices.yaml"])
    done = check(path)
    assert done.returncode == 0, done.stderr
    assert "1 GPU types (T4), taken 2026-01-05" in done.stdout
    loaded = parse_price_table(yaml.safe_load(path.read_text()))
    assert loaded.max_gpus_per_node == 4 and loaded.price("T4", 1, spot=True).price_per_hour == 0.25


def test_no_table_means_the_shipped_one_which_show_prints(render: Render) -> None:
    config = named(render({"database": DB}), "ConfigMap", "sb-starburst")["data"]
    assert "prices.yaml" not in config
    assert "price_table" not in yaml.safe_load(config["settings.yaml"])
    shown = subprocess.run(
        [sys.executable, "-m", "starburst.pricing", "show"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert shown.stdout == SHIPPED_TEXT
    assert schema_accepts(yaml.safe_load(shown.stdout))
