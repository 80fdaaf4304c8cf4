"""The clouds a job's cloud choice allows, priced: one rule for every cloud adapter.

A job's cloud choices (``starburst.core.cloud_choice``: ``use_spot``, ``clouds``,
``regions``) travel in ``Job.extra``; SkyPilot bursts and emulated bursts read them here, so
a job that asked for spot is priced (and metered) as spot whichever cloud runs it, and a
choice nothing can price is refused with the same words everywhere.

Terms:
- *option*: one cloud (on-demand or spot) from the price table, with its price for the job's
  GPUs and the regions allowed there (empty: any). Options are cheapest first.
- *valid names*: what a refusal lists — the GPU types the table prices, the clouds it prices
  the job's GPU type on (of the spot-ness asked for).

Invariants: pricing never contacts a cloud; an unknown GPU, a cloud that does not price it,
or a malformed choice is a ``PermanentError`` whose message names what is valid.
"""

from __future__ import annotations

from dataclasses import dataclass

from starburst.core.cloud_choice import CLOUDS, REGIONS, USE_SPOT
from starburst.core.errors import PermanentError
from starburst.core.job import Job
from starburst.pricing.table import PriceOption, PriceTable, canonical_gpu


@dataclass(frozen=True, slots=True)
class LaunchOption:
    """One cloud to try, with the regions allowed there (empty: any region)."""

    price: PriceOption
    regions: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        place = ",".join(f"{self.price.cloud}:{r}" for r in self.regions) or self.price.where
        if self.regions and self.price.spot:
            place += " (spot)"
        return place


def launch_options(
    job: Job, prices: PriceTable, default_gpu: str | None = None, spot: bool = False
) -> list[LaunchOption]:
    """The job's options, cheapest first; ``PermanentError`` naming what is valid if none."""
    gpu = job.gpu_type or default_gpu
    if job.gpus < 1:
        raise PermanentError(
            f"job {job.id} is CPU-only (0 GPUs) and cloud prices are per GPU, so it does not burst"
        )
    if gpu is None:
        raise PermanentError(f"job {job.id}: bursting needs a GPU count and a GPU type")
    if canonical_gpu(gpu) not in prices.gpus:
        raise PermanentError(
            f"job {job.id}: no cloud prices GPU type {gpu}, so it cannot burst "
            f"(GPU types in the price table: {', '.join(prices.gpus)})"
        )
    want_spot = wants_spot(job, spot)
    regions = chosen_regions(job)
    clouds = chosen_clouds(job) or sorted(regions)
    options = [
        LaunchOption(p, tuple(regions.get(p.cloud, ())))
        for p in prices.options(gpu, job.gpus, spot=want_spot, pod_gpus=job.split_unit)
        if not clouds or p.cloud in clouds
    ]
    if not options:
        kind = "spot" if want_spot else "on-demand"
        allowed = f" on {', '.join(clouds)}" if clouds else ""
        pods = f" in pods of {job.split_unit}" if job.pods else ""
        priced = sorted({p.cloud for p in prices.options(gpu, 1, spot=want_spot)})
        valid = f"{kind} {canonical_gpu(gpu)} is priced on {', '.join(priced)}"
        raise PermanentError(
            f"job {job.id}: no {kind} price for {canonical_gpu(gpu)}:{job.gpus}{pods}{allowed} "
            f"in the price table, so it cannot burst" + (f" ({valid})" if priced and clouds else "")
        )
    return options


def wants_spot(job: Job, default: bool) -> bool:
    """Whether the job rents spot GPUs: its ``use_spot`` (or ``spot``), else ``default``."""
    return _flag(job, USE_SPOT, _flag(job, "spot", default))


def chosen_clouds(job: Job) -> list[str]:
    """The clouds the job allows (lower case; empty: any)."""
    return _list(job, CLOUDS)


def chosen_regions(job: Job) -> dict[str, list[str]]:
    """The regions the job allows, per cloud (empty: any)."""
    by_cloud: dict[str, list[str]] = {}
    for item in _list(job, REGIONS):
        cloud, sep, region = item.partition("/")
        if not sep or not cloud or not region:
            raise PermanentError(f"job {job.id}: region {item!r} is not cloud/region")
        by_cloud.setdefault(cloud, []).append(region)
    return by_cloud


def _list(job: Job, key: str) -> list[str]:
    return [p.strip().lower() for p in job.extra.get(key, "").split(",") if p.strip()]


def _flag(job: Job, key: str, default: bool) -> bool:
    raw = job.extra.get(key, "").strip().lower()
    if not raw:
        return default
    if raw in {"true", "yes", "1"}:
        return True
    if raw in {"false", "no", "0"}:
        return False
    raise PermanentError(f"job {job.id}: extra[{key!r}] must be true or false, not {raw!r}")
