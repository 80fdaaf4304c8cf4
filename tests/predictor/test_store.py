"""The predictor over the real SQL store (SQLite): train from history, load, record."""

from __future__ import annotations

from pathlib import Path

import pytest

from starburst.adapters.db.engine import create_engine
from starburst.adapters.db.store import SqlStore, create_schema
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec
from starburst.predictor.estimator import DECLARED, FallbackEstimator, ModelEstimator
from starburst.predictor.store import (
    MODEL_NAME,
    history_job,
    load_from_store,
    queued_job,
    record_estimates,
    train_from_store,
)
from tests.predictor.conftest import SMALL
from tests.support.clock import ManualClock

KINDS = {"debug": 120.0, "train": 3600.0, "eval": 600.0}


@pytest.fixture()
def store(tmp_path: Path) -> SqlStore:
    engine = create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    create_schema(engine)
    return SqlStore(engine, clock=ManualClock())


def finish_jobs(store: SqlStore, n: int) -> None:
    clock = store.clock
    assert isinstance(clock, ManualClock)
    for i in range(n):
        kind = list(KINDS)[i % 3]
        spec = JobSpec(
            gpus=1,
            user=f"u{i % 4}",
            name=f"{kind}-{i}",
            image="img",
            command=f"python {kind}.py",
            declared_runtime=9999.0,
        )
        job_id = store.submissions.submit(spec).job.id
        store.lifecycle.transition(job_id, JobState.QUEUED, reason="admitted", actor="t")
        clock.advance(5)
        store.lifecycle.transition(job_id, JobState.RUNNING_ONPREM, reason="fits", actor="t")
        clock.advance(KINDS[kind] * (1 + (i % 5) / 20))
        store.lifecycle.transition(job_id, JobState.SUCCEEDED, reason="exit 0", actor="t")


def test_train_load_predict_and_record(store: SqlStore, tmp_path: Path) -> None:
    assert isinstance(load_from_store(store.models).estimator, FallbackEstimator)  # nothing yet
    finish_jobs(store, 90)
    [first] = store.models.history(limit=1)[:1] or [None]
    training = history_job(first)
    assert training.estimate is None and float(training.extra["finish_time"]) == first.ended_at
    # what the user gave at submit time is a feature, as in a trace
    assert (training.extra["image"], training.extra["declared_runtime"]) == ("img", "9999.0")
    assert training.extra["command"].startswith("python ")

    artifact = train_from_store(store.models, tmp_path / "model.joblib", params=SMALL)
    active = store.models.active_model(MODEL_NAME)
    assert active is not None and active.version == artifact.version
    assert active.trained_on == 90 and active.artifact_uri == str(tmp_path / "model.joblib")

    loaded = load_from_store(store.models)
    assert isinstance(loaded.estimator, ModelEstimator)
    spec = JobSpec(
        gpus=1,
        user="u1",
        name="debug-x",
        image="img",
        command="python debug.py",
        declared_runtime=7200.0,
    )
    stored = store.jobs.get(store.submissions.submit(spec).job.id)
    job = queued_job(stored)
    assert job.extra["command"] == "python debug.py" and job.extra["declared_runtime"]
    [est] = loaded.estimator.estimate([job])
    assert est.source == f"model:{artifact.version}" and est.value < 1800  # a debug job

    record_estimates(
        store.models,
        [job],
        [est],
        at=store.clock.now(),
        model_version_id=active.id,
    )
    [pred] = store.models.predictions(job.id)
    assert (pred.source, pred.model_version_id, pred.value) == (est.source, active.id, est.value)
    assert store.jobs.get(job.id).predicted_runtime == est.value
    # the declaration stays the user's, not our prediction (which is the job's estimate now)
    assert queued_job(store.jobs.get(job.id)).extra["declared_runtime"] == "7200.0"


def test_broken_active_model_falls_back(store: SqlStore, tmp_path: Path) -> None:
    bad = tmp_path / "broken.joblib"
    bad.write_text("nope")
    store.models.register_model(MODEL_NAME, "rt-broken", trained_on=1, artifact_uri=str(bad))
    loaded = load_from_store(store.models)
    assert isinstance(loaded.estimator, FallbackEstimator) and "corrupt" in loaded.message
    stored = store.jobs.get(
        store.submissions.submit(JobSpec(gpus=1, user="x", declared_runtime=600.0)).job.id
    )
    assert loaded.estimator.estimate([queued_job(stored)])[0].source == DECLARED
