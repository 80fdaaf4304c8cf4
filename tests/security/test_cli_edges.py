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


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("inf", "'inf' is not a finite duration"),
        ("nan", "'nan' is not a finite duration"),
        ("1e400", "'1e400' is not a finite duration"),
        ("-5", "a duration cannot be negative"),
        ("99999999999d", "beyond the longest duration, 100 years"),
    ],
)
@pytest.mark.parametrize("option", ["--runtime", "--time-limit"])
def test_submit_refuses_absurd_durations_before_sending(
    option: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(
        ["submit", "--image", "x", option, value, "--server", "http://127.0.0.1:9", "--", "true"],
        capsys,
    )
    assert code == 2 and message in out
    assert "Traceback" not in out and "JSON compliant" not in out and "reach" not in out


@pytest.fixture
def small_trace(tmp_path: Path) -> Path:
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,runtime,gpus,cpus\na,0,600,1,1\nb,0,600,8,1\n")
    return trace


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--price", "nan"], "--price nan is not a finite number from 0 to 1e+06"),
        (["--price", "inf"], "--price inf is not a finite number"),
        (["--price=2000000"], "--price 2e+06 is not a finite number from 0 to 1e+06"),  # fast
        (["--price", "2e6"], "--price 2e+06 is not a finite number from 0 to 1e+06"),  # typer
        (["--startup-delay", "inf"], "--startup-delay inf is not a finite number"),
        (["--cpus-per-node", "nan"], "--cpus-per-node nan is not a finite number"),
        (["--coefficient", "inf"], "--coefficient inf is not a finite number"),
        (["--budget", "1e308"], "--budget 1e+308 is not a finite number from 0 to 100"),
    ],
)
def test_simulate_refuses_non_finite_or_absurd_options(
    args: list[str], message: str, small_trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(
        ["simulate", str(small_trace), "--nodes", "1", "--gpus-per-node", "8", *args], capsys
    )
    assert code == 2 and message in out, out
    assert "$nan" not in out and "$inf" not in out and "Traceback" not in out


@pytest.mark.parametrize(
    "args",
    [
        ["sweep", "--jobs", "10", "--budgets", "0.1,nan"],
        ["sweep", "--jobs", "10", "--loads", "inf"],
        ["sweep", "--jobs", "10", "--price", "nan"],
        ["synth", "out.csv", "--load", "inf"],
        ["synth", "out.csv", "--mean-runtime", "nan"],
    ],
)
def test_sweep_and_synth_refuse_non_finite_numbers(
    args: list[str],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # nothing is written, but not here if it were
    code, out = run(args, capsys)
    assert code == 2 and "is not a finite number" in out, out
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("pass_interval_s", "1e308"),
        ("recalibrate_interval_s", "1e9"),
        ("retrain_interval_s", "1e12"),
        ("local_gpus", str(10**12)),
        ("budget", "1e6"),
        ("coefficient", "1e300"),
        ("queue_cap", str(10**12)),
        ("default_runtime_s", "1e300"),
        ("calibration_window", str(10**12)),
        ("lease_duration_s", "1e9"),
        ("max_job_cloud_price", "1e300"),
    ],
)
def test_settings_refuse_numbers_beyond_their_documented_bounds(
    field: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from starburst.settings import SettingsError, load_settings

    monkeypatch.setenv(f"STARBURST_{field.upper()}", value)
    with pytest.raises(SettingsError, match=f"{field}: Input should be less than or equal to"):
        load_settings()


def test_settings_refuse_absurd_rates_and_alert_shares(tmp_path: Path) -> None:
    from starburst.settings import SettingsError, load_settings

    rates = tmp_path / "rates.yaml"
    rates.write_text("onprem_rates: {A100: 1.0e300}\n")
    with pytest.raises(SettingsError, match=r"onprem_rates: .*not from 0 to 1e\+06"):
        load_settings(rates)
    alerts = tmp_path / "alerts.yaml"
    alerts.write_text("budget_alerts: [0.8, 1.0e300]\n")
    with pytest.raises(SettingsError, match=r"budget_alerts: .*up to 100"):
        load_settings(alerts)
