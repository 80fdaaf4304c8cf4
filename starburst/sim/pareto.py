"""The Pareto plot admins choose a waiting budget from: cloud cost against mean JCT.

Each series (a policy run one way, named as the tables name it: "Starburst", "Star-Wait",
see ``naming``) is one line whose points are budgets, labelled "b=…": one colour per policy,
solid out of order, dashed in order. The points no other point beats on both cost and JCT
form the Pareto front, drawn as a dotted step line. Settings worth pointing at (today's, the
recommendation, the knee) get a ring and a caption; the legend sits outside the axes. With
several loads (``sweep --loads``) there is one panel per load, each with its own marks.

Labels are placed once the layout is final, from their measured size (the renderer's text
box, not an estimate): greedily, each takes the first candidate position whose box lies
inside the axes and overlaps no label placed before it, no ring and no data point. The
candidates are a dozen spots right beside the point, then rings farther out (a thin leader
line then joins label and point), so even dozens of labels near No-Wait stay apart; the
same text at the same spot (two series at one point) is written once. matplotlib is imported
only here, with the non-interactive Agg backend, so plotting works on a headless server.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starburst.core.errors import ConfigError

Row = dict[str, float | int | str]
Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in display pixels

#: label offsets tried first, in points from the data point, the label's lower corner there
#: (rows 12 points apart: a label is about 8.5 points high)
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
#: the rings of farther candidates: radii (points) and positions per ring
_RINGS = tuple(range(24, 150, 11))
_PER_RING = 16
#: beyond this distance (points) a leader line joins a label to its point
_LEADER = 16.0
#: pixels kept clear around each label (text is snapped to whole pixels when drawn)
_PAD = 1.0
_DPI = 110
#: colours of highlighted settings, by caption prefix
_RING = {"today": "tab:red", "recommended": "tab:green", "knee": "tab:purple"}
#: their sizes (points²; the largest is 7.7 points across its middle), nested so that
#: rings on one point (the knee at today's setting) all show
_RING_SIZE = {"today": 240.0, "recommended": 150.0, "knee": 80.0}
#: half the side of the square kept clear of labels around a ring, in points
_RING_CLEAR = 9.5
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
    by_load: Mapping[float | None, Mapping[str, str]] | None = None,
) -> Path:
    """Write the plot; ``highlights`` maps a row's label to a caption ("today", …) on every
    panel, ``by_load`` a panel's load (None: rows without a load) to its own captions."""
    plt = _pyplot()
    fig = figure(rows, title, highlights, by_load)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi="figure")
    plt.close(fig)
    return path


def figure(
    rows: Sequence[Row],
    title: str = "Cloud cost vs mean JCT",
    highlights: Mapping[str, str] | None = None,
    by_load: Mapping[float | None, Mapping[str, str]] | None = None,
) -> Any:
    """The plot as a matplotlib figure, labels placed (see ``plot``); the caller closes it."""
    plt = _pyplot()
    loads: list[float | None] = [*sorted({float(r["load"]) for r in rows if "load" in r})]
    if not loads:
        loads = [None]
    fig, axes = plt.subplots(1, len(loads), figsize=(10 * len(loads), 5.5), squeeze=False, dpi=_DPI)
    panels = []
    for ax, load in zip(axes[0], loads, strict=True):
        subset = [r for r in rows if load is None or float(r.get("load", -1)) == load]
        ax.set_title(title if load is None else f"{title} (load {load:g})")
        marks = (by_load or {}).get(load, highlights or {})
        panels.append((ax, subset, _draw(ax, subset, marks)))
    fig.tight_layout()  # before the labels: placing them needs the final pixel positions
    for ax, subset, marked in panels:
        _place_labels(fig, ax, subset, marked)
    return fig


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError(
            "plotting needs matplotlib: install the simulator extra, pip install 'starburst[sim]'"
        ) from None
    return plt


def _series(row: Row) -> str:
    return str(row.get("series") or row["policy"])


def _xy(row: Row) -> tuple[float, float]:
    return float(row["cloud_cost_usd"]), float(row["mean_jct_s"]) / 3600.0


def _draw(ax: Any, rows: Sequence[Row], highlights: Mapping[str, str]) -> list[Row]:
    """Series, front, rings and legend (no labels yet); the rows ringed."""
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
            s=_RING_SIZE.get(caption.split()[0], 150.0),
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
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return [r for r, _ in marked]


def _place_labels(fig: Any, ax: Any, rows: Sequence[Row], marked: Sequence[Row]) -> None:
    """Budget labels from their measured size, placed by ``place_labels``."""
    renderer = fig.canvas.get_renderer()
    to_px = ax.transData.transform
    scale = fig.dpi / 72.0
    frame = tuple(ax.get_window_extent(renderer).extents)
    taken: list[Box] = []
    for row in marked:  # keep the rings clear
        taken.append(_square(to_px(_xy(row)), _RING_CLEAR * scale))
    for row in rows:  # and every point's marker
        taken.append(_square(to_px(_xy(row)), 2.5 * scale))
    seen: set[tuple[str, int, int]] = set()
    labels: list[tuple[tuple[float, float], str]] = []
    for row in sorted((r for r in rows if r.get("budget") not in ("", None)), key=_xy):
        text = f"b={float(row['budget']):g}"
        px, py = to_px(_xy(row))
        key = (text, round(px), round(py))
        if key not in seen:  # two series at one spot with one budget: one label
            seen.add(key)
            labels.append((_xy(row), text))
    sizes = {text: _size(ax, renderer, text) for text in {t for _, t in labels}}
    anchors = [(*to_px(xy), *sizes[text]) for xy, text in labels]
    for (xy, text), spot in zip(labels, place_labels(anchors, taken, scale, frame), strict=True):
        far = (spot.dx**2 + spot.dy**2) ** 0.5 > _LEADER
        ax.annotate(
            text,
            xy,
            fontsize=_FONT,
            xytext=(spot.dx, spot.dy),
            textcoords="offset points",
            ha=spot.ha,
            va=spot.va,
            arrowprops={"arrowstyle": "-", "color": "0.45", "lw": 0.6, "shrinkA": 0, "shrinkB": 2}
            if far
            else None,
        )


def _size(ax: Any, renderer: Any, text: str) -> tuple[float, float]:
    """Width and height in pixels of ``text`` as a label draws it."""
    probe = ax.text(0, 0, text, fontsize=_FONT)
    box = probe.get_window_extent(renderer)
    probe.remove()
    return float(box.width), float(box.height)


def _square(center: Any, half: float) -> Box:
    x, y = float(center[0]), float(center[1])
    return (x - half, y - half, x + half, y + half)


@dataclass(frozen=True, slots=True)
class Spot:
    """Where a label goes: its offset from the point (points), its alignment there, its box."""

    dx: float
    dy: float
    ha: str
    va: str
    box: Box


def candidates() -> list[tuple[float, float, str, str]]:
    """Offsets (points) and alignments in the order tried: beside the point, then rings."""
    near = [(dx, dy, "left" if dx >= 0 else "right", "bottom") for dx, dy in _OFFSETS]
    far = []
    for n, radius in enumerate(_RINGS):
        for k in range(_PER_RING):
            angle = 2 * math.pi * (k + 0.5 * (n % 2)) / _PER_RING
            dx, dy = radius * math.cos(angle), radius * math.sin(angle)
            far.append((dx, dy, "left" if dx >= 0 else "right", "bottom" if dy >= 0 else "top"))
    return near + far


def place_labels(
    anchors: Sequence[tuple[float, float, float, float]],
    taken: Sequence[Box] = (),
    scale: float = 1.0,
    frame: Box | None = None,
) -> list[Spot]:
    """For each (x, y, width, height) anchor in display pixels, where its label goes.

    Greedy in the given order: the first candidate whose box (padded by ``_PAD``) lies in
    ``frame`` and overlaps nothing placed so far nor ``taken``; else the candidate with the
    least overlapping area (area outside the frame counting as overlap).
    """
    boxes = list(taken)
    tried = candidates()
    chosen = []
    for px, py, width, height in anchors:
        best: tuple[float, Spot] | None = None
        for dx, dy, ha, va in tried:
            x0 = px + dx * scale if ha == "left" else px + dx * scale - width
            y0 = py + dy * scale if va == "bottom" else py + dy * scale - height
            box = (x0 - _PAD, y0 - _PAD, x0 + width + _PAD, y0 + height + _PAD)
            cost = sum(_overlap(box, other) for other in boxes) + _outside(box, frame)
            if best is None or cost < best[0]:
                best = (cost, Spot(dx, dy, ha, va, box))
            if cost == 0:
                break
        assert best is not None
        boxes.append(best[1].box)
        chosen.append(best[1])
    return chosen


def _overlap(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def _outside(box: Box, frame: Box | None) -> float:
    """The area of ``box`` outside ``frame``."""
    if frame is None:
        return 0.0
    area = (box[2] - box[0]) * (box[3] - box[1])
    return area - _overlap(box, frame)
