"""``starburst tune``'s regret against the offline optimum (``sim.regret``), on a history
small enough to work by hand."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

from starburst.sim.trace import write_trace
from tests.builders import make_job, run_cli

H = 3600.0


def history(tmp: Path) -> tuple[Path, Path]:
    """One GPU; at t=0 a 1 h job and two 10-minute jobs.

    No-Wait starts a (first by id) and bursts b and c: 1200 GPU-s, mean JCT 1600 s. Within
    +25% mean JCT the waits may add up to 3 × 400 s = 1200 s: the optimum runs b at once, a
    after it (600 s of wait) and bursts c — 600 GPU-s (all three on-prem would wait
    600 + 1200 s). So No-Wait's regret is exactly 2.00x.
    """
    trace, cluster = tmp / "trace.csv", tmp / "cluster.yaml"
    jobs = [make_job("a", runtime=H), make_job("b", runtime=600), make_job("c", runtime=600)]
    write_trace(jobs, trace)
    cluster.write_text("nodes:\n  - count: 1\n    gpus: 1\n", encoding="utf-8")
    return trace, cluster


def tune(tmp: Path, capsys, *extra: str):  # type: ignore[no-untyped-def]
    trace, cluster = history(tmp)
    args = ["tune", "--trace", str(trace), "--cluster", str(cluster), "--policies", "compute"]
    args += ["--budgets", "0.5", "--estimates", "p50", "--max-jct-increase", "25%"]
    return run_cli([*args, "--processes", "1", "--out", str(tmp / "out"), *extra], capsys)


def test_each_setting_gets_its_regret_against_the_proven_optimum(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, err = tune(tmp_path, capsys)
    assert code == 0, err
    assert "mean wait ≤ 0.111h); optimum 0.17 GPU-h ($0.42), proven" in out
    lines = out.splitlines()
    regret = lines.index(next(x for x in lines if x.startswith("regret = cloud GPU-h")))
    shown = {
        x.split("  ")[1].strip(): x.rsplit("  ", 1)[1]
        for x in lines[regret + 1 :]
        if x.startswith("  ")
    }
    assert shown["No-Wait"] == "2.00x"
    with (tmp_path / "out" / "results.csv").open() as fh:
        rows = {r["label"]: r for r in csv.DictReader(fh)}
    assert float(rows["No-Wait"]["regret_min"]) == pytest.approx(2.0)
    assert float(rows["No-Wait"]["regret_max"]) == pytest.approx(2.0)
    for label, row in rows.items():  # within the tolerance nothing beats the optimum
        if float(row["jct_change"]) <= 0.25 + 1e-9:
            assert float(row["regret_min"]) >= 1 - 1e-9, label


def test_without_the_optimum_extra_one_line_says_why(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    for name in [m for m in sys.modules if m == "ortools" or m.startswith("ortools.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "ortools", None)
    code, out, err = tune(tmp_path, capsys)
    assert code == 0, err
    why = [x for x in out.splitlines() if x.startswith("no regret shown")]
    assert why == [
        "no regret shown: the offline optimum needs OR-Tools "
        "(the optimum extra: pip install 'starburst[optimum]')"
    ]
    assert "regret = " not in out


def test_a_history_too_large_for_the_solver_says_so(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("starburst.sim.regret.MAX_JOBS", 2)
    code, out, err = tune(tmp_path, capsys)
    assert code == 0, err
    assert (
        "no regret shown: the history has 3 jobs, more than the 2 the offline optimum is "
        "solved for" in out
    )


def test_bad_optimum_seconds_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, err = tune(tmp_path, capsys, "--optimum-seconds", "-1")
    assert code == 2 and err.strip().count("\n") == 0
    assert "--optimum-seconds must be between 0 and 86400" in err


def test_an_unproven_optimum_shows_only_what_is_proven_of_a_regret() -> None:
    from starburst.sim.regret import Bracket, shown

    bracket = Bracket(lower=1.0, upper=2.0, mean_wait_bound_s=60.0, seconds=1.0)
    assert not bracket.proven and shown(*bracket.regret(3.0)) == "≥ 1.50x, ≤ 3.00x"
    no_bound = Bracket(lower=0.0, upper=2.0, mean_wait_bound_s=60.0, seconds=1.0)
    assert (
        shown(*no_bound.regret(3.0)) == "≥ 1.50x"
        and shown(*no_bound.regret(0.0)) == "≥ 0.00x, ≤ 1.00x"
    )
    free = Bracket(lower=0.0, upper=0.0, mean_wait_bound_s=60.0, seconds=1.0)
    assert free.proven and shown(*free.regret(0.0)) == "1.00x" and shown(*free.regret(1.0)) == "∞"


def test_the_bound_takes_the_linear_program_when_cp_sat_proves_nothing(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """a runs 40 s from 0; b (1 h) arrives at 10 s; 10 s of wait in all, one GPU: b cannot
    wait until a ends, so one of them bursts and the optimum bursts a (40 GPU-s). Check points
    60 s apart let b wait past a's end for free (a bound of 0); the linear program 30 s apart
    sees the overlap at 30 s. With CP-SAT's bound taken away, the bracket's lower end is the
    linear program's."""
    from starburst.sim import optimum_cpsat, regret
    from starburst.sim.optimum_cpsat import ProvenOptimum

    jobs = [make_job("a", runtime=40.0), make_job("b", runtime=H, submit=10.0)]
    assert regret.relaxed_bound(jobs, 1, 5.0, 10.0) == pytest.approx(40 / H, abs=1e-6)
    assert regret.relaxed_bound(jobs, 1, 5.0, 10.0) <= 40 / H

    def stopped(*_args, **_kwargs) -> ProvenOptimum:  # type: ignore[no-untyped-def]
        return ProvenOptimum(40 / H, 0.0, 0.0, 1, "stopped", 1.0)

    monkeypatch.setattr(optimum_cpsat, "prove_optimum", stopped)
    mean_runtime = (40.0 + H) / 2
    rows = [{"policy": "no-wait", "mean_jct_s": mean_runtime + 5.0, "cloud_gpu_hours": 40 / H}]
    found = regret.solve(jobs, 1, rows, 0.0, seconds=10.0, workers=1)
    assert isinstance(found, regret.Bracket)
    assert found.lower == pytest.approx(40 / H, abs=1e-6) and found.upper == 40 / H
    monkeypatch.setattr(regret, "LINEAR_SLOT", 60.0)
    assert regret.relaxed_bound(jobs, 1, 5.0, 10.0) == 0.0
