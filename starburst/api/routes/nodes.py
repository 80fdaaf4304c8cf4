"""``/v1/nodes``: the private cluster's nodes, their GPUs and the jobs running on each.

Invariants:
- The nodes are the cluster shape the controller records from its cluster port
  (``TuningLog.cluster_shape``: Kubernetes Nodes, or the local executor's slots), so a
  separate ``starburst api`` answers as ``starburst server`` does; use comes from the store
  (each running on-prem job's latest placement), the same truth ``status`` shows.
- Any authenticated caller may read it. Another user's job is redacted as in the queue
  (``api.routes.queue``): id, state, size and start; its owner and name for admins and
  finance only; never a command.
"""

from __future__ import annotations

from collections import defaultdict

from fastapi import APIRouter

from starburst.api.deps import CallerDep, ContextDep
from starburst.api.routes.queue import read_jobs, seen_by
from starburst.api.schemas.jobs import when
from starburst.api.schemas.nodes import NodeJob, NodeOut, NodesView
from starburst.core.lifecycle import JobState
from starburst.core.records import Principal, StoredJob

router = APIRouter(prefix="/v1/nodes", tags=["cluster"])

_CLOUD = (JobState.BURSTING, JobState.RUNNING_CLOUD)


def _job(stored: StoredJob, gpus: int, caller: Principal, now: float) -> NodeJob:
    mine, user, name = seen_by(stored, caller)
    started = stored.started_at
    return NodeJob(
        id=stored.id,
        mine=mine,
        user=user,
        name=name,
        state=stored.state,
        gpus=gpus,
        started_at=when(started),
        elapsed_s=max(0.0, now - started) if started is not None else None,
    )


@router.get("", response_model=NodesView)
def nodes(caller: CallerDep, ctx: ContextDep) -> NodesView:
    """Every node with its GPU type, GPUs used and free, and the jobs running on it (and
    the jobs running in the cloud)."""
    now = ctx.clock.now()
    store = ctx.store.jobs
    shape = ctx.store.tuning.cluster_shape()
    on_node: dict[str, list[NodeJob]] = defaultdict(list)
    for stored in read_jobs(store, states=(JobState.RUNNING_ONPREM,), limit=None):
        for part in store.placement(stored.id):
            on_node[part.node_name or f"node-{part.node}"].append(
                _job(stored, part.gpus, caller, now)
            )
    out: list[NodeOut] = []
    for node in shape or []:
        jobs = on_node.pop(node.name, [])
        used = sum(j.gpus for j in jobs)
        out.append(
            NodeOut(
                name=node.name,
                gpu_type=node.gpu_type,
                gpus=node.gpus,
                used=used,
                free=max(0, node.gpus - used),
                cpus=node.cpus or None,
                jobs=jobs,
            )
        )
    # jobs on nodes the recorded shape lacks (gone since, or never recorded): size unknown
    for name, jobs in sorted(on_node.items()):
        out.append(
            NodeOut(
                name=name,
                gpu_type=None,
                gpus=None,
                used=sum(j.gpus for j in jobs),
                free=None,
                jobs=jobs,
            )
        )
    cloud = [_job(s, s.job.gpus, caller, now) for s in read_jobs(store, states=_CLOUD, limit=None)]
    total = sum(n.gpus or 0 for n in out)
    free = sum(n.free or 0 for n in out)
    return NodesView(
        recorded=shape is not None,
        gpus=total,
        used=sum(n.used for n in out),
        free=free,
        nodes=out,
        cloud=cloud,
    )
