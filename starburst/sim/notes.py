"""Short explanations next to surprising rows, computed from the results themselves.

Each rule looks at one row next to its workload's No-Wait row and its *twin* (the same
policy and budget run in the other mode, in order vs out of order) and says what the figures
show; no rule names a policy. Rules, first match wins per kind:
- *costlier than No-Wait* (saving < 0), because of
  - *pull-backs*: jobs were pulled back from the cloud and re-queued (each paid a cloud stint
    first; in order a re-queued job waits at the head and blocks the jobs behind it);
  - *head-of-line blocking*: in order, with the cluster less busy than under No-Wait: a job
    waiting at the head kept GPUs idle while jobs behind it burst;
  - *budgets that ignore runtime*: neither, with wait budgets that do not grow with the jobs'
    compute (short and long jobs wait alike, so long ones burst and short ones hold GPUs).
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


def _costlier(row: Row, peers: Sequence[Row]) -> str | None:
    base = _no_wait(peers)
    if base is None or row is base or float(row.get("savings", 0.0)) >= 0:
        return None
    pulled = int(row.get("pulled_back", 0) or 0)
    in_order = not int(row.get("out_of_order", 0) or 0)
    if pulled:
        head = "; in order they wait at the head and block the jobs behind" if in_order else ""
        return (
            f"costs more than No-Wait: {pulled} jobs were pulled back from the cloud "
            f"after a paid stint and re-queued{head}"
        )
    util, base_util = float(row["cluster_utilization"]), float(base["cluster_utilization"])
    if in_order and util < base_util:
        return (
            f"costs more than No-Wait: head-of-line blocking — in order, a job waiting at "
            f"the head kept GPUs idle (cluster {util:.0%} busy vs {base_util:.0%}) while "
            "jobs behind it burst"
        )
    return (
        "costs more than No-Wait: wait budgets that do not follow the jobs' compute let "
        "long jobs burst while short ones hold the GPUs"
    )


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
