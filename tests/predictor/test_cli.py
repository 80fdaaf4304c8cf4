"""``starburst predictor synth|train|evaluate|show`` end to end, through the real entry point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import run_cli

run = run_cli


def test_synth_train_show_evaluate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace, model = tmp_path / "trace.csv", tmp_path / "model.joblib"
    code, out, _ = run(
        [
            "predictor",
            "synth",
            str(trace),
            "--jobs",
            "700",
            "--users",
            "30",
            "--jobs-per-hour",
            "20",
            "--seed",
            "2",
        ],
        capsys,
    )
    assert code == 0 and trace.exists()
    code, out, _ = run(
        ["predictor", "train", "--trace", str(trace), "--out", str(model), "--threads", "1"], capsys
    )
    assert code == 0 and model.exists() and "model version" in out and "(700 jobs)" in out
    code, out, _ = run(
        ["predictor", "show", "--model", str(model), "--trace", str(trace), "--limit", "3"], capsys
    )
    assert code == 0 and out.count("(model:rt-") == 3
    assert "chosen form        " in out and "rolling-origin folds" in out
    assert "cross-validated MALR by form" in out and "user-gpus-median-10" in out
    assert "metric cv_coverage_last_fold" in out
    code, out, _ = run(
        [
            "predictor",
            "evaluate",
            "--trace",
            str(trace),
            "--schedule",
            "--load",
            "2",
            "--threads",
            "1",
        ],
        capsys,
    )
    assert code == 0
    for expected in (
        "global median",
        "user's median, last 10",
        "90% interval",
        "form chosen by training",
        "declared by user",
        "No-Wait",
        "Starburst, oracle runtimes",
        "Starburst, predicted runtimes",
        "Star-Wait (no estimate)",
        "Star-Wait, no queue cap",
        "Starburst, predicted p90",
        "compute-expected, predicted",
    ):
        assert expected in out
    # --status keeps only the listed final statuses (a trace without the column says so)
    code, _, err = run(["predictor", "evaluate", "--trace", str(trace), "--status", "Pass"], capsys)
    assert code == 2 and "needs a 'status' or 'state' column" in err


def test_show_a_corrupt_model_explains_the_fallback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "model.joblib"
    model.write_bytes(b"\x00garbage")
    code, _, err = run(["predictor", "show", "--model", str(model)], capsys)
    assert code == 2 and "corrupt" in err and "fallback chain" in err and "Traceback" not in err


def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["predictor", "train"], capsys)
    assert code == 2 and "--trace FILE or --synthetic" in err
    code, _, err = run(["predictor", "train", "--trace", str(tmp_path / "none.csv")], capsys)
    assert code == 2 and "none.csv" in err
    tiny = tmp_path / "tiny.csv"
    tiny.write_text("job_id,submit_time,runtime,gpus,cpus\na,0,10,1,1\n")
    code, _, err = run(["predictor", "train", "--trace", str(tiny)], capsys)
    assert code == 2 and "at least" in err


def test_scikit_learn_is_imported_lazily() -> None:
    probe = (
        "import sys, starburst, starburst.cli.main as m, starburst.predictor.estimator, "
        "starburst.predictor.workload, starburst.cli.predictor\n"
        "m.build_app(['simulate'])\n"
        "print('sklearn' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
