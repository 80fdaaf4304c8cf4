"""Users, teams, tokens and budgets over HTTP. A token's ``secret`` appears once, in the
response that issues it; nothing else ever returns it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from starburst.api.schemas.fields import MAX_EXPIRES_S, AccountName, Label128, Label256, Money
from starburst.core.records import Role

Name = AccountName


class UserIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name
    team: Name | None = None
    email: Label256 | None = None


class UserOut(BaseModel):
    name: str
    team: str | None
    email: str | None


class TeamIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name


class TeamOut(BaseModel):
    name: str


class TeamDetail(BaseModel):
    name: str
    members: list[str] = Field(description="Its users' names, sorted.")


class TokenInfoOut(BaseModel):
    """A token as listed: never its secret. Times are epoch seconds."""

    id: int
    user: str
    role: Role
    label: str | None
    created_at: float
    expires_at: float | None
    revoked_at: float | None
    last_used_at: float | None = Field(description="To the minute.")
    live: bool = Field(description="Neither revoked nor expired: it authenticates now.")


class TokenIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: Name
    role: Role = Role.USER
    label: Label128 | None = None
    expires_in_s: float | None = Field(
        default=None, gt=0, le=MAX_EXPIRES_S, allow_inf_nan=False, strict=True
    )


class TokenOut(BaseModel):
    id: int
    user: str
    role: Role
    secret: str = Field(description="Shown once; only its hash is stored.")


class WhoAmI(BaseModel):
    user: str
    team: str | None
    role: Role
    auth: bool


class BudgetIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    monthly_limit: Money
    currency: str = Field(default="USD", pattern=r"^[A-Za-z]{3}$")


class BudgetOut(BaseModel):
    team: str
    monthly_limit: str
    currency: str
    month: str
    spent: str
    remaining: str
    exhausted: bool
    forecast: str = Field(
        default="0.00", description="Month-end spend at this month's rate so far."
    )
    used_fraction: float = Field(default=0.0, description="Spent ÷ limit.")
    alerts: list[float] = Field(
        default_factory=list, description="Alert thresholds crossed this month."
    )
    warning: str | None = Field(default=None, description="Set when a new limit is already spent.")
