"""Leader election on a Kubernetes Lease (the stand-in's coordination.k8s.io/v1, official
client): one holder, hand-over on release, takeover from a dead holder within the lease
duration, and the store's fencing refusing a deposed leader's writes."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
from kubernetes import client

from starburst.adapters.db.leader import next_term
from starburst.adapters.db.store import SqlStore
from starburst.adapters.kubernetes.lease import LeaseBusy, LeaseLock
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec, StaleLeader
from tests.support.databases import upgrade
from tests.support.waiting import wait_for

# lease durations of a second or two: never beside another timing-sensitive test
pytestmark = pytest.mark.xdist_group("timing")

NAME = "starburst-controller"


def lease_of(coordination: client.CoordinationV1Api) -> client.V1Lease:
    return coordination.read_namespaced_lease(NAME, "default")


def two_replicas(api: client.ApiClient, duration: float = 1.0) -> tuple[LeaseLock, LeaseLock]:
    tokens = itertools.count(1).__next__  # the store's terms, in memory
    return (
        LeaseLock(api, "default", NAME, "host-a:1", tokens, duration=duration),
        LeaseLock(api, "default", NAME, "host-b:2", tokens, duration=duration),
    )


def test_one_replica_holds_the_lease_and_a_release_hands_it_over(
    api: client.ApiClient, coordination: client.CoordinationV1Api
) -> None:
    a, b = two_replicas(api)
    try:
        assert a.try_acquire() == 1 and a.is_held() and a.token == 1
        assert b.try_acquire() is None and b.token is None
        lease = lease_of(coordination)
        assert lease.spec.holder_identity == "host-a:1" and lease.spec.lease_transitions == 0
        assert lease.spec.lease_duration_seconds == 1
        with pytest.raises(LeaseBusy):
            b.acquire(timeout=0.3)
        a.release()
        assert a.token is None and not lease_of(coordination).spec.holder_identity
        assert b.try_acquire() == 2  # a released lease is free at once
        lease = lease_of(coordination)
        assert lease.spec.holder_identity == "host-b:2" and lease.spec.lease_transitions == 1
    finally:
        a.release()
        b.release()


def test_a_live_holder_keeps_the_lease_and_a_dead_one_is_replaced_in_bounded_time(
    api: client.ApiClient, coordination: client.CoordinationV1Api
) -> None:
    a, b = two_replicas(api, duration=2.0)  # slack for a loaded machine
    try:
        assert a.try_acquire() == 1
        renewed = lease_of(coordination).spec.renew_time
        deadline = time.monotonic() + 3.0  # 1.5 durations: only renewals keep it held
        while time.monotonic() < deadline:
            assert b.try_acquire() is None
            time.sleep(0.1)
        assert a.is_held() and lease_of(coordination).spec.renew_time > renewed

        a.abandon()  # the holder dies: no release, no more renewals
        died = time.monotonic()
        assert b.acquire(timeout=10) == 2
        assert time.monotonic() - died < 2.0 + 2.0  # the duration, plus slack
        assert wait_for(lambda: not a.is_held())  # it fenced itself meanwhile
        assert lease_of(coordination).spec.holder_identity == "host-b:2"
    finally:
        a.release()
        b.release()


def test_a_deposed_leaders_writes_are_refused_by_the_store(
    api: client.ApiClient, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    store = SqlStore.open(url)
    a = LeaseLock(
        api,
        "default",
        NAME,
        "host-a:1",
        lambda: next_term(store.engine, "controller", "host-a:1"),
        duration=1.0,
    )
    b = LeaseLock(
        api,
        "default",
        NAME,
        "host-b:2",
        lambda: next_term(store.engine, "controller", "host-b:2"),
        duration=1.0,
    )
    try:
        job_id = store.submissions.submit(JobSpec(gpus=1)).job.id
        old = a.try_acquire()
        assert old is not None
        a.abandon()
        new = b.acquire(timeout=10)
        assert new == old + 1
        with pytest.raises(StaleLeader):  # a paused old leader waking up late
            store.lifecycle.transition(
                job_id, JobState.QUEUED, reason="late", actor="a", fencing_token=old
            )
        moved = store.lifecycle.transition(
            job_id, JobState.QUEUED, reason="ok", actor="b", fencing_token=new
        )
        assert moved.state is JobState.QUEUED
    finally:
        a.release()
        b.release()
        store.close()


def test_a_release_hands_the_lease_back_though_a_write_lands_between_read_and_write(
    api: client.ApiClient, coordination: client.CoordinationV1Api
) -> None:
    """A renewal that lands after the release has read the Lease makes its write a 409: the
    release reads again and hands it back (it used to give up, and the Lease stayed with a
    replica that had stopped, until it expired — a flaky failure of the real tier)."""
    a, _ = two_replicas(api, duration=30.0)  # no renewal of its own during the test
    assert a.try_acquire() == 1
    real_replace = a._api.replace_namespaced_lease
    raced: list[str] = []

    def renewal_first(name: str, namespace: str, body: object) -> object:
        if not raced:  # what the renewal thread wrote a moment earlier: a newer version
            current = coordination.read_namespaced_lease(name, namespace)
            current.metadata.annotations = {"renewed": "1"}  # any write: a new version
            raced.append(
                coordination.replace_namespaced_lease(
                    name, namespace, current
                ).metadata.resource_version
            )
        return real_replace(name, namespace, body)

    a._api.replace_namespaced_lease = renewal_first  # type: ignore[method-assign]
    a.release()
    assert raced, "the hand-back never wrote"
    assert not lease_of(coordination).spec.holder_identity
