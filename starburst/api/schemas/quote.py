"""What ``POST /v1/jobs/quote`` answers: where a job would go and what it would cost per hour
in the cloud, before it is submitted (``starburst submit --dry-run``).

Terms: *price* is the cheapest cloud quote for the job (the one the controller would burst
with) in US dollars per hour; *ceiling* is the job ceiling it passed (``core.price_ceilings``);
*hold* is why the job would wait on-prem past its budget now (its team's budget is spent, or
users with no team may not burst).
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class JobQuote(BaseModel):
    """A submission checked as ``submit`` checks it, and nothing stored."""

    summary: str = Field(description="One line: where the job would go, and at what price.")
    team: str | None = Field(description="The team the job would be charged to.")
    price_per_hour: float | None = Field(
        description="$/h if it bursts (None: it cannot burst: no GPUs, or no cloud prices it)."
    )
    where: str | None = Field(description="Where it would burst (emulated gcp, aws:us-east-1).")
    shape: str | None = Field(description="What it would rent (A100:8, 2xA100:8).")
    ceiling_per_hour: float | None = Field(description="The job ceiling it is under ($/h).")
    ceiling_source: str | None = Field(description="The setting the ceiling comes from.")
    hold: str | None = Field(description="Why it would wait on-prem past its budget now.")
