"""``/v1/jobs/{id}/hold``, ``/release``, ``/requeue`` and ``PATCH /v1/jobs/{id}``: what a
job's owner (or an admin) may do to it after submitting (``core.amendments``).

Invariants:
- As for cancel: owners and admins only (finance is read-only: 403); another user's job is
  404 to a user. A state that does not allow the action is 409 with one line saying why
  (``core.amendments.refusal``); a bad update is 422, as the same values at submit are.
- Every change is one store write (``Lifecycle.amend``) at the version read, with an event
  ``status``/``explain`` show; a job the controller moved meanwhile is read again (at most
  three times, then 409).
- An update is checked as a submission is: the schema's bounds, the spec's rules (pods share
  GPUs equally) and the price ceiling for the new size. A queued job goes back to
  ``submitted`` keeping its queue time, and the controller computes its wait budget again
  (new GPUs × predicted runtime) when it admits it on its next pass.
- A requeue submits a new job with the ended job's spec through the same batcher and
  limits as any submission; the ended job keeps its history plus a note naming the new one.
- A Kubernetes Job its user created (``extra["k8s_name"]``) is the user's: its spec is
  changed and re-run with kubectl, so update and requeue refuse it (409).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, HTTPException, Response
from starlette.concurrency import run_in_threadpool

from starburst.api import submit_ceilings
from starburst.api.context import ApiContext
from starburst.api.deps import ContextDep, WriterDep, refuse_read_only
from starburst.api.routes.jobs import _visible, detail
from starburst.api.schemas.amendments import JobUpdate
from starburst.api.schemas.jobs import JobDetail
from starburst.core.amendments import Action, describe_update, refusal, user_hold
from starburst.core.dependencies import AfterKind
from starburst.core.errors import PermanentError
from starburst.core.lifecycle import JobState
from starburst.core.records import Amendment, JobSpec, Principal, Role, StaleVersion, StoredJob
from starburst.core.time_limit import TIME_LIMIT, time_limit_of

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

_TRIES = 3


def _own(ctx: ApiContext, job_id: str, caller: Principal, verb: str) -> StoredJob:
    refuse_read_only(caller, f"{verb} jobs")
    stored = _visible(ctx, job_id, caller)
    if stored.job.user != caller.user and caller.role is not Role.ADMIN:
        raise HTTPException(403, f"only {stored.job.user} or an admin can {verb} {stored.id}")
    return stored


def _check(action: Action, stored: StoredJob) -> None:
    why = refusal(action, stored.id, stored.state, stored.held)
    if why is not None:
        raise HTTPException(409, why)
    if action in (Action.UPDATE, Action.REQUEUE) and stored.job.extra.get("k8s_name"):
        raise HTTPException(
            409,
            f"job {stored.id} is a Kubernetes Job you created: change or re-create it with kubectl",
        )


def _amend(
    ctx: ApiContext,
    job_id: str,
    caller: Principal,
    action: Action,
    plan: Callable[[StoredJob], tuple[Amendment, str] | None],
) -> JobDetail:
    """Read the job, check ``action`` is allowed, write ``plan``'s change at that version
    (None: nothing to change); read again when the controller moved it meanwhile."""
    for _ in range(_TRIES):
        stored = _own(ctx, job_id, caller, action.value)
        _check(action, stored)
        planned = plan(stored)
        if planned is None:
            return detail(ctx, stored)
        change, reason = planned
        try:
            moved = ctx.store.lifecycle.amend(
                stored.id,
                change,
                reason=reason,
                actor=caller.user,
                expected_version=stored.version,
                at=ctx.clock.now(),
            )
        except StaleVersion:
            continue
        return detail(ctx, moved)
    raise HTTPException(409, f"job {job_id} keeps changing; try again")


def _out_of_line(stored: StoredJob) -> JobState | None:
    return JobState.SUBMITTED if stored.state is JobState.QUEUED else None


@router.post("/{job_id:path}/hold", response_model=JobDetail)
def hold(job_id: str, caller: WriterDep, ctx: ContextDep) -> JobDetail:
    """Keep a waiting job out of the queue until released (Slurm's ``scontrol hold``); 409
    if it is not waiting or already held."""

    def plan(stored: StoredJob) -> tuple[Amendment, str]:
        change = Amendment(to_state=_out_of_line(stored), hold=user_hold(caller.user, stored.id))
        return change, f"held by {caller.user}: out of the queue until released"

    return _amend(ctx, job_id, caller, Action.HOLD, plan)


@router.post("/{job_id:path}/release", response_model=JobDetail)
def release(job_id: str, caller: WriterDep, ctx: ContextDep) -> JobDetail:
    """Let a held job into the queue again; its wait budget starts when it enters. 409 if
    no user holds it."""

    def plan(_stored: StoredJob) -> tuple[Amendment, str]:
        return Amendment(release=True), (
            f"released by {caller.user}: enters the queue on the next pass, its wait "
            "budget starting then"
        )

    return _amend(ctx, job_id, caller, Action.RELEASE, plan)


@router.patch("/{job_id:path}", response_model=JobDetail)
def update(job_id: str, body: JobUpdate, caller: WriterDep, ctx: ContextDep) -> JobDetail:
    """Change a waiting job's GPUs, time limit or name, checked as a submission is; its
    wait budget is computed again when the controller admits it. 409 if it is not waiting."""
    wanted: dict[str, Any] = body.model_dump(exclude_none=True)

    def plan(stored: StoredJob) -> tuple[Amendment, str] | None:
        job = stored.job
        before = {"gpus": job.gpus, "time_limit_s": time_limit_of(job), "name": job.name}
        what = describe_update(before, wanted)
        if not what:
            return None  # already so: nothing to write
        extra = dict(job.extra)
        if "time_limit_s" in wanted:
            extra[TIME_LIMIT] = f"{wanted['time_limit_s']:g}"
        try:
            spec = replace(
                _spec_of(stored),
                gpus=wanted.get("gpus", job.gpus),
                name=wanted.get("name", job.name),
                extra=extra,
            )
        except PermanentError as exc:  # the spec's own rules (pods share GPUs equally)
            raise HTTPException(422, str(exc)) from None
        if spec.gpus != job.gpus and spec.gpus > 0 and ctx.quote is not None:
            submit_ceilings.check(ctx, spec)  # the new size's price, as at submit
        queued = stored.state is JobState.QUEUED
        change = Amendment(
            to_state=_out_of_line(stored),
            gpus=spec.gpus if spec.gpus != job.gpus else None,
            name=spec.name if spec.name != job.name else None,
            extra=extra if extra != dict(job.extra) else None,
            rebudget=True,
        )
        then = (
            "; back out of the line until admitted again with a new wait budget" if queued else ""
        )
        return change, f"updated by {caller.user}: {what}{then}"

    return _amend(ctx, job_id, caller, Action.UPDATE, plan)


def _spec_of(stored: StoredJob) -> JobSpec:
    """What the job was submitted with, as a new submission would say it."""
    return replace(
        JobSpec.from_job(stored.job),
        id=None,
        image=stored.image,
        command=stored.command,
        declared_runtime=stored.declared_runtime,
    )


def _requeued_spec(ctx: ApiContext, stored: StoredJob) -> JobSpec:
    """The ended job's spec for a new submission; its ``:ok`` dependencies must still be
    able to succeed, as at submit (409 otherwise)."""
    spec = _spec_of(stored)
    states = ctx.store.jobs.states_of(d.job_id for d in spec.after)
    for dep in spec.after:
        state = states.get(dep.job_id)
        if dep.kind is AfterKind.OK and state in (JobState.FAILED, JobState.CANCELLED):
            assert state is not None
            raise HTTPException(
                409,
                f"after {dep}: job {dep.job_id} already {state.value}, so a job that runs "
                "only if it succeeds could never run",
            )
    return spec


@router.post(
    "/{job_id:path}/requeue",
    status_code=201,
    response_model=JobDetail,
    responses={201: {"description": "The new job, submitted with the ended job's spec."}},
)
async def requeue(job_id: str, caller: WriterDep, ctx: ContextDep, response: Response) -> JobDetail:
    """Submit an ended job again (succeeded, failed or cancelled) as a new job with the same
    spec; the ended job keeps its history and a note naming the new one. 409 if it has not
    ended."""
    stored = await run_in_threadpool(_own, ctx, job_id, caller, Action.REQUEUE.value)
    _check(Action.REQUEUE, stored)
    spec = await run_in_threadpool(_requeued_spec, ctx, stored)
    if spec.gpus > 0 and ctx.quote is not None:
        await run_in_threadpool(submit_ceilings.check, ctx, spec)
    if ctx.submissions is not None:
        made = await ctx.submissions.submit_async(spec, None, caller.user)
    else:
        made = await run_in_threadpool(ctx.store.submissions.submit, spec, actor=caller.user)
    new = made.job
    await run_in_threadpool(
        ctx.store.lifecycle.amend,
        stored.id,
        Amendment(),
        reason=f"requeued by {caller.user} as job {new.id}",
        actor=caller.user,
        at=ctx.clock.now(),
    )
    response.status_code = 201
    return detail(ctx, new, fresh=True)
