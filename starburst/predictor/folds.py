"""Out-of-fold runtime estimates over a history: what the model would have said at the time.

``starburst tune`` replays a period to choose the estimate budgets are computed from (p50, a
higher quantile, the mean; ``core.estimates``). The replay needs each job's estimate with its
band as the predictor would have given it *then*, never one informed by the job's own runtime
— an in-sample estimate is close to the oracle and would make long waits look safe.

Terms:
- *time-ordered folds*: the jobs in submit order cut into ``folds + 1`` consecutive blocks.
  Block 0 gets the cold-start chain (``FallbackEstimator``: the user's recent median, the
  global median, …); block k ≥ 1 gets a model trained only on the jobs submitted before it.
- *recorded estimate*: a job of the store's history carries the estimate the controller
  really gave it (``Job.estimate``). It keeps it — that is what the model said then, and
  replaying it reproduces the live run — and its band is the out-of-fold band's, scaled by
  the recorded estimate ÷ the out-of-fold one. A job without one gets the out-of-fold
  estimate itself.
- *history snapshot*: the history a job's estimate reads (the user's recent jobs, the global
  medians, the GPUs in flight) is the jobs finished by the submission of the first job of
  its chunk (``CHUNK`` consecutive jobs), with those submitted and still running as in
  flight, runtimes unknown — what the controller would have had; never the job itself.

Invariant: a job's estimate depends on no job submitted at or after its block's start
(other than through look-ups of jobs finished before its submission), and never on its own
runtime (``tests/predictor/test_folds.py`` changes one job's runtime and checks its estimate
does not move).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise

from starburst.core.errors import StarburstError
from starburst.core.job import Job
from starburst.core.ports import Estimate
from starburst.predictor.artifact import ModelArtifact
from starburst.predictor.estimator import FallbackEstimator, ModelEstimator
from starburst.predictor.history import HistoryIndex, finish_time
from starburst.predictor.model import TrainParams
from starburst.predictor.training import train_artifact

log = logging.getLogger(__name__)

DEFAULT_FOLDS = 4
#: jobs estimated from one snapshot of the history (at the first one's submission)
CHUNK = 16
#: at most this many snapshots per block on long histories (larger chunks)
SNAPSHOTS = 400


def out_of_fold(
    jobs: Sequence[Job], folds: int = DEFAULT_FOLDS, params: TrainParams | None = None
) -> list[Job]:
    """``jobs`` (in submit order) with out-of-fold estimates and bands (see the module)."""
    ordered = sorted(jobs, key=lambda j: (j.submit_time, j.id))
    n, k = len(ordered), max(folds, 0)
    edges = [n * i // (k + 1) for i in range(k + 2)]
    estimates: list[Estimate] = []
    for first, end in pairwise(edges):
        if end > first:
            estimates += as_of(_trained(ordered[:first], params), ordered, first, end)
    return [_with(j, e) for j, e in zip(ordered, estimates, strict=True)]


def as_of(
    artifact: ModelArtifact | None, ordered: Sequence[Job], first: int, end: int
) -> list[Estimate]:
    """Estimates of ``ordered[first:end]`` (jobs in submit order) as they would have been
    made then: each chunk of jobs from the history as it stood at the chunk's first
    submission — the jobs finished by then, and the ones submitted and not finished as in
    flight (their runtimes unknown). ``artifact`` None: the cold-start chain."""
    finish = [finish_time(j) for j in ordered[:end]]
    trees = artifact.model.trees() if artifact is not None else None
    chunk = max(CHUNK, (end - first) // SNAPSHOTS + 1)
    out: list[Estimate] = []
    for a in range(first, end, chunk):
        t = ordered[a].submit_time
        done = [j for j, f in zip(ordered[:a], finish, strict=False) if f <= t]
        running = [
            replace(j, runtime=None) for j, f in zip(ordered[:a], finish, strict=False) if f > t
        ]
        history = HistoryIndex(done, in_flight=running)
        estimator: FallbackEstimator | ModelEstimator
        if artifact is None:
            estimator = FallbackEstimator(history, reason="no model yet at this point")
        else:
            estimator = ModelEstimator(artifact, history, trees)
        asked = [replace(j, runtime=None, estimate=None) for j in ordered[a : min(a + chunk, end)]]
        out += estimator.estimate(asked)
    return out


def _with(job: Job, e: Estimate) -> Job:
    """``job`` with the out-of-fold estimate ``e``, or its recorded estimate with ``e``'s
    band scaled to it (see *recorded estimate*)."""
    recorded = job.estimate
    if recorded is None or not recorded > 0 or not e.value > 0:
        return job.with_estimate(e.value, e.low, e.high)
    scale = recorded / e.value
    return job.with_estimate(recorded, e.low * scale, e.high * scale)


def _trained(before: Sequence[Job], params: TrainParams | None) -> ModelArtifact | None:
    """A model trained on ``before``, or None (the cold-start chain) when they are too few."""
    if not before:
        return None
    try:
        return train_artifact(before, params, keep_history=False)
    except (StarburstError, ImportError) as exc:  # too few jobs, or no scikit-learn: as live
        log.info("out-of-fold block after %d jobs: %s; using the fallback chain", len(before), exc)
        return None
