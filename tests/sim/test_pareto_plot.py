"""The Pareto plot as drawn: budget labels measured by matplotlib's own renderer do not
overlap one another, the rings or the axes' edges — near No-Wait, in every panel of a
sweep over loads, and with twenty labels at one point — and every panel rings its own
load's recommendation."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from starburst.core.capacity import uniform_nodes
from starburst.core.policy import PolicyKind
from starburst.sim import pareto, recommend
from starburst.sim.engine import SimOptions
from starburst.sim.sweep import sweep
from starburst.sim.synthetic import Workload
from tests.builders import run_cli

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

Row = dict[str, float | int | str]
POLICIES = ("compute", "constant", "runtime", "resource", "star")
BUDGETS = (0.05, 0.1, 0.25, 0.5, 1.0)


def result(label: str, policy: str, budget: float | str, ooo: int, cost: float, jct: float) -> Row:
    return {
        "label": label,
        "series": f"{policy} {'ooo' if ooo else 'in order'}",
        "policy": policy,
        "budget": budget,
        "out_of_order": ooo,
        "cloud_cost_usd": cost,
        "mean_jct_s": jct,
    }


def crowded() -> list[Row]:
    """A tune's rows where most settings land within 1% of No-Wait: the pile-up case."""
    rows = [result("No-Wait", "no-wait", "", 0, 500.0, 1800.0)]
    for p, policy in enumerate(POLICIES):
        for ooo in (0, 1):
            for b, budget in enumerate(BUDGETS):
                far = policy == "compute" and ooo and b >= 2  # Starburst spreads out
                cost = 500 - (120 * b if far else 2 * b + p)
                jct = 1800 + (150 * b if far else 3 * b + 2 * p + ooo)
                rows.append(result(f"{policy} {ooo} b={budget:g}", policy, budget, ooo, cost, jct))
    return rows


def drawn_labels(fig: Any) -> Iterator[tuple[Any, Any, Bbox]]:
    """(axes, annotation, its text box in pixels as rendered), leader line excluded."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        for text in ax.texts:
            text.update_positions(renderer)
            yield ax, text, Text.get_window_extent(text, renderer)


def assert_apart(fig: Any, rows: Sequence[Row], marks: dict[float | None, dict[str, str]]) -> None:
    labels = list(drawn_labels(fig))
    assert labels
    for i, (_, a_text, a) in enumerate(labels):
        for _, b_text, b in labels[i + 1 :]:
            assert not a.overlaps(b), (a_text.get_text(), b_text.get_text(), a, b)
    renderer = fig.canvas.get_renderer()
    scale = fig.dpi / 72.0
    for ax, text, box in labels:
        frame = ax.get_window_extent(renderer)
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1, text.get_text()
        assert frame.y0 <= box.y0 and box.y1 <= frame.y1, text.get_text()
    panels = sorted(marks, key=lambda load: -1.0 if load is None else load)
    for ax, load in zip(fig.axes, panels, strict=False):
        for row in rows:
            if str(row["label"]) not in marks[load] or row.get("load") != load:
                continue
            x, y = ax.transData.transform(pareto._xy(row))
            ring = Bbox.from_extents(*pareto._square((x, y), 8.5 * scale))  # the largest
            for a, text, box in labels:
                assert a is not ax or not box.overlaps(ring), (text.get_text(), row["label"])


def test_labels_near_no_wait_do_not_overlap_as_rendered() -> None:
    rows = crowded()
    marks = {
        "No-Wait": "today",
        "compute 1 b=0.05": "recommended",
        "constant 0 b=0.1": "knee",
    }
    fig = pareto.figure(rows, "crowded", highlights=marks)
    try:
        assert_apart(fig, rows, {None: marks})
        # every budget point labelled, none dropped (the same text within a pixel: once)
        ax = fig.axes[0]
        labels = [(t.get_text(), ax.transData.transform(t.xy)) for _, t, _ in drawn_labels(fig)]
        assert len(labels) > 40
        for row in rows[1:]:
            x, y = ax.transData.transform(pareto._xy(row))
            assert any(
                text == f"b={row['budget']:g}" and abs(px - x) <= 1 and abs(py - y) <= 1
                for text, (px, py) in labels
            ), row["label"]
    finally:
        plt.close(fig)


def test_twenty_labels_at_one_point_stay_apart_with_leader_lines() -> None:
    """Twelve spots beside a point hold twelve labels; the rest go to the rings."""
    budgets = [round(0.05 * k, 2) for k in range(1, 21)]
    rows = [result("No-Wait", "no-wait", "", 0, 500.0, 1800.0)]
    rows += [result(f"star b={b:g}", "star", b, 1, 300.0, 2000.0) for b in budgets]
    fig = pareto.figure(rows, "one point")
    try:
        assert_apart(fig, rows, {})
        labels = [t for _, t, _ in drawn_labels(fig)]
        assert sorted(t.get_text() for t in labels) == sorted(f"b={b:g}" for b in budgets)
        leaders = [t for t in labels if t.arrow_patch is not None]
        assert len(leaders) >= len(budgets) - 12
    finally:
        plt.close(fig)


def swept() -> list[Row]:
    loads = (0.8, 1.0, 1.2)
    sources = [(load, Workload(150, 16, load, 1.5, seed=2)) for load in loads]
    kinds = [PolicyKind.COMPUTE, PolicyKind.CONSTANT, PolicyKind.STAR]
    rows = sweep(sources, uniform_nodes(2, 8), kinds, [0.05, 0.1, 0.25, 0.5], SimOptions(), 1)
    return recommend.add_changes(rows)


def test_every_panel_of_a_sweep_rings_its_own_pick_and_keeps_labels_apart() -> None:
    rows = swept()
    marks = {
        load: recommend.highlights(recommend.recommend(group, 0.05))
        for load, group in recommend.by_load(rows).items()
    }
    fig = pareto.figure(rows, "sweep", by_load=marks)
    try:
        assert len(fig.axes) == 3
        assert_apart(fig, rows, marks)
        for ax, load in zip(fig.axes, sorted(marks), strict=True):
            legend = ax.get_legend_handles_labels()[1]
            rings = {name for name in legend if ":" in name}
            assert rings == {f"{caption}: {label}" for label, caption in marks[load].items()}
    finally:
        plt.close(fig)


def test_sweep_over_loads_hands_each_panel_its_recommendation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    drawn: list[dict[str, Any]] = []
    real = pareto.plot

    def spy(rows: Sequence[Row], path: Path, *args: Any, **kwargs: Any) -> Path:
        drawn.append({"rows": rows, **kwargs})
        return real(rows, path, *args, **kwargs)

    monkeypatch.setattr(pareto, "plot", spy)
    code, out, err = run_cli(
        [
            "sweep",
            "--loads",
            "0.8,1.2",
            "--jobs",
            "150",
            "--nodes",
            "2",
            "--policies",
            "compute,constant",
            "--budgets",
            "0.1,0.5",
            "--processes",
            "1",
            "--out",
            str(tmp_path),
        ],
        capsys,
    )
    assert code == 0, err
    [call] = drawn
    by_load = call["by_load"]
    assert sorted(by_load) == [0.8, 1.2]
    for load in (0.8, 1.2):
        picked = out.split(f"load {load:g}, recommendation")[1]
        cheapest = picked.split("cheapest within tolerance")[1].split(":")[0].strip()
        assert by_load[load][cheapest] == "recommended"
    assert (tmp_path / "pareto.png").read_bytes()[:4] == b"\x89PNG"
