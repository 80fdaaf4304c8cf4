"""A job array over HTTP (``/v1/arrays``): its id, its throttle and its elements."""

from __future__ import annotations

from pydantic import BaseModel, Field

from starburst.api.schemas.jobs import JobSummary


class ArrayView(BaseModel):
    """One array: the id its user names it by, and its elements in index order."""

    id: str = Field(description="The array id as its user types it (`sweep-1a2b3c4d`).")
    user: str | None = Field(description="Whose array it is.")
    limit: int | None = Field(description="At most this many elements queued or running.")
    states: dict[str, int] = Field(description="How many elements are in each state.")
    elements: list[JobSummary]
