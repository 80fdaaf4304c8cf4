"""``starburst history export`` and ``starburst tune`` as an admin types them: output,
files, and one-line errors with exit code 2 for bad input."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.core.policy import PolicyKind
from starburst.core.setting import PolicySetting
from tests.builders import run_cli
from tests.support.databases import upgrade
from tests.tune.histories import record_history, record_scheduler

DAY = 86_400.0


def database(tmp: Path, history: bool = True, shape: bool = True) -> str:
    url = f"sqlite:///{tmp / 'sb.db'}"
    upgrade(url)
    store = SqlStore.open(url)
    try:
        if history:
            record_history(store, time.time() - 5 * DAY)
        if not shape:
            store.engine.dispose()
            with store.engine.begin() as conn:
                conn.exec_driver_sql("DELETE FROM controller_state")
    finally:
        store.close()
    return url


def tune(capsys, url: str, out: Path, policies: str, budgets: str, *extra: str):  # type: ignore[no-untyped-def]
    """``starburst tune`` over the last 7 days of ``url``, in one process, writing to ``out``."""
    args = ["tune", "--since", "7d", "--policies", policies, "--budgets", budgets, *extra]
    args += ["--optimum-seconds", "0"]  # regrets: tests/tune/test_regret.py
    return run_cli([*args, "--processes", "1", "--out", str(out), "--url", url], capsys)


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return database(tmp_path_factory.mktemp("db"))


def test_tune_prints_the_table_and_recommendation_and_writes_its_files(
    url: str, tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    code, out, err = tune(capsys, url, tmp_path, "compute,resource", "0.1,0.5")
    assert code == 0, err
    assert "replayed 80 finished jobs" in out and "$2.50/GPU-h" in out
    assert "Starburst b=0.25 (today)" in out and "Resource-Wait (out of order) b=0.5" in out
    assert "cheapest within tolerance" in out and "knee of the Pareto front" in out
    for name in ("results.csv", "pareto.png", "trace.csv", "cluster.yaml"):
        assert (tmp_path / name).stat().st_size > 0
    # the export replays offline too, with the same figures for the same setting
    code, offline, err = run_cli(
        [
            "tune",
            "--trace",
            str(tmp_path / "trace.csv"),
            "--cluster",
            str(tmp_path / "cluster.yaml"),
            "--policies",
            "compute",
            "--budgets",
            "0.1,0.5",
            "--processes",
            "1",
            "--optimum-seconds",
            "0",
            "--out",
            str(tmp_path / "off"),
        ],
        capsys,
    )
    assert code == 0, err

    def row(text: str) -> list[str]:
        return next(x for x in text.splitlines() if x.startswith("Starburst b=0.1 ")).split()

    assert row(out) == row(offline)


def test_apply_without_a_knee_refuses_and_writes_nothing(url: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, err = tune(
        capsys,
        url,
        tmp_path,
        "compute",
        "0.25",
        "--max-jct-increase",
        "0%",
        "--apply",
        "--choose",
        "knee",
        "--estimates",
        "p50",
    )
    assert code == 2 and "no knee setting to apply" in err  # 3 settings, 2 on the front
    store = SqlStore.open(url)
    try:
        assert store.tuning.setting_in_force() is None
    finally:
        store.close()


def test_export_writes_a_trace_and_a_cluster_file(url: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    trace, shape = tmp_path / "t.csv", tmp_path / "c.yaml"
    code, out, err = run_cli(
        [
            "history",
            "export",
            "--since",
            "30d",
            "-o",
            str(trace),
            "--cluster",
            str(shape),
            "--url",
            url,
        ],
        capsys,
    )
    assert code == 0, err
    header = trace.read_text().splitlines()[0].split(",")
    assert header[:5] == ["job_id", "submit_time", "runtime", "gpus", "cpus"]
    assert {"estimate", "user", "team", "ran_on"} <= set(header)
    assert "gpus: 8" in shape.read_text() and "count: 2" in shape.read_text()
    assert "80 finished jobs" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-jct-increase", "lots"], "JCT tolerance 'lots' is not a number"),
        (["--budgets", "0.1,abc"], "--budgets: 'abc' is not a number"),
        (["--budgets", "-1"], "--budgets -1 is not a finite number from 0 to 100"),
        (["--budgets", "nan"], "--budgets nan is not a finite number"),
        (["--policies", "compute,bogus"], "unknown policy 'bogus'"),
        (["--since", "yesterday"], "'yesterday' is not a duration"),
        (["--since", "0"], "must be after since"),
        (["--choose", "best"], "--choose 'best'"),
        (["--price", "-2"], "--price -2 is not a finite number from 0 to 1e+06"),
        (["--price", "inf"], "--price inf is not a finite number"),
        (["--trace", "t.csv"], "give --trace and --cluster together"),
        (["--trace", "t.csv", "--cluster", "c.yaml", "--apply"], "--apply tunes on the store"),
    ],
)
def test_bad_tune_input_is_one_line_and_exit_2(
    url: str, args: list[str], message: str, capsys
) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run_cli(["tune", *args, "--url", url], capsys)
    assert code == 2 and message in err
    assert "Traceback" not in err


def test_an_empty_or_shapeless_store_is_explained(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    empty = database(tmp_path / "e", history=False) if (tmp_path / "e").mkdir() is None else ""
    code, _, err = run_cli(["tune", "--url", empty, "--out", str(tmp_path)], capsys)
    assert code == 2 and "no finished jobs in that window" in err
    code, _, err = run_cli(
        ["history", "export", "-o", str(tmp_path / "t.csv"), "--url", empty], capsys
    )
    assert code == 2 and "no finished jobs in that window" in err
    shapeless = database(tmp_path / "s", shape=False) if (tmp_path / "s").mkdir() is None else ""
    code, _, err = run_cli(["tune", "--url", shapeless, "--out", str(tmp_path)], capsys)
    assert code == 2 and "no cluster shape yet" in err and "--cluster FILE" in err


def test_a_database_never_migrated_is_a_clear_error(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'new.db'}"
    code, _, err = run_cli(
        ["history", "export", "-o", str(tmp_path / "t.csv"), "--url", url], capsys
    )
    assert code == 2 and "Traceback" not in err
    assert err.startswith("error:")


def test_an_applied_setting_is_what_today_means_until_the_controller_records_one(
    tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "d").mkdir()
    url = database(tmp_path / "d")
    store = SqlStore.open(url)
    try:
        store.tuning.apply_setting(
            PolicySetting(PolicyKind.CONSTANT, 0.5, None, False), actor="t", reason="test"
        )
    finally:
        store.close()
    code, out, err = tune(capsys, url, tmp_path, "compute", "0.1")
    assert code == 0, err
    assert "Constant-Wait b=0.5 (today)" in out


def test_apply_of_todays_budget_says_already_in_force_and_logs_nothing(
    tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    """Today's row carries the coefficient the controller recorded; the candidate of the same
    policy, budget and mode (refitted on the export) is still today's setting."""
    (tmp_path / "d").mkdir()
    url = database(tmp_path / "d")
    store = SqlStore.open(url)
    try:
        record_scheduler(store, coefficient=0.001)  # a stale refit: today's row costs more
    finally:
        store.close()
    code, out, err = tune(
        capsys,
        url,
        tmp_path,
        "compute",
        "0.25",
        "--max-jct-increase",
        "1000%",
        "--apply",
        "--estimates",
        "p50",
    )
    assert code == 0, err
    assert "Starburst b=0.25 (today, c=0.001)" in out  # today's own row ...
    cheapest = out.split("cheapest within tolerance")[1].splitlines()[0]
    assert cheapest.strip().startswith("Starburst b=0.25: ")  # ... is not the pick
    assert cheapest.rstrip().endswith("today's setting")
    assert "already in force: Starburst b=0.25 has today's policy, budget and mode" in out
    assert "applied" not in out.split("already in force")[1]
    store = SqlStore.open(url)
    try:
        assert store.tuning.settings_log() == []
    finally:
        store.close()
