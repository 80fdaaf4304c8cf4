"""State filters people type: a job state's own name, or a group of states.

Groups:
- ``running``: ``running_onprem`` and ``running_cloud`` (where it runs does not matter);
- ``waiting``: ``submitted`` and ``queued`` (not started anywhere yet);
- ``active``: every state that has not ended (waiting, ``bursting`` and running);
- ``ended``: ``succeeded``, ``failed`` and ``cancelled``.

An unknown word is an error that lists every accepted word, so nobody has to read a
validation message to learn the state names.
"""

from __future__ import annotations

from collections.abc import Iterable

from starburst.core.errors import ConfigError
from starburst.core.lifecycle import TERMINAL, JobState

GROUPS: dict[str, tuple[JobState, ...]] = {
    "running": (JobState.RUNNING_ONPREM, JobState.RUNNING_CLOUD),
    "waiting": (JobState.SUBMITTED, JobState.QUEUED),
    "active": tuple(s for s in JobState if s not in TERMINAL),
    "ended": tuple(s for s in JobState if s in TERMINAL),
}
ACTIVE = GROUPS["active"]


class UnknownState(ConfigError):
    """A state filter that is neither a state nor a group of states."""


def accepted() -> str:
    """Every word a state filter accepts, in one line."""
    names = ", ".join(s.value for s in JobState)
    groups = ", ".join(
        f"{g} (= {' + '.join(s.value for s in members)})" if len(members) <= 3 else g
        for g, members in GROUPS.items()
    )
    return f"{names}; or a group: {groups}"


def parse_states(words: Iterable[str]) -> list[JobState]:
    """The states named by ``words`` (comma-separated lists allowed), in lifecycle order,
    without repeats."""
    wanted: set[JobState] = set()
    for word in (w.strip().lower() for item in words for w in item.split(",")):
        if not word:
            continue
        if word in GROUPS:
            wanted.update(GROUPS[word])
            continue
        try:
            wanted.add(JobState(word))
        except ValueError:
            raise UnknownState(f"unknown job state {word!r}; valid: {accepted()}") from None
    return [s for s in JobState if s in wanted]
