"""The simulator commands as a person runs them: figures out, one-line errors, exit codes."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from starburst.sim.synthetic import Workload, generate
from starburst.sim.trace import write_trace
from tests.builders import run_cli

KEYS = {
    "jobs",
    "burst_jobs",
    "cloud_gpu_hours",
    "cloud_cost_usd",
    "mean_jct_s",
    "p90_jct_s",
    "p99_jct_s",
    "mean_wait_s",
    "cluster_utilization",
    "offered_load",
}


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "trace.csv"
    write_trace(generate(Workload(300, 32, load=1.1, seed=2)), path)
    return path


run = run_cli


def test_simulate_json_has_the_promised_figures(trace: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(
        [
            "simulate",
            str(trace),
            "--nodes",
            "4",
            "--gpus-per-node",
            "8",
            "--policy",
            "compute",
            "--budget",
            "0.25",
            "--out-of-order",
            "--queue-cap",
            "30",
            "--json",
        ],
        capsys,
    )
    assert code == 0
    summary = json.loads(out)
    assert summary.keys() >= KEYS
    assert summary["jobs"] == 300
    assert summary["coefficient"] > 0


def test_coefficient_and_budget_agree_for_the_same_value(trace: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    base = [
        "simulate",
        str(trace),
        "--nodes",
        "4",
        "--gpus-per-node",
        "8",
        "--policy",
        "runtime",
        "--json",
    ]
    _, by_budget, _ = run([*base, "--budget", "0.3"], capsys)
    _, by_coef, _ = run([*base, "--coefficient", "0.3"], capsys)
    assert json.loads(by_budget)["cloud_cost_usd"] == json.loads(by_coef)["cloud_cost_usd"]


def test_per_job_file_says_where_each_job_ran_and_why(trace: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    per_job = tmp_path / "jobs.csv"
    code, out, _ = run(
        [
            "simulate",
            str(trace),
            "--nodes",
            "4",
            "--gpus-per-node",
            "8",
            "--policy",
            "constant",
            "--coefficient",
            "600",
            "--per-job",
            str(per_job),
        ],
        capsys,
    )
    assert code == 0 and "cloud cost" in out
    rows = list(csv.DictReader(per_job.read_text().splitlines()))
    assert len(rows) == 300
    assert {r["where"] for r in rows} == {"onprem", "cloud"}
    burst = next(r for r in rows if r["where"] == "cloud")
    assert burst["wait_budget_s"] == "600" and "budget" in burst["reason"]
    local = next(r for r in rows if r["where"] == "onprem")
    assert local["placement"].startswith("node-")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "fastest"], "unknown policy 'fastest'"),
        (["--coefficient", "1", "--budget", "0.2"], "either --coefficient or --budget"),
        (["--order", "lifo"], "unknown queue order 'lifo'"),
        (["--placement", "worst-fit"], "unknown placement 'worst-fit'"),
        (["--queue-cap", "thirty"], "--queue-cap 'thirty' is not a whole number or 'none'"),
        (["--queue-cap", "-1"], "--queue-cap must be ≥ 0"),
    ],
)
def test_bad_options_are_one_line_errors(
    trace: Path,
    capsys,
    args: list[str],  # type: ignore[no-untyped-def]
    message: str,
) -> None:
    code, _, err = run(
        ["simulate", str(trace), "--nodes", "1", "--gpus-per-node", "8", *args], capsys
    )
    assert code == 2
    assert message in err and "Traceback" not in err


def test_a_broken_trace_exits_non_zero_naming_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,submit_time,runtime,gpus,cpus\na,0,3600,1,1\nb,10,-1,1,1\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "starburst.cli",
            "simulate",
            str(bad),
            "--nodes",
            "1",
            "--gpus-per-node",
            "8",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert f"{bad}: line 3: runtime must be a finite number ≥ 0" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_heterogeneous_cluster_file(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    shape = tmp_path / "cluster.yaml"
    shape.write_text(
        "nodes:\n  - {count: 1, gpus: 8, gpu_type: a100}\n  - {count: 2, gpus: 4, gpu_type: v100}\n"
    )
    trace = tmp_path / "t.csv"
    trace.write_text(
        "job_id,submit_time,runtime,gpus,cpus,gpu_type\n"
        "a,0,3600,4,0,a100\nb,0,3600,4,0,a100\nc,0,3600,4,0,\n"
    )
    per_job = tmp_path / "out.csv"
    code, _, _ = run(
        [
            "simulate",
            str(trace),
            "--cluster",
            str(shape),
            "--policy",
            "no-wait",
            "--per-job",
            str(per_job),
        ],
        capsys,
    )
    assert code == 0
    rows = {r["job_id"]: r for r in csv.DictReader(per_job.read_text().splitlines())}
    assert rows["a"]["placement"] == "a100-node-0×4"
    assert rows["b"]["placement"] == "a100-node-0×4"
    assert rows["c"]["placement"] == "v100-node-1×4"
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes:\n  - {count: 1}\n")
    code, _, err = run(["simulate", str(trace), "--cluster", str(bad)], capsys)
    assert code == 2 and "'gpus' is required" in err


def test_sweep_writes_a_table_and_a_pareto_png(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(
        [
            "sweep",
            "--jobs",
            "200",
            "--nodes",
            "2",
            "--policies",
            "no-wait,compute,constant",
            "--budgets",
            "0.1,0.5",
            "--loads",
            "1.0",
            "--processes",
            "2",
            "--out",
            str(tmp_path),
        ],
        capsys,
    )
    assert code == 0
    rows = list(csv.DictReader((tmp_path / "results.csv").read_text().splitlines()))
    assert {r["label"] for r in rows} == {
        "No-Wait",
        "Starburst b=0.1",
        "Starburst b=0.5",
        "Constant-Wait b=0.1",
        "Constant-Wait b=0.5",
    }
    png = (tmp_path / "pareto.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert "saved vs No-Wait" in out
    assert "cheapest within tolerance" in out and "knee of the Pareto front" in out


def test_sweep_refuses_a_bad_tolerance(capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run(["sweep", "--jobs", "50", "--max-jct-increase", "lots"], capsys)
    assert code == 2 and "JCT tolerance 'lots' is not a number" in err


def test_demo_recommends_over_its_sweep_and_rings_it(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(["demo", "--jobs", "200", "--out", str(tmp_path)], capsys)
    assert code == 0
    assert "Star-Wait (in order)" in out and "cheapest within tolerance" in out
    assert (tmp_path / "pareto.png").read_bytes()[:4] == b"\x89PNG"


def simulate_json(trace: Path, capsys, *args: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    code, out, err = run(
        ["simulate", str(trace), "--nodes", "4", "--gpus-per-node", "8", "--json", *args], capsys
    )
    assert code == 0, err
    summary = json.loads(out)
    summary.pop("simulation_seconds")
    return summary  # type: ignore[no-any-return]


def test_simulate_defaults_are_the_controllers(trace: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from starburst.settings import Settings

    plain = simulate_json(trace, capsys)
    spelled = simulate_json(
        trace,
        capsys,
        "--policy",
        "compute",
        "--budget",
        "0.25",
        "--out-of-order",
        "--queue-cap",
        "30",
        "--order",
        "fifo",
    )
    assert plain == spelled == simulate_json(trace, capsys, "--policy", "starburst")
    settings = Settings()  # what `starburst server` runs with no settings at all
    assert (settings.policy.value, settings.budget, settings.out_of_order, settings.queue_cap) == (
        "compute",
        0.25,
        True,
        30,
    )
    assert plain["config"] == spelled["config"]
    uncapped = simulate_json(trace, capsys, "--in-order", "--queue-cap", "none")
    assert uncapped["config"] != plain["config"]


def test_sweep_takes_the_order_and_the_queue_cap(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run(
        [
            "sweep",
            "--jobs",
            "100",
            "--nodes",
            "2",
            "--policies",
            "compute",
            "--budgets",
            "0.25",
            "--processes",
            "1",
            "--order",
            "sjf",
            "--queue-cap",
            "none",
            "--in-order",
            "--out",
            str(tmp_path),
        ],
        capsys,
    )
    assert code == 0, err
    rows = list(csv.DictReader((tmp_path / "results.csv").read_text().splitlines()))
    starburst = next(r for r in rows if r["policy"] == "compute")
    assert (starburst["queue_cap"], starburst["out_of_order"]) == ("", "0")
    assert "sjf" in starburst["config"]


def test_the_controller_engine_prints_what_the_simulator_prints(trace: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["simulate", str(trace), "--nodes", "4", "--gpus-per-node", "8", "--json"]
    figures = []
    for engine in ("sim", "controller"):
        code, out, err = run([*args, "--engine", engine], capsys)
        assert code == 0, err
        summary = json.loads(out)
        summary.pop("simulation_seconds")
        figures.append(summary)
    sim, controller = figures
    assert sim["burst_jobs"] > 0 and sim["jobs"] == 300
    assert controller == pytest.approx(sim)


def test_an_unknown_engine_is_a_one_line_error(trace: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["simulate", str(trace), "--nodes", "2", "--gpus-per-node", "8", "--engine", "warp"]
    code, out, err = run(args, capsys)
    assert code == 2 and out == ""
    assert err.strip() == "error: unknown engine 'warp'; choose sim or controller"
