"""The facts a pass hands the next (``PassResult.facts``): never stale. A pass given them
decides exactly what a pass that scans the queue afresh decides, whatever changed between
the two — GPUs released, starts not carried out, time past a deadline, holds, arrivals, a
queue changed, another cluster."""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from starburst.core.capacity import CapacityIndex, Node, Part, PlacementStrategy
from starburst.core.cycle import PassResult, SchedulerConfig, schedule_pass
from starburst.core.job import QueuedJob
from starburst.core.ordering import QueueOrder
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.queue_facts import QueueFacts
from tests.builders import H, config, make_job, nodes, queued


class Cluster:
    """A capacity index the passes with carried facts see, and its twin, kept alike, for
    the passes told afresh (a pass tries placements on its index and undoes them: that
    counts as releases, so the fresh passes must not touch the carried passes' index)."""

    def __init__(self, cluster: list[Node]) -> None:
        self.index, self.twin = CapacityIndex(cluster), CapacityIndex(cluster)

    def allocate(self, placement: tuple[Part, ...]) -> None:
        self.index.allocate(placement)
        self.twin.allocate(placement)

    def release(self, placement: tuple[Part, ...]) -> None:
        self.index.release(placement)
        self.twin.release(placement)

    def busy(self, node: int, gpus: int, cpus: float = 0.0) -> tuple[Part, ...]:
        placement = (Part(node, self.index.nodes[node].name, gpus, cpus, 0.0),)
        self.allocate(placement)
        return placement


def decided(result: PassResult) -> tuple[object, ...]:
    """Everything a pass decides, as plain values."""
    return (
        [(s.job_id, s.placement, s.reason) for s in result.starts],
        [(b.job_id, b.reason) for b in result.bursts],
        [q.id for q in result.waiting],
        result.held,
    )


def both(
    now: float,
    queue: list[QueuedJob],
    arrivals: list[QueuedJob],
    cluster: Cluster,
    cfg: SchedulerConfig,
    facts: QueueFacts | None,
    hold: dict[str, str] | None = None,
    keep_starts: bool = False,
) -> PassResult:
    """The pass with the carried facts, checked against the same pass told afresh.
    ``keep_starts``: the carried pass leaves its starts allocated on ``cluster.index`` (as the
    simulator's do); the twin's pass leaves its index as it found it."""
    carried = schedule_pass(
        now, queue, arrivals, cluster.index, cfg, hold, facts=facts, keep_starts=keep_starts
    )
    fresh = schedule_pass(now, queue, arrivals, cluster.twin, cfg, hold)
    assert decided(carried) == decided(fresh)
    return carried


def test_gpus_released_since_let_a_stuck_job_start() -> None:
    cluster = Cluster(nodes(1, 8))
    ended = cluster.busy(0, 8)
    queue = [queued(make_job("a", gpus=4), H)]
    first = both(0, queue, [], cluster, config(out_of_order=True), None)
    assert first.facts is not None and first.facts.stuck(cluster.index)
    cluster.release(ended)
    second = both(10, first.waiting, [], cluster, config(out_of_order=True), first.facts)
    assert [s.job_id for s in second.starts] == ["a"]


def test_gpus_released_on_one_node_and_taken_on_another_count_as_released() -> None:
    cluster = Cluster(nodes(2, 8))
    cluster.busy(0, 3)
    ended = cluster.busy(0, 3)  # 2 free
    cluster.busy(1, 4)  # 4 free
    queue = [queued(make_job("a", gpus=5), H)]
    first = both(0, queue, [], cluster, config(out_of_order=True), None)
    cluster.release(ended)
    cluster.busy(1, 3)  # as many GPUs free in all as before, 5 of them on node 0
    second = both(10, first.waiting, [], cluster, config(out_of_order=True), first.facts)
    assert [s.job_id for s in second.starts] == ["a"]


def test_facts_of_a_cluster_alike_in_free_gpus_say_nothing_of_it() -> None:
    two_fours, one_eight = Cluster(nodes(2, 4)), Cluster(nodes(1, 8))
    two_fours.busy(0, 2)
    two_fours.busy(1, 2)
    one_eight.busy(0, 4)  # 4 GPUs free in all on both, but 4 on one node only here
    queue = [queued(make_job("a", gpus=4), H)]
    first = both(0, queue, [], two_fours, config(out_of_order=True), None)
    second = both(10, first.waiting, [], one_eight, config(out_of_order=True), first.facts)
    assert [s.job_id for s in second.starts] == ["a"]


def test_a_cluster_that_counts_cpus_is_scanned_in_full() -> None:
    # A job of some request that does not fit does not rule out one of the same request
    # with more GPUs where CPUs count (split over two nodes, it needs fewer per node): the
    # scan rules it out all the same, and the pass with carried facts must decide alike.
    cluster = Cluster(nodes(2, 8, cpus=10.0))
    cluster.busy(0, 0, cpus=1.0)
    cluster.busy(1, 0, cpus=1.0)  # 8 GPUs and 9 CPUs free on each node
    cfg = config(out_of_order=True)
    queue = [queued(make_job("one-node", gpus=8, cpus=10.0), H)]
    first = both(0, queue, [], cluster, cfg, None)
    two = queued(make_job("two-nodes", gpus=16, cpus=10.0, submit=5), H, at=5)
    both(5, first.waiting, [two], cluster, cfg, first.facts)


def test_starts_not_carried_out_leave_the_room_they_would_have_taken() -> None:
    cluster = Cluster(nodes(1, 8))
    cluster.busy(0, 2)
    queue = [queued(make_job("a", gpus=4), H), queued(make_job("b", gpus=4, submit=1), H)]
    first = both(0, queue, [], cluster, config(out_of_order=True), None)
    assert [s.job_id for s in first.starts] == ["a"]  # "b" did not fit beside it
    # "a" never started (its start was refused): "b" fits now
    second = both(10, first.waiting, [], cluster, config(out_of_order=True), first.facts)
    assert [s.job_id for s in second.starts] == ["b"]


def test_a_pass_told_to_keep_its_starts_leaves_them_allocated() -> None:
    cluster = Cluster(nodes(2, 8))
    queue = [queued(make_job("a", gpus=8), H), queued(make_job("b", gpus=4, submit=1), H)]
    kept = both(0, queue, [], cluster, config(out_of_order=True), None, keep_starts=True)
    assert [s.job_id for s in kept.starts] == ["a", "b"]
    assert (cluster.index.free_gpus, cluster.twin.free_gpus) == (4, 16)
    assert [cluster.index.free_on(i) for i in (0, 1)] == [0, 4]
    # the carried facts are of the cluster with the starts taken: "c" (8 GPUs) is stuck
    c = queued(make_job("c", gpus=8, submit=2), H, at=2)
    for start in kept.starts:
        cluster.twin.allocate(start.placement)
    stuck = both(5, kept.waiting, [c], cluster, config(out_of_order=True), kept.facts)
    assert not stuck.starts and stuck.facts is not None and stuck.facts.stuck(cluster.index)


def test_a_deadline_passed_since_bursts_the_job() -> None:
    cluster = Cluster(nodes(1, 8))
    cluster.busy(0, 8)
    queue = [queued(make_job("a", gpus=4), 100)]
    first = both(0, queue, [], cluster, config(out_of_order=True), None)
    assert first.facts is not None and first.facts.none_expired(99)
    second = both(100, first.waiting, [], cluster, config(out_of_order=True), first.facts)
    assert [b.job_id for b in second.bursts] == ["a"]


def test_an_arrival_with_an_earlier_deadline_lowers_the_floor() -> None:
    cluster = Cluster(nodes(1, 8))
    cluster.busy(0, 8)
    queue = [queued(make_job("a", gpus=4), H)]
    first = both(0, queue, [], cluster, config(out_of_order=True), None)
    soon = queued(make_job("soon", gpus=4, submit=1), 10, at=1)
    second = both(1, first.waiting, [soon], cluster, config(out_of_order=True), first.facts)
    third = both(11, second.waiting, [], cluster, config(out_of_order=True), second.facts)
    assert [b.job_id for b in third.bursts] == ["soon"]


def test_facts_of_one_cluster_say_nothing_of_another() -> None:
    big, small = Cluster(nodes(2, 8)), Cluster(nodes(1, 8))
    big.busy(0, 8)
    big.busy(1, 8)
    queue = [queued(make_job("a", gpus=16), H)]
    first = both(0, queue, [], big, config(out_of_order=True), None)
    assert first.facts is not None and first.facts.fit_on is big.index
    # the cluster lost a node: the job can never fit now, and bursts at once
    second = both(10, first.waiting, [], small, config(out_of_order=True), first.facts)
    assert [b.job_id for b in second.bursts] == ["a"]


def test_a_job_held_when_it_could_never_fit_is_looked_at_again() -> None:
    cluster = Cluster(nodes(1, 8))
    arrivals = [queued(make_job("a", gpus=16), H)]
    first = both(0, [], arrivals, cluster, config(), None, hold={"*": "cloud down"})
    assert first.facts is not None and first.facts.fit_on is None
    second = both(10, first.waiting, [], cluster, config(), first.facts)  # the hold lifted
    assert [b.job_id for b in second.bursts] == ["a"]


@pytest.mark.parametrize("order", [QueueOrder.FIFO, QueueOrder.SJF])
def test_an_arrival_among_stuck_jobs_starts_with_the_count_of_jobs_it_passes(
    order: QueueOrder,
) -> None:
    cluster = Cluster(nodes(2, 8))
    cluster.busy(0, 8)
    cluster.busy(1, 7)
    queue = [
        queued(make_job(f"big{i}", gpus=4, submit=i, runtime=H * (i + 1)), H) for i in range(3)
    ]
    cfg = config(out_of_order=True, order=order)
    first = both(0, queue, [], cluster, cfg, None)
    late = queued(make_job("late", gpus=1, submit=5, runtime=1.5 * H), H, at=5)
    second = both(5, first.waiting, [late], cluster, cfg, first.facts)
    passed = 3 if order is QueueOrder.FIFO else 1  # shortest first: after big0 only
    assert second.starts[0].reason.endswith(f"while {passed} earlier job(s) wait")


def test_in_order_an_arrival_ahead_of_a_stuck_queue_still_starts() -> None:
    cluster = Cluster(nodes(1, 8))
    cluster.busy(0, 8)
    cfg = config(order=QueueOrder.SJF)
    queue = [queued(make_job("long", gpus=4, runtime=10 * H), H)]
    first = both(0, queue, [], cluster, cfg, None)
    assert first.facts is not None and first.facts.stuck(cluster.index)
    short = queued(make_job("short", gpus=0, cpus=1.0, submit=5, runtime=60), H, at=5)
    second = both(5, first.waiting, [short], cluster, cfg, first.facts)
    assert [s.job_id for s in second.starts] == ["short"]


def test_a_gpu_less_job_waiting_is_looked_at_on_a_full_cluster() -> None:
    cluster = Cluster(nodes(1, 8, cpus=4.0))
    cluster.busy(0, 8, cpus=2.0)
    ended = cluster.busy(0, 0, cpus=2.0)  # no GPU and no CPU free
    cfg = config(out_of_order=True)
    first = both(0, [queued(make_job("a", gpus=4), H)], [], cluster, cfg, None)
    cpu = queued(make_job("cpu", gpus=0, cpus=2.0, submit=1), H, at=1)
    second = both(1, first.waiting, [cpu], cluster, cfg, first.facts)
    assert second.starts == []
    cluster.release(ended)  # CPUs free, still no GPU
    third = both(2, second.waiting, [], cluster, cfg, second.facts)
    assert [s.job_id for s in third.starts] == ["cpu"]


ORDERS = list(QueueOrder)


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    out_of_order=st.booleans(),
    order=st.sampled_from(ORDERS),
    cap=st.sampled_from([None, 1, 3]),
    cpus=st.booleans(),
    best_fit=st.booleans(),
    keep_starts=st.booleans(),
)
def test_passes_with_carried_facts_decide_as_passes_told_afresh(
    seed: int,
    out_of_order: bool,
    order: QueueOrder,
    cap: int | None,
    cpus: bool,
    best_fit: bool,
    keep_starts: bool,
) -> None:
    # A run of passes as the simulator makes them (starts carried out, the facts handed on),
    # with changes between passes: jobs end or never start, arrivals, time past deadlines,
    # holds that come and go, a queue changed behind the facts' back, another cluster; the
    # starts allocated by the caller or kept allocated by the pass.
    rng = random.Random(seed)
    shape = [Node(f"n{i}", 4, cpus=8.0 if cpus else 0.0) for i in range(3)]
    cluster = Cluster(shape)
    placement = PlacementStrategy.BEST_FIT if best_fit else PlacementStrategy.FIRST_FIT
    cfg = SchedulerConfig(WaitPolicy(PolicyKind.COMPUTE, 0.0), out_of_order, cap, order, placement)
    queue: list[QueuedJob] = []
    facts: QueueFacts | None = None
    running: list[tuple[Part, ...]] = []
    now, serial = 0.0, 0
    for _ in range(40):
        now += rng.choice([0.0, 1.0, 5.0, 30.0])
        arrivals = []
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            serial += 1
            gpus = rng.choice([0, 1, 1, 2, 3, 4, 6, 8, 20])
            job = make_job(f"j{serial:03d}", gpus=gpus, submit=now, cpus=rng.choice([0.0, 2.0]))
            budget = rng.choice([0.0, 3.0, 20.0, 100.0, math.inf])
            arrivals.append(queued(job, budget, at=now))
        if running and rng.random() < 0.3:  # a job ends
            cluster.release(running.pop(rng.randrange(len(running))))
        change = rng.random()
        if change < 0.05 and queue:  # the queue changed: another list, one job less
            queue = queue[1:]
        elif change < 0.1 and queue:  # a budget changed (a new list, as a caller makes)
            queue = [*queue[:-1], QueuedJob(queue[-1].job, queue[-1].queued_at, 0.0)]
        elif change < 0.13:  # the cluster changed (a node more)
            cluster = Cluster([*shape, Node("extra", 8)])
            running = []
        hold = {"*": "cloud down"} if rng.random() < 0.15 else None
        result = both(now, queue, arrivals, cluster, cfg, facts, hold, keep_starts)
        carried_out = rng.random() < 0.9  # (else refused, as a live store may)
        for start in result.starts:
            if keep_starts and carried_out:  # (taken on the index by the pass already)
                cluster.twin.allocate(start.placement)
            elif keep_starts:
                cluster.index.release(start.placement)
            else:
                cluster.allocate(start.placement)
            if carried_out:
                running.append(start.placement)
        queue, facts = result.waiting, result.facts
