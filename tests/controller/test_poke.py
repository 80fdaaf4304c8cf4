"""Pokes (one per API write) coalesce: a burst of them asks the scheduler for one pass."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from apscheduler.schedulers.background import BackgroundScheduler

from starburst.adapters.db.store import SqlStore
from starburst.controller.daemon import COALESCE_S, DUTY_SPAN, Controller
from starburst.controller.wiring import build_cluster, wire_controller
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec
from starburst.settings import Settings
from starburst.wallclock import WallClock
from tests.support.databases import upgrade
from tests.support.waiting import wait_for


def started(tmp_path: Path) -> tuple[Controller, SqlStore, BackgroundScheduler]:
    """A controller on SQLite with no GPUs, started on its own scheduler; no tick during a
    test (only pokes run passes)."""
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    settings = Settings(
        database_url=url,
        state_dir=tmp_path / "state",
        local_gpus=0,
        cloud="none",
        pass_interval_s=600,
        policy="infinite",
    )
    store = SqlStore.open(url)
    controller = wire_controller(settings, store, build_cluster(settings, WallClock()), None)
    ticks = BackgroundScheduler(timezone="UTC")
    controller.start(ticks)
    return controller, store, ticks


def test_a_burst_of_pokes_asks_for_one_pass_and_that_pass_serves_them(tmp_path: Path) -> None:
    controller, store, ticks = started(tmp_path)
    try:
        assert wait_for(lambda: controller.health().detail == "leading")
        ticks.pause()  # passes wait while the pokes arrive
        asked: list[str] = []
        real_get_job = ticks.get_job

        def get_job(job_id: str, jobstore: str | None = None):  # type: ignore[no-untyped-def]
            asked.append(job_id)
            return real_get_job(job_id, jobstore)

        ticks.get_job = get_job  # type: ignore[method-assign]
        ids = [store.submissions.submit(JobSpec(gpus=1, name=f"s{i}")).job.id for i in range(20)]
        for _ in range(200):  # as the API does after each of many submissions
            controller.poke()
        assert asked == ["pass"]  # one request for a pass, not one per poke
        ticks.resume()
        assert wait_for(lambda: store.jobs.count(JobState.SUBMITTED) == 0, timeout=30)
        assert all(store.jobs.get(i).state is JobState.QUEUED for i in ids)
        controller.poke()  # the pass started: the next poke asks for the next pass
        assert asked == ["pass", "pass"]
    finally:
        controller.stop()
        store.close()


def test_passes_woken_early_keep_to_half_of_the_time(tmp_path: Path) -> None:
    """A poke, or a backlog asking for the next pass at once, waits until ``DUTY_SPAN`` times
    the last pass's duration has passed since it started (at least ``COALESCE_S``)."""
    controller, store, ticks = started(tmp_path)
    try:
        ticks.pause()
        last = datetime.now(UTC)
        controller._last_start, controller._last_seconds = last, 0.4  # a long last pass
        controller._wake_at(controller.clock.now())  # the backlog: "next pass now"
        due = ticks.get_job("pass").next_run_time
        assert due >= last + timedelta(seconds=DUTY_SPAN * 0.4)
        controller._last_seconds = 0.001  # a short one: the coalescing gap rules
        assert controller._coalesced() >= last + timedelta(seconds=COALESCE_S)
        assert controller._coalesced() < last + timedelta(seconds=DUTY_SPAN * 0.4)
    finally:
        controller.stop()
        store.close()
