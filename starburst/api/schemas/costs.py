"""Cost report schemas. Money is a decimal string in its ``currency``; rows never mix
currencies (a group spending in two currencies has two rows). GPU-hours are rounded to
``GPU_HOURS_DIGITS`` decimals.

Terms: ``amount``/``gpu_hours``: cloud money and cloud GPU-hours metered in the ledger;
``onprem_gpu_hours``: GPU-hours used on the private cluster; ``onprem_amount``: those hours
priced at the admin's internal rates (showback, not money paid to a cloud).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

GPU_HOURS_DIGITS = 3


class CostRow(BaseModel):
    key: dict[str, str | None] = Field(
        description='The group, e.g. {"team": "ml", "month": "2026-11"}.'
    )
    amount: str = Field(description="Cloud spend (decimal string).")
    currency: str
    gpu_hours: float = Field(description="Cloud GPU-hours.")
    onprem_gpu_hours: float = Field(description="GPU-hours used on the private cluster.")
    onprem_amount: str = Field(description="On-prem GPU-hours at the internal rates.")
    entries: int


class CostTotal(BaseModel):
    amount: str
    currency: str
    gpu_hours: float
    onprem_gpu_hours: float
    onprem_amount: str


class CostReport(BaseModel):
    since: datetime
    until: datetime
    by: list[str]
    scope: str = Field(description='Whose costs: "all", "team <t>" or "user <u>".')
    rows: list[CostRow]
    totals: list[CostTotal]
    onprem_rates: dict[str, str] = Field(
        description="Internal $/GPU-hour per GPU type used for showback ('*': any other)."
    )


class UnpricedJob(BaseModel):
    job: str
    reason: str


class Savings(BaseModel):
    """Jobs that ended in ``[since, until)``: what they cost (``actual``, from the ledger)
    against bursting every one of them at once (No-Wait, ``no_wait``)."""

    since: datetime
    until: datetime
    jobs: int = Field(description="Jobs counted (priced).")
    burst_jobs: int
    onprem_jobs: int
    gpu_hours: float = Field(description="GPU-hours of the counted jobs.")
    onprem_gpu_hours: float
    onprem_cloud_value: str = Field(
        description="What the cloud would have charged for the on-prem GPU-hours."
    )
    actual: str
    no_wait: str
    saved: str
    saved_fraction: float | None
    currency: str
    unpriced_jobs: int = Field(description="Jobs left out (see ``unpriced``).")
    unpriced: list[UnpricedJob] = Field(description="Up to 100 left-out jobs, with why.")
    assumptions: str
