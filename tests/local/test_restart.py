"""A new ``LocalCluster`` on the same state directory adopts what an earlier one spawned.

Each job appends a line to a file when it runs, so "never run twice" is "exactly one line".
The earlier life is either another object in this process or a child process killed -9.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from starburst.adapters.local import LocalCluster
from starburst.adapters.local.processes import LOST
from starburst.core.failure import exit_code_in
from starburst.core.ports import JobEnded
from tests.local.lives import appends, earlier_life, gone, job, lines, on_local
from tests.support.clock import ManualClock
from tests.support.waiting import wait_for

FIRST_LIFE = """
from pathlib import Path
from starburst.adapters.local import LocalCluster
from starburst.core.capacity import Part
from starburst.core.job import Job
cluster = LocalCluster(Path(state), gpus=2, grace=0.2)
for job_id, command in jobs:
    cluster.start(Job(job_id, 0.0, 1, extra={"command": command}),
                  (Part(0, "local", 1, 0.0, 0.0),), "first life")
started = {r.job.id: [r.started_at, list(cluster.slots_of(r.job.id))]
           for r in cluster.snapshot().running}
pids = {job_id: cluster.process(job_id).pid for job_id, _ in jobs}
print("ready", json.dumps({"started": started, "pids": pids}), flush=True)
import time
time.sleep(60)
"""


def ends(cluster: LocalCluster, count: int) -> list[JobEnded]:
    seen: list[JobEnded] = []

    def probe() -> list[JobEnded] | None:
        seen.extend(cluster.ended())
        return seen if len(seen) >= count else None

    return wait_for(probe)


def test_a_running_job_is_adopted_not_run_again(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    first = LocalCluster(tmp_path / "state", gpus=2, clock=ManualClock(100.0))
    first.start(job("pad", "sleep 1"), on_local(1), "fits")
    first.start(
        job("a", appends(runs, 'echo "gpus=$CUDA_VISIBLE_DEVICES"; sleep 1')), on_local(1), "fits"
    )
    assert first.slots_of("a") == (1,)

    second = LocalCluster(tmp_path / "state", gpus=2, clock=ManualClock(200.0))
    running = {r.job.id: r for r in second.snapshot().running}
    assert set(running) == {"pad", "a"}  # adopted at once: its GPUs are not handed out again
    assert running["a"].started_at == 100.0 and second.slots_of("a") == (1,)
    assert running["a"].job.extra["command"].startswith("echo")
    second.start(job("a", "echo never"), on_local(1), "resumed")  # the controller's re-start
    assert second.snapshot().capacity.free_gpus == 0

    done = {e.job_id: e for e in ends(second, 2)}
    assert done["a"].succeeded and done["a"].at == 200.0
    assert second.ended() == []
    assert lines(runs) == ["run a"]
    assert "gpus=1" in second.logs("a")
    assert len(ends(first, 2)) == 2  # the first life reaps its children


def test_a_job_that_ended_unwatched_reports_its_outcome_once(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    state = tmp_path / "state"
    first = LocalCluster(state, gpus=1, clock=ManualClock(100.0))
    first.start(job("b", appends(runs, "exit 3")), on_local(1), "fits")
    wait_for(lambda: (state / "b" / "exit_code").exists())  # nobody polled it

    second = LocalCluster(state, gpus=1, clock=ManualClock(300.0))
    assert not second.snapshot().running and second.ended() == []  # old ends wait for start
    second.start(job("b", appends(runs, "exit 3")), on_local(1), "resumed")
    (ended,) = second.ended()
    assert not ended.succeeded and exit_code_in(ended.reason) == 3
    assert 100.0 <= ended.at <= 300.0
    second.start(job("b", appends(runs, "exit 3")), on_local(1), "resumed twice")
    assert second.ended() == [] and second.snapshot().capacity.free_gpus == 1
    assert lines(runs) == ["run b"]
    assert len(ends(first, 1)) == 1


def test_jobs_of_a_killed_controller_are_adopted(tmp_path: Path) -> None:
    runs, state = tmp_path / "runs.txt", tmp_path / "state"
    # "slow" runs until the test lets it end (a sleep of its own once ended before the new
    # life looked, on a loaded machine)
    release = tmp_path / "release"
    slow = f"while [ ! -e {release} ]; do sleep 0.05; done; exit 4"
    jobs = [("slow", appends(runs, slow)), ("quick", appends(runs))]
    life = earlier_life(FIRST_LIFE, state=str(state), jobs=jobs)
    wait_for(lambda: (state / "quick" / "exit_code").exists())

    cluster = LocalCluster(state, gpus=2)
    (running,) = cluster.snapshot().running
    assert running.job.id == "slow" and running.started_at == life["started"]["slow"][0]
    assert list(cluster.slots_of("slow")) == life["started"]["slow"][1]
    for job_id, command in jobs:
        cluster.start(job(job_id, command), on_local(1), "resumed by a new leader")
    release.touch()
    done = {e.job_id: e for e in ends(cluster, 2)}
    assert done["quick"].succeeded
    assert not done["slow"].succeeded and exit_code_in(done["slow"].reason) == 4
    assert sorted(lines(runs)) == ["run quick", "run slow"]
    assert cluster.ended() == []


def test_cancel_kills_an_adopted_group(tmp_path: Path) -> None:
    state = tmp_path / "state"
    command = "sleep 30 & echo $! > child.pid; trap '' TERM; wait"  # the shell ignores SIGTERM
    life = earlier_life(FIRST_LIFE, state=str(state), jobs=[("c", command)])
    child = int(wait_for(lambda: (p := state / "c" / "child.pid").exists() and p.read_text()))

    cluster = LocalCluster(state, gpus=2, grace=0.2)
    assert [r.job.id for r in cluster.snapshot().running] == ["c"]
    cluster.cancel("c")
    (ended,) = ends(cluster, 1)
    assert not ended.succeeded and ended.reason.startswith("cancelled")
    assert wait_for(lambda: gone(child) and gone(life["pids"]["c"]))
    assert cluster.snapshot().capacity.free_gpus == 2


def test_a_process_gone_without_exit_status_is_lost_once(tmp_path: Path) -> None:
    state = tmp_path / "state"
    life = earlier_life(FIRST_LIFE, state=str(state), jobs=[("r", "sleep 30")])
    os.killpg(life["pids"]["r"], signal.SIGKILL)  # as a reboot would: no exit status written
    wait_for(lambda: gone(life["pids"]["r"]))

    cluster = LocalCluster(state, gpus=2)
    assert not cluster.snapshot().running
    cluster.start(job("r", "sleep 30"), on_local(1), "resumed")
    (ended,) = cluster.ended()
    assert not ended.succeeded and ended.reason == LOST
    assert cluster.ended() == [] and not (state / "r" / "exit_code").exists()


def test_a_start_that_never_spawned_spawns(tmp_path: Path) -> None:
    runs, state = tmp_path / "runs.txt", tmp_path / "state"
    # the spawn record of a controller killed between recording and creating the process
    (state / "n").mkdir(parents=True)
    record = {
        "backend": "local-cluster",
        "token": "never-ran",
        "slots": [0],
        "visible": "0",
        "spawned_at": 1.0,
        "placement": [],
        "job": {"id": "n", "submit_time": 0.0, "gpus": 1, "extra": {}},
    }
    (state / "n" / "spawn.json").write_text(json.dumps(record))

    cluster = LocalCluster(state, gpus=1, clock=ManualClock(50.0))
    assert not cluster.snapshot().running
    cluster.start(job("n", appends(runs)), on_local(1), "resumed")
    (running,) = cluster.snapshot().running
    assert running.started_at == 50.0
    (ended,) = ends(cluster, 1)
    assert ended.succeeded and lines(runs) == ["run n"]
    again = LocalCluster(state, gpus=1)
    again.start(job("n", appends(runs)), on_local(1), "resumed again")
    assert [e.succeeded for e in again.ended()] == [True] and lines(runs) == ["run n"]


def test_the_exit_status_is_recorded_whatever_path_the_job_sets(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = LocalCluster(state, gpus=1)
    first.start(job("p", "exit 5", env=json.dumps({"PATH": "/nonexistent"})), on_local(1), "fits")
    (ended,) = ends(first, 1)
    assert exit_code_in(ended.reason) == 5
    assert (state / "p" / "exit_code").read_text() == "5\n" and (state / "p" / "pid").exists()


def test_a_dropped_life_leaves_its_jobs_running_without_leaks_or_zombies(tmp_path: Path) -> None:
    import gc
    import warnings

    stop = tmp_path / "stop"  # the job runs until the test says so: no race with a slow machine
    first = LocalCluster(tmp_path / "state", gpus=2)
    first.start(job("left", f"while [ ! -e {stop} ]; do sleep 0.05; done"), on_local(1), "fits")
    pid = first.process("left").pid  # type: ignore[union-attr]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del first  # a controller stopping: its job runs on, for the next life to adopt
        gc.collect()
    ours = f"subprocess {pid} "  # (other tests' garbage may be collected here too)
    assert not [w for w in caught if ours in str(w.message)]
    assert not gone(pid)
    stop.touch()
    wait_for(lambda: gone(pid))  # ended: a zombie until someone reaps it
    second = LocalCluster(tmp_path / "other", gpus=1)
    second.start(job("next", "true"), on_local(1), "fits")  # a spawn reaps ended children
    assert not Path(f"/proc/{pid}").exists()
