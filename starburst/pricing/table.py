"""The price table: what a GPU-hour costs on each cloud, on-demand and spot.

Terms:
- *price table*: Starburst's own YAML file (``prices.yaml`` shipped with the package, or an
  admin's copy) of US dollars per GPU-hour, per GPU type and cloud, with the date the prices
  were ``taken``. It exists because SkyPilot downloads its catalogs at run time, and a quote
  must work offline and before any cloud account is configured.
- *option*: one way to run ``count`` GPUs of a type: a cloud, on-demand or spot, and the
  hourly price of all ``count`` GPUs. ``source`` says where the price came from
  (``table 2025-06-15`` or ``skypilot-catalog``).
- *nodes*: no instance has more than ``max_gpus_per_node`` GPUs (8 unless the table says
  otherwise), so a larger job rents ``nodes`` identical instances of ``per_node`` GPUs (a
  SkyPilot task with ``num_nodes``). The shape is the one that rents the fewest GPUs, then the
  fewest nodes, among instance sizes 1, 2, 4, 8 (and the maximum): 16 GPUs are 2 × 8, 12 are
  3 × 4. A job made of pods keeps each pod on one node (4 pods of 6 GPUs: 4 × 8, two GPUs
  idle on each), and a pod larger than any instance has no option. ``count`` is then the GPUs
  rented (``nodes × per_node``), which is what is billed.
- *shape*: ``A100:8`` for one node, ``2xA100:8`` for two; what quotes, launch records and cost
  reports show (``gpus_in`` reads the GPU count back).
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


DEFAULT_MAX_GPUS_PER_NODE = 8
INSTANCE_SIZES = (1, 2, 4, 8, 16)


class PriceTableError(ConfigError):
    """The price table file cannot be used; the message names the entry at fault."""


def node_shape(count: int, max_per_node: int, unit: int = 1) -> tuple[int, int] | None:
    """``(nodes, per_node)`` to rent ``count`` GPUs whose pods have ``unit`` GPUs each (see
    the module docstring); None if a pod is larger than any instance."""
    if count <= max_per_node:
        return 1, count
    unit = max(unit, 1)
    pods = -(-count // unit)
    sizes = {s for s in INSTANCE_SIZES if s <= max_per_node} | {max_per_node}
    shapes = [(-(-pods // (size // unit)), size) for size in sizes if size >= unit]
    if not shapes:
        return None
    return min(shapes, key=lambda shape: (shape[0] * shape[1], shape[0]))


def gpus_in(shape: str) -> int:
    """The GPUs a shape (``A100:8``, ``2xA100:8``) rents in total; 1 if it names no count."""
    nodes, sep, rest = shape.partition("x")
    if not (sep and nodes.isdigit()):
        nodes, rest = "1", shape
    _, _, count = rest.rpartition(":")
    return int(nodes) * (int(count) if count.isdigit() else 1)


def gpu_type_in(shape: str) -> str | None:
    """The GPU type a shape rents, spelt as the table spells it (``A100`` for ``A100:8``,
    ``2xA100:8`` and ``a100``); None if it names none. Cost reports group by it, so one
    type is one row however it was rented."""
    nodes, sep, rest = shape.partition("x")
    if not (sep and nodes.isdigit()):
        rest = shape
    name = rest.partition(":")[0].strip()
    return canonical_gpu(name) if name else None


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
    nodes: int = 1

    @property
    def per_node(self) -> int:
        return self.count // self.nodes

    @property
    def where(self) -> str:
        """``aws:us-east-1`` (or ``aws`` when no region is known), ``(spot)`` appended."""
        place = f"{self.cloud}:{self.region}" if self.region else self.cloud
        return f"{place} (spot)" if self.spot else place

    @property
    def accelerators(self) -> str:
        """SkyPilot's accelerator spelling for one node: ``A100:8``."""
        return f"{self.gpu}:{self.per_node}"

    @property
    def shape(self) -> str:
        """All the GPUs rented: ``A100:8``, or ``2xA100:8`` for two nodes."""
        return self.accelerators if self.nodes == 1 else f"{self.nodes}x{self.accelerators}"


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
        max_gpus_per_node: int = DEFAULT_MAX_GPUS_PER_NODE,
    ) -> None:
        self._rates = {canonical_gpu(g): dict(by_cloud) for g, by_cloud in rates.items()}
        self.taken = taken
        self.regions = dict(regions or {})
        self.catalog = catalog
        self.max_gpus_per_node = max_gpus_per_node

    @property
    def gpus(self) -> list[str]:
        return sorted(self._rates)

    def with_catalog(self, catalog: CatalogPrices | None) -> PriceTable:
        """The same table, preferring ``catalog``'s prices where it has them."""
        return PriceTable(self._rates, self.taken, self.regions, catalog, self.max_gpus_per_node)

    def options(
        self,
        gpu: str,
        count: int,
        cloud: str | None = None,
        spot: bool = False,
        pod_gpus: int = 1,
    ) -> list[PriceOption]:
        """Every way to rent ``count`` × ``gpu`` (on ``cloud`` if given), cheapest first;
        on several nodes when one instance cannot hold them (pods of ``pod_gpus`` kept whole).

        ``spot=False`` lists on-demand prices only; ``spot=True`` lists spot prices only.
        Unknown GPUs or clouds, or a pod larger than any instance, give an empty list (the
        caller says why it cannot burst).
        """
        if count < 1:
            raise ConfigError(f"a price needs at least one GPU, not {count}")
        name = canonical_gpu(gpu)
        shape = node_shape(count, self.max_gpus_per_node, pod_gpus)
        if shape is None:
            return []
        nodes, per_node = shape
        found: list[PriceOption] = []
        for cloud_name, rate in self._rates.get(name, {}).items():
            if cloud is not None and cloud_name != cloud.lower():
                continue
            option = self._option(name, per_node, cloud_name, rate, spot, nodes)
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

    def dearest_node(self) -> PriceOption | None:
        """One full node (``max_gpus_per_node`` GPUs) of the GPU type whose cheapest
        on-demand node costs most: the default per-job ceiling (``api.submit_ceilings``) — any one
        instance the table sells fits under it, a request for many instances does not."""
        cheapest = [
            options[0]
            for gpu in self.gpus
            if (options := self.options(gpu, self.max_gpus_per_node))
        ]
        return max(cheapest, key=lambda o: (o.price_per_hour, o.gpu), default=None)

    def _option(
        self, gpu: str, per_node: int, cloud: str, rate: _Rate, spot: bool, nodes: int
    ) -> PriceOption | None:
        region = self.regions.get(cloud)
        count = per_node * nodes
        if self.catalog is not None:
            from_catalog = self.catalog.price(gpu, per_node, cloud, spot)
            if from_catalog is not None:
                return PriceOption(
                    gpu,
                    count,
                    cloud,
                    spot,
                    round(from_catalog * nodes, 6),
                    None,
                    "skypilot-catalog",
                    nodes,
                )
        per_gpu = rate.spot if spot else rate.on_demand
        if per_gpu is None:
            return None
        return PriceOption(
            gpu,
            count,
            cloud,
            spot,
            round(per_gpu * count, 6),
            region,
            f"table {self.taken}",
            nodes,
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
    per_node = data.get("max_gpus_per_node", DEFAULT_MAX_GPUS_PER_NODE)
    if isinstance(per_node, bool) or not isinstance(per_node, int) or per_node < 1:
        raise PriceTableError(
            f"{origin}: 'max_gpus_per_node' must be a whole number ≥ 1, not {per_node!r}"
        )
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
        rates[name] = {}
        for cloud, entry in by_cloud.items():
            key = str(cloud).lower()
            if key in rates[name]:
                raise PriceTableError(f"{origin}: {name} on {key} is listed twice")
            rates[name][key] = _parse_rate(f"{origin}: {name} on {cloud}", entry)
    return PriceTable(
        rates,
        taken.strip(),
        {str(k).lower(): v for k, v in regions.items()},
        max_gpus_per_node=per_node,
    )


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
