"""REST API benchmark: submissions through the real HTTP stack, with the controller running.

    .venv/bin/python bench/api_bench.py                      # throwaway PostgreSQL
    .venv/bin/python bench/api_bench.py --seconds 4 --history 20000   # a shorter run

What it measures, against ``starburst server`` (controller + API in one process, as a lab runs
it) on PostgreSQL with auth on, a local cluster of one GPU slot and policy ``infinite``: the
first job holds the slot, every other one is admitted and waits, so the controller's passes run
beside the API the whole time:

1. ``POST /v1/jobs`` with ``wrk`` at 1, 8, 32 and 64 connections (one job per request, each
   with its own ``Idempotency-Key``), and at 32 with retries (every other request repeats the
   previous key, as a client retrying after a timeout does): requests/s and p50/p99 latency
   (targets at 32 in flight: ≥ 1,000 submits/s, p99 < 100 ms), and the server process's CPU
   milliseconds per submit (API, group commit and the controller's passes together): a figure
   other work on the machine disturbs far less than the rate.
2. Exactness: 2,000 submissions from 32 threads, each sent twice with the same key; every
   first answer must be 201, every repeat 200 with the same id, and the database must hold
   exactly 2,000 of them: lost and duplicated are counted (both must be 0).
3. ``GET /v1/jobs`` (the active view, first page) and ``GET /v1/costs?by=team,month`` with
   ``--history`` finished jobs and their cost entries in the store: p50/p99 (target p50 < 20 ms).
4. ``GET /healthz`` on the same server beside a bare FastAPI app under the same uvicorn
   (target: within 2×), and the store's own batched ``submit_many`` rate: the ceiling.

Needs ``wrk`` (Debian package ``wrk``). Prints figures, never pass/fail.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from starburst.adapters.db import migrate  # noqa: E402
from starburst.adapters.db.store import SqlStore  # noqa: E402
from starburst.core.records import JobSpec, Role  # noqa: E402
from tests.support.postgres import drop_database, fresh_database, server_url  # noqa: E402

BODY = {"image": "bench:1", "command": "sleep 600", "gpus": 1, "team": "lab"}

SUBMIT_LUA = """
local counter = 0
local retry = %(retry)s
local prefix = "%(prefix)s"
local last = nil
function setup(thread) thread:set("tid", tostring(math.random(1, 1e9))) end
request = function()
  local key
  if retry and last ~= nil and counter %% 2 == 1 then key = last else
    key = prefix .. tid .. "-" .. counter; last = key end
  counter = counter + 1
  wrk.headers["Idempotency-Key"] = key
  return wrk.format("POST", "/v1/jobs", nil, '%(body)s')
end
done = function(summary, latency, requests)
  io.write(string.format("STATUS_ERRORS %%d\\n", summary.errors.status))
end
"""

BARE_APP = """
from fastapi import FastAPI
app = FastAPI()
@app.get("/healthz")
def healthz():
    return {"ok": True}
"""


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


def wrk(
    port: int,
    connections: int,
    seconds: float,
    path: str,
    headers: dict[str, str],
    script: str | None = None,
) -> dict[str, float]:
    """Run wrk; requests/s and in all, p50/p99 in ms, and non-2xx answers."""
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
    if done.returncode != 0:
        raise SystemExit(f"wrk failed: {done.stderr.strip() or done.stdout.strip()}")
    out = done.stdout
    os.unlink(f.name)
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    lat = {
        q: _ms(re.search(rf"\s{q}%\s+([\d.]+\w+)", out).group(1))  # type: ignore[union-attr]
        for q in ("50", "99")
    }
    errors = re.search(r"STATUS_ERRORS (\d+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    total = re.search(r"(\d+) requests in", out)
    return {
        "rate": rate,
        "requests": float(total.group(1)) if total else 0.0,
        "p50": lat["50"],
        "p99": lat["99"],
        "errors": float(errors.group(1) if errors else non2xx.group(1) if non2xx else 0),
    }


def _ms(text: str) -> float:
    value, unit = re.match(r"([\d.]+)(\w+)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]


def exactness(port: int, token: str, total: int, threads: int) -> tuple[int, int, int]:
    """(acknowledged, lost, duplicated) for ``total`` keyed submissions, each sent twice."""
    prefix = f"exact-{uuid.uuid4().hex[:8]}-"
    ids: dict[str, str] = {}
    problems: list[str] = []
    lock = threading.Lock()

    def worker(keys: list[str]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for key in keys:
            for attempt in (1, 2):
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
                response = conn.getresponse()
                data = json.loads(response.read())
                expected = 201 if attempt == 1 else 200
                with lock:
                    if response.status != expected:
                        problems.append(f"{key}: {response.status} on attempt {attempt}")
                    elif attempt == 1:
                        ids[key] = data["id"]
                    elif ids.get(key) != data["id"]:
                        problems.append(f"{key}: the retry returned another job")
        conn.close()

    keys = [f"{prefix}{i}" for i in range(total)]
    workers = [threading.Thread(target=worker, args=(keys[i::threads],)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for line in problems[:5]:
        print(f"   problem: {line}")
    return len(ids), total - len(ids), len(problems)


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
        store.submit_many(specs[start : start + 5000], at=1_767_225_600.0)
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
    store.rebuild_cost_rollups()  # entries written around the store: reports read rollups


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (0 where /proc is missing)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def batched_ceiling(url: str, jobs: int = 5000) -> float:
    store = SqlStore.open(url)
    specs = [JobSpec(user="ceiling", gpus=1, image="c:1", command="true") for _ in range(jobs)]
    started = time.perf_counter()
    for start in range(0, jobs, 500):
        store.submit_many(specs[start : start + 500])
    elapsed = time.perf_counter() - started
    store.close()
    return jobs / elapsed


def start_server(url: str, state: Path, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "STARBURST_DATABASE_URL": url,
        "STARBURST_STATE_DIR": str(state),
        "STARBURST_AUTH": "true",
        "STARBURST_POLICY": "infinite",
        "STARBURST_CLOUD": "none",
        "STARBURST_LOCAL_GPUS": "1",
        "STARBURST_API_PORT": str(port),
        "STARBURST_LOG_FORMAT": "json",
    }
    log = open(state / "server.log", "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "starburst"), "server"],
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
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is missing: apt-get install wrk")
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores)")
    with server_url() as server:
        if server is None:
            raise SystemExit("no PostgreSQL server available")
        url = fresh_database(server, prefix="sb_api_bench")
        state = Path(tempfile.mkdtemp(prefix="sb-api-bench-"))
        proc = None
        try:
            migrate.upgrade(url)
            store = SqlStore.open(url)
            store.save_user("bench", team="lab")
            token = store.issue_token("bench", Role.USER).secret
            seed_history(store, args.history)
            store.close()
            port = free_port()
            proc = start_server(url, state, port)
            try:
                wait_ready(port)
            except SystemExit:
                print((state / "server.log").read_text()[-3000:])
                raise
            run(port, token, url, args, proc.pid)
        finally:
            if proc is not None:
                stop(proc)
            drop_database(url)
            shutil.rmtree(state, ignore_errors=True)


def run(port: int, token: str, url: str, args: argparse.Namespace, pid: int) -> None:
    auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    body = json.dumps(BODY)
    print("\n1. POST /v1/jobs through HTTP (wrk, one job per request)")
    print("   in flight   submits/s   p50 ms   p99 ms   non-2xx   server CPU ms/submit")
    for connections, retry in ((1, False), (8, False), (32, False), (64, False), (32, True)):
        script = SUBMIT_LUA % {
            "retry": "true" if retry else "false",
            "prefix": uuid.uuid4().hex[:6],
            "body": body,
        }
        cpu_before = cpu_seconds(pid)
        r = wrk(port, connections, args.seconds, "/v1/jobs", auth, script)
        cpu_ms = (cpu_seconds(pid) - cpu_before) * 1e3 / max(r["requests"], 1)
        label = f"{connections}{' +retries' if retry else ''}"
        print(
            f"   {label:>10} {r['rate']:>11,.0f} {r['p50']:>8.1f} {r['p99']:>8.1f}"
            f" {r['errors']:>9.0f} {cpu_ms:>22.2f}"
        )
    print(f"\n2. exactness: {args.exact:,} keyed submissions from 32 threads, each sent twice")
    acked, lost, dup = exactness(port, token, args.exact, 32)
    print(f"   acknowledged {acked:,}, lost {lost}, duplicated or mismatched {dup}")
    print(f"\n3. reads with {args.history:,} finished jobs of history")
    for path in ("/v1/jobs?limit=50", "/v1/costs?by=team,month"):
        p50, p99 = timed_gets(port, token, path, 200)
        print(f"   GET {path:<28} p50 {p50:6.1f} ms   p99 {p99:6.1f} ms")
    print("\n4. /healthz beside a bare FastAPI app (wrk, 32 connections)")
    ours = wrk(port, 32, args.seconds / 2, "/healthz", {})
    bare_port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "bare.py").write_text(textwrap.dedent(BARE_APP))
        bare = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "bare:app",
                "--port",
                str(bare_port),
                "--log-level",
                "warning",
            ],
            cwd=tmp,
        )
        try:
            wait_ready(bare_port)
            base = wrk(bare_port, 32, args.seconds / 2, "/healthz", {})
        finally:
            bare.terminate()
            bare.wait(timeout=10)
    print(
        f"   starburst /healthz {ours['rate']:>8,.0f}/s   bare FastAPI {base['rate']:>8,.0f}/s"
        f"   ratio {base['rate'] / ours['rate']:.2f}×"
    )
    print(f"\n   ceiling: the store's batched submit_many {batched_ceiling(url):,.0f}/s")
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
