"""``--time-limit``: a hard limit, enforced on-prem. The local cluster kills a job that has
run its limit and reports it failed with that reason; a Kubernetes Job carries it as
``activeDeadlineSeconds``. Through the real CLI against a served app."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from starburst.adapters.kubernetes.conversion import Conventions
from starburst.adapters.kubernetes.manifest import job_manifest
from starburst.adapters.local import LocalCluster
from starburst.core.capacity import Part
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.support.clock import ManualClock
from tests.support.databases import BOTH
from tests.support.waiting import wait_for


@BOTH
def test_the_local_cluster_kills_a_job_at_its_time_limit(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
    tmp_path: Path,
) -> None:
    store = open_store(db_url)
    cluster = LocalCluster(tmp_path / "cluster", 2, clock=clock, grace=0.5)
    loop, _, env = serve_loop(db_url, store, clock, resources, serve, cluster)
    made = run(
        [
            "submit",
            "--image",
            "i",
            "--time-limit",
            "5s",
            "--runtime",
            "1h",
            "--",
            "sh",
            "-c",
            "echo started; sleep 60",
        ],
        env,
    )
    assert made.exit_code == 0, made.stderr
    limited = made.stdout.split()[0]
    free = run(["submit", "--image", "i", "--", "sh", "-c", "sleep 60"], env).stdout.split()[0]
    assert free != limited
    assert store.jobs.get(limited).job.extra["time_limit_s"] == "5"

    def running() -> bool:
        loop.run_pass()
        return all(store.jobs.get(j).state is JobState.RUNNING_ONPREM for j in (limited, free))

    assert wait_for(running)
    assert wait_for(lambda: "started" in cluster.logs(limited))
    loop.run_pass()
    assert store.jobs.get(limited).state is JobState.RUNNING_ONPREM  # not yet: no time has passed
    clock.advance(5)

    def ended() -> bool:
        loop.run_pass()
        return store.jobs.get(limited).state.terminal

    assert wait_for(ended)
    shown = json.loads(run(["status", limited, "--json"], env).stdout)
    assert shown["state"] == "failed"
    assert (
        shown["failure"] == "failed on-prem: time limit 5s reached: killed; last output:\nstarted"
    )
    assert store.jobs.get(free).state is JobState.RUNNING_ONPREM  # no limit: still running
    cluster.cancel(free)
    assert wait_for(lambda: not cluster.snapshot().running)


def test_a_kubernetes_job_carries_its_time_limit_as_active_deadline() -> None:
    job = Job("j1", 0.0, 1, extra={"command": "x", "image": "i", "time_limit_s": "90.5"})
    body = job_manifest(job, (Part(0, "n1", 1, 0.0, 0.0),), "r", 0.0, "d", Conventions())
    assert body["spec"]["activeDeadlineSeconds"] == 91
    plain = Job("j2", 0.0, 1, extra={"command": "x", "image": "i"})
    assert (
        "activeDeadlineSeconds"
        not in job_manifest(plain, (Part(0, "n1", 1, 0.0, 0.0),), "r", 0.0, "d", Conventions())[
            "spec"
        ]
    )


def test_a_bad_time_limit_is_a_usage_error(api) -> None:  # type: ignore[no-untyped-def]
    env = {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}
    bad = run(["submit", "--image", "i", "--time-limit", "soon", "--", "true"], env)
    assert bad.exit_code == 2 and "is not a duration" in bad.stderr
    zero = api.client("alice").post(
        "/v1/jobs", json={"image": "i", "command": "true", "gpus": 1, "time_limit_s": 0}
    )
    assert zero.status_code == 422


def test_the_emulated_cloud_ends_a_burst_job_at_its_time_limit(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
    tmp_path: Path,
) -> None:
    from starburst.adapters.local import EmulatedCloud

    store = open_store(db_url)
    cluster = LocalCluster(tmp_path / "cluster", 1, clock=clock)
    cloud = EmulatedCloud(tmp_path / "cloud", clock=clock, grace=0.5)
    loop, _, env = serve_loop(
        db_url, store, clock, resources, serve, cluster, cloud, PolicyKind.NO_WAIT
    )
    made = run(
        [
            "submit",
            "--image",
            "i",
            "--gpus",
            "2",
            "--gpu-type",
            "A100",
            "--time-limit",
            "1m",
            "--",
            "sh",
            "-c",
            "echo up; sleep 60",
        ],
        env,
    )  # 2 GPUs: bursts at once
    job_id = made.stdout.split()[0]

    def running() -> bool:
        loop.run_pass()
        return store.jobs.get(job_id).state is JobState.RUNNING_CLOUD

    assert wait_for(running)
    assert wait_for(lambda: "up" in cloud.logs(cloud_handle(store, job_id)))
    clock.advance(60)

    def ended() -> bool:
        loop.run_pass()
        return store.jobs.get(job_id).state.terminal

    assert wait_for(ended)
    failure = json.loads(run(["status", job_id, "--json"], env).stdout)["failure"]
    assert failure == (
        "cloud run failed: emulated: time limit 1m reached: killed; last output:\nup"
    )


def cloud_handle(store, job_id: str):  # type: ignore[no-untyped-def]
    from starburst.core.ports import CloudHandle

    launch = store.ledger.launches(job_id)[-1]
    return CloudHandle(job_id, launch.name, launch.request_id, launch.cloud_job_id)


def test_a_skypilot_task_runs_its_command_under_timeout() -> None:
    from starburst.adapters.skypilot import build_task, launch_options
    from starburst.pricing import load_price_table
    from tests.cloud.fake_sky import FakeSky

    job = Job(
        "t",
        0.0,
        1,
        gpu_type="A100",
        extra={"command": "python train.py --x 'a b'", "time_limit_s": "90.5"},
    )
    option = launch_options(job, load_price_table())[0]
    task = build_task(FakeSky(), job, option, "n")
    assert task.kwargs["run"] == (
        "timeout --kill-after=30 91 /bin/sh -c 'python train.py --x '\"'\"'a b'\"'\"''"
    )
    plain = Job("p", 0.0, 1, gpu_type="A100", extra={"command": "python train.py"})
    assert build_task(FakeSky(), plain, option, "n").kwargs["run"] == "python train.py"
