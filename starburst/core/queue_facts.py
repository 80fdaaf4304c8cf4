"""What a scheduling pass asks of a whole queue, told once and kept (``QueueFacts``).

Two kinds of facts:
- *told*: read from the queue when first asked, then kept — its earliest deadline, its job
  shapes, whether some job needs a look on a full cluster. The live controller's queue view
  keeps one beside its ordered queue until the queue changes.
- *carried*: handed by the pass that made the queue to the next pass over it
  (``cycle.PassResult.facts``); each spares that pass a scan while it holds, and says
  when it no longer does (another cluster, GPUs given back, time past a deadline).

Invariant: the facts are of ``queue``, which must not change while they are kept;
``cycle.schedule_pass`` uses them only for that very object, so a pass handed the facts of
another queue reads its own afresh.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import attrgetter

from starburst.core.capacity import CapacityIndex, JobShape
from starburst.core.job import QueuedJob

_INF = math.inf
_DEADLINE = attrgetter("deadline")
#: a queued job's ``capacity.JobShape``
_SHAPE = attrgetter("job.gpus", "job.pods", "job.gpu_type", "job.cpus", "job.memory_mb")
_GPUS = attrgetter("job.gpus")
_BUDGET = attrgetter("budget")
#: up to this many jobs (a pass's arrivals), a plain loop is quicker than scans at C speed
_FEW = 4


class QueueFacts:
    """What a pass asks of a whole queue: its earliest deadline, its job shapes, and whether
    some job needs no GPU or never bursts. Each is told once, when first asked, and kept:
    the live controller's queue view keeps one beside its ordered queue until the queue
    changes, so a steady pass over 100,000 waiting jobs does not scan them again.

    A pass also hands the next one what it learnt of the queue it leaves
    (``PassResult.facts``, of ``PassResult.waiting``): *carried* facts, which spare the next
    pass its scans while they hold (the simulator passes them back each time):

    - ``deadline_floor``: no job's deadline is earlier (a bound, not the earliest: a job
      that leaves the queue does not raise it), so none has expired while now is below it;
    - ``fit_on``: every job with a finite budget fits that capacity's empty cluster (no job
      the pass kept could never fit);
    - ``stuck_on``: no job fits that capacity now, while it has given nothing back since
      (``CapacityIndex.releases``) and has the free GPUs it had once the pass's starts were
      carried out. Told only of a cluster whose GPUs alone decide (``gpus_only``), where
      whatever did not fit keeps not fitting while nothing frees.

    Invariant: the facts are of ``queue``, which must not change while they are kept (the
    view's queue is a tuple); ``schedule_pass`` uses them only for that very object.
    """

    __slots__ = (
        "_deadline",
        "_look",
        "_shapes",
        "deadline_floor",
        "fit_on",
        "queue",
        "stuck_free",
        "stuck_on",
        "stuck_releases",
    )

    def __init__(self, queue: Sequence[QueuedJob]) -> None:
        self.queue = queue
        self._deadline: float | None = None
        self._shapes: frozenset[JobShape] | None = None
        self._look: bool | None = None
        self.deadline_floor = -_INF
        self.fit_on: CapacityIndex | None = None
        self.stuck_on: CapacityIndex | None = None
        self.stuck_releases = self.stuck_free = 0

    def earliest_deadline(self) -> float:
        """The first deadline of the queue (inf when it is empty)."""
        if self._deadline is None:
            self._deadline = min(map(_DEADLINE, self.queue), default=_INF)
            self.deadline_floor = self._deadline  # (the earliest is a floor too)
        return self._deadline

    def shapes(self) -> frozenset[JobShape]:
        """The distinct shapes of the queue's jobs (``capacity.job_shape``)."""
        if self._shapes is None:
            self._shapes = frozenset(map(_SHAPE, self.queue))
        return self._shapes

    def may_need_a_look(self) -> bool:
        """Whether a full cluster could still start or burst one of them (see
        ``may_need_a_look``)."""
        if self._look is None:
            self._look = may_need_a_look(self.queue)
        return self._look

    def none_need_a_look(self) -> bool:
        """Whether it is known already that no job needs a look (``may_need_a_look``)."""
        return self._look is False

    def told_none_need_a_look(self) -> None:
        """Keep that no job needs a look (told of the jobs it was made of)."""
        self._look = False

    def none_expired(self, now: float) -> bool:
        """Whether the carried floor tells that no budget has run out at ``now``."""
        return self.deadline_floor > now

    def stuck(self, capacity: CapacityIndex) -> bool:
        """Whether the carried facts tell that no job fits ``capacity`` now."""
        return (
            self.stuck_on is capacity
            and capacity.releases == self.stuck_releases
            and capacity.free_gpus == self.stuck_free
        )


def may_need_a_look(queue: Sequence[QueuedJob]) -> bool:
    """GPU-less jobs may fit a full cluster; never-bursting jobs must be checked for fit
    (at C speed over a whole queue; a plain loop over a pass's few arrivals)."""
    if len(queue) <= _FEW:
        # a loop, not any() over a generator: the generator costs more than one arrival
        for entry in queue:  # noqa: SIM110
            if entry.job.gpus == 0 or math.isinf(entry.budget):
                return True
        return False
    return 0 in map(_GPUS, queue) or any(map(math.isinf, map(_BUDGET, queue)))
