"""Store benchmark: batched submissions, queue paging, and a monthly cost report.

    .venv/bin/python bench/store_bench.py                 # throwaway PostgreSQL
    .venv/bin/python bench/store_bench.py --url postgresql://user:pw@host/db   # an empty db
    .venv/bin/python bench/store_bench.py --jobs 20000 --costs 200000        # smaller run

What it measures (targets are for PostgreSQL on 2 cores):
1. ``submit_many`` of ``--jobs`` jobs (each with its ``submitted`` event) in batches of
   ``--batch``: submissions per second (target ≥ 2,000/s).
2. ``--queued`` of them are admitted to the queue, which is then read page by page
   (``--page`` jobs per page, keyset pagination): per-page latency p50 / p99 (target < 20 ms).
3. ``--costs`` cost entries (loaded with one ``INSERT ... SELECT`` over ``generate_series``;
   the store's own batched ``record_costs`` is timed separately on a slice), then
   ``cost_report`` over the whole range by team × month (target < 1 s), and by the other
   finance groupings (project × week, GPU type × location, user × day, job); a fifth of
   the entries are on-prem usage (GPU-hours, no money), as the ledger holds them.

It prints figures, never pass/fail. The database is migrated with the real migrations first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from starburst.adapters.db import migrate  # noqa: E402
from starburst.adapters.db.engine import create_engine, redact  # noqa: E402
from starburst.adapters.db.store import SqlStore  # noqa: E402
from starburst.core.lifecycle import JobState  # noqa: E402
from starburst.core.records import CostEntry, JobSpec  # noqa: E402
from tests.support.postgres import drop_database, fresh_database, server_url  # noqa: E402

T0 = 1_767_225_600.0  # 2026-01-01T00:00Z
HOUR = 3600.0
TEAMS = 20
USERS = 200
#: Reports timed over the whole range: the monthly team report first (the target), then
#: the finance groupings.
GROUPINGS = [
    ("team", "month"),
    ("project", "week"),
    ("gpu_type", "location"),
    ("user", "day"),
    ("job",),
]

LOAD_COSTS = """
INSERT INTO cost_entries (job_id, source, user_name, team_name, project, cloud, region,
                          gpu_type, period_start, period_end, gpu_hours, amount_micros,
                          currency)
SELECT j.id, CASE WHEN g % 5 = 0 THEN 'onprem' ELSE 'cloud' END, j.user_name, j.team_name,
       'project-' || (j.rn % 50),
       CASE WHEN g % 5 = 0 THEN 'onprem' ELSE (ARRAY['aws', 'gcp', 'azure'])[1 + g % 3] END,
       CASE WHEN g % 5 = 0 THEN NULL ELSE (ARRAY['us-east-1', 'eu-west-1'])[1 + g % 2] END,
       (ARRAY['A100', 'H100', 'T4', 'L4'])[1 + j.rn % 4],
       timestamptz '2026-01-01 00:00+00' + ((j.rn * :per_job + g) % 2160) * interval '1 hour',
       timestamptz '2026-01-01 01:00+00' + ((j.rn * :per_job + g) % 2160) * interval '1 hour',
       j.gpus, CASE WHEN g % 5 = 0 THEN 0 ELSE j.gpus * 2500000 END, 'USD'
FROM (SELECT id, user_name, team_name, gpus, row_number() OVER (ORDER BY id) AS rn
      FROM jobs LIMIT :jobs) AS j
CROSS JOIN generate_series(0, :per_job - 1) AS g
"""


BASELINE = """
SELECT team_name, date_trunc('month', timezone('UTC', period_start)), currency,
       sum(amount_micros), sum(gpu_hours), count(*)
FROM cost_entries
WHERE period_start >= timestamptz '2026-01-01 00:00+00'
  AND period_start < timestamptz '2026-04-01 00:00+00'
GROUP BY 1, 2, 3
"""


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
            )
            for i in range(first, min(first + batch, jobs))
        ]
        ids += [s.job.id for s in store.submit_many(specs, at=T0 + first)]
    elapsed = time.perf_counter() - started
    print(
        f"submit      {jobs:>9,} jobs+events in batches of {batch}: {elapsed:6.2f} s "
        f"= {jobs / elapsed:>8,.0f} jobs/s   (target >= 2,000/s)"
    )
    return ids


def bench_queue(store: SqlStore, queued: int, page: int) -> None:
    started = time.perf_counter()
    moved = store.claim(
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
        result = store.queue(limit=page, cursor=cursor)
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


def bench_costs(store: SqlStore, job_ids: list[str], costs: int) -> None:
    import sqlalchemy as sa

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
        store.record_costs(entries[first : first + 10_000])
    elapsed = time.perf_counter() - started
    print(
        f"record_costs{len(entries):>9,} entries in batches of 10,000: {elapsed:6.2f} s "
        f"= {len(entries) / elapsed:>8,.0f} entries/s"
    )
    per_job = max(1, costs // len(job_ids))
    started = time.perf_counter()
    with store.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM cost_entries"))
        conn.execute(sa.text(LOAD_COSTS), {"per_job": per_job, "jobs": costs // per_job})
        total = conn.execute(sa.text("SELECT count(*) FROM cost_entries")).scalar_one()
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sa.text("VACUUM ANALYZE cost_entries"))
    print(
        f"load costs  {total:>9,} entries (INSERT ... SELECT): "
        f"{time.perf_counter() - started:6.2f} s"
    )
    baseline = []
    for _ in range(5):  # the report's former query shape: one grouping, no showback split
        tick = time.perf_counter()
        with store.engine.connect() as conn:
            conn.execute(sa.text(BASELINE)).all()
        baseline.append(time.perf_counter() - tick)
    print(
        f"baseline    {total:>9,} entries by team x month, plain GROUP BY: median "
        f"{statistics.median(baseline) * 1000:6.1f} ms (the same machine, now)"
    )
    for by in GROUPINGS:
        timings = []
        for _ in range(5):
            tick = time.perf_counter()
            report = store.cost_report(T0, T0 + 90 * 24 * HOUR, by=by)
            timings.append(time.perf_counter() - tick)
        amount = sum((row.amount for row in report), Decimal(0))
        onprem = sum(row.onprem_gpu_hours for row in report)
        print(
            f"cost report {total:>9,} entries by {' x '.join(by):<18} ({len(report):>6,} rows, "
            f"${amount:,.2f}, {onprem:,.0f} on-prem GPU-h): median "
            f"{statistics.median(timings) * 1000:6.1f} ms  max {max(timings) * 1000:6.1f} ms"
            "   (target < 1,000 ms)"
        )


def run(url: str, args: argparse.Namespace) -> None:
    migrate.upgrade(url)
    store = SqlStore(create_engine(url))
    print(f"database: {redact(url)}")
    ids = bench_submit(store, args.jobs, args.batch)
    bench_queue(store, args.queued, args.page)
    if store.is_postgres:
        bench_costs(store, ids, args.costs)
    else:
        print("cost report: skipped (the bulk loader uses PostgreSQL's generate_series)")
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="an empty, reachable database (default: throwaway PG)")
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--queued", type=int, default=10_000)
    parser.add_argument("--page", type=int, default=100)
    parser.add_argument("--costs", type=int, default=1_000_000)
    args = parser.parse_args()
    if args.url:
        run(args.url, args)
        return
    with server_url() as server:
        if server is None:
            raise SystemExit("no PostgreSQL: install it or pass --url")
        url = fresh_database(server, prefix="sb_bench")
        try:
            run(url, args)
        finally:
            drop_database(url)


if __name__ == "__main__":
    main()
