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

A second, bounded test (``test_takeovers_never_kill_or_rerun_jobs_that_reuse_uids``) runs each
job as a uid of its own from a range smaller than the workload, so uids are handed from
ended jobs to new ones all the time, and SIGKILLs the leader at seeded moments: every job ran
exactly once and succeeded — none killed by a takeover releasing a uid that another job had
been given since (issue 39), none lost, none stuck.

Each life is forked from a *zygote*: a Python process that imported the controller's modules
once (``PRELOAD``) and then forks a child per life, which runs the ``starburst controller``
command (``starburst.cli.main.main``) in the test's environment, with its output appended to
the shared log. So a life is still a process of its own, with its own pid, leader lock,
database connections and job processes, killed by SIGKILL and exiting through the
interpreter's usual shutdown when stopped; it only skips the imports (nine tenths of a
killed life's CPU), which hold no state (one composition root per process).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from starburst.adapters.db.leader import leader_lock
from starburst.adapters.db.store import SqlStore
from starburst.core.lifecycle import TERMINAL, JobState
from starburst.core.records import JobSpec
from tests.security.served import require_root
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


#: what a controller life imports before it starts working (``python -X importtime -m
#: starburst.cli controller``), imported once by the zygote; anything missing here a life
#: imports itself
PRELOAD = (
    "starburst.cli.main",
    "starburst.cli.serve",
    "starburst.cli.server_settings",
    "starburst.api.serve",
    "starburst.api.probes",
    "starburst.controller.wiring",
    "starburst.controller.hardening",
    "starburst.adapters.db.migrate",
    "starburst.adapters.local.isolation",
    "starburst.adapters.local.emulated",
    "starburst.predictor.estimator",
    "apscheduler.schedulers.background",
    "uvicorn",
)

#: the zygote: imports argv[1:], then answers one JSON line per command line on stdin:
#: ["start", env, log] forks a life (its pid); ["poll", pid] reaps it if it ended (its exit
#: status as ``Popen.returncode`` gives it, else null)
ZYGOTE = """
import importlib, json, os, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
for line in sys.stdin:
    command = json.loads(line)
    if command[0] == "start":
        pid = os.fork()
        if pid == 0:  # the life: stdin empty, output to the log, the test's environment
            null = os.open(os.devnull, os.O_RDONLY)
            out = os.open(command[2], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.dup2(null, 0), os.dup2(out, 1), os.dup2(out, 2), os.close(null), os.close(out)
            os.environ.clear()
            os.environ.update(command[1])
            sys.argv = ["starburst", "controller"]
            from starburst.cli.main import main
            main(["controller"])
            sys.exit(0)
        reply = pid
    else:
        ended, status = os.waitpid(command[1], os.WNOHANG)
        reply = os.waitstatus_to_exitcode(status) if ended else None
    print(json.dumps(reply), flush=True)
"""


class Zygote:
    """Forks controller lives from one process that imported their modules (``ZYGOTE``)."""

    def __init__(self, env: dict[str, str]) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", ZYGOTE, *PRELOAD],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, *command: object) -> Any:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(command) + "\n")
        self._proc.stdin.flush()
        reply = self._proc.stdout.readline()
        assert reply, f"the zygote died (exit {self._proc.wait()})"
        return json.loads(reply)

    def __enter__(self) -> Zygote:
        return self

    def __exit__(self, *exc: object) -> None:
        """Close its stdin: it ends (every life it forked was reaped or killed before)."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.close()
        self._proc.stdout.close()
        assert self._proc.wait(timeout=30) == 0


class Life:
    """One controller life forked by the zygote: what the test used of its ``Popen``."""

    def __init__(self, zygote: Zygote, env: dict[str, str], log: Path) -> None:
        self._zygote = zygote
        self.pid = int(zygote.ask("start", env, str(log)))
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._zygote.ask("poll", self.pid)
        return self.returncode

    def send_signal(self, sig: signal.Signals) -> None:
        os.kill(self.pid, sig)  # an ended life not reaped yet is a zombie: no other process

    def wait(self, timeout: float = 30) -> int:
        wait_for(lambda: self.poll() is not None, timeout=timeout, what=f"life {self.pid} to end")
        assert self.returncode is not None
        return self.returncode


def kill_while_working(zygote: Zygote, env: dict[str, str], log: Path, rng: random.Random) -> None:
    """Start a controller life and SIGKILL it at a random moment of its work."""
    started = lives_started(log)
    proc = Life(zygote, env, log)
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
        target=lambda: [(store.submissions.submit(spec), time.sleep(0.1)) for spec in specs],
        daemon=True,
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
    with Zygote(env) as zygote:
        for _ in range(KILLS):
            kill_while_working(zygote, env, log, rng)
        submitter.join()
        proc = Life(zygote, env, log)
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


#: the bounded test with job uids: its workload, kills and the uid range (fewer uids than
#: jobs run at once, so ended jobs' uids go to new ones; a range no other test uses)
UID_JOBS = 48
UID_KILLS = 4
UIDS = "60960-60965"


@pytest.mark.slow
def test_takeovers_never_kill_or_rerun_jobs_that_reuse_uids(tmp_path: Path) -> None:
    require_root()
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    # jobs run as uids of their own: their work root and run log outside pytest's 0700 tree
    shared = Path(tempfile.mkdtemp(prefix="starburst-faults-"))
    os.chmod(shared, 0o711)
    runs = shared / "runs.log"
    runs.touch()
    os.chmod(runs, 0o666)
    rng = random.Random(39)
    store = SqlStore.open(url)
    specs = [
        JobSpec(
            id=f"uid-{i:03d}",
            gpus=1,
            command=f'echo "$STARBURST_JOB_ID" >> {runs}; sleep {rng.uniform(0.2, 0.9):.2f}',
            declared_runtime=0.5,
        )
        for i in range(UID_JOBS)
    ]
    submitter = threading.Thread(
        target=lambda: [(store.submissions.submit(spec), time.sleep(0.15)) for spec in specs],
        daemon=True,
    )
    submitter.start()
    env = {
        **os.environ,
        "STARBURST_DATABASE_URL": url,
        "STARBURST_STATE_DIR": str(tmp_path),
        "STARBURST_LOCAL_GPUS": "4",
        "STARBURST_CLOUD": "emulated",
        "STARBURST_PASS_INTERVAL_S": "0.2",
        "STARBURST_API_PORT": str(free_port()),
        "STARBURST_BUDGET": "0.5",
        "STARBURST_LOCAL_JOB_UIDS": UIDS,
        "STARBURST_LOCAL_WORK_DIR": str(shared / "work"),
    }
    log = tmp_path / "controller.log"
    try:
        with Zygote(env) as zygote:
            for _ in range(UID_KILLS):
                kill_while_working(zygote, env, log, rng)
            submitter.join()
            proc = Life(zygote, env, log)
            try:
                wait_for(
                    lambda: all(store.jobs.count(s) == 0 for s in JobState if s not in TERMINAL),
                    timeout=240,
                    interval=0.25,
                    what="every job to end (none stuck)",
                )
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
        ids = [spec.id for spec in specs if spec.id]
        ended = {job_id: store.jobs.get(job_id) for job_id in ids}
        failed = {j: s.state.value for j, s in ended.items() if s.state is not JobState.SUCCEEDED}
        reasons = {j: store.jobs.events(j)[-1].reason for j in failed}
        assert not failed, reasons  # none lost, none killed by a takeover ("exit code 137")
        executions = Counter(runs.read_text().split())
        assert set(executions) == set(ids)
        assert max(executions.values()) == 1, [j for j, n in executions.items() if n > 1]
        assert "leftover processes of job uid" not in log.read_text()
    finally:
        store.close()
        shutil.rmtree(shared, ignore_errors=True)
