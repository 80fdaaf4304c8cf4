"""``starburst tune`` over HTTP: a replay request, its results, and applied settings."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from starburst.api.limits import NO_CONTROL
from starburst.core.estimates import EstimateUse
from starburst.core.policy import PolicyKind

Budget = Annotated[float, Field(ge=0, le=100, strict=True)]


class TuneIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    since_s: float = Field(
        default=30 * 86_400.0,
        gt=0,
        le=10 * 365 * 86_400.0,
        strict=True,
        description="History window: jobs submitted in the last since_s.",
    )
    budgets: list[Budget] = Field(default=[0.05, 0.1, 0.25, 0.5, 1.0], min_length=1, max_length=20)
    policies: list[PolicyKind] = Field(
        default=[
            PolicyKind.COMPUTE,
            PolicyKind.CONSTANT,
            PolicyKind.RUNTIME,
            PolicyKind.RESOURCE,
            PolicyKind.STAR,
        ],
        min_length=1,
        max_length=7,
    )
    max_jct_increase: float = Field(
        default=0.05,
        ge=0,
        lt=100,
        strict=True,
        description="Mean-JCT tolerance over No-Wait (0.05: 5%).",
    )
    price_per_gpu_hour: float | None = Field(default=None, ge=0, le=1e6, strict=True)
    apply: bool = False
    choose: Literal["cheapest", "knee"] = "cheapest"


class SettingIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    policy: PolicyKind
    budget: Budget | None = None
    coefficient: float | None = Field(default=None, ge=0, le=1e9, strict=True)
    out_of_order: bool = True
    estimate: EstimateUse = EstimateUse.P50
    reason: str = Field(min_length=1, max_length=500, pattern=NO_CONTROL)


class AppliedOut(BaseModel):
    id: int
    at: float
    actor: str
    policy: PolicyKind
    budget: float | None
    coefficient: float | None
    out_of_order: bool
    estimate: EstimateUse
    reason: str
    evidence: dict[str, Any]


class RecommendationOut(BaseModel):
    tolerance: float
    cheapest: dict[str, Any] | None
    knee: dict[str, Any] | None
    today: dict[str, Any] | None


class TuneOut(BaseModel):
    jobs: int
    price_per_gpu_hour: float
    rows: list[dict[str, Any]]
    recommendation: RecommendationOut
    applied: AppliedOut | None
    already_in_force: bool = Field(
        default=False,
        description="apply was asked and the choice has today's policy, budget and mode: "
        "nothing was written",
    )


class SettingsOut(BaseModel):
    in_force: AppliedOut | None
    log: list[AppliedOut]
