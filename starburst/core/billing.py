"""Billing: the one rule that turns a cloud launch into money, and the calendar it is read in.

Terms:
- *launch*: one cloud run of one job, billed from ``launched_at`` (the burst decision's launch
  request, so provisioning is included: the cloud bills while instances exist) at an hourly
  ``price_per_hour`` for all its GPUs and nodes.
- *charge*: ``price × (end − start)`` for one interval of a launch, with its GPU-hours. A
  launch's charges are fixed chunks of ``chunk`` seconds counted from ``launched_at``, also
  cut at every UTC midnight (``periods``: a chunk never straddles a day, week or month),
  so charging it again (after a crash, on the next pass) yields the very same intervals,
  which the ledger stores once. Before the end only whole chunks are charged; the final
  call also charges the partial last one.
- *on-prem usage*: an on-prem run is metered by the same ``periods`` (GPU-hours, no money),
  while it runs and when it ends, continuing from the last interval entered.
- *billing month*: the UTC calendar month holding an instant; budgets reset at its start.
- *forecast*: month-end spend extrapolated from the spend rate so far this month
  (``spent × month length ÷ elapsed``); never below what is spent.

Invariants: pure — time comes in as arguments; amounts are ``Decimal`` rounded to millionths
(the ledger's unit), so Σ charges = price × billed time up to one micro-unit per chunk.
``starburst.controller.loop.cloudside`` meters with ``charges``; nothing else prices a launch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

from starburst.core.errors import ConfigError
from starburst.core.records import CostTotal

MICRO = Decimal("0.000001")
_HOUR = Decimal(3600)
_PER_UNIT = Decimal(1_000_000)
#: the largest amount of money anyone may set (a budget, a ceiling): 10^12, far above any
#: real bill and well inside what ``to_micros`` and a BIGINT column hold
MAX_MONEY = 10**12


#: Grouping keys a cost report understands (``label`` is another name for ``project``).
REPORT_KEYS = (
    "team",
    "user",
    "project",
    "label",
    "cloud",
    "region",
    "location",
    "gpu_type",
    "source",
    "job",
    "day",
    "week",
    "month",
)


def report_keys(by: Iterable[str]) -> list[str]:
    """``by`` checked and deduplicated, in the order given."""
    keys: list[str] = []
    for key in (k.strip().lower() for k in by):
        if key and key not in REPORT_KEYS:
            raise ConfigError(f"cannot group costs by {key!r}; use any of {', '.join(REPORT_KEYS)}")
        if key and key not in keys:
            keys.append(key)
    return keys


def top_per_currency(totals: Sequence[CostTotal], top: int) -> list[CostTotal]:
    """The ``top`` report rows of highest cloud spend (then cloud GPU-hours, then key) in
    each currency, currencies in order, highest first: amounts in two currencies are never
    compared (the SQL ledger ranks the same way in the database)."""
    ranked = sorted(
        totals,
        key=lambda t: (t.currency, -t.amount, -t.gpu_hours, [v or "" for v in t.key.values()]),
    )
    kept: dict[str, int] = {}
    out = []
    for total in ranked:
        if kept.get(total.currency, 0) < top:
            kept[total.currency] = kept.get(total.currency, 0) + 1
            out.append(total)
    return out


def to_micros(amount: Decimal | float | int) -> int:
    """``amount`` in micro-units (millionths), rounded half to even: how every store keeps
    money, so sums are exact whatever the store."""
    return int((Decimal(str(amount)) * _PER_UNIT).quantize(Decimal(1), ROUND_HALF_EVEN))


def from_micros(micros: int | None) -> Decimal:
    return Decimal(int(micros or 0)) / _PER_UNIT


def per_currency(amounts: Mapping[tuple[int | None, str], Decimal]) -> dict[str, Decimal]:
    """A job's metered money (``Ledger.job_costs``: per launch and currency) summed per
    currency, sorted by currency: amounts in two currencies are never added together."""
    out: dict[str, Decimal] = {}
    for (_, currency), amount in sorted(amounts.items(), key=lambda kv: kv[0][1]):
        out[currency] = out.get(currency, Decimal(0)) + amount
    return out


@dataclass(frozen=True, slots=True)
class BilledLaunch:
    """What a cloud backend says it bills for one launch (read after a restart)."""

    launch: str
    job_id: str
    team: str | None
    where: str
    accelerators: str
    price_per_hour: float
    launched_at: float
    emulated: bool = False


@dataclass(frozen=True, slots=True)
class Charge:
    """Money and GPU-hours for billing ``[start, end)`` of one launch."""

    start: float
    end: float
    amount: Decimal
    gpu_hours: float


def periods(
    start: float, until: float, chunk: float | None, *, final: bool
) -> list[tuple[float, float]]:
    """The metering intervals ``[a, b)`` from ``start`` up to ``until``: each at most
    ``chunk`` seconds (``None``: no limit) and cut at every UTC midnight, so an interval
    lies in one day, week and month. Before the end (``final=False``) only complete
    intervals are returned; the final call also returns the partial last one."""
    if chunk is not None and chunk <= 0:
        raise ValueError("chunk must be positive")
    out: list[tuple[float, float]] = []
    while start < until:
        end = _next_midnight(start)
        if chunk is not None:
            end = min(end, start + chunk)
        if end > until and not final:
            break
        end = min(end, until)
        out.append((start, end))
        start = end
    return out


def _next_midnight(moment: float) -> float:
    day = datetime.fromtimestamp(moment, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return (day + timedelta(days=1)).timestamp()


def charges(
    launched_at: float,
    until: float,
    price_per_hour: Decimal,
    gpus: int,
    *,
    chunk: float,
    final: bool,
) -> list[Charge]:
    """The charges of a launch from ``launched_at`` up to ``until`` (see the module terms):
    one per interval of ``periods``."""
    if chunk <= 0:
        raise ValueError("chunk must be positive")
    out: list[Charge] = []
    for start, end in periods(launched_at, until, chunk, final=final):
        hours = Decimal(str(end - start)) / _HOUR
        out.append(
            Charge(start, end, (price_per_hour * hours).quantize(MICRO), float(hours) * gpus)
        )
    return out


@dataclass(frozen=True, slots=True)
class Usage:
    """GPU-hours of one GPU-type group (``part``) of an on-prem run over ``[start, end)``."""

    start: float
    end: float
    part: int
    gpu_type: str | None
    gpu_hours: float


def gpu_groups(
    parts: Iterable[tuple[int, str | None]], gpus: int, requested: str | None
) -> list[tuple[str | None, int]]:
    """GPUs per GPU type of the nodes a run is placed on (``parts``: GPUs and node GPU type
    of each part), sorted by type; a part of unknown type (a placement recorded before
    types were) counts as the ``requested`` type, and so do all ``gpus`` of a run with no
    recorded placement."""
    groups: dict[str | None, int] = {}
    for count, kind in parts:
        key = kind or requested
        groups[key] = groups.get(key, 0) + count
    if not groups:
        groups[requested] = gpus
    return sorted(groups.items(), key=lambda g: g[0] or "")


def onprem_usage(
    started_at: float,
    resume_at: float | None,
    until: float,
    groups: Sequence[tuple[str | None, int]],
    *,
    chunk: float | None,
    final: bool,
) -> list[Usage]:
    """The usage of an on-prem run started at ``started_at`` still to enter, from
    ``resume_at`` (the end of its last entry; None: nothing entered yet) up to ``until``,
    by ``periods``; one ``Usage`` per interval and GPU-type group. A run that ends before
    its recorded start (an end stamped by another clock) is one empty interval."""
    start = started_at if resume_at is None else max(resume_at, started_at)
    spans = periods(start, until, chunk, final=final)
    if final and not spans and resume_at is None:
        spans = [(started_at, started_at)]
    return [
        Usage(a, b, part, kind, count * (b - a) / 3600.0)
        for a, b in spans
        for part, (kind, count) in enumerate(groups)
    ]


def month_window(now: float) -> tuple[float, float, str]:
    """Start and end (epoch seconds) of the UTC calendar month holding ``now``, and its name
    (``"November 2026"``)."""
    moment = datetime.fromtimestamp(now, UTC)
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if start.month == 12:
        end = start.replace(year=start.year + 1, month=1)
    else:
        end = start.replace(month=start.month + 1)
    return start.timestamp(), end.timestamp(), start.strftime("%B %Y")


def month_end_forecast(spent: Decimal, now: float) -> Decimal:
    """Spend at the end of ``now``'s month if it goes on at this month's rate so far."""
    start, end, _ = month_window(now)
    elapsed = max(now - start, 0.0)
    if elapsed <= 0 or spent <= 0:
        return spent
    rate = spent / Decimal(str(elapsed))
    return max(spent, (rate * Decimal(str(end - start))).quantize(MICRO))
