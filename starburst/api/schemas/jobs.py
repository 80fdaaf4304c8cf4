"""Job schemas: what a submission may say and what a job looks like over HTTP.

Terms: times are UTC ISO-8601 datetimes; durations are seconds (``*_s``); money is a decimal
string (``"12.50"``) so no float rounding reaches a bill. ``command`` is one shell string
(a list of arguments is joined with shell quoting), run by ``/bin/sh -c`` on-prem and as the
SkyPilot task's ``run`` in the cloud (a SkyPilot task file's ``setup`` and ``run`` arrive as
``bash -c '…'``: ``starburst.cli.jobfile``); it travels in ``extra`` with the image and
the env, as the backends expect (``extra["command"]``, ``extra["image"]``, ``extra["env"]``
as JSON).
"""

from __future__ import annotations

import json
import math
import shlex
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from starburst.api.budget_notes import CoefficientNote
from starburst.api.schemas.cloud_choice import CloudChoice
from starburst.api.schemas.fields import (
    MAX_CPUS,
    MAX_GPUS,
    MAX_MEMORY_MB,
    MAX_RUNTIME_S,
    AccountName,
    CommandArgs,
    CommandText,
    EnvVars,
    Label64,
    Label128,
    Label256,
    WholeNumber,
    encodable,
    whole_number,
)
from starburst.core.dependencies import (
    AFTER_PATTERN,
    ARRAY_INDEX,
    MAX_ARRAY_INDEX,
    MAX_ARRAY_LIMIT,
    MAX_DEPENDENCIES,
    Dependency,
    parse_many,
)
from starburst.core.errors import ConfigError
from starburst.core.lifecycle import JobState
from starburst.core.outlook import Outlook
from starburst.core.records import JobEvent, JobSpec, StoredJob
from starburst.core.time_limit import TIME_LIMIT

Name = Annotated[str, Field(min_length=1, max_length=256)]
ArrayLimit = Annotated[int, Field(ge=1, le=MAX_ARRAY_LIMIT), BeforeValidator(whole_number)]
ArrayIndex = Annotated[int, Field(ge=0, le=MAX_ARRAY_INDEX), BeforeValidator(whole_number)]
_NEEDS_ARRAY: dict[str, Any] = {
    "properties": {"array": {"type": "string"}},
    "required": ["array"],
}


def when(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


class JobSubmit(BaseModel):
    """``POST /v1/jobs``. ``user`` may be set by admins only (submitting on behalf).

    Limits (``fields.py``): numbers finite and bounded, no control characters in names, a
    command of at most 64 KiB without NUL bytes, at most 64 env variables.
    """

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        # what ``_limit_needs_array`` enforces, told to clients and fuzzers in the schema
        json_schema_extra={
            "dependentSchemas": {
                "array_limit": {
                    "anyOf": [{"properties": {"array_limit": {"type": "null"}}}, _NEEDS_ARRAY]
                },
                "array_index": {
                    "anyOf": [{"properties": {"array_index": {"type": "null"}}}, _NEEDS_ARRAY]
                },
            }
        },
    )

    image: Label256 | None = Field(
        default=None,
        description="The container image: needed on Kubernetes (refused there without one); "
        "the local cluster runs the command on the host; in the cloud, without one, the "
        "command runs on SkyPilot's default machine image.",
    )
    command: CommandText | CommandArgs
    gpus: WholeNumber = Field(ge=0, le=MAX_GPUS)
    name: Label256 | None = None
    cpus: float = Field(default=0.0, ge=0, le=MAX_CPUS, strict=True)  # strict: no true → 1.0
    memory_mb: float = Field(default=0.0, ge=0, le=MAX_MEMORY_MB, strict=True)
    gpu_type: Label64 | None = None
    declared_runtime_s: float | None = Field(default=None, gt=0, le=MAX_RUNTIME_S, strict=True)
    workdir: Annotated[str, Field(min_length=1, max_length=4096, pattern=r"^/[^\x00]*$")] | None = (
        Field(
            default=None,
            description="An absolute directory the job runs in (local "
            "cluster; it must be readable by the user local jobs run as).",
        )
    )
    time_limit_s: float | None = Field(
        default=None,
        gt=0,
        le=MAX_RUNTIME_S,
        strict=True,
        description="A hard limit: the job is ended when it has run this long (on-prem).",
    )
    env: EnvVars = Field(default_factory=dict)
    team: AccountName | None = None
    user: AccountName | None = None
    project: Label128 | None = Field(
        default=None, description="Cost reports group by it (by=project)."
    )
    after: list[
        Annotated[
            str,
            Field(min_length=1, max_length=300, pattern=AFTER_PATTERN),
            AfterValidator(encodable),
        ]
    ] = Field(
        default_factory=list,
        max_length=MAX_DEPENDENCIES,
        description="Jobs to wait for: `ID` (until it ends) or `ID:ok` (until it succeeds); "
        "an id, a unique id prefix or the name of one of your jobs. The wait budget starts "
        "once they are met.",
    )
    array: Label128 | None = Field(
        default=None, description="The array this job belongs to (with array_limit)."
    )
    cloud_choice: CloudChoice | None = Field(
        default=None, description="Where it may run if it bursts (ignored on-prem)."
    )
    array_limit: ArrayLimit | None = Field(
        default=None,
        description="At most this many of the array's jobs queued or running at once.",
    )
    array_index: ArrayIndex | None = Field(
        default=None,
        description="This job's index in its array: elements entering the queue at the same "
        "instant start in index order.",
    )

    @field_validator("after")
    @classmethod
    def _dependencies(cls, value: list[str]) -> list[str]:
        try:
            parse_many(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _limit_needs_array(self) -> JobSubmit:
        if self.array_limit is not None and self.array is None:
            raise ValueError("array_limit needs an array to limit")
        if self.array_index is not None and self.array is None:
            raise ValueError("array_index needs an array to index")
        return self

    def dependencies(self) -> tuple[Dependency, ...]:
        """``after`` as typed (targets not resolved to ids yet)."""
        return parse_many(self.after)

    @field_validator("command")
    @classmethod
    def _not_empty(cls, value: str | list[str]) -> str | list[str]:
        text = value if isinstance(value, str) else shlex.join(value)
        if not text.strip():
            raise ValueError("must be a non-empty command")
        return value

    def command_line(self) -> str:
        return self.command if isinstance(self.command, str) else shlex.join(self.command)

    def to_spec(self, user: str, team: str | None, after: tuple[Dependency, ...] = ()) -> JobSpec:
        """The spec; ``after`` resolved to job ids, the array scoped to its user."""
        extra = {"command": self.command_line()}
        if self.image is not None:
            extra["image"] = self.image
        if self.cloud_choice is not None:
            extra.update(self.cloud_choice.extra())
        if self.env:
            extra["env"] = json.dumps(self.env, sort_keys=True)
        if self.project:
            extra["project"] = self.project
        if self.workdir is not None:
            extra["workdir"] = self.workdir
        if self.time_limit_s is not None:
            extra[TIME_LIMIT] = f"{self.time_limit_s:g}"
        if self.array_index is not None:
            extra[ARRAY_INDEX] = str(self.array_index)
        return JobSpec(
            gpus=self.gpus,
            name=self.name,
            user=user,
            team=team,
            image=self.image,
            command=self.command_line(),
            cpus=self.cpus,
            memory_mb=self.memory_mb,
            gpu_type=self.gpu_type,
            declared_runtime=self.declared_runtime_s,
            extra=extra,
            after=after,
            array=f"{user}/{self.array}" if self.array is not None else None,
            array_limit=self.array_limit,
        )


class JobCost(BaseModel):
    """What the ledger metered for a job in one currency (decimal string)."""

    amount: str
    currency: str


class JobSummary(BaseModel):
    """One job in a listing."""

    id: str
    name: str | None
    user: str | None
    team: str | None
    state: JobState
    gpus: int
    gpu_type: str | None
    image: str | None
    submitted_at: datetime
    queued_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    predicted_runtime_s: float | None
    wait_budget_s: float | None = Field(
        description="Null when not yet set, or when the job never bursts (never_bursts)."
    )
    never_bursts: bool = Field(description="An infinite wait budget (cluster-only policy).")
    budget_expires_at: datetime | None
    ran_on: str | None
    held: str | None = Field(
        default=None,
        description="Why a submitted job is held out of the queue (dependencies, array limit).",
    )
    after: list[str] = Field(
        default_factory=list, description="Jobs it waits for: `ID`, or `ID:ok`."
    )
    array: str | None = None
    array_limit: int | None = None
    array_index: int | None = None
    plan: str = Field(
        default="",
        description="Where it goes next and when, in words: the same in every view "
        "(``starburst.core.outlook``).",
    )
    bursts_at: datetime | None = Field(
        default=None,
        description="When it goes to the cloud unless GPUs free up on-prem first; null when "
        "nothing sends it there (a hold, a cluster-only policy, not waiting).",
    )
    elapsed_s: float | None = Field(
        default=None,
        description="How long it ran (its last run): start to end, or to now while it runs; "
        "null if it never started.",
    )
    exit_code: int | None = Field(
        default=None,
        description="0 for a job that succeeded; a failed job's exit code when its backend "
        "reported one; null otherwise.",
    )
    costs: list[JobCost] = Field(
        default_factory=list,
        description="Every currency the job was billed in, each with its own total, sorted "
        "by currency (amounts in different currencies are never added).",
    )

    @classmethod
    def of(cls, stored: StoredJob, seen: Outlook) -> JobSummary:
        return cls(**summary_fields(stored, seen))


def summary_fields(stored: StoredJob, seen: Outlook) -> dict[str, Any]:
    """The summary's fields; ``seen`` is the job's outlook (``api.outlooks``)."""
    job = stored.job
    budget = stored.wait_budget
    finite = budget is not None and math.isfinite(budget)
    expires = None
    if budget is not None and finite and stored.state in (JobState.SUBMITTED, JobState.QUEUED):
        expires = when(stored.queued_at + budget)
    return {
        "id": job.id,
        "name": job.name,
        "user": job.user,
        "team": job.team,
        "state": stored.state,
        "gpus": job.gpus,
        "gpu_type": job.gpu_type,
        "image": stored.image,
        "submitted_at": when(job.submit_time),
        "queued_at": when(stored.queued_at),
        "started_at": when(stored.started_at),
        "ended_at": when(stored.ended_at),
        "predicted_runtime_s": stored.predicted_runtime,
        "wait_budget_s": budget if finite else None,
        "never_bursts": budget is not None and not finite,
        "budget_expires_at": expires,
        "ran_on": stored.ran_on,
        "held": stored.held,
        "after": [str(d) for d in job.after],
        "array": job.array,
        "array_limit": job.array_limit,
        "array_index": job.array_index,
        "plan": seen.plan,
        "bursts_at": when(seen.bursts_at),
    }


class PlacementPart(BaseModel):
    node: int
    node_name: str | None
    gpus: int
    cpus: float
    memory_mb: float


class CloudRun(BaseModel):
    provider: str
    region: str | None
    accelerators: str
    hourly_price: str
    currency: str
    spot: bool
    status: str
    launched_at: datetime | None = Field(
        default=None, description="When it was requested: billing starts here."
    )
    started_at: datetime | None
    ended_at: datetime | None
    cost: str = Field(default="0.00", description="Metered in the ledger for this launch.")


class JobDetail(JobSummary):
    """``GET /v1/jobs/{id}``: the summary plus what it asked for, where it runs, its cost."""

    command: str | None
    cpus: float
    memory_mb: float
    estimate_s: float | None = Field(
        description="The runtime the waiting policy plans with: the prediction, else the "
        "user's declaration."
    )
    runtime_s: float | None
    version: int
    placement: list[PlacementPart]
    cloud: list[CloudRun]
    failure: str | None = Field(
        default=None,
        description=("Why a failed job failed: the cause, then its last lines of output."),
    )
    cost_so_far: str = Field(
        description=(
            "Cloud money metered in the ledger for this job in ``currency`` (launch to end, "
            "provisioning included; a running launch is metered in whole chunks)."
        )
    )
    currency: str = Field(
        description="The currency of ``cost_so_far``: its latest launch's (USD if none)."
    )


class JobPage(BaseModel):
    jobs: list[JobSummary]
    next_cursor: str | None = Field(
        description="Pass as ?cursor= for the next page; null on the last page. A page may "
        "hold fewer than `limit` jobs when filters skip many."
    )


class EventOut(BaseModel):
    at: datetime
    from_state: JobState | None
    to_state: JobState
    reason: str
    actor: str

    @classmethod
    def of(cls, event: JobEvent) -> EventOut:
        return cls(
            at=datetime.fromtimestamp(event.at, UTC),
            from_state=event.from_state,
            to_state=event.to_state,
            reason=event.reason,
            actor=event.actor,
        )


class Explanation(BaseModel):
    """``GET /v1/jobs/{id}/explain``: the history with reasons and where the job stands."""

    id: str
    state: JobState
    summary: str
    wait_budget_s: float | None
    never_bursts: bool
    waited_s: float | None
    budget_expires_at: datetime | None
    plan: str = Field(default="", description="Where it goes next and when (as everywhere).")
    bursts_at: datetime | None = None
    predicted_runtime_s: float | None
    budget_computed: str | None = Field(
        default=None,
        description="How its wait budget was computed when it was queued: GPUs × runtime "
        "estimate × the coefficient then (``starburst.api.budget_notes``).",
    )
    coefficient: CoefficientNote | None = Field(
        default=None,
        description="The policy's coefficient now, when it last changed and why (null: no "
        "controller has recorded one).",
    )
    exit_code: int | None = None
    failure: str | None = None
    events: list[EventOut]
