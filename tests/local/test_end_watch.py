"""Prompt ends: the local backends say at once that a job's process ended (``subscribe``)."""

from __future__ import annotations

import subprocess
import threading
import uuid
from pathlib import Path

from starburst.adapters.local import EmulatedCloud, LocalCluster, procfs
from starburst.adapters.local.watch import EndWatch
from starburst.core.failure import exit_code_in
from starburst.core.ports import CloudStatus
from starburst.pricing import load_price_table
from tests.local.lives import job, on_local
from tests.support.waiting import wait_for


def spawned(seconds: float) -> tuple[subprocess.Popen[bytes], str]:
    token = uuid.uuid4().hex
    env = {"PATH": "/usr/bin:/bin", procfs.TOKEN_VAR: token}
    return subprocess.Popen(["/bin/sh", "-c", f"sleep {seconds}"], env=env), token


def test_the_watch_notifies_once_per_look_and_stops_when_nothing_is_left() -> None:
    calls: list[int] = []
    watch = EndWatch(interval=0.02)
    quick, token_q = spawned(0.05)
    slow, token_s = spawned(30)
    try:
        watch.add(quick.pid, token_q)
        assert watch.watching == 0  # nobody listens yet: nothing to watch for
        watch.listen(lambda: calls.append(1), [(quick.pid, token_q)])
        watch.add(slow.pid, token_s)
        wait_for(lambda: calls)  # the quick one ended: one call, the slow one still watched
        assert watch.watching == 1 and slow.poll() is None
        assert quick.returncode is None  # observed, not reaped: the backend reaps and reports
        slow.kill()  # a killed job ends too
        wait_for(lambda: len(calls) == 2 and watch.watching == 0)
        wait_for(
            lambda: (
                not any(
                    t.name == "starburst-end-watch" and t.is_alive() for t in threading.enumerate()
                )
                or None
            )
        )
    finally:
        for p in (quick, slow):
            p.kill()
            p.wait()


def test_a_failing_listener_does_not_stop_the_watch() -> None:
    calls: list[int] = []

    def flaky() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("listener broke")

    watch = EndWatch(interval=0.02)
    watch.listen(flaky)
    procs = [spawned(0.05), spawned(0.3)]
    try:
        for p, token in procs:
            watch.add(p.pid, token)
        wait_for(lambda: len(calls) == 2)
    finally:
        for p, _ in procs:
            p.kill()
            p.wait()


def test_the_local_cluster_says_when_a_job_ends(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, gpus=2)
    changed = threading.Event()
    cluster.start(job("before", "sleep 0.3"), on_local(1), "fits")  # running before listening
    cluster.subscribe(changed.set)
    assert changed.wait(5.0)
    (ended,) = cluster.ended()
    assert ended.job_id == "before" and ended.succeeded
    changed.clear()
    cluster.start(job("after", "exit 2"), on_local(1), "fits")
    assert changed.wait(5.0)
    (ended,) = cluster.ended()
    assert ended.job_id == "after" and exit_code_in(ended.reason) == 2


def test_the_emulated_cloud_says_when_a_launch_ends(tmp_path: Path) -> None:
    cloud = EmulatedCloud(tmp_path, load_price_table())
    changed = threading.Event()
    cloud.subscribe(changed.set)
    handle = cloud.launch(job("burst", "sleep 0.2", gpu_type="A100"), "waited out its budget")
    assert cloud.poll(handle) is CloudStatus.RUNNING
    assert changed.wait(5.0)
    assert cloud.poll(handle) is CloudStatus.SUCCEEDED
