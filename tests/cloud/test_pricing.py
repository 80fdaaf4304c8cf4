"""The price table: shipped defaults, validation, cheapest-first lookups, catalog preference."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from starburst.core.errors import ConfigError
from starburst.pricing import (
    PriceTableError,
    SkyPilotCatalog,
    default_price_table,
    gpus_in,
    load_price_table,
    node_shape,
    parse_price_table,
    price,
)

REQUIRED = ["H100", "A100-80GB", "A100", "L4", "A10G", "V100", "T4"]


def test_defaults_cover_the_common_gpus_with_a_date() -> None:
    table = load_price_table()
    assert table.taken  # the date the prices were read is part of the table
    for gpu in REQUIRED:
        assert table.options(gpu, 1), gpu
        assert table.options(gpu, 1, spot=True), gpu
    for cloud in ("aws", "gcp", "azure"):
        assert table.options("A100", 1, cloud=cloud)
        assert table.options("T4", 1, cloud=cloud, spot=True)


def test_options_are_cheapest_first_and_scale_with_count() -> None:
    table = load_price_table()
    options = table.options("a100-80gb", 8)
    prices = [o.price_per_hour for o in options]
    assert prices == sorted(prices) and len(options) == 3
    one = {o.cloud: o.price_per_hour for o in table.options("A100-80GB", 1)}
    for option in options:
        assert option.price_per_hour == pytest.approx(8 * one[option.cloud])
        assert option.accelerators == "A100-80GB:8"
        assert option.source.startswith("table ")


def test_default_lookup_prefers_a_skypilot_catalog_left_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = tmp_path / ".sky" / "catalogs" / "v8" / "gcp"
    catalog.mkdir(parents=True)
    (catalog / "vms.csv").write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\n"
        ",A100-80GB,8,9.99,,us-central1\n"
    )
    monkeypatch.setenv("HOME", str(tmp_path))
    default_price_table.cache_clear()
    try:
        best = price("A100-80GB", 8)
        assert (best.cloud, best.price_per_hour, best.source) == ("gcp", 9.99, "skypilot-catalog")
        assert price("A100-80GB", 8, spot=True).source.startswith("table")
        monkeypatch.setenv("HOME", str(tmp_path / "nowhere"))
        default_price_table.cache_clear()
        assert price("A100-80GB", 8) == load_price_table().price("A100-80GB", 8)
    finally:
        default_price_table.cache_clear()


def test_spot_is_cheaper_and_labelled() -> None:
    table = load_price_table()
    spot, on_demand = table.price("V100", 1, "aws", spot=True), table.price("V100", 1, "aws")
    assert spot.price_per_hour < on_demand.price_per_hour
    assert spot.where.endswith("(spot)") and not on_demand.where.endswith("(spot)")


def test_aliases_and_unknowns() -> None:
    table = load_price_table()
    assert table.price("A100-40GB", 2) == table.price("A100", 2)
    assert table.options("A10G", 1, cloud="azure") == []
    with pytest.raises(ConfigError, match="no on-demand price for B200"):
        table.price("B200", 1)
    with pytest.raises(ConfigError):
        table.options("T4", 0)


@pytest.mark.parametrize(
    ("gpus", "pod_gpus", "shape"),
    [
        (8, 1, (1, 8)),  # one instance holds it
        (3, 1, (1, 3)),
        (16, 1, (2, 8)),
        (24, 1, (3, 8)),
        (12, 1, (3, 4)),  # 12 GPUs exactly, rather than 16 rented
        (12, 6, (2, 8)),  # two 6-GPU pods: each needs an 8-GPU node
        (24, 6, (4, 8)),
        (16, 8, (2, 8)),
        (24, 12, None),  # a 12-GPU pod fits no 8-GPU instance
    ],
)
def test_jobs_larger_than_an_instance_rent_several_nodes(
    gpus: int, pod_gpus: int, shape: tuple[int, int] | None
) -> None:
    assert node_shape(gpus, 8, pod_gpus) == shape


def test_a_multi_node_option_prices_every_node_and_says_its_shape() -> None:
    table = load_price_table()
    one = {o.cloud: o.price_per_hour for o in table.options("H100", 1)}
    options = table.options("H100", 16)
    assert len(options) == 3
    for option in options:
        assert (option.nodes, option.per_node, option.count) == (2, 8, 16)
        assert option.accelerators == "H100:8"  # SkyPilot's per-node spelling
        assert option.shape == "2xH100:8" and gpus_in(option.shape) == 16
        assert option.price_per_hour == pytest.approx(16 * one[option.cloud])
    pods = table.options("H100", 12, pod_gpus=6)
    assert pods[0].shape == "2xH100:8" and pods[0].count == 16  # the idle GPUs are paid for
    assert table.options("H100", 24, pod_gpus=12) == []
    assert gpus_in("A100-80GB:4") == 4 and gpus_in("gpu") == 1


def test_an_admin_table_sets_the_largest_instance(tmp_path: Path) -> None:
    data = {
        "taken": "2025-01-01",
        "max_gpus_per_node": 16,
        "gpus": {"A100": {"gcp": {"on_demand": 3.0}}},
    }
    table = load_price_table(_write(tmp_path, data))
    (option,) = table.options("A100", 16)
    assert (option.nodes, option.shape) == (1, "A100:16")
    (option,) = table.options("A100", 32)
    assert option.shape == "2xA100:16" and option.price_per_hour == pytest.approx(96.0)


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "mapping"),
        ({"gpus": {"T4": {"aws": {"on_demand": 1}}}}, "taken"),
        ({"taken": "2025-01-01", "gpus": {}}, "at least one GPU"),
        ({"taken": "2025-01-01", "gpus": {"T4": {"aws": {"spot": 1}}}}, "on_demand"),
        ({"taken": "2025-01-01", "gpus": {"T4": {"aws": {"on_demand": -1}}}}, "≥ 0"),
        ({"taken": "2025-01-01", "gpus": {"T4": {"aws": {"on_demand": "x"}}}}, "number"),
        ({"taken": "2025-01-01", "gpus": {"T4": {"aws": {"on_demand": 1, "sopt": 1}}}}, "unknown"),
        (
            {
                "taken": "d",
                "gpus": {"T4": {"aws": {"on_demand": 1}}, "t4": {"aws": {"on_demand": 1}}},
            },
            "twice",
        ),
        (
            {"taken": "d", "max_gpus_per_node": 0, "gpus": {"T4": {"aws": {"on_demand": 1}}}},
            "max_gpus_per_node",
        ),
        (
            {"taken": "d", "max_gpus_per_node": "8", "gpus": {"T4": {"aws": {"on_demand": 1}}}},
            "max_gpus_per_node",
        ),
    ],
)
def test_invalid_tables_are_refused_whole(tmp_path: Path, data: object, message: str) -> None:
    with pytest.raises(PriceTableError, match=message):
        load_price_table(_write(tmp_path, data))


def test_admin_table_replaces_defaults(tmp_path: Path) -> None:
    path = _write(tmp_path, {"taken": "2026-01-02", "gpus": {"T4": {"gcp": {"on_demand": 0.1}}}})
    table = load_price_table(path)
    option = table.price("T4", 4)
    assert (option.cloud, option.price_per_hour, option.source) == ("gcp", 0.4, "table 2026-01-02")
    assert table.options("T4", 1, spot=True) == []
    with pytest.raises(PriceTableError, match="cannot read"):
        load_price_table(tmp_path / "missing.yaml")


def test_skypilot_catalog_price_wins_when_on_disk(tmp_path: Path) -> None:
    aws = tmp_path / "aws"
    aws.mkdir()
    (aws / "vms.csv").write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,"
        "Region,AvailabilityZone\n"
        "p4d.24xlarge,A100,8,96,1152,32.7726,9.5,us-east-1,us-east-1a\n"
        "p4d.24xlarge,A100,8,96,1152,32.7726,9.1,us-east-1,us-east-1b\n"
        "m5.large,,,2,8,0.096,0.03,us-east-1,us-east-1a\n"
        "broken,A100,x,1,1,1,1,us-east-1,us-east-1a\n"
    )
    table = load_price_table().with_catalog(SkyPilotCatalog(tmp_path))
    aws_a100 = table.price("A100", 8, "aws")
    assert (aws_a100.price_per_hour, aws_a100.source) == (32.7726, "skypilot-catalog")
    assert table.price("A100", 8, "aws", spot=True).price_per_hour == 9.1
    # the catalog has no GCP file and no A100:1 row: the table answers those
    assert table.price("A100", 1, "aws").source.startswith("table")
    assert table.price("A100", 8, "gcp").source.startswith("table")
    assert SkyPilotCatalog(None).price("A100", 8, "aws", False) is None


def test_parse_accepts_the_shipped_file_verbatim() -> None:
    from importlib import resources

    text = resources.files("starburst.pricing").joinpath("prices.yaml").read_text("utf-8")
    table = parse_price_table(yaml.safe_load(text))
    assert table.regions["aws"] == "us-east-1"
    assert table.price("H100", 8, "aws").where == "aws:us-east-1"
