"""The runtime model: gradient-boosted quantile regression of log runtime, in a chosen *form*.

``HistGradientBoostingRegressor(loss="quantile")`` models of log runtime on the submit-time
features (``features.FeatureEncoder``; user, team, image and GPU type are native categorical
splits): p10 and p90 for the band, always; p50 (*m*) and the residual over the reference
baseline (*r*) when the chosen *form* (``forms``) reads them. The form — the boosted p50, a
residual or blend over a history baseline, or the plain baseline — is chosen by
rolling-origin cross-validation (``selection``), so that on a bare trace the predictor is not
worse than the user's own history. Fitting is in ``fitting``.

Terms:
- *band*: [p10 − δ_lo, p90 + δ_hi], widened to contain the centre. The shifts (δ_lo, δ_hi)
  are conformal (conformalised quantile regression, one quantile per side): from the
  out-of-fold predictions of the form actually used, so that each side misses ≈ 10% of jobs
  and the band covers ≈ 80% (``band``, ``calibrate``).
- *training window*: first and last submit time of the training jobs.

Invariants: ``low ≤ value ≤ high`` always holds; log runtimes are clipped to 1 s … 30 days.
scikit-learn is imported when fitting (``fitting``) or unpickling a model, never by
``import starburst``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from starburst.core.errors import StarburstError
from starburst.core.job import Job
from starburst.predictor.baselines import HistoryView
from starburst.predictor.features import FeatureEncoder
from starburst.predictor.forms import centre
from starburst.predictor.history import HistoryIndex
from starburst.predictor.selection import FormChoice
from starburst.predictor.trees import TreeEnsemble

COVERAGE = 0.8
MIN_TRAINING_JOBS = 50
#: rows per prediction thread at least, and at most this many threads.
PARALLEL_ROWS = 2000
MAX_PREDICT_THREADS = 4
#: log-runtime clip: 1 second to 30 days.
LOG_FLOOR, LOG_CEIL = 0.0, math.log(30 * 86400.0)


class TrainingError(StarburstError):
    """Training cannot proceed (too few completed jobs, no runtimes)."""


@dataclass(frozen=True, slots=True)
class TrainParams:
    """Boosting and cross-validation settings (see ``fitting`` for what each step costs)."""

    max_iter: int = 60
    learning_rate: float = 0.2
    #: the p10/p90 models need fewer trees (conformal calibration corrects their level), and
    #: every tree costs prediction time: 60 + 2 × 15 trees keep a 10,000-job batch fast.
    band_iter: int = 15
    band_learning_rate: float = 0.4
    max_leaf_nodes: int = 31
    #: the residual model over the reference baseline (``forms``) is kept small and slow: on
    #: a bare trace it has little signal to find and much noise to overfit
    residual_iter: int = 100
    residual_learning_rate: float = 0.03
    residual_leaf_nodes: int = 8
    min_samples_leaf: int = 20
    #: 63 bins (not 255) halves training time at no cost in accuracy on the workloads tried.
    max_bins: int = 63
    #: rolling-origin cross-validation (``selection``): K folds whose validation blocks tile
    #: the training jobs after the first ``cv_start`` share, each block at least
    #: ``cv_min_jobs`` jobs (fewer folds otherwise)
    cv_folds: int = 4
    cv_start: float = 0.5
    cv_min_jobs: int = 20
    #: a fold's models train on at most its most recent ``cv_rows`` jobs (bounds the cost on a
    #: large history; the final models train on every job)
    cv_rows: int = 20_000
    #: how much lower (pooled CV MALR) than the best baseline a model form must be
    margin: float = 0.03
    seed: int = 0
    #: OpenMP threads for boosting (None: all cores). A daemon retraining next to its
    #: scheduling loop, or a shared test machine, should pass 1.
    threads: int | None = None


@dataclass(frozen=True, slots=True)
class Prediction:
    """Per-job runtime quantiles in seconds (numpy arrays of equal length)."""

    value: np.ndarray
    low: np.ndarray
    high: np.ndarray


def band(
    low: np.ndarray, mid: np.ndarray, high: np.ndarray, shift: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Clipped (low, centre, high) from raw p10, centre and p90 and the conformal shifts."""
    lo, mid, hi = (np.clip(q, LOG_FLOOR, LOG_CEIL) for q in (low, mid, high))
    return np.minimum(lo - shift[0], mid), mid, np.maximum(hi + shift[1], mid)


def calibrate(low: np.ndarray, high: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    """Conformal shifts (δ_lo, δ_hi) so that [low − δ_lo, high + δ_hi] (clipped as in
    ``band``) misses ≈ (1 − ``COVERAGE``)/2 of ``target`` on each side."""
    n = len(target)
    if n == 0:
        return 0.0, 0.0
    lo, hi = (np.clip(q, LOG_FLOOR, LOG_CEIL) for q in (low, high))
    level = min(1.0, math.ceil((n + 1) * (1.0 + COVERAGE) / 2.0) / n)
    return float(np.quantile(lo - target, level)), float(np.quantile(target - hi, level))


@dataclass(slots=True)
class RuntimeModel:
    """The fitted models, the chosen form and the band's conformal shifts.

    ``quantiles``: the p10 and p90 models; ``median``/``residual``: the p50 and the residual
    model, present only when the form reads them.
    """

    encoder: FeatureEncoder
    quantiles: tuple[Any, Any]
    form: FormChoice
    shift: tuple[float, float] = (0.0, 0.0)
    median: Any = None
    residual: Any = None
    global_log: float = 0.0

    def fitted(self) -> list[Any]:
        """The models a prediction runs: p10, p90, then p50 and the residual when present."""
        return [*self.quantiles, *(m for m in (self.median, self.residual) if m is not None)]

    def trees(self) -> TreeEnsemble | None:
        """The fitted models as one ``TreeEnsemble`` (None where it cannot be built)."""
        return TreeEnsemble.compile(self.fitted(), len(self.encoder.names))

    def predict_log(
        self, jobs: Sequence[Job], history: HistoryIndex, trees: TreeEnsemble | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Log-space (low, centre, high) under the chosen form, clipped, low ≤ centre ≤ high.

        ``trees`` (from ``trees()``) predicts the same as the models, faster."""
        view = HistoryView.of(jobs, history)
        raw = self._outputs(jobs, history, view, trees)
        low, high = raw[0], raw[1]
        extra = iter(raw[2:])
        m = next(extra) if self.median is not None else None
        r = next(extra) if self.residual is not None else None
        mid = centre(self.form.chosen, self.form.reference, view, self.global_log, m, r)
        return band(low, mid, high, self.shift)

    def _outputs(
        self,
        jobs: Sequence[Job],
        history: HistoryIndex,
        view: HistoryView,
        trees: TreeEnsemble | None,
    ) -> list[np.ndarray]:
        """A large batch is split over threads that each build their rows' features and run
        the trees: one thread's feature building (Python, holding the GIL) overlaps the other's
        tree walk (native, releasing it), and each tree walk uses one OpenMP thread (a
        10,000-row batch would otherwise pay a thread barrier per tree, 3–5× the work when
        another process holds a core). ``trees`` walks them without scikit-learn's per-model
        input checks. Rows are independent, so the result is the same."""
        walk = trees.predict if trees is not None else _one_thread_each(self.fitted())

        def run(rows: slice) -> list[np.ndarray]:
            return walk(self.encoder.transform(jobs[rows], history, view.rows(rows)))

        parts = min(os.cpu_count() or 1, MAX_PREDICT_THREADS, len(jobs) // PARALLEL_ROWS)
        if parts <= 1:
            return run(slice(None))
        from concurrent.futures import ThreadPoolExecutor

        size = -(-len(jobs) // parts)
        chunks = [slice(i, i + size) for i in range(0, len(jobs), size)]
        with ThreadPoolExecutor(len(chunks)) as pool:
            outs = list(pool.map(run, chunks))
        return [np.concatenate(parts) for parts in zip(*outs, strict=True)]

    def predict(
        self, jobs: Sequence[Job], history: HistoryIndex, trees: TreeEnsemble | None = None
    ) -> Prediction:
        if not jobs:
            empty = np.zeros(0)
            return Prediction(empty, empty, empty)
        low, mid, high = self.predict_log(jobs, history, trees)
        return Prediction(np.exp(mid), np.exp(low), np.exp(high))


def _one_thread_each(models: Sequence[Any]) -> Callable[[np.ndarray], list[np.ndarray]]:
    """Each model's public ``predict``, on one OpenMP thread."""
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()

    def walk(features: np.ndarray) -> list[np.ndarray]:
        with controller.limit(limits=1, user_api="openmp"):
            return [m.predict(features) for m in models]

    return walk


def completed(jobs: Sequence[Job]) -> list[Job]:
    """Jobs usable for training: a positive, finite runtime; in submit order."""
    done = [j for j in jobs if j.runtime is not None and 0 < j.runtime < math.inf]
    return sorted(done, key=lambda j: (j.submit_time, j.id))
