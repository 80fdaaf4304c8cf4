"""Figures that add up in every view and format (PostgreSQL, through the API and the real
CLI): a spend of $0.71 over seven jobs of three teams reads $0.71 in every grouping, in JSON,
CSV and the CLI's table — rows apportioned to the total's cents (``core.apportion``), not
each rounded on its own ($0.10 × 7 = $0.70 before) —, A100s rented as ``2xA100:8`` and as
``A100:1`` are one ``A100`` row, and every command reads windows the same way (``30d``, ISO
dates, ``--since``/``--until``)."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from starburst.core.errors import ConfigError
from starburst.core.records import CostEntry, JobSpec
from tests.api.test_cli import run

PG = pytest.mark.parametrize(
    "db_url", [pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)
NOV20 = datetime(2026, 11, 20, tzinfo=UTC).timestamp()
EACH = Decimal("0.101428")  # × 7 = 0.709996: $0.71, while each job alone is $0.10
HOURS = 1 / 3  # × 7 = 2.333 GPU-hours, while each job alone is 0.333
GROUPINGS = ("job", "team", "user", "team,day", "gpu_type", "gpu_type,location", "cloud")


def _spend(store: Any, clock: Any) -> list[str]:
    clock.set(NOV20)
    teams = ["ml", "ml", "ml", "vision", "vision", "research", "research"]
    ids = []
    for i, team in enumerate(teams):
        job = store.submissions.submit(
            JobSpec(gpus=8, user="alice" if team == "ml" else "bob", team=team, gpu_type="A100"),
            at=NOV20 - 3600,
        ).job.id
        ids.append(job)
        store.ledger.record_costs(
            [
                CostEntry(
                    job,
                    NOV20 - 3600,
                    NOV20 - 1800,
                    EACH,
                    "aws",
                    region="us-east-1",
                    gpu_hours=HOURS,
                    gpu_type="2xA100" if i % 2 else "A100",  # as the old controller wrote it
                )
            ]
        )
    return ids


def _sums(rows: list[dict[str, Any]]) -> tuple[Decimal, Decimal]:
    amount = sum((Decimal(r["amount"]) for r in rows), Decimal(0))
    hours = sum((Decimal(str(r["gpu_hours"])) for r in rows), Decimal(0))
    return amount, hours


@PG
def test_rows_add_up_to_the_total_in_every_grouping_and_format(api) -> None:  # type: ignore[no-untyped-def]
    _spend(api.store, api.clock)
    fin = api.client("fin")
    env = {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["fin"]}
    for by in GROUPINGS:
        report = fin.get("/v1/costs", params={"by": by}).json()
        (total,) = report["totals"]
        assert (total["amount"], total["gpu_hours"]) == ("0.71", 2.333), by
        assert _sums(report["rows"]) == (Decimal("0.71"), Decimal("2.333")), by
        text = fin.get("/v1/costs", params={"by": by, "format": "csv"}).text
        assert _sums(list(csv.DictReader(io.StringIO(text)))) == _sums(report["rows"]), by
        printed = run(["costs", "--by", by], env).stdout.splitlines()[2:]
        amounts = [Decimal(line.split()[-6]) for line in printed if not line.startswith("total")]
        (last,) = [line for line in printed if line.startswith("total")]
        assert sum(amounts, Decimal(0)) == Decimal(last.split()[-5]) == Decimal("0.71"), by
    by_type = fin.get("/v1/costs", params={"by": "gpu_type,location"}).json()["rows"]
    assert [r["key"] for r in by_type] == [{"gpu_type": "A100", "location": "aws:us-east-1"}]
    assert by_type[0]["entries"] == 7


@PG
def test_every_command_reads_windows_alike(api, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _spend(api.store, api.clock)
    fin = api.client("fin")
    env = {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["fin"]}
    relative = fin.get("/v1/costs", params={"since": "30d"}).json()
    assert relative["since"].startswith("2026-10-21T00:00:00")  # 30 days before Nov 20
    assert relative["totals"][0]["amount"] == "0.71"
    iso = fin.get("/v1/costs", params={"since": "2026-11-19", "until": "2026-11-20"}).json()
    assert iso["totals"][0]["amount"] == "0.71"
    made = run(["costs", "--since", "30d", "--until", "1h", "-o", "json"], env)
    assert made.exit_code == 0, made.stderr
    assert json.loads(made.stdout)["until"].startswith("2026-11-19T23:00:00")
    bad = run(["costs", "--since", "yesterday-ish"], env)
    assert bad.exit_code == 1 and bad.stderr.count("\n") == 1
    assert "since: 'yesterday-ish' is not a duration back from now (30d" in bad.stderr
    # history export and tune (one window function) take the same forms; no job ended here,
    # so an accepted window ends in "nothing to export"
    out = tmp_path / "trace.csv"
    for since in ("30d", "2026-11-01"):
        args = ["history", "export", "--since", since, "--until", "1h", "-o", str(out)]
        with pytest.raises(ConfigError, match="no finished jobs in that window"):
            run([*args, "--url", api.db_url])
    for command in (["history", "export", "-o", str(out)], ["tune"]):
        refused = run([*command, "--since", "yesterday-ish", "--url", api.db_url])
        assert refused.exit_code == 2 and "'yesterday-ish' is not" in refused.stderr
