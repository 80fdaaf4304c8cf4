"""Prometheus metrics of the controller, on a registry of its own (no global state).

Cost counters follow the ledger (``LedgerCounters``): ``starburst_cloud_cost_total`` (money,
by team, location and currency) and ``starburst_gpu_seconds_total`` (by team and location;
on-prem runs are located at ``onprem``) are the sums of the ledger's entries, read
incrementally on each scrape (with the ids a concurrent writer had not committed yet asked
for again), so they agree with every cost report and survive restarts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, Metric

from starburst.controller.loop.report import PassReport
from starburst.core.ports import IdRange, Ledger


@dataclass
class ControllerMetrics:
    registry: CollectorRegistry
    queue_length: Gauge
    admissions: Counter
    starts: Counter
    bursts: Counter
    pull_backs: Counter
    held: Gauge
    pass_seconds: Histogram
    leader: Gauge
    cloud_spend_rate: Gauge
    utilization: Gauge
    pass_errors: Counter
    unstartable: Counter
    wait_budgets: Histogram
    budget_used: Gauge
    budget_alerts: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry | None = None) -> ControllerMetrics:
        r = registry or CollectorRegistry()
        return cls(
            registry=r,
            queue_length=Gauge("starburst_queue_length", "Jobs waiting on-prem", registry=r),
            admissions=Counter("starburst_admissions", "Jobs admitted to the queue", registry=r),
            starts=Counter("starburst_onprem_starts", "Jobs started on-prem", registry=r),
            bursts=Counter("starburst_bursts", "Jobs burst to the cloud", registry=r),
            pull_backs=Counter("starburst_pull_backs", "Star-Wait pull-backs", registry=r),
            held=Gauge(
                "starburst_jobs_held_by_team_budget",
                "Jobs kept on-prem because their team's cloud budget is spent",
                registry=r,
            ),
            pass_seconds=Histogram(
                "starburst_pass_seconds",
                "Duration of a scheduling pass",
                registry=r,
                buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            ),
            leader=Gauge("starburst_leader", "1 while this replica leads", registry=r),
            cloud_spend_rate=Gauge(
                "starburst_cloud_spend_usd_per_hour",
                "Hourly price of running cloud launches",
                registry=r,
            ),
            utilization=Gauge(
                "starburst_cluster_utilization", "Busy share of on-prem GPUs", registry=r
            ),
            pass_errors=Counter("starburst_pass_errors", "Passes that failed", registry=r),
            unstartable=Counter(
                "starburst_unstartable_jobs",
                "Jobs failed because their backend could not start them",
                registry=r,
            ),
            wait_budgets=Histogram(
                "starburst_wait_budget_seconds",
                "Wait budgets given to admitted jobs",
                registry=r,
                buckets=(60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400, float("inf")),
            ),
            budget_used=Gauge(
                "starburst_budget_used_ratio",
                "Share of the team's monthly cloud budget spent",
                ["team"],
                registry=r,
            ),
            budget_alerts=Counter(
                "starburst_budget_alerts",
                "Budget alert thresholds crossed (once per month each)",
                ["team", "threshold"],
                registry=r,
            ),
        )

    def follow_ledger(self, ledger: Ledger) -> LedgerCounters:
        """Serve the ledger's cost counters from ``ledger`` on this registry."""
        counters = LedgerCounters(ledger)
        self.registry.register(counters)
        return counters

    def observe(self, report: PassReport, seconds: float) -> None:
        self.queue_length.set(report.queue_length)
        self.admissions.inc(report.admitted)
        self.starts.inc(len(report.started))
        self.bursts.inc(len(report.burst))
        self.pull_backs.inc(len(report.pulled_back))
        self.unstartable.inc(len(report.unstartable))
        self.held.set(len(report.held))
        self.pass_seconds.observe(seconds)
        self.utilization.set(report.utilization)
        self.cloud_spend_rate.set(report.spend_rate)
        for budget in report.budgets:
            self.wait_budgets.observe(budget)


class LedgerCounters:
    """A collector whose counters are the ledger's sums (see the module docstring).

    It reads the entries above the highest id it has read, and asks again for the ids below
    it that were missing (``LedgerRead.missing``): on PostgreSQL an id is taken before its
    transaction commits, so an entry may appear after a higher one was counted. An id still
    missing ``missing_ttl_s`` after it was first seen is taken to be rolled back and is no
    longer asked for (a restart re-sums the whole ledger anyway).
    """

    def __init__(
        self,
        ledger: Ledger,
        *,
        missing_ttl_s: float = 3600.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ledger = ledger
        self._after = 0
        self._missing: dict[IdRange, float] = {}  # → when first seen missing
        self._ttl, self._monotonic = missing_ttl_s, monotonic
        self._money: dict[tuple[str, str, str], float] = {}
        self._gpu_seconds: dict[tuple[str, str], float] = {}

    def describe(self) -> list[Metric]:
        return []  # nothing read at registration: the ledger is read on scrape

    def collect(self) -> Iterator[Metric]:
        read = self.ledger.ledger_totals_after(self._after, tuple(self._missing))
        for team, location, source, currency, micros, gpu_hours in read.rows:
            team = team or ""
            if source != "onprem":
                key = (team, location, currency)
                self._money[key] = self._money.get(key, 0.0) + int(micros or 0) / 1e6
            where = (team, location)
            self._gpu_seconds[where] = (
                self._gpu_seconds.get(where, 0.0) + float(gpu_hours or 0.0) * 3600
            )
        self._after = read.top
        self._missing = self._still_missing(read.missing)
        yield from self._families()

    def _still_missing(self, missing: tuple[IdRange, ...]) -> dict[IdRange, float]:
        """The ranges to ask for again, each with when its ids were first seen missing."""
        now = self._monotonic()
        kept = {}
        for first, last in missing:
            seen = min(
                (t for (a, b), t in self._missing.items() if a <= first and last <= b),
                default=now,
            )
            if now - seen < self._ttl:
                kept[(first, last)] = seen
        return kept

    def _families(self) -> tuple[CounterMetricFamily, CounterMetricFamily]:
        money = CounterMetricFamily(
            "starburst_cloud_cost", "Cloud money metered", labels=["team", "location", "currency"]
        )
        for (team, location, currency), value in sorted(self._money.items()):
            money.add_metric([team, location, currency], value)
        seconds = CounterMetricFamily(
            "starburst_gpu_seconds", "GPU-seconds used", labels=["team", "location"]
        )
        for (team, location), value in sorted(self._gpu_seconds.items()):
            seconds.add_metric([team, location], value)
        return money, seconds
