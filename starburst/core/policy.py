"""Waiting policies: how long each job may wait on-prem before it bursts to the cloud.

| policy     | wait budget w(j)               | coefficient unit        |
|------------|--------------------------------|-------------------------|
| no-wait    | 0                              | none                    |
| infinite   | never bursts (cluster only)    | none                    |
| constant   | c                              | seconds                 |
| runtime    | c × runtime                    | unitless                |
| resource   | c × gpus                       | seconds per GPU         |
| compute    | c × gpus × runtime             | unitless (per GPU)      |
| star       | 0 on arrival; see ``star_requeue_budget`` | seconds per GPU |
| compute-expected | c × gpus × expected runtime | unitless (per GPU)     |

"runtime" is the job's estimate (``Job.believed_runtime``), or for ``runtime`` and ``compute``
another point of its predicted distribution when the policy's ``estimate`` says so (a higher
quantile, the mean: ``core.estimates``; the coefficient is calibrated on the point estimate
either way). The admin may give the coefficient c
directly or a *waiting budget* b; then c makes Σ w(j) = b × Σ runtime(j) over a reference
workload (``calibrate``). An explicit c always overrides b.

``compute-expected`` is not the paper's: it is Compute-Wait over the predicted *distribution*
(``Job.expected_runtime``, the log-normal mean of the estimate and its p10–p90 band) instead of
the point estimate, so a job whose runtime is uncertain — which may well be long — waits
longer rather than bursting at once on a low median. Its calibration uses the expected
runtime on both sides (the expected total budget is b × the expected total runtime). A job
without a band gets plain Compute-Wait. The paper's policies are untouched by it. Calibrated
on jobs without bands (the live recalibration reads stored history, which keeps no band), c
is Compute-Wait's, and budgets exceed b × Σ runtime by the mean band factor.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from starburst.core.duration import precise
from starburst.core.errors import ConfigError
from starburst.core.estimates import EstimateUse
from starburst.core.job import Job


class PolicyKind(StrEnum):
    NO_WAIT = "no-wait"
    INFINITE = "infinite"
    CONSTANT = "constant"
    RUNTIME = "runtime"
    RESOURCE = "resource"
    COMPUTE = "compute"
    STAR = "star"
    COMPUTE_EXPECTED = "compute-expected"


@dataclass(frozen=True, slots=True)
class PolicyInfo:
    """What the rest of Starburst needs to know about a policy besides its budget rule.

    ``name``: what tables, plots and notes call it; ``out_of_order``: the mode it normally
    runs in (only the other mode is spelled out in names); ``budgetless``: a waiting budget
    b means nothing to it (no coefficient); ``reference_free``: its coefficient follows
    from b alone, without a reference workload to calibrate on.
    """

    name: str
    out_of_order: bool = False
    budgetless: bool = False
    reference_free: bool = False


#: Every policy, in one place: a new one is a ``PolicyKind``, an entry here, its rule in
#: ``WaitPolicy.budget`` and its closed form in ``calibrate`` (and, on purpose, a second
#: implementation in ``sim.reference`` for the differential test).
POLICIES: dict[PolicyKind, PolicyInfo] = {
    PolicyKind.NO_WAIT: PolicyInfo("No-Wait", budgetless=True, reference_free=True),
    PolicyKind.INFINITE: PolicyInfo("Cluster only", budgetless=True, reference_free=True),
    PolicyKind.CONSTANT: PolicyInfo("Constant-Wait"),
    PolicyKind.RUNTIME: PolicyInfo("Runtime-Wait", reference_free=True),
    PolicyKind.RESOURCE: PolicyInfo("Resource-Wait"),
    PolicyKind.COMPUTE: PolicyInfo("Compute-Wait", out_of_order=True),
    PolicyKind.STAR: PolicyInfo("Star-Wait", out_of_order=True),
    PolicyKind.COMPUTE_EXPECTED: PolicyInfo("Compute-Expected-Wait", out_of_order=True),
}

#: Star-Wait defaults from the paper: the cloud stint threshold L and the re-queue factor r.
STAR_THRESHOLD_S = 0.25 * 3600.0
STAR_REQUEUE_FACTOR = 3.0

#: the policies whose budgets follow a job's runtime estimate (``WaitPolicy.estimate``)
ESTIMATE_BASED = frozenset({PolicyKind.RUNTIME, PolicyKind.COMPUTE})


def parse_policy(name: str) -> PolicyKind:
    try:
        return PolicyKind(name.strip().lower())
    except ValueError:
        known = ", ".join(p.value for p in PolicyKind)
        raise ConfigError(f"unknown policy {name!r}; choose one of: {known}") from None


def calibrate(kind: PolicyKind, budget: float, jobs: Sequence[Job]) -> float:
    """The coefficient that makes Σ w(j) = budget × Σ runtime(j) over ``jobs``.

    Closed forms (docs/concepts.md): constant c = b·mean(runtime); runtime c = b; resource and
    star c = b·mean(runtime)/mean(gpus); compute c = b·Σruntime/Σ(gpus·runtime);
    compute-expected the same over expected runtimes.
    """
    if budget < 0 or not math.isfinite(budget):
        raise ConfigError(f"waiting budget must be a finite number ≥ 0, got {budget}")
    if POLICIES[kind].budgetless:
        return 0.0
    if kind is PolicyKind.RUNTIME:
        return budget
    if not jobs:
        raise ConfigError("cannot derive a coefficient from a waiting budget without jobs")
    # Never overflows: jobs without a finite runtime are left out; when the plain sums
    # overflow (a 1e308 declared runtime once made recalibration raise), they are taken over
    # runtimes scaled by the largest one (the ratios do not change); the result is capped at
    # the largest float.
    expected = kind is PolicyKind.COMPUTE_EXPECTED
    pairs = [(float(j.gpus), j.expected_runtime if expected else j.believed_runtime) for j in jobs]
    finite = [(g, r) for g, r in pairs if math.isfinite(r) and r >= 0]
    if not finite:
        return 0.0
    try:
        value = _closed_form(kind, budget, finite, 1.0)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        value = _closed_form(kind, budget, finite, max(r for _, r in finite))
    return min(value, sys.float_info.max)


def _closed_form(
    kind: PolicyKind, budget: float, jobs: list[tuple[float, float]], scale: float
) -> float:
    """The closed forms over (gpus, runtime) pairs, with runtimes divided by ``scale``."""
    if scale == 0.0:
        return 0.0
    runtime = math.fsum(r / scale for _, r in jobs)
    if kind is PolicyKind.CONSTANT:
        return budget * (scale * (runtime / len(jobs)))
    if kind in (PolicyKind.RESOURCE, PolicyKind.STAR):
        gpus = math.fsum(g for g, _ in jobs)
        return budget * (scale * (runtime / gpus)) if gpus else 0.0
    compute = math.fsum(g * (r / scale) for g, r in jobs)  # compute and compute-expected
    if math.isinf(compute) and scale == 1.0:
        return math.inf  # retried scaled
    return budget * (runtime / compute) if compute else 0.0


@dataclass(frozen=True, slots=True)
class WaitPolicy:
    """A waiting policy with its coefficient resolved."""

    kind: PolicyKind
    coefficient: float = 0.0
    star_threshold: float = STAR_THRESHOLD_S
    star_requeue_factor: float = STAR_REQUEUE_FACTOR
    #: the estimate ``runtime`` and ``compute`` budgets are computed from (``core.estimates``)
    estimate: EstimateUse = EstimateUse.P50

    def __post_init__(self) -> None:
        if self.coefficient < 0 or math.isnan(self.coefficient):
            raise ConfigError(f"policy coefficient must be ≥ 0, got {self.coefficient}")

    @classmethod
    def from_budget(
        cls,
        kind: PolicyKind,
        budget: float,
        jobs: Sequence[Job],
        estimate: EstimateUse = EstimateUse.P50,
    ) -> WaitPolicy:
        return cls(kind, calibrate(kind, budget, jobs), estimate=estimate)

    @property
    def uses_estimate(self) -> bool:
        """Whether budgets follow the job's runtime estimate (and so ``estimate`` matters)."""
        return self.kind in ESTIMATE_BASED

    def budget(self, job: Job) -> float:
        """Wait budget in seconds on first arrival (``inf``: never bursts)."""
        kind, c = self.kind, self.coefficient
        if kind is PolicyKind.COMPUTE:
            return c * job.gpus * self.estimate.runtime(job)
        if kind is PolicyKind.COMPUTE_EXPECTED:
            return c * job.gpus * job.expected_runtime
        if kind is PolicyKind.NO_WAIT or kind is PolicyKind.STAR:
            return 0.0
        if kind is PolicyKind.INFINITE:
            return math.inf
        if kind is PolicyKind.CONSTANT:
            return c
        if kind is PolicyKind.RUNTIME:
            return c * self.estimate.runtime(job)
        return c * job.gpus  # resource

    def formula(self, job: Job) -> str:
        """How ``budget(job)`` is computed, in words with the numbers: what ``explain`` and
        the admission event show, so a budget that changed with the coefficient reads why
        (``2 GPUs × 2h runtime estimate × coefficient 0.0565 (compute)``)."""
        kind, c = self.kind, f"coefficient {self.coefficient:.4g}"
        gpus = f"{job.gpus} GPU{'' if job.gpus == 1 else 's'}"
        runtime, which = job.believed_runtime, ""
        if self.estimate is not EstimateUse.P50:  # the estimate ``tune`` chose, named
            runtime, which = self.estimate.runtime(job), f"{self.estimate.value} "
        estimate = f"{precise(runtime)} {which}runtime estimate"
        if kind is PolicyKind.COMPUTE:
            return f"{gpus} × {estimate} × {c} ({kind.value})"
        if kind is PolicyKind.COMPUTE_EXPECTED:
            expected = f"{precise(job.expected_runtime)} expected runtime"
            return f"{gpus} × {expected} × {c} ({kind.value})"
        if kind is PolicyKind.RUNTIME:
            return f"{estimate} × {c} ({kind.value})"
        if kind is PolicyKind.RESOURCE:
            return f"{gpus} × {c} s per GPU ({kind.value})"
        if kind is PolicyKind.CONSTANT:
            return f"the same {precise(self.coefficient)} for every job ({kind.value})"
        if kind is PolicyKind.INFINITE:
            return "never bursts (infinite: cluster only)"
        if kind is PolicyKind.STAR:
            return "0 on arrival (star: bursts first, may be pulled back)"
        return "0: bursts as soon as it does not fit (no-wait)"

    def star_requeue_budget(self, job: Job, now: float) -> float:
        """Budget of a Star-Wait job re-queued at ``now`` after its cloud stint.

        r × max(0, c × gpus − time since the original submit).
        """
        remaining = self.coefficient * job.gpus - (now - job.submit_time)
        return self.star_requeue_factor * max(0.0, remaining)

    def describe(self) -> str:
        if POLICIES[self.kind].budgetless:
            return self.kind.value
        if self.uses_estimate and self.estimate is not EstimateUse.P50:
            return f"{self.kind.value}(c={self.coefficient:.6g}, {self.estimate.value} estimate)"
        return f"{self.kind.value}(c={self.coefficient:.6g})"

    def basis(self, job: Job) -> tuple[str, float] | None:
        """Which runtime estimate ``job``'s budget was computed from and its value, for the
        admission reason (None when the budget does not follow the job's runtime)."""
        if self.uses_estimate:
            return f"{self.estimate.value} runtime estimate", self.estimate.runtime(job)
        if self.kind is PolicyKind.COMPUTE_EXPECTED:
            return "mean runtime estimate", job.expected_runtime
        return None
