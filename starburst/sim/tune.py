"""``tune``: replay a workload's own history under candidate settings and recommend one.

Terms:
- *deployed* (today's) setting: the policy, waiting budget b (or an explicit coefficient),
  mode (in or out of order), queue cap, order and placement the controller runs now.
- *candidates*: each policy of ``policies`` × each budget × both modes — and, for the
  policies whose budgets follow a runtime estimate (``runtime``, ``compute``), × each
  *estimate* of ``estimates`` (p50, a higher quantile, the mean: ``core.estimates``) — all
  with the deployed queue cap, order and placement (``--apply`` changes only policy, budget,
  estimate and mode), plus No-Wait (the reference for savings and JCT change) and today's
  setting. Star-Wait is the candidate that uses no estimate at all.
- The replay runs the simulator — the controller's own decision core — over the trace with
  its ``estimate`` column, the runtimes the controller predicted, so a candidate's wait
  budgets are the ones it would have given then (not the oracle's); the coefficient of a
  budget is calibrated on those estimates, as the controller's recalibration does. To
  choose among estimates the jobs need their bands too: ``sim.history`` then gives them the
  predictor's *out-of-fold* estimates (``predictor.folds``), never their own runtime.
- *in force*: a row whose policy, budget, estimate and mode are today's (``in_force = 1``): today's
  own row, and the candidate of the same budget when today's setting is a budget. The
  coefficient is not compared — the controller refits it from the budget (the candidate's is
  fitted on the history, today's row keeps the one it ran with) — so applying such a row
  changes nothing, and ``--apply`` says so instead of logging it again.

Invariant: every row replays the same jobs on the same nodes with the same options; today's
setting is replayed like any candidate, so "vs today" compares like with like.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from starburst.core.capacity import Node, PlacementStrategy
from starburst.core.estimates import EstimateUse
from starburst.core.ordering import QueueOrder
from starburst.core.policy import ESTIMATE_BASED, POLICIES, PolicyKind
from starburst.sim import notes, recommend
from starburst.sim.engine import SimOptions
from starburst.sim.naming import label
from starburst.sim.sweep import RunSpec, Source, Task, add_savings, run_tasks

Row = dict[str, float | int | str]

DEFAULT_POLICIES = (
    PolicyKind.COMPUTE,
    PolicyKind.CONSTANT,
    PolicyKind.RUNTIME,
    PolicyKind.RESOURCE,
    PolicyKind.STAR,
)
DEFAULT_BUDGETS = (0.05, 0.1, 0.25, 0.5, 1.0)


@dataclass(frozen=True, slots=True)
class Deployed:
    """Today's setting, as the controller runs it."""

    policy: PolicyKind = PolicyKind.COMPUTE
    budget: float | None = 0.25
    #: the coefficient it runs with, when known (it wins over the budget in the replay)
    coefficient: float | None = None
    out_of_order: bool = True
    queue_cap: int | None = 30
    order: QueueOrder = QueueOrder.FIFO
    placement: PlacementStrategy = PlacementStrategy.FIRST_FIT
    estimate: EstimateUse = EstimateUse.P50

    def spec(self) -> RunSpec:
        budget = None if POLICIES[self.policy].budgetless else self.budget
        estimate = self.estimate if self.policy in ESTIMATE_BASED else EstimateUse.P50
        coefficient = self.coefficient if budget is None else None
        shown = label(self.policy, self.out_of_order, budget, coefficient, estimate)
        return RunSpec(
            shown,
            self.policy,
            budget,
            self.coefficient,
            self.out_of_order,
            self.queue_cap,
            self.order,
            self.placement,
            estimate,
        )


@dataclass(frozen=True, slots=True)
class Tuning:
    rows: list[Row]
    recommendation: recommend.Recommendation


def candidates(
    deployed: Deployed,
    policies: Sequence[PolicyKind],
    budgets: Sequence[float],
    estimates: Sequence[EstimateUse] = (EstimateUse.P50,),
) -> list[RunSpec]:
    """No-Wait, then each policy × budget × mode (× estimate, for the policies that use one)
    with the deployed cap, order, placement."""
    base = RunSpec(
        "",
        PolicyKind.NO_WAIT,
        None,
        None,
        False,
        deployed.queue_cap,
        deployed.order,
        deployed.placement,
    )
    specs = [replace(base, label=label(PolicyKind.NO_WAIT, False, None))]
    for kind in policies:
        if kind is PolicyKind.NO_WAIT:
            continue
        if kind is PolicyKind.INFINITE:
            for ooo in (False, True):
                specs.append(
                    replace(base, label=label(kind, ooo, None), policy=kind, out_of_order=ooo)
                )
            continue
        uses = estimates if kind in ESTIMATE_BASED else (EstimateUse.P50,)
        for use in uses:
            for b in budgets:
                for ooo in (False, True):
                    specs.append(
                        replace(
                            base,
                            label=label(kind, ooo, b, None, use),
                            policy=kind,
                            budget=b,
                            out_of_order=ooo,
                            estimate=use,
                        )
                    )
    return specs


def tune(
    source: Source,
    nodes: Sequence[Node],
    deployed: Deployed,
    policies: Sequence[PolicyKind] = DEFAULT_POLICIES,
    budgets: Sequence[float] = DEFAULT_BUDGETS,
    tolerance: float = 0.05,
    options: SimOptions | None = None,
    processes: int | None = None,
    estimates: Sequence[EstimateUse] = (EstimateUse.P50,),
    ray: str | None = None,
) -> Tuning:
    """Replay every candidate and today's setting; rows in candidate order, today's marked."""
    specs = candidates(deployed, policies, budgets, estimates)
    today = deployed.spec()
    same = [i for i, s in enumerate(specs) if _same_setting(s, today)]
    if not same:
        specs.append(today)
        same = [len(specs) - 1]
    opts = options or SimOptions()
    rows = run_tasks([Task(source, tuple(nodes), s, opts) for s in specs], processes, ray)
    ran_with = (
        "" if today.coefficient is None or today.budget is None else f", c={today.coefficient:.3g}"
    )  # the coefficient it really ran with
    for i in same:
        rows[i] = {**rows[i], "role": "today", "label": f"{rows[i]['label']} (today{ran_with})"}
    rows = [{**r, "in_force": 1} if in_force(r, deployed) else r for r in rows]
    rows = add_savings(rows)
    rows = recommend.add_changes(rows)
    rows = notes.explain(rows, tolerance)
    return Tuning(rows, recommend.recommend(rows, tolerance))


def in_force(row: Row, deployed: Deployed) -> bool:
    """Whether ``row`` stands for today's setting: its policy, budget, estimate and mode
    (see *in force* in the module docstring)."""
    today = deployed.spec()
    budget = row.get("budget", "")
    return (
        str(row["policy"]) == today.policy.value
        and (None if budget in ("", None) else float(budget)) == today.budget
        and bool(int(row.get("out_of_order", 0) or 0)) == today.out_of_order
        and EstimateUse(str(row.get("estimate") or "p50")) is today.estimate
    )


def _same_setting(a: RunSpec, b: RunSpec) -> bool:
    return replace(a, label="") == replace(b, label="")


def spec_of(row: Row, deployed: Deployed) -> RunSpec:
    """The candidate a result row stands for, to replay it on other jobs: its policy, budget,
    estimate and mode with the deployed cap, order and placement (the coefficient is
    calibrated afresh on those jobs, as the controller recalibrates)."""
    budget = row.get("budget", "")
    kind = PolicyKind(str(row["policy"]))
    use = EstimateUse(str(row.get("estimate") or "p50"))
    ooo = bool(int(row.get("out_of_order", 0) or 0))
    b = None if budget in ("", None) else float(budget)
    return RunSpec(
        label(kind, ooo, b, None, use),
        kind,
        b,
        None,
        ooo,
        deployed.queue_cap,
        deployed.order,
        deployed.placement,
        use,
    )
