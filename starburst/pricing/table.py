"""The price table: what a GPU-hour costs on each cloud, on-demand and spot.

Terms:
- *price table*: Starburst's own YAML file (``prices.yaml`` shipped with the package, or an
  admin's copy) of US dollars per GPU-hour, per GPU type and cloud, with the date the prices
  were ``taken``. It exists because SkyPilot downloads its catalogs at run time, and a quote
  must work offline and before any cloud account is configured.
- *option*: one way to run ``count`` GPUs of a type: a cloud, on-demand or spot, and the
  hourly price of all ``count`` GPUs. ``source`` says where the price came from
  (``table 2025-06-15`` or ``skypilot-catalog``).
- *catalog*: SkyPilot's price catalog, when it is already on disk (see ``catalog.py``). Its
  price wins over the table's for the same GPU, count, cloud and spot-ness.

Invariants: options are sorted cheapest first, ties broken by cloud name then on-demand before
spot, so the same table always gives the same order; GPU names match case-insensitively and
``A100-40GB`` is ``A100``; a table that fails validation is refused whole (``PriceTableError``)
rather than half-loaded; prices are finite and ≥ 0.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import yaml

from starburst.core.errors import ConfigError

KNOWN_CLOUDS = frozenset({"aws", "gcp", "azure"})
_ALIASES = {"A100-40GB": "A100", "A100-40G": "A100", "A100-80G": "A100-80GB", "H100-80GB": "H100"}


class PriceTableError(ConfigError):
    """The price table file cannot be used; the message names the entry at fault."""


@dataclass(frozen=True, slots=True)
class PriceOption:
    """``count`` GPUs of ``gpu`` on ``cloud`` (spot or not) for ``price_per_hour`` in total."""

    gpu: str
    count: int
    cloud: str
    spot: bool
    price_per_hour: float
    region: str | None
    source: str

    @property
    def where(self) -> str:
        """``aws:us-east-1`` (or ``aws`` when no region is known), ``(spot)`` appended."""
        place = f"{self.cloud}:{self.region}" if self.region else self.cloud
        return f"{place} (spot)" if self.spot else place

    @property
    def accelerators(self) -> str:
        """SkyPilot's accelerator spelling: ``A100:8``."""
        return f"{self.gpu}:{self.count}"


class CatalogPrices(Protocol):
    """A second source of prices, consulted first (SkyPilot's offline catalog)."""

    def price(self, gpu: str, count: int, cloud: str, spot: bool) -> float | None: ...


def canonical_gpu(name: str) -> str:
    """The table's spelling of a GPU name (``a100-80gb`` → ``A100-80GB``)."""
    upper = name.strip().upper()
    return _ALIASES.get(upper, upper)


@dataclass(frozen=True, slots=True)
class _Rate:
    on_demand: float
    spot: float | None


class PriceTable:
    """Per-GPU-hour prices by GPU type and cloud; ``options``/``price`` answer lookups."""

    def __init__(
        self,
        rates: Mapping[str, Mapping[str, _Rate]],
        taken: str,
        regions: Mapping[str, str] | None = None,
        catalog: CatalogPrices | None = None,
    ) -> None:
        self._rates = {canonical_gpu(g): dict(by_cloud) for g, by_cloud in rates.items()}
        self.taken = taken
        self.regions = dict(regions or {})
        self.catalog = catalog

    @property
    def gpus(self) -> list[str]:
        return sorted(self._rates)

    def with_catalog(self, catalog: CatalogPrices | None) -> PriceTable:
        """The same table, preferring ``catalog``'s prices where it has them."""
        return PriceTable(self._rates, self.taken, self.regions, catalog)

    def options(
        self, gpu: str, count: int, cloud: str | None = None, spot: bool = False
    ) -> list[PriceOption]:
        """Every way to rent ``count`` × ``gpu`` (on ``cloud`` if given), cheapest first.

        ``spot=False`` lists on-demand prices only; ``spot=True`` lists spot prices only.
        Unknown GPUs or clouds give an empty list (the caller says why it cannot burst).
        """
        if count < 1:
            raise ConfigError(f"a price needs at least one GPU, not {count}")
        name = canonical_gpu(gpu)
        found: list[PriceOption] = []
        for cloud_name, rate in self._rates.get(name, {}).items():
            if cloud is not None and cloud_name != cloud.lower():
                continue
            option = self._option(name, count, cloud_name, rate, spot)
            if option is not None:
                found.append(option)
        found.sort(key=lambda o: (o.price_per_hour, o.cloud, o.spot))
        return found

    def price(
        self, gpu: str, count: int, cloud: str | None = None, spot: bool = False
    ) -> PriceOption:
        """The cheapest option; ``ConfigError`` naming what is missing if there is none."""
        options = self.options(gpu, count, cloud, spot)
        if not options:
            kind = "spot" if spot else "on-demand"
            on = f" on {cloud}" if cloud else ""
            raise ConfigError(
                f"no {kind} price for {canonical_gpu(gpu)}{on} in the price table "
                f"(known GPUs: {', '.join(self.gpus)})"
            )
        return options[0]

    def _option(
        self, gpu: str, count: int, cloud: str, rate: _Rate, spot: bool
    ) -> PriceOption | None:
        region = self.regions.get(cloud)
        if self.catalog is not None:
            from_catalog = self.catalog.price(gpu, count, cloud, spot)
            if from_catalog is not None:
                return PriceOption(gpu, count, cloud, spot, from_catalog, None, "skypilot-catalog")
        per_gpu = rate.spot if spot else rate.on_demand
        if per_gpu is None:
            return None
        return PriceOption(
            gpu, count, cloud, spot, round(per_gpu * count, 6), region, f"table {self.taken}"
        )


# -- loading and validation ----------------------------------------------------------------


def parse_price_table(data: Any, origin: str = "price table") -> PriceTable:
    """Validate a parsed YAML document and build the table; ``PriceTableError`` if unusable."""
    if not isinstance(data, Mapping):
        raise PriceTableError(f"{origin}: expected a mapping at the top level")
    taken = data.get("taken")
    if not isinstance(taken, str) or not taken.strip():
        raise PriceTableError(f"{origin}: 'taken' (the date the prices were read) is required")
    regions = data.get("regions") or {}
    if not isinstance(regions, Mapping) or not all(isinstance(v, str) for v in regions.values()):
        raise PriceTableError(f"{origin}: 'regions' must map a cloud to a region name")
    gpus = data.get("gpus")
    if not isinstance(gpus, Mapping) or not gpus:
        raise PriceTableError(f"{origin}: 'gpus' must list at least one GPU type")
    rates: dict[str, dict[str, _Rate]] = {}
    for gpu, by_cloud in gpus.items():
        name = canonical_gpu(str(gpu))
        if name in rates:
            raise PriceTableError(f"{origin}: GPU {name} is listed twice")
        if not isinstance(by_cloud, Mapping) or not by_cloud:
            raise PriceTableError(f"{origin}: {name} must map clouds to prices")
        rates[name] = {
            str(cloud).lower(): _parse_rate(f"{origin}: {name} on {cloud}", entry)
            for cloud, entry in by_cloud.items()
        }
    return PriceTable(rates, taken.strip(), {str(k).lower(): v for k, v in regions.items()})


def _parse_rate(where: str, entry: Any) -> _Rate:
    if not isinstance(entry, Mapping):
        raise PriceTableError(f"{where}: expected {{on_demand: ..., spot: ...}}")
    unknown = set(entry) - {"on_demand", "spot"}
    if unknown:
        raise PriceTableError(f"{where}: unknown keys {sorted(unknown)}")
    if "on_demand" not in entry:
        raise PriceTableError(f"{where}: 'on_demand' is required")
    spot = entry.get("spot")
    return _Rate(
        _parse_price(f"{where} on_demand", entry["on_demand"]),
        None if spot is None else _parse_price(f"{where} spot", spot),
    )


def _parse_price(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PriceTableError(f"{where}: price must be a number, not {value!r}")
    price = float(value)
    if not math.isfinite(price) or price < 0:
        raise PriceTableError(f"{where}: price must be finite and ≥ 0, not {value!r}")
    return price


def load_price_table(path: str | Path | None = None) -> PriceTable:
    """Read and validate a price table; ``None`` reads the defaults shipped with Starburst."""
    if path is None:
        text = resources.files("starburst.pricing").joinpath("prices.yaml").read_text("utf-8")
        origin = "prices.yaml (defaults)"
    else:
        try:
            text = Path(path).read_text("utf-8")
        except OSError as exc:
            raise PriceTableError(f"cannot read price table {path}: {exc}") from exc
        origin = str(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PriceTableError(f"{origin}: not valid YAML: {exc}") from exc
    return parse_price_table(data, origin)


@functools.lru_cache(maxsize=1)
def default_price_table() -> PriceTable:
    """The shipped defaults, preferring SkyPilot's catalog if it is on disk; read once, lazily."""
    from starburst.pricing.catalog import SkyPilotCatalog

    return load_price_table().with_catalog(SkyPilotCatalog.discover())


def price(gpu: str, count: int, cloud: str | None = None, spot: bool = False) -> PriceOption:
    """The cheapest option for ``count`` × ``gpu`` from the defaults (catalog first)."""
    return default_price_table().price(gpu, count, cloud, spot)
