"""Cost reports read from the daily rollups give exactly what the entries give.

Random entries (seeded) go through the store's two write paths — ``record_costs`` with
retried and clashing intervals, and on-prem runs entered by a state change — and every
grouping the API offers is checked, over ranges that cut days or not, against a plain
recomputation in Python from the entries the ledger kept (the first write of an interval).
GPU-hours and internal rates are multiples of 1/256 and 1/4, so every float sum is exact
in any order and reports can be compared with ``==``, money and GPU-hours alike.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from starburst.adapters.db.reports import whole_days
from starburst.core.billing import REPORT_KEYS
from starburst.core.lifecycle import JobState
from starburst.core.records import CostEntry, CostTotal, JobSpec
from tests.support.cost_reference import report_from_entries

T0 = 1_767_225_600.0  # 2026-01-01T00:00Z, a Thursday
DAY = 86_400.0
MICRO = Decimal("0.000001")
GROUPINGS: list[tuple[str, ...]] = [
    *((k,) for k in REPORT_KEYS),
    (),
    ("team", "month"),
    ("user", "day"),
    ("job", "week"),
    ("gpu_type", "location"),
    ("project", "source", "cloud"),
]
RANGES = [
    (T0 - DAY, T0 + 70 * DAY),  # everything, whole days
    (T0 + 3 * DAY, T0 + 10 * DAY),  # whole days only
    (T0 + 2.5 * DAY, T0 + 40.25 * DAY),  # both edges cut
    (T0 + 5 * DAY - 0.5, T0 + 5 * DAY + 1),  # across one midnight, no whole day
    (T0 + 7 * DAY + 3600, T0 + 7 * DAY + 7200),  # inside one day
    (T0 + 31 * DAY, T0 + 59 * DAY + 1),  # February and a second of March
]
#: Names whose code-point order is not a locale's (capitals first, accents last).
USERS = ("ann", "Bob", "zoe", "Zed", "émile")
TEAMS = ("ml", "CV", "_ops")
RATES: list[dict[str, float] | None] = [None, {"a100": 2.5, "*": 0.25}, {"H100": 4.0}]


@dataclass(frozen=True)
class Owner:
    job: str
    user: str
    team: str
    project: str | None
    gpu_type: str | None
    gpus: int


@dataclass(frozen=True)
class Kept:
    """An entry as the ledger keeps it (owner columns copied from the job)."""

    owner: Owner
    entry: CostEntry


def make_jobs(store, rng: random.Random) -> list[Owner]:  # type: ignore[no-untyped-def]
    owners = []
    for i in range(12):
        spec = JobSpec(
            gpus=rng.choice((1, 2, 8)),
            user=USERS[i % len(USERS)],
            team=TEAMS[i % len(TEAMS)],
            gpu_type=rng.choice(("A100", "H100", "a100", None)),
            extra={"project": f"p{i % 4}"} if i % 6 else {},
        )
        job = store.submissions.submit(spec).job
        project = spec.extra.get("project")
        owners.append(Owner(job.id, spec.user, spec.team, project, spec.gpu_type, spec.gpus))  # type: ignore[arg-type]
    return owners


def random_entry(rng: random.Random, owner: Owner) -> CostEntry:
    day = rng.randrange(0, 62)
    start = T0 + day * DAY + rng.choice((0, 1, DAY - 1, rng.randrange(1, int(DAY))))
    cloud, region = rng.choice((("aws", "us-east-1"), ("aws", None), ("gcp", "eu-west-1")))
    return CostEntry(
        owner.job,
        start,
        start + rng.randrange(1, 7200),
        Decimal(rng.randrange(0, 50_000_000)) * MICRO,
        cloud,
        gpu_hours=rng.randrange(0, 4096) / 256,
        currency=rng.choice(("USD", "USD", "EUR")),
        region=region,
        launch_id=None,
        gpu_type=rng.choice((None, "A100", "L4")),
    )


def write_ledger(store, clock, rng: random.Random) -> list[Kept]:  # type: ignore[no-untyped-def]
    """Random cloud entries (in batches, some re-sent, some clashing) and on-prem runs."""
    owners = make_jobs(store, rng)
    kept: dict[tuple[str, str, float], Kept] = {}
    sent: list[tuple[Owner, CostEntry]] = []
    for _ in range(8):
        batch = [(o, random_entry(rng, o)) for o in rng.choices(owners, k=40)]
        batch += rng.sample(sent, min(len(sent), 10))  # a meter re-sending what it sent
        clash = rng.choice(batch)  # the same interval again, other amount: ignored
        batch.append((clash[0], _replace_amount(clash[1])))
        store.ledger.record_costs([e for _, e in batch])
        for owner, entry in batch:
            kept.setdefault((entry.job_id, entry.source, entry.start), Kept(owner, entry))
        sent += batch
    for owner in owners[:6]:  # runs on the private cluster, entered when they end
        store.lifecycle.transition(owner.job, JobState.QUEUED, reason="admitted", actor="t")
        clock.t = T0 + rng.randrange(0, 60) * DAY + 225 * rng.randrange(0, int(DAY) // 225)
        store.lifecycle.transition(owner.job, JobState.RUNNING_ONPREM, reason="fits", actor="t")
        start = clock.t
        clock.advance(225 * rng.randrange(1, 800))  # a multiple of 1/16 hour, up to 2 days
        store.lifecycle.transition(owner.job, JobState.SUCCEEDED, reason="exit 0", actor="t")
        while start < clock.t:  # a run is entered in pieces, one per UTC day
            end = min(clock.t, (start // DAY + 1) * DAY)
            hours = owner.gpus * (end - start) / 3600
            run = CostEntry(
                owner.job, start, end, Decimal(0), "onprem", gpu_hours=hours, source="onprem"
            )
            kept[(owner.job, "onprem", start)] = Kept(owner, run)
            start = end
    return list(kept.values())


def _replace_amount(entry: CostEntry) -> CostEntry:
    return CostEntry(
        entry.job_id,
        entry.start,
        entry.end,
        entry.amount + 1,
        entry.cloud,
        gpu_hours=entry.gpu_hours + 1,
        currency=entry.currency,
        region=entry.region,
        gpu_type=entry.gpu_type,
    )


def _key(kept: Kept, name: str) -> str | None:
    o, e = kept.owner, kept.entry
    when = datetime.fromtimestamp(e.start, UTC)
    values = {
        "team": o.team,
        "user": o.user,
        "project": o.project,
        "label": o.project,
        "cloud": e.cloud,
        "region": e.region,
        "location": e.cloud if e.region is None else f"{e.cloud}:{e.region}",
        "gpu_type": e.gpu_type or o.gpu_type,
        "source": e.source,
        "job": o.job,
        "day": when.strftime("%Y-%m-%d"),
        "week": (when - timedelta(days=when.weekday())).strftime("%Y-%m-%d"),
        "month": when.strftime("%Y-%m"),
    }
    return values[name]


def recompute(
    ledger: Sequence[Kept],
    since: float,
    until: float,
    by: Sequence[str],
    rates: dict[str, float] | None,
    **filters: str,
) -> list[CostTotal]:
    """The report computed the plain way: every kept entry, one at a time."""
    lowered = {k.lower(): v for k, v in (rates or {}).items()}
    groups: dict[tuple[object, ...], list[object]] = {}
    for kept in ledger:
        e = kept.entry
        if not since <= e.start < until:
            continue
        if any(_key(kept, name) != value for name, value in filters.items()):
            continue
        key = (*(_key(kept, k) for k in by), e.currency)
        total = groups.setdefault(key, [Decimal(0), 0.0, 0, 0.0, 0.0])
        total[0] += e.amount  # type: ignore[operator]
        total[2] += 1  # type: ignore[operator]
        if e.source == "onprem":
            kind = (_key(kept, "gpu_type") or "").lower()
            total[3] += e.gpu_hours  # type: ignore[operator]
            total[4] += e.gpu_hours * lowered.get(kind, lowered.get("*", 0.0))  # type: ignore[operator]
        else:
            total[1] += e.gpu_hours  # type: ignore[operator]
    totals = [
        CostTotal(
            key=dict(zip(by, key[:-1], strict=True)),
            currency=str(key[-1]),
            amount=Decimal(t[0]),  # type: ignore[arg-type]
            gpu_hours=float(t[1]),  # type: ignore[arg-type]
            entries=int(t[2]),  # type: ignore[call-overload]
            onprem_gpu_hours=float(t[3]),  # type: ignore[arg-type]
            onprem_amount=Decimal(str(t[4])).quantize(MICRO),
        )
        for key, t in groups.items()
    ]
    return sorted(totals, key=lambda t: (tuple(v or "" for v in t.key.values()), t.currency))


def cases(
    ledger: Sequence[Kept],
) -> Iterator[tuple[tuple[float, float], tuple[str, ...], dict[str, float] | None, dict[str, str]]]:
    """Every grouping over every range, with the rates and one filter taking turns."""
    first = ledger[0]
    filters: list[dict[str, str]] = [
        {},
        {"team": first.owner.team},
        {"user": first.owner.user},
        {"cloud": "aws"},
        {"project": "p1"},
        {"job": first.owner.job},
        {"source": "onprem"},
    ]
    n = 0
    for span in RANGES:
        for by in GROUPINGS:
            yield span, by, RATES[n % len(RATES)], filters[n % len(filters)]
            n += 1


@pytest.fixture
def ledger(store, clock) -> list[Kept]:  # type: ignore[no-untyped-def]
    return write_ledger(store, clock, random.Random(14))


def test_every_grouping_from_rollups_equals_a_plain_recomputation(store, ledger) -> None:  # type: ignore[no-untyped-def]
    assert any(k.entry.source == "onprem" for k in ledger)
    compared = 0
    for (since, until), by, rates, filters in cases(ledger):
        expected = recompute(ledger, since, until, by, rates, **filters)
        fast = store.ledger.cost_report(since, until, by, rates=rates, **filters)
        assert fast == expected, (since, until, by, rates, filters)
        every = report_from_entries(store, since, until, by, rates=rates, **filters)
        assert every == expected, (since, until, by, rates, filters)
        compared += len(expected)
    assert compared > 500  # the cases are not vacuous


def test_rollups_hold_fewer_rows_and_a_rebuild_changes_no_report(store, ledger) -> None:  # type: ignore[no-untyped-def]
    with store.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT count(*), sum(entries) FROM cost_rollups")).one()
    assert rows[1] == len(ledger) and rows[0] < len(ledger)
    before = store.ledger.cost_report(T0 - DAY, T0 + 70 * DAY, ("job", "day", "source", "location"))
    store.ledger.rebuild_cost_rollups()
    assert (
        store.ledger.cost_report(T0 - DAY, T0 + 70 * DAY, ("job", "day", "source", "location"))
        == before
    )


def test_a_key_split_over_two_rollup_rows_still_adds_up(store, ledger) -> None:  # type: ignore[no-untyped-def]
    """Two writers that both found no rollup row for a key each insert one: harmless."""
    columns = (
        "day, job_id, source, user_name, team_name, project, cloud, region, gpu_type, currency"
    )
    with store.engine.begin() as conn:
        first = conn.execute(sa.text("SELECT min(id) FROM cost_rollups")).scalar_one()
        conn.execute(
            sa.text(
                f"INSERT INTO cost_rollups ({columns}, amount_micros, gpu_hours, entries) "
                f"SELECT {columns}, amount_micros, gpu_hours, entries FROM cost_rollups "
                "WHERE id = :id"
            ),
            {"id": first},
        )
        conn.execute(
            sa.text(
                "UPDATE cost_rollups SET amount_micros = 0, gpu_hours = 0, entries = 0 "
                "WHERE id = :id"
            ),
            {"id": first},
        )
    span = (T0 - DAY, T0 + 70 * DAY)
    assert store.ledger.cost_report(*span, ("job", "day")) == recompute(
        ledger, *span, ("job", "day"), None
    )


@pytest.mark.parametrize(
    ("since", "until", "days"),
    [
        ("2026-01-01T00:00", "2026-01-03T00:00", ("2026-01-01", "2026-01-03")),
        ("2026-01-01T00:00:01", "2026-01-03T23:59", ("2026-01-02", "2026-01-03")),
        ("2026-01-01T06:00", "2026-01-01T18:00", None),
        ("2026-01-01T06:00", "2026-01-02T05:00", None),
        ("2026-01-01T05:00+05:00", "2026-01-02T00:00+00:00", ("2026-01-01", "2026-01-02")),
        ("2026-01-01T06:00+05:00", "2026-01-02T00:00+00:00", None),
    ],
)
def test_whole_days_are_the_utc_days_inside_the_range(since, until, days) -> None:  # type: ignore[no-untyped-def]
    def moment(text: str) -> datetime:
        parsed = datetime.fromisoformat(text)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)

    found = whole_days(moment(since), moment(until))
    assert (None if found is None else tuple(d.strftime("%Y-%m-%d") for d in found)) == days
