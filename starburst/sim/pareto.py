"""The Pareto plot admins choose a waiting budget from: cloud cost against mean JCT.

Each series (a policy run one way, named as the tables name it: "Starburst", "Star-Wait",
see ``naming``) is one line whose points are budgets, labelled "b=…": one colour per policy,
solid out of order, dashed in order. The points no other point beats on both cost and JCT
form the Pareto front, drawn as a dotted step line. Settings worth pointing at (today's, the
recommendation, the knee) get a ring and a caption; the legend sits outside the axes.

Labels are placed greedily: each tries a few offsets around its point and takes the first
whose box overlaps no label placed before it and no highlighted point (else the least
overlapping one), so labels near No-Wait do not pile up. matplotlib is imported only here,
with the non-interactive Agg backend, so plotting works on a headless server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from starburst.core.errors import ConfigError

Row = dict[str, float | int | str]
Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in display pixels

#: label offsets tried in order, in points from the data point
#: (rows 12 points apart: a label is 8.4 points high)
_OFFSETS = (
    (4, 3),
    (4, -9),
    (-4, 3),
    (-4, -9),
    (4, 15),
    (-4, 15),
    (4, -21),
    (-4, -21),
    (4, 27),
    (-4, 27),
    (4, -33),
    (-4, -33),
)
_FONT = 7
#: colours of highlighted settings, by caption prefix
_RING = {"today": "tab:red", "recommended": "tab:green", "knee": "tab:purple"}
#: one colour per policy (none a ring's); the line style tells the mode apart
_COLOUR = {
    "compute": "tab:blue",
    "constant": "tab:orange",
    "runtime": "tab:cyan",
    "resource": "tab:brown",
    "star": "tab:olive",
    "no-wait": "tab:gray",
    "infinite": "tab:pink",
    "compute-expected": "navy",
}


def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Points (cost, jct) not dominated by another (lower or equal on both, lower on one)."""
    front: list[tuple[float, float]] = []
    best_jct = float("inf")
    for cost, jct in sorted(set(points)):
        if jct < best_jct:
            front.append((cost, jct))
            best_jct = jct
    return front


def plot(
    rows: Sequence[Row],
    path: Path,
    title: str = "Cloud cost vs mean JCT",
    highlights: Mapping[str, str] | None = None,
) -> Path:
    """Write the plot; ``highlights`` maps a row's label to a caption ("today", …)."""
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
    fig, axes = plt.subplots(1, len(loads), figsize=(10 * len(loads), 5.5), squeeze=False)
    for ax, load in zip(axes[0], loads, strict=True):
        subset = [r for r in rows if load is None or float(r.get("load", -1)) == load]
        ax.set_title(title if load is None else f"{title} (load {load:g})")
        _draw(fig, ax, subset, highlights or {})
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _series(row: Row) -> str:
    return str(row.get("series") or row["policy"])


def _xy(row: Row) -> tuple[float, float]:
    return float(row["cloud_cost_usd"]), float(row["mean_jct_s"]) / 3600.0


def _draw(fig: Any, ax: Any, rows: Sequence[Row], highlights: Mapping[str, str]) -> None:
    by_series: dict[str, list[Row]] = {}
    for row in rows:
        by_series.setdefault(_series(row), []).append(row)
    for name, series in sorted(by_series.items()):
        series = sorted(series, key=lambda r: float(r["cloud_cost_usd"]))
        xs, ys = zip(*(_xy(r) for r in series), strict=True)
        first = series[0]
        in_order = str(first.get("out_of_order", "")) in ("0", "False")
        ax.plot(
            xs,
            ys,
            marker="o",
            markersize=4,
            label=name,
            color=_COLOUR.get(str(first["policy"])),
            linestyle="--" if in_order else "-",
        )
    front = pareto_front([_xy(r) for r in rows])
    if front:
        fx, fy = zip(*front, strict=True)
        ax.step(
            fx, fy, where="post", color="black", linestyle=":", linewidth=1.5, label="Pareto front"
        )
    marked = [(r, highlights[str(r["label"])]) for r in rows if str(r["label"]) in highlights]
    for row, caption in marked:
        colour = _RING.get(caption.split()[0], "tab:gray")
        ax.scatter(
            *_xy(row),
            s=160,
            facecolors="none",
            edgecolors=colour,
            linewidths=2,
            zorder=5,
            label=f"{caption}: {row['label']}",
        )
    ax.set_xlabel("cloud cost ($)")
    ax.set_ylabel("mean JCT (hours)")
    ax.grid(True, alpha=0.3)
    ax.autoscale_view()
    _place_labels(fig, ax, rows, [r for r, _ in marked])
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def _place_labels(fig: Any, ax: Any, rows: Sequence[Row], marked: Sequence[Row]) -> None:
    """Budget labels, placed greedily so that no two boxes overlap where avoidable."""
    to_px = ax.transData.transform
    scale = fig.dpi / 72.0
    rings: list[Box] = []
    for row in marked:  # keep the rings clear
        x, y = to_px(_xy(row))
        rings.append((x - 8 * scale, y - 8 * scale, x + 8 * scale, y + 8 * scale))
    labelled = sorted((r for r in rows if r.get("budget") not in ("", None)), key=_xy)
    texts = [f"b={float(r['budget']):g}" for r in labelled]
    anchors = [(*to_px(_xy(r)), t) for r, t in zip(labelled, texts, strict=True)]
    for row, text, ((dx, dy), _) in zip(
        labelled, texts, place_labels(anchors, rings, scale), strict=True
    ):
        ax.annotate(
            text,
            _xy(row),
            fontsize=_FONT,
            xytext=(dx, dy),
            textcoords="offset points",
            ha="left" if dx >= 0 else "right",
            va="bottom",
        )


def place_labels(
    anchors: Sequence[tuple[float, float, str]], taken: Sequence[Box] = (), scale: float = 1.0
) -> list[tuple[tuple[int, int], Box]]:
    """For each (x, y, text) anchor in display pixels: the offset (points) and box chosen.

    Greedy in the given order: the first offset whose box overlaps nothing placed so far
    (nor ``taken``), else the offset with the least overlapping area.
    """
    boxes = list(taken)
    chosen = []
    for px, py, text in anchors:
        width, height = len(text) * _FONT * 0.6 * scale, _FONT * 1.2 * scale
        best: tuple[float, tuple[int, int], Box] | None = None
        for dx, dy in _OFFSETS:
            x0 = px + dx * scale if dx >= 0 else px + dx * scale - width
            box = (x0, py + dy * scale, x0 + width, py + dy * scale + height)
            overlap = sum(_overlap(box, other) for other in boxes)
            if best is None or overlap < best[0]:
                best = (overlap, (dx, dy), box)
            if overlap == 0:
                break
        assert best is not None
        boxes.append(best[2])
        chosen.append((best[1], best[2]))
    return chosen


def _overlap(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0
