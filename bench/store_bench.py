"""Store benchmark: batched submissions, queue paging, and the cost reports.

    .venv/bin/python bench/store_bench.py                 # throwaway PostgreSQL, then SQLite
    .venv/bin/python bench/store_bench.py --db sqlite     # one of them
    .venv/bin/python bench/store_bench.py --url postgresql://user:pw@host/db   # an empty db
    .venv/bin/python bench/store_bench.py --jobs 20000 --costs 200000        # smaller run

What it measures (targets are for 2 cores):
1. ``submit_many`` of ``--jobs`` jobs (each with its ``submitted`` event) in batches of
   ``--batch``: submissions per second (target ≥ 2,000/s on PostgreSQL).
2. ``--queued`` of them are admitted to the queue, which is then read page by page
   (``--page`` jobs per page, keyset pagination): per-page latency p50 / p99 (target < 20 ms).
   Then the controller's admission: 500 new submissions queued by one ``Lifecycle.admit``,
   20 times: p50 / p99 per pass.
3. The ledger: the store's ``record_costs`` (entries and their daily rollups) timed on a
   slice, then ``--costs`` entries loaded with one ``INSERT ... SELECT`` and the rollups
   rebuilt from them (what migration 0006 does to an existing ledger). Each job is billed
   hourly in one place, as the meter bills a launch (its cloud, region and GPU type; a
   fifth of the jobs ran on-prem: GPU-hours, no money). Then a report over the whole
   range, for every grouping the API offers, two ways: from every entry (the former path,
   ``tests/support/cost_reference.py``) and from the rollups (``cost_report``, target < 1 s),
   checking that both give the same money, entries and GPU-hours.

It prints figures, never pass/fail. The database is migrated with the real migrations first.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from decimal import Decimal
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from starburst.adapters.db import migrate  # noqa: E402
from starburst.adapters.db.engine import create_engine, redact  # noqa: E402
from starburst.adapters.db.store import SqlStore  # noqa: E402
from starburst.core.lifecycle import JobState  # noqa: E402
from starburst.core.records import CostEntry, CostTotal, JobSpec, Move  # noqa: E402
from tests.support.cost_reference import report_from_entries  # noqa: E402
from tests.support.postgres import scratch_database, server_url  # noqa: E402

T0 = 1_767_225_600.0  # 2026-01-01T00:00Z
HOUR = 3600.0
TEAMS = 20
USERS = 200
#: Reports timed over the whole range: every key the API groups by, alone, then the pairs
#: finance asks for.
GROUPINGS = [
    ("team", "month"),
    ("project", "week"),
    ("gpu_type", "location"),
    ("user", "day"),
    ("job",),
    ("team",),
    ("user",),
    ("project",),
    ("cloud",),
    ("region",),
    ("source",),
    ("day",),
    ("week",),
    ("month",),
]
RUNS = 3

#: One job's ``per_job`` hourly entries: ``{series}``, ``{time}`` and ``{pick}`` differ by
#: dialect (PostgreSQL's generate_series, SQLite's recursive CTE and time functions).
LOAD_COSTS = """
{series}
INSERT INTO cost_entries (job_id, source, user_name, team_name, project, cloud, region,
                          gpu_type, period_start, period_end, gpu_hours, amount_micros,
                          currency)
SELECT j.id, CASE WHEN j.rn % 5 = 0 THEN 'onprem' ELSE 'cloud' END, j.user_name, j.team_name,
       'project-' || (j.rn % 50),
       CASE WHEN j.rn % 5 = 0 THEN 'onprem' ELSE {cloud} END,
       CASE WHEN j.rn % 5 = 0 THEN NULL ELSE {region} END,
       {gpu_type},
       {start}, {end},
       j.gpus, CASE WHEN j.rn % 5 = 0 THEN 0 ELSE j.gpus * 2500000 END, 'USD'
FROM (SELECT id, user_name, team_name, gpus, row_number() OVER (ORDER BY id) AS rn
      FROM jobs LIMIT :jobs) AS j
CROSS JOIN {from_series}
"""
HOURS = "((j.rn * :per_job + g.n) % 2160)"


def pick(expr: str, values: list[str]) -> str:
    cases = " ".join(f"WHEN {i} THEN '{v}'" for i, v in enumerate(values))
    return f"CASE {expr} % {len(values)} {cases} END"


def load_sql(postgres: bool) -> str:
    if postgres:
        series, from_series = "", "generate_series(0, :per_job - 1) AS g(n)"

        def at(hours: str) -> str:
            return f"timestamptz '2026-01-01 00:00+00' + {hours} * interval '1 hour'"
    else:
        series = (
            "WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n + 1 < :per_job)"
        )
        from_series = "g"

        def at(hours: str) -> str:
            return f"datetime('2026-01-01', '+' || {hours} || ' hours') || '.000000'"

    return LOAD_COSTS.format(
        series=series,
        from_series=from_series,
        cloud=pick("j.rn", ["aws", "gcp", "azure"]),
        region=pick("j.rn", ["us-east-1", "eu-west-1"]),
        gpu_type=pick("j.rn", ["A100", "H100", "T4", "L4"]),
        start=at(HOURS),
        end=at(f"({HOURS} + 1)"),
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_submit(store: SqlStore, jobs: int, batch: int) -> list[str]:
    started = time.perf_counter()
    ids: list[str] = []
    for first in range(0, jobs, batch):
        specs = [
            (
                JobSpec(
                    gpus=(1, 1, 2, 4, 8)[i % 5],
                    user=f"user-{i % USERS:03d}",
                    team=f"team-{i % USERS % TEAMS:02d}",
                    image="pytorch:2",
                    command="python train.py",
                    name=f"job-{i}",
                ),
                f"key-{i}",
                None,  # the actor: the job's user
            )
            for i in range(first, min(first + batch, jobs))
        ]
        ids += [s.job.id for s in store.submissions.submit_many(specs, at=T0 + first)]
    elapsed = time.perf_counter() - started
    print(
        f"submit      {jobs:>9,} jobs+events in batches of {batch}: {elapsed:6.2f} s "
        f"= {jobs / elapsed:>8,.0f} jobs/s   (target >= 2,000/s)"
    )
    return ids


def bench_queue(store: SqlStore, queued: int, page: int) -> None:
    started = time.perf_counter()
    moved = store.lifecycle.claim(
        JobState.QUEUED,
        from_state=JobState.SUBMITTED,
        limit=queued,
        reason="admitted",
        actor="bench",
    )
    print(f"admit       {len(moved):>9,} jobs (one claim): {time.perf_counter() - started:6.2f} s")
    latencies: list[float] = []
    cursor: str | None = None
    seen = 0
    while True:
        tick = time.perf_counter()
        result = store.jobs.queue(limit=page, cursor=cursor)
        latencies.append((time.perf_counter() - tick) * 1000)
        seen += len(result.jobs)
        if result.next_cursor is None:
            break
        cursor = result.next_cursor
    print(
        f"queue page  {len(latencies):>9,} pages of {page} ({seen:,} jobs): "
        f"p50 {statistics.median(latencies):5.2f} ms  p99 {percentile(latencies, 0.99):5.2f} ms"
        f"  max {max(latencies):5.2f} ms   (target < 20 ms)"
    )


def bench_record(store: SqlStore, job_ids: list[str]) -> None:
    sample = job_ids[: min(len(job_ids), 5_000)]
    entries = [
        CostEntry(
            job_id,
            T0 + 3000 * HOUR + k * HOUR,
            T0 + 3001 * HOUR + k * HOUR,
            Decimal("2.5"),
            "aws",
            gpu_hours=1.0,
        )
        for job_id in sample
        for k in range(10)
    ]
    started = time.perf_counter()
    for first in range(0, len(entries), 10_000):
        store.ledger.record_costs(entries[first : first + 10_000])
    elapsed = time.perf_counter() - started
    print(
        f"record_costs{len(entries):>9,} entries in batches of 10,000: {elapsed:6.2f} s "
        f"= {len(entries) / elapsed:>8,.0f} entries/s (with their rollups)"
    )


def load_costs(store: SqlStore, job_ids: list[str], costs: int) -> int:
    import sqlalchemy as sa

    per_job = max(1, costs // len(job_ids))
    started = time.perf_counter()
    with store.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM cost_rollups"))
        conn.execute(sa.text("DELETE FROM cost_entries"))
        sql = load_sql(store.is_postgres)
        conn.execute(sa.text(sql), {"per_job": per_job, "jobs": costs // per_job})
        total = int(conn.execute(sa.text("SELECT count(*) FROM cost_entries")).scalar_one())
    print(
        f"load costs  {total:>9,} entries (INSERT ... SELECT): "
        f"{time.perf_counter() - started:6.2f} s"
    )
    started = time.perf_counter()
    store.ledger.rebuild_cost_rollups()
    with store.engine.connect() as conn:
        rows = int(conn.execute(sa.text("SELECT count(*) FROM cost_rollups")).scalar_one())
    print(
        f"rollups     {rows:>9,} rows ({total / max(rows, 1):.1f} entries each) rebuilt "
        f"from the entries: {time.perf_counter() - started:6.2f} s"
    )
    analyze = "VACUUM ANALYZE" if store.is_postgres else "ANALYZE"
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for name in ("cost_entries", "cost_rollups"):
            conn.execute(sa.text(f"{analyze} {name}"))
    return total


def timed(
    store: SqlStore, by: tuple[str, ...], rollups: bool, runs: int
) -> tuple[float, float, list[CostTotal]]:
    """Median wall-clock and CPU seconds of this process (on SQLite: all of the work; on
    PostgreSQL: the driver and building the rows), and the report."""
    walls, cpus = [], []
    read = store.ledger.cost_report if rollups else partial(report_from_entries, store)
    for _ in range(runs):
        tick, cpu = time.perf_counter(), time.process_time()
        report = read(T0, T0 + 90 * 24 * HOUR, by=by)
        walls.append(time.perf_counter() - tick)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), report


def same(a: list[CostTotal], b: list[CostTotal]) -> bool:
    """The same groups, money and entries; GPU-hours equal to the float's precision."""
    return len(a) == len(b) and all(
        (x.key, x.currency, x.amount, x.entries, x.onprem_amount)
        == (y.key, y.currency, y.amount, y.entries, y.onprem_amount)
        and math.isclose(x.gpu_hours, y.gpu_hours, rel_tol=1e-12)
        and math.isclose(x.onprem_gpu_hours, y.onprem_gpu_hours, rel_tol=1e-12)
        for x, y in zip(a, b, strict=True)
    )


def bench_reports(store: SqlStore, total: int, only: list[str] | None = None) -> None:
    for by in GROUPINGS:
        if only and ",".join(by) not in only:
            continue
        before, _, every = timed(store, by, rollups=False, runs=1)  # the former path: slow
        after, cpu, fast = timed(store, by, rollups=True, runs=RUNS)
        amount = sum((row.amount for row in fast), Decimal(0))
        print(
            f"cost report {total:>9,} entries by {' x '.join(by):<18} ({len(fast):>7,} rows, "
            f"${amount:,.2f}): entries {before * 1000:7.1f} ms -> rollups "
            f"{after * 1000:6.1f} ms (this process's CPU {cpu * 1000:6.1f} ms; "
            f"{before / after:5.1f}x, {'identical' if same(every, fast) else 'DIFFERENT'})"
            "   (target < 1,000 ms)"
        )


def bench_admit(store: SqlStore, rounds: int = 20, batch: int = 500) -> None:
    """The controller's admission as a pass makes it: ``batch`` new submissions queued in
    one ``Lifecycle.admit`` (locking them in id order), ``rounds`` times; p50 per batch."""
    spec = JobSpec(gpus=1, user="user-000", team="team-00", image="pytorch:2", command="true")
    times = []
    for _ in range(rounds):
        moves = [
            Move(s.job.id, "admitted", 600.0, 3600.0)
            for s in store.submissions.submit_many([spec] * batch)
        ]
        started = time.perf_counter()
        store.lifecycle.admit(moves, actor="bench")
        times.append((time.perf_counter() - started) * 1000)
    print(
        f"admission   {rounds:>9,} passes of {batch} new jobs: "
        f"p50 {statistics.median(times):5.2f} ms  p99 {percentile(times, 0.99):5.2f} ms"
    )


def run(url: str, args: argparse.Namespace) -> None:
    migrate.upgrade(url)
    store = SqlStore(create_engine(url))
    print(f"database: {redact(url)}")
    ids = bench_submit(store, args.jobs, args.batch)
    bench_queue(store, args.queued, args.page)
    bench_admit(store)
    bench_record(store, ids)
    bench_reports(store, load_costs(store, ids, args.costs), args.only)
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="an empty, reachable database (default: throwaway ones)")
    parser.add_argument("--db", choices=("both", "postgresql", "sqlite"), default="both")
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--queued", type=int, default=10_000)
    parser.add_argument("--page", type=int, default=100)
    parser.add_argument("--costs", type=int, default=1_000_000)
    parser.add_argument(
        "--only", action="append", help="time only this grouping (e.g. job, team,month)"
    )
    args = parser.parse_args()
    if args.url:
        run(args.url, args)
        return
    if args.db in ("both", "postgresql"):
        with server_url() as server:
            if server is None:
                raise SystemExit("no PostgreSQL: install it or pass --url")
            with scratch_database(server, "sb_bench") as url:
                run(url, args)
    if args.db in ("both", "sqlite"):
        with tempfile.TemporaryDirectory(prefix="sb_bench") as directory:
            run(f"sqlite:///{directory}/bench.db", args)


if __name__ == "__main__":
    main()
