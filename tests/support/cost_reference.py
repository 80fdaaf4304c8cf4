"""Cost reports read from every entry, never the daily rollups: the reference the rollups are
checked against (the report tests, ``bench/store_bench.py``).

Built from the ledger's own pieces (``reports.Report`` with ``rollups=False``,
``reports.aggregate``, ``reports.totals``), so it differs from ``SqlLedger.cost_report`` only
in where whole days are read from; the same arguments, the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from starburst.adapters.db.convert import to_time
from starburst.adapters.db.engine import run
from starburst.adapters.db.reports import Report, aggregate, totals
from starburst.adapters.db.store import SqlStore
from starburst.core.billing import report_keys
from starburst.core.records import CostTotal

#: the report filters' names → the columns they narrow (as ``SqlLedger.cost_report``)
COLUMNS = {
    "team": "team_name",
    "user": "user_name",
    "cloud": "cloud",
    "project": "project",
    "job": "job_id",
    "source": "source",
}


def report_from_entries(
    store: SqlStore,
    since: float,
    until: float,
    by: Sequence[str] = ("team",),
    *,
    rates: Mapping[str, float] | None = None,
    top: int | None = None,
    **filters: str | None,
) -> list[CostTotal]:
    """``store.ledger.cost_report(since, until, by, ...)`` computed from every entry;
    ``filters`` as there (``team``, ``user``, ``cloud``, ``project``, ``job``, ``source``)."""
    columns = {COLUMNS[name]: value for name, value in filters.items()}
    keys = report_keys(by)
    postgres = store.database.is_postgres
    query = Report(postgres, keys, rates or {}, columns).query(
        to_time(since), to_time(until), rollups=False, top=top
    )
    if query is None:
        return []
    rows = run(store.database.engine, lambda conn: aggregate(conn, query, postgres=postgres))
    return totals(keys, rows)
