"""Crash safety: the controller is SIGKILLed again and again while 160 jobs flow through it.

The controller runs as its own process (``starburst controller``) on SQLite, the local cluster
(8 GPU slots) and the emulated cloud. Every job's command appends one line to a shared run log
before it sleeps, so a job that started twice — on-prem or in the cloud — shows up twice. The
test kills the controller with SIGKILL ``KILLS`` times, restarting it each time, then lets it
finish. At the end: every job succeeded exactly once, nothing was lost, and each cloud launch's
metered cost equals its hourly price × the time it really ran.

Each kill lands at a random moment of a *working* life: up to ``WORK_WINDOW_S`` after that life
logged "controller started" (taking the lead, reconciling what the last life left, passes,
starts and launches). Kills at fixed delays after the spawn (the earlier form of this test: 22
kills 0.6-2 s after it) mostly hit a Python process still importing — on this 2-core machine
under load a life needs 2-18 s to start — so they tested nothing but cost the most time.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy as sa

from starburst.adapters.db.leader import leader_lock
from starburst.adapters.db.store import SqlStore
from starburst.core.lifecycle import TERMINAL, JobState
from starburst.core.records import JobSpec
from tests.support import http
from tests.support.databases import upgrade
from tests.support.waiting import wait_for

JOBS = 160
KILLS = 10
#: how long after a life starts working its kill may come (its first passes run in here)
WORK_WINDOW_S = 0.8


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def lives_started(log: Path) -> int:
    """How many controller lives logged that they started (each a line in the shared log)."""
    return log.read_text(errors="replace").count("controller started") if log.exists() else 0


def start_controller(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "starburst.cli", "controller"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def kill_while_working(env: dict[str, str], log: Path, rng: random.Random) -> None:
    """Start a controller life and SIGKILL it at a random moment of its work."""
    started = lives_started(log)
    proc = start_controller(env, log)
    wait_for(
        lambda: lives_started(log) > started or proc.poll() is not None,
        timeout=180,
        what="the new controller life to start working",
    )
    assert proc.poll() is None, log.read_text()[-3000:]  # it died on its own: a bug
    time.sleep(rng.uniform(0.0, WORK_WINDOW_S))
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
def test_no_job_is_lost_or_run_twice_across_repeated_sigkills(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    runs = tmp_path / "runs.log"
    rng = random.Random(42)
    store = SqlStore.open(url)
    specs = []
    for i in range(JOBS):
        seconds = round(rng.uniform(0.2, 1.2), 2)
        specs.append(
            JobSpec(
                id=f"job-{i:03d}",
                gpus=rng.choice([1, 1, 1, 2, 4]),
                team=rng.choice(["ml", "cv"]),
                command=f'echo "$STARBURST_JOB_ID" >> {runs}; sleep {seconds}',
                declared_runtime=seconds,
            )
        )
    # jobs keep arriving while the controller is being killed: ~10 per second
    submitter = threading.Thread(
        target=lambda: [(store.jobs.submit(spec), time.sleep(0.1)) for spec in specs], daemon=True
    )
    submitter.start()
    env = {
        **os.environ,
        "STARBURST_DATABASE_URL": url,
        "STARBURST_STATE_DIR": str(tmp_path),
        "STARBURST_LOCAL_GPUS": "8",
        "STARBURST_CLOUD": "emulated",
        "STARBURST_PASS_INTERVAL_S": "0.2",
        "STARBURST_API_PORT": str(free_port()),
        "STARBURST_BUDGET": "0.5",
        "STARBURST_QUEUE_CAP": "40",
        # jobs append to a file in this root-only temporary directory: run them as this
        # process's user, not each as a uid of its own (auth is off: no opt-in needed)
        "STARBURST_LOCAL_JOB_UIDS": "",
    }
    log = tmp_path / "controller.log"
    for _ in range(KILLS):
        kill_while_working(env, log, rng)
    submitter.join()
    proc = start_controller(env, log)
    try:
        wait_for(
            lambda: all(store.jobs.count(s) == 0 for s in JobState if s not in TERMINAL),
            timeout=240,
            interval=0.25,
            what="every job to end",
        )
        port = env["STARBURST_API_PORT"]
        with http.client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            assert client.get("/healthz").status_code == 200
            ready = client.get("/readyz")
            assert ready.status_code == 200 and ready.json()["detail"] == "leading"
            metrics = client.get("/metrics").text
            assert "starburst_onprem_starts_total" in metrics
            assert "starburst_wait_budget_seconds_count" in metrics
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0, log.read_text()[-3000:]  # a clean stop, not death by signal
    lock = leader_lock(store.engine)
    assert lock.try_acquire() is not None  # the stopped controller released leadership
    lock.release()

    states = Counter(store.jobs.get(f"job-{i:03d}").state for i in range(JOBS))
    assert states == {JobState.SUCCEEDED: JOBS}, states
    executions = Counter(runs.read_text().split())
    assert len(executions) == JOBS
    assert max(executions.values()) == 1, [j for j, n in executions.items() if n > 1]

    launches = store.ledger.launches()
    assert launches, "the workload must burst some jobs for the test to mean anything"
    assert len({launch.job_id for launch in launches}) == len(launches)  # one launch per job
    with store.engine.connect() as conn:
        metered = dict(
            conn.execute(
                sa.text("select launch_id, sum(amount_micros) from cost_entries group by launch_id")
            ).all()
        )
    for launch in launches:
        assert launch.ended_at is not None
        ran = Decimal(str(launch.ended_at - launch.launched_at))
        expected = launch.hourly_price * ran / 3600
        got = Decimal(metered.get(launch.id, 0)) / 1_000_000
        assert abs(got - expected) < Decimal("0.00001"), (launch.name, got, expected)
    store.close()
