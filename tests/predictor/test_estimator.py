"""Estimators the scheduler calls: model sources, the fallback chain, never crashing."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest

from starburst.core.job import Job
from starburst.core.ports import RuntimeEstimator
from starburst.predictor.artifact import ModelArtifact, save_artifact
from starburst.predictor.estimator import (
    DECLARED,
    DEFAULT_PRIOR,
    GLOBAL_MEDIAN,
    USER_HISTORY,
    FallbackEstimator,
    ModelEstimator,
    load_estimator,
    with_estimates,
)
from starburst.predictor.history import HistoryIndex


def job(
    i: int,
    user: str | None = "ann",
    submit: float = 1e6,
    runtime: float | None = None,
    **extra: str,
) -> Job:
    return Job(id=f"j{i}", submit_time=submit, gpus=1, runtime=runtime, user=user, extra=extra)


HISTORY = [job(i, "ann", submit=i * 1000.0, runtime=r) for i, r in enumerate((60, 120, 600))]


def test_fallback_chain_in_order() -> None:
    fb: RuntimeEstimator = FallbackEstimator(HistoryIndex(HISTORY))
    ests = fb.estimate(
        [job(1, declared_runtime="7200"), job(2), job(3, user="bob"), job(4, user=None)]
    )
    assert [e.source for e in ests] == [DECLARED, USER_HISTORY, GLOBAL_MEDIAN, GLOBAL_MEDIAN]
    assert ests[0].value == 7200.0 and ests[0].low == 1800.0
    assert math.isclose(ests[1].value, 120.0)
    assert all(e.low <= e.value <= e.high for e in ests)
    assert FallbackEstimator().estimate([job(5)])[0].source == DEFAULT_PRIOR


def test_model_estimates_carry_the_version_and_survive_odd_jobs(artifact: ModelArtifact) -> None:
    est = ModelEstimator(artifact)
    odd = [
        Job(id="a", submit_time=0.0, gpus=1),
        Job(
            id="b",
            submit_time=9e9,
            gpus=64,
            gpu_type="TPUv9",
            user="nobody",
            team="x",
            name="???",
            extra={"image": "unheard-of", "command": "--epochs -3 --steps"},
        ),
        Job(id="c", submit_time=1e5, gpus=0, cpus=0.5, extra={"declared_runtime": "junk"}),
    ]
    ests = est.estimate(odd)
    assert [e.source for e in ests] == [f"model:{artifact.version}"] * 3
    assert all(math.isfinite(e.value) and 0 < e.low <= e.value <= e.high for e in ests)
    assert est.estimate([]) == []


def test_model_failure_falls_back_with_a_log(
    artifact: ModelArtifact, caplog: pytest.LogCaptureFixture
) -> None:
    est = ModelEstimator(artifact, HistoryIndex(HISTORY))

    def boom(*_: object) -> object:
        raise RuntimeError("broken tree")

    est.predict = boom  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING):
        ests = est.estimate([job(1, declared_runtime="300"), job(2)])
    assert [e.source for e in ests] == [DECLARED, USER_HISTORY]
    assert "broken tree" in caplog.text


def test_load_estimator_at_start_up(artifact: ModelArtifact, tmp_path: Path) -> None:
    good = save_artifact(artifact, tmp_path / "good.joblib")
    loaded = load_estimator(good)
    assert isinstance(loaded.estimator, ModelEstimator) and loaded.artifact is not None
    assert artifact.version in loaded.message

    bad = tmp_path / "bad.joblib"
    bad.write_text("definitely not a model")
    loaded = load_estimator(bad, completed_jobs=HISTORY)
    assert isinstance(loaded.estimator, FallbackEstimator) and loaded.artifact is None
    assert "corrupt" in loaded.message and "fallback" in loaded.message
    assert loaded.estimator.estimate([job(9)])[0].source == USER_HISTORY

    none = load_estimator(None)
    assert none.estimator.estimate([job(9)])[0].source == DEFAULT_PRIOR


def test_fresh_history_replaces_the_snapshot(artifact: ModelArtifact) -> None:
    est = ModelEstimator(artifact).with_history(HISTORY)
    assert est.history.jobs == len(HISTORY)


def test_with_estimates_sets_what_the_policy_sees() -> None:
    ests = FallbackEstimator(HistoryIndex(HISTORY)).estimate([job(1), job(2)])
    jobs = with_estimates([job(1), job(2)], ests, "high")
    assert [j.estimate for j in jobs] == [e.high for e in ests]
    assert jobs[0].believed_runtime == ests[0].high
