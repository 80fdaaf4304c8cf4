"""Each tuned setting's *regret*: its cloud spend over the least any scheduler could spend on
the same history within the same JCT tolerance — the offline optimum.

Terms:
- *the optimum*: ``sim.optimum``'s problem on the replayed jobs — every job runs in the cloud
  from its submit time or on-prem from some later start, the on-prem GPUs at any instant fit
  the cluster's GPUs *pooled*, and the mean JCT stays within the tolerance over No-Wait's
  replayed mean JCT J₀: mean wait ≤ (1 + tolerance) × J₀ − mean runtime (a job's JCT there is
  its wait plus its runtime). Node packing, GPU types, dependencies and the cloud's start-up
  delay are relaxed, so the optimum is at most what any real scheduler within the tolerance
  spends: a regret is never understated.
- *the bracket* [lower, upper] (cloud GPU-hours): what is *proven* of the optimum. ``upper``
  is the best schedule known: CP-SAT's (``sim.optimum_cpsat``) or a replayed row's within the
  tolerance (a real schedule, so a pooled one too); ``lower`` the best proven lower
  bound, CP-SAT's or HiGHS's on its time-indexed relaxation (``sim.optimum``: the linear
  program or branch and bound, ``relaxed_bound``; often the tighter). Proven optimal when
  they meet.
- *regret* of a row = its cloud GPU-hours ÷ the optimum's, so 1.00x is optimal; from the
  bracket it is only known to lie in [cost ÷ upper, cost ÷ lower], and that is what is shown
  when the optimum is not proven. A row over the tolerance may show less than 1x: it bought
  its saving with more waiting than the tolerance allows.

Invariants: solved only with OR-Tools installed (the ``optimum`` extra) and for at most
``MAX_JOBS`` jobs (beyond, the solver's bracket stops saying anything in a time limit of
minutes: on a 40-job synthetic history CP-SAT proves no bound above 0 in 30 s); otherwise
``Skipped`` says why. Ratios are of GPU-hours, so they do not depend on the price.
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from starburst.core.job import Job

Row = dict[str, float | int | str]

#: the largest history whose optimum ``tune`` solves (see the module docstring)
MAX_JOBS = 200
#: the check-point spacing of HiGHS's relaxation, seconds (finer: tighter and slower)
RELAXATION_SLOT = 60.0
#: the check points and rung growth of the relaxation's linear program (``relaxed_bound``)
LINEAR_SLOT, LINEAR_GROWTH = 30.0, 1.1


@dataclass(frozen=True, slots=True)
class Bracket:
    """What is proven of the optimum, in cloud GPU-hours: lower ≤ optimum ≤ upper."""

    lower: float
    upper: float
    mean_wait_bound_s: float
    seconds: float

    @property
    def proven(self) -> bool:
        return self.lower >= self.upper

    def regret(self, gpu_hours: float) -> tuple[float, float]:
        """(least, most) the regret of a spend of ``gpu_hours`` can be."""
        return _ratio(gpu_hours, self.upper), _ratio(gpu_hours, self.lower)


@dataclass(frozen=True, slots=True)
class Skipped:
    """Why no regret is shown."""

    why: str


def _ratio(cost: float, optimum: float) -> float:
    if optimum > 0:
        return cost / optimum
    return 1.0 if cost <= 0 else math.inf


def mean_wait_bound(rows: Sequence[Row], jobs: Sequence[Job], tolerance: float) -> float:
    """The mean wait that keeps the mean JCT within ``tolerance`` of No-Wait's row."""
    no_wait = next(r for r in rows if r["policy"] == "no-wait")
    mean_runtime = math.fsum(j.runtime or 0.0 for j in jobs) / len(jobs)
    return max(0.0, (1 + tolerance) * float(no_wait["mean_jct_s"]) - mean_runtime)


def solve(
    jobs: Sequence[Job],
    gpus: int,
    rows: Sequence[Row],
    tolerance: float,
    *,
    seconds: float,
    workers: int = 2,
) -> Bracket | Skipped:
    """Bracket the optimum within ``seconds`` (about two thirds CP-SAT, a third HiGHS)."""
    if seconds <= 0:
        return Skipped("no regret shown: --optimum-seconds is 0")
    if gpus < 1 or not jobs:
        return Skipped("no regret shown: no GPUs or no jobs to schedule")
    if len(jobs) > MAX_JOBS:
        return Skipped(
            f"no regret shown: the history has {len(jobs)} jobs, more than the {MAX_JOBS} "
            "the offline optimum is solved for"
        )
    try:
        importlib.import_module("ortools.sat.python.cp_model")  # the optimum extra
    except ImportError:
        return Skipped(
            "no regret shown: the offline optimum needs OR-Tools "
            "(the optimum extra: pip install 'starburst[optimum]')"
        )
    from starburst.sim.optimum_cpsat import prove_optimum

    began = time.perf_counter()
    wait = mean_wait_bound(rows, jobs, tolerance)
    cp = prove_optimum(
        jobs, gpus, wait, time_limit=seconds * 2 / 3, relative_gap=0.0, workers=workers
    )
    lower = cp.bound_gpu_hours
    if not cp.proven:
        lower = max(lower, relaxed_bound(jobs, gpus, wait, seconds / 3))
    upper = min(cp.cloud_gpu_hours, *_within(rows, wait, jobs))
    return Bracket(min(lower, upper), upper, wait, time.perf_counter() - began)


def relaxed_bound(jobs: Sequence[Job], gpus: int, wait: float, seconds: float) -> float:
    """HiGHS's lower bound on the optimum (cloud GPU-hours) within about ``seconds``: the larger
    of the time-indexed relaxation's linear optimum on check points ``LINEAR_SLOT`` s apart (a
    few seconds on 200 jobs) and branch and bound on check points ``RELAXATION_SLOT`` s apart
    in the time left (``sim.optimum.best_bound``)."""
    from starburst.sim.optimum import Mode, OptimumOptions, best_bound

    return best_bound(
        jobs,
        gpus,
        wait,
        linear=OptimumOptions(mode=Mode.BOUND, slot=LINEAR_SLOT, growth=LINEAR_GROWTH),
        mixed=OptimumOptions(mode=Mode.BOUND, slot=RELAXATION_SLOT),
        seconds=seconds,
    )


def _within(rows: Sequence[Row], wait: float, jobs: Sequence[Job]) -> list[float]:
    """The spend of each replayed row whose mean JCT keeps mean wait within ``wait``: each is
    a pooled schedule within the bound (its bursts counted at wait 0, its node packing
    dropped), so none is below the optimum."""
    mean_runtime = math.fsum(j.runtime or 0.0 for j in jobs) / len(jobs)
    return [
        float(r["cloud_gpu_hours"]) for r in rows if float(r["mean_jct_s"]) - mean_runtime <= wait
    ]


def add_regret(rows: Sequence[Row], bracket: Bracket) -> list[Row]:
    """Each row with ``regret_min`` and ``regret_max`` ("" where unbounded)."""
    out = []
    for row in rows:
        low, high = bracket.regret(float(row["cloud_gpu_hours"]))
        out.append(
            {
                **row,
                "regret_min": low if math.isfinite(low) else "",
                "regret_max": high if math.isfinite(high) else "",
            }
        )
    return out


def shown(low: float, high: float) -> str:
    """A regret, or what is proven of it: ``2.00x``; ``≥ 1.20x, ≤ 3.05x``; ``≥ 1.20x``."""

    def x(v: float) -> str:
        return "∞" if math.isinf(v) else f"{v:.2f}x"

    if f"{low:.2f}" == f"{high:.2f}":
        return x(low)
    return f"≥ {x(low)}" if math.isinf(high) else f"≥ {x(low)}, ≤ {x(high)}"


def render(rows: Sequence[Row], bracket: Bracket, tolerance: float, price: float) -> str:
    """The optimum's line, then each row's regret."""
    lo, hi = bracket.lower, bracket.upper
    if bracket.proven:
        what = f"{hi:,.2f} GPU-h (${hi * price:,.2f}), proven"
    else:
        what = (
            f"between {lo:,.2f} and {hi:,.2f} GPU-h (${lo * price:,.2f}–${hi * price:,.2f}), "
            f"not proven in {bracket.seconds:.0f} s: each regret is a proven range"
        )
    head = (
        f"regret = cloud GPU-h ÷ the offline optimum's (GPUs pooled, mean JCT within "
        f"{tolerance:+.0%} of No-Wait: mean wait ≤ {bracket.mean_wait_bound_s / 3600:.3f}h); "
        f"optimum {what}"
    )
    width = max(len(str(r["label"])) for r in rows)
    lines = [head]
    for row in rows:
        low, high = bracket.regret(float(row["cloud_gpu_hours"]))
        lines.append(f"  {str(row['label']).ljust(width)}  {shown(low, high)}")
    return "\n".join(lines)
