"""The live store's history as the simulator's input: a trace, a cluster and today's setting.

``load_history`` reads, through the store's ``TuningLog`` only (``store.tuning``), the finished
jobs submitted in a window (measured runtimes, the controller's estimates, user, team, GPUs,
CPUs, GPU type), the cloud money they were metered, the cluster's shape the controller last
recorded and the scheduler configuration it runs. Submit times become seconds from the
window's first submission (the trace format's convention); nothing else is changed.

Terms:
- *today's setting* (``deployed``): the recorded scheduler configuration when the controller
  wrote one — its coefficient is the one it ran with, so replaying it reproduces the live
  run — else the static settings with the newest applied setting.
- *metered price*: the history's cloud dollars ÷ cloud GPU-hours, the $/GPU-hour a replay
  charges unless told otherwise (the simulator prices every GPU-hour alike).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from starburst.core.capacity import Node, PlacementStrategy
from starburst.core.errors import ConfigError
from starburst.core.estimates import EstimateUse
from starburst.core.job import Job
from starburst.core.ordering import QueueOrder
from starburst.core.policy import PolicyKind
from starburst.core.ports import TuningLog
from starburst.core.records import SCHEDULER, AppliedSetting, CloudSpend
from starburst.core.setting import PolicySetting
from starburst.settings import Settings
from starburst.sim.engine import SimOptions
from starburst.sim.shape import write_shape
from starburst.sim.sweep import JobSet, Source
from starburst.sim.trace import write_trace
from starburst.sim.tune import Deployed, Tuning, tune

DEFAULT_PRICE = 2.5


@dataclass(frozen=True, slots=True)
class History:
    jobs: list[Job]
    origin: float  # epoch of the first submission; trace times are relative to it
    nodes: list[Node] | None
    scheduler: Mapping[str, Any] | None
    spend: CloudSpend

    @property
    def price_per_gpu_hour(self) -> float:
        if self.spend.gpu_hours > 0:
            return self.spend.amount / self.spend.gpu_hours
        return DEFAULT_PRICE

    def describe(self) -> str:
        cloud = sum(1 for j in self.jobs if j.extra.get("ran_on") == "cloud")
        return (
            f"{len(self.jobs)} finished jobs ({cloud} ran in the cloud, "
            f"${self.spend.amount:,.2f} metered for {self.spend.gpu_hours:,.1f} GPU-h)"
        )


def load_history(records: TuningLog, since: float, until: float) -> History:
    raw = records.finished_jobs(since, until)
    origin = min((j.submit_time for j in raw), default=since)
    jobs = [
        replace(
            j,
            submit_time=round(j.submit_time - origin, 6),
            runtime=_us(j.runtime),
            deadline=None if j.deadline is None else _us(j.deadline - origin),
        )
        for j in raw
    ]
    return History(
        jobs,
        origin,
        records.cluster_shape(),
        records.state(SCHEDULER),
        records.cloud_spend([j.id for j in raw]),
    )


def _us(seconds: float | None) -> float | None:
    """To the microsecond the store keeps (drops float noise from epoch arithmetic)."""
    return None if seconds is None else round(seconds, 6)


def write_history(history: History, trace: Path, cluster: Path | None = None) -> None:
    if not history.jobs:
        raise ConfigError("no finished jobs in that window: nothing to export")
    for path in (trace, cluster):
        if path is not None and not path.parent.is_dir():
            raise ConfigError(f"{path}: no directory {path.parent} (nothing is created)")
    write_trace(history.jobs, trace)
    if cluster is not None:
        write_shape(require_nodes(history), cluster)


def require_nodes(history: History) -> list[Node]:
    if not history.nodes:
        raise ConfigError(
            "the store has no cluster shape yet: it is recorded by a running "
            "controller (this version or later); give --cluster FILE instead"
        )
    return history.nodes


def deployed(scheduler: Mapping[str, Any] | None, fallback: Deployed) -> Deployed:
    """Today's setting: the recorded configuration (its coefficient included), else
    ``fallback`` (the static settings with the applied setting)."""
    if not scheduler:
        return fallback
    cap = scheduler.get("queue_cap")
    return Deployed(
        PolicyKind(scheduler["policy"]),
        float(scheduler["budget"]) if scheduler.get("budget") is not None else None,
        float(scheduler["coefficient"]) if scheduler.get("coefficient") is not None else None,
        bool(scheduler.get("out_of_order", fallback.out_of_order)),
        int(cap) if cap is not None else None,
        QueueOrder(scheduler.get("order", fallback.order.value)),
        PlacementStrategy(scheduler.get("placement", fallback.placement.value)),
        EstimateUse(scheduler.get("estimate") or fallback.estimate.value),
    )


def setting_of(row: Mapping[str, Any]) -> PolicySetting:
    """The setting a result row stands for (what ``--apply`` writes)."""
    budget = row.get("budget")
    return PolicySetting(
        PolicyKind(str(row["policy"])),
        float(budget) if budget not in ("", None) else None,
        None,
        bool(int(row.get("out_of_order", 0) or 0)),
        EstimateUse(str(row.get("estimate") or "p50")),
    )


@dataclass(frozen=True, slots=True)
class TuneRequest:
    """What to replay: the window, the candidates and the tolerance."""

    since: float
    until: float
    policies: tuple[PolicyKind, ...]
    budgets: tuple[float, ...]
    tolerance: float = 0.05
    price: float | None = None  # $/GPU-hour; None: the metered price
    processes: int | None = None
    #: the runtime estimates budgets may use (``core.estimates``); beyond p50 the history
    #: needs out-of-fold estimates with bands (``tune_history``'s ``estimator``)
    estimates: tuple[EstimateUse, ...] = (EstimateUse.P50,)
    ray: str | None = None  # a Ray cluster's address to replay on (``sweep.run_tasks``)


def tune_history(
    records: TuningLog,
    request: TuneRequest,
    fallback: Deployed,
    workdir: Path,
    estimator: Callable[[Sequence[Job]], list[Job]] | None = None,
) -> tuple[Tuning, History]:
    """Export the window to ``workdir`` (trace.csv, cluster.yaml) and replay it.

    ``estimator`` gives the history's jobs the estimates (with bands) the replay uses when
    ``request`` chooses among estimates: out-of-fold predictions (``predictor.folds``; the
    simulator does not import the predictor, the caller hands it in). Without one, only the
    recorded point estimates can be replayed.
    """
    history = load_history(records, request.since, request.until)
    workdir.mkdir(parents=True, exist_ok=True)  # the folder asked for results (out/tune)
    trace = workdir / "trace.csv"
    write_history(history, trace, workdir / "cluster.yaml")
    nodes = require_nodes(history)
    price = request.price if request.price is not None else history.price_per_gpu_hour
    source: Source = trace
    if request.estimates != (EstimateUse.P50,):
        if estimator is None:
            raise ConfigError("choosing among runtime estimates needs the runtime predictor")
        source = JobSet("the history, out-of-fold estimates", tuple(estimator(history.jobs)))
    result = tune(
        source,
        nodes,
        deployed(history.scheduler, fallback),
        request.policies,
        request.budgets,
        request.tolerance,
        SimOptions(price),
        request.processes,
        request.estimates,
        request.ray,
    )
    return result, history


def evidence(row: Mapping[str, Any], request: TuneRequest, history: History) -> dict[str, Any]:
    """What an applied setting was chosen on, for the audit log."""
    keys = (
        "label",
        "cloud_cost_usd",
        "savings",
        "saving_vs_today",
        "jct_change",
        "p90_jct_change",
        "burst_jobs",
        "estimate",
    )
    return {
        **{k: row[k] for k in keys if k in row},
        "since": request.since,
        "until": request.until,
        "jobs": len(history.jobs),
        "tolerance": request.tolerance,
    }


def fallback(settings: Settings, applied: AppliedSetting | None) -> Deployed:
    """Today's setting from the static settings and the newest applied setting (used when
    the controller recorded no configuration)."""
    s = settings
    policy, budget, coefficient, ooo = s.policy, s.budget, s.coefficient, s.out_of_order
    estimate = s.estimate
    if applied is not None:
        a = applied.setting
        policy, coefficient, ooo, estimate = a.policy, a.coefficient, a.out_of_order, a.estimate
        budget = a.budget if a.budget is not None else budget
    return Deployed(
        policy,
        None if coefficient is not None else budget,
        coefficient,
        ooo,
        s.queue_cap,
        s.order,
        s.placement,
        estimate,
    )


def apply_choice(
    records: TuningLog,
    result: Tuning,
    choose: str,
    request: TuneRequest,
    history: History,
    actor: str,
) -> AppliedSetting | None:
    """Append the chosen row's setting (``cheapest`` or ``knee``) to the log, unless it is
    today's (``in_force``: the same policy, budget and mode); None when nothing had to
    change."""
    rec = result.recommendation
    row = rec.cheapest if choose == "cheapest" else rec.knee
    if row is None:
        raise ConfigError(f"no {choose} setting to apply (too few settings on the front)")
    if int(row.get("in_force", 0) or 0):
        return None
    reason = (
        f"starburst tune: {choose} setting within {request.tolerance:+.1%} mean JCT "
        f"on {len(history.jobs)} jobs"
    )
    return records.apply_setting(
        setting_of(row), actor=actor, reason=reason, evidence=evidence(row, request, history)
    )
