"""``/v1/users``, ``/v1/teams``, ``/v1/tokens`` and ``/v1/whoami``: accounts for admins.

Admins create, list and show users and teams, issue, list and revoke tokens and set teams'
monthly cloud budgets. Anyone may read their own user record and ``whoami``; a team's budget is
readable by its members, finance and admins. A token's secret appears only in the response
that issues it: listings show its id, owner, role, label and times.

Budget month: the calendar month in UTC holding "now"; ``spent`` sums the team's cost entries
whose period starts inside it (in the budget's currency); ``forecast`` extrapolates it to the
month's end at the rate so far (``core.holds``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query, Response

from starburst.api.deps import AdminDep, CallerDep, ContextDep
from starburst.api.schemas.accounts import (
    BudgetIn,
    BudgetOut,
    TeamDetail,
    TeamIn,
    TeamOut,
    TokenIn,
    TokenInfoOut,
    TokenOut,
    UserIn,
    UserOut,
    WhoAmI,
)
from starburst.api.schemas.fields import INT64_MAX, AccountName
from starburst.core.holds import BudgetState, budget_states
from starburst.core.records import Role

router = APIRouter(prefix="/v1", tags=["accounts"])
CENT = Decimal("0.01")
NameFilter = Annotated[AccountName | None, Query()]
#: a user or team named in a path meets the same rule as one in a body (no "bad name" team
#: made by ``PUT /v1/teams/bad%20name/budget``)
NameInPath = Annotated[AccountName, Path()]


@router.get("/whoami", response_model=WhoAmI)
async def whoami(caller: CallerDep, ctx: ContextDep) -> WhoAmI:
    return WhoAmI(user=caller.user, team=caller.team, role=caller.role, auth=ctx.auth)


@router.post("/users", status_code=201, response_model=UserOut)
def save_user(body: UserIn, _admin: AdminDep, ctx: ContextDep) -> UserOut:
    """Create a user, or update their team and e-mail."""
    user = ctx.store.accounts.save_user(
        body.name, team=body.team, email=body.email, at=ctx.clock.now()
    )
    ctx.tokens.forget()  # a cached caller may carry the old team
    return UserOut(name=user.name, team=user.team, email=user.email)


@router.get("/users", response_model=list[UserOut])
def list_users(_admin: AdminDep, ctx: ContextDep, team: NameFilter = None) -> list[UserOut]:
    """Every user (of ``team`` if given), by name."""
    return [
        UserOut(name=u.name, team=u.team, email=u.email)
        for u in ctx.store.accounts.users(team=team)
    ]


@router.get("/users/{name}", response_model=UserOut)
def get_user(name: NameInPath, caller: CallerDep, ctx: ContextDep) -> UserOut:
    if caller.role is not Role.ADMIN and caller.user != name:
        raise HTTPException(403, f"{caller.user} can read only their own user record")
    user = ctx.store.accounts.user(name)
    if user is None:
        raise HTTPException(404, f"no user {name}")
    return UserOut(name=user.name, team=user.team, email=user.email)


@router.post("/teams", status_code=201, response_model=TeamOut)
def create_team(body: TeamIn, _admin: AdminDep, ctx: ContextDep) -> TeamOut:
    ctx.store.accounts.ensure_team(body.name, at=ctx.clock.now())
    return TeamOut(name=body.name)


@router.get("/teams", response_model=list[TeamDetail])
def list_teams(_admin: AdminDep, ctx: ContextDep) -> list[TeamDetail]:
    """Every team with its members, by name."""
    members: dict[str, list[str]] = {name: [] for name in ctx.store.accounts.teams()}
    for user in ctx.store.accounts.users():
        if user.team is not None:
            members.setdefault(user.team, []).append(user.name)
    return [TeamDetail(name=name, members=names) for name, names in sorted(members.items())]


@router.get("/teams/{team}", response_model=TeamDetail)
def get_team(team: NameInPath, _admin: AdminDep, ctx: ContextDep) -> TeamDetail:
    if team not in ctx.store.accounts.teams():
        raise HTTPException(404, f"no team {team}")
    names = [u.name for u in ctx.store.accounts.users(team=team)]
    return TeamDetail(name=team, members=names)


@router.get("/tokens", response_model=list[TokenInfoOut])
def list_tokens(_admin: AdminDep, ctx: ContextDep, user: NameFilter = None) -> list[TokenInfoOut]:
    """Every token (of ``user`` if given), revoked and expired ones too; never a secret."""
    now = ctx.clock.now()
    return [
        TokenInfoOut(
            id=t.id,
            user=t.user,
            role=t.role,
            label=t.label,
            created_at=t.created_at,
            expires_at=t.expires_at,
            revoked_at=t.revoked_at,
            last_used_at=t.last_used_at,
            live=t.revoked_at is None and (t.expires_at is None or t.expires_at > now),
        )
        for t in ctx.store.accounts.tokens(user=user)
    ]


@router.post("/tokens", status_code=201, response_model=TokenOut)
def issue_token(body: TokenIn, _admin: AdminDep, ctx: ContextDep) -> TokenOut:
    """Issue a token for an existing user; the secret is in this response only."""
    if ctx.store.accounts.user(body.user) is None:
        raise HTTPException(404, f"no user {body.user}: create it first (POST /v1/users)")
    now = ctx.clock.now()
    expires = now + body.expires_in_s if body.expires_in_s is not None else None
    issued = ctx.store.accounts.issue_token(
        body.user, body.role, label=body.label, expires_at=expires, at=now
    )
    return TokenOut(id=issued.id, user=issued.user, role=issued.role, secret=issued.secret)


@router.delete("/tokens/{token_id}", status_code=204)
def revoke_token(
    token_id: Annotated[int, Path(ge=1, le=INT64_MAX)], _admin: AdminDep, ctx: ContextDep
) -> Response:
    revoked = ctx.store.accounts.revoke_token(token_id, at=ctx.clock.now())
    ctx.tokens.forget()  # refused from the next request on, not a second later
    if not revoked:
        raise HTTPException(404, f"no live token {token_id}")
    return Response(status_code=204)


@router.put("/teams/{team}/budget", response_model=BudgetOut)
def set_budget(team: NameInPath, body: BudgetIn, _admin: AdminDep, ctx: ContextDep) -> BudgetOut:
    """Set the monthly limit; ``warning`` says so when the team already spent more."""
    ctx.store.accounts.set_team_budget(
        team, body.monthly_limit, currency=body.currency.upper(), at=ctx.clock.now()
    )
    out = get_budget(team, _admin, ctx)
    if Decimal(out.spent) > Decimal(out.monthly_limit):
        out.warning = budget_warning(out)
    return out


@router.get("/teams/{team}/budget", response_model=BudgetOut)
def get_budget(team: NameInPath, caller: CallerDep, ctx: ContextDep) -> BudgetOut:
    """The team's monthly limit, what it spent this UTC month, what is left and the
    month-end forecast at the rate so far."""
    if caller.role is Role.USER and caller.team != team:
        raise HTTPException(403, f"{caller.user} is not in team {team}")
    states = budget_states(ctx.store.accounts, ctx.store.ledger, ctx.clock.now(), team)
    if not states:
        raise HTTPException(404, f"team {team} has no budget (set one with PUT)")
    return budget_out(states[0], ctx.store.accounts.budget_alerts(states[0].month).get(team, []))


def budget_out(state: BudgetState, alerts: list[float]) -> BudgetOut:
    return BudgetOut(
        team=state.team,
        monthly_limit=str(state.limit.quantize(CENT)),
        currency=state.currency,
        month=state.month,
        spent=str(state.spent.quantize(CENT)),
        remaining=str(state.remaining.quantize(CENT)),
        exhausted=state.exhausted,
        forecast=str(state.forecast.quantize(CENT)),
        used_fraction=round(min(state.used, 1e9), 4),
        alerts=alerts,
    )


def budget_warning(out: BudgetOut) -> str:
    return (
        f"team {out.team} already spent {out.spent} {out.currency} this month, more "
        f"than the new limit of {out.monthly_limit}: its jobs stop bursting now"
    )
