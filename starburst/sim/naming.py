"""The names people read for scheduler settings, one source for tables, plots and notes.

A *series* is a policy run one way (in or out of order): "Starburst" is Compute-Wait out of
order (the paper's name for it), "Compute-Wait (in order)" the same policy in order. A
*label* is a series at one waiting budget ("Starburst b=0.25"). Out of order is the normal
way to run Star-Wait, and in order the normal way to run the other baselines, so only the
unusual mode is spelled out.
"""

from __future__ import annotations

from starburst.core.policy import PolicyKind

_NAMES = {
    PolicyKind.NO_WAIT: "No-Wait",
    PolicyKind.INFINITE: "Cluster only",
    PolicyKind.CONSTANT: "Constant-Wait",
    PolicyKind.RUNTIME: "Runtime-Wait",
    PolicyKind.RESOURCE: "Resource-Wait",
    PolicyKind.COMPUTE: "Compute-Wait",
    PolicyKind.STAR: "Star-Wait",
    PolicyKind.COMPUTE_EXPECTED: "Compute-Expected-Wait",
}
#: policies normally run out of order (the rest normally run in order)
_OUT_OF_ORDER_BY_DEFAULT = {PolicyKind.COMPUTE, PolicyKind.STAR, PolicyKind.COMPUTE_EXPECTED}
_BUDGETLESS = {PolicyKind.NO_WAIT, PolicyKind.INFINITE}


def series_name(kind: PolicyKind, out_of_order: bool) -> str:
    if kind is PolicyKind.COMPUTE and out_of_order:
        return "Starburst"
    name = _NAMES.get(kind, kind.value)
    if kind in _BUDGETLESS or out_of_order == (kind in _OUT_OF_ORDER_BY_DEFAULT):
        return name
    return f"{name} ({'out of order' if out_of_order else 'in order'})"


def label(
    kind: PolicyKind, out_of_order: bool, budget: float | None, coefficient: float | None = None
) -> str:
    name = series_name(kind, out_of_order)
    if kind in _BUDGETLESS:
        return name
    if coefficient is not None:
        return f"{name} c={coefficient:g}"
    return name if budget is None else f"{name} b={budget:g}"
