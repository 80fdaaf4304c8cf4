"""Request dependencies (``Annotated`` aliases): the context, the store and the caller.

Authentication: ``Authorization: Bearer <token>``, checked with ``Accounts.authenticate``
and remembered for a second (``starburst.api.tokens``).
A missing, malformed, unknown, revoked or expired token is 401; a known caller without the
role an endpoint needs is 403. With ``kubernetes_auth`` on, a token that is not a Starburst
token (``sb_…``) is taken for a Kubernetes one (``starburst.api.kubeauth``: 401 when the
cluster does not accept it, 403 when no grant maps it). With ``auth`` off every request acts
as the context's ``anonymous`` admin.

Roles: ``user`` (their own jobs), ``finance`` (cost reports, read-only views of jobs),
``admin`` (everything). ``admin`` passes every role check. Finance is read-only: it submits,
cancels and reads the output of no job, and sees no job's command (``refuse_read_only``,
``sees_commands``); ``tests/api/test_role_matrix.py`` checks every route for every role.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from starburst.api.context import ApiContext
from starburst.core.ports import Store
from starburst.core.records import Principal, Role

_CHALLENGE = {"WWW-Authenticate": "Bearer"}
#: how every token Starburst issues begins (``Accounts.issue_token``)
STARBURST_TOKEN_PREFIX = "sb_"


# The dependencies are ``async``: FastAPI runs a plain ``def`` dependency in its thread pool,
# a hand-off that cost more than the work of these.


async def get_context(request: Request) -> ApiContext:
    ctx: ApiContext = request.app.state.starburst
    return ctx


async def get_store(ctx: Annotated[ApiContext, Depends(get_context)]) -> Store:
    return ctx.store


async def get_caller(
    request: Request, ctx: Annotated[ApiContext, Depends(get_context)]
) -> Principal:
    return await caller_of(ctx, request.headers.get("authorization", ""))


async def caller_of(ctx: ApiContext, header: str) -> Principal:
    """The caller an ``Authorization`` header names (401 if none)."""
    if not ctx.auth:
        return ctx.anonymous
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise HTTPException(
            401,
            "missing API token: send 'Authorization: Bearer <token>' "
            "(an admin issues one with `starburst admin tokens issue USER`)",
            headers=_CHALLENGE,
        )
    secret, now = secret.strip(), ctx.clock.now()
    if ctx.kube is not None and not secret.startswith(STARBURST_TOKEN_PREFIX):
        return await ctx.kube.caller(secret, now)
    principal = ctx.tokens.cached(secret, now)
    if principal is None:
        principal = await ctx.tokens.lookup(
            secret, now, lambda: run_in_threadpool(ctx.store.accounts.authenticate, secret, at=now)
        )
    if principal is None:
        raise HTTPException(401, "invalid, expired or revoked API token", headers=_CHALLENGE)
    return principal


ContextDep = Annotated[ApiContext, Depends(get_context)]
StoreDep = Annotated[Store, Depends(get_store)]
CallerDep = Annotated[Principal, Depends(get_caller)]


def require(*roles: Role) -> Callable[[Principal], Awaitable[Principal]]:
    """A dependency that lets through admins and callers holding one of ``roles``."""
    allowed = {Role.ADMIN, *roles}
    names = " or ".join(sorted(r.value for r in allowed))

    async def check(caller: CallerDep) -> Principal:
        if caller.role not in allowed:
            raise HTTPException(
                403, f"{caller.user} has role {caller.role.value}; this needs {names}"
            )
        return caller

    return check


AdminDep = Annotated[Principal, Depends(require())]
#: users and admins: finance is read-only (no submit, cancel or job output)
WriterDep = Annotated[Principal, Depends(require(Role.USER))]
FinanceDep = Annotated[Principal, Depends(require(Role.FINANCE))]


def refuse_read_only(caller: Principal, what: str) -> None:
    """403 for a finance caller: finance reads costs and jobs but changes nothing, runs
    nothing and reads no job's output."""
    if caller.role is Role.FINANCE:
        raise HTTPException(
            403, f"{caller.user} has role finance, which is read-only: it cannot {what}"
        )


def sees_commands(caller: Principal) -> bool:
    """Whether job views show ``caller`` commands and output (finance: never)."""
    return caller.role is not Role.FINANCE


def is_privileged(caller: Principal) -> bool:
    """Admins and finance see every job; users only their own."""
    return caller.role in (Role.ADMIN, Role.FINANCE)
