"""The scheduling pass: one pure function shared by the simulator and the live controller.

Order of work at one instant (docs/scheduling.md):
1. burst queued jobs whose budget has expired (a budget that expires at the very instant GPUs
   free up still bursts: the caller finishes completed jobs *before* calling the pass, and
   expiry is checked before scheduling), and queued jobs that could *never fit* (below);
2. admit new arrivals (merged into the queue in order); an arrival that could never fit
   bursts at once whatever its budget: waiting cannot help it;
3. schedule: *in order* starts jobs from the head while they fit and stops at the first that
   does not; *out of order* scans the whole queue once and starts every job that fits;
4. burst arrivals with a zero budget that did not fit (they burst in the same instant);
5. apply the queue cap: jobs beyond position N burst at once.

*Never fits*: the private cluster as it is now, even empty, could not hold the job (more GPUs
than it has, a GPU type none of its nodes has, a pod larger than every node). Such a job
bursts at once, unless its team is held (then it waits, and bursts on the first pass after
the hold lifts, not at the end of its budget) — an arrival, or a job already queued (held at
arrival, or queued before nodes left). A cluster with no schedulable node at all proves
nothing (not seen yet, or every node cordoned): then everyone waits as usual. The check is a
lookup per job shape (``CapacityIndex.could_ever_fit`` remembers each), so it stays cheap on
every pass; the queue is capped besides.

The pass never mutates its inputs: it tries placements on the capacity snapshot and undoes
them before returning, so the caller applies the decisions through its own cluster port.
It hands the next pass what it learnt of the queue it leaves (``PassResult.facts``,
``queue_facts``): the next pass then skips the scans those facts make needless (no budget can
have run out, no job can start until GPUs free up), and scans as before when they no longer
hold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from starburst.core.capacity import (
    CapacityIndex,
    Placement,
    describe_placement,
)
from starburst.core.decisions import Burst, Start, Wait
from starburst.core.duration import human
from starburst.core.job import Job, QueuedJob
from starburst.core.ordering import merge
from starburst.core.policy import WaitPolicy
from starburst.core.queue_facts import QueueFacts, may_need_a_look
from starburst.core.scheduler_config import SchedulerConfig as SchedulerConfig

# A ``hold`` key that holds every job, whatever its team (no team is named "*").
HOLD_ALL = "*"
#: why every job waits on-prem when the controller runs without a cloud (``cloud: none``)
NO_CLOUD = "no cloud is configured, so nothing bursts; waiting on-prem"
# A ``hold`` key that holds the jobs of users with no team (no team is named "").
NO_TEAM = ""


@dataclass(slots=True)
class PassResult:
    """What one pass decided. ``waiting`` is the new queue, in order."""

    starts: list[Start] = field(default_factory=list)
    bursts: list[Burst] = field(default_factory=list)
    waiting: list[QueuedJob] = field(default_factory=list)
    #: jobs that would have burst but their team may not burst now: (job id, reason)
    held: list[tuple[str, str]] = field(default_factory=list)
    #: what the pass learnt of ``waiting``, for the next pass over it (``QueueFacts``)
    facts: QueueFacts | None = None

    def wait_decisions(self, now: float) -> list[Wait]:
        return [Wait(q.id, q.deadline, wait_reason(q, now)) for q in self.waiting]


def admit(job: Job, policy: WaitPolicy, now: float) -> QueuedJob:
    """A new arrival enters the queue with the budget its policy gives it."""
    return QueuedJob(job, now, policy.budget(job))


def wait_reason(entry: QueuedJob, now: float) -> str:
    waited = now - entry.queued_at
    if math.isinf(entry.budget):
        return f"waiting {human(waited)}; this policy never bursts"
    return f"waiting {human(waited)} of a {human(entry.budget)} budget"


def schedule_pass(
    now: float,
    queue: Sequence[QueuedJob],
    arrivals: Sequence[QueuedJob],
    capacity: CapacityIndex,
    config: SchedulerConfig,
    hold: Mapping[str, str] | None = None,
    held_jobs: Mapping[str, str] | None = None,
    facts: QueueFacts | None = None,
    keep_starts: bool = False,
) -> PassResult:
    """Decide, at ``now``, what starts on-prem, what bursts and what keeps waiting.

    ``queue`` is the previous pass's ``waiting`` (already in order); ``arrivals`` are entries
    admitted since (see ``admit``), in any order. ``hold`` maps teams that may not burst now
    (their cloud budget is spent) to the reason: their jobs keep waiting on-prem instead;
    the key ``NO_TEAM`` holds the jobs of users with no team, ``HOLD_ALL`` every job (the
    cloud side itself cannot burst). ``held_jobs`` holds single jobs the same way (job id →
    reason: a burst above a $/h ceiling). ``facts``: the kept ``QueueFacts`` of ``queue``
    (used only if they are of that very object; else they are told afresh).
    ``keep_starts``: the starts stay allocated on ``capacity`` (the caller runs them there and
    allocates nothing again); else the pass leaves ``capacity`` as it found it.
    """
    result = PassResult([], [], [], [])  # (the lists given: quicker than four factories)
    held = _Holds(hold or {}, held_jobs or {}) if hold or held_jobs else _NO_HOLDS
    if facts is None or facts.queue is not queue:
        facts = QueueFacts(queue)
    # the usual pass: nothing expired, everything fits, the queue is kept whole
    if _all_keep_waiting(now, facts, capacity):
        kept, floor = list(queue), facts.deadline_floor
    else:
        kept, floor = _expire(now, queue, capacity, result, held, facts.fit_on is capacity)
    if arrivals:
        arrivals = _burst_never_fitting(arrivals, capacity, result, held)
    ordered = merge(kept, arrivals, config.order) if arrivals else kept
    stuck = True  # whether no job of ``waiting`` fits now (``QueueFacts.stuck_on``)
    if capacity.free_gpus == 0 and not _needs_a_look(ordered, arrivals, facts):
        waiting = ordered  # a full cluster starts nothing: skip the scan
    elif kept and facts.stuck(capacity):  # (kept from the queue: none of them fits either)
        waiting, stuck = _schedule_arrivals(ordered, kept, capacity, config, result)
    else:
        waiting = _schedule(ordered, capacity, config, result, 0)
        stuck = config.out_of_order  # (in order, the jobs behind the first were not tried)
    for a in arrivals:
        if a.deadline <= now:
            waiting = _burst_spent(now, waiting, result, held)
            break
    cap = config.queue_cap
    result.waiting = (
        waiting if cap is None or len(waiting) <= cap else _apply_cap(waiting, cap, result, held)
    )
    result.facts = _pass_on(result, facts, floor, arrivals, capacity, held, stuck)
    if not keep_starts and result.starts:
        for start in result.starts:  # (each was allocated to try the jobs behind it)
            capacity.release(start.placement)
        result.facts.stuck_releases = capacity.releases  # (these give no room to the queue)
    return result


def _pass_on(
    result: PassResult,
    told: QueueFacts,
    floor: float,
    arrivals: Sequence[QueuedJob],
    capacity: CapacityIndex,
    held: _Holds,
    stuck: bool,
) -> QueueFacts:
    """The carried facts of ``result.waiting`` (``QueueFacts``): the floor of the kept jobs'
    deadlines lowered to the arrivals'; ``fit_on`` when no job was held (every job that could
    never fit then burst, unless none of the nodes takes work: that proves nothing);
    ``stuck_on`` when no job of it fits the cluster once the starts are carried out; and
    that no job needs a look, when none of the queue (``told``) nor of the arrivals did."""
    facts = QueueFacts(result.waiting)
    for a in arrivals:
        if a.deadline < floor:
            floor = a.deadline
    facts.deadline_floor = floor
    if held is _NO_HOLDS and capacity.has_schedulable_nodes:
        facts.fit_on = capacity
    if stuck and capacity.gpus_only:
        facts.stuck_on = capacity
        facts.stuck_releases = capacity.releases
        facts.stuck_free = capacity.free_gpus  # (the pass's starts allocated)
    if told.none_need_a_look() and not (arrivals and may_need_a_look(arrivals)):
        facts.told_none_need_a_look()
    return facts


_INF = math.inf
_NO_FAILURE = 2**63  # ``_schedule``'s smallest failure of a shape that has not failed
#: from this length on, ``_all_keep_waiting`` is worth asking before the per-job loop
_LONG_QUEUE = 64


def _all_keep_waiting(now: float, facts: QueueFacts, capacity: CapacityIndex) -> bool:
    """Whether no queued job's budget has run out and every one could fit the cluster: the
    usual pass, told by the facts the previous pass carried, or at C speed over the whole
    queue (no per-job Python step), or from the queue's kept facts."""
    if facts.none_expired(now) and (facts.fit_on is capacity or not capacity.has_schedulable_nodes):
        return True
    if len(facts.queue) < _LONG_QUEUE or facts.earliest_deadline() <= now:
        return False  # (a short queue: the plain loop of ``_expire`` is as quick)
    return not capacity.has_schedulable_nodes or capacity.could_all_ever_fit(facts.shapes())


def _expire(
    now: float,
    queue: Sequence[QueuedJob],
    capacity: CapacityIndex,
    result: PassResult,
    held: _Holds,
    all_fit: bool,
) -> tuple[list[QueuedJob], float]:
    """Burst the queued jobs whose budget ran out, and those that could never fit (step 1);
    the jobs kept, and their earliest deadline. ``all_fit``: the carried facts tell that
    every one of them could fit (``QueueFacts.fit_on``), so none is asked again."""
    kept: list[QueuedJob] = []
    floor = _INF
    bursts = result.bursts
    # a cluster with no schedulable node (none seen yet, or all cordoned) proves nothing
    fits = capacity.could_ever_fit if capacity.has_schedulable_nodes and not all_fit else None
    for entry in queue:
        deadline = entry.deadline
        if deadline > now and (deadline == _INF or fits is None or fits(entry.job)):
            kept.append(entry)  # the usual case first: the job keeps waiting
            if deadline < floor:
                floor = deadline
        elif deadline <= now and not _held(entry, held, result):
            reason = _expired_reason(entry, now)
            bursts.append(Burst(entry.job, reason, entry.job.id))  # (id given: set once)
        elif (
            fits is not None
            and deadline != _INF  # a job that never bursts: ``_schedule`` says why
            and not fits(entry.job)
            and not _held(entry, held, result)
        ):
            bursts.append(Burst(entry.job, _cannot_fit_reason(entry.job, capacity)))
        else:
            kept.append(entry)
            if deadline < floor:
                floor = deadline
    return kept, floor


class _Holds:
    """Who may not burst now: teams (or ``HOLD_ALL``) and single jobs, with the reason;
    ``recorded``: the ids already in this pass's ``PassResult.held``.

    (A plain class, not a dataclass: private and never compared or printed, and generating
    a dataclass's methods is a measurable part of ``starburst simulate``'s start-up.)"""

    __slots__ = ("jobs", "recorded", "teams")

    def __init__(self, teams: Mapping[str, str], jobs: Mapping[str, str]) -> None:
        self.teams = teams
        self.jobs = jobs
        self.recorded: set[str] = set()

    def reason(self, entry: QueuedJob) -> str | None:
        team = self.teams.get(NO_TEAM if entry.job.team is None else entry.job.team)
        return team or self.teams.get(HOLD_ALL) or self.jobs.get(entry.id)


#: no team and no job held: the common pass (``reason`` is always None, ``recorded`` unused)
_NO_HOLDS = _Holds({}, {})


def _held(entry: QueuedJob, held: _Holds, result: PassResult) -> bool:
    """Whether a job that would burst must wait on-prem instead (recorded with the reason)."""
    if held is _NO_HOLDS:
        return False
    reason = held.reason(entry)
    if reason is None:
        return False
    if entry.id not in held.recorded:
        held.recorded.add(entry.id)
        result.held.append((entry.id, reason))
    return True


def _burst_never_fitting(
    arrivals: Sequence[QueuedJob],
    capacity: CapacityIndex,
    result: PassResult,
    held: _Holds,
) -> Sequence[QueuedJob]:
    """Arrivals the empty cluster could not hold burst now (a held team's wait instead).
    A cluster with no schedulable node at all (not seen yet, or every node cordoned) proves
    nothing about the future, so then everyone waits as usual."""
    if not capacity.has_schedulable_nodes:
        return arrivals
    for a in arrivals:
        if not capacity.could_ever_fit(a.job):
            break
    else:
        return arrivals  # (the usual arrival: it fits)
    admitted: list[QueuedJob] = []
    for entry in arrivals:
        if capacity.could_ever_fit(entry.job) or _held(entry, held, result):
            admitted.append(entry)
        else:
            result.bursts.append(Burst(entry.job, _cannot_fit_reason(entry.job, capacity)))
    return admitted


def _needs_a_look(
    ordered: Sequence[QueuedJob], arrivals: Sequence[QueuedJob], facts: QueueFacts
) -> bool:
    """``may_need_a_look`` of ``ordered``, merged from jobs of ``facts.queue`` and the
    arrivals: told from the queue's facts when none of its jobs needs a look."""
    if facts.may_need_a_look():
        return may_need_a_look(ordered)
    return may_need_a_look(arrivals)


def _schedule_arrivals(
    ordered: list[QueuedJob],
    kept: list[QueuedJob],
    capacity: CapacityIndex,
    config: SchedulerConfig,
    result: PassResult,
) -> tuple[list[QueuedJob], bool]:
    """``_schedule`` when the kept jobs are known not to fit (``QueueFacts.stuck``): only the
    arrivals behind them are tried. The waiting jobs, and whether none of them fits now.
    (On a cluster of GPUs alone, an arrival a kept job of its request and fewer GPUs would
    have ruled out fails its own placement just the same.)"""
    if len(ordered) == len(kept):
        return ordered, True  # no arrival: nothing can start
    if not config.out_of_order:
        if ordered[0] is kept[0]:
            return ordered, False  # the first job does not fit: it blocks the rest
    elif ordered[len(kept) - 1] is kept[-1]:  # every arrival goes after the kept jobs
        return _schedule(ordered, capacity, config, result, len(kept)), True
    return _schedule(ordered, capacity, config, result, 0), config.out_of_order


def _schedule(
    ordered: list[QueuedJob],
    capacity: CapacityIndex,
    config: SchedulerConfig,
    result: PassResult,
    stuck: int,
) -> list[QueuedJob]:
    """Start what fits, in queue order; the jobs left waiting. The first ``stuck`` jobs are
    known not to fit (out of order only): they wait untried. Each start stays allocated on
    ``capacity`` (``schedule_pass`` gives them back unless told to keep them)."""
    waiting = ordered[:stuck]
    strategy, out_of_order = config.placement, config.out_of_order
    starts, place = result.starts, capacity.place
    # Free capacity only shrinks during a pass, so once a job of some shape fails to fit, every
    # job of the same shape (pod size included) with at least as many GPUs fails too:
    # remember the smallest failure.
    smallest_failure: dict[tuple[str | None, float, float, int | None], int] = {}
    # Quicker still: a job of no GPU type that one node could hold fits nowhere while no node
    # has as many GPUs free (``place`` checks that first); ``top`` only shrinks too.
    top, largest = capacity.most_free(), capacity.largest_any
    for i in range(stuck, len(ordered)):
        entry = ordered[i]
        job = entry.job
        gpus = job.gpus
        if entry.deadline == _INF or not (
            (top < gpus <= largest and job.gpu_type is None)
            or smallest_failure.get(_shape(job), _NO_FAILURE) <= gpus
        ):
            placement = place(job, strategy)
            if placement is not None:
                capacity.allocate(placement)
                top = capacity.most_free()
                # (the id given, so the frozen value is not set a second time)
                starts.append(Start(job, placement, _start_reason(placement, waiting), job.id))
                continue
            shape = _shape(job)
            if gpus < smallest_failure.get(shape, _NO_FAILURE):
                smallest_failure[shape] = gpus
            if entry.deadline == _INF and not capacity.could_ever_fit(job):
                result.bursts.append(Burst(job, _never_fits_reason(job, capacity)))
                continue
        waiting.append(entry)
        if not out_of_order:  # in order: the first job that does not fit blocks the rest
            waiting.extend(ordered[i + 1 :])
            break
    return waiting


def _shape(job: Job) -> tuple[str | None, float, float, int | None]:
    return (job.gpu_type, job.cpus, job.memory_mb, job.pods and job.split_unit)


def _burst_spent(
    now: float, waiting: list[QueuedJob], result: PassResult, held: _Holds
) -> list[QueuedJob]:
    """Arrivals with no budget left that did not start burst in the same instant."""
    remaining: list[QueuedJob] = []
    for entry in waiting:
        if entry.deadline <= now and not _held(entry, held, result):
            result.bursts.append(Burst(entry.job, "no wait budget and no room on-prem"))
        else:
            remaining.append(entry)
    return remaining


def _apply_cap(
    waiting: list[QueuedJob], cap: int, result: PassResult, held: _Holds
) -> list[QueuedJob]:
    """Jobs beyond position ``cap`` burst (step 5; a held team's wait instead)."""
    kept = waiting[:cap]
    for pos, entry in enumerate(waiting[cap:], start=cap + 1):
        if _held(entry, held, result):
            kept.append(entry)
            continue
        reason = f"queue position {pos} is beyond the queue cap of {cap}"
        result.bursts.append(Burst(entry.job, reason))
    return kept


def _start_reason(placement: Placement, skipped: list[QueuedJob]) -> str:
    where = describe_placement(placement)
    if skipped:
        return f"out of order: fits on {where} while {len(skipped)} earlier job(s) wait"
    return f"fits on {where}"


def _expired_reason(entry: QueuedJob, now: float) -> str:
    return f"waited {human(now - entry.queued_at)} of a {human(entry.budget)} budget"


def _cannot_fit_reason(job: Job, capacity: CapacityIndex) -> str:
    return f"{capacity.shortfall(job)}: bursts at once instead of waiting its budget"


def _never_fits_reason(job: Job, capacity: CapacityIndex) -> str:
    kind = f" {job.gpu_type}" if job.gpu_type else ""
    return (
        f"needs {job.gpus}{kind} GPUs, more than the private cluster can ever offer "
        f"(largest node {capacity.largest_node(job)} GPUs); a never-bursting policy would "
        "leave it queued forever"
    )
