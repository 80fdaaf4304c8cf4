"""Runtime estimators the scheduler calls: the trained model, and the cold-start fallback chain.

Both implement ``starburst.core.ports.RuntimeEstimator`` (batch ``estimate(jobs)``). Every
``Estimate`` says where it came from in ``source``:

| source            | value                                  | band (low, high)                 |
|-------------------|----------------------------------------|----------------------------------|
| ``model:<ver>``   | the chosen form's centre (``forms``)   | conformal p10 … p90 (``model``)  |
| ``declared``      | the user's declared runtime            | declared / 4 … declared          |
| ``user-history``  | median of the user's last k jobs       | median ∓ ½ p10–p90 spread (log)  |
| ``global-median`` | median of all finished jobs            | their p10 … p90                  |
| ``default-prior`` | one hour (nothing known at all)        | 5 min … 12 h                     |

The fallback chain is tried in the order of the table's last four rows. A declared value is
usually an over-estimate (users pad ``--time``), hence its band reaches down to a quarter.

Invariants: ``estimate`` never raises for bad jobs — unseen users, images, GPU types and missing
optional fields are ordinary model inputs, and if the model itself fails (or yields a
non-finite value) the affected jobs get the fallback chain instead, with a logged reason.
``load_estimator`` never raises either: an unusable model file yields the fallback estimator
and a message saying why.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from starburst.core.errors import StarburstError
from starburst.core.job import Job
from starburst.core.ports import Estimate, RuntimeEstimator
from starburst.predictor.artifact import ModelArtifact, load_artifact
from starburst.predictor.features import declared_runtime
from starburst.predictor.history import HistoryIndex
from starburst.predictor.model import Prediction
from starburst.predictor.trees import TreeEnsemble

log = logging.getLogger(__name__)

DECLARED = "declared"
USER_HISTORY = "user-history"
GLOBAL_MEDIAN = "global-median"
DEFAULT_PRIOR = "default-prior"
DEFAULT_PRIOR_S = 3600.0
DEFAULT_BAND_S = (300.0, 12 * 3600.0)


class FallbackEstimator:
    """Cold start: declared estimate, else the user's history, else the global median."""

    def __init__(self, history: HistoryIndex | None = None, reason: str = "no model") -> None:
        self.history = history if history is not None else HistoryIndex([])
        self.reason = reason

    def estimate(self, jobs: Sequence[Job]) -> list[Estimate]:
        if not jobs:
            return []
        users = self.history.users(jobs)
        h = self.history
        out: list[Estimate] = []
        for i, job in enumerate(jobs):
            declared = declared_runtime(job)
            if declared is not None:
                out.append(Estimate(declared, declared / 4.0, declared, DECLARED))
            elif users.count[i] > 0:
                mid, half = float(users.median[i]), float(users.spread[i]) / 2.0
                out.append(
                    Estimate(
                        math.exp(mid), math.exp(mid - half), math.exp(mid + half), USER_HISTORY
                    )
                )
            elif h.global_median is not None and h.global_low and h.global_high:
                out.append(Estimate(h.global_median, h.global_low, h.global_high, GLOBAL_MEDIAN))
            else:
                out.append(Estimate(DEFAULT_PRIOR_S, *DEFAULT_BAND_S, DEFAULT_PRIOR))
        return out


class ModelEstimator:
    """The trained model, over a history of completed jobs (the artifact's, or a fresher one)."""

    def __init__(
        self,
        artifact: ModelArtifact,
        history: HistoryIndex | None = None,
        trees: TreeEnsemble | None = None,
    ) -> None:
        """``trees``: the model's ``TreeEnsemble`` when the caller has it (built otherwise)."""
        self.artifact = artifact
        if history is None:
            history = artifact.history if artifact.history is not None else HistoryIndex([])
        self.history = history
        self.fallback = FallbackEstimator(self.history, reason="model failed on these jobs")
        self.source = f"model:{artifact.version}"
        self.trees = trees if trees is not None else artifact.model.trees()

    def with_history(self, completed_jobs: Sequence[Job]) -> ModelEstimator:
        """The same model over a fresh history (e.g. the store's recently finished jobs)."""
        return ModelEstimator(self.artifact, HistoryIndex(completed_jobs), self.trees)

    def predict(self, jobs: Sequence[Job]) -> Prediction:
        """Quantile arrays in seconds; may raise — ``estimate`` is the never-raising wrapper."""
        return self.artifact.model.predict(jobs, self.history, self.trees)

    def estimate(self, jobs: Sequence[Job]) -> list[Estimate]:
        if not jobs:
            return []
        try:
            pred = self.predict(jobs)
        except Exception as exc:  # a model bug must not stop the scheduler
            log.warning(
                "runtime model %s failed (%s: %s); using the fallback chain",
                self.artifact.version,
                type(exc).__name__,
                exc,
            )
            return self.fallback.estimate(jobs)
        ok = np.isfinite(pred.value) & np.isfinite(pred.low) & np.isfinite(pred.high)
        out = [
            Estimate(float(v), float(lo), float(hi), self.source)
            for v, lo, hi in zip(
                pred.value.tolist(), pred.low.tolist(), pred.high.tolist(), strict=True
            )
        ]
        if not ok.all():
            bad = [i for i in range(len(jobs)) if not ok[i]]
            for i, est in zip(bad, self.fallback.estimate([jobs[i] for i in bad]), strict=True):
                out[i] = est
        return out


@dataclass(frozen=True, slots=True)
class LoadedEstimator:
    """What start-up got: the estimator to use and a one-line message for the log."""

    estimator: RuntimeEstimator
    message: str
    artifact: ModelArtifact | None = None


def load_estimator(
    path: str | Path | None, completed_jobs: Sequence[Job] | None = None
) -> LoadedEstimator:
    """At start-up: the model at ``path`` if it loads, else the fallback chain (never raises).

    ``completed_jobs`` (e.g. the store's history) replaces the artifact's own history
    snapshot for the user-history features and the fallback.
    """
    history = HistoryIndex(completed_jobs) if completed_jobs is not None else None
    if path is None:
        return LoadedEstimator(
            FallbackEstimator(history, "no model configured"),
            "no runtime model configured; using the fallback chain "
            "(declared → user history → global median)",
        )
    try:
        artifact = load_artifact(path)
    except StarburstError as exc:
        message = f"{exc}; using the fallback chain (declared → user history → global median)"
        log.warning("%s", message)
        return LoadedEstimator(FallbackEstimator(history, str(exc)), message)
    estimator = ModelEstimator(artifact, history)
    return LoadedEstimator(
        estimator, f"runtime model {artifact.version} loaded from {path}", artifact
    )


def with_estimates(
    jobs: Sequence[Job], estimates: Sequence[Estimate], use: str = "value"
) -> list[Job]:
    """Jobs whose ``estimate`` (what the waiting policy sees) is the chosen quantile, with the
    estimate's band (``compute-expected`` reads it; the other policies ignore it)."""
    if use not in ("value", "low", "high"):
        raise StarburstError(f"use must be value, low or high, not {use!r}")
    return [
        j.with_estimate(getattr(e, use), e.low, e.high)
        for j, e in zip(jobs, estimates, strict=True)
    ]
