"""Jobs as users handle them with kubectl, with the controller on top (issue 11).

Each scenario failed before its fix: a kubectl Job could not burst (no command; it stayed
``bursting`` forever), a Job deleted while waiting kept its record queued, a Job suspended by
someone else stayed ``running_onprem`` holding its GPUs, and pods refused at creation left a
"started" Job without pods holding its placement.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from starburst.adapters.db.store import SqlStore
from starburst.adapters.skypilot.task import build_task, launch_options
from starburst.controller.daemon import Controller
from starburst.controller.wiring import wire_controller
from starburst.core.lifecycle import JobState
from starburst.pricing import default_price_table
from starburst.settings import Settings
from tests.cloud.fake_sky import FakeSky
from tests.kube.adapter_support import queued_job
from tests.kube.recording_cloud import RecordingCloud
from tests.support.databases import upgrade
from tests.support.waiting import wait_for


@dataclass
class World:
    kube: object
    batch: client.BatchV1Api
    core: client.CoreV1Api
    store: SqlStore
    controller: Controller
    cloud: RecordingCloud
    clock: object

    def run(self) -> None:
        self.clock.advance(1)  # type: ignore[attr-defined]
        assert self.controller.run_pass() is not None

    def state(self, job_id: str) -> JobState:
        return self.store.jobs.get(job_id).state

    def reasons(self, job_id: str) -> list[str]:
        return [e.reason for e in self.store.jobs.events(job_id)]

    def events(self, name: str) -> list[tuple[str, str, str]]:
        items = self.core.list_namespaced_event(
            "default", field_selector=f"involvedObject.name={name}"
        ).items
        return [(e.type, e.reason, e.message) for e in items]


@pytest.fixture
def world(kube, make_cluster, clock, batch, core, tmp_path: Path) -> Iterator[World]:
    kube.add_node("gpu-a", gpus=8)
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    store = SqlStore.open(url, clock=clock)
    cluster = make_cluster()
    wait_for(lambda: cluster.snapshot().capacity.nodes)
    settings = Settings(database_url=url, state_dir=tmp_path, policy="no-wait", cloud="none")
    cloud = RecordingCloud(clock, 2.5)
    controller = wire_controller(settings, store, cluster, cloud, clock=clock)
    try:
        yield World(kube, batch, core, store, controller, cloud, clock)
    finally:
        controller.stop()
        store.close()


def _known(store: SqlStore, job_id: str) -> bool:
    try:
        store.jobs.get(job_id)
    except Exception:
        return False
    return True


def _fill_and_an_unburstable(world: World, name: str) -> dict[str, Any]:
    """A Job filling the node, and ``name``, which no cloud can run (two containers), queued
    on-prem and known to the store; its manifest is returned."""
    world.batch.create_namespaced_job("default", queued_job("fill", gpus=8))
    body = queued_job(name, gpus=2)
    body["spec"]["template"]["spec"]["containers"].append({"name": "log", "image": "fluent:1"})
    world.batch.create_namespaced_job("default", body)  # cannot burst: waits on-prem
    wait_for(
        lambda: (
            world.controller.run_pass() is not None
            and _known(world.store, f"default/{name}")
            and world.state(f"default/{name}") is JobState.QUEUED
        )
    )
    return body


def test_a_kubectl_job_bursts_with_its_image_command_and_env(world: World) -> None:
    world.batch.create_namespaced_job("default", queued_job("fill", gpus=8))
    body = queued_job("q3", gpus=4, gpu_type="A100")
    body["spec"]["template"]["spec"]["containers"][0].update(
        image="ghcr.io/lab/train:7",
        command=["python", "train.py"],
        args=["--epochs", "3"],
        env=[{"name": "SEED", "value": "7"}],
    )
    world.batch.create_namespaced_job("default", body)
    wait_for(
        lambda: (
            world.controller.run_pass() is not None
            and _known(world.store, "default/q3")
            and world.state("default/q3") is JobState.BURSTING
        )
    )
    (launched,) = [j for j in world.cloud.launched if j.id == "default/q3"]
    option = launch_options(launched, default_price_table())[0]
    task = build_task(FakeSky(), launched, option, "n")
    assert task.kwargs["run"] == "python train.py --epochs 3"
    assert task.kwargs["envs"] == {"SEED": "7", "STARBURST_JOB_ID": "default/q3"}
    assert task.kwargs["resources"].kwargs["image_id"] == "docker:ghcr.io/lab/train:7"
    job = world.batch.read_namespaced_job("q3", "default")
    assert job.spec.suspend is True and job.metadata.annotations["starburst.io/state"] == "burst"


def test_a_job_a_cloud_cannot_run_waits_on_prem_with_the_reason(world: World) -> None:
    world.batch.create_namespaced_job("default", queued_job("fill", gpus=8))
    wait_for(
        lambda: (
            world.controller.run_pass() is not None
            and _known(world.store, "default/fill")
            and world.state("default/fill") is JobState.RUNNING_ONPREM
        )
    )
    two = queued_job("sidecar", gpus=2)
    two["spec"]["template"]["spec"]["containers"].append({"name": "log", "image": "fluent:1"})
    world.batch.create_namespaced_job("default", two)
    wait_for(
        lambda: world.controller.run_pass() is not None and _known(world.store, "default/sidecar")
    )
    for _ in range(3):
        world.run()
    stored = world.store.jobs.get("default/sidecar")
    assert stored.state is JobState.QUEUED and stored.wait_budget == math.inf
    assert not [j for j in world.cloud.launched if j.id == "default/sidecar"]
    why = "the pod template has 2 containers (main, log); a cloud task runs one"
    assert any(why in r for r in world.reasons("default/sidecar"))
    assert any(why in message for _, _, message in world.events("sidecar"))
    # too big for the cluster as well: it fails with both reasons instead of waiting forever
    big = queued_job("huge", gpus=16)
    big["spec"]["template"]["spec"]["containers"][0]["command"] = None
    world.batch.create_namespaced_job("default", big)
    wait_for(
        lambda: (
            world.controller.run_pass() is not None
            and _known(world.store, "default/huge")
            and world.state("default/huge") is JobState.FAILED
        )
    )
    (last,) = world.reasons("default/huge")[-1:]
    assert "cannot burst" in last and "sets no command" in last


def test_deleting_a_waiting_job_ends_its_record(world: World) -> None:
    _fill_and_an_unburstable(world, "later")
    world.batch.delete_namespaced_job("later", "default")
    wait_for(
        lambda: (
            world.controller.run_pass() is not None
            and world.state("default/later") is JobState.FAILED
        )
    )
    assert "its Kubernetes Job was deleted" in world.reasons("default/later")[-1]


def billed(store: SqlStore, job_id: str) -> tuple[Decimal, int]:
    """The cloud money on the job's ledger, and in how many entries."""
    rows = store.ledger.cost_report(0.0, 4e9, by=("team",), job=job_id, source="cloud")
    return sum((r.amount for r in rows), Decimal(0)), sum(r.entries for r in rows)


def test_deleting_a_burst_job_ends_its_record_and_its_cloud_launch(world: World) -> None:
    """The issue's "deleting the Job does not end it": a kubectl Job that burst, then deleted
    with kubectl, ends with that reason (not "failed on-prem"), its launch is cancelled in the
    same pass, and nothing is billed after."""
    world.cloud.runtime = 3600.0  # the cloud run would go on for an hour
    world.batch.create_namespaced_job("default", queued_job("fill", gpus=8))
    wait_for(
        lambda: (
            world.controller.run_pass() is not None
            and _known(world.store, "default/fill")
            and world.state("default/fill") is JobState.RUNNING_ONPREM
        )
    )
    world.batch.create_namespaced_job("default", queued_job("away", gpus=4))
    wait_for(
        lambda: (
            world.controller.run_pass() is not None
            and _known(world.store, "default/away")
            and world.state("default/away") is JobState.BURSTING
        )
    )
    for _ in range(3):  # it runs in the cloud for a few minutes, billed by the minute
        world.clock.advance(60)  # type: ignore[attr-defined]
        world.run()
    assert world.state("default/away") is JobState.RUNNING_CLOUD
    assert billed(world.store, "default/away")[1] > 0
    world.batch.delete_namespaced_job("away", "default")  # kubectl delete job away
    wait_for(
        lambda: (
            world.controller.run_pass() is not None
            and world.state("default/away") is JobState.FAILED
        )
    )
    ended_at = world.clock.now()  # type: ignore[attr-defined]
    assert world.reasons("default/away")[-1] == "its Kubernetes Job was deleted"
    assert world.cloud.cancelled == ["default/away"]
    (launch,) = world.store.ledger.launches("default/away")
    assert launch.status == "failed" and launch.ended_at == ended_at
    money = billed(world.store, "default/away")
    for _ in range(5):  # time goes on: nothing more is billed
        world.clock.advance(600)  # type: ignore[attr-defined]
        world.run()
    assert billed(world.store, "default/away") == money
    assert world.cloud.cancelled == ["default/away"]  # cancelled once
    assert world.state("default/fill") is JobState.RUNNING_ONPREM


def test_removing_the_queue_label_ends_the_record_with_that_reason(world: World) -> None:
    """``kubectl label job later starburst.io/queue-``: the labelled watch reports the Job
    DELETED (as a real server does); the record ends saying the label went, not the Job."""
    _fill_and_an_unburstable(world, "later")
    patch = {"metadata": {"labels": {"starburst.io/queue": None}}}
    world.batch.patch_namespaced_job("later", "default", patch)
    wait_for(
        lambda: (
            world.controller.run_pass() is not None
            and world.state("default/later") is JobState.FAILED
        )
    )
    assert world.reasons("default/later")[-1] == (
        "its Kubernetes Job was taken out of Starburst's queue (label starburst.io/queue removed)"
    )
    assert world.batch.read_namespaced_job("later", "default").spec.suspend is True  # left be


def test_a_job_suspended_by_someone_else_ends_and_frees_its_gpus(world: World) -> None:
    world.batch.create_namespaced_job("default", queued_job("mine", gpus=8))
    wait_for(
        lambda: (
            world.controller.run_pass() is not None
            and _known(world.store, "default/mine")
            and world.state("default/mine") is JobState.RUNNING_ONPREM
        )
    )
    # `kubectl apply` of the original manifest (suspend: true), or Kueue, suspends it
    world.batch.patch_namespaced_job("mine", "default", {"spec": {"suspend": True}})
    wait_for(
        lambda: (
            world.controller.run_pass() is not None
            and world.state("default/mine") is JobState.FAILED
        )
    )
    assert "suspended by someone else" in world.reasons("default/mine")[-1]
    assert world.controller.cluster.snapshot().capacity.free_gpus == 8
    job = wait_for(
        lambda: (
            (j := world.batch.read_namespaced_job("mine", "default")).metadata.annotations[
                "starburst.io/state"
            ]
            == "failed"
            and j
        )
    )
    assert "suspended by someone else" in job.metadata.annotations["starburst.io/reason"]
    assert wait_for(lambda: [e for e in world.events("mine") if e[:2] == ("Warning", "Stopped")])
    # a new Job queued after it gets the GPUs
    world.batch.create_namespaced_job("default", queued_job("next", gpus=8))
    wait_for(
        lambda: (
            world.controller.run_pass() is not None
            and _known(world.store, "default/next")
            and world.state("default/next") is JobState.RUNNING_ONPREM
        )
    )


def _restarted(world: World, make_cluster: Any, tmp_path: Path) -> Controller:
    """A new controller process over the same store and cluster."""
    settings = Settings(
        database_url=str(world.store.engine.url), state_dir=tmp_path, policy="no-wait", cloud="none"
    )
    return wire_controller(settings, world.store, make_cluster(), world.cloud, clock=world.clock)


def test_a_job_deleted_while_no_controller_watched_ends_at_the_next_start(
    world: World, make_cluster, tmp_path: Path
) -> None:
    _fill_and_an_unburstable(world, "orphan")
    world.controller.stop()
    world.batch.delete_namespaced_job("orphan", "default")  # while nobody watches
    again = _restarted(world, make_cluster, tmp_path)
    try:
        assert again.run_pass() is not None  # leads, reconciles
        assert world.state("default/orphan") is JobState.FAILED
        assert world.reasons("default/orphan")[-1] == "its Kubernetes Job was deleted"
        assert world.state("default/fill") is JobState.RUNNING_ONPREM  # the others stay
    finally:
        again.stop()


def test_a_restarted_controller_keeps_its_waiting_jobs_and_takes_the_new_ones(
    world: World, make_cluster, tmp_path: Path
) -> None:
    """A new process is offered every waiting Job again: the ones the store knows must not
    fail the pass (their ids are taken), nor hide the Jobs created while it was down."""
    two = _fill_and_an_unburstable(world, "later")
    world.controller.stop()
    two["metadata"]["name"] = "meanwhile"
    world.batch.create_namespaced_job("default", two)  # while no controller runs
    again = _restarted(world, make_cluster, tmp_path)
    try:
        assert again.run_pass() is not None  # leads, takes the submissions
        assert world.state("default/meanwhile") is not None
        assert again.run_pass() is not None
        assert world.state("default/later") is JobState.QUEUED
        assert world.state("default/meanwhile") is JobState.QUEUED
        assert [e.reason for e in world.store.jobs.events("default/later")].count("submitted") == 1
    finally:
        again.stop()
