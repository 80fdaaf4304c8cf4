"""Outcomes of a simulation and the figures the paper reports.

Terms (docs/scheduling.md, "Cost and metrics"):
- *cloud GPU-hours*: gpus × hours run in the cloud (Star-Wait stints included); dollars are
  GPU-hours × the price per GPU-hour.
- *JCT*: end − submit, wherever the job ran; a burst job's JCT includes its wait (and the
  cloud start-up delay when one is configured).
- *wait*: start − submit (for a burst job, burst time − submit; for a pulled-back Star-Wait
  job, its final start − submit).
- *cluster utilisation*: on-prem GPU-hours ÷ (cluster GPUs × span from first submit to last end).
- *offered load*: Σ gpus × runtime ÷ (cluster GPUs × span of submit times).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter, sub
from pathlib import Path
from typing import Any, overload

from starburst.core.columns import from_columns
from starburst.core.job import Job
from starburst.spreadsheet import writer as csv_writer


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """Where and when one job ran in a simulation, its wait budget, and why (the reasons)."""

    job: Job
    where: str  # "onprem", "cloud", or "cloud+onprem"/"cloud+cloud" after a pull-back
    start: float
    end: float
    budget: float
    cloud_gpu_seconds: float
    placement: str
    reason: str
    first_burst: float | None = None  # when it first went to the cloud (None: never)

    @property
    def burst(self) -> bool:
        return self.where.endswith("cloud")

    @property
    def jct(self) -> float:
        return self.end - self.job.submit_time

    @property
    def wait(self) -> float:
        return self.start - self.job.submit_time


class OutcomeColumns(Sequence[JobOutcome]):
    """A run's outcomes as the engine records them: columns (``JobOutcome``'s field → one
    value per job). ``SimResult.summary`` reads the columns as they are; the ``JobOutcome``
    values are built when first asked for (``from_columns``), which a summary alone (a whole
    ``starburst simulate``) never does. ``finish``: columns held raw, each turned into the
    field's values by its function only then (never one the summary reads). Equal to any
    sequence of the same outcomes.

    Invariant: the columns are not changed once given."""

    __slots__ = ("_built", "_finish", "columns", "size")

    def __init__(
        self,
        size: int,
        columns: Mapping[str, Sequence[Any]],
        finish: Mapping[str, Callable[[Any], object]] | None = None,
    ) -> None:
        self.size = size
        self.columns = columns
        self._finish = finish or {}
        self._built: list[JobOutcome] | None = None

    def _values(self) -> list[JobOutcome]:
        if self._built is None:
            columns = dict(self.columns)
            for name, make in self._finish.items():
                columns[name] = list(map(make, columns[name]))
            self._built = from_columns(JobOutcome, self.size, columns)
        return self._built

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, i: int) -> JobOutcome: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[JobOutcome]: ...
    def __getitem__(self, i: int | slice) -> JobOutcome | Sequence[JobOutcome]:
        return self._values()[i]

    def __iter__(self) -> Iterator[JobOutcome]:
        return iter(self._values())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return self._values() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (as a list's: equal to one)

    def __repr__(self) -> str:
        return repr(self._values())


#: what ``SimResult.summary`` reads of each outcome
_SUMMARY_FIELDS = ("job", "where", "start", "end", "cloud_gpu_seconds")
_SUBMIT = attrgetter("submit_time")


def _summary_columns(outcomes: Sequence[JobOutcome]) -> Mapping[str, Sequence[Any]]:
    if isinstance(outcomes, OutcomeColumns):
        return outcomes.columns
    return {f: list(map(attrgetter(f), outcomes)) for f in _SUMMARY_FIELDS}


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), 0 for no values."""
    return _percentile_of_sorted(sorted(values), q)


def _percentile_of_sorted(ordered: Sequence[float], q: float) -> float:
    if not ordered:
        return 0.0
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True)
class SimResult:
    """A simulation's outcomes, one per job, with what the summary needs to price them."""

    outcomes: Sequence[JobOutcome]
    cluster_gpus: int
    price_per_gpu_hour: float
    config: str

    def summary(self) -> dict[str, float | int | str]:
        outs = self.outcomes
        # a few passes at C speed over the columns (a run's 8,000 or 300,000 outcomes): each
        # sum is exact (fsum), whatever the order, and each list sorted once for its
        # percentiles; ``min``/``max`` keep the first of equals, as a loop would
        cols = _summary_columns(outs)
        jobs, wheres, ends = cols["job"], cols["where"], cols["end"]
        cloud_s = cols["cloud_gpu_seconds"]
        submits = list(map(_SUBMIT, jobs))
        jcts = list(map(sub, ends, submits))
        waits = list(map(sub, cols["start"], submits))
        offered_s = [job.gpus * (job.runtime or 0.0) for job in jobs]
        onprem = [not where.endswith("cloud") for where in wheres]
        onprem_s = list(compress(offered_s, onprem))
        burst_jobs = sum(map((0.0).__lt__, cloud_s))
        pulled_back = sum(where.startswith("cloud+") for where in wheres)
        first = min(submits, default=None)
        last_submit = max(submits, default=None)
        last_end = max(ends, default=None)
        first, last_submit, last_end = first or 0.0, last_submit or 0.0, last_end or 0.0
        cloud_gpu_h = math.fsum(cloud_s) / 3600.0
        onprem_gpu_s = math.fsum(onprem_s)
        gpus = max(self.cluster_gpus, 1)
        span = last_end - first
        submit_span = last_submit - first
        offered = math.fsum(offered_s)
        jcts.sort()
        waits.sort()
        return {
            "config": self.config,
            "jobs": len(outs),
            "burst_jobs": burst_jobs,
            "pulled_back": pulled_back,
            "cloud_gpu_hours": cloud_gpu_h,
            "cloud_cost_usd": cloud_gpu_h * self.price_per_gpu_hour,
            "mean_jct_s": math.fsum(jcts) / len(jcts) if jcts else 0.0,
            "p90_jct_s": _percentile_of_sorted(jcts, 90),
            "p99_jct_s": _percentile_of_sorted(jcts, 99),
            "mean_wait_s": math.fsum(waits) / len(waits) if waits else 0.0,
            "p90_wait_s": _percentile_of_sorted(waits, 90),
            "p99_wait_s": _percentile_of_sorted(waits, 99),
            "cluster_utilization": onprem_gpu_s / (gpus * span) if span > 0 else 0.0,
            "offered_load": offered / (gpus * submit_span) if submit_span > 0 else 0.0,
            "cluster_gpus": self.cluster_gpus,
            "price_per_gpu_hour": self.price_per_gpu_hour,
        }

    def write_per_job(self, path: Path) -> None:
        """One CSV row per job: where it ran, when, its wait budget and the reasons."""
        columns = [
            "job_id",
            "submit_time",
            "gpus",
            "runtime",
            "estimate",
            "wait_budget_s",
            "where",
            "start",
            "end",
            "wait_s",
            "jct_s",
            "cloud_gpu_hours",
            "placement",
            "reason",
        ]
        with path.open("w", newline="") as fh:
            writer = csv_writer(fh)
            writer.writerow(columns)
            for o in sorted(self.outcomes, key=lambda o: (o.job.submit_time, o.job.id)):
                writer.writerow(
                    [
                        o.job.id,
                        _num(o.job.submit_time),
                        o.job.gpus,
                        _num(o.job.runtime),
                        _num(o.job.estimate),
                        _num(o.budget),
                        o.where,
                        _num(o.start),
                        _num(o.end),
                        _num(o.wait),
                        _num(o.jct),
                        _num(o.cloud_gpu_seconds / 3600.0),
                        o.placement,
                        o.reason,
                    ]
                )


def _num(value: float | None) -> str:
    if value is None:
        return ""
    if math.isinf(value):
        return "inf"
    return f"{value:.6g}" if abs(value) < 1e6 else f"{value:.1f}"
