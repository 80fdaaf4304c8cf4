"""SkyPilot tasks run as SkyPilot documents them (issue 34, item 5): ``setup`` then ``run``,
both under bash (``${HF_TOKEN:0:3}`` works), and a task without ``accelerators`` is a
CPU-only job (0 GPUs) that runs beside GPU jobs. Through the real CLI against a served app
whose scheduling loop drives a real local cluster (``test_job_files.live``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from starburst.adapters.local import LocalCluster
from starburst.controller.job_output import JobLogs
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.cycle import SchedulerConfig
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from tests.api.conftest import LiveServer, build_api
from tests.api.test_cli import run
from tests.api.test_job_files import env_of
from tests.support.clock import ManualClock
from tests.support.databases import BOTH

BASH_TASK = """\
name: hf
envs:
  HF_TOKEN: hf_secret
setup: |
  parts=(one two three)
  echo "setup saw ${#parts[@]} parts"
  cd /
run: |
  echo "token starts ${HF_TOKEN:0:3}"
  [[ $PWD != / ]] && echo "setup's cd stayed its own"
"""


@pytest.fixture
def live(
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
    tmp_path: Path,
) -> Iterator[Any]:
    """An API serving job output over a store that a scheduling loop (a local cluster of 2
    GPU slots, compute-wait, no cloud) drives in a thread until the test ends."""
    store = open_store(db_url)
    cluster = LocalCluster(tmp_path / "cluster", 2)
    policy = WaitPolicy(PolicyKind.COMPUTE, 1.0)
    loop = SchedulingLoop(store, cluster, None, clock, SchedulerConfig(policy, out_of_order=True))
    api = build_api(db_url, store, clock, resources, serve, job_logs=lambda: JobLogs(cluster, None))
    stop = threading.Event()

    def drive() -> None:
        while not stop.wait(0.05):
            loop.run_pass()

    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    yield api
    stop.set()
    thread.join()


def _wait(env: dict[str, str], task: Path) -> tuple[int, str]:
    made = run(["submit", str(task), "--wait", "--interval", "0.1"], env)
    return made.exit_code, made.stdout.split()[0]


@BOTH
def test_setup_then_run_under_bash_without_accelerators_is_cpu_only(live, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    env = env_of(live)
    task = tmp_path / "task.yaml"
    task.write_text(BASH_TASK)
    code, job_id = _wait(env, task)
    assert code == 0
    stored = live.store.jobs.get(job_id)
    assert stored.job.gpus == 0 and stored.state is JobState.SUCCEEDED
    output = run(["logs", job_id], env).stdout
    assert "setup saw 3 parts" in output
    assert "token starts hf_" in output
    assert "setup's cd stayed its own" in output
    assert "Bad substitution" not in output and "not found" not in output


def test_a_cpu_only_task_runs_while_every_gpu_is_taken(live, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    env = env_of(live)
    busy = [
        run(["submit", "--gpus", "1", "--", "sleep", "30"], env).stdout.split()[0]
        for _ in range(2)  # the local cluster has 2 GPU slots
    ]
    task = tmp_path / "cpu.yaml"
    task.write_text("run: echo cpu-only $CUDA_VISIBLE_DEVICES.\n")
    code, job_id = _wait(env, task)
    assert code == 0
    assert run(["logs", job_id], env).stdout.strip().endswith("cpu-only .")  # no GPU seen
    states = live.store.jobs.states_of(busy)
    assert all(states[i] is JobState.RUNNING_ONPREM for i in busy)
    assert run(["cancel", *busy], env).exit_code == 0


def test_a_failed_setup_stops_run_and_fails_with_its_exit_code(live, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    task = tmp_path / "task.yaml"
    task.write_text("setup: exit 5\nrun: echo ran\n")
    code, job_id = _wait(env_of(live), task)
    assert code == 5
    assert "ran" not in run(["logs", job_id], env_of(live)).stdout


@BOTH
def test_a_cpu_only_job_waits_on_prem_where_the_cloud_bursts_gpu_jobs_only(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
    tmp_path: Path,
) -> None:
    """With the SkyPilot cloud (priced per GPU: its quote refuses a CPU-only job), a
    CPU-only task that does not fit now waits for room on-prem instead of failing at its
    burst; one that can never fit fails with both reasons. Compute-Wait gives 0-GPU jobs a
    zero budget, so each bursts the instant it does not fit."""
    from starburst.adapters.skypilot import SkyPilotCloud
    from starburst.core.capacity import uniform_nodes
    from starburst.sim.cluster import SimCluster
    from tests.api.conftest import serve_loop
    from tests.api.test_job_dependencies import EveryJob

    store = open_store(db_url)
    cluster = SimCluster(uniform_nodes(1, 1, cpus=4), clock, EveryJob())
    cloud = SkyPilotCloud(clock, sync_interval=0.0)
    policy = WaitPolicy(PolicyKind.COMPUTE, 1.0)
    loop, api, env = serve_loop(db_url, store, clock, resources, serve, cluster, cloud, policy)

    def submit(cpus: int) -> str:
        task = tmp_path / f"cpu{cpus}.yaml"
        task.write_text(f"resources:\n  cpus: {cpus}\nrun: echo hi\n")
        made = run(["submit", str(task)], env)
        assert made.exit_code == 0, made.stderr
        return made.stdout.split()[0]

    pair, huge = [submit(3), submit(3)], submit(64)
    loop.run_pass()
    states = api.store.jobs.states_of([*pair, huge])
    # (submitted in one virtual instant: either of the two may take the 4 CPUs)
    running = [j for j in pair if states[j] is JobState.RUNNING_ONPREM]
    waiting = [j for j in pair if states[j] is JobState.QUEUED]  # waits, does not fail
    assert len(running) == len(waiting) == 1
    second = waiting[0]
    why = api.store.jobs.events(second)[-1].reason
    assert why.startswith("cannot burst: job ") and "CPU-only (0 GPUs)" in why
    assert why.endswith("waits for room on-prem")
    assert states[huge] is JobState.FAILED
    assert "and it cannot burst: job" in api.store.jobs.events(huge)[-1].reason
    clock.advance(100.0)
    loop.run_pass()  # the first ends: the second starts on-prem
    assert api.store.jobs.get(second).state is JobState.RUNNING_ONPREM
