"""The Pareto plot admins choose a waiting budget from: cloud cost against mean JCT.

Each policy is one series (its points are budgets, labelled); the points no other point beats
on both cost and JCT form the Pareto front, drawn as a step line. matplotlib is imported only
here, with the non-interactive Agg backend, so plotting works on a headless server.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from starburst.core.errors import ConfigError

Row = dict[str, float | int | str]


def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Points (cost, jct) not dominated by another (lower or equal on both, lower on one)."""
    front: list[tuple[float, float]] = []
    best_jct = float("inf")
    for cost, jct in sorted(set(points)):
        if jct < best_jct:
            front.append((cost, jct))
            best_jct = jct
    return front


def plot(rows: Sequence[Row], path: Path, title: str = "Cloud cost vs mean JCT") -> Path:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError(
            "plotting needs matplotlib: install the simulator extra, pip install 'starburst[sim]'"
        ) from None
    loads: list[float | None] = [*sorted({float(r["load"]) for r in rows if "load" in r})]
    if not loads:
        loads = [None]
    fig, axes = plt.subplots(1, len(loads), figsize=(6.5 * len(loads), 5), squeeze=False)
    for ax, load in zip(axes[0], loads, strict=True):
        subset = [r for r in rows if load is None or float(r.get("load", -1)) == load]
        _draw(ax, subset)
        ax.set_title(title if load is None else f"{title} (load {load:g})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _draw(ax: object, rows: Sequence[Row]) -> None:
    by_policy: dict[str, list[Row]] = {}
    for row in rows:
        by_policy.setdefault(str(row["policy"]), []).append(row)
    for policy, series in sorted(by_policy.items()):
        series = sorted(series, key=lambda r: float(r["cloud_cost_usd"]))
        xs = [float(r["cloud_cost_usd"]) for r in series]
        ys = [float(r["mean_jct_s"]) / 3600.0 for r in series]
        ax.plot(xs, ys, marker="o", label=policy)  # type: ignore[attr-defined]
        for r, x, y in zip(series, xs, ys, strict=True):
            if r.get("budget") not in ("", None):
                ax.annotate(f"b={float(r['budget']):g}", (x, y), fontsize=7,  # type: ignore[attr-defined]
                            xytext=(3, 3), textcoords="offset points")
    front = pareto_front([(float(r["cloud_cost_usd"]), float(r["mean_jct_s"]) / 3600.0)
                          for r in rows])
    if front:
        fx, fy = zip(*front, strict=True)
        ax.step(fx, fy, where="post", color="black", linestyle="--", linewidth=1,  # type: ignore[attr-defined]
                label="Pareto front")
    ax.set_xlabel("cloud cost ($)")  # type: ignore[attr-defined]
    ax.set_ylabel("mean JCT (hours)")  # type: ignore[attr-defined]
    ax.grid(True, alpha=0.3)  # type: ignore[attr-defined]
    ax.legend(fontsize=8)  # type: ignore[attr-defined]
