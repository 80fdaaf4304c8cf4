"""The held-out measure: choose a setting on one period, judge it on the next.

What users care about is money saved for the delay they accept, on jobs the model has not
seen. ``held_out`` takes a trace, cuts it in time (``train_share``: the *training period*,
then the *held-out period*) and:
1. *chooses* like ``starburst tune``: replays the training period under every candidate
   (``sim.tune``: policy × budget × mode, × the estimate budgets are computed from for the
   runtime-based policies, Star-Wait for none) with the estimates the predictor would have
   made then (``predictor.folds``: out of fold, never a job's own runtime) and keeps the
   cheapest whose mean JCT is within ``tolerance`` of No-Wait's;
2. *applies* that setting to the held-out period, whose jobs carry the estimates of the
   model trained on the whole training period (the artifact the controller would run), each
   made from the history as it stood then (``folds.as_of``);
3. does the same for the *oracle*: chosen on the training period with true runtimes,
   applied to the held-out period with true runtimes.
*Kept* = savings(held-out) / savings(oracle on the held-out period); savings and JCT change
are against No-Wait on the same period. Both runs calibrate the chosen budget's coefficient on
the held-out jobs as the policy sees them (their estimates), as the controller recalibrates.

The cluster is uniform 8-GPU nodes sized for the offered ``load`` of the *training* period
(``scheduling.cluster_for_load``): a cluster does not grow to fit the period it is judged
on. GPU types are dropped, as in ``scheduling``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from starburst.core.capacity import Node
from starburst.core.estimates import EstimateUse
from starburst.core.job import Job
from starburst.core.policy import PolicyKind
from starburst.core.ports import Estimate
from starburst.predictor.artifact import ModelArtifact
from starburst.predictor.evaluation import time_split
from starburst.predictor.folds import DEFAULT_FOLDS, as_of, out_of_fold
from starburst.predictor.model import TrainParams
from starburst.predictor.scheduling import cluster_for_load
from starburst.predictor.training import train_artifact
from starburst.sim.engine import SimOptions
from starburst.sim.sweep import JobSet, RunSpec, Task, add_savings, run_tasks
from starburst.sim.tune import DEFAULT_BUDGETS, DEFAULT_POLICIES, Deployed, Row, spec_of, tune

DEFAULT_TOLERANCE = 0.10
DEFAULT_ESTIMATES = (EstimateUse.P50, EstimateUse.P70, EstimateUse.P90, EstimateUse.MEAN)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A setting chosen on the training period and what it did there and held out."""

    label: str
    train_savings: float
    train_jct_change: float
    savings: float
    jct_change: float


@dataclass(frozen=True, slots=True)
class HeldOut:
    predicted: Outcome
    oracle: Outcome
    tolerance: float
    nodes: int
    train_jobs: int
    test_jobs: int
    replays: int

    @property
    def kept(self) -> float:
        """Share of the oracle's held-out savings the predicted choice keeps."""
        o = self.oracle.savings
        return self.predicted.savings / o if o else math.nan

    def line(self) -> str:
        """The one line the issue asks for, in exactly its form."""
        p, o = self.predicted, self.oracle
        kept = "—" if math.isnan(self.kept) else f"{self.kept:.1%}"
        return (
            f"held-out: savings {p.savings:.1%} at mean JCT {p.jct_change:+.1%}; oracle savings "
            f"{o.savings:.1%} at {o.jct_change:+.1%}; kept {kept} of the oracle's savings"
        )

    def describe(self) -> str:
        rows = [
            self.line(),
            f"  chose on the training period ({self.train_jobs} jobs, out-of-fold estimates; "
            f"{self.replays} replays on {self.nodes} × 8-GPU nodes, within "
            f"{self.tolerance:+.0%} mean JCT of No-Wait), applied to the next "
            f"{self.test_jobs} jobs:",
        ]
        for name, o in (("predicted", self.predicted), ("oracle", self.oracle)):
            rows.append(
                f"  {name:<9} {o.label:<34} training: savings {o.train_savings:.1%}, JCT "
                f"{o.train_jct_change:+.1%}; held out: savings {o.savings:.1%}, JCT "
                f"{o.jct_change:+.1%}"
            )
        if math.isnan(self.kept):
            rows.append("  the oracle saved nothing held out (nothing to keep): raise the load")
        return "\n".join(rows)


def _plain(jobs: Sequence[Job]) -> list[Job]:
    return [
        replace(j, gpu_type=None, estimate=None, estimate_low=None, estimate_high=None)
        for j in jobs
    ]


def _estimated(plain: Sequence[Job], estimated: Sequence[Job]) -> list[Job]:
    """``plain`` jobs with the estimates of the same jobs in ``estimated`` (same order)."""
    return [
        p.with_estimate(e.believed_runtime, e.estimate_low, e.estimate_high)
        for p, e in zip(plain, estimated, strict=True)
    ]


def _banded(plain: Sequence[Job], estimates: Sequence[Estimate]) -> list[Job]:
    return [j.with_estimate(e.value, e.low, e.high) for j, e in zip(plain, estimates, strict=True)]


def held_out(
    jobs: Sequence[Job],
    *,
    train_share: float = 0.7,
    tolerance: float = DEFAULT_TOLERANCE,
    load: float = 1.0,
    nodes: Sequence[Node] | None = None,
    artifact: ModelArtifact | None = None,
    params: TrainParams | None = None,
    folds: int = DEFAULT_FOLDS,
    policies: Sequence[PolicyKind] = DEFAULT_POLICIES,
    budgets: Sequence[float] = DEFAULT_BUDGETS,
    estimates: Sequence[EstimateUse] = DEFAULT_ESTIMATES,
    processes: int | None = None,
) -> HeldOut:
    """Choose on the training period, judge on the held-out one (see the module)."""
    train, test = time_split(jobs, train_share)
    plain_train, plain_test = _plain(train), _plain(test)
    cluster = tuple(nodes) if nodes is not None else tuple(cluster_for_load(plain_train, load))
    deployed = Deployed()

    def choose(source: JobSet, uses: Sequence[EstimateUse]) -> tuple[Row, int]:
        result = tune(
            source, cluster, deployed, policies, budgets, tolerance, None, processes, uses
        )
        row = result.recommendation.cheapest
        assert row is not None  # No-Wait is always within a tolerance ≥ 0
        return row, len(result.rows)

    def judge(row: Row, test_jobs: list[Job], label: str) -> Outcome:
        spec = spec_of(row, deployed)
        base = RunSpec("No-Wait", PolicyKind.NO_WAIT, None)
        source = JobSet(label, tuple(test_jobs))
        tasks = [Task(source, cluster, s, SimOptions()) for s in (base, spec)]
        ran = add_savings(run_tasks(tasks, processes))
        return Outcome(
            spec.label,
            float(row["savings"]),
            float(row["jct_change"]),
            float(ran[1]["savings"]),
            float(ran[1]["jct_change"]),
        )

    oof = _estimated(plain_train, out_of_fold(train, folds, params))
    chosen, replays = choose(JobSet("training period, out of fold", tuple(oof)), estimates)
    artifact = artifact or train_artifact(train, params, keep_history=False)
    guessed = as_of(artifact, [*train, *test], len(train), len(train) + len(test))
    predicted = judge(chosen, _banded(plain_test, guessed), "held out, predicted")
    truth = JobSet("training period, true runtimes", tuple(plain_train))
    best, more = choose(truth, (EstimateUse.P50,))  # no band: every estimate is the runtime
    oracle = judge(best, plain_test, "held out, true runtimes")
    return HeldOut(
        predicted, oracle, tolerance, len(cluster), len(train), len(test), replays + more
    )
