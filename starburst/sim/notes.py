"""Short explanations next to surprising rows, computed from the results themselves.

Each rule looks at one row next to its workload's No-Wait row and its *twin* (the same
policy and budget run in the other mode, in order vs out of order), and fires only where
its explanation holds: on the figures it quotes, and on the mode or the policy whose
mechanism it names. Rules, first match wins per kind:
- *costlier than No-Wait* (saving < 0), because of
  - *pull-backs*: the row pulled jobs back from the cloud and re-queued them (Star-Wait's
    mechanism, read from the row's own count: each paid a cloud stint first; in order a
    re-queued job waits at the head and blocks the jobs behind it);
  - *head-of-line blocking*: in order, with the cluster less busy than under No-Wait: a job
    waiting at the head kept GPUs idle while jobs behind it burst;
  - *budgets that ignore compute*: a policy whose wait budget does not grow with the job's
    compute (GPUs × runtime): Constant-Wait (the same for every job), Runtime-Wait (runtime
    only), Resource-Wait and Star-Wait (GPUs only) — jobs that waited took GPUs that
    dearer later arrivals then burst for;
  - *less work on-prem*: any other policy (Compute-Wait, whose budgets do follow compute),
    with the cluster less busy than under No-Wait: the figure, not a cause it cannot show;
  - none of these: no cost note (the saving column says it already).
- *twin cheaper*: the other mode saves at least 5 points more.
- *over tolerance*: mean JCT above the admin's tolerance.
The notes go into ``row["note"]``.
"""

from __future__ import annotations

from collections.abc import Sequence

Row = dict[str, float | int | str]

#: saving points by which a twin must beat a row before it is worth a note
TWIN_MARGIN = 0.05


def explain(rows: Sequence[Row], tolerance: float | None = None) -> list[Row]:
    groups: dict[object, list[Row]] = {}
    for row in rows:
        groups.setdefault(row.get("load"), []).append(row)
    out = []
    for row in rows:
        peers = groups[row.get("load")]
        notes = [n for n in (_costlier(row, peers), _twin(row, peers), _over(row, tolerance)) if n]
        row = dict(row)
        if notes:
            row["note"] = "; ".join(notes)
        out.append(row)
    return out


def _no_wait(peers: Sequence[Row]) -> Row | None:
    return next((r for r in peers if r["policy"] == "no-wait"), None)


#: how the wait budgets of each policy that ignores part of a job's compute are set
_BUDGET_FOLLOWS = {
    "constant": "every job gets the same wait budget, whatever its compute",
    "runtime": "wait budgets grow with runtime, not with GPUs",
    "resource": "wait budgets grow with GPUs, not with runtime",
    "star": "Star-Wait's budgets grow with GPUs, not with runtime",
}


def _costlier(row: Row, peers: Sequence[Row]) -> str | None:
    base = _no_wait(peers)
    if base is None or row is base or float(row.get("savings", 0.0)) >= 0:
        return None
    pulled = int(row.get("pulled_back", 0) or 0)
    in_order = not int(row.get("out_of_order", 0) or 0)
    util, base_util = float(row["cluster_utilization"]), float(base["cluster_utilization"])
    busy = f"cluster {util:.0%} busy vs {base_util:.0%}"
    if pulled:
        head = "; in order they wait at the head and block the jobs behind" if in_order else ""
        return (
            f"costs more than No-Wait: {pulled} jobs were pulled back from the cloud "
            f"after a paid stint and re-queued{head}"
        )
    if in_order and util < base_util:
        return (
            f"costs more than No-Wait: head-of-line blocking — in order, a job waiting at "
            f"the head kept GPUs idle ({busy}) while jobs behind it burst"
        )
    follows = _BUDGET_FOLLOWS.get(str(row["policy"]))
    if follows is not None:
        return (
            f"costs more than No-Wait: {follows}, so jobs that waited took GPUs that "
            "dearer later arrivals then burst for"
        )
    if util < base_util:
        return f"costs more than No-Wait: less of the work ran on-prem ({busy})"
    return None


def _twin(row: Row, peers: Sequence[Row]) -> str | None:
    if "savings" not in row or row["policy"] == "no-wait":
        return None
    for other in peers:
        if (
            other["policy"] == row["policy"]
            and other.get("budget") == row.get("budget")
            and other.get("out_of_order") != row.get("out_of_order")
            and "savings" in other
            and float(other["savings"]) >= float(row["savings"]) + TWIN_MARGIN
        ):
            mode = "out of order" if int(other.get("out_of_order", 0) or 0) else "in order"
            saving = float(other["savings"])
            said = f"saves {saving:.0%} vs" if saving >= 0 else f"costs {-saving:.0%} more than"
            return f"{mode} it {said} No-Wait ({other['label']})"
    return None


def _over(row: Row, tolerance: float | None) -> str | None:
    if tolerance is None or "jct_change" not in row:
        return None
    change = float(row["jct_change"])
    if change > tolerance + 1e-12:
        return f"mean JCT {change:+.0%} is over the {tolerance:+.0%} tolerance"
    return None
