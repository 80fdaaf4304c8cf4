"""Effect of prediction on scheduling: Starburst with oracle, predicted and no runtimes.

The model trains on the first part of a trace (``train_share``); the rest is simulated with
Starburst — Compute-Wait, out of order, queue cap 30, waiting budget 0.25 — three ways:
- *oracle*: the policy sees the true runtime (``estimate`` None), the paper's assumption;
- *predicted*: the policy sees the model's p50 (or ``use="high"``: its p90, a cautious
  choice), computed at each job's submit time from the history finished by then;
- *predicted p90*: Compute-Wait on the model's p90;
- *compute-expected*: the same queue with ``PolicyKind.COMPUTE_EXPECTED``, budgets from the
  predicted distribution (the log-normal mean of p50 and the p10–p90 band);
- *Star-Wait*: no estimate at all (``PolicyKind.STAR``, out of order, same budget), with the
  same queue cap as the others, and once more without a cap (the paper's Star-Wait runs);
plus *No-Wait*, the baseline savings are measured against: savings = 1 − cost / cost(No-Wait).
*Oracle savings kept* = savings(run) / savings(oracle); *JCT change* = mean JCT / No-Wait's − 1.
A share above 100% is not a better prediction: it is money saved by making jobs wait longer
than the oracle's budgets do, paid in JCT — read it next to the JCT change.

The cluster is uniform 8-GPU nodes sized so the simulated part has the requested offered
load (default 1.0, the paper's busy regime), unless ``nodes`` is given. GPU types are dropped
for the simulation (a uniform cluster has one type). The budget coefficient is calibrated on
the jobs as the policy sees them (their estimates), as the live system would.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from starburst.core.capacity import Node, uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.job import Job
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.predictor.artifact import ModelArtifact
from starburst.predictor.estimator import ModelEstimator, with_estimates
from starburst.predictor.evaluation import time_split
from starburst.predictor.history import HistoryIndex
from starburst.predictor.model import TrainParams
from starburst.predictor.training import train_artifact

GPUS_PER_NODE = 8
NO_WAIT = "No-Wait"
ORACLE = "Starburst, oracle runtimes"
PREDICTED = "Starburst, predicted runtimes"
PREDICTED_P90 = "Starburst, predicted p90"
EXPECTED = "compute-expected, predicted"
STAR = "Star-Wait (no estimate)"
STAR_UNCAPPED = "Star-Wait, no queue cap"


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    label: str
    cost_usd: float
    cloud_gpu_hours: float
    burst_jobs: int
    mean_jct_s: float
    p90_jct_s: float
    savings: float = 0.0


@dataclass(frozen=True, slots=True)
class ScheduleComparison:
    rows: list[ScheduleRow]
    nodes: int
    jobs: int
    offered_load: float
    queue_cap: int | None = 30

    def row(self, label: str) -> ScheduleRow:
        return next(r for r in self.rows if r.label == label)

    @property
    def kept(self) -> float:
        """Share of the oracle's savings that predicted runtimes keep."""
        return self.kept_by(PREDICTED)

    def kept_by(self, label: str) -> float:
        """Share of the oracle's savings the run ``label`` keeps."""
        oracle = self.row(ORACLE).savings
        return self.row(label).savings / oracle if oracle else math.nan

    def jct_change(self, label: str) -> float:
        """Mean JCT of run ``label`` relative to No-Wait's (0.05 = 5% longer)."""
        base = self.rows[0].mean_jct_s
        return self.row(label).mean_jct_s / base - 1.0 if base else 0.0


def cluster_for_load(jobs: Sequence[Job], load: float) -> list[Node]:
    """Uniform 8-GPU nodes giving ``jobs`` roughly the offered ``load``."""
    span = max(j.submit_time for j in jobs) - min(j.submit_time for j in jobs)
    work = math.fsum(j.gpus * float(j.runtime or 0.0) for j in jobs)
    gpus = work / max(span, 1.0) / load
    widest = max(j.gpus for j in jobs)
    count = max(1, round(gpus / GPUS_PER_NODE), math.ceil(widest / GPUS_PER_NODE))
    return uniform_nodes(count, GPUS_PER_NODE)


def compare_scheduling(
    jobs: Sequence[Job],
    train_share: float = 0.5,
    budget: float = 0.25,
    queue_cap: int = 30,
    load: float = 1.0,
    nodes: Sequence[Node] | None = None,
    artifact: ModelArtifact | None = None,
    params: TrainParams | None = None,
    use: str = "value",
) -> ScheduleComparison:
    """Train on the past, simulate the future four ways (see the module docstring)."""
    from starburst.sim.engine import simulate

    train, test = time_split(jobs, train_share)
    artifact = artifact or train_artifact(train, params, keep_history=False)
    estimator = ModelEstimator(artifact, HistoryIndex(train + test))
    plain = [replace(j, gpu_type=None, estimate=None) for j in test]
    cluster = list(nodes) if nodes is not None else cluster_for_load(plain, load)

    def run(
        label: str, kind: PolicyKind, sim_jobs: list[Job], out_of_order: bool, cap: int | None
    ) -> ScheduleRow:
        policy = WaitPolicy.from_budget(kind, budget, sim_jobs)
        config = SchedulerConfig(policy, out_of_order=out_of_order, queue_cap=cap)
        s = simulate(sim_jobs, cluster, config).summary()
        return ScheduleRow(
            label,
            float(s["cloud_cost_usd"]),
            float(s["cloud_gpu_hours"]),
            int(s["burst_jobs"]),
            float(s["mean_jct_s"]),
            float(s["p90_jct_s"]),
        )

    estimates = estimator.estimate(plain)
    predicted = with_estimates(plain, estimates, use)
    p90 = with_estimates(plain, estimates, "high")
    rows = [
        run(NO_WAIT, PolicyKind.NO_WAIT, plain, False, None),
        run(ORACLE, PolicyKind.COMPUTE, plain, True, queue_cap),
        run(PREDICTED, PolicyKind.COMPUTE, predicted, True, queue_cap),
        run(PREDICTED_P90, PolicyKind.COMPUTE, p90, True, queue_cap),
        run(
            EXPECTED, PolicyKind.COMPUTE_EXPECTED, with_estimates(plain, estimates), True, queue_cap
        ),
        run(STAR, PolicyKind.STAR, plain, True, queue_cap),
        run(STAR_UNCAPPED, PolicyKind.STAR, plain, True, None),
    ]
    base = rows[0].cost_usd
    rows = [replace(r, savings=1.0 - r.cost_usd / base if base else 0.0) for r in rows]
    gpus = sum(n.gpus for n in cluster)
    span = max(j.submit_time for j in plain) - min(j.submit_time for j in plain)
    offered = math.fsum(j.gpus * float(j.runtime or 0.0) for j in plain) / (gpus * max(span, 1))
    return ScheduleComparison(rows, len(cluster), len(plain), offered, queue_cap)


def format_comparison(cmp: ScheduleComparison) -> str:
    base = cmp.rows[0].mean_jct_s
    lines = [
        f"simulated {cmp.jobs} jobs on {cmp.nodes} × {GPUS_PER_NODE}-GPU nodes "
        f"(offered load {cmp.offered_load:.2f}); budget 0.25; Starburst = Compute-Wait, "
        f"out of order, queue cap {cmp.queue_cap} (compute-expected and Star-Wait: the same cap)",
        f"  {'run':<31} {'cloud $':>10} {'GPU-h':>9} {'bursts':>7} {'savings':>8} "
        f"{'mean JCT h':>11} {'vs No-Wait':>10} {'p90 JCT h':>10}",
    ]
    for r in cmp.rows:
        jct = r.mean_jct_s / base - 1.0 if base else 0.0
        lines.append(
            f"  {r.label:<31} {r.cost_usd:>10.2f} {r.cloud_gpu_hours:>9.1f} {r.burst_jobs:>7} "
            f"{r.savings:>8.1%} {r.mean_jct_s / 3600:>11.3f} {jct:>+10.1%} "
            f"{r.p90_jct_s / 3600:>10.3f}"
        )
    if math.isnan(cmp.kept):
        lines.append("the oracle saved nothing here (nothing burst): raise the load to compare")
        return "\n".join(lines)
    oracle_jct = cmp.jct_change(ORACLE)
    lines.append(
        f"  share of the oracle's savings kept, with mean JCT vs No-Wait (oracle: "
        f"{oracle_jct:+.1%}); above 100% = savings bought with longer waits than the oracle's:"
    )
    for label in (PREDICTED, PREDICTED_P90, EXPECTED, STAR, STAR_UNCAPPED):
        kept, jct = cmp.kept_by(label), cmp.jct_change(label)
        note = f" ({(jct - oracle_jct) * 100:+.1f} points of JCT vs the oracle)" if kept > 1 else ""
        lines.append(f"  {label:<31} keeps {kept:>6.1%}, mean JCT {jct:+.1%}{note}")
    return "\n".join(lines)
