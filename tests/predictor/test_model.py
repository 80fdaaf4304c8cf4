"""The quantile model: it learns the workload's structure, keeps its band ordered and honest."""

from __future__ import annotations

import numpy as np
import pytest

from starburst.core.job import Job
from starburst.predictor.artifact import ModelArtifact
from starburst.predictor.fitting import fit_model
from starburst.predictor.history import HistoryIndex
from starburst.predictor.model import TrainingError
from tests.predictor.conftest import SMALL


def test_model_beats_the_users_recent_median(
    artifact: ModelArtifact, split: tuple[list[Job], list[Job]]
) -> None:
    train, test = split
    history = HistoryIndex(train + test)
    pred = artifact.model.predict(test, history)
    truth = np.log([j.runtime for j in test])
    model_err = np.median(np.abs(np.log(pred.value) - truth))
    users = history.users(test)
    fallback = np.median(np.log([j.runtime for j in train]))
    baseline = np.where(users.count > 0, users.median, fallback)
    base_err = np.median(np.abs(baseline - truth))
    assert model_err < 0.75 * base_err


def test_band_is_ordered_and_covers_about_eighty_percent(
    artifact: ModelArtifact, split: tuple[list[Job], list[Job]]
) -> None:
    train, test = split
    pred = artifact.model.predict(test, HistoryIndex(train + test))
    assert (pred.low <= pred.value).all() and (pred.value <= pred.high).all()
    truth = np.array([j.runtime for j in test])
    coverage = np.mean((pred.low <= truth) & (truth <= pred.high))
    assert 0.65 <= coverage <= 0.95


def test_empty_batch_and_too_little_history(workload: list[Job]) -> None:
    with pytest.raises(TrainingError, match="at least"):
        fit_model(workload[:10])
    no_runtime = [Job(id=f"x{i}", submit_time=float(i), gpus=1) for i in range(100)]
    with pytest.raises(TrainingError):
        fit_model(no_runtime)


def test_empty_prediction(artifact: ModelArtifact) -> None:
    pred = artifact.model.predict([], HistoryIndex([]))
    assert len(pred.value) == 0


def test_bare_trace_without_optional_fields_trains_and_predicts() -> None:
    rng = np.random.default_rng(1)
    jobs = [
        Job(id=f"b{i}", submit_time=float(i * 60), gpus=int(g), runtime=float(60 * g * r))
        for i, (g, r) in enumerate(
            zip(rng.choice([1, 2, 4, 8], 120), rng.lognormal(0, 0.2, 120), strict=True)
        )
    ]
    model = fit_model(jobs, SMALL)
    pred = model.predict(jobs[-20:], HistoryIndex(jobs))
    assert np.isfinite(pred.value).all()
    gpus = np.array([j.gpus for j in jobs[-20:]])
    assert pred.value[gpus == 8].mean() > pred.value[gpus == 1].mean()  # learnt gpus → runtime


def test_threaded_prediction_matches_one_thread(
    artifact: ModelArtifact, split: tuple[list[Job], list[Job]], monkeypatch: pytest.MonkeyPatch
) -> None:
    train, test = split
    history = HistoryIndex(train + test)
    monkeypatch.setattr("starburst.predictor.model.PARALLEL_ROWS", 10**9)
    whole = artifact.model.predict(test, history)
    monkeypatch.setattr("starburst.predictor.model.PARALLEL_ROWS", 50)
    monkeypatch.setattr("starburst.predictor.model.os.cpu_count", lambda: 4)
    chunked = artifact.model.predict(test, history)
    for a, b in (
        (whole.value, chunked.value),
        (whole.low, chunked.low),
        (whole.high, chunked.high),
    ):
        np.testing.assert_array_equal(a, b)
