"""One job that cannot start must never jam the scheduler (issue 10, item 3).

A NUL byte in an env value, or a 10 MB command, used to make ``Popen`` raise on every pass:
the job stayed ``running_onprem`` with no process, the pass-error metric stayed 0 and
``/readyz`` stayed ready, and each new leader raised it again. These jobs reach the store
directly (as a Kubernetes Job or an old API would bring them), past the API's validation.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.controller.daemon import DEGRADED_AFTER, Controller
from starburst.controller.wiring import build_cloud, build_cluster, wire_controller
from starburst.core.capacity import Part
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec
from starburst.settings import Settings
from starburst.wallclock import WallClock
from tests.support.databases import upgrade
from tests.support.waiting import wait_for

SECRET = "do-not-log-this-7c1e"


@pytest.fixture
def controller(postgres_database: str, tmp_path: Path) -> Iterator[Controller]:
    upgrade(postgres_database)
    settings = Settings(
        database_url=postgres_database,
        state_dir=tmp_path / "state",
        local_gpus=4,
        cloud="emulated",
        pass_interval_s=0.1,
        budget=0.25,
    )
    clock = WallClock()
    made = wire_controller(
        settings,
        SqlStore.open(postgres_database),
        build_cluster(settings, clock),
        build_cloud(settings, clock),
    )
    try:
        yield made
    finally:
        made.stop()
        made.store.close()


def submit(store: SqlStore, command: str, env: dict[str, str] | None = None) -> str:
    extra = {"env": json.dumps(env)} if env else {}
    spec = JobSpec(gpus=1, command=command, declared_runtime=1.0, extra=extra)
    return store.submissions.submit(spec).job.id


def passes(controller: Controller, count: int) -> None:
    for _ in range(count):
        controller.run_pass()


@pytest.mark.parametrize(
    ("command", "env", "reason"),
    [
        (f"echo {SECRET}", {"TOKEN": f"{SECRET}\x00tail"}, "holds a NUL byte"),
        (f"echo {SECRET} " + "x" * 10_000_000, None, "too large"),
    ],
)
def test_a_job_that_cannot_start_fails_once_with_the_reason_and_the_pass_goes_on(
    controller: Controller,
    caplog: pytest.LogCaptureFixture,
    command: str,
    env: dict[str, str] | None,
    reason: str,
) -> None:
    store = controller.store
    bad = submit(store, command, env)
    good = submit(store, "true")
    with caplog.at_level(logging.INFO, logger="starburst"):
        passes(controller, 3)
    stored = store.jobs.get(bad)
    assert stored.state is JobState.FAILED
    events = [e for e in store.jobs.events(bad) if e.to_state is JobState.FAILED]
    assert len(events) == 1 and "cannot start on-prem" in events[0].reason
    assert reason in events[0].reason
    assert wait_for(
        lambda: (controller.run_pass(), store.jobs.get(good).state)[1] is JobState.SUCCEEDED
    )
    assert controller.health().ready
    assert controller.metrics.unstartable._value.get() == 1  # type: ignore[attr-defined]
    assert controller.metrics.pass_errors._value.get() == 0  # type: ignore[attr-defined]
    assert SECRET not in caplog.text


def test_a_new_leader_does_not_trip_over_it_either(controller: Controller) -> None:
    """The job was recorded as running (by an older controller) but can never start."""
    store = controller.store
    bad = submit(store, "true", {"TOKEN": "a\x00b"})
    store.lifecycle.transition(bad, JobState.QUEUED, reason="test", actor="test")
    store.lifecycle.record_placement(bad, (Part(0, "local", 1, 0.0, 0.0),))
    store.lifecycle.transition(bad, JobState.RUNNING_ONPREM, reason="test", actor="test")
    passes(controller, 2)  # the first pass leads: reconcile re-issues the start
    assert store.jobs.get(bad).state is JobState.FAILED
    assert controller.health().ready


def test_persistent_pass_errors_are_counted_logged_with_the_stack_and_degrade_readiness(
    controller: Controller, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    submit(controller.store, f"echo {SECRET}")
    passes(controller, 1)
    assert controller.health().ready

    def broken() -> object:
        raise RuntimeError("snapshot exploded")

    monkeypatch.setattr(controller.cluster, "snapshot", broken)
    with caplog.at_level(logging.ERROR, logger="starburst.controller"):
        passes(controller, DEGRADED_AFTER - 1)
        assert controller.health().ready  # one failure is not yet a condition
        passes(controller, 1)
    health = controller.health()
    assert not health.ready and "degraded" in health.detail and "RuntimeError" in health.detail
    assert controller.metrics.pass_errors._value.get() == DEGRADED_AFTER  # type: ignore[attr-defined]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors and all(r.exc_info for r in errors)
    assert "snapshot exploded" in caplog.text and SECRET not in caplog.text
    monkeypatch.undo()
    passes(controller, 1)
    assert controller.health().ready
