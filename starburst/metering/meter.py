"""Cost metering: a launch's billed time turned into cost entries (price × billed time).

Terms:
- *launch*: one cloud run of one job (a SkyPilot managed job or an emulated one), opened at
  ``launched_at`` with an hourly ``price_per_hour`` for all its GPUs.
- *billed time*: from launch to end, provisioning and spot recovery included: the cloud bills
  while instances exist, and Starburst prefers to over- rather than under-state a bill.
- *cost entry*: ``price × (end − start)`` for one interval of one launch; entries of a launch
  tile its billed time without gaps or overlaps. The last one has ``final=True``.
- *reprice*: a failover to another option changes the price; the open interval is closed at
  the old price and a new one starts at the new price.

Invariants: the meter is pure — time comes in as arguments, no clock is read, nothing is
stored; the entries are plain frozen values a store can persist as they are. For every launch,
the sum of its entries' ``cost`` equals Σ price × duration of its segments, and no interval is
billed twice (``accrue`` may be called as often as wished). After ``finish`` a launch accrues
nothing more, and finishing it again returns nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from starburst.core.errors import ConfigError


@dataclass(frozen=True, slots=True)
class BilledLaunch:
    """What the meter needs to know about one cloud launch."""

    launch: str
    job_id: str
    team: str | None
    where: str
    accelerators: str
    price_per_hour: float
    launched_at: float
    emulated: bool = False


@dataclass(frozen=True, slots=True)
class CostEntry:
    """``cost`` dollars for billing ``launch`` from ``start`` to ``end`` (seconds)."""

    launch: str
    job_id: str
    team: str | None
    where: str
    accelerators: str
    price_per_hour: float
    start: float
    end: float
    cost: float
    final: bool
    emulated: bool = False

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def describe(self) -> str:
        label = " [emulated]" if self.emulated else ""
        return (
            f"{self.job_id} on {self.where} ({self.accelerators}, ${self.price_per_hour:.2f}/h): "
            f"${self.cost:.4f} for {self.seconds:.0f}s{label}"
        )


def entry_for(launch: BilledLaunch, start: float, end: float, final: bool) -> CostEntry:
    """The cost entry of one billed interval of ``launch``."""
    if end < start:
        raise ConfigError(f"launch {launch.launch}: interval ends before it starts")
    cost = launch.price_per_hour * (end - start) / 3600.0
    return CostEntry(
        launch.launch,
        launch.job_id,
        launch.team,
        launch.where,
        launch.accelerators,
        launch.price_per_hour,
        start,
        end,
        cost,
        final,
        launch.emulated,
    )


@dataclass(slots=True)
class _Open:
    launch: BilledLaunch
    metered_until: float


class CostMeter:
    """Open launches and how far each has been billed."""

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}

    @property
    def open_launches(self) -> list[str]:
        return sorted(self._open)

    def open(self, launch: BilledLaunch, metered_until: float | None = None) -> None:
        """Start billing ``launch``; ``metered_until`` resumes a launch a store already billed.

        Opening an already open launch does nothing (idempotent, as reconciling needs).
        """
        if launch.launch not in self._open:
            since = launch.launched_at if metered_until is None else metered_until
            self._open[launch.launch] = _Open(launch, since)

    def accrue(self, now: float) -> list[CostEntry]:
        """Entries for every open launch from where it was billed up to ``now``."""
        entries: list[CostEntry] = []
        for name in sorted(self._open):
            state = self._open[name]
            if now > state.metered_until:
                entries.append(entry_for(state.launch, state.metered_until, now, final=False))
                state.metered_until = now
        return entries

    def reprice(self, launch: str, at: float, price_per_hour: float, where: str) -> list[CostEntry]:
        """Close the current interval at the old price and bill on at the new one."""
        state = self._open.get(launch)
        if state is None:
            return []
        entries = self._close_to(state, at, final=False)
        old = state.launch
        state.launch = BilledLaunch(
            old.launch,
            old.job_id,
            old.team,
            where,
            old.accelerators,
            price_per_hour,
            old.launched_at,
            old.emulated,
        )
        return entries

    def finish(self, launch: str, ended_at: float) -> list[CostEntry]:
        """The final entry of a launch that ended (succeeded, failed or was cancelled)."""
        state = self._open.pop(launch, None)
        if state is None:
            return []
        end = max(ended_at, state.metered_until)
        return [entry_for(state.launch, state.metered_until, end, final=True)]

    def _close_to(self, state: _Open, at: float, final: bool) -> list[CostEntry]:
        if at <= state.metered_until:
            return []
        entry = entry_for(state.launch, state.metered_until, at, final)
        state.metered_until = at
        return [entry]


def total_cost(entries: Iterable[CostEntry]) -> float:
    return sum(e.cost for e in entries)
