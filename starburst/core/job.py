"""Jobs and queue entries: the domain values every other part of Starburst passes around.

Terms:
- *runtime*: how long the job really runs. Known to the simulator (from the trace), unknown
  to the live system until the job ends.
- *estimate*: the runtime the waiting policy sees: the trace runtime (oracle), a perturbed
  oracle, or a prediction. Budgets are always computed from the estimate.
- *band*: ``estimate_low`` … ``estimate_high``, the predictor's p10 … p90 (both or neither).
  *Expected runtime*: the mean of the log-normal distribution with the estimate as its median
  and the band as its p10/p90, exp(μ + σ²/2) with σ = ln(high/low) / (2 × 1.2816), σ capped at
  ``MAX_SIGMA``; without a band it is the believed runtime.
- *wait budget*: the longest a job may wait in the queue before it bursts; ``deadline`` is
  ``queued_at + budget`` (``inf`` for a job that never bursts).
- *pods*: the job runs as ``pods`` equal tasks (the Pods of one Kubernetes Job), each with
  ``gpus / pods`` GPUs. A pod cannot be cut across nodes, so a multi-node split gives every
  node whole pods. ``None`` (trace jobs, the paper's model): any split of the GPUs is allowed.
- *env*: extra environment variables for the job's command, ``extra["env"]``, a JSON object
  of strings (``job_env`` parses it for every backend; a malformed one is a ``PermanentError``).
- *after*: the jobs this one waits for before it enters the queue; *array* and
  *array_limit*: the array it belongs to and how many of its elements may run at once
  (``starburst.core.dependencies`` defines both; a job with either is *gated*);
  *array_index*: its index in the array (``--array 0-9``: 0 … 9), which breaks ties between
  elements that entered the queue at the same instant, so they start in index order.
- *cloud blocker*: ``extra["cloud_blocker"]``, why the job cannot run in a cloud, set by the
  cluster adapter that knows (a Kubernetes pod template with several containers, env from a
  Secret, a persistent volume...). Such a job never bursts: it waits for room on-prem, and
  fails with the reason if it can never fit there (``cloud_blocker`` reads it).

Invariants: jobs are immutable values; a job is identified by its ``id`` everywhere (ties in
every ordering end in the id, so the same input always gives the same decisions).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from starburst.core.columns import slot_setters
from starburst.core.dependencies import Dependency
from starburst.core.errors import PermanentError

#: the standard normal's 90th percentile: a p10–p90 band is ±Z90 σ in log space
Z90 = 1.2815515655446004
#: a band wider than this σ (p90/p10 ≈ 170×) says "unknown", not "enormous mean"
MAX_SIGMA = 2.0


@dataclass(frozen=True, slots=True)
class Job:
    """A request for ``gpus`` GPUs (and ``cpus``) for a runtime that may be unknown."""

    id: str
    submit_time: float
    gpus: int
    cpus: float = 0.0
    memory_mb: float = 0.0
    gpu_type: str | None = None
    runtime: float | None = None
    estimate: float | None = None
    user: str | None = None
    team: str | None = None
    name: str | None = None
    deadline: float | None = None
    pods: int | None = None
    extra: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    estimate_low: float | None = None
    estimate_high: float | None = None
    after: tuple[Dependency, ...] = ()
    array: str | None = None
    array_limit: int | None = None
    array_index: int | None = None

    @property
    def believed_runtime(self) -> float:
        """The runtime a policy plans with: the estimate, else the true runtime, else 0."""
        if self.estimate is not None:
            return self.estimate
        return self.runtime if self.runtime is not None else 0.0

    def submission_order(self) -> tuple[float, int, str]:
        """How jobs otherwise equal are ordered (``core.ordering``): submit time, array
        index, id — an array's elements by index, never by their random ids."""
        index = -1 if self.array_index is None else self.array_index
        return (self.submit_time, index, self.id)

    @property
    def split_unit(self) -> int:
        """The GPUs a multi-node split must keep together: one pod's, else 1 (any split)."""
        if self.pods and self.gpus % self.pods == 0:
            return max(self.gpus // self.pods, 1)
        return 1

    @property
    def expected_runtime(self) -> float:
        """Mean runtime under the estimate's band (see *expected runtime* above)."""
        mid, low, high = self.believed_runtime, self.estimate_low, self.estimate_high
        if low is None or high is None or not 0 < low <= high or mid <= 0:
            return mid
        sigma = min(math.log(high / low) / (2 * Z90), MAX_SIGMA)
        return mid * math.exp(sigma * sigma / 2)

    def with_estimate(
        self, estimate: float, low: float | None = None, high: float | None = None
    ) -> Job:
        """This job with an estimate (and its band, when the estimator gives one)."""
        return replace(self, estimate=estimate, estimate_low=low, estimate_high=high)


CLOUD_BLOCKER = "cloud_blocker"


def cloud_blocker(job: Job) -> str | None:
    """Why the job cannot run in a cloud, or None if nothing is known against it."""
    return job.extra.get(CLOUD_BLOCKER) or None


def job_env(job: Job) -> dict[str, str]:
    """The job's extra environment (``extra["env"]``); empty when it sets none."""
    raw = job.extra.get("env", "").strip()
    if not raw:
        return {}
    try:
        env = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise PermanentError(f"job {job.id}: extra['env'] is not JSON: {exc}") from None
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise PermanentError(f"job {job.id}: extra['env'] must be a JSON object of strings")
    return env


@dataclass(frozen=True, slots=True, init=False)
class QueuedJob:
    """A job in the queue: when it (re-)entered it and when its wait budget runs out.

    ``queued_at`` is the submit time, or the re-arrival time of a Star-Wait job that was pulled
    back from the cloud; FIFO order uses it. One is made per arrival: its ``__init__`` stores
    the fields through their slots' setters (``slot_setters``), not the generated frozen
    ``__init__`` and a ``__post_init__`` (``object.__setattr__`` per field).
    """

    job: Job
    queued_at: float
    budget: float
    deadline: float = field(init=False, compare=False)

    def __init__(self, job: Job, queued_at: float, budget: float) -> None:
        _set_job(self, job)
        _set_queued_at(self, queued_at)
        _set_budget(self, budget)
        _set_deadline(self, queued_at + budget if math.isfinite(budget) else math.inf)

    @property
    def id(self) -> str:
        return self.job.id


_set_job, _set_queued_at, _set_budget, _set_deadline = slot_setters(
    QueuedJob, "job", "queued_at", "budget", "deadline"
)
