"""Queue order: which waiting job gets the first chance at free GPUs.

- ``fifo``: by (re-)queue time — submit time, or the re-arrival time of a pulled-back
  Star-Wait job.
- ``sjf``: shortest estimated runtime first.
- ``edf``: earliest wait-budget expiry first (the job about to burst gets the first chance).

Ties: jobs that (re-)entered the queue at the same instant — elements of an array let in
by one pass, a batch of submissions committed together — go in submission order: submit
time, then array index (``Job.submission_order``: sweep-2 before sweep-3), then the job id. So
equal times never depend on input order, and never on random ids where an order was meant.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum

from starburst.core.errors import ConfigError
from starburst.core.job import QueuedJob


class QueueOrder(StrEnum):
    """The order of the queue: first in first out, shortest job first, earliest deadline first."""

    FIFO = "fifo"
    SJF = "sjf"
    EDF = "edf"


def parse_order(name: str) -> QueueOrder:
    try:
        return QueueOrder(name.strip().lower())
    except ValueError:
        raise ConfigError(f"unknown queue order {name!r}; choose fifo, sjf or edf") from None


#: a queue entry's sort key: the order's own terms, then ``submission_order``
Key = Callable[[QueuedJob], tuple[float | int | str, ...]]


def _fifo(q: QueuedJob) -> tuple[float | int | str, ...]:
    return (q.queued_at, *q.job.submission_order())


def _sjf(q: QueuedJob) -> tuple[float | int | str, ...]:
    return (q.job.believed_runtime, q.queued_at, *q.job.submission_order())


def _edf(q: QueuedJob) -> tuple[float | int | str, ...]:
    return (q.deadline, q.queued_at, *q.job.submission_order())


_KEYS: dict[QueueOrder, Key] = {
    QueueOrder.FIFO: _fifo,
    QueueOrder.SJF: _sjf,
    QueueOrder.EDF: _edf,
}


def sort_key(order: QueueOrder) -> Key:
    return _KEYS[order]


def in_order(entries: Iterable[QueuedJob], order: QueueOrder) -> list[QueuedJob]:
    return sorted(entries, key=_KEYS[order])


def merge(
    queue: Sequence[QueuedJob], arrivals: Sequence[QueuedJob], order: QueueOrder
) -> list[QueuedJob]:
    """Merge ordered ``queue`` with unordered ``arrivals``; O(len(queue)) when arrivals are few."""
    if not arrivals:
        return list(queue)
    key = _KEYS[order]
    fresh = sorted(arrivals, key=key) if len(arrivals) > 1 else list(arrivals)
    if not queue or key(queue[-1]) <= key(fresh[0]):
        return [*queue, *fresh]
    return list(heapq.merge(queue, fresh, key=key))
