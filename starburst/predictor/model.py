"""The runtime model: gradient-boosted quantile regression of log runtime, in a chosen *form*.

Three ``HistGradientBoostingRegressor(loss="quantile")`` models predict the p10, p50 and p90 of
log runtime from the submit-time features (``features.FeatureEncoder``); user, team, image and
GPU type are native categorical splits. A fourth, small and slow, predicts the *residual* of
log runtime over the user's recent median. How these and the history baselines combine into
the estimate is the model's *form* (``forms``): the boosted p50, the residual over the user's
median, a blend, or a plain baseline — whichever the held-out slice says, so that on a bare
trace the predictor is not worse than the user's own history.

Terms:
- *held-out slice*: the most recent ``calibration_share`` of the training jobs (by submit
  time), held out of a first fit. On it the form is chosen and the band is calibrated by
  conformalised quantile regression (CQR: the (1−α) quantile of max(p10 − y, y − p90)), so
  the p10–p90 band covers ≈ 80% of *recent* jobs. Then the trees are refitted on every
  training job, the most recent ones being the most telling on a drifting workload.
- *training window*: first and last submit time of the training jobs.

Invariants: features of training jobs come from a ``HistoryIndex`` over the training jobs
themselves, so each row sees only jobs that finished before it was submitted — exactly what
it would have seen live. ``low ≤ value ≤ high`` always holds. scikit-learn is imported inside
``fit_model`` only; unpickling a model imports it too, never ``import starburst``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from starburst.core.errors import StarburstError
from starburst.core.job import Job
from starburst.predictor.features import MAX_CATEGORIES, FeatureEncoder
from starburst.predictor.forms import (
    SEGMENTS,
    Baselines,
    FormChoice,
    apply,
    baseline_scores,
    centres,
    choose,
)
from starburst.predictor.history import HistoryIndex

QUANTILES = (0.1, 0.5, 0.9)
COVERAGE = 0.8
MIN_TRAINING_JOBS = 50
#: at least this many held-out jobs choose the form and calibrate the band
MIN_HOLDOUT = 30
#: rows per prediction thread at least, and at most this many threads.
PARALLEL_ROWS = 2000
MAX_PREDICT_THREADS = 4
#: log-runtime clip: 1 second to 30 days.
LOG_FLOOR, LOG_CEIL = 0.0, math.log(30 * 86400.0)


class TrainingError(StarburstError):
    """Training cannot proceed (too few completed jobs, no runtimes)."""


@dataclass(frozen=True, slots=True)
class TrainParams:
    """Boosting settings; the defaults train 100,000 jobs in seconds on two cores."""

    max_iter: int = 60
    learning_rate: float = 0.2
    #: the p10/p90 models need fewer trees (conformal calibration corrects their level), and
    #: every tree costs prediction time: 60 + 2 × 15 trees keep a 10,000-job batch fast.
    band_iter: int = 15
    band_learning_rate: float = 0.4
    max_leaf_nodes: int = 31
    #: the residual model over the user's median (``forms``) is kept small and slow: on a
    #: bare trace it has little signal to find and much noise to overfit
    residual_iter: int = 100
    residual_learning_rate: float = 0.03
    residual_leaf_nodes: int = 8
    min_samples_leaf: int = 20
    #: 63 bins (not 255) halves training time at no cost in accuracy on the workloads tried.
    max_bins: int = 63
    #: the most recent share of the training jobs held out to choose the form and
    #: calibrate the band (``forms``)
    calibration_share: float = 0.25
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


@dataclass(slots=True)
class RuntimeModel:
    encoder: FeatureEncoder
    regressors: tuple[Any, Any, Any]
    widen: float
    #: the residual model over the user's recent median (``forms``), None if unused
    residual: Any = None
    form: FormChoice = field(default_factory=lambda: FormChoice({s: "model" for s in SEGMENTS}))
    global_log: float = 0.0

    def _active(self) -> list[Any]:
        return [*self.regressors, *([self.residual] if self.form.needs_residual else [])]

    def predict_log(
        self, jobs: Sequence[Job], history: HistoryIndex
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Log-space (low, centre, high) under the chosen form, clipped, low ≤ centre ≤ high."""
        return self._bounded(self._outputs(jobs, history), jobs, history)

    def _bounded(
        self,
        raw: list[np.ndarray],
        jobs: Sequence[Job],
        history: HistoryIndex,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        low, mid, high = (np.clip(q, LOG_FLOOR, LOG_CEIL) for q in raw[:3])
        base = Baselines.of(jobs, history, self.global_log)
        residual = raw[3] if len(raw) > 3 else None
        centre = np.clip(
            apply(self.form, centres(mid, residual, base, self.global_log), base.known),
            LOG_FLOOR,
            LOG_CEIL,
        )
        lower = np.maximum(mid - low, 0.0) + self.widen
        upper = np.maximum(high - mid, 0.0) + self.widen
        return (np.minimum(centre - lower, centre), centre, np.maximum(centre + upper, centre))

    def _outputs(self, jobs: Sequence[Job], history: HistoryIndex) -> list[np.ndarray]:
        """A large batch is split over threads that each build their rows' features and run
        the trees: one thread's feature building (Python, holding the GIL) overlaps the other's
        tree walk (native, releasing it), and each tree walk uses one OpenMP thread (a
        10,000-row batch would otherwise pay a thread barrier per tree, 3–5× the work when
        another process holds a core). Rows are independent, so the result is the same."""
        from threadpoolctl import ThreadpoolController

        controller = ThreadpoolController()
        active = self._active()

        def run(chunk: Sequence[Job]) -> list[np.ndarray]:
            features = self.encoder.transform(chunk, history)
            with controller.limit(limits=1, user_api="openmp"):
                return [r.predict(features) for r in active]

        parts = min(os.cpu_count() or 1, MAX_PREDICT_THREADS, len(jobs) // PARALLEL_ROWS)
        if parts <= 1:
            return run(jobs)
        from concurrent.futures import ThreadPoolExecutor

        size = -(-len(jobs) // parts)
        chunks = [jobs[i : i + size] for i in range(0, len(jobs), size)]
        with ThreadPoolExecutor(len(chunks)) as pool:
            outs = list(pool.map(run, chunks))
        return [np.concatenate([o[k] for o in outs]) for k in range(len(active))]

    def predict(self, jobs: Sequence[Job], history: HistoryIndex) -> Prediction:
        if not jobs:
            empty = np.zeros(0)
            return Prediction(empty, empty, empty)
        low, mid, high = self.predict_log(jobs, history)
        return Prediction(np.exp(mid), np.exp(low), np.exp(high))


def completed(jobs: Sequence[Job]) -> list[Job]:
    """Jobs usable for training: a positive, finite runtime; in submit order."""
    done = [j for j in jobs if j.runtime is not None and 0 < j.runtime < math.inf]
    return sorted(done, key=lambda j: (j.submit_time, j.id))


def fit_model(jobs: Sequence[Job], params: TrainParams | None = None) -> RuntimeModel:
    """Train on completed jobs (any order; those without a runtime are skipped)."""
    from threadpoolctl import threadpool_limits

    params = params or TrainParams()
    if params.max_bins < MAX_CATEGORIES + 1:
        raise TrainingError(
            f"max_bins must be at least {MAX_CATEGORIES + 1} (the categories "
            "of a column plus 'other')"
        )
    with threadpool_limits(limits=params.threads, user_api="openmp"):
        return _fit(jobs, params)


def _regressor(
    params: TrainParams, encoder: FeatureEncoder, q: float, iters: int, rate: float, leaf: int
) -> Any:
    from sklearn.ensemble import HistGradientBoostingRegressor

    return HistGradientBoostingRegressor(
        loss="quantile",
        quantile=q,
        max_iter=iters,
        learning_rate=rate,
        max_leaf_nodes=params.max_leaf_nodes,
        max_bins=params.max_bins,
        min_samples_leaf=leaf,
        early_stopping=False,
        categorical_features=encoder.categorical_mask,
        random_state=params.seed,
    )


def holdout_start(n: int, params: TrainParams) -> int:
    """Index of the first held-out (most recent) training job."""
    return n - max(int(n * params.calibration_share), MIN_HOLDOUT)


def _fit(jobs: Sequence[Job], params: TrainParams) -> RuntimeModel:
    done = completed(jobs)
    if len(done) < MIN_TRAINING_JOBS:
        raise TrainingError(
            f"need at least {MIN_TRAINING_JOBS} completed jobs with a runtime to train, "
            f"got {len(done)}"
        )
    encoder = FeatureEncoder.fit(done)
    history = HistoryIndex(done)
    features = encoder.transform(done, history)
    # A column no training job has (no declarations, no commands in a bare trace) is constant
    # to the boosting; scikit-learn's binning cannot take an all-missing numeric column.
    features[:, np.isnan(features).all(axis=0)] = 0.0
    target = np.log(np.array([j.runtime for j in done], dtype=float))
    cut = holdout_start(len(done), params)
    global_log = float(np.median(target[:cut]))
    base = Baselines.of(done, history, global_log)
    first = _regressors(params, encoder, features[:cut], target[:cut], base.user[:cut])
    held = Baselines(base.user[cut:], base.shrunk[cut:], base.known[cut:])
    mid = np.clip(first[1].predict(features[cut:]), LOG_FLOOR, LOG_CEIL)
    candidates = centres(mid, first[3].predict(features[cut:]), held, global_log)
    choice = choose(candidates, target[cut:], held.known, baseline_scores(base, target, global_log))
    model = RuntimeModel(encoder, first[:3], 0.0, first[3], choice, global_log)
    model.widen = conformal_widening(model, done[cut:], history, target[cut:])
    # The form and the band are settled on the slice; the trees are refitted on every job,
    # because the most recent jobs are the most telling on a drifting workload.
    final = _regressors(params, encoder, features, target, base.user)
    model.regressors = final[:3]
    model.residual = final[3] if choice.needs_residual else None
    return model


def _regressors(
    params: TrainParams,
    encoder: FeatureEncoder,
    features: np.ndarray,
    target: np.ndarray,
    user: np.ndarray,
) -> tuple[Any, Any, Any, Any]:
    """The p10, p50 and p90 models of log runtime and the residual model over ``user``."""
    low, mid, high = (
        _regressor(
            params,
            encoder,
            q,
            params.max_iter if q == 0.5 else params.band_iter,
            params.learning_rate if q == 0.5 else params.band_learning_rate,
            params.min_samples_leaf,
        ).fit(features, target)
        for q in QUANTILES
    )
    residual = _regressor(
        replace(params, max_leaf_nodes=params.residual_leaf_nodes),
        encoder,
        0.5,
        params.residual_iter,
        params.residual_learning_rate,
        2 * params.min_samples_leaf,
    ).fit(features, target - user)
    return low, mid, high, residual


def conformal_widening(
    model: RuntimeModel, jobs: Sequence[Job], history: HistoryIndex, target: np.ndarray
) -> float:
    """CQR: how much to widen the p10–p90 band (log space) for ``COVERAGE`` on held-out rows."""
    low, _, high = model.predict_log(jobs, history)
    scores = np.maximum(low - target, target - high)
    n = len(scores)
    level = min(1.0, math.ceil((n + 1) * COVERAGE) / n)
    return float(np.quantile(scores, level))
