"""The scheduling pass: the order of work of docs/scheduling.md at one instant, hand-computed."""

import math

from starburst.core.capacity import CapacityIndex, Node, Part
from starburst.core.cycle import HOLD_ALL, admit, schedule_pass
from starburst.core.job import QueuedJob
from starburst.core.ordering import QueueOrder
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.queue_facts import QueueFacts
from tests.builders import H, config, make_job, nodes, queued


def busy(index: CapacityIndex, node: int, gpus: int) -> None:
    index.allocate((Part(node, index.nodes[node].name, gpus, 0.0, 0.0),))


def ids(decisions: list) -> list[str]:  # type: ignore[type-arg]
    return [getattr(d, "job_id", None) or d.id for d in decisions]


def test_a_budget_expiring_as_gpus_free_up_still_bursts() -> None:
    index = CapacityIndex(nodes(1, 8))  # the job that held the GPUs ended at t=600
    entry = queued(make_job("a", gpus=8), budget=600, at=0)
    result = schedule_pass(600, [entry], [], index, config())
    assert ids(result.bursts) == ["a"] and result.starts == []
    assert result.bursts[0].reason == "waited 10m of a 10m budget"


def test_a_budget_not_yet_expired_starts_when_gpus_are_free() -> None:
    index = CapacityIndex(nodes(1, 8))
    result = schedule_pass(599, [queued(make_job("a", gpus=8), 600)], [], index, config())
    assert ids(result.starts) == ["a"] and result.bursts == []


def test_in_order_stops_at_the_first_job_that_does_not_fit() -> None:
    index = CapacityIndex(nodes(1, 8))
    busy(index, 0, 4)
    queue = [queued(make_job("big", gpus=8), H), queued(make_job("small", gpus=1, submit=1), H)]
    result = schedule_pass(10, queue, [], index, config())
    assert result.starts == []
    assert ids(result.waiting) == ["big", "small"]


def test_out_of_order_starts_every_job_that_fits_behind_a_blocked_head() -> None:
    index = CapacityIndex(nodes(1, 8))
    busy(index, 0, 4)
    queue = [queued(make_job(f"j{i}", gpus=g, submit=i), H) for i, g in enumerate([8, 2, 4, 2])]
    result = schedule_pass(10, queue, [], index, config(out_of_order=True))
    assert ids(result.starts) == ["j1", "j3"]
    assert ids(result.waiting) == ["j0", "j2"]
    assert "out of order" in result.starts[0].reason and "1 earlier job" in result.starts[0].reason


def test_a_bigger_job_of_smaller_pods_fits_where_a_smaller_one_pod_job_did_not() -> None:
    index = CapacityIndex(nodes(2, 8))
    busy(index, 0, 2)
    busy(index, 1, 2)  # 6 free on each node: no room for one 8-GPU pod, room for two 6-GPU pods
    queue = [
        queued(make_job("one-pod", gpus=8, pods=1), H),
        queued(make_job("two-pods", gpus=12, pods=2, submit=1), H),
    ]
    result = schedule_pass(10, queue, [], index, config(out_of_order=True))
    assert ids(result.starts) == ["two-pods"] and ids(result.waiting) == ["one-pod"]
    assert [p.gpus for p in result.starts[0].placement] == [6, 6]


def test_the_pass_leaves_the_capacity_snapshot_as_it_found_it() -> None:
    index = CapacityIndex(nodes(2, 8))
    schedule_pass(0, [], [queued(make_job("a", gpus=8), 0)], index, config(out_of_order=True))
    assert index.free_gpus == 16


def test_zero_budget_arrival_that_does_not_fit_bursts_in_the_same_instant() -> None:
    index = CapacityIndex(nodes(1, 8))
    busy(index, 0, 7)
    no_wait = WaitPolicy(PolicyKind.NO_WAIT)
    arrivals = [
        admit(make_job("fits", gpus=1, submit=5), no_wait, 5),
        admit(make_job("too-big", gpus=2, submit=5), no_wait, 5),
    ]
    result = schedule_pass(5, [], arrivals, index, config(PolicyKind.NO_WAIT))
    assert ids(result.starts) == ["fits"]
    assert ids(result.bursts) == ["too-big"]
    assert result.waiting == []


def test_expired_jobs_burst_before_scheduling_so_they_do_not_take_free_gpus() -> None:
    index = CapacityIndex(nodes(1, 8))
    old = queued(make_job("old", gpus=4), budget=100, at=0)
    new = queued(make_job("new", gpus=8, submit=50), budget=H, at=50)
    result = schedule_pass(100, [old, new], [], index, config())
    assert ids(result.bursts) == ["old"] and ids(result.starts) == ["new"]


def test_queue_cap_bursts_jobs_beyond_position_n_after_scheduling() -> None:
    index = CapacityIndex(nodes(1, 8))
    busy(index, 0, 8)
    queue = [queued(make_job(f"j{i}", gpus=1, submit=i), H) for i in range(4)]
    result = schedule_pass(10, queue, [], index, config(out_of_order=True, cap=2))
    assert ids(result.waiting) == ["j0", "j1"]
    assert ids(result.bursts) == ["j2", "j3"]
    assert result.bursts[0].reason == "queue position 3 is beyond the queue cap of 2"


def test_queue_cap_counts_only_jobs_still_waiting_after_starts() -> None:
    index = CapacityIndex(nodes(1, 8))
    busy(index, 0, 6)
    queue = [queued(make_job(f"j{i}", gpus=1, submit=i), H) for i in range(4)]
    result = schedule_pass(10, queue, [], index, config(out_of_order=True, cap=1))
    assert ids(result.starts) == ["j0", "j1"]
    assert ids(result.waiting) == ["j2"] and ids(result.bursts) == ["j3"]


def test_fifo_ties_are_broken_by_job_id_whatever_the_input_order() -> None:
    index = CapacityIndex(nodes(1, 1))
    arrivals = [queued(make_job(x, gpus=1, submit=0), H) for x in ("b", "c", "a")]
    result = schedule_pass(0, [], arrivals, index, config())
    assert ids(result.starts) == ["a"]
    assert ids(result.waiting) == ["b", "c"]


def test_sjf_and_edf_orders() -> None:
    index = CapacityIndex(nodes(1, 1))
    long = queued(make_job("long", runtime=5 * H, submit=0), budget=100)
    short = queued(make_job("short", runtime=H, submit=1), budget=50)
    result = schedule_pass(2, [], [long, short], index, config(order=QueueOrder.SJF))
    assert ids(result.starts) == ["short"]
    urgent = queued(make_job("urgent", submit=1), budget=10)
    relaxed = queued(make_job("relaxed", submit=0), budget=1000)
    result = schedule_pass(2, [], [relaxed, urgent], index, config(order=QueueOrder.EDF))
    assert ids(result.starts) == ["urgent"]


def test_a_queued_job_larger_than_the_cluster_bursts_on_the_next_pass() -> None:
    index = CapacityIndex(nodes(2, 8))
    giant = queued(make_job("giant", gpus=32), budget=600, at=0)
    fits = queued(make_job("fits", gpus=16, submit=1), budget=600, at=1)
    busy(index, 0, 8)
    result = schedule_pass(300, [giant, fits], [], index, config(out_of_order=True))
    assert ids(result.bursts) == ["giant"] and ids(result.waiting) == ["fits"]
    assert result.bursts[0].reason.startswith("needs 32 GPUs and the private cluster has 16")


def test_a_never_fitting_job_bursts_whatever_its_place_in_a_short_or_long_queue() -> None:
    # a long queue takes the pass's quick check of every job's shape at once: same answer
    index = CapacityIndex(nodes(2, 8))
    busy(index, 0, 8)
    busy(index, 1, 8)
    for length in (3, 100):
        for place in (0, 1, length // 2, length):
            waiting = [
                queued(make_job(f"w{i:03d}", gpus=1 + i % 4, submit=i), budget=600, at=i)
                for i in range(length)
            ]
            giant = queued(make_job("giant", gpus=32, submit=place), budget=600, at=place)
            queue = [*waiting[:place], giant, *waiting[place:]]
            result = schedule_pass(300, queue, [], index, config(out_of_order=True))
            assert ids(result.bursts) == ["giant"], (length, place)
            assert len(result.waiting) == length


def test_a_held_never_fitting_job_bursts_as_soon_as_the_hold_lifts() -> None:
    index = CapacityIndex(nodes(1, 8))
    entry = admit(
        make_job("giant", gpus=64, team="vision"),
        WaitPolicy(PolicyKind.CONSTANT, coefficient=10 * H),
        0,
    )
    hold = {"vision": "budget spent"}
    first = schedule_pass(0, [], [entry], index, config(), hold=hold)
    still = schedule_pass(60, first.waiting, [], index, config(), hold=hold)
    assert still.bursts == [] and ids(still.waiting) == ["giant"]
    assert still.held == [("giant", "budget spent")]  # it would burst: announced as held
    lifted = schedule_pass(120, still.waiting, [], index, config())
    assert ids(lifted.bursts) == ["giant"] and lifted.waiting == []  # not at 10 h
    assert "bursts at once instead of waiting its budget" in lifted.bursts[0].reason


def test_a_queued_job_is_not_judged_while_no_node_is_schedulable() -> None:
    cordoned = CapacityIndex([Node("n0", 8, schedulable=False)])
    entry = queued(make_job("a", gpus=64), budget=600, at=0)
    result = schedule_pass(10, [entry], [], cordoned, config())
    assert result.bursts == [] and ids(result.waiting) == ["a"]


def test_a_never_fitting_job_under_a_never_bursting_policy_bursts_with_the_reason() -> None:
    index = CapacityIndex(nodes(2, 8))
    giant = admit(make_job("giant", gpus=32), WaitPolicy(PolicyKind.INFINITE), 0)
    small = admit(make_job("small", gpus=1, submit=0.5), WaitPolicy(PolicyKind.INFINITE), 0.5)
    result = schedule_pass(1, [], [giant, small], index, config(PolicyKind.INFINITE))
    assert ids(result.bursts) == ["giant"]
    assert "the private cluster has 16 GPUs in all" in result.bursts[0].reason
    assert ids(result.starts) == ["small"]  # the giant does not block the in-order queue


def test_an_arrival_the_empty_cluster_cannot_hold_bursts_at_once_whatever_its_budget() -> None:
    index = CapacityIndex([Node(f"n{i}", 8, gpu_type="a100") for i in range(2)])
    busy(index, 0, 8)
    busy(index, 1, 8)  # full: a job that could fit later waits its budget
    compute = WaitPolicy(PolicyKind.COMPUTE, coefficient=1.0)
    arrivals = [
        admit(make_job("giant", gpus=1000), compute, 0),
        admit(make_job("h100", gpus=8, gpu_type="h100"), compute, 0),
        admit(make_job("fits-later", gpus=8), compute, 0),
    ]
    result = schedule_pass(0, [], arrivals, index, config(PolicyKind.COMPUTE))
    assert ids(result.bursts) == ["giant", "h100"]
    assert result.bursts[0].reason == (
        "needs 1000 GPUs and the private cluster has 16 GPUs in all: bursts at once instead "
        "of waiting its budget"
    )
    assert "no node of the private cluster has h100 GPUs" in result.bursts[1].reason
    assert ids(result.waiting) == ["fits-later"]


def test_a_never_fitting_arrival_of_a_held_team_waits_with_the_hold_reason() -> None:
    index = CapacityIndex(nodes(1, 8))
    entry = admit(make_job("giant", gpus=64, team="vision"), WaitPolicy(PolicyKind.NO_WAIT), 0)
    result = schedule_pass(0, [], [entry], index, config(), hold={"vision": "budget spent"})
    assert result.bursts == [] and ids(result.waiting) == ["giant"]
    assert result.held == [("giant", "budget spent")]


def test_a_cluster_with_no_schedulable_node_proves_nothing_so_arrivals_wait() -> None:
    index = CapacityIndex([Node("n0", 8, schedulable=False)])  # cordoned for maintenance
    entry = admit(make_job("a", gpus=64), WaitPolicy(PolicyKind.CONSTANT, coefficient=H), 0)
    result = schedule_pass(0, [], [entry], index, config(PolicyKind.CONSTANT))
    assert result.bursts == [] and ids(result.waiting) == ["a"]


def test_waiting_decisions_say_how_long_of_the_budget_has_passed() -> None:
    index = CapacityIndex(nodes(1, 8))
    busy(index, 0, 8)
    entry = queued(make_job("a", gpus=1), budget=40 * 60, at=0)
    result = schedule_pass(12 * 60, [entry], [], index, config())
    [wait] = result.wait_decisions(12 * 60)
    assert wait.reason == "waiting 12m of a 40m budget"
    assert wait.until == 40 * 60


def test_infinite_budget_never_expires() -> None:
    entry = queued(make_job("a"), budget=math.inf)
    assert math.isinf(entry.deadline)
    index = CapacityIndex(nodes(1, 8))
    busy(index, 0, 8)
    result = schedule_pass(1e12, [entry], [], index, config(PolicyKind.INFINITE))
    assert ids(result.waiting) == ["a"]


def test_a_team_over_its_cloud_budget_waits_on_prem_instead_of_bursting() -> None:
    index = CapacityIndex(nodes(1, 8))
    busy(index, 0, 8)
    over = queued(make_job("ml-job", gpus=1, team="ml"), budget=60, at=0)
    other = queued(make_job("cv-job", gpus=1, team="cv", submit=1), budget=60, at=1)
    hold = {"ml": "team ml spent $300.00 of its $250.00 cloud budget"}
    result = schedule_pass(100, [over, other], [], index, config(cap=0), hold=hold)
    assert ids(result.bursts) == ["cv-job"]
    assert ids(result.waiting) == ["ml-job"]
    assert result.held == [("ml-job", hold["ml"])]
    # once GPUs free up, the held job starts on-prem
    index2 = CapacityIndex(nodes(1, 8))
    later = schedule_pass(200, result.waiting, [], index2, config(cap=0), hold=hold)
    assert ids(later.starts) == ["ml-job"]


class CountedEntry(QueuedJob):
    """A queue entry that counts how often the pass reads its id."""

    reads = 0

    @property
    def id(self) -> str:
        CountedEntry.reads += 1
        return self.job.id


def test_a_pass_over_many_held_jobs_does_work_linear_in_the_queue() -> None:
    # The cloud side cannot burst (HOLD_ALL): every expired job is held, in each of the
    # pass's steps that looks at it. Recording each once must not compare it with every
    # job held before it (a queue of thousands held jobs made each pass take seconds).
    index = CapacityIndex(nodes(1, 8))
    busy(index, 0, 8)
    n = 2_000
    queue = [CountedEntry(make_job(f"j{i}", gpus=1, submit=i), float(i), 60.0) for i in range(n)]
    arrivals = [CountedEntry(make_job("late", gpus=1, submit=n), float(n), 0.0)]
    CountedEntry.reads = 0
    result = schedule_pass(1e6, queue, arrivals, index, config(cap=10), hold={HOLD_ALL: "down"})
    assert len(result.held) == n + 1 and result.bursts == []
    assert len({job_id for job_id, _ in result.held}) == n + 1  # each held job once
    assert CountedEntry.reads < 20 * n  # quadratic bookkeeping read ids ~n²/2 times


def long_queue(count: int = 70) -> list[QueuedJob]:
    """Long enough that the pass asks the queue's facts (``_all_keep_waiting``)."""
    return [queued(make_job(f"j{i:02d}", gpus=1, submit=i), H) for i in range(count)]


def test_kept_facts_of_another_queue_are_not_used() -> None:
    # facts told of a queue where no budget had run out; the queue passed now has one
    index = CapacityIndex(nodes(1, 8))
    busy(index, 0, 8)
    fresh = long_queue()
    facts = QueueFacts(fresh)
    assert facts.earliest_deadline() == H
    now = [*fresh[1:], queued(make_job("late", gpus=1, submit=100), 5, at=100)]
    result = schedule_pass(200, now, [], index, config(out_of_order=True), facts=facts)
    assert ids(result.bursts) == ["late"]
    assert len(result.waiting) == len(fresh) - 1


def test_kept_facts_still_find_the_gpu_less_job_a_full_cluster_can_start() -> None:
    index = CapacityIndex(nodes(1, 8, cpus=8.0))
    busy(index, 0, 8)
    queue = [*long_queue(), queued(make_job("cpu", gpus=0, submit=99), H)]
    facts = QueueFacts(queue)
    for _ in range(2):  # told once, kept for the next pass over the same queue
        result = schedule_pass(10, queue, [], index, config(out_of_order=True), facts=facts)
        assert ids(result.starts) == ["cpu"]
    assert facts.may_need_a_look() and facts.shapes() == {
        (1, None, None, 0.0, 0.0),
        (0, None, None, 0.0, 0.0),
    }
