"""``starburst logs --follow``: print a job's output as it grows, until the job has ended.

The API answers a snapshot of the output (``GET /v1/jobs/{id}/logs``); following polls it and
prints what is new since the last snapshot.

Terms:
- *known*: the last snapshot, whose text has been printed.
- *new part*: what follows the known text in the latest snapshot. A backend that keeps only
  its newest lines (SkyPilot's tail) drops the start of the known text, so the new part is
  what follows the longest end of the known text that the latest snapshot starts with; with no
  overlap at all, the whole snapshot is new.

Invariants: nothing printed is printed again (while the backend's text only grows); the last
snapshot is taken after the job was seen ended, so output written at the very end is shown;
a job that has not started yet is waited for, not an error.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def new_part(known: str, latest: str) -> str:
    """The text of ``latest`` that was not in ``known`` (see the module docstring)."""
    if latest.startswith(known):
        return latest[len(known) :]
    for size in range(min(len(known), len(latest)), 0, -1):
        if known.endswith(latest[:size]):
            return latest[size:]
    return latest


def last_lines(text: str, count: int | None) -> str:
    if count is None:
        return text
    lines = text.splitlines(keepends=True)
    return "".join(lines[-count:]) if count > 0 else ""


def follow(
    fetch: Callable[[], str | None],
    ended: Callable[[], bool],
    emit: Callable[[str], None],
    *,
    first_tail: int | None = None,
    interval: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Print the output as it grows until the job has ended. ``fetch`` returns a snapshot, or
    None while the job has not started; the first snapshot is cut to ``first_tail`` lines."""
    known: str | None = None
    while True:
        done = ended()  # before the fetch: the fetch after the end sees the last output
        text = fetch()
        if text is not None:
            part = last_lines(text, first_tail) if known is None else new_part(known, text)
            if part:
                emit(part)
            known = text
        if done:
            return
        sleep(interval)
