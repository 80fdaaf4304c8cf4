"""Prometheus metrics of the controller, on a registry of its own (no global state)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from starburst.controller.report import PassReport


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
            held=Gauge("starburst_jobs_held_by_team_budget",
                       "Jobs kept on-prem because their team's cloud budget is spent",
                       registry=r),
            pass_seconds=Histogram("starburst_pass_seconds", "Duration of a scheduling pass",
                                   registry=r, buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5)),
            leader=Gauge("starburst_leader", "1 while this replica leads", registry=r),
            cloud_spend_rate=Gauge("starburst_cloud_spend_usd_per_hour",
                                   "Hourly price of running cloud launches", registry=r),
            utilization=Gauge("starburst_cluster_utilization",
                              "Busy share of on-prem GPUs", registry=r),
            pass_errors=Counter("starburst_pass_errors", "Passes that failed", registry=r),
            unstartable=Counter("starburst_unstartable_jobs",
                                "Jobs failed because their backend could not start them",
                                registry=r),
            wait_budgets=Histogram("starburst_wait_budget_seconds",
                                   "Wait budgets given to admitted jobs", registry=r,
                                   buckets=(60, 300, 900, 1800, 3600, 7200, 14400, 43200,
                                            86400, float("inf"))),
        )

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
