"""Fault benchmark: a failover, a database restart and an API restart under a stream of jobs.

    .venv/bin/python bench/faults.py            # ~1-2 minutes: 150 jobs over 20 s
    .venv/bin/python bench/faults.py --full     # the run of issue 39: 600 jobs over 66 s

The deployment of a small site, on this machine: a throwaway PostgreSQL, one ``starburst api``
and two ``starburst controller`` processes (one leads, one stands by) sharing one state
directory, the local cluster (``--gpus`` slots, every job a uid of its own when run as root)
and the emulated cloud. ``--clients`` threads submit ``--jobs`` jobs over ``--duration``
seconds through the REST API, each with an ``Idempotency-Key`` and retrying with the same
key until acknowledged. Every job appends ``<id> start <time>`` and ``<id> end <time>`` to a
run log around a sleep of ``--min-run``-``--max-run`` seconds. Meanwhile, at fractions of
the duration:

- ``--kill-at``: the leading controller is SIGKILLed (it is not restarted);
- ``--pg-restart-at``: PostgreSQL restarted as ``pg_ctl restart -m fast`` does (a fast stop,
  then a start: every session cut);
- ``--api-restart-at``: the API is SIGKILLed and started again.

Then it waits (``--settle``) for every job to end and prints, from the database and the run
log: acknowledged, stored and duplicated submissions; jobs that ran once, twice or never;
failed jobs and those killed by a takeover (exit 137 / SIGKILL); jobs stuck (not ended);
billing against the run as the job saw it (its own start and end lines), on-prem and cloud
apart: under-billed jobs and seconds (must be 0), over-billed seconds (start-up and the time
until the end is seen); the failover time (SIGKILL → the standby's ``/readyz`` says
"leading"), the recovery after the PostgreSQL restart (back → leading again) and the API's
restart time. Figures, never pass/fail. ``--seed`` fixes the workload.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from starburst.adapters.db import migrate  # noqa: E402
from starburst.adapters.db.convert import to_epoch  # noqa: E402
from starburst.adapters.db.models import CostEntryRow, JobRow  # noqa: E402
from starburst.adapters.db.store import SqlStore  # noqa: E402
from starburst.core.lifecycle import TERMINAL, JobState  # noqa: E402
from tests.support.postgres import ThrowawayPostgres, find_bindir, fresh_database  # noqa: E402

UIDS = "60600-60699"  # job uids when run as root (a range the test suite does not use)
QUICK = {"jobs": 150, "duration": 20.0}
FULL = {"jobs": 600, "duration": 66.0}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Service:
    """One ``starburst`` process (``api`` or ``controller``) with its own log and port."""

    name: str
    mode: str
    port: int
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "starburst.cli", self.mode, "--port", str(self.port)],
            env=self.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
        out.close()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def get(self, path: str) -> httpx.Response | None:
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}{path}", timeout=2.0)
        except httpx.HTTPError:
            return None


def leader(controllers: list[Service]) -> Service | None:
    """The controller whose ``/readyz`` says it leads."""
    for c in controllers:
        reply = c.get("/readyz")
        if reply is not None and reply.json().get("detail") == "leading":
            return c
    return None


def log_lines(path: Path) -> list[tuple[float, str]]:
    """(wall time, message) of every JSON line of a controller's log."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
            at = datetime.fromisoformat(entry["ts"].replace("Z", "+00:00")).timestamp()
        except (ValueError, KeyError, TypeError):
            continue
        out.append((at, str(entry.get("msg", ""))))
    return out


def first(lines: list[tuple[float, str]], prefix: str, after: float) -> float | None:
    return next((t for t, msg in lines if t >= after and msg.startswith(prefix)), None)


def wait_until(check, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench/faults.py: {what} did not happen within {timeout:.0f} s")
        time.sleep(0.1)


def submit_all(
    api: Service, jobs: list[dict[str, object]], clients: int, duration: float
) -> dict[str, str]:
    """Submit ``jobs`` evenly over ``duration`` from ``clients`` threads; key → job id of
    every acknowledged submission (retried with its key until acknowledged, for up to 120 s)."""
    acked: dict[str, str] = {}
    lock = threading.Lock()
    t0 = time.monotonic()
    gap = duration / max(1, len(jobs))

    def client(share: list[tuple[int, dict[str, object]]]) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{api.port}", timeout=5.0) as http:
            for i, body in share:
                time.sleep(max(0.0, t0 + i * gap - time.monotonic()))
                key = f"fault-{i}"
                give_up = time.monotonic() + 120
                while time.monotonic() < give_up:
                    try:
                        reply = http.post("/v1/jobs", json=body, headers={"Idempotency-Key": key})
                    except httpx.HTTPError:
                        reply = None
                    if reply is not None and reply.status_code in (200, 201):
                        with lock:
                            acked[key] = str(reply.json()["id"])
                        break
                    time.sleep(0.2)

    shares: list[list[tuple[int, dict[str, object]]]] = [[] for _ in range(clients)]
    for i, body in enumerate(jobs):
        shares[i % clients].append((i, body))
    threads = [threading.Thread(target=client, args=(s,), daemon=True) for s in shares]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return acked


def runs_of(path: Path) -> tuple[Counter[str], dict[str, float], dict[str, float]]:
    """Start counts, and each job's (last) start and end times, from the run log."""
    starts: Counter[str] = Counter()
    began: dict[str, float] = {}
    ended: dict[str, float] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        job, what, at = parts[0], parts[1], float(parts[2])
        if what == "start":
            starts[job] += 1
            began[job] = at
        elif what == "end":
            ended[job] = at
    return starts, began, ended


def billed(engine: sa.Engine) -> dict[tuple[str, str], float]:
    """Seconds billed per (job, source): the lengths of its cost entries (one GPU each)."""
    c = CostEntryRow
    out: dict[tuple[str, str], float] = {}
    with engine.connect() as conn:
        for job_id, source, start, end in conn.execute(
            sa.select(c.job_id, c.source, c.period_start, c.period_end)
        ):
            key = (str(job_id), str(source))
            out[key] = out.get(key, 0.0) + to_epoch(end) - to_epoch(start)
    return out


def report(args: argparse.Namespace, figures: dict[str, object]) -> None:
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")


def seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} s"


def main() -> None:  # noqa: C901 - one run, in order
    import faulthandler

    faulthandler.register(signal.SIGUSR1)  # a hung run: kill -USR1 prints every stack
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="600 jobs over 66 s (issue 39)")
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--duration", type=float, help="seconds over which jobs arrive")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--min-run", type=float, default=0.5)
    parser.add_argument("--max-run", type=float, default=1.5)
    parser.add_argument("--kill-at", type=float, default=0.30, help="fraction of --duration")
    parser.add_argument("--pg-restart-at", type=float, default=0.60)
    parser.add_argument("--api-restart-at", type=float, default=0.83)
    parser.add_argument("--pass-interval", type=float, default=2.0)
    parser.add_argument("--budget", type=float, default=0.25)
    parser.add_argument("--settle", type=float, default=120.0, help="most seconds to wait")
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument("--keep", action="store_true", help="keep the logs and state")
    args = parser.parse_args()
    scale = FULL if args.full else QUICK
    jobs_n = args.jobs or int(scale["jobs"])
    duration = args.duration or float(scale["duration"])

    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("bench/faults.py: no PostgreSQL binaries (see tests/support/postgres.py)")
    root = Path(tempfile.mkdtemp(prefix="starburst-faults-"))
    os.chmod(root, 0o711)  # job uids reach their work root and the run log
    runs = root / "runs.log"
    runs.touch()
    os.chmod(runs, 0o666)
    pg = ThrowawayPostgres(bindir).start()
    services: list[Service] = []
    try:
        url = fresh_database(pg.url, "faults")
        migrate.upgrade(url)
        env = {
            **os.environ,
            "STARBURST_DATABASE_URL": url,
            "STARBURST_STATE_DIR": str(root / "state"),
            "STARBURST_LOCAL_WORK_DIR": str(root / "work"),
            "STARBURST_LOCAL_GPUS": str(args.gpus),
            "STARBURST_CLOUD": "emulated",
            "STARBURST_PASS_INTERVAL_S": str(args.pass_interval),
            "STARBURST_BUDGET": str(args.budget),
            "STARBURST_LOCAL_JOB_UIDS": UIDS if os.geteuid() == 0 else "",
        }
        api = Service("api", "api", free_port(), env, root / "api.log")
        controllers = [
            Service(f"controller-{n}", "controller", free_port(), env, root / f"c{n}.log")
            for n in (1, 2)
        ]
        services = [api, *controllers]
        for s in services:
            s.start()
        wait_until(lambda: api.get("/healthz") is not None, 120, "the API to serve")
        wait_until(lambda: leader(controllers) is not None, 180, "a controller to lead")
        wait_until(
            lambda: all(
                (r := c.get("/readyz")) is not None and r.status_code == 200 for c in controllers
            ),
            180,
            "both controllers to be ready",
        )

        rng = random.Random(args.seed)
        bodies: list[dict[str, object]] = []
        for i in range(jobs_n):
            run = round(rng.uniform(args.min_run, args.max_run), 2)
            bodies.append(
                {
                    "name": f"f-{i}",
                    "team": "lab",
                    "gpus": 1,
                    "declared_runtime_s": run,
                    "command": (
                        f'echo "$STARBURST_JOB_ID start $(date +%s.%N)" >> {runs}; sleep {run}; '
                        f'echo "$STARBURST_JOB_ID end $(date +%s.%N)" >> {runs}'
                    ),
                }
            )
        acked: dict[str, str] = {}
        t0 = time.monotonic()
        submitter = threading.Thread(
            target=lambda: acked.update(submit_all(api, bodies, args.clients, duration)),
            daemon=True,
        )
        submitter.start()
        events: dict[str, float] = {}

        def at(fraction: float) -> None:
            time.sleep(max(0.0, t0 + fraction * duration - time.monotonic()))

        faults = sorted(
            [
                (args.kill_at, "kill"),
                (args.pg_restart_at, "pg"),
                (args.api_restart_at, "api"),
            ]
        )
        killed: Service | None = None
        for fraction, fault in faults:
            at(fraction)
            if fault == "kill":
                killed = leader(controllers)
                if killed is not None:
                    events["kill"] = time.time()
                    killed.kill()
            elif fault == "pg":
                events["pg_start"] = time.time()
                pg.restart()
                events["pg_back"] = time.time()
            else:
                events["api_kill"] = time.time()
                api.kill()
                api.start()
                wait_until(lambda: api.get("/healthz") is not None, 120, "the API to restart")
                events["api_back"] = time.time()
        submitter.join()
        submitted_in = time.monotonic() - t0

        store = SqlStore.open(url)
        engine = store.engine
        active = [s.value for s in JobState if s not in TERMINAL]

        def unfinished() -> int:
            query = sa.select(sa.func.count()).where(JobRow.state.in_(active))
            with engine.connect() as conn:
                return int(conn.execute(query).scalar_one())

        deadline = time.monotonic() + args.settle
        while unfinished() and time.monotonic() < deadline:
            time.sleep(0.5)

        with engine.connect() as conn:
            rows = conn.execute(sa.select(JobRow.id, JobRow.name, JobRow.state)).all()
        names = Counter(str(name) for _, name, _ in rows)
        states = {str(job_id): str(state) for job_id, _, state in rows}
        starts, began, ended = runs_of(runs)
        failed = [j for j, s in states.items() if s == JobState.FAILED.value]
        reasons = {j: store.jobs.events(j)[-1].reason for j in failed}
        killed_jobs = [
            j for j, r in reasons.items() if "137" in r or "signal 9" in r or "Killed" in r
        ]
        cloud = {launch.job_id for launch in store.ledger.launches()}
        bills = billed(engine)
        under: dict[str, list[float]] = {"onprem": [], "cloud": []}
        over: dict[str, list[float]] = {"onprem": [], "cloud": []}
        for job_id, state in states.items():
            if state != JobState.SUCCEEDED.value or job_id not in ended or starts[job_id] != 1:
                continue
            source = "cloud" if job_id in cloud else "onprem"
            ran = ended[job_id] - began[job_id]
            gap = bills.get((job_id, source), 0.0) - ran
            (over if gap >= 0 else under)[source].append(abs(gap))
        store.close()

        # from the controllers' own logs: when the standby became leader, when a pass failed
        # on the restarted database and when leadership was taken again
        survivors = [c for c in controllers if c is not killed]
        lines = sorted(x for c in survivors for x in log_lines(c.log))
        failover = None
        if "kill" in events:
            took = first(lines, "became leader", events["kill"])
            failover = None if took is None else took - events["kill"]
        recovery = None
        if "pg_back" in events:
            failed_at = first(lines, "pass failed", events["pg_start"])
            if failed_at is None:
                recovery = 0.0  # no pass failed: the restart went unnoticed
            else:
                back = first(lines, "became leader", failed_at)
                recovery = None if back is None else max(0.0, back - events["pg_back"])

        def billing(source: str) -> str:
            u, o = under[source], over[source]
            n = len(u) + len(o)
            mean_over = statistics.fmean(o) if o else 0.0
            return (
                f"{n} jobs: {len(u)} under-billed by {sum(u):.3f} s in all; over-billed "
                f"{sum(o):.1f} s in all (mean {mean_over:.3f} s a job)"
            )

        print(
            f"bench/faults.py: {jobs_n} jobs over {duration:.0f} s from {args.clients} clients, "
            f"{args.gpus} local GPU slots + emulated cloud, PostgreSQL, 1 api + 2 controllers "
            f"(pass interval {args.pass_interval:g} s); leader SIGKILLed at "
            f"{args.kill_at * duration:.1f} s, PostgreSQL restarted (-m fast) at "
            f"{args.pg_restart_at * duration:.1f} s, API killed and restarted at "
            f"{args.api_restart_at * duration:.1f} s; seed {args.seed}"
        )
        report(
            args,
            {
                "acknowledged": f"{len(acked)} of {jobs_n} (submitting took {submitted_in:.1f} s)",
                "stored": f"{len(rows)} ({sum(n - 1 for n in names.values() if n > 1)} duplicated)",
                "ran once": sum(1 for j in states if starts[j] == 1),
                "ran more than once": sorted(j for j in states if starts[j] > 1) or 0,
                "never ran": sum(1 for j in states if starts[j] == 0),
                "succeeded": sum(1 for s in states.values() if s == JobState.SUCCEEDED.value),
                "failed": {j: reasons[j][:80] for j in failed} or 0,
                "killed by takeover": killed_jobs or 0,
                "stuck (not ended)": sum(1 for s in states.values() if s in active),
                "billing on-prem": billing("onprem"),
                "billing cloud": billing("cloud"),
                "failover (SIGKILL → standby leading)": seconds(failover),
                "PostgreSQL restart took": seconds(events.get("pg_back", 0) - events["pg_start"])
                if "pg_start" in events
                else "n/a",
                "recovery (PostgreSQL back → leading)": seconds(recovery),
                "API restart (SIGKILL → serving)": seconds(
                    events["api_back"] - events["api_kill"] if "api_back" in events else None
                ),
            },
        )
        if args.keep:
            print(f"logs and state kept in {root}")
    finally:
        for s in services:
            s.stop()
        pg.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
