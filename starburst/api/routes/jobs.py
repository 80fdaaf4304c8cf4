"""``/v1/jobs``: submit, list, status, explain, logs and cancel jobs.

Invariants:
- Submission is idempotent per caller: an ``Idempotency-Key`` header already used by the same
  user for the same job returns that job with 200 instead of creating another (201); used
  for a different job, it is 409 naming the fields that differ (``core.idempotency``). Keys
  are scoped by user (stored as ``<user>/<key>``), so one user's key never reveals another
  user's job.
- Users see and cancel only their own jobs; another user's job is 404, as an unknown one is
  (ids are not enumerable). Finance and admins see every job; only owners and admins cancel.
  Finance is read-only: it submits, cancels and reads the output of no job, and its views
  carry no command and no output (a failure's cause only).
- The API never schedules: a cancel is a state change with the reason
  ``cancelled by <user>``; the controller stops the job on its next pass.
- Job ids may contain slashes (a Kubernetes Job's id is ``<namespace>/<name>``): every
  ``/v1/jobs/{id}...`` route takes the id as a path, plain (``/v1/jobs/ml/q3/explain``) or
  encoded (``ml%2Fq3``). The one exception: ``GET /v1/jobs/{id}`` of an id whose last part
  is ``explain`` or ``logs`` answers that suffix route for the shorter id.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Query, Response
from fastapi.responses import PlainTextResponse
from starlette.concurrency import run_in_threadpool

from starburst.api import budget_notes, submit_ceilings
from starburst.api.context import ApiContext
from starburst.api.deps import (
    CallerDep,
    ContextDep,
    WriterDep,
    is_privileged,
    refuse_read_only,
    sees_commands,
)
from starburst.api.outlooks import Outlooks
from starburst.api.schemas.jobs import (
    CloudRun,
    EventOut,
    Explanation,
    JobCost,
    JobDetail,
    JobPage,
    JobSubmit,
    JobSummary,
    PlacementPart,
    summary_fields,
    when,
)
from starburst.core.billing import per_currency
from starburst.core.dependencies import AfterKind, Dependency
from starburst.core.errors import ConfigError
from starburst.core.failure import cause_of, exit_code_in
from starburst.core.idempotency import differences
from starburst.core.lifecycle import JobState
from starburst.core.outlook import Outlook
from starburst.core.records import (
    FIRST_VERSION,
    JobEvent,
    JobNotFound,
    JobSpec,
    Principal,
    Role,
    StaleVersion,
    StoredJob,
    Submission,
)
from starburst.core.state_filter import StateFilter, parse_filter
from starburst.core.submit_limits import check_depth, dependency_depth
from starburst.core.window import parse_moment

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

CENT = Decimal("0.01")
_WAITING = (JobState.SUBMITTED, JobState.QUEUED)
_SHOWN = 5  # candidates listed for an ambiguous prefix or name


def _visible(ctx: ApiContext, job_id: str, caller: Principal) -> StoredJob:
    """The job ``job_id`` names for ``caller``: its exact id, else the name of one of the
    caller's own jobs, else a unique id prefix (of a job the caller may see) — a name wins
    over a prefix it happens to be of another job's id, as in Docker; several matches are 409
    listing them."""
    privileged = is_privileged(caller)
    try:
        stored = ctx.store.jobs.get(job_id)
        if privileged or stored.job.user == caller.user:
            return stored
    except JobNotFound:
        pass
    found = ctx.store.jobs.lookup(job_id, owner=caller.user, everyone=privileged, limit=_SHOWN + 1)
    if not found:
        raise JobNotFound(job_id)
    named = [s for s in found if s.job.name == job_id and s.job.user == caller.user]
    if named:
        found = named
    if len(found) > 1:
        listed = "; ".join(f"{s.id} ({s.job.name or '-'}, {s.state.value})" for s in found[:_SHOWN])
        more = " and more" if len(found) > _SHOWN else ""
        raise HTTPException(
            409, f"{job_id!r} matches several jobs: {listed}{more}; give more of the id"
        )
    return found[0]


def _cloud_runs(
    ctx: ApiContext, stored: StoredJob
) -> tuple[list[CloudRun], dict[str, Decimal], str]:
    """The job's cloud launches and what the ledger metered for each, and its totals per
    currency (the one cost path: every report sums the same entries)."""
    metered = ctx.store.ledger.job_costs([stored.id]).get(stored.id, {})
    runs, currency = [], "USD"
    for launch in ctx.store.ledger.launches(stored.id):
        currency = launch.currency
        cost = metered.get((launch.id, launch.currency), Decimal(0))
        runs.append(
            CloudRun(
                provider=launch.provider,
                region=launch.region,
                accelerators=launch.accelerators,
                hourly_price=str(launch.hourly_price),
                currency=launch.currency,
                spot=launch.spot,
                status=launch.status,
                launched_at=when(launch.launched_at),
                started_at=when(launch.started_at),
                ended_at=when(launch.ended_at),
                cost=str(cost.quantize(CENT)),
            )
        )
    totals = per_currency(metered)
    if not runs and len(totals) == 1:  # entries of no launch, in one currency
        currency = next(iter(totals))
    return runs, totals, currency


def never_ran(stored: StoredJob) -> bool:
    """Whether the job cannot have been placed, launched or metered: at its first version
    (as submitted), or one change later and still waiting (admitted into the queue, held or
    updated). Running takes two changes from a submission, and coming back to the queue a
    third, so a job at a later version in ``queued`` or ``submitted`` may have run before."""
    return stored.version == FIRST_VERSION or (
        stored.version == FIRST_VERSION + 1 and stored.state in _WAITING
    )


def detail(
    ctx: ApiContext, stored: StoredJob, *, fresh: bool = False, redacted: bool = False
) -> JobDetail:
    """The job's full view; ``fresh``: it ``never_ran``, so it has no launch, placement or
    cost to read (three queries saved on every submission, and on every repeat of one that
    has not run). ``redacted``: without its command and output (for finance)."""
    runs, totals, currency = ([], {}, "USD") if fresh else _cloud_runs(ctx, stored)
    placement = [] if fresh else ctx.store.jobs.placement(stored.id)
    parts = [
        PlacementPart(
            node=p.node, node_name=p.node_name, gpus=p.gpus, cpus=p.cpus, memory_mb=p.memory_mb
        )
        for p in placement
    ]
    job = stored.job
    failure = (
        _failure(ctx.store.jobs.events(stored.id)) if stored.state is JobState.FAILED else None
    )
    return JobDetail(
        **summary_fields(stored, Outlooks(ctx).of(stored)),
        command=None if redacted else stored.command,
        cpus=job.cpus,
        elapsed_s=elapsed(stored, ctx.clock.now()),
        exit_code=exit_code(stored, failure),
        failure=cause_of(failure) if failure and redacted else failure,
        memory_mb=job.memory_mb,
        estimate_s=job.estimate,
        runtime_s=job.runtime,
        version=stored.version,
        placement=parts,
        cloud=runs,
        cost_so_far=str(totals.get(currency, Decimal(0)).quantize(CENT)),
        currency=currency,
        costs=[JobCost(amount=str(a.quantize(CENT)), currency=c) for c, a in totals.items()],
    )


def _failure(events: list[JobEvent]) -> str | None:
    """The reason of the event that made the job fail (``starburst.core.failure``); a later
    note on the failed job (``requeued as ...``) is no state change and not its cause."""
    return next(
        (
            e.reason
            for e in reversed(events)
            if e.to_state is JobState.FAILED and e.from_state is not JobState.FAILED
        ),
        None,
    )


def elapsed(stored: StoredJob, now: float) -> float | None:
    """How long its last run lasted: start to end, or to ``now`` while it runs."""
    if stored.started_at is None:
        return None
    end = stored.ended_at if stored.ended_at is not None else now
    return max(0.0, end - stored.started_at)


def exit_code(stored: StoredJob, failure: str | None) -> int | None:
    """0 for a success, a failure's exit code when its backend reported one, else None."""
    if stored.state is JobState.SUCCEEDED:
        return 0
    return exit_code_in(failure) if failure else None


def _owner(ctx: ApiContext, body: JobSubmit, caller: Principal) -> tuple[str, str | None]:
    """Who the job belongs to and its team; only admins submit for someone else or
    into a team other than their own."""
    user = body.user or caller.user
    admin = caller.role is Role.ADMIN
    if user != caller.user and not admin:
        raise HTTPException(403, f"{caller.user} cannot submit jobs as {user}")
    team = caller.team if user == caller.user else None
    if user != caller.user:
        known = ctx.store.accounts.user(user)
        team = known.team if known is not None else None
    if body.team is not None and body.team != team and not admin:
        # a user without a team may not pick one: teams (and their budgets) are assigned
        where = f"in team {team}" if team is not None else "in no team (an admin assigns one)"
        raise HTTPException(403, f"{user} is {where}, not {body.team}")
    return user, body.team or team


def _dependencies(ctx: ApiContext, body: JobSubmit, caller: Principal) -> tuple[Dependency, ...]:
    """``after`` resolved to job ids as every id is (exact, prefix or name). An unknown one
    is 404, as an unknown id is everywhere; one that already failed or was cancelled under
    ``:ok`` is 409 (it could never run); a chain of unfinished jobs deeper than
    ``max_dependency_depth`` is 422 (``core.submit_limits``). A new job can only wait for
    jobs that exist already, so no cycle can form."""
    resolved: list[Dependency] = []
    for dep in body.dependencies():
        try:
            target = _visible(ctx, dep.job_id, caller)
        except JobNotFound:
            raise HTTPException(
                404,
                f"after {dep}: no job {dep.job_id!r} (give a job id, a unique id prefix or "
                "the name of one of your jobs)",
            ) from None
        if dep.kind is AfterKind.OK and target.state in (JobState.FAILED, JobState.CANCELLED):
            raise HTTPException(
                409,
                f"after {dep}: job {target.id} already {target.state.value}, so a job that "
                "runs only if it succeeds could never run",
            )
        resolved.append(Dependency(target.id, dep.kind))
    limits = ctx.settings.submit_limits()
    if limits.dependency_depth:
        ids = [d.job_id for d in resolved]
        check_depth(dependency_depth(ids, ctx.store.jobs.waits_of, limits.dependency_depth), limits)
    return tuple(dict.fromkeys(resolved))


def _runnable_here(ctx: ApiContext, body: JobSubmit) -> None:
    """Refuse (422) what this server's cluster cannot run: Kubernetes runs containers, so it
    needs an image, and its pods cannot see a directory on the submitter's machine. The
    local cluster runs the command on the host: neither matters there."""
    if ctx.settings.cluster != "kubernetes":
        return
    if body.image is None:
        raise HTTPException(
            422,
            "this server runs jobs on Kubernetes, which needs a container image: give "
            "--image (or image: / resources.image_id: docker:IMAGE in a job file)",
        )
    if body.workdir is not None:
        raise HTTPException(
            422,
            f"workdir {body.workdir}: this server runs jobs on Kubernetes, whose pods cannot "
            "see a directory on your machine; put the code in the image",
        )


@router.post(
    "",
    status_code=201,
    response_model=JobDetail,
    responses={200: {"description": "The job this Idempotency-Key already created"}},
)
async def submit(
    body: JobSubmit,
    caller: WriterDep,
    ctx: ContextDep,
    response: Response,
    idempotency_key: Annotated[str | None, Header(max_length=128)] = None,
) -> JobDetail:
    """Submit a job; it waits in ``submitted`` until the controller admits it."""
    result = await accept(ctx, body, caller, idempotency_key)
    status, out = await answer(ctx, result)
    response.status_code = status
    return out


async def accept(
    ctx: ApiContext, body: JobSubmit, caller: Principal, idempotency_key: str | None
) -> Submission:
    """Store a submission (or find the job its key already made). Shared by the route and
    its fast path (``starburst.api.fastsubmit``); raises before anything is stored."""
    spec, _ = await checked(ctx, body, caller)
    key = f"{spec.user}/{idempotency_key}" if idempotency_key else None
    if ctx.submissions is not None:  # committed together with concurrent submissions
        result = await ctx.submissions.submit_async(spec, key, caller.user)
    else:
        result = await run_in_threadpool(
            ctx.store.submissions.submit, spec, idempotency_key=key, actor=caller.user
        )
    if not result.created and (changed := differences(spec, result.job)):
        raise HTTPException(
            409,
            f"idempotency key {idempotency_key!r} already made job {result.job.id}, which "
            f"differs in {', '.join(changed)}: resubmit the same job to get it back, or use "
            "a new key for a new job",
        )
    return result


async def checked(
    ctx: ApiContext, body: JobSubmit, caller: Principal
) -> tuple[JobSpec, submit_ceilings.Priced]:
    """The job a submission would store and what it would cost if it burst; raises the
    submission's 4xx (owner, cluster, dependencies, GPU type, cloud choice, ceilings).
    Shared by ``accept`` and the quote (``starburst.api.routes.quote``)."""
    refuse_read_only(caller, "submit jobs")
    # async: the common case (your own job, a new key, no team price ceiling) touches the
    # database only in the shared batch, so it holds no thread for the rest
    if body.user in (None, caller.user):
        user, team = _owner(ctx, body, caller)
    else:
        user, team = await run_in_threadpool(_owner, ctx, body, caller)
    _runnable_here(ctx, body)
    after = await run_in_threadpool(_dependencies, ctx, body, caller) if body.after else ()
    spec = body.to_spec(user, team, after)
    priced = submit_ceilings.Priced(None, None)
    if spec.gpus > 0 and ctx.quote is not None:  # the job ceiling is on by default
        if submit_ceilings.waits(ctx, spec):
            priced = await run_in_threadpool(submit_ceilings.check, ctx, spec)
        else:
            priced = submit_ceilings.check(ctx, spec)
    return spec, priced


async def answer(ctx: ApiContext, result: Submission) -> tuple[int, JobDetail]:
    """201 and the new job, or 200 and the job the submission's key already made."""
    status = 201 if result.created else 200
    if result.created or result.job.version == FIRST_VERSION:  # nothing to read: at once
        return status, detail(ctx, result.job, fresh=True)
    # a sweep resent after its script died repeats the keys of jobs admitted since
    fresh = never_ran(result.job)
    return status, await run_in_threadpool(detail, ctx, result.job, fresh=fresh)


@dataclass(frozen=True, slots=True)
class _Listing:
    """What a listing keeps: states, owner, team, name glob, and the window ``[since,
    until)`` a job must overlap (submitted before ``until``, not ended before ``since``)."""

    wanted: StateFilter
    user: str | None
    team: str | None
    name: str | None
    since: float | None = None
    until: float | None = None

    def keeps(self, stored: StoredJob) -> bool:
        if not self.wanted.keeps(stored.state, stored.held):
            return False
        if self.until is not None and stored.job.submit_time >= self.until:
            return False
        return self.since is None or stored.ended_at is None or stored.ended_at >= self.since


def _page(ctx: ApiContext, listing: _Listing, limit: int, cursor: str | None) -> JobPage:
    """One keyset page of the store, filtered by owner and name in the database (and held
    jobs: ``held`` alone in the database too, mixed with other states on the page), by the
    window on the page; each job with its elapsed time, exit code and cost (``sacct``'s
    columns: one ledger read per page, one event read per failed job)."""
    wanted = listing.wanted
    held = True if wanted.only_held and wanted.states == (JobState.SUBMITTED,) else None
    page = ctx.store.jobs.queue(
        limit=limit,
        cursor=cursor,
        states=wanted.states,
        user=listing.user,
        team=listing.team,
        name=listing.name,
        held=held,
    )
    jobs = [s for s in page.jobs if listing.keeps(s)]
    outlooks = Outlooks(ctx)
    now = ctx.clock.now()
    metered = ctx.store.ledger.job_costs([s.id for s in jobs]) if jobs else {}
    out = []
    for stored in jobs:
        failure = None
        if stored.state is JobState.FAILED:
            failure = _failure(ctx.store.jobs.events(stored.id))
        totals = per_currency(metered.get(stored.id, {}))
        out.append(
            JobSummary(
                **summary_fields(stored, outlooks.of(stored)),
                elapsed_s=elapsed(stored, now),
                exit_code=exit_code(stored, failure),
                costs=[
                    JobCost(amount=str(a.quantize(CENT)), currency=c) for c, a in totals.items()
                ],
            )
        )
    return JobPage(jobs=out, next_cursor=page.next_cursor)


@router.get("", response_model=JobPage)
def list_jobs(
    caller: CallerDep,
    ctx: ContextDep,
    state: Annotated[
        list[str] | None,
        Query(
            description="Repeat for several; a state, held (submitted jobs held out of the "
            "queue), or a group: running, waiting, active, ended."
        ),
    ] = None,
    user: str | None = None,
    team: str | None = None,
    name: Annotated[str | None, Query(description="A glob on the job name: sweep-*")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: str | None = None,
    since: Annotated[
        str | None,
        Query(
            max_length=64,
            description="Only jobs not ended before this moment: a duration back from now "
            "(2h, 3d), an ISO date or datetime (UTC unless it names a zone).",
        ),
    ] = None,
    until: Annotated[
        str | None,
        Query(max_length=64, description="Only jobs submitted before this moment (same forms)."),
    ] = None,
) -> JobPage:
    """Jobs in queue order (queued time, then id), all states unless ``state`` is given
    (an unknown state is 400 listing the valid ones), each with its elapsed time, exit code
    and cost; ``since``/``until`` keep the jobs active in that window (422 on bad text)."""
    wanted = parse_filter(state or [])
    if not wanted.states:
        wanted = StateFilter(tuple(JobState))
    if not is_privileged(caller):
        if user not in (None, caller.user):
            raise HTTPException(403, f"{caller.user} can list only their own jobs")
        user = caller.user
    now = ctx.clock.now()
    start = parse_moment(since, now=now, name="since") if since else None
    end = parse_moment(until, now=now, name="until") if until else None
    if start is not None and end is not None and end <= start:
        raise ConfigError(f"until ({until}) must be after since ({since})")
    listing = _Listing(wanted, user, team, name, start, end)
    return _page(ctx, listing, limit, cursor)


def status(job_id: str, caller: CallerDep, ctx: ContextDep) -> JobDetail:
    """State, times, estimate, wait budget, where it runs and what it has cost."""
    return detail(ctx, _visible(ctx, job_id, caller), redacted=not sees_commands(caller))


def _summary(ctx: ApiContext, stored: StoredJob, last_reason: str) -> tuple[str, Outlook]:
    """The sentence ``explain`` opens with, and the job's outlook (``api.outlooks``)."""
    seen = Outlooks(ctx).of(stored)
    if stored.state in _WAITING:
        return seen.summary, seen
    if stored.state is JobState.RUNNING_ONPREM:
        return f"running on-prem since {when(stored.started_at)}: {last_reason}", seen
    if stored.state in (JobState.BURSTING, JobState.RUNNING_CLOUD):
        return f"{stored.state.value.replace('_', ' ')}: {last_reason}", seen
    return f"{stored.state.value}: {last_reason}", seen


@router.get("/{job_id:path}/explain", response_model=Explanation)
def explain(job_id: str, caller: CallerDep, ctx: ContextDep) -> Explanation:
    """The job's history with each decision's reason, and where its wait budget stands."""
    stored = _visible(ctx, job_id, caller)
    events = ctx.store.jobs.events(stored.id)
    summary, seen = _summary(ctx, stored, cause_of(events[-1].reason) if events else "")
    fields = summary_fields(stored, seen)
    failure = _failure(events) if stored.state is JobState.FAILED else None
    computed = budget_notes.computed(stored, events)  # from the reasons as recorded
    if not sees_commands(caller):  # the causes, not the output they quote
        failure = cause_of(failure) if failure else None
        events = [replace(e, reason=cause_of(e.reason)) for e in events]
    return Explanation(
        id=stored.id,
        state=stored.state,
        summary=summary,
        wait_budget_s=fields["wait_budget_s"],
        never_bursts=fields["never_bursts"],
        waited_s=seen.waited,
        plan=seen.plan,
        bursts_at=fields["bursts_at"],
        budget_expires_at=fields["budget_expires_at"],
        predicted_runtime_s=stored.predicted_runtime,
        budget_computed=computed,
        coefficient=budget_notes.coefficient_note(ctx.store.tuning),
        events=[EventOut.of(e) for e in events],
        exit_code=exit_code(stored, failure),
        failure=failure,
    )


@router.post("/{job_id:path}/cancel", response_model=JobDetail)
def cancel(job_id: str, caller: WriterDep, ctx: ContextDep) -> JobDetail:
    """Cancel a waiting or running job; 409 if it already ended."""
    for _ in range(3):
        stored = _visible(ctx, job_id, caller)
        job_id = stored.id  # a prefix or a name, resolved
        if stored.job.user != caller.user and caller.role is not Role.ADMIN:
            raise HTTPException(403, f"only {stored.job.user} or an admin can cancel {job_id}")
        if stored.state.terminal:
            raise HTTPException(
                409,
                f"job {job_id} already {stored.state.value}; only waiting "
                "or running jobs can be cancelled",
            )
        try:
            moved = ctx.store.lifecycle.transition(
                job_id,
                JobState.CANCELLED,
                reason=f"cancelled by {caller.user}",
                actor=caller.user,
                expected_version=stored.version,
                at=ctx.clock.now(),
            )
        except StaleVersion:
            continue  # the controller moved it meanwhile: look again
        return detail(ctx, moved)
    raise HTTPException(409, f"job {job_id} keeps changing; try again")


@router.get("/{job_id:path}/logs", response_class=PlainTextResponse)
def job_logs(
    job_id: str,
    ctx: ContextDep,
    caller: WriterDep,
    tail: Annotated[
        int | None,
        Query(
            ge=0,
            le=1_000_000,
            description=("Only the newest lines (default: all the backend keeps)."),
        ),
    ] = None,
) -> PlainTextResponse:
    """What the job printed, from where it ran (on-prem, or its latest cloud launch)."""
    stored = _visible(ctx, job_id, caller)
    if ctx.job_logs is None:
        raise HTTPException(
            409,
            "this API serves no job output; ask the API of "
            "`starburst server` or of a `starburst api` with backends",
        )
    reader = ctx.job_logs()
    return PlainTextResponse(reader.read(stored, ctx.store.ledger.launches(stored.id), tail))


# Registered last: ``{job_id:path}`` also matches "<id>/explain" and "<id>/logs", which the
# routes above must get first.
router.get("/{job_id:path}", response_model=JobDetail)(status)
