"""Fitting the runtime model: one feature matrix, rolling-origin cross-validation to choose the
form and calibrate the band, then the final models.

Steps of ``fit_model`` (terms as in ``selection`` and ``model``):
1. Features of every training job, from a history over the training jobs themselves: each
   row sees only jobs that finished before it was submitted, exactly what it would have seen
   live, so one matrix serves every fold. (Category vocabularies are fitted once on all the
   training jobs: which users exist, never their runtimes.)
2. The folds (``selection.rolling_folds``). Every baseline is scored on the validation jobs
   (g = the fold's training median) and the best is the *reference*.
3. Per fold, the p10, p50 and p90 models and the residual model over the reference are fitted
   on the fold's training jobs (the most recent ``cv_rows`` at most) and predict its block:
   the out-of-fold (OOF) centre of every form and the OOF band.
4. The form is chosen on them (``selection.choose``); the band's conformal shifts are
   calibrated on the chosen form's OOF predictions (``model.calibrate``).
5. The final models — p10 and p90, and the p50 or residual model only if the form reads
   them — are fitted on every training job.

*CV metrics* (``CrossValidation.metrics``, what the artifact records): the chosen form's OOF
MALR and within-2× over every validation job; the band's coverage over them (in sample for the
calibration: ≈ 0.8 by construction), and on the last fold when calibrated on the earlier ones
only — an out-of-sample check of the band.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from starburst.core.job import Job
from starburst.predictor.baselines import BASELINES, HistoryView
from starburst.predictor.features import MAX_CATEGORIES, FeatureEncoder
from starburst.predictor.forms import model_centres
from starburst.predictor.history import HistoryIndex
from starburst.predictor.model import (
    LOG_CEIL,
    LOG_FLOOR,
    MIN_TRAINING_JOBS,
    RuntimeModel,
    TrainingError,
    TrainParams,
    band,
    calibrate,
    completed,
)
from starburst.predictor.selection import FormChoice, best_baseline, choose, rolling_folds

LN2 = math.log(2.0)


@dataclass(frozen=True, slots=True)
class CrossValidation:
    """The OOF predictions of the chosen form over the validation jobs (log seconds)."""

    choice: FormChoice
    target: np.ndarray
    centre: np.ndarray
    low: np.ndarray
    high: np.ndarray
    blocks: tuple[tuple[int, int], ...]

    def metrics(self, shift: tuple[float, float]) -> dict[str, float]:
        low, mid, high = band(self.low, self.centre, self.high, shift)
        err = np.abs(mid - self.target)
        a, b = self.blocks[-1]
        out = {
            "cv_folds": float(len(self.blocks)),
            "cv_jobs": float(len(self.target)),
            "cv_malr": float(np.median(err)),
            "cv_within_2x": float(np.mean(err <= LN2)),
            "cv_coverage_calibrated_on": _covered(low, high, self.target),
        }
        if len(self.blocks) > 1:
            early = calibrate(self.low[:a], self.high[:a], self.target[:a])
            lo, _, hi = band(self.low[a:b], self.centre[a:b], self.high[a:b], early)
            out["cv_coverage_last_fold"] = _covered(lo, hi, self.target[a:b])
        for name, score in self.choice.scores.items():
            out[f"cv_malr[{name}]"] = score
        return out


def _covered(low: np.ndarray, high: np.ndarray, target: np.ndarray) -> float:
    return float(np.mean((low <= target) & (target <= high)))


@dataclass(frozen=True, slots=True)
class Fitted:
    """A fitted model, the cross-validation it was chosen and calibrated on, and the history
    index of its training jobs."""

    model: RuntimeModel
    cv: CrossValidation
    history: HistoryIndex


def fit_model(jobs: Sequence[Job], params: TrainParams | None = None) -> RuntimeModel:
    """Train on completed jobs (any order; those without a runtime are skipped)."""
    return fit_with_validation(jobs, params).model


def fit_with_validation(jobs: Sequence[Job], params: TrainParams | None = None) -> Fitted:
    """Train, and keep what training measured (see the module docstring)."""
    params = params or TrainParams()
    if params.max_bins < MAX_CATEGORIES + 1:
        raise TrainingError(
            f"max_bins must be at least {MAX_CATEGORIES + 1} (the categories "
            "of a column plus 'other')"
        )
    done = completed(jobs)
    if len(done) < MIN_TRAINING_JOBS:  # refused before scikit-learn's 1-3 s import
        raise TrainingError(
            f"need at least {MIN_TRAINING_JOBS} completed jobs with a runtime to train, "
            f"got {len(done)}"
        )
    with openmp_threads(params.threads):
        return _fit(done, params)


@contextmanager
def openmp_threads(threads: int | None) -> Iterator[None]:
    """Run scikit-learn's native work on ``threads`` OpenMP threads (None: its default, one
    per core). threadpoolctl limits the pools of the libraries loaded when the limit is
    entered: scikit-learn's OpenMP runtime is loaded first, or a fresh process trains on one
    thread per core."""
    import sklearn.ensemble  # noqa: F401
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads, user_api="openmp"):
        yield


def _fit(done: Sequence[Job], params: TrainParams) -> Fitted:
    encoder = FeatureEncoder.fit(done)
    history = HistoryIndex(done)
    view = HistoryView.of(done, history)
    features = encoder.transform(done, history, view)
    # A column no training job has (no declarations, no commands in a bare trace) is constant
    # to the boosting; scikit-learn's binning cannot take an all-missing numeric column.
    features[:, np.isnan(features).all(axis=0)] = 0.0
    target = np.log(np.array([j.runtime for j in done], dtype=float))
    cv = _cross_validate(params, encoder, features, target, view)
    shift = calibrate(cv.low, cv.high, cv.target)
    choice = cv.choice
    global_log = float(np.median(target))
    reference = view.centre(choice.reference, global_log)
    fitted = fit_regressors(
        params, encoder, features, target, reference, choice.needs_median, choice.needs_residual
    )
    model = RuntimeModel(encoder, fitted[:2], choice, shift, *fitted[2:], global_log)
    return Fitted(model, cv, history)


def _cross_validate(
    params: TrainParams,
    encoder: FeatureEncoder,
    features: np.ndarray,
    target: np.ndarray,
    view: HistoryView,
) -> CrossValidation:
    folds = rolling_folds(len(target), params.cv_folds, params.cv_start, params.cv_min_jobs)
    first = folds[0][0]
    y = target[first:]
    blocks = tuple((a - first, b - first) for a, b in folds)
    globals_ = [float(np.median(target[:a])) for a, _ in folds]
    base: dict[str, list[np.ndarray]] = {n: [] for n in BASELINES}
    for (a, b), g in zip(folds, globals_, strict=True):
        for name, c in view.rows(slice(a, b)).centres(g).items():
            base[name].append(c)
    candidates = {n: np.concatenate(parts) for n, parts in base.items()}
    reference = best_baseline(candidates, y)
    parts: dict[str, list[np.ndarray]] = {}
    lows, highs = [], []
    for (a, b), g in zip(folds, globals_, strict=True):
        ref = view.centre(reference, g)
        fit = slice(max(0, a - params.cv_rows), a)
        models = fit_regressors(params, encoder, features[fit], target[fit], ref[fit], True, True)
        out = [np.clip(m.predict(features[a:b]), LOG_FLOOR, LOG_CEIL) for m in models[:3]]
        r = models[3].predict(features[a:b])
        lows.append(out[0])
        highs.append(out[1])
        n = view.users.count[a:b]
        for name, c in model_centres(out[2], r, ref[a:b], n).items():
            parts.setdefault(name, []).append(c)
    candidates.update({n: np.concatenate(p) for n, p in parts.items()})
    choice = choose(candidates, y, blocks, reference, params.margin, params.seed)
    centre = np.clip(candidates[choice.chosen], LOG_FLOOR, LOG_CEIL)
    return CrossValidation(choice, y, centre, np.concatenate(lows), np.concatenate(highs), blocks)


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


def fit_regressors(
    params: TrainParams,
    encoder: FeatureEncoder,
    features: np.ndarray,
    target: np.ndarray,
    reference: np.ndarray,
    median: bool,
    residual: bool,
) -> tuple[Any, Any, Any, Any]:
    """The p10 and p90 models of log runtime, and (when asked) the p50 model and the residual
    model over ``reference`` (None when not asked)."""
    low, high = (
        _regressor(
            params, encoder, q, params.band_iter, params.band_learning_rate, params.min_samples_leaf
        ).fit(features, target)
        for q in (0.1, 0.9)
    )
    mid = None
    if median:
        mid = _regressor(
            params, encoder, 0.5, params.max_iter, params.learning_rate, params.min_samples_leaf
        ).fit(features, target)
    res = None
    if residual:
        res = _regressor(
            replace(params, max_leaf_nodes=params.residual_leaf_nodes),
            encoder,
            0.5,
            params.residual_iter,
            params.residual_learning_rate,
            2 * params.min_samples_leaf,
        ).fit(features, target - reference)
    return low, high, mid, res
