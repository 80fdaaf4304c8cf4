"""REST API benchmark: submissions through the real HTTP stack, with the controller running.

    .venv/bin/python bench/api_bench.py                      # throwaway PostgreSQL
    .venv/bin/python bench/api_bench.py --seconds 4 --history 20000   # a shorter run
    .venv/bin/python bench/api_bench.py --split    # 2 api processes and a controller
    .venv/bin/python bench/api_bench.py --split --in-flight 32 --repeat 5 --submits-only
                                      # one row five times, each beside its hello: the median

What it measures, against ``starburst server`` (controller + API in one process, as a lab runs
it) on PostgreSQL with auth on, a local cluster of one GPU slot and policy ``infinite``: the
first job holds the slot, every other one is admitted and waits, so the controller's passes run
beside the API the whole time (the waiting-jobs limits are raised to ``WAITING_LIMIT``, so a
fast row is not refused at the default 10,000 per user; they are still counted before every
batch). With ``--split``, ``starburst api`` and ``starburst controller`` run as separate
processes on the same database, as the Helm chart deploys them: ``--api-replicas`` API
processes (default 2, the chart's ``api.replicas``) share the port (``api_reuse_port``: the
kernel spreads wrk's connections over them as the chart's Service spreads them over its pods)
and one controller; the passes then no longer share an API's interpreter lock (the CPU column
counts every process):

1. ``POST /v1/jobs`` with ``wrk`` at 1, 8, 32 and 64 connections (one job per request, each
   with its own ``Idempotency-Key``), each without and with retries (every other request
   repeats the previous key, as a client retrying after a timeout does): requests/s and
   p50/p99 latency (targets at 32 in flight: ≥ 1,000 submits/s, p99 < 100 ms), the server
   process's CPU milliseconds per submit (API, group commit and the controller's passes
   together: a figure other work on the machine disturbs far less than the rate), and what
   wrk saw go wrong: socket errors and timeouts, and answers that were not a 201 or 200
   carrying a job id (a Lua ``response`` hook reads every answer). Before each row the
   controller has admitted everything and the previous rows' jobs are cancelled, so every
   row starts on an empty queue (its depth at the start and at the end is printed). Before
   the first row, ``--warm-up`` seconds (2) of submissions and of the hello go unmeasured:
   otherwise the first row alone paid both servers' first connections and statements (its
   p99 85-136 ms where the next rows' were 30-46 ms).
2. Exactness: 2,000 keyed submissions from 32 threads, each sent twice — three in four one
   after the other (the repeat after the first answer), one in four at once on two
   connections (both in flight together). Every pair must get one 201 and one 200 with the
   same id, and PostgreSQL must hold exactly one job per key: lost (acknowledged, or sent,
   but not stored) and duplicated (a key or an id stored twice) are counted from the
   database (both must be 0).
3. ``GET /v1/jobs`` (every state, and the active view), first page, and
   ``GET /v1/costs?by=team,month`` with ``--history`` finished jobs and their cost entries in
   the store, once the controller has admitted the backlog: p50/p99 (target p50 < 20 ms).
   Beside every row, the same ``wrk`` (connections, seconds) right after it on a bare FastAPI
   hello app under the same uvicorn, started once for the whole run: its rate and the ratio
   submits ÷ hello of that row (issue 37's target at 32 in flight: ≥ 0.6×), so the machine's
   load falls on both sides of each ratio.
4. ``GET /healthz`` on the same server beside a bare FastAPI app under the same uvicorn,
   and the ratio ours ÷ bare as in section 1 (target: within 2×, ≥ 0.5×), and the
   ceiling: the store's own batched submissions on a quiet store (measured before the
   server starts), in pages of 500 (``submit_many``) and in the group commit's batches of
   32 keyed submissions (``submit_many`` with an actor per item).

At the end every job of the run still waiting or running is cancelled and the controller
stops the one running (its ``sleep 600`` would outlive the server, by design); a job process
still alive once the servers stopped is killed by the pid its state directory records.

Needs ``wrk`` (Debian package ``wrk``). Prints figures, never pass/fail.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from starburst.adapters.db import migrate  # noqa: E402
from starburst.adapters.db.store import SqlStore  # noqa: E402
from starburst.core.lifecycle import JobState  # noqa: E402
from starburst.core.records import JobSpec, Move, Role  # noqa: E402
from tests.support.postgres import (  # noqa: E402
    drop_database,
    fresh_database,
    scratch_database,
    server_url,
)

#: the server's pass interval (STARBURST_PASS_INTERVAL_S's default)
PASS_INTERVAL_S = 2.0
#: the servers' waiting-jobs limits, per user and per team (see ``start_server``)
WAITING_LIMIT = 1_000_000

BODY = {"image": "bench:1", "command": "sleep 600", "gpus": 1, "team": "lab"}

SUBMIT_LUA = """
local counter = 0
local retry = %(retry)s
local prefix = "%(prefix)s"
local last = nil
local threads = {}
function setup(thread)
  thread:set("tid", tostring(math.random(1, 1e9)))
  table.insert(threads, thread)
end
function init(args) created = 0; repeated = 0; other = 0; noid = 0 end
request = function()
  local key
  if retry and last ~= nil and counter %% 2 == 1 then key = last else
    key = prefix .. tid .. "-" .. counter; last = key end
  counter = counter + 1
  wrk.headers["Idempotency-Key"] = key
  return wrk.format("POST", "/v1/jobs", nil, '%(body)s')
end
function response(status, headers, body)
  if status == 201 then created = created + 1
  elseif status == 200 then repeated = repeated + 1
  else other = other + 1 end
  if not string.find(body, '"id":"', 1, true) then noid = noid + 1 end
end
done = function(summary, latency, requests)
  local c, r, o, n = 0, 0, 0, 0
  for _, t in ipairs(threads) do
    c = c + t:get("created"); r = r + t:get("repeated")
    o = o + t:get("other"); n = n + t:get("noid")
  end
  io.write(string.format("ANSWERS %%d %%d %%d %%d\\n", c, r, o, n))
end
"""

BARE_APP = """
from fastapi import FastAPI
app = FastAPI()
@app.get("/healthz")
def healthz():
    return {"ok": True}
"""


@contextlib.contextmanager
def bare_app() -> Iterator[int]:
    """A bare FastAPI hello app (``BARE_APP``) under the same uvicorn; its port."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "bare.py").write_text(textwrap.dedent(BARE_APP))
        argv = [sys.executable, "-m", "uvicorn", "bare:app", "--port", str(port)]
        bare = subprocess.Popen([*argv, "--log-level", "warning"], cwd=tmp)
        try:
            wait_ready(port)
            yield port
        finally:
            bare.terminate()
            bare.wait(timeout=10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(port: int, path: str = "/healthz", timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", path)
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"server on port {port} did not answer {path} within {timeout:.0f} s")


def wait_listening(pid: int, port: int, timeout: float = 60.0) -> None:
    """Until process ``pid`` listens on ``port`` (its socket among /proc/net/tcp's listeners)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        inodes = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with contextlib.suppress(OSError):
                for line in Path(table).read_text().splitlines()[1:]:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(f"socket:[{fields[9]}]")
        with contextlib.suppress(OSError):
            if any(os.readlink(fd) in inodes for fd in Path(f"/proc/{pid}/fd").iterdir()):
                return
        time.sleep(0.2)
    raise SystemExit(f"process {pid} did not listen on port {port} within {timeout:.0f} s")


def wrk(
    port: int,
    connections: int,
    seconds: float,
    path: str,
    headers: dict[str, str],
    script: str | None = None,
) -> dict[str, float]:
    """Run wrk: requests/s and in all, p50/p99 in ms, non-2xx answers, socket errors and
    timeouts, and (with ``SUBMIT_LUA``) the answers by kind: 201, 200, other, without an id."""
    args = [
        "wrk",
        "-t",
        "2" if connections > 1 else "1",
        "-c",
        str(connections),
        "-d",
        f"{max(1, round(seconds))}s",
        "--latency",
        "--timeout",
        "10s",
    ]
    for name, value in headers.items():
        args += ["-H", f"{name}: {value}"]
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script or "")
    if script:
        args += ["-s", f.name]
    done = subprocess.run([*args, f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True)
    os.unlink(f.name)
    if done.returncode != 0:
        raise SystemExit(f"wrk failed: {done.stderr.strip() or done.stdout.strip()}")
    out = done.stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    lat = {
        q: _ms(re.search(rf"\s{q}%\s+([\d.]+\w+)", out).group(1))  # type: ignore[union-attr]
        for q in ("50", "99")
    }
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    total = re.search(r"(\d+) requests in", out)
    sockets = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out
    )
    answers = re.search(r"ANSWERS (\d+) (\d+) (\d+) (\d+)", out)
    found = {
        "rate": rate,
        "requests": float(total.group(1)) if total else 0.0,
        "p50": lat["50"],
        "p99": lat["99"],
        "non2xx": float(non2xx.group(1)) if non2xx else 0.0,
        "socket_errors": float(sum(int(g) for g in sockets.groups()[:3])) if sockets else 0.0,
        "timeouts": float(sockets.group(4)) if sockets else 0.0,
    }
    if answers:
        for name, value in zip(
            ("created", "repeated", "other", "no_id"), answers.groups(), strict=True
        ):
            found[name] = float(value)
    return found


def _ms(text: str) -> float:
    value, unit = re.match(r"([\d.]+)(\w+)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]


def _post(conn: http.client.HTTPConnection, token: str, key: str) -> None:
    conn.request(
        "POST",
        "/v1/jobs",
        body=json.dumps({**BODY, "name": key}),
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Idempotency-Key": key,
        },
    )


def _answer(conn: http.client.HTTPConnection) -> tuple[int, str | None]:
    response = conn.getresponse()
    data = json.loads(response.read())
    return response.status, data.get("id") if isinstance(data, dict) else None


def exactness(port: int, token: str, url: str, total: int, threads: int) -> dict[str, int]:
    """``total`` keyed submissions, each sent twice (one in four both at once), checked
    against the answers and then against the rows in PostgreSQL."""
    import sqlalchemy as sa

    prefix = f"exact-{uuid.uuid4().hex[:8]}-"
    ids: dict[str, str] = {}
    problems: list[str] = []
    lock = threading.Lock()

    def worker(keys: list[tuple[int, str]]) -> None:
        one = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        two = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for i, key in keys:
            if i % 4 == 0:  # both in flight at once, on two connections
                _post(one, token, key)
                _post(two, token, key)
                answers = [_answer(one), _answer(two)]
            else:  # the repeat after the first answer
                _post(one, token, key)
                first = _answer(one)
                _post(one, token, key)
                answers = [first, _answer(one)]
            with lock:
                statuses = sorted(status for status, _ in answers)
                job_ids = {job_id for _, job_id in answers}
                if statuses != [200, 201]:
                    problems.append(f"{key}: answered {statuses}")
                elif len(job_ids) != 1 or None in job_ids:
                    problems.append(f"{key}: the two answers name {sorted(map(str, job_ids))}")
                else:
                    ids[key] = job_ids.pop()  # type: ignore[assignment]
        one.close()
        two.close()

    keys = [(i, f"{prefix}{i}") for i in range(total)]
    workers = [threading.Thread(target=worker, args=(keys[i::threads],)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for line in problems[:5]:
        print(f"   problem: {line}")
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT id, idempotency_key FROM jobs WHERE idempotency_key LIKE :p"),
            {"p": f"bench/{prefix}%"},
        ).all()
    engine.dispose()
    stored_keys = [str(key).removeprefix("bench/") for _, key in rows]
    stored_ids = {str(job_id) for job_id, _ in rows}
    per_key = {key: stored_keys.count(key) for key in set(stored_keys)} if rows else {}
    return {
        "acknowledged": len(ids),
        "mismatched": len(problems),
        "rows": len(rows),
        "lost": sum(1 for _, key in keys if key not in per_key),
        "lost_acknowledged": sum(1 for job_id in ids.values() if job_id not in stored_ids),
        "duplicated": sum(n - 1 for n in per_key.values()) + len(rows) - len(stored_ids),
    }


def timed_gets(port: int, token: str, path: str, count: int) -> tuple[float, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        response = conn.getresponse()
        response.read()
        samples.append((time.perf_counter() - started) * 1e3)
        if response.status != 200:
            raise SystemExit(f"GET {path}: {response.status}")
    ordered = sorted(samples)
    return statistics.median(samples), ordered[int(0.99 * (len(ordered) - 1))]


def seed_history(store: SqlStore, count: int) -> None:
    """``count`` finished jobs with one cost entry each, spread over three months."""
    import sqlalchemy as sa

    specs = [
        JobSpec(
            user=f"u{i % 50}",
            team=f"t{i % 8}",
            gpus=1 + i % 8,
            image="hist:1",
            command="true",
            name=f"hist-{i}",
        )
        for i in range(count)
    ]
    for start in range(0, count, 5000):
        store.submissions.submit_many(specs[start : start + 5000], at=1_767_225_600.0)
    with store.engine.begin() as conn:
        conn.execute(sa.text("UPDATE jobs SET state = 'succeeded' WHERE image = 'hist:1'"))
        conn.execute(
            sa.text("""
            INSERT INTO cost_entries (job_id, source, user_name, team_name, cloud,
                                      period_start, period_end, gpu_hours, amount_micros,
                                      currency)
            SELECT id, 'cloud', user_name, team_name, 'aws',
                   timestamptz '2026-01-01 00:00+00' + (n % 2160) * interval '1 hour',
                   timestamptz '2026-01-01 01:00+00' + (n % 2160) * interval '1 hour',
                   gpus, gpus * 2500000, 'USD'
            FROM (SELECT *, row_number() OVER () AS n FROM jobs WHERE image = 'hist:1') AS h""")
        )
    store.ledger.rebuild_cost_rollups()  # entries written around the store: reports read rollups


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (0 where /proc is missing)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def batched_ceiling(url: str, jobs: int = 5000) -> tuple[float, float]:
    """Submissions per second through the store alone (no HTTP, no controller): pages of 500
    (``submit_many``, as an admin's import), and batches of 32 keyed submissions, each with
    its actor (``submit_many``, as the group commit writes 32 concurrent requests)."""
    store = SqlStore.open(url)
    specs = [JobSpec(user="ceiling", gpus=1, image="c:1", command="true") for _ in range(jobs)]
    started = time.perf_counter()
    for start in range(0, jobs, 500):
        store.submissions.submit_many(specs[start : start + 500])
    pages = jobs / (time.perf_counter() - started)
    prefix = uuid.uuid4().hex[:8]
    keyed = [(spec, f"ceiling/{prefix}-{i}", "ceiling") for i, spec in enumerate(specs)]
    started = time.perf_counter()
    for start in range(0, jobs, 32):
        store.submissions.submit_many(keyed[start : start + 32])
    batches = jobs / (time.perf_counter() - started)
    store.close()
    return pages, batches


def start_server(
    url: str, state: Path, port: int, mode: str = "server", name: str | None = None
) -> subprocess.Popen[bytes]:
    """``starburst <mode>`` (server: controller and API in one process; api; controller) on
    ``port``, logging to ``<state>/<name or mode>.log``; API processes may share ``port``
    (``api_reuse_port``: each replica of the chart takes some of the connections)."""
    env = {
        **os.environ,
        "STARBURST_DATABASE_URL": url,
        "STARBURST_STATE_DIR": str(state),
        "STARBURST_AUTH": "true",
        "STARBURST_POLICY": "infinite",
        "STARBURST_CLOUD": "none",
        "STARBURST_LOCAL_GPUS": "1",
        "STARBURST_API_PORT": str(port),
        "STARBURST_API_REUSE_PORT": "true" if mode == "api" else "false",
        "STARBURST_LOG_FORMAT": "json",
        # limits far above what a row submits: a row at 2,500/s would reach the defaults
        # (10,000 waiting per user) within its seconds and measure 429s; the limits' count
        # still runs before every batch, as it does with the defaults
        "STARBURST_MAX_WAITING_JOBS_PER_USER": str(WAITING_LIMIT),
        "STARBURST_MAX_WAITING_JOBS_PER_TEAM": str(WAITING_LIMIT),
    }
    log = open(state / f"{name or mode}.log", "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "starburst"), mode],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then wait: the server finishes its pass first, and with the submissions
    backlog on a loaded machine a pass can take many seconds (a kill after two minutes)."""
    proc.terminate()
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        print("   the server did not stop within 120 s of SIGTERM: killed")
        proc.kill()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="each wrk run")
    parser.add_argument("--history", type=int, default=100_000, help="finished jobs in store")
    parser.add_argument("--exact", type=int, default=2000, help="keyed submissions, sent twice")
    parser.add_argument(
        "--split",
        action="store_true",
        help="starburst api and starburst controller as two processes (as the Helm chart "
        "deploys them), not starburst server",
    )
    parser.add_argument(
        "--api-replicas",
        type=int,
        default=2,
        help="with --split: starburst api processes sharing the port, as the chart's "
        "api.replicas (default 2) behind its Service",
    )
    parser.add_argument(
        "--in-flight",
        default="1,8,32,64",
        help="section 1's rows: connections, comma-separated (default 1,8,32,64)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each row of section 1 this many times, each beside its own hello, and "
        "print the median ratio (the machine's noise shows in the spread)",
    )
    parser.add_argument(
        "--warm-up",
        type=float,
        default=2.0,
        help="seconds of submissions, then of the hello, before section 1, not measured "
        "(default 2; 0: none): the first row no longer pays both servers' first requests",
    )
    parser.add_argument(
        "--submits-only", action="store_true", help="section 1 only (no exactness or reads)"
    )
    args = parser.parse_args()
    try:
        args.in_flight = [int(n) for n in args.in_flight.split(",")]
    except ValueError:
        parser.error(f"--in-flight takes numbers separated by commas, not {args.in_flight!r}")
    if min(args.in_flight) < 1 or args.repeat < 1 or args.api_replicas < 1:
        parser.error("--in-flight, --repeat and --api-replicas must be at least 1")
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is missing: apt-get install wrk")
    topology = (
        f"{args.api_replicas} api + 1 controller processes"
        if args.split
        else "starburst server, one process"
    )
    print(f"load average at start: {_load()} (2 cores); {topology}")
    with server_url() as server:
        if server is None:
            raise SystemExit("no PostgreSQL server available")
        with scratch_database(server, "sb_api_ceiling") as quiet:
            migrate.upgrade(quiet)
            ceiling = batched_ceiling(quiet)
        url = fresh_database(server, prefix="sb_api_bench")
        state = Path(tempfile.mkdtemp(prefix="sb-api-bench-"))
        procs: list[subprocess.Popen[bytes]] = []
        store = None
        try:
            migrate.upgrade(url)
            store = SqlStore.open(url)
            store.accounts.save_user("bench", team="lab")
            token = store.accounts.issue_token("bench", Role.USER).secret
            seed_history(store, args.history)
            port = free_port()
            if args.split:
                apis = {f"api-{i}": ("api", port) for i in range(args.api_replicas)}
                starts = {**apis, "controller": ("controller", free_port())}
            else:
                starts = {"server": ("server", port)}
            for name, (mode, at) in starts.items():
                procs.append(start_server(url, state, at, mode, name))
                try:
                    wait_ready(at)
                    wait_listening(procs[-1].pid, at)  # a replica's port answers from the first
                except SystemExit:
                    print((state / f"{name}.log").read_text()[-3000:])
                    raise
            run(port, token, url, store, args, [p.pid for p in procs], ceiling)
        finally:
            if store is not None and procs:
                cancel_running(store, state)
            for proc in procs:
                stop(proc)
            end_local_jobs(state)
            if store is not None:
                store.close()
            drop_database(url)
            shutil.rmtree(state, ignore_errors=True)


def cancel_running(store: SqlStore, state: Path, timeout: float = 30.0) -> None:
    """Cancel every job of the run still waiting or running, as a user would, and wait
    until the controller has stopped the running ones: the first job holds the GPU slot
    with ``sleep 600`` in its own session, which outlives the server by design, and a
    waiting job left behind would start in its place."""
    import sqlalchemy as sa

    ended = ", ".join(f"'{s.value}'" for s in JobState if s.terminal)
    with store.engine.connect() as conn:
        ids = [
            str(r[0])
            for r in conn.execute(sa.text(f"SELECT id FROM jobs WHERE state NOT IN ({ended})"))
        ]
    for start in range(0, len(ids), 1000):
        moves = [Move(i, "cancelled by bench (the run is over)") for i in ids[start : start + 1000]]
        store.lifecycle.transition_many(moves, JobState.CANCELLED, actor="bench")
    deadline = time.monotonic() + timeout
    while _spawned(state) and time.monotonic() < deadline:
        time.sleep(0.2)


def end_local_jobs(state: Path) -> None:
    """With the servers stopped: any job process the bench's servers spawned (under its
    private state directory) that still runs is killed, its process group by the pid and
    spawn token its directory records (``starburst.adapters.local.statedir``)."""
    from starburst.adapters.local import procfs

    for pid, token in _spawned(state):
        procfs.signal_group(pid, token, signal.SIGKILL)
        print(f"   a job process the bench started was still running: killed group {pid}")


def _spawned(state: Path) -> list[tuple[int, str]]:
    """The (pid, spawn token) of each job process under ``state`` whose group still runs."""
    from starburst.adapters.local import procfs

    found = []
    for pid_file in state.glob("cluster/*/pid"):
        try:
            pid = int(pid_file.read_text().strip())
            token = str(json.loads((pid_file.parent / "spawn.json").read_text())["token"])
        except (OSError, ValueError, KeyError):
            continue
        if procfs.group_is_ours(pid, token):
            found.append((pid, token))
    return found


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def backlog(store: SqlStore) -> int:
    """Jobs waiting: submitted (not admitted yet) and queued."""
    return store.jobs.count(JobState.SUBMITTED) + store.jobs.count(JobState.QUEUED)


def drain(store: SqlStore, timeout: float = 600.0) -> None:
    """Wait until the controller has admitted every submission."""
    deadline = time.monotonic() + timeout
    while store.jobs.count(JobState.SUBMITTED):
        if time.monotonic() > deadline:
            raise SystemExit(f"the controller did not admit the backlog within {timeout:.0f} s")
        time.sleep(0.2)


def reset_queue(store: SqlStore, url: str) -> None:
    """Cancel every queued bench job (as a user would, with an event), so the next row starts
    on an empty queue; then give the controller a pass to drop them from its view."""
    import sqlalchemy as sa

    with store.engine.connect() as conn:
        ids = [
            str(r[0])
            for r in conn.execute(
                sa.text("SELECT id FROM jobs WHERE state = 'queued' AND user_name = 'bench'")
            )
        ]
    for start in range(0, len(ids), 1000):
        moves = [
            Move(i, "cancelled by bench (reset between rows)") for i in ids[start : start + 1000]
        ]
        store.lifecycle.transition_many(moves, JobState.CANCELLED, actor="bench")
    time.sleep(PASS_INTERVAL_S + 0.5)


def run(
    port: int,
    token: str,
    url: str,
    store: SqlStore,
    args: argparse.Namespace,
    pids: list[int],
    ceiling: tuple[float, float],
) -> None:
    auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with bare_app() as bare_port:
        submit_rows(port, bare_port, auth, url, store, args, pids)
        drain(store)
        reset_queue(store, url)
        if args.submits_only:
            print(f"\nload average at end: {_load()}")
            return
        rest(port, bare_port, token, url, store, args, ceiling)


def submit_rows(
    port: int,
    bare_port: int,
    auth: dict[str, str],
    url: str,
    store: SqlStore,
    args: argparse.Namespace,
    pids: list[int],
) -> None:
    """Section 1: each row beside the bare app's hello, measured right after it (same
    connections, same seconds), and the ratio submits ÷ hello of that row; with
    ``--repeat``, each row that many times and the median of its ratios."""
    body = json.dumps(BODY)

    def script(retry: bool) -> str:
        return SUBMIT_LUA % {
            "retry": "true" if retry else "false",
            "prefix": uuid.uuid4().hex[:6],
            "body": body,
        }

    def row(connections: int, retry: bool) -> float:
        """One row on an empty queue, printed; its ratio submits ÷ hello."""
        drain(store)
        reset_queue(store, url)
        cpu_before = sum(cpu_seconds(pid) for pid in pids)
        r = wrk(port, connections, args.seconds, "/v1/jobs", auth, script(retry))
        depth = backlog(store)
        drain(store)  # the controller's admission of this row's jobs counts too
        cpu_ms = (sum(cpu_seconds(pid) for pid in pids) - cpu_before) * 1e3 / max(r["requests"], 1)
        hello = wrk(bare_port, connections, args.seconds, "/healthz", {})
        print(
            f"   {_label(connections, retry):>11} {r['rate']:>9,.0f} {r['p50']:>8.1f}"
            f" {r['p99']:>8.1f} {r.get('created', 0):>6.0f} {r.get('repeated', 0):>7.0f}"
            f" {r.get('other', 0):>6.0f} {r.get('no_id', 0):>6.0f}"
            f" {r['socket_errors']:>9.0f} {r['timeouts']:>9.0f} {cpu_ms:>14.2f}"
            f" {depth:>10,} {hello['rate']:>14,.0f} {r['rate'] / hello['rate']:>5.2f}×"
            f" {os.getloadavg()[0]:>5.1f}",
            flush=True,
        )
        return float(r["rate"] / hello["rate"])

    if args.warm_up > 0:  # both servers' first requests (connections, caches) go unmeasured
        warm = wrk(port, max(args.in_flight), args.warm_up, "/v1/jobs", auth, script(False))
        wrk(bare_port, max(args.in_flight), args.warm_up, "/healthz", {})
        print(
            f"\nwarm-up: {warm['requests']:,.0f} submissions and the hello, {args.warm_up:g} s each"
        )
    print("\n1. POST /v1/jobs through HTTP (wrk, one job per request; each row on an empty queue)")
    print(
        "   in flight   submits/s   p50 ms   p99 ms   201s    200s  other  no id  sock err"
        "  timeouts  CPU ms/submit  queue end   bare hello/s  ratio  load"
    )
    for connections in args.in_flight:
        for retry in (False, True):
            ratios = [row(connections, retry) for _ in range(args.repeat)]
            if args.repeat > 1:
                print(
                    f"   {_label(connections, retry):>11}: median ratio "
                    f"{statistics.median(ratios):.2f}× of {args.repeat} "
                    f"({min(ratios):.2f}–{max(ratios):.2f}×)",
                    flush=True,
                )


def _label(connections: int, retry: bool) -> str:
    return f"{connections}{' +retries' if retry else ''}"


def rest(
    port: int,
    bare_port: int,
    token: str,
    url: str,
    store: SqlStore,
    args: argparse.Namespace,
    ceiling: tuple[float, float],
) -> None:
    """Sections 2-4: exactness, reads, /healthz beside the bare app, the store's ceiling."""
    print(
        f"\n2. exactness: {args.exact:,} keyed submissions from 32 threads, each sent twice "
        "(one in four both at once)"
    )
    e = exactness(port, token, url, args.exact, 32)
    print(
        f"   acknowledged {e['acknowledged']:,} (answers wrong {e['mismatched']}); in PostgreSQL "
        f"{e['rows']:,} rows: lost {e['lost']} (acknowledged but missing "
        f"{e['lost_acknowledged']}), duplicated {e['duplicated']}"
    )
    drain(store)
    print(
        f"\n3. reads with {args.history:,} finished jobs of history, the backlog admitted "
        f"({backlog(store):,} waiting; load {_load()})"
    )
    for path in ("/v1/jobs?limit=50", "/v1/jobs?state=active&limit=50", "/v1/costs?by=team,month"):
        p50, p99 = timed_gets(port, token, path, 200)
        print(f"   GET {path:<32} p50 {p50:6.1f} ms   p99 {p99:6.1f} ms")
    print("\n4. /healthz beside a bare FastAPI app (wrk, 32 connections)")
    ours = wrk(port, 32, args.seconds / 2, "/healthz", {})
    base = wrk(bare_port, 32, args.seconds / 2, "/healthz", {})
    print(
        f"   starburst /healthz {ours['rate']:>8,.0f}/s   bare FastAPI {base['rate']:>8,.0f}/s"
        f"   ratio {ours['rate'] / base['rate']:.2f}×"
    )
    print(
        f"\n   ceiling (the store alone, quiet, before the server started): pages of 500 "
        f"{ceiling[0]:,.0f}/s, keyed batches of 32 {ceiling[1]:,.0f}/s"
    )
    print(f"\nload average at end: {_load()}")


if __name__ == "__main__":
    main()
