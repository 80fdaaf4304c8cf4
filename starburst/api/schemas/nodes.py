"""Node schemas: the private cluster as any authenticated user may see it (Slurm's ``sinfo``
with the jobs on each node, as ``squeue -w`` adds them).

Terms:
- *node*: one machine of the private cluster as the controller last recorded it from its
  cluster port (Kubernetes Nodes, or the local executor's GPU slots), with its GPU type and
  GPU count; unschedulable nodes are not recorded.
- *used*: GPUs the store's running on-prem jobs hold on the node (their latest placement);
  *free* is the rest. GPUs taken by pods Starburst does not schedule are not counted.
- *redacted*: another user's job carries its id, state, size and start only; its owner and
  name are shown to admins and finance, never its command or environment (as in the queue).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from starburst.core.lifecycle import JobState


class NodeJob(BaseModel):
    id: str
    mine: bool = Field(description="The caller's own job (its owner and name are shown).")
    user: str | None = Field(description="Null for other users' jobs (redacted).")
    name: str | None = Field(description="Null for other users' jobs (redacted).")
    state: JobState
    gpus: int = Field(description="GPUs it holds on this node (on-prem), or in all (cloud).")
    started_at: datetime | None
    elapsed_s: float | None = Field(description="Seconds since it started.")


class NodeOut(BaseModel):
    name: str
    gpu_type: str | None = Field(description="Null for a node the controller never recorded.")
    gpus: int | None = Field(description="Its GPUs; null for a node the controller never recorded.")
    used: int = Field(description="GPUs Starburst's running jobs hold on it.")
    free: int | None = Field(description="GPUs not held; null when its size is unknown.")
    cpus: float | None = None
    jobs: list[NodeJob]


class NodesView(BaseModel):
    """``GET /v1/nodes``: every recorded node with its GPUs and running jobs, and the jobs
    running in the cloud."""

    recorded: bool = Field(
        description="Whether a controller has recorded the cluster; if not, the nodes listed "
        "are only those running jobs hold, their sizes unknown."
    )
    gpus: int = Field(description="GPUs of the recorded nodes.")
    used: int = Field(description="GPUs held by running on-prem jobs.")
    free: int = Field(description="GPUs of the recorded nodes not held.")
    nodes: list[NodeOut]
    cloud: list[NodeJob] = Field(
        default_factory=list, description="Jobs bursting or running in the cloud."
    )
