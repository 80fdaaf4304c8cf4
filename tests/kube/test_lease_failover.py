"""Two controller replicas elected by a Kubernetes Lease (``leader_election: lease``, wired
from settings against the API stand-in): one leads, the standby takes over when the leader
dies, and the dead leader's fencing token is refused."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from apscheduler.schedulers.background import BackgroundScheduler

from starburst.adapters.kubernetes.lease import LeaseLock
from starburst.controller.daemon import Controller
from starburst.controller.wiring import build_controller
from starburst.core.lifecycle import JobState
from starburst.core.records import JobSpec, StaleLeader
from starburst.settings import Settings
from tests.support.databases import upgrade
from tests.support.waiting import wait_for

# lease durations of a second or two: never beside another timing-sensitive test
pytestmark = pytest.mark.xdist_group("timing")


def test_a_lease_elected_standby_takes_over_from_a_dead_leader(kube, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")

    def replica(name: str) -> Controller:
        settings = Settings(
            database_url=url,
            state_dir=tmp_path / name,
            local_gpus=1,
            cloud="none",
            pass_interval_s=0.1,
            leader_election="lease",
            kubeconfig=str(kubeconfig),
            lease_duration_s=2.0,  # a 1 s lease lapsed under a loaded CI run
        )
        return build_controller(settings)

    a, b = replica("a"), replica("b")
    assert isinstance(a._lock, LeaseLock) and isinstance(b._lock, LeaseLock)
    a_ticks = BackgroundScheduler(timezone="UTC")
    a.start(a_ticks)
    assert wait_for(lambda: a.health().detail == "leading")
    b.start()
    try:
        assert wait_for(lambda: b.health().detail.startswith("standby"))
        old = a._lock.token
        assert old is not None
        job = a.store.submissions.submit(JobSpec(gpus=1, command="true")).job.id
        assert wait_for(lambda: a.store.jobs.get(job).state is JobState.SUCCEEDED)

        a_ticks.pause()  # no more passes …
        a._lock.abandon()  # the leader's process dies: it neither renews nor releases
        died = time.monotonic()
        assert wait_for(lambda: b.health().detail == "leading")
        assert time.monotonic() - died < 6.0  # within the lease duration plus a few passes
        assert (b._lock.token or 0) > old
        second = b.store.submissions.submit(JobSpec(gpus=1, command="true")).job.id
        assert wait_for(lambda: b.store.jobs.get(second).state is JobState.SUCCEEDED)
        third = b.store.submissions.submit(JobSpec(gpus=1, command="sleep 5")).job.id
        with pytest.raises(StaleLeader):
            a.store.lifecycle.transition(
                third, JobState.QUEUED, reason="zombie", actor="a", fencing_token=old
            )
    finally:
        a.stop()
        b.stop()
        a.store.close()
        b.store.close()


def test_an_unreachable_kubernetes_api_is_a_clear_start_up_error(tmp_path: Path) -> None:
    from starburst.core.errors import ConfigError

    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'sb.db'}",
        state_dir=tmp_path,
        cloud="none",
        leader_election="lease",
        kubeconfig=str(tmp_path / "missing-kubeconfig"),
    )
    upgrade(settings.database_url)
    with pytest.raises(ConfigError, match="cannot configure the Kubernetes client"):
        build_controller(settings)
