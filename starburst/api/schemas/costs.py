"""Cost report schemas. Money is a decimal string in its ``currency``; rows never mix
currencies (a group spending in two currencies has two rows)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class CostRow(BaseModel):
    key: dict[str, str | None] = Field(
        description='The group, e.g. {"team": "ml", "month": "2026-11"}.')
    amount: str
    currency: str
    gpu_hours: float
    entries: int


class CostTotal(BaseModel):
    amount: str
    currency: str
    gpu_hours: float


class CostReport(BaseModel):
    since: datetime
    until: datetime
    by: list[str]
    rows: list[CostRow]
    totals: list[CostTotal]


class Savings(BaseModel):
    """``actual``: every metered cost entry whose period starts in ``[since, until)``;
    ``no_wait``: what bursting each job that ended in the range to the cheapest cloud at once
    (No-Wait) would have cost for its measured runtime."""

    since: datetime
    until: datetime
    jobs: int
    gpu_hours: float
    actual: str
    no_wait: str
    saved: str
    saved_fraction: float | None
    currency: str
    unpriced_jobs: int = Field(description="Jobs whose GPU type has no price (left out).")
    assumptions: str
