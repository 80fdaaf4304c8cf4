"""The checks of ``starburst doctor`` (see ``starburst.doctor``), and the order they run in.

Invariants: a check that cannot run (its dependency is down) reports a problem with the fix
and the next checks still run, except the leader line, which needs the database: when the
database lines are problems, they alone say what to do. Nothing here changes state (no
migration, no file or directory created, no lock taken, no fencing term handed out).

Terms: a *warning* is a line that is fine for now but worth acting on (the shipped price
table getting old, a controller never started): shown with its fix, it does not make the exit
code 1, so a fresh install is green.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime

from starburst.settings import Settings

PRICE_MAX_AGE_DAYS = 365  # list prices move seldom; spot prices daily (an estimate anyway)
MODEL_MAX_AGE_DAYS = 30


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None
    warning: bool = False  # ok, but with a fix worth doing (see the module's terms)

    def render(self) -> str:
        label = "WARNING" if self.warning else "OK" if self.ok else "PROBLEM"
        line = f"{label:<8}{self.name}: {self.detail}"
        shown = self.fix and (self.warning or not self.ok)
        return f"{line}\n        fix: {self.fix}" if shown else line


def run_checks(settings: Settings, now: float | None = None) -> list[Check]:
    """Every check the settings call for, in a fixed order."""
    from starburst.doctor import cloud, cluster, kueue, state

    at = time.time() if now is None else now
    results = state.database(settings)
    database_ok = all(c.ok for c in results)
    steps: list[Callable[[], list[Check]]] = [lambda: [cluster.configured(settings)]]
    if settings.cluster == "kubernetes":
        steps.append(lambda: cluster.kubernetes(settings))
        steps.append(lambda: [kueue.kueue(settings)])
    steps.append(lambda: [cloud.configured(settings)])
    if settings.cloud == "skypilot":
        steps.append(lambda: cloud.skypilot(settings))
    steps += [lambda: [prices(settings, at)], lambda: [state.runtime_model(settings, at)]]
    if database_ok:
        steps.append(lambda: [state.leader(settings, at)])
    for step in steps:
        results += step()
    return results


def prices(settings: Settings, now: float) -> Check:
    from starburst.pricing import load_price_table

    try:
        table = load_price_table(settings.price_table)
    except Exception as exc:
        return Check("prices", False, str(exc), "fix the file named by price_table")
    where = str(settings.price_table or "the shipped defaults")
    try:
        taken = date.fromisoformat(str(table.taken))
    except ValueError:
        return Check(
            "prices",
            False,
            f"{where}: taken date {table.taken!r} is not a date",
            "set taken: YYYY-MM-DD in the price table",
        )
    age = (datetime.fromtimestamp(now, UTC).date() - taken).days
    detail = f"{where}, prices taken {taken} ({age} days ago)"
    if age > PRICE_MAX_AGE_DAYS and settings.price_table is None:
        return Check(
            "prices",
            True,
            detail + f", older than {PRICE_MAX_AGE_DAYS} days (cost figures are estimates)",
            "python -m starburst.pricing show > prices.yaml, update its prices and taken, "
            "then set price_table: prices.yaml (or $STARBURST_PRICE_TABLE)",
            warning=True,
        )
    if age > PRICE_MAX_AGE_DAYS:
        return Check(
            "prices",
            False,
            detail + f", older than {PRICE_MAX_AGE_DAYS} days",
            "update the prices (and taken) in a copy of prices.yaml; set price_table",
        )
    return Check("prices", True, detail)


def failed(name: str, exc: BaseException, fix: str) -> Check:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return Check(name, False, text[:300], fix)
