"""The retraining child reads the store's history itself (``wiring.history_reader``): the
controller's process never reads, converts or pickles it."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest

from starburst.adapters.db.engine import create_engine
from starburst.adapters.db.store import SqlStore, create_schema
from starburst.controller.wiring import history_reader, read_history
from starburst.predictor.isolated import train_isolated
from starburst.predictor.model import TrainingError
from starburst.predictor.store import completed_jobs
from starburst.predictor.training import train_artifact
from tests.predictor.conftest import SMALL
from tests.predictor.test_store import finish_jobs
from tests.support.clock import ManualClock
from tests.support.niceness import GENTLE

WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def sqlite_store(url: str) -> SqlStore:
    engine = create_engine(url)
    create_schema(engine)
    return SqlStore(engine, clock=ManualClock())


def test_the_child_reads_the_history_and_trains_the_same_model(tmp_path: Path) -> None:
    store = sqlite_store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    finish_jobs(store, 90)
    reader = history_reader(store, limit=1000)
    assert reader is not None
    read = train_isolated(reader, tmp_path / "read.joblib", SMALL, WHEN, nice=GENTLE)
    # the model of the jobs handed over; a child trains the same as this process does
    # (tests/predictor/test_isolated.py), so one child is enough here
    given = train_artifact(completed_jobs(store.models), SMALL, WHEN)
    assert read.artifact.jobs == 90
    assert read.artifact.version == given.version
    store.close()


def test_an_in_memory_database_has_no_reader() -> None:
    store = sqlite_store("sqlite://")
    assert history_reader(store) is None
    store.close()


def test_a_reader_that_cannot_reach_its_database_is_a_training_error(tmp_path: Path) -> None:
    unreachable = partial(read_history, "postgresql://nobody@127.0.0.1:1/none", 10)
    with pytest.raises(TrainingError, match=r"127\.0\.0\.1"):
        train_isolated(unreachable, tmp_path / "model.joblib", SMALL)
    assert not (tmp_path / "model.joblib").exists()
