"""The CLI and the simulator refuse absurd input with one clear line and exit 2, never a
traceback (issue 10, item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from starburst.cli.main import main


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main(args)
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out + captured.err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e308"])
def test_submit_refuses_non_finite_cpus_before_sending(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(
        ["submit", "--image", "x", "--cpus", value, "--server", "http://127.0.0.1:9", "--", "true"],
        capsys,
    )
    assert code == 2 and "finite number" in out and "Traceback" not in out


def test_db_upgrade_names_the_supported_databases(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["db", "upgrade", "--url", "mysql://u:secret@db/x"], capsys)
    assert code == 2 and "PostgreSQL and SQLite only" in out
    assert "secret" not in out and "Traceback" not in out


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("a,0,1e308,1,1", "runtime 1e308 is beyond the limit"),
        ("a,0,60,1e20,1", "gpus 1e20 is beyond the limit"),
        ("a,1e300,60,1,1", "submit_time 1e300 is beyond the limit"),
    ],
)
def test_simulate_refuses_overflowing_traces(
    row: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(f"job_id,submit_time,runtime,gpus,cpus\n{row}\n")
    code, out = run(["simulate", str(trace), "--nodes", "2", "--gpus-per-node", "8"], capsys)
    assert code == 2 and message in out and "line 2" in out
    assert "Traceback" not in out and "OverflowError" not in out


def test_simulate_refuses_an_absurd_cluster_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,runtime,gpus,cpus\na,0,60,1,1\n")
    code, out = run(
        ["simulate", str(trace), "--nodes", "99999999999", "--gpus-per-node", "8"], capsys
    )
    assert code == 2 and "--nodes" in out


@pytest.mark.parametrize("field", ["budget", "pass_interval_s", "default_runtime_s", "coefficient"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_settings_refuse_non_finite_numbers(
    field: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from starburst.settings import SettingsError, load_settings

    monkeypatch.setenv(f"STARBURST_{field.upper()}", value)
    with pytest.raises(SettingsError, match=field):
        load_settings()
