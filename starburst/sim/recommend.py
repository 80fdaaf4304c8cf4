"""From replayed settings to a recommendation: the cheapest within a JCT tolerance, the knee.

Terms (rows are ``sweep`` result rows of one workload, No-Wait among them):
- *JCT change*: mean (``jct_change``) or p90 (``p90_jct_change``) JCT ÷ No-Wait's − 1. No-Wait
  bursts whatever does not fit at once, so its JCT is the floor the tolerance is measured from.
- *tolerance*: the largest mean-JCT change an admin accepts (``--max-jct-increase 5%``).
- *cheapest*: the lowest cloud cost among settings within the tolerance (ties: lower mean
  JCT, then label) — always defined, since No-Wait itself is within any tolerance ≥ 0.
- *knee*: on the Pareto front of (cost, mean JCT), with both axes scaled to [0, 1] over the
  front, the point nearest the ideal corner (lowest x + y: farthest below the chord joining
  the front's ends) — where more waiting stops buying much saving. None for fewer than three
  front points.
- *today*: the row marked ``role = today`` (the deployed setting), if any.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from starburst.core.errors import ConfigError
from starburst.sim.pareto import pareto_front

Row = dict[str, float | int | str]


@dataclass(frozen=True, slots=True)
class Recommendation:
    tolerance: float
    cheapest: Row | None
    knee: Row | None
    today: Row | None


def parse_tolerance(text: str) -> float:
    """'5%' or '0.05' → 0.05; a clear error for anything else."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise ConfigError(f"JCT tolerance {text!r} is not a number such as 5% or 0.05") from None
    if not 0 <= value < 100:
        raise ConfigError(f"JCT tolerance must be between 0% and 10000%, got {text}")
    return value


def add_changes(rows: Sequence[Row]) -> list[Row]:
    """p90 JCT change against No-Wait, and cost saving against today's row (per load)."""
    base = {r.get("load"): r for r in rows if r["policy"] == "no-wait"}
    today = {r.get("load"): r for r in rows if r.get("role") == "today"}
    out = []
    for row in rows:
        row = dict(row)
        ref = base.get(row.get("load"))
        if ref is not None and float(ref["p90_jct_s"]):
            row["p90_jct_change"] = float(row["p90_jct_s"]) / float(ref["p90_jct_s"]) - 1.0
        now = today.get(row.get("load"))
        if now is not None and float(now["cloud_cost_usd"]):
            row["saving_vs_today"] = 1.0 - float(row["cloud_cost_usd"]) / float(
                now["cloud_cost_usd"]
            )
        out.append(row)
    return out


def _cost(row: Row) -> float:
    return float(row["cloud_cost_usd"])


def _jct(row: Row) -> float:
    return float(row["mean_jct_s"])


def recommend(rows: Sequence[Row], tolerance: float) -> Recommendation:
    """Rows of one workload (one load) → the recommendation; see the module docstring."""
    within = [r for r in rows if float(r.get("jct_change", 0.0)) <= tolerance + 1e-12]
    cheapest = min(within, key=lambda r: (_cost(r), _jct(r), str(r["label"])), default=None)
    today = next((r for r in rows if r.get("role") == "today"), None)
    return Recommendation(tolerance, cheapest, knee(rows), today)


def knee(rows: Sequence[Row]) -> Row | None:
    front = pareto_front([(_cost(r), _jct(r)) for r in rows])
    if len(front) < 3:
        return None
    (c0, j0), (c1, j1) = front[0], front[-1]  # cheapest-slowest, dearest-fastest
    span_c, span_j = (c1 - c0) or 1.0, (j0 - j1) or 1.0
    best = min(front, key=lambda p: ((p[0] - c0) / span_c + (p[1] - j1) / span_j, p[0]))
    matches = [r for r in rows if (_cost(r), _jct(r)) == best]
    return min(matches, key=lambda r: str(r["label"]))


def by_load(rows: Sequence[Row]) -> dict[float | None, list[Row]]:
    groups: dict[float | None, list[Row]] = {}
    for row in rows:
        load = row.get("load")
        groups.setdefault(None if load is None else float(load), []).append(row)
    return groups


def describe(row: Row) -> str:
    """One line: "Starburst b=0.25: $416, saves 75.2% vs No-Wait, mean JCT +1.6%, p90 +3.0%"."""
    parts = [f"${_cost(row):,.0f}"]
    if "savings" in row:
        parts.append(f"{saving_text(float(row['savings']))} vs No-Wait")
    if "saving_vs_today" in row:
        parts.append(f"{saving_text(float(row['saving_vs_today']))} vs today")
    if "jct_change" in row:
        parts.append(f"mean JCT {float(row['jct_change']):+.1%}")
    if "p90_jct_change" in row:
        parts.append(f"p90 {float(row['p90_jct_change']):+.1%}")
    parts.append(f"{int(row['burst_jobs'])} bursts")
    if int(row.get("in_force", 0) or 0) and row.get("role") != "today":
        parts.append("today's setting")  # the same policy, budget and mode (``tune``)
    return f"{row['label']}: " + ", ".join(parts)


def saving_text(saving: float) -> str:
    return f"saves {saving:.1%}" if saving >= 0 else f"costs {-saving:.1%} more"


def render(rec: Recommendation) -> str:
    lines = [f"recommendation (mean JCT at most {rec.tolerance:+.1%} over No-Wait):"]
    if rec.cheapest is not None:
        lines.append(f"  cheapest within tolerance  {describe(rec.cheapest)}")
    if rec.knee is not None:
        lines.append(f"  knee of the Pareto front   {describe(rec.knee)}")
    else:
        lines.append("  knee of the Pareto front   (fewer than three settings on the front)")
    if rec.today is not None:
        lines.append(f"  today                      {describe(rec.today)}")
    return "\n".join(lines)


def highlights(rec: Recommendation) -> dict[str, str]:
    """Plot captions for the settings a recommendation names (a later caption wins a tie:
    the recommendation over the knee over today)."""
    marks: dict[str, str] = {}
    for caption, row in (("today", rec.today), ("knee", rec.knee), ("recommended", rec.cheapest)):
        if row is not None:
            marks[str(row["label"])] = caption
    return marks
