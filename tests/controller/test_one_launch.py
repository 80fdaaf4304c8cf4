"""A job goes to the cloud one way: a burst and a resumed burst share ``SchedulingLoop._launch``.

The launch sequence (launch through the port → record it in the ledger → follow it) once
stood twice in ``controller/loop/scheduling.py``: for a burst the pass decided, and for a burst a
new leader re-issues (the previous leader recorded the job ``bursting`` and died before the
launch). Here the same job takes each path on a store of its own, on virtual time: both go
through the one method, and the ledger ends with the same launch and the same cost entries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from starburst.adapters.memory.store import MemoryStore
from starburst.controller.loop.moves import ACTOR
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.capacity import Node
from starburst.core.cycle import SchedulerConfig
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import CloudLaunch, JobSpec
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from tests.support.clock import ManualClock

CONFIG = SchedulerConfig(WaitPolicy(PolicyKind.NO_WAIT), out_of_order=True)
RUNTIME = 600.0


def _world() -> tuple[MemoryStore, SchedulingLoop, ManualClock]:
    clock = ManualClock()
    store = MemoryStore(clock=clock)
    cluster = SimCluster([Node("n0", 1)], clock)  # the 2-GPU job never fits: it bursts
    cloud = SimCloud(clock, 2.5, runtimes={"j": RUNTIME})
    loop = SchedulingLoop(store, cluster, cloud, clock, CONFIG, metering_chunk_s=60.0)
    store.submissions.submit(JobSpec(id="j", gpus=2, command="train"))
    return store, loop, clock


def _ledger(store: MemoryStore) -> tuple[list[CloudLaunch], object, object]:
    """The job's launches (without the store's ids), its costs and the cost report."""
    launches = [replace(x, id=None) for x in store.ledger.launches("j")]
    report = store.ledger.cost_report(0.0, 1e12, by=("job", "source"))
    return launches, store.ledger.job_costs(["j"]), report


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The jobs each call of ``SchedulingLoop._launch`` sent to the cloud."""
    seen: list[str] = []
    original: Callable[..., Any] = SchedulingLoop._launch

    def spy(self: SchedulingLoop, job: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(job.id)
        return original(self, job, *args, **kwargs)

    monkeypatch.setattr(SchedulingLoop, "_launch", spy)
    return seen


def test_a_burst_and_a_resumed_burst_launch_record_and_bill_alike(launches: list[str]) -> None:
    decided, loop, clock = _world()
    loop.run_pass()  # no wait, no room: the pass bursts the job
    assert decided.jobs.get("j").state is JobState.BURSTING
    assert launches == ["j"]

    resumed, new_leader, clock_b = _world()
    # the previous leader recorded the burst and died before launching it
    resumed.lifecycle.transition("j", JobState.QUEUED, reason="queued", actor=ACTOR)
    resumed.lifecycle.transition("j", JobState.BURSTING, reason="no wait", actor=ACTOR)
    assert resumed.ledger.launches("j") == []
    assert new_leader.reconcile() == 1
    assert launches == ["j", "j"]

    for clock_, loop_ in ((clock, loop), (clock_b, new_leader)):
        clock_.advance(RUNTIME + 1)
        loop_.run_pass()
    assert decided.jobs.get("j").state is resumed.jobs.get("j").state is JobState.SUCCEEDED
    first, second = _ledger(decided), _ledger(resumed)
    assert [x.provider for x in first[0]] == ["sim"]  # one launch, recorded where it ran
    assert first[2], "the run was billed"
    assert first == second
