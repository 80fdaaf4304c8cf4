"""Job dependencies and array throttles: which held jobs may enter the queue now.

Terms:
- *dependency*: ``--after ID`` (Slurm's ``afterany``) waits for job ``ID`` to *end*, however
  it ends (succeeded, failed or cancelled); ``--after ID:ok`` (``afterok``) waits for it to
  *succeed*. A job may name several; it waits for all of them.
- *array throttle*: an array submitted with a limit (``--array 0-99%8``, Slurm's ``%N``).
  Its elements share ``Job.array``; each carries the limit in ``Job.array_limit``. A *slot*
  of the array is taken by an element from the moment it enters the queue until it ends —
  while it is queued, bursting, or running on-prem or in the cloud. So at most N elements run
  at once, on-prem and cloud together, and every start and every burst respects the limit.
- *held*: a job with an unmet dependency, or an array element with no free slot, has not
  entered the queue. It has no wait budget yet: its budget starts when it becomes *eligible*
  (its queue time is that instant), so a job never spends its budget waiting for another job.
  Held jobs are considered in submission order (submit time, array index, id:
  ``Job.submission_order``); the first ones get the free slots, so an array's
  elements are let in by index.
- *never satisfied*: an ``afterok`` dependency that failed or was cancelled can never be met.
  Slurm leaves such a job pending (``DependencyNeverSatisfied``) unless told to kill it;
  Starburst cancels it at once with the reason, so nothing waits for nothing. The
  cancellation counts as an unsuccessful end for its own dependents in the same call
  (``afterok`` ones are cancelled in turn, ``afterany`` ones are released).

Invariants: ``gate`` is pure (states and slot counts come in as arguments) and deterministic;
the simulator and the controller both call it. A dependency names a job that exists when the
dependent is submitted, so no cycle can form later; ``find_cycle`` checks traces, which name
jobs before they arrive.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from starburst.core.errors import ConfigError
from starburst.core.lifecycle import JobState

if TYPE_CHECKING:  # a job holds its dependencies: job.py imports this module
    from starburst.core.job import Job

#: where a submission carries its array index (``Job.array_index``) in ``JobSpec.extra``
ARRAY_INDEX = "array_index"
#: the most dependencies one job may name, and the largest array limit
MAX_DEPENDENCIES = 100
MAX_ARRAY_LIMIT = 10_000
#: the largest index an array element may have (``--array 0-999999999``)
MAX_ARRAY_INDEX = 999_999_999
#: a dependency's target as typed: an id, an id prefix or a job name, without control
#: characters, blanks (every character Python, JSON Schema or Rust regexes call whitespace),
#: commas or colons. Spelled out rather than ``\s`` so the API's schema, its validator and
#: this parser agree on every character.
TARGET = r"[^\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff,:]{1,256}"
#: one ``after`` entry as the API takes it: a target, optionally ``:ok`` or ``:any``
AFTER_PATTERN = rf"^{TARGET}(:([Oo][Kk]|[Aa][Nn][Yy]))?$"
_TARGET = re.compile(TARGET)


class AfterKind(StrEnum):
    """What a dependency waits for: the job's end (any outcome), or its success."""

    ANY = "any"
    OK = "ok"


@dataclass(frozen=True, slots=True)
class Dependency:
    """One ``--after``: the job waited for, and whether for its end or its success."""

    job_id: str
    kind: AfterKind = AfterKind.ANY

    def __str__(self) -> str:
        return self.job_id if self.kind is AfterKind.ANY else f"{self.job_id}:ok"


def parse_after(text: str) -> Dependency:
    """``ID`` (afterany), ``ID:any`` or ``ID:ok`` (afterok); anything else is a ConfigError."""
    raw = text.strip()
    target, _, kind = raw.partition(":")
    if not _TARGET.fullmatch(target):
        raise ConfigError(
            f"--after {text!r}: expected a job id, id prefix or name, optionally "
            "followed by :ok (run only if it succeeds) or :any (run once it ends)"
        )
    try:
        after = AfterKind(kind.lower()) if kind else AfterKind.ANY
    except ValueError:
        raise ConfigError(
            f"--after {text!r}: unknown condition {kind!r}; use :ok or :any"
        ) from None
    return Dependency(target, after)


def parse_many(texts: Iterable[str]) -> tuple[Dependency, ...]:
    """Several ``--after`` values (each may be comma-separated), without repeats."""
    found = [parse_after(t) for item in texts for t in item.split(",") if t.strip()]
    unique = tuple(dict.fromkeys(found))
    if len(unique) > MAX_DEPENDENCIES:
        raise ConfigError(f"a job may name at most {MAX_DEPENDENCIES} dependencies")
    return unique


def array_index_in(extra: Mapping[str, object]) -> int | None:
    """The array index a job's extras carry (``ARRAY_INDEX``), or None (not an element, or
    not a whole number)."""
    raw = extra.get(ARRAY_INDEX)
    try:
        return int(str(raw)) if raw is not None else None
    except ValueError:
        return None


def check_limit(limit: int) -> int:
    """An array limit must be a whole number of slots, at least one."""
    if not 1 <= limit <= MAX_ARRAY_LIMIT:
        raise ConfigError(f"an array limit must be between 1 and {MAX_ARRAY_LIMIT}, got {limit}")
    return limit


def find_cycle(after: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A dependency cycle among ``after`` (job id → ids it waits for), as a path that starts
    and ends with the same id, or None. Iterative, so a long chain cannot overflow."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(after):
        if root in state:
            continue
        path: list[str] = [root]
        todo: list[list[str]] = [sorted(after.get(root, ()), reverse=True)]
        state[root] = 1
        while todo:
            if not todo[-1]:
                state[path.pop()] = 2
                todo.pop()
                continue
            nxt = todo[-1].pop()
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                todo.append(sorted(after.get(nxt, ()), reverse=True))
    return None


def is_gated(job: Job) -> bool:
    """Whether the job must pass the gate before it enters the queue."""
    return bool(job.after) or job.array_limit is not None


@dataclass(slots=True)
class GateResult:
    """What ``gate`` decided: jobs that enter the queue now, jobs cancelled (with the reason)
    and jobs still held (with the reason ``explain`` shows)."""

    eligible: list[Job] = field(default_factory=list)
    cancelled: list[tuple[Job, str]] = field(default_factory=list)
    held: list[tuple[Job, str]] = field(default_factory=list)


_UNSUCCESSFUL = (JobState.FAILED, JobState.CANCELLED)


def gate(
    held: Sequence[Job], states: Mapping[str, JobState], in_flight: Mapping[str, int]
) -> GateResult:
    """Decide which of the ``held`` jobs enter the queue now.

    ``states`` gives the state of every job a held job depends on (a job missing from it has
    not ended); ``in_flight`` the slots each throttled array has taken (elements queued or
    running, not counting ``held``). Cancellations cascade within the call.
    """
    ended = {k: v for k, v in states.items() if v.terminal}
    pending = sorted(held, key=lambda j: j.submission_order())
    result = GateResult()
    changed = True
    while changed:  # a cancellation may doom another held job: repeat until nothing moves
        changed = False
        waiting = []
        for job in pending:
            doomed = _never_satisfied(job, ended)
            if doomed is None:
                waiting.append(job)
                continue
            result.cancelled.append((job, doomed))
            ended[job.id] = JobState.CANCELLED
            changed = True
        pending = waiting
    taken = dict(in_flight)
    for job in pending:
        reason = _unmet(job, ended) or _no_slot(job, taken)
        if reason is not None:
            result.held.append((job, reason))
            continue
        if job.array is not None and job.array_limit is not None:
            taken[job.array] = taken.get(job.array, 0) + 1
        result.eligible.append(job)
    return result


def _never_satisfied(job: Job, ended: Mapping[str, JobState]) -> str | None:
    for dep in job.after:
        state = ended.get(dep.job_id)
        if dep.kind is AfterKind.OK and state in _UNSUCCESSFUL:
            return (
                f"dependency never satisfied: job {dep.job_id} {state.value} "
                "and this job was to run only if it succeeded"
            )
    return None


def _unmet(job: Job, ended: Mapping[str, JobState]) -> str | None:
    unmet = [d for d in job.after if d.job_id not in ended]
    if not unmet:
        return None
    first = unmet[0]
    what = "succeed" if first.kind is AfterKind.OK else "end"
    more = f" (and {len(unmet) - 1} more)" if len(unmet) > 1 else ""
    return f"waiting for job {first.job_id} to {what}{more}"


def _no_slot(job: Job, taken: Mapping[str, int]) -> str | None:
    if job.array is None or job.array_limit is None:
        return None
    busy = taken.get(job.array, 0)
    if busy < job.array_limit:
        return None
    return (
        f"waiting for a slot of array {job.array}: {busy} of its elements are queued or "
        f"running, at most {job.array_limit} at once"
    )
