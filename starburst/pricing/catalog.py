"""SkyPilot's price catalog, read from disk when SkyPilot has already downloaded it.

SkyPilot keeps one CSV per cloud under ``~/.sky/catalogs/<schema version>/<cloud>/vms.csv``
(columns ``InstanceType, AcceleratorName, AcceleratorCount, Price, SpotPrice, Region, ...``)
and downloads it on first use. Starburst never triggers that download and never imports
``sky`` here: it reads the files if they exist, else the price table answers alone.

Terms: a catalog *row* is one instance type in one zone or region; the price of ``count`` GPUs
on a cloud is the cheapest row whose accelerator name and count match exactly. On GCP, GPUs
are attached to a VM and their rows carry no instance type: the price is the GPUs' own price
(the host VM is billed on top), so GCP catalog prices understate the total slightly.

Invariants: the files are read once per ``SkyPilotCatalog`` (lazily, on the first lookup);
unreadable or malformed rows are skipped, never fatal; a missing catalog gives ``None``.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

_CLOUDS = ("aws", "gcp", "azure")


def default_catalog_dir() -> Path | None:
    """The newest versioned catalog directory SkyPilot left on this machine, if any."""
    root = Path.home() / ".sky" / "catalogs"
    if not root.is_dir():
        return None
    versions = sorted(
        (p for p in root.iterdir() if p.is_dir() and p.name[1:].isdigit()),
        key=lambda p: int(p.name[1:]),
    )
    return versions[-1] if versions else None


class SkyPilotCatalog:
    """Lowest price per (GPU, count, cloud, spot) found in SkyPilot's ``vms.csv`` files."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._prices: dict[tuple[str, int, str, bool], float] | None = None

    @classmethod
    def discover(cls) -> SkyPilotCatalog | None:
        directory = default_catalog_dir()
        return cls(directory) if directory is not None else None

    def price(self, gpu: str, count: int, cloud: str, spot: bool) -> float | None:
        if self._prices is None:
            self._prices = self._read()
        return self._prices.get((gpu.upper(), count, cloud.lower(), spot))

    def _read(self) -> dict[tuple[str, int, str, bool], float]:
        prices: dict[tuple[str, int, str, bool], float] = {}
        if self.directory is None:
            return prices
        for cloud in _CLOUDS:
            path = self.directory / cloud / "vms.csv"
            if not path.is_file():
                continue
            with path.open(newline="", encoding="utf-8") as handle:
                for row in csv.DictReader(handle):
                    _add_row(prices, cloud, row)
        return prices


def _add_row(
    prices: dict[tuple[str, int, str, bool], float], cloud: str, row: dict[str, str]
) -> None:
    name = (row.get("AcceleratorName") or "").strip().upper()
    count = _number(row.get("AcceleratorCount"))
    if not name or count is None or count < 1 or count != int(count):
        return
    for spot, column in ((False, "Price"), (True, "SpotPrice")):
        value = _number(row.get(column))
        if value is None or value < 0:
            continue
        key = (name, int(count), cloud, spot)
        if key not in prices or value < prices[key]:
            prices[key] = value


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None
