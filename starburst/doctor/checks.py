"""The checks of ``starburst doctor`` (see ``starburst.doctor``), and the order they run in.

Invariants: a check that cannot run (its dependency is down) reports a problem with the fix
and the next checks still run; nothing here changes state (no migration, no lock taken, no
fencing term handed out).
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

    def render(self) -> str:
        line = f"{'OK' if self.ok else 'PROBLEM':<8}{self.name}: {self.detail}"
        return line if self.ok or not self.fix else f"{line}\n        fix: {self.fix}"


def run_checks(settings: Settings, now: float | None = None) -> list[Check]:
    """Every check the settings call for, in a fixed order."""
    from starburst.doctor import cloud, cluster, state

    at = time.time() if now is None else now
    steps: list[Callable[[], list[Check]]] = [lambda: state.database(settings)]
    if settings.cluster == "kubernetes":
        steps.append(lambda: cluster.kubernetes(settings))
    if settings.cloud == "skypilot":
        steps.append(lambda: cloud.skypilot(settings))
    steps += [
        lambda: [prices(settings, at)],
        lambda: [state.runtime_model(settings, at)],
        lambda: [state.leader(settings, at)],
    ]
    results: list[Check] = []
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
