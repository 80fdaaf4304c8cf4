"""Submission limits: how much one user or team may pile up, so one backlog never slows the rest.

Without them one user submitted 5,000 waiting jobs and a 10,000-deep ``after`` chain; every
scheduling pass and every other user's queue view then paid for it. The API refuses a
submission past a limit with the limit named and the setting that raises it.

Terms:
- *waiting*: a job in ``submitted`` (held ones too) or ``queued``: not yet running or ended.
- *array size*: the elements of one array (``Job.array``), whatever their state.
- *dependency depth*: the longest chain of unfinished jobs a job waits for, through their
  own waits (``--after A`` where ``A`` waits for ``B``, both unfinished: depth 2). A job
  waiting only for ended jobs has depth 0: a pipeline submitted step by step never grows.
- *backlog*: the counts above as the store holds them now (``Backlog``).

Invariants: ``screen`` is pure: it sees the backlog and a batch of submissions and says which
it refuses, counting the earlier ones of the same batch as already stored, so a batch commits
no more than the limits allow. A submission repeating a known idempotency key is never
refused (it creates nothing). Counts and refusals are per API process and batch; replicas
that commit at the same instant may overshoot by the submissions in flight.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from starburst.core.errors import ConfigError, StarburstError
from starburst.core.records import JobSpec, Keyed, Submission

if TYPE_CHECKING:
    from starburst.core.ports import SubmissionWriter


class LimitExceeded(ConfigError):
    """A submission over a limit of its shape (array size, dependency depth): 422."""


class BacklogFull(StarburstError):
    """A submission over a waiting-jobs limit: 429, worth retrying once jobs have started."""


@dataclass(frozen=True, slots=True)
class SubmitLimits:
    """The limits (``Settings``: ``max_waiting_jobs_per_user`` and friends); 0: none."""

    waiting_per_user: int = 10_000
    waiting_per_team: int = 20_000
    array_size: int = 10_000
    dependency_depth: int = 100


@dataclass(frozen=True, slots=True)
class Backlog:
    """What the store holds that the limits count, for the users, teams, arrays and keys of a
    batch (others are left out)."""

    waiting_by_user: Mapping[str, int] = field(default_factory=dict)
    waiting_by_team: Mapping[str, int] = field(default_factory=dict)
    array_sizes: Mapping[str, int] = field(default_factory=dict)
    known_keys: Collection[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Room:
    """The most waiting jobs each user and each team of a batch may already have for no
    submission of the batch to be refused: the limit less the batch's own submissions of that
    user or team (``room``). Users and teams under no limit are left out."""

    users: Mapping[str, int] = field(default_factory=dict)
    teams: Mapping[str, int] = field(default_factory=dict)


def room(items: Sequence[tuple[JobSpec, str | None]], limits: SubmitLimits) -> Room | None:
    """The ``Room`` within which ``screen`` refuses none of ``items``, whatever the store holds
    of their keys; None where the room does not decide it (an array's element: arrays count
    every job of theirs, not the waiting ones), or where the batch alone is over a limit.

    Why it suffices: the k-th submission of a user finds at most ``waiting + k − 1`` jobs of
    the user counted before it (fewer if a repeat or a refusal came first), and is refused
    only at ``limit`` or more; with ``waiting ≤ limit − n`` (the user's n submissions in the
    batch) no k reaches it. Teams alike."""
    users: dict[str, int] = {}
    teams: dict[str, int] = {}
    for spec, _ in items:
        if spec.array is not None:
            return None
        if limits.waiting_per_user and spec.user is not None:
            users[spec.user] = users.get(spec.user, limits.waiting_per_user) - 1
        if limits.waiting_per_team and spec.team is not None:
            teams[spec.team] = teams.get(spec.team, limits.waiting_per_team) - 1
    if any(left < 0 for left in (*users.values(), *teams.values())):
        return None
    return Room(users, teams)


def fits(backlog: Backlog, need: Room) -> bool:
    """Whether the store's waiting jobs (``backlog``) leave each user and team its room."""
    return all(backlog.waiting_by_user.get(u, 0) <= n for u, n in need.users.items()) and all(
        backlog.waiting_by_team.get(t, 0) <= n for t, n in need.teams.items()
    )


def write_if_room(
    writer: SubmissionWriter, items: Sequence[Keyed], need: Room
) -> list[Submission] | None:
    """``SubmissionWriter.submit_if_room`` for a store that cannot check the room in the
    write itself: the backlog of the room's users and teams, then the batch if it fits."""
    found = writer.backlog(users=need.users, teams=need.teams, arrays=(), keys=())
    return writer.submit_many(items) if fits(found, need) else None


def screen(
    items: Sequence[tuple[JobSpec, str | None]], backlog: Backlog, limits: SubmitLimits
) -> list[StarburstError | None]:
    """For each ``(spec, idempotency_key)`` in order: the refusal, or None to store it."""
    users, teams = dict(backlog.waiting_by_user), dict(backlog.waiting_by_team)
    arrays = dict(backlog.array_sizes)
    keys = set(backlog.known_keys)
    found: list[StarburstError | None] = []
    for spec, key in items:
        if key is not None and key in keys:
            found.append(None)  # a repeat: returns the job its key made
            continue
        refusal = _refusal(spec, users, teams, arrays, limits)
        found.append(refusal)
        if refusal is None:
            if key is not None:
                keys.add(key)
            if spec.user is not None:
                users[spec.user] = users.get(spec.user, 0) + 1
            if spec.team is not None:
                teams[spec.team] = teams.get(spec.team, 0) + 1
            if spec.array is not None:
                arrays[spec.array] = arrays.get(spec.array, 0) + 1
    return found


def _refusal(
    spec: JobSpec,
    users: Mapping[str, int],
    teams: Mapping[str, int],
    arrays: Mapping[str, int],
    limits: SubmitLimits,
) -> StarburstError | None:
    cap = limits.waiting_per_user
    if cap and spec.user is not None and users.get(spec.user, 0) >= cap:
        return BacklogFull(
            f"{spec.user} has {cap} jobs waiting, the most one user may have "
            "(max_waiting_jobs_per_user); submit more once some have started"
        )
    cap = limits.waiting_per_team
    if cap and spec.team is not None and teams.get(spec.team, 0) >= cap:
        return BacklogFull(
            f"team {spec.team} has {cap} jobs waiting, the most one team may have "
            "(max_waiting_jobs_per_team); submit more once some have started"
        )
    cap = limits.array_size
    if cap and spec.array is not None and arrays.get(spec.array, 0) >= cap:
        name = spec.array.partition("/")[2] or spec.array
        return LimitExceeded(
            f"array {name} already has {cap} elements, the most one array may have (max_array_size)"
        )
    return None


def dependency_depth(
    after: Iterable[str],
    waits_of: Callable[[Collection[str]], Mapping[str, Sequence[str]]],
    limit: int,
) -> int:
    """The dependency depth of a job waiting for ``after`` (ids), counted up to ``limit + 1``
    at most (one ``waits_of`` call per level). ``waits_of(ids)`` gives, for each of ``ids``
    that has not ended, the ids it waits for."""
    depth, frontier = 0, set(after)
    while frontier and depth <= limit:
        waits = waits_of(frontier)
        if not waits:
            break
        depth += 1
        frontier = {d for deps in waits.values() for d in deps}
    return depth


def check_depth(depth: int, limits: SubmitLimits) -> None:
    """Refuse a job deeper than ``limits.dependency_depth``."""
    cap = limits.dependency_depth
    if cap and depth > cap:
        raise LimitExceeded(
            f"after: this job would wait at the end of a chain of more than {cap} unfinished "
            "jobs, the deepest allowed (max_dependency_depth); let some end first"
        )
