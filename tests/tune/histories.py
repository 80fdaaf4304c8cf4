"""A store holding a finished history, fast: the simulator's outcomes written through the
store's API as if a controller had run them (submit, queue, start or burst with a launch and
its metered cost, end). For CLI and REST tests; the acceptance test runs a real controller.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from starburst.core.capacity import uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import CloudLaunch, CostEntry, JobSpec
from starburst.sim.engine import simulate
from starburst.sim.synthetic import Workload, generate

PRICE = 2.5


def record_history(store: Any, t0: float, jobs: int = 80, seed: int = 4) -> list[Job]:
    """Simulate Starburst b=0.25 on 2×8 GPUs from ``t0`` and store every outcome."""
    nodes = uniform_nodes(2, 8)
    workload = [
        j.with_estimate((j.runtime or 0) * 1.2)
        for j in generate(Workload(jobs, 16, load=1.2, seed=seed))
    ]
    config = SchedulerConfig(
        WaitPolicy.from_budget(PolicyKind.COMPUTE, 0.25, workload), out_of_order=True, queue_cap=10
    )
    for o in simulate(workload, nodes, config).outcomes:
        _store_outcome(store, o.job, o.where, t0 + o.job.submit_time, t0 + o.start, t0 + o.end)
    store.tuning.record_cluster_shape(nodes)
    return workload


def record_scheduler(store: Any, coefficient: float, budget: float = 0.25) -> None:
    """What a controller running Starburst b=``budget`` records: the coefficient it refitted
    (not the one ``tune`` fits on the export), queue cap 10 as ``record_history`` ran."""
    store.tuning.record_state(
        "scheduler",
        {
            "policy": "compute",
            "coefficient": coefficient,
            "budget": budget,
            "out_of_order": True,
            "queue_cap": 10,
            "order": "fifo",
            "placement": "first-fit",
            "setting_id": None,
        },
    )


def _store_outcome(
    store: Any, job: Job, where: str, submit: float, start: float, end: float
) -> None:
    store.submissions.submit(JobSpec(id=job.id, gpus=job.gpus, user="ann", team="ml"), at=submit)
    store.lifecycle.set_estimates(job.id, predicted_runtime=job.estimate)
    store.lifecycle.transition(job.id, JobState.QUEUED, reason="queued", actor="t", at=submit)
    if where == "onprem":
        store.lifecycle.transition(
            job.id, JobState.RUNNING_ONPREM, reason="start", actor="t", at=start
        )
    else:
        store.lifecycle.transition(job.id, JobState.BURSTING, reason="burst", actor="t", at=start)
        price = Decimal(str(PRICE * job.gpus))
        launch = store.ledger.record_launch(
            CloudLaunch(
                job_id=job.id,
                name=f"sb-{job.id}",
                provider="sim",
                accelerators=f"gpu:{job.gpus}",
                hourly_price=price,
                launched_at=start,
            )
        )
        store.ledger.update_launch(launch.id or 0, status="succeeded", ended_at=end)
        hours = Decimal(str(end - start)) / Decimal(3600)
        store.ledger.record_costs(
            [
                CostEntry(
                    job.id,
                    start,
                    end,
                    (price * hours).quantize(Decimal("0.000001")),
                    "sim",
                    gpu_hours=float(hours) * job.gpus,
                    source="cloud",
                    launch_id=launch.id,
                )
            ]
        )
    store.lifecycle.transition(job.id, JobState.SUCCEEDED, reason="done", actor="t", at=end)
