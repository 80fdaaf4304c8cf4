"""Users, teams, tokens and budgets over HTTP. A token's ``secret`` appears once, in the
response that issues it; nothing else ever returns it."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from starburst.adapters.db.records import Role

Name = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.@-]+$")]


class UserIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name
    team: Name | None = None
    email: str | None = Field(default=None, max_length=256)


class UserOut(BaseModel):
    name: str
    team: str | None
    email: str | None


class TeamIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name


class TeamOut(BaseModel):
    name: str


class TokenIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: Name
    role: Role = Role.USER
    label: str | None = Field(default=None, max_length=128)
    expires_in_s: float | None = Field(default=None, gt=0)


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
    monthly_limit: Decimal = Field(ge=0, max_digits=18, decimal_places=6)
    currency: str = Field(default="USD", min_length=3, max_length=3)


class BudgetOut(BaseModel):
    team: str
    monthly_limit: str
    currency: str
    month: str
    spent: str
    remaining: str
    exhausted: bool
    forecast: str = Field(default="0.00",
                          description="Month-end spend at this month's rate so far.")
    used_fraction: float = Field(default=0.0, description="Spent ÷ limit.")
    alerts: list[float] = Field(default_factory=list,
                                description="Alert thresholds crossed this month.")
    warning: str | None = Field(default=None,
                                description="Set when a new limit is already spent.")
