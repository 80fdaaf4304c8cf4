"""Replays in parallel — on every core, or on a Ray cluster — give the serial rows, bit for bit."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from starburst.core.capacity import uniform_nodes
from starburst.core.policy import PolicyKind
from starburst.sim.engine import SimOptions
from starburst.sim.sweep import JobSet, Task, run_tasks
from starburst.sim.synthetic import Workload, generate
from starburst.sim.tune import DEFAULT_BUDGETS, Deployed, candidates

NODES = tuple(uniform_nodes(4, 8))


def tasks() -> list[Task]:
    """A tune's candidates over a trace in memory and a synthetic workload."""
    workload = Workload(150, 32, load=1.3, cv=2.0, seed=4)
    memory = JobSet("in memory", tuple(generate(Workload(120, 32, load=1.5, seed=9))))
    specs = candidates(Deployed(), (PolicyKind.COMPUTE, PolicyKind.STAR), DEFAULT_BUDGETS[:2])
    return [Task(src, NODES, s, SimOptions()) for src in (workload, memory) for s in specs]


def test_a_process_pool_gives_the_serial_rows_bit_for_bit() -> None:
    work = tasks()
    serial = run_tasks(work, processes=1)
    assert len(serial) == len(work) > 10
    assert run_tasks(work, processes=2) == serial  # floats compared exactly


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")  # Ray's own deprecation warnings at import and start-up
def test_a_local_ray_cluster_gives_the_serial_rows_bit_for_bit(tmp_path: Path) -> None:
    """A local Ray cluster (CPU only, two CPUs), reached in this process and by address from
    ``starburst sweep --ray`` in another one."""
    ray = pytest.importorskip("ray")
    work = tasks()
    serial = run_tasks(work, processes=1)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        address = ray.get_runtime_context().gcs_address
        assert run_tasks(work, ray=address) == serial
        sweep = [sys.executable, "-m", "starburst.cli", "sweep", "--jobs", "150"]
        sweep += ["--policies", "compute,star", "--budgets", "0.1,0.5", "--loads", "1.2"]
        runs = {}
        for name, extra in (("serial", ["--processes", "1"]), ("ray", ["--ray", address])):
            done = subprocess.run(
                [*sweep, *extra, "--out", str(tmp_path / name)],
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, done.stderr[-2000:]
            runs[name] = rows_of(tmp_path / name / "results.csv")
        assert runs["ray"] == runs["serial"] and len(runs["serial"]) == 5
    finally:
        ray.shutdown()


def test_an_unreachable_ray_cluster_is_one_clear_line(tmp_path: Path) -> None:
    sweep = [sys.executable, "-m", "starburst.cli", "sweep", "--jobs", "50", "--budgets", "0.1"]
    sweep += ["--policies", "compute", "--ray", "127.0.0.1:1", "--out", str(tmp_path)]
    done = subprocess.run(
        sweep,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "cannot reach the Ray cluster at 127.0.0.1:1" in done.stderr
    assert "Traceback" not in done.stderr
