"""Recommendations, notes, names and plot labels computed from replayed results."""

from __future__ import annotations

from pathlib import Path

import pytest

from starburst.core.capacity import uniform_nodes
from starburst.core.errors import ConfigError
from starburst.core.policy import PolicyKind
from starburst.sim import notes, pareto, recommend
from starburst.sim.naming import label, series_name
from starburst.sim.synthetic import Workload, generate
from starburst.sim.trace import write_trace
from starburst.sim.tune import Deployed, tune

Row = dict[str, float | int | str]


def row(name: str, cost: float, jct: float, **extra: float | int | str) -> Row:
    out: Row = {
        "label": name,
        "policy": extra.pop("policy", "compute"),
        "budget": 0.1,
        "cloud_cost_usd": cost,
        "mean_jct_s": jct,
        "p90_jct_s": jct * 2,
        "burst_jobs": 3,
        "cluster_utilization": 0.7,
        "out_of_order": 1,
    }
    out.update(extra)
    return out


def test_names_match_the_papers_and_spell_out_only_the_unusual_mode() -> None:
    assert series_name(PolicyKind.COMPUTE, True) == "Starburst"
    assert series_name(PolicyKind.COMPUTE, False) == "Compute-Wait (in order)"
    assert series_name(PolicyKind.STAR, True) == "Star-Wait"
    assert series_name(PolicyKind.STAR, False) == "Star-Wait (in order)"
    assert series_name(PolicyKind.RESOURCE, True) == "Resource-Wait (out of order)"
    assert label(PolicyKind.CONSTANT, False, 0.25) == "Constant-Wait b=0.25"
    assert label(PolicyKind.NO_WAIT, True, 0.25) == "No-Wait"
    for kind in PolicyKind:  # every policy has a name
        assert series_name(kind, True) and series_name(kind, False)


def test_the_cheapest_setting_within_the_tolerance_is_recommended() -> None:
    rows = recommend.add_changes(
        [
            row("No-Wait", 100, 1000, policy="no-wait", budget=""),
            row("a", 60, 1040),
            row("b", 40, 1049),
            row("c", 10, 1200),
        ]
    )
    rows = [{**r, "jct_change": float(r["mean_jct_s"]) / 1000 - 1} for r in rows]
    rec = recommend.recommend(rows, 0.05)
    assert rec.cheapest is not None and rec.cheapest["label"] == "b"
    assert recommend.recommend(rows, 0.5).cheapest["label"] == "c"  # type: ignore[index]
    assert recommend.recommend(rows, 0.0).cheapest["label"] == "No-Wait"  # type: ignore[index]


def test_the_knee_is_where_the_front_bends() -> None:
    front = [
        row("dear", 100, 1000),
        row("knee", 30, 1020),
        row("mid", 20, 1200),
        row("cheap", 0, 2000),
        row("dominated", 50, 1100),
    ]
    knee = recommend.knee(front)
    assert knee is not None and knee["label"] == "knee"
    assert recommend.knee(front[:2]) is None  # two points have no bend


@pytest.mark.parametrize("text", ["lots", "-5%", "", "1e9"])
def test_bad_tolerances_are_refused_with_a_reason(text: str) -> None:
    with pytest.raises(ConfigError, match="JCT tolerance"):
        recommend.parse_tolerance(text)


def test_tolerance_accepts_percent_and_fraction() -> None:
    assert recommend.parse_tolerance("5%") == pytest.approx(0.05)
    assert recommend.parse_tolerance("0.05") == pytest.approx(0.05)


def test_notes_explain_rows_that_cost_more_than_no_wait_from_their_figures() -> None:
    base = row(
        "No-Wait", 100, 1000, policy="no-wait", budget="", savings=0.0, cluster_utilization=0.7
    )
    pulled = row("P", 120, 1000, policy="x", savings=-0.2, pulled_back=9, out_of_order=0)
    blocked = row("B", 110, 1000, policy="y", savings=-0.1, cluster_utilization=0.6, out_of_order=0)
    twin = row("B ooo", 60, 1000, policy="y", savings=0.4, cluster_utilization=0.8)
    fine = row("F", 50, 1000, policy="z", savings=0.5, jct_change=0.2)
    out = {
        str(r["label"]): r.get("note", "")
        for r in notes.explain([base, pulled, blocked, twin, fine], tolerance=0.05)
    }
    assert "9 jobs were pulled back" in str(out["P"]) and "head" in str(out["P"])
    assert "head-of-line blocking" in str(out["B"]) and "60% busy vs 70%" in str(out["B"])
    assert "out of order it saves 40% vs No-Wait (B ooo)" in str(out["B"])
    assert "over the +5% tolerance" in str(out["F"])
    assert out["No-Wait"] == "" and out["B ooo"] == ""


NO_WAIT = row("No-Wait", 100, 1000, policy="no-wait", budget="", savings=0.0, out_of_order=0)


def note_of(subject: Row, *others: Row, tolerance: float | None = None) -> str:
    """The note ``explain`` gives ``subject`` next to No-Wait (70% busy) and ``others``."""
    out = notes.explain([NO_WAIT, subject, *others], tolerance)
    return str(out[1].get("note", ""))


@pytest.mark.parametrize("ooo", [0, 1])
def test_the_pull_back_note_quotes_the_rows_own_pull_backs(ooo: int) -> None:
    star = row("S", 150, 1000, policy="star", savings=-0.5, pulled_back=7, out_of_order=ooo)
    note = note_of(star)
    assert note.startswith("costs more than No-Wait: 7 jobs were pulled back from the cloud")
    assert ("block the jobs behind" in note) == (not ooo)  # only in order is the head blocked
    assert note_of({**star, "pulled_back": 0}).find("pulled back") == -1


def test_the_head_of_line_note_needs_in_order_and_a_less_busy_cluster() -> None:
    blocked = row("R", 110, 1000, policy="resource", savings=-0.1, out_of_order=0)
    note = note_of({**blocked, "cluster_utilization": 0.6})
    assert note.startswith("costs more than No-Wait: head-of-line blocking")
    assert "cluster 60% busy vs 70%" in note
    # out of order there is no head to block; as busy as No-Wait, nothing was blocked
    assert "head-of-line" not in note_of({**blocked, "cluster_utilization": 0.6, "out_of_order": 1})
    assert "head-of-line" not in note_of({**blocked, "cluster_utilization": 0.7})


@pytest.mark.parametrize(
    ("policy", "words"),
    [
        ("constant", "every job gets the same wait budget, whatever its compute"),
        ("runtime", "wait budgets grow with runtime, not with GPUs"),
        ("resource", "wait budgets grow with GPUs, not with runtime"),
        ("star", "Star-Wait's budgets grow with GPUs, not with runtime"),
    ],
)
def test_the_budget_note_names_what_the_policys_budgets_ignore(policy: str, words: str) -> None:
    costly = row("X", 120, 1000, policy=policy, savings=-0.2, cluster_utilization=0.8)
    note = note_of(costly)
    assert note == (
        f"costs more than No-Wait: {words}, so jobs that waited took GPUs that dearer "
        "later arrivals then burst for"
    )
    assert note_of({**costly, "savings": 0.3, "cloud_cost_usd": 70}) == ""  # it saves: no note


@pytest.mark.parametrize("policy", ["compute", "compute-expected"])
def test_compute_budgets_are_never_said_to_ignore_compute(policy: str) -> None:
    """Compute-Wait's budgets do follow compute: an out-of-order Starburst row dearer than
    No-Wait gets the figure it shows (a less busy cluster), or no cost note at all."""
    starburst = row("Starburst b=0.1", 120, 1000, policy=policy, savings=-0.2)
    quiet = note_of({**starburst, "cluster_utilization": 0.6})
    assert (
        quiet == "costs more than No-Wait: less of the work ran on-prem (cluster 60% busy vs 70%)"
    )
    assert note_of({**starburst, "cluster_utilization": 0.8}) == ""


def test_the_twin_and_tolerance_notes() -> None:
    slow = row("C in", 90, 1300, policy="constant", savings=0.1, out_of_order=0, jct_change=0.3)
    fast = row("C ooo", 40, 1010, policy="constant", savings=0.6, jct_change=0.01)
    assert note_of(slow, fast, tolerance=0.05) == (
        "out of order it saves 60% vs No-Wait (C ooo); mean JCT +30% is over the +5% tolerance"
    )
    assert note_of(fast, slow, tolerance=0.05) == ""  # the cheaper twin, within tolerance
    near = {**fast, "savings": 0.14}  # less than 5 points better than its twin: no note
    assert note_of(slow, near, tolerance=None) == ""


def test_labels_at_one_spot_are_spread_so_none_overlap() -> None:
    anchors = [(100.0, 100.0, 30.0, 9.0) for _ in range(6)]
    boxes = [spot.box for spot in pareto.place_labels(anchors)]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert pareto._overlap(a, b) == 0.0


def test_plot_legend_uses_the_table_names_and_marks_the_choice(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [
        row("No-Wait", 100, 1000, policy="no-wait", budget="", series="No-Wait"),
        row("Starburst b=0.1", 60, 1040, series="Starburst"),
        row("Starburst b=0.5", 30, 1100, series="Starburst", budget=0.5),
    ]
    fig, ax = plt.subplots()
    pareto._draw(ax, rows, {"Starburst b=0.1": "recommended"})
    names = ax.get_legend_handles_labels()[1]
    plt.close(fig)
    assert "Starburst" in names and "compute" not in names
    assert "recommended: Starburst b=0.1" in names


def test_tune_replays_today_and_recommends_within_the_tolerance(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    jobs = generate(Workload(300, 16, load=1.1, seed=3))
    write_trace([j.with_estimate((j.runtime or 0) * 1.3) for j in jobs], trace)
    deployed = Deployed(PolicyKind.COMPUTE, 0.5, out_of_order=True, queue_cap=10)
    result = tune(
        trace,
        uniform_nodes(2, 8),
        deployed,
        [PolicyKind.COMPUTE, PolicyKind.STAR],
        [0.1, 0.5],
        tolerance=0.05,
        processes=1,
    )
    today = [r for r in result.rows if r.get("role") == "today"]
    assert [r["label"] for r in today] == ["Starburst b=0.5 (today)"]
    assert today[0]["saving_vs_today"] == 0.0
    assert len(result.rows) == 1 + 2 * 2 * 2  # No-Wait + policies × budgets × modes
    rec = result.recommendation
    assert rec.cheapest is not None and float(rec.cheapest["jct_change"]) <= 0.05
    assert all(
        float(r["cloud_cost_usd"]) >= float(rec.cheapest["cloud_cost_usd"])
        for r in result.rows
        if float(r["jct_change"]) <= 0.05
    )
