"""What a kubectl user writes on a Job cannot break the watch or pick another team's budget.

Against the Kubernetes API stand-in, through the real adapter and official client:
- ``starburst.io/predicted-runtime`` is user-writable; ``abc`` used to raise ``ValueError``
  in the watch handler (the Job was never offered, and ``queued()`` — the reconcile at
  start-up — raised every time), ``nan``/``inf`` passed through as estimates. Each is now
  ignored with a Warning Event and a log line, and the Jobs after it go on;
- the ``starburst.io/team`` label let any Job name any team (and create one): a Job is now in
  its namespace's team, and names another only where an admin allowed it for the namespace
  (``kubernetes_namespace_teams``), else the label is ignored with a Warning Event saying why;
- a running Job's ``starburst.io/placement`` and ``started-at`` are user-writable too: garbage
  there does not break adopting it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from starburst.adapters.kubernetes import KubernetesCluster, KubernetesSettings
from starburst.adapters.kubernetes.conversion import Conventions
from starburst.adapters.kubernetes.retry import Backoff
from starburst.core.job import Job
from starburst.settings import load_settings
from tests.kube.adapter_support import queued_job, waiting_jobs
from tests.kubeapi import KubeApiServer
from tests.kubeapi import fixtures as standin
from tests.support.clock import ManualClock
from tests.support.waiting import wait_for

kube = standin.kube
MakeCluster = Callable[..., KubernetesCluster]


@pytest.fixture
def make_cluster(kube: KubeApiServer) -> Iterator[MakeCluster]:
    made: list[tuple[KubernetesCluster, Any]] = []

    def make(**teams: list[str]) -> KubernetesCluster:
        conventions = Conventions(namespace_teams={ns: frozenset(t) for ns, t in teams.items()})
        api_client = kube.api_client()
        settings = KubernetesSettings(conventions=conventions, backoff=Backoff(base=0.05, cap=0.5))
        adapter = KubernetesCluster(api_client, ManualClock(1.8e9), settings).start_watching()
        made.append((adapter, api_client))
        assert adapter.wait_synced(10)
        return adapter

    yield make
    for adapter, api_client in made:
        adapter.close()
        api_client.close()


@pytest.fixture
def apis(kube: KubeApiServer) -> Iterator[tuple[client.CoreV1Api, client.BatchV1Api]]:
    api_client = kube.api_client()
    core = client.CoreV1Api(api_client)
    for namespace in ("dev", "research"):
        core.create_namespace({"metadata": {"name": namespace}})
    yield core, client.BatchV1Api(api_client)
    api_client.close()


def offered(cluster: KubernetesCluster, count: int) -> dict[str, Job]:
    seen: dict[str, Job] = {}

    def probe() -> dict[str, Job] | None:
        seen.update({j.name or j.id: j for j in cluster.submissions()})
        return seen if len(seen) >= count else None

    return wait_for(probe)


def warnings(core: client.CoreV1Api, namespace: str, name: str) -> list[str]:
    events = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}")
    return [e.message for e in events.items if e.type == "Warning" and e.reason == "Ignored"]


@pytest.mark.parametrize("value", ["abc", "nan", "inf", "-5", "1e400", "0"])
def test_an_unusable_predicted_runtime_is_ignored_with_a_warning(
    value: str, make_cluster: MakeCluster, apis: tuple[client.CoreV1Api, client.BatchV1Api]
) -> None:
    core, batch = apis
    cluster = make_cluster()
    bad = queued_job("bad")
    bad["metadata"]["annotations"] = {"starburst.io/predicted-runtime": value}
    good = queued_job("good")
    good["metadata"]["annotations"] = {"starburst.io/predicted-runtime": "1800"}
    batch.create_namespaced_job("dev", bad)
    batch.create_namespaced_job("dev", good)
    jobs = offered(cluster, 2)
    assert jobs["bad"].estimate is None and jobs["good"].estimate == 1800.0
    assert {j.name for j in waiting_jobs(cluster)} == {"bad", "good"}  # both still wait
    (message,) = wait_for(lambda: warnings(core, "dev", "bad"))
    assert f"ignored annotation starburst.io/predicted-runtime={value!r}" in message
    assert warnings(core, "dev", "good") == []


def test_a_team_label_is_honoured_only_where_an_admin_allowed_it(
    make_cluster: MakeCluster, apis: tuple[client.CoreV1Api, client.BatchV1Api]
) -> None:
    core, batch = apis
    cluster = make_cluster(research=["ml", "vision"])
    for namespace, name, team in (
        ("dev", "poacher", "rich"),  # dev may name no other team
        ("research", "allowed", "vision"),  # allowed for research
        ("research", "elsewhere", "rich"),  # not among research's
        ("dev", "own", "dev"),  # its own namespace: always
    ):
        batch.create_namespaced_job(namespace, queued_job(name, labels={"starburst.io/team": team}))
    batch.create_namespaced_job("dev", queued_job("plain"))
    jobs = offered(cluster, 5)
    teams = {name: job.team for name, job in jobs.items()}
    assert teams == {
        "poacher": "dev",
        "allowed": "vision",
        "elsewhere": "research",
        "own": "dev",
        "plain": "dev",
    }
    assert {j.name: j.team for j in waiting_jobs(cluster)} == teams
    (message,) = wait_for(lambda: warnings(core, "dev", "poacher"))
    assert "ignored label starburst.io/team='rich': namespace dev may not name that team" in message
    assert "kubernetes_namespace_teams" in message and "the job is in team dev" in message
    assert wait_for(lambda: warnings(core, "research", "elsewhere"))
    for namespace, name in (("research", "allowed"), ("dev", "own"), ("dev", "plain")):
        assert warnings(core, namespace, name) == []


def test_garbage_in_a_running_jobs_annotations_does_not_break_adopting_it(
    make_cluster: MakeCluster, kube: KubeApiServer, apis: tuple[client.CoreV1Api, Any]
) -> None:
    _, batch = apis
    kube.add_node("n1", gpus=8)
    started = queued_job("started", gpus=2)
    started["spec"]["suspend"] = False
    started["metadata"]["annotations"] = {
        "starburst.io/state": "running",
        "starburst.io/placement": "n1×two, ×, n1",
        "starburst.io/started-at": "yesterday",
        "starburst.io/predicted-runtime": "abc",
    }
    batch.create_namespaced_job("dev", started)
    cluster = make_cluster()
    (running,) = wait_for(lambda: cluster.snapshot().running)
    assert running.job.name == "started" and running.job.estimate is None


def test_the_setting_reaches_the_adapter(
    kube: KubeApiServer,
    apis: tuple[client.CoreV1Api, client.BatchV1Api],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from starburst.controller.wiring import build_cluster

    _, batch = apis
    monkeypatch.setenv("STARBURST_KUBERNETES_NAMESPACE_TEAMS", '{"research": ["ml"]}')
    settings = load_settings(
        cluster="kubernetes", kubeconfig=str(kube.write_kubeconfig(tmp_path / "kubeconfig"))
    )
    cluster = build_cluster(settings, ManualClock(1.8e9))
    assert isinstance(cluster, KubernetesCluster)
    try:
        batch.create_namespaced_job("research", queued_job("r", labels={"starburst.io/team": "ml"}))
        assert offered(cluster, 1)["r"].team == "ml"
    finally:
        cluster.close()
