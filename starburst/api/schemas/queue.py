"""Queue schemas: the waiting line as any authenticated user may see it.

Terms:
- *position*: 1-based rank among the jobs in the line (``submitted`` and ``queued``, not
  held) in FIFO order (``queued_at``, then id), the order the controller considers them in.
- *held*: a submitted job waiting for a dependency or an array slot; it is not in the line
  yet (no position, no budget running) and is listed after it, with the reason.
- *plan*: where the job goes next, in words ("on-prem when GPUs free, else the cloud in 12m"),
  the same words as every other view of the job (``starburst.core.outlook``).
- *redacted*: another user's entry carries its id, size and budget only; its owner, name,
  image, command and environment are never in it.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from starburst.core.lifecycle import JobState


class QueueEntry(BaseModel):
    position: int | None = Field(description="Its place in the line; null for a held job.")
    id: str
    mine: bool = Field(description="The caller's own job (its owner and name are shown).")
    user: str | None = Field(description="Null for other users' jobs (redacted).")
    name: str | None = Field(description="Null for other users' jobs (redacted).")
    state: JobState
    gpus: int
    gpu_type: str | None
    queued_at: datetime
    waited_s: float
    wait_budget_s: float | None
    never_bursts: bool
    budget_left_s: float | None = Field(
        description="Seconds until it bursts; 0 when spent; null without a finite budget."
    )
    budget_expires_at: datetime | None
    plan: str
    bursts_at: datetime | None = Field(
        default=None, description="When it goes to the cloud; null when nothing sends it there."
    )
    held: str | None = Field(
        default=None, description="Why it is held out of the line (dependencies, array limit)."
    )


class RunningEntry(BaseModel):
    """A job running (or bursting), redacted as a waiting one is."""

    id: str
    mine: bool
    user: str | None = Field(description="Null for other users' jobs (redacted).")
    name: str | None = Field(description="Null for other users' jobs (redacted).")
    state: JobState
    gpus: int
    gpu_type: str | None
    started_at: datetime | None
    elapsed_s: float | None = Field(description="Seconds since it started.")


class QueueView(BaseModel):
    """``GET /v1/queue``: users see the line up to their last job in it, then their held
    jobs; finance and admins see all of it (up to ``limit`` entries). With ``all``: everyone
    sees the whole line and every running job (others' redacted)."""

    total: int = Field(description="Jobs in the whole line (held jobs not counted).")
    held: int = Field(default=0, description="Held jobs listed after the line.")
    jobs: list[QueueEntry]
    running: list[RunningEntry] | None = Field(
        default=None,
        description="With ``all``: the jobs running on-prem, bursting or running in the "
        "cloud, oldest start first; null without it.",
    )
