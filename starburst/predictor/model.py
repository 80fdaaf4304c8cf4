"""The runtime model: gradient-boosted quantile regression of log runtime, conformally calibrated.

Three ``HistGradientBoostingRegressor(loss="quantile")`` models predict the p10, p50 and p90 of
log runtime from the submit-time features (``features.FeatureEncoder``); user, team, image and
GPU type are native categorical splits. The point estimate is the p50 (the median minimises the
absolute log-ratio error the evaluation reports).

Terms:
- *calibration split*: the most recent ``calibration_share`` of the training jobs (by submit
  time) is held out of the fit; the band is widened (or narrowed) there by conformalised
  quantile regression (CQR: the (1−α) quantile of max(p10 − y, y − p90)), so the p10–p90 band
  covers ≈ 80% of *recent* jobs even when the quantile models are over- or under-confident.
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
from dataclasses import dataclass
from typing import Any

import numpy as np

from starburst.core.errors import StarburstError
from starburst.core.job import Job
from starburst.predictor.features import MAX_CATEGORIES, FeatureEncoder
from starburst.predictor.history import HistoryIndex

QUANTILES = (0.1, 0.5, 0.9)
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
    """Boosting settings; the defaults train 100,000 jobs in seconds on two cores."""

    max_iter: int = 60
    learning_rate: float = 0.2
    #: the p10/p90 models need fewer trees (conformal calibration corrects their level), and
    #: every tree costs prediction time: 60 + 2 × 15 trees keep a 10,000-job batch fast.
    band_iter: int = 15
    band_learning_rate: float = 0.4
    max_leaf_nodes: int = 31
    min_samples_leaf: int = 20
    #: 63 bins (not 255) halves training time at no cost in accuracy on the workloads tried.
    max_bins: int = 63
    calibration_share: float = 0.1
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

    def predict_log(self, features: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Log-space (low, median, high), clipped, with low ≤ median ≤ high."""
        return self._bounded(self._raw(features))

    def _bounded(self, raw: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        low, mid, high = (np.clip(q, LOG_FLOOR, LOG_CEIL) for q in raw)
        low = np.minimum(low - self.widen, mid)
        high = np.maximum(high + self.widen, mid)
        return low, mid, high

    def _raw(self, features: np.ndarray) -> list[np.ndarray]:
        """The three models' outputs, rows split over Python threads of one OpenMP thread each.

        scikit-learn parallelises each tree with OpenMP; a 10,000-row batch then pays a thread
        barrier per tree, which costs 3–5× the work when another process holds a core. Row
        chunks on plain threads (the tree walk releases the GIL) are as fast when the machine
        is idle and degrade gracefully when it is not.
        """
        from concurrent.futures import ThreadPoolExecutor

        from threadpoolctl import ThreadpoolController

        controller = ThreadpoolController()

        def run(chunk: np.ndarray) -> list[np.ndarray]:
            with controller.limit(limits=1, user_api="openmp"):
                return [r.predict(chunk) for r in self.regressors]

        parts = min(os.cpu_count() or 1, MAX_PREDICT_THREADS, len(features) // PARALLEL_ROWS)
        if parts <= 1:
            return run(features)
        chunks = np.array_split(features, parts)
        with ThreadPoolExecutor(parts) as pool:
            outs = list(pool.map(run, chunks))
        return [np.concatenate([o[k] for o in outs]) for k in range(len(self.regressors))]

    def predict(self, jobs: Sequence[Job], history: HistoryIndex) -> Prediction:
        """A large batch is split over threads that each build their rows' features and run
        the trees: one thread's feature building (Python, holding the GIL) overlaps the other's
        tree walk (native, releasing it). Rows are independent, so the result is the same."""
        if not jobs:
            empty = np.zeros(0)
            return Prediction(empty, empty, empty)
        parts = min(os.cpu_count() or 1, MAX_PREDICT_THREADS, len(jobs) // PARALLEL_ROWS)
        if parts <= 1:
            raw = self._raw(self.encoder.transform(jobs, history))
        else:
            from concurrent.futures import ThreadPoolExecutor

            from threadpoolctl import ThreadpoolController

            controller = ThreadpoolController()

            def run(chunk: Sequence[Job]) -> list[np.ndarray]:
                features = self.encoder.transform(chunk, history)
                with controller.limit(limits=1, user_api="openmp"):
                    return [r.predict(features) for r in self.regressors]

            size = -(-len(jobs) // parts)
            chunks = [jobs[i:i + size] for i in range(0, len(jobs), size)]
            with ThreadPoolExecutor(len(chunks)) as pool:
                outs = list(pool.map(run, chunks))
            raw = [np.concatenate([o[k] for o in outs]) for k in range(len(self.regressors))]
        low, mid, high = self._bounded(raw)
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
        raise TrainingError(f"max_bins must be at least {MAX_CATEGORIES + 1} (the categories "
                            "of a column plus 'other')")
    with threadpool_limits(limits=params.threads, user_api="openmp"):
        return _fit(jobs, params)


def _fit(jobs: Sequence[Job], params: TrainParams) -> RuntimeModel:
    from sklearn.ensemble import HistGradientBoostingRegressor

    done = completed(jobs)
    if len(done) < MIN_TRAINING_JOBS:
        raise TrainingError(
            f"need at least {MIN_TRAINING_JOBS} completed jobs with a runtime to train, "
            f"got {len(done)}"
        )
    encoder = FeatureEncoder.fit(done)
    features = encoder.transform(done, HistoryIndex(done))
    # A column no training job has (no declarations, no commands in a bare trace) is constant
    # to the boosting; scikit-learn's binning cannot take an all-missing numeric column.
    features[:, np.isnan(features).all(axis=0)] = 0.0
    target = np.log(np.array([j.runtime for j in done], dtype=float))
    cut = len(done) - max(int(len(done) * params.calibration_share), 20)
    regressors = tuple(
        HistGradientBoostingRegressor(
            loss="quantile", quantile=q,
            max_iter=params.max_iter if q == 0.5 else params.band_iter,
            learning_rate=params.learning_rate if q == 0.5 else params.band_learning_rate,
            max_leaf_nodes=params.max_leaf_nodes, max_bins=params.max_bins,
            min_samples_leaf=params.min_samples_leaf, early_stopping=False,
            categorical_features=encoder.categorical_mask, random_state=params.seed,
        ).fit(features[:cut], target[:cut])
        for q in QUANTILES
    )
    model = RuntimeModel(encoder, (regressors[0], regressors[1], regressors[2]), 0.0)
    model.widen = conformal_widening(model, features[cut:], target[cut:])
    return model


def conformal_widening(model: RuntimeModel, features: np.ndarray, target: np.ndarray) -> float:
    """CQR: how much to widen the p10–p90 band (log space) for ``COVERAGE`` on held-out rows."""
    low, _, high = model.predict_log(features)
    scores = np.maximum(low - target, target - high)
    n = len(scores)
    level = min(1.0, math.ceil((n + 1) * COVERAGE) / n)
    return float(np.quantile(scores, level))
