"""The daemon's ``retrain``: the model is trained in a niced child process (not in the
controller's own process), registered, and the scheduling loop switches to it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.controller.wiring import build_cloud, build_cluster, wire_controller
from starburst.predictor.estimator import ModelEstimator
from starburst.predictor.store import MODEL_NAME
from starburst.settings import Settings
from starburst.wallclock import WallClock
from tests.predictor.test_store import finish_jobs
from tests.support.clock import ManualClock
from tests.support.databases import upgrade
from tests.support.niceness import train_gently


def test_retrain_runs_in_a_niced_child_and_switches_the_estimator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    history = SqlStore.open(url, clock=ManualClock())
    finish_jobs(history, 90)
    history.close()
    children = train_gently(monkeypatch)
    settings = Settings(
        database_url=url,
        state_dir=tmp_path / "state",
        local_gpus=2,
        cloud="none",
        model_path=tmp_path / "model.joblib",
    )
    store = SqlStore.open(url)
    controller = wire_controller(
        settings, store, build_cluster(settings, WallClock()), build_cloud(settings, WallClock())
    )

    def not_here(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the controller's process read the training history")

    # the child reads the history, over its own connection
    monkeypatch.setattr(store.models, "history", not_here)
    try:
        controller.retrain()
        [child] = children
        assert child.pid != os.getpid() and child.nice > os.nice(0) and child.threads == 1
        estimator = controller.loop.estimator
        assert isinstance(estimator, ModelEstimator)
        assert estimator.artifact.version == child.artifact.version
        assert estimator.artifact.jobs == 90 and estimator.history.jobs == 90
        active = store.models.active_model(MODEL_NAME)
        assert active is not None and active.version == child.artifact.version
    finally:
        store.close()
