"""The names people read for scheduler settings, one source for tables, plots and notes.

A *series* is a policy run one way (in or out of order): "Starburst" is Compute-Wait out of
order (the paper's name for it), "Compute-Wait (in order)" the same policy in order. A
*label* is a series at one waiting budget ("Starburst b=0.25"), with the runtime estimate
its budgets use when it is not the p50 ("Starburst p90 b=0.25"). Out of order is the normal
way to run Star-Wait, and in order the normal way to run the other baselines, so only the
unusual mode is spelled out.
"""

from __future__ import annotations

from starburst.core.estimates import EstimateUse
from starburst.core.policy import ESTIMATE_BASED, POLICIES, PolicyKind


def series_name(kind: PolicyKind, out_of_order: bool) -> str:
    if kind is PolicyKind.COMPUTE and out_of_order:
        return "Starburst"
    info = POLICIES[kind]
    name = info.name
    if info.budgetless or out_of_order == info.out_of_order:
        return name
    return f"{name} ({'out of order' if out_of_order else 'in order'})"


def label(
    kind: PolicyKind,
    out_of_order: bool,
    budget: float | None,
    coefficient: float | None = None,
    estimate: EstimateUse = EstimateUse.P50,
) -> str:
    """The series at a budget (or coefficient), with the estimate when it is not the p50."""
    name = series_name(kind, out_of_order)
    if POLICIES[kind].budgetless:
        return name
    if kind in ESTIMATE_BASED and estimate is not EstimateUse.P50:
        name = f"{name} {estimate.value}"
    if coefficient is not None:
        return f"{name} c={coefficient:g}"
    return name if budget is None else f"{name} b={budget:g}"
