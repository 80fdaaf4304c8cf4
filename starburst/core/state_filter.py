"""State filters people type: a job state's own name, or a group of states.

Groups:
- ``running``: ``running_onprem`` and ``running_cloud`` (where it runs does not matter);
- ``waiting``: ``submitted`` and ``queued`` (not started anywhere yet);
- ``active``: every state that has not ended (waiting, ``bursting`` and running);
- ``ended``: ``succeeded``, ``failed`` and ``cancelled``.

And ``held``: submitted jobs held out of the queue (waiting for a dependency or an array
slot), what ``starburst jobs`` shows as ``held``. It is not a state of its own, so a filter
is a set of states plus, for ``submitted``, whether only held ones are wanted
(``StateFilter``); ``submitted`` or ``waiting`` alongside it takes every submitted job.

An unknown word is an error that lists every accepted word, so nobody has to read a
validation message to learn the state names.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from starburst.core.errors import ConfigError
from starburst.core.lifecycle import TERMINAL, JobState

GROUPS: dict[str, tuple[JobState, ...]] = {
    "running": (JobState.RUNNING_ONPREM, JobState.RUNNING_CLOUD),
    "waiting": (JobState.SUBMITTED, JobState.QUEUED),
    "active": tuple(s for s in JobState if s not in TERMINAL),
    "ended": tuple(s for s in JobState if s in TERMINAL),
}
ACTIVE = GROUPS["active"]
HELD = "held"


class UnknownState(ConfigError):
    """A state filter that is neither a state nor a group of states."""


def accepted() -> str:
    """Every word a state filter accepts, in one line."""
    names = ", ".join(s.value for s in JobState)
    groups = ", ".join(
        f"{g} (= {' + '.join(s.value for s in members)})" if len(members) <= 3 else g
        for g, members in GROUPS.items()
    )
    return f"{names}, {HELD} (submitted, held out of the queue); or a group: {groups}"


def parse_states(words: Iterable[str]) -> list[JobState]:
    """The states named by ``words`` (comma-separated lists allowed), in lifecycle order,
    without repeats."""
    wanted: set[JobState] = set()
    for word in _words(words):
        if word in GROUPS:
            wanted.update(GROUPS[word])
            continue
        try:
            wanted.add(JobState(word))
        except ValueError:
            raise UnknownState(f"unknown job state {word!r}; valid: {accepted()}") from None
    return [s for s in JobState if s in wanted]


@dataclass(frozen=True, slots=True)
class StateFilter:
    """States to list; ``only_held``: of submitted jobs, only those held out of the queue."""

    states: tuple[JobState, ...]
    only_held: bool = False

    def keeps(self, state: JobState, held: str | None) -> bool:
        """Whether a job in ``state`` (held for ``held``, or None) passes the filter."""
        return state in self.states and not (
            self.only_held and state is JobState.SUBMITTED and held is None
        )

    def words(self) -> list[str]:
        """The filter as words ``parse_filter`` reads back (for the API's ``state``)."""
        named = [s.value for s in self.states if not (self.only_held and s is JobState.SUBMITTED)]
        return [*named, HELD] if self.only_held else named


def parse_filter(words: Iterable[str]) -> StateFilter:
    """``parse_states`` that also takes ``held`` (see the module docstring)."""
    listed = list(_words(words))
    states = parse_states(w for w in listed if w != HELD)
    if HELD not in listed or JobState.SUBMITTED in states:
        return StateFilter(tuple(states))
    with_submitted = [s for s in JobState if s in {*states, JobState.SUBMITTED}]
    return StateFilter(tuple(with_submitted), only_held=True)


def _words(words: Iterable[str]) -> Iterable[str]:
    for word in (w.strip().lower() for item in words for w in item.split(",")):
        if word:
            yield word
