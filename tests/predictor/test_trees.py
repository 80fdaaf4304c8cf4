"""The tree ensemble predicts what scikit-learn's ``predict`` does, to the bit, and steps aside
when it cannot be sure of that."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from starburst.core.job import Job
from starburst.predictor.artifact import ModelArtifact
from starburst.predictor.baselines import HistoryView
from starburst.predictor.estimator import ModelEstimator
from starburst.predictor.features import FeatureEncoder
from starburst.predictor.fitting import fit_regressors, openmp_threads
from starburst.predictor.history import HistoryIndex
from starburst.predictor.trees import TreeEnsemble, _codes
from tests.predictor.conftest import SMALL


@pytest.fixture(scope="module")
def fitted(
    split: tuple[list[Job], list[Job]],
) -> tuple[FeatureEncoder, tuple[Any, ...], np.ndarray]:
    """All four models (p10, p90, p50, residual) on the training jobs, and the test rows'
    features, among them users, teams and GPU types the training never saw."""
    train, test = split
    encoder = FeatureEncoder.fit(train)
    history = HistoryIndex(train)
    features = encoder.transform(train, history)
    features[:, np.isnan(features).all(axis=0)] = 0.0
    target = np.log(np.array([j.runtime for j in train], dtype=float))
    reference = HistoryView.of(train, history).centre("user-median-5", float(np.median(target)))
    with openmp_threads(1):
        models = fit_regressors(SMALL, encoder, features, target, reference, True, True)
    strangers = [replace(j, user="nobody", team="nowhere", gpu_type="Z100") for j in test[:50]]
    rows = encoder.transform([*test, *strangers], HistoryIndex(train + test))
    return encoder, tuple(models), rows


def test_every_model_predicts_the_same_bits_as_scikit_learn(
    fitted: tuple[FeatureEncoder, tuple[Any, ...], np.ndarray],
) -> None:
    encoder, models, rows = fitted
    trees = TreeEnsemble.compile(models, len(encoder.names))
    assert trees is not None
    assert len(trees.encodings) == 1  # fitted on one matrix: one re-encoding for all
    with openmp_threads(1):
        public = [model.predict(rows) for model in models]
    for mine, theirs in zip(trees.predict(rows), public, strict=True):
        assert np.array_equal(mine, theirs)


def test_models_fitted_on_different_rows_keep_their_own_re_encoding(
    fitted: tuple[FeatureEncoder, tuple[Any, ...], np.ndarray],
) -> None:
    encoder, models, rows = fitted
    # Half the rows, a few users only: a different set of categories seen in training.
    few = rows[np.isin(rows[:, encoder.names.index("user")], [0.0, 1.0])]
    target = np.log1p(np.arange(len(few), dtype=float))
    with openmp_threads(1):
        other = fit_regressors(SMALL, encoder, few, target, target, False, False)[0]
        public = [models[0].predict(rows), other.predict(rows)]
    trees = TreeEnsemble.compile([models[0], other], len(encoder.names))
    assert trees is not None
    assert len(trees.encodings) == 2
    mine = trees.predict(rows)
    assert np.array_equal(mine[0], public[0])
    assert np.array_equal(mine[1], public[1])


class Skewed:
    """A model whose public ``predict`` no longer matches its trees (as a scikit-learn release
    that changed what the ensemble reads would look)."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def predict(self, x: np.ndarray) -> np.ndarray:
        out: np.ndarray = self._model.predict(x) + 1e-9
        return out


def test_an_ensemble_that_disagrees_with_predict_on_the_probe_is_not_built(
    fitted: tuple[FeatureEncoder, tuple[Any, ...], np.ndarray],
) -> None:
    encoder, models, _ = fitted
    assert TreeEnsemble.compile([models[0], Skewed(models[1])], len(encoder.names)) is None


def test_models_without_the_internals_it_reads_get_no_ensemble(
    fitted: tuple[FeatureEncoder, tuple[Any, ...], np.ndarray],
) -> None:
    encoder, models, _ = fitted

    class Opaque:
        def predict(self, x: np.ndarray) -> np.ndarray:
            return np.zeros(len(x))

    assert TreeEnsemble.compile([models[0], Opaque()], len(encoder.names)) is None


def test_the_estimator_predicts_the_same_with_and_without_the_ensemble(
    artifact: ModelArtifact, split: tuple[list[Job], list[Job]]
) -> None:
    train, test = split
    estimator = ModelEstimator(artifact, HistoryIndex(train + test))
    assert estimator.trees is not None
    fast = estimator.predict(test)
    public = artifact.model.predict(test, estimator.history, None)
    for field in ("value", "low", "high"):
        assert np.array_equal(getattr(fast, field), getattr(public, field))


def test_a_category_is_its_index_among_those_seen_and_nan_otherwise() -> None:
    seen = np.array([0.0, 2.0, 5.0])
    codes = _codes(np.array([5.0, 0.0, 1.0, 9.0, np.nan, 2.0]), seen)
    assert np.array_equal(codes, [2.0, 0.0, np.nan, np.nan, np.nan, 1.0], equal_nan=True)
    assert np.isnan(_codes(np.array([0.0, 1.0]), np.zeros(0))).all()
