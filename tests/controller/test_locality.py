"""Controllers that cannot see each other's local jobs never both run them (issue 39, 3).

Two controllers on one database, both with the local cluster, each with its own state
directory: the standby cannot see the leader's spawn records, so after a failover it once
started again every job still running (9 of 240 ran twice). Now a controller whose
``host:state_dir`` differs from the last leader's refuses to lead, and to start, while jobs
are in flight — with one line naming both — and a controller of the leader's own state
directory (its restart) takes over and adopts the job.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.controller.daemon import Controller
from starburst.controller.wiring import build_cluster, build_controller, wire_controller
from starburst.core.errors import ConfigError
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec
from starburst.settings import Settings
from starburst.wallclock import WallClock
from tests.support.databases import upgrade
from tests.support.waiting import wait_for


def settings_of(url: str, state: Path) -> Settings:
    return Settings(
        database_url=url,
        state_dir=state,
        local_gpus=2,
        cloud="none",
        pass_interval_s=0.1,
        local_job_uids="",
    )


def make_controller(url: str, state: Path) -> Controller:
    settings = settings_of(url, state)
    return wire_controller(settings, SqlStore.open(url), build_cluster(settings, WallClock()), None)


def test_a_controller_of_another_state_dir_refuses_to_lead_or_start(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    runs = tmp_path / "runs.log"
    a = make_controller(url, tmp_path / "a")
    b = make_controller(url, tmp_path / "b")  # built while nothing was in flight
    store = a.store
    store.submissions.submit(JobSpec(id="long", gpus=1, command=f"echo run >> {runs}; sleep 2"))
    wait_for(lambda: a.run_pass() is not None and store.jobs.get("long").state.value != "queued")
    assert store.jobs.get("long").state is JobState.RUNNING_ONPREM
    a._lock.close()  # the leader dies: its lock goes, its job runs on

    assert b.run_pass() is None  # b would not see the job: it must not lead
    theirs = f"{socket.gethostname()}:{(tmp_path / 'a').resolve()}"
    detail = b.health().detail
    assert detail.startswith(
        f"refusing to lead: 1 jobs in flight run from the local state {theirs}"
    )
    assert str((tmp_path / "b").resolve()) in detail and "\n" not in detail
    assert b.cluster.snapshot().running == []
    with pytest.raises(ConfigError, match=r"^refusing to start: 1 jobs in flight"):
        build_controller(settings_of(url, tmp_path / "b"))
    command = [sys.executable, "-m", "starburst.cli", "controller"]
    env = {
        "STARBURST_DATABASE_URL": url,
        "STARBURST_STATE_DIR": str(tmp_path / "b"),
        "STARBURST_CLOUD": "none",
        "STARBURST_LOCAL_JOB_UIDS": "",
        "PATH": "/usr/bin:/bin",
    }
    refused = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    (line,) = [x for x in refused.stderr.splitlines() if "refusing" in x]
    assert "refusing to start: 1 jobs in flight" in line

    c = make_controller(url, tmp_path / "a")  # the leader's restart: same state directory
    try:
        wait_for(lambda: c.run_pass() is not None and c.health().detail == "leading")
        wait_for(
            lambda: c.run_pass() is not None and store.jobs.get("long").state is JobState.SUCCEEDED,
            timeout=30,
        )
        assert runs.read_text() == "run\n"  # adopted, never run again
        assert b.run_pass() is None  # c leads now
    finally:
        for controller in (a, b, c):
            controller.stop()
            controller.store.close()


def test_a_controller_of_another_state_dir_may_lead_once_nothing_is_in_flight(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    a = make_controller(url, tmp_path / "a")
    store = a.store
    store.submissions.submit(JobSpec(id="quick", gpus=1, command="true"))
    wait_for(
        lambda: a.run_pass() is not None and store.jobs.get("quick").state is JobState.SUCCEEDED
    )
    a.stop()
    b = make_controller(url, tmp_path / "b")  # a moved state directory, nothing running
    try:
        assert b.run_pass() is not None and b.health().detail == "leading"
    finally:
        b.stop()
        for controller in (a, b):
            controller.store.close()
