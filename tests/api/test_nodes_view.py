"""``starburst nodes`` (``GET /v1/nodes``): the cluster's nodes, GPUs used and free, and the
jobs on each, redacted by role as the queue is; through the real CLI against a served app
and a controller pass on virtual time (SQLite and PostgreSQL), on the simulator's cluster,
the embedded default (the local cluster's 4 GPU slots) and Kubernetes Nodes (the API
stand-in), each recorded through the controller's own hook."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import pytest

from starburst.controller.tuning import TuningHooks
from starburst.core.capacity import Node
from starburst.core.cycle import SchedulerConfig
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.settings import Settings
from starburst.sim.cluster import SimCluster
from tests.api.conftest import LiveServer, serve_loop
from tests.api.test_cli import run
from tests.api.test_job_dependencies import EveryJob
from tests.kubeapi import fixtures as standin
from tests.support.clock import ManualClock
from tests.support.databases import BOTH

kube = standin.kube


def record(store: Any, cluster: Any, now: float) -> None:
    """What the controller does when it leads and recalibrates: record the cluster's shape."""
    config = SchedulerConfig(WaitPolicy(PolicyKind.INFINITE))
    TuningHooks(store.tuning).record(cluster, config, Settings(), now)


@pytest.fixture
def two_nodes(  # type: ignore[no-untyped-def]
    db_url: str,
    clock: ManualClock,
    resources: ExitStack,
    open_store: Callable[[str], Any],
    serve: Callable[[Any], LiveServer],
):
    store = open_store(db_url)
    nodes = [Node("gpu-a", 4, 32.0, 0.0, "A100"), Node("gpu-b", 2, 16.0, 0.0, "V100")]
    cluster = SimCluster(nodes, clock, EveryJob())
    loop, api, env = serve_loop(db_url, store, clock, resources, serve, cluster, None)
    record(store, cluster, clock.now())
    return loop, api, env


def submit(env: dict[str, str], *args: str) -> str:
    made = run(["submit", *args, "--", "sleep", "60"], env)
    assert made.exit_code == 0, made.stderr
    return made.stdout.split()[0]


def as_user(env: dict[str, str], api: Any, who: str) -> dict[str, str]:
    return {**env, "STARBURST_TOKEN": api.tokens[who]}


@BOTH
def test_nodes_show_gpus_used_and_free_and_jobs_redacted_by_role(two_nodes) -> None:  # type: ignore[no-untyped-def]
    loop, api, env = two_nodes
    mine = submit(env, "--name", "train", "--gpus", "3")
    api.clock.advance(1)  # first in line: first fit puts it on gpu-a, bob's on gpu-b
    theirs = submit(as_user(env, api, "bob"), "--name", "secret", "--gpus", "2")
    loop.run_pass()
    api.clock.advance(60)

    shown = run(["nodes"], env)
    assert shown.exit_code == 0, shown.stderr
    head, header, *rows = shown.stdout.splitlines()
    assert head == "6 GPUs on 2 nodes: 5 used, 1 free; 0 jobs in the cloud"
    assert header.split() == ["NODE", "GPU", "TYPE", "GPUS", "USED", "FREE", "JOBS"]
    a, b = (row.split() for row in rows)
    assert a[:5] == ["gpu-a", "A100", "4", "3", "1"]
    assert a[5:] == [mine[:8], "alice/train", "×3", "1m"]  # alice's own job: named
    assert b[:5] == ["gpu-b", "V100", "2", "2", "0"]
    assert b[5:] == [theirs[:8], "×2", "1m"]  # bob's: id and size only
    assert "secret" not in shown.stdout and "bob" not in shown.stdout

    view = json.loads(run(["nodes", "-o", "json"], env).stdout)
    (other,) = view["nodes"][1]["jobs"]
    assert other["user"] is None and other["name"] is None and not other["mine"]
    assert other["elapsed_s"] == 60.0 and "command" not in other
    # admins (and finance) see owners and names, as in the queue
    admin = json.loads(run(["nodes", "-o", "json"], as_user(env, api, "root")).stdout)
    assert [j["user"] for n in admin["nodes"] for j in n["jobs"]] == ["alice", "bob"]
    assert admin["used"] == 5 and admin["free"] == 1 and admin["recorded"]

    # a job ends: its GPUs are free again
    assert run(["cancel", "train"], env).exit_code == 0
    loop.run_pass()
    after = json.loads(run(["nodes", "-o", "json"], env).stdout)
    assert [(n["name"], n["used"], n["free"]) for n in after["nodes"]] == [
        ("gpu-a", 0, 4),
        ("gpu-b", 2, 0),
    ]


def test_nodes_before_the_controller_recorded_the_cluster_say_so(api) -> None:  # type: ignore[no-untyped-def]
    env = {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}
    shown = run(["nodes"], env)
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "0 GPUs on 0 nodes: 0 used, 0 free; 0 jobs in the cloud",
        "the controller has not recorded the cluster yet (is it running?): only nodes that "
        "jobs run on are listed",
    ]
    assert api.client(None).get("/v1/nodes").status_code == 401


def test_nodes_on_the_embedded_default_local_cluster(api, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from starburst.controller.wiring import build_cluster

    settings = Settings(database_url=api.db_url, state_dir=tmp_path)
    assert settings.cluster == "local" and settings.local_gpus == 4  # the defaults
    cluster = build_cluster(settings, api.clock)
    try:
        record(api.store, cluster, api.clock.now())
    finally:
        getattr(cluster, "close", lambda: None)()
    env = {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["alice"]}
    view = json.loads(run(["nodes", "-o", "json"], env).stdout)
    assert view["gpus"] == 4 and view["free"] == 4 and view["recorded"]
    assert sum(n["gpus"] for n in view["nodes"]) == 4


def test_nodes_on_kubernetes_come_from_the_cluster_port(api, kube) -> None:  # type: ignore[no-untyped-def]
    from starburst.adapters.kubernetes import KubernetesCluster, KubernetesSettings

    kube.add_node("k8s-a100", gpus=8, labels={"nvidia.com/gpu.product": "A100"})
    kube.add_node("k8s-t4", gpus=4, labels={"nvidia.com/gpu.product": "T4"})
    kube.add_node("k8s-cordoned", gpus=8, unschedulable=True)
    client = kube.api_client()
    cluster = KubernetesCluster(client, api.clock, KubernetesSettings()).start_watching()
    try:
        assert cluster.wait_synced(10)
        record(api.store, cluster, api.clock.now())
    finally:
        cluster.close()
        client.close()
    env = {"STARBURST_SERVER": api.url, "STARBURST_TOKEN": api.tokens["bob"]}
    shown = run(["nodes"], env).stdout.splitlines()
    assert shown[0] == "12 GPUs on 2 nodes: 0 used, 12 free; 0 jobs in the cloud"
    rows = {line.split()[0]: line.split() for line in shown[2:]}
    assert rows["k8s-a100"] == ["k8s-a100", "A100", "8", "0", "8", "-"]
    assert rows["k8s-t4"] == ["k8s-t4", "T4", "4", "0", "4", "-"]
