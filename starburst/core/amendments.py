"""What a job's owner (or an admin) may do to it after submitting, as Slurm's ``scontrol
hold/release/requeue/update``: the rules, in words the CLI and the API both show.

Terms:
- *hold*: keeps a waiting job (``submitted`` or ``queued``) out of the queue until it is
  released. A queued job goes back to ``submitted`` (``core.lifecycle``), held with the
  reason ``user_hold`` writes; the controller admits no user-held job, whatever its
  dependencies say. Like a dependency hold, it has no wait budget running.
- *release*: lets a user-held job in again: the hold is cleared and its queue time restarts
  now, so its wait budget starts when it re-enters the queue (as after a dependency hold).
- *requeue*: an ended job (succeeded, failed or cancelled) is submitted again as a new job
  with the same spec (terminal states are final: the old job keeps its history, and a note
  on it names the new one). A job still waiting or running is not requeued.
- *update*: a waiting job's GPUs, time limit or name change. The change is checked as a
  submission is (the API's schema, the spec's rules, the price ceiling) and recorded as an
  event; a queued job goes back to ``submitted`` (keeping its queue time and place), so the
  controller admits it again and computes its wait budget from the new GPUs × the
  predicted runtime, as for any submission. A running or ended job is not updated.

Invariants: pure; every refusal is one line naming the job, its state and what is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum

from starburst.core.duration import human
from starburst.core.lifecycle import JobState

WAITING = frozenset({JobState.SUBMITTED, JobState.QUEUED})
_USER_HOLD = re.compile(r"^by \S+ until released\b")


class Action(StrEnum):
    HOLD = "hold"
    RELEASE = "release"
    REQUEUE = "requeue"
    UPDATE = "update"


def user_hold(actor: str, job_id: str) -> str:
    """The hold reason of a job ``actor`` held (``plan`` shows it as ``held: <reason>``)."""
    return f"by {actor} until released (starburst release {job_id})"


def is_user_hold(reason: str | None) -> bool:
    """Whether a held job's reason is a user's hold (else a dependency or an array limit)."""
    return reason is not None and _USER_HOLD.match(reason) is not None


def refusal(action: Action, job_id: str, state: JobState, held: str | None) -> str | None:
    """Why ``action`` may not be done to job ``job_id`` now, or None when it may."""
    where = state.value
    if action is Action.HOLD:
        if state not in WAITING:
            return f"job {job_id} is {where}: only a waiting job can be held"
        if is_user_hold(held):
            return f"job {job_id} is already held {held}"
    elif action is Action.RELEASE:
        if not is_user_hold(held):
            return f"job {job_id} is {'held ' + str(held) if held else where}, not held by a user"
    elif action is Action.REQUEUE:
        if not state.terminal:
            return (
                f"job {job_id} is {where}: only an ended job (succeeded, failed or "
                "cancelled) can be requeued; cancel it first"
            )
    elif state not in WAITING:
        return (
            f"job {job_id} is {where}: only a waiting job can be updated; "
            "cancel and requeue it to run it with other limits"
        )
    return None


def describe_update(before: Mapping[str, object], after: Mapping[str, object]) -> str:
    """``gpus 2 → 1, time limit 1h → 2h``: what an update changes, in ``explain``'s words."""
    words = {"gpus": "gpus", "time_limit_s": "time limit", "name": "name"}
    parts = []
    for key, word in words.items():
        if key in after and after[key] != before.get(key):
            parts.append(f"{word} {_shown(before.get(key))} → {_shown(after[key])}")
    return ", ".join(parts)


def _shown(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, float):
        return human(value)
    return str(value)
