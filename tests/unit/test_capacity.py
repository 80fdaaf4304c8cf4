"""Placement rules: first-fit vs best-fit, the multi-node split, CPUs, GPU types, all-or-nothing."""

import random

import pytest

from starburst.core.capacity import CapacityIndex, Node, Part, PlacementStrategy
from starburst.core.errors import ConfigError
from tests.builders import make_job, nodes

FF, BF = PlacementStrategy.FIRST_FIT, PlacementStrategy.BEST_FIT


def shares(placement: object) -> list[tuple[str, int]]:
    return [(p.node_name, p.gpus) for p in placement]  # type: ignore[attr-defined]


def use(index: CapacityIndex, gpus_by_node: dict[int, int]) -> None:
    """Occupy GPUs on given nodes, as running jobs would."""
    for node, gpus in gpus_by_node.items():
        index.allocate((Part(node, index.nodes[node].name, gpus, 0.0, 0.0),))


def test_first_fit_takes_the_lowest_node_with_room_and_best_fit_the_tightest() -> None:
    index = CapacityIndex(nodes(3, 8))
    use(index, {0: 6, 1: 2})  # free: node0 2, node1 6, node2 8
    job = make_job(gpus=2)
    assert shares(index.place(job, FF)) == [("node-0", 2)]
    assert shares(index.place(make_job(gpus=3), FF)) == [("node-1", 3)]
    assert shares(index.place(make_job(gpus=3), BF)) == [("node-1", 3)]
    assert shares(index.place(make_job(gpus=7), BF)) == [("node-2", 7)]
    use(index, {0: 1})  # free: 1, 6, 8
    assert shares(index.place(make_job(gpus=1), BF)) == [("node-0", 1)]
    assert shares(index.place(make_job(gpus=2), FF)) == [("node-1", 2)]


def test_best_fit_breaks_ties_by_node_order() -> None:
    index = CapacityIndex(nodes(3, 8))
    use(index, {1: 4, 2: 4})
    assert shares(index.place(make_job(gpus=4), BF)) == [("node-1", 4)]


def test_a_large_job_is_split_into_full_nodes_and_a_remainder() -> None:
    index = CapacityIndex(nodes(4, 8))
    use(index, {0: 6})  # node0 has 2 free
    assert shares(index.place(make_job(gpus=18), FF)) == [
        ("node-1", 8),
        ("node-2", 8),
        ("node-0", 2),
    ]
    assert shares(index.place(make_job(gpus=18), BF)) == [
        ("node-1", 8),
        ("node-2", 8),
        ("node-0", 2),
    ]
    assert shares(index.place(make_job(gpus=16), FF)) == [("node-1", 8), ("node-2", 8)]


def test_a_job_of_pods_is_split_into_whole_pods() -> None:
    index = CapacityIndex(nodes(4, 8))
    assert shares(index.place(make_job(gpus=12, pods=4), FF)) == [("node-0", 6), ("node-1", 6)]
    assert shares(index.place(make_job(gpus=12), FF)) == [("node-0", 8), ("node-1", 4)]
    assert shares(index.place(make_job(gpus=16, pods=2), FF)) == [("node-0", 8), ("node-1", 8)]
    use(index, {0: 3, 1: 3, 2: 3})  # free: 5, 5, 5, 8
    assert shares(index.place(make_job(gpus=10, pods=2), FF)) == [("node-0", 5), ("node-1", 5)]
    assert shares(index.place(make_job(gpus=10), FF)) == [("node-3", 8), ("node-0", 2)]
    assert index.place(make_job(gpus=18, pods=3), BF) is None  # 6-GPU pods: only node-3 holds one


def test_a_pod_larger_than_every_node_never_fits() -> None:
    index = CapacityIndex(nodes(4, 8))
    assert not index.could_ever_fit(make_job(gpus=20, pods=2))
    assert index.could_ever_fit(make_job(gpus=20))  # the same size in any shape: [8, 8, 4]
    assert index.could_ever_fit(make_job(gpus=8, pods=1))
    assert not index.could_ever_fit(make_job(gpus=16, pods=1))  # one 16-GPU pod
    assert index.could_ever_fit(make_job(gpus=16))
    assert index.place(make_job(gpus=20, pods=2), FF) is None


def test_placement_is_all_or_nothing_and_leaves_the_index_unchanged() -> None:
    index = CapacityIndex(nodes(3, 8))
    use(index, {0: 1, 1: 1})  # only node2 is fully free
    before = [index.free_on(i) for i in range(3)]
    assert index.place(make_job(gpus=16), FF) is None
    assert [index.free_on(i) for i in range(3)] == before


def test_nine_gpus_fit_as_one_full_node_plus_one() -> None:
    index = CapacityIndex(nodes(3, 8))
    use(index, {0: 1, 1: 1})
    assert shares(index.place(make_job(gpus=9), FF)) == [("node-2", 8), ("node-0", 1)]


def test_cpus_must_fit_too() -> None:
    index = CapacityIndex([Node("small", 8, cpus=8), Node("big", 8, cpus=64)])
    assert shares(index.place(make_job(gpus=1, cpus=16), FF)) == [("big", 1)]
    assert index.place(make_job(gpus=1, cpus=100), FF) is None


def test_split_jobs_share_cpus_in_proportion_to_gpus() -> None:
    index = CapacityIndex(nodes(2, 8, cpus=32))
    placement = index.place(make_job(gpus=12, cpus=24), FF)
    assert placement is not None
    assert [p.cpus for p in placement] == [16, 8]


def test_gpu_type_requests_only_land_on_that_type() -> None:
    index = CapacityIndex([Node("v0", 4, gpu_type="v100"), Node("a0", 8, gpu_type="a100")])
    assert shares(index.place(make_job(gpus=2, gpu_type="a100"), FF)) == [("a0", 2)]
    assert shares(index.place(make_job(gpus=2), FF)) == [("v0", 2)]
    assert index.place(make_job(gpus=1, gpu_type="h100"), FF) is None
    assert not index.could_ever_fit(make_job(gpus=1, gpu_type="h100"))
    # the largest a100 node has 8 GPUs: 16 a100 GPUs need two such nodes, there is one
    assert not index.could_ever_fit(make_job(gpus=16, gpu_type="a100"))
    assert index.could_ever_fit(make_job(gpus=8, gpu_type="a100"))


def test_heterogeneous_split_uses_the_largest_node_size() -> None:
    index = CapacityIndex([Node("n4", 4), Node("n8a", 8), Node("n8b", 8)])
    assert shares(index.place(make_job(gpus=12), FF)) == [("n8a", 8), ("n4", 4)]


def test_unschedulable_nodes_take_no_work() -> None:
    index = CapacityIndex([Node("cordoned", 8, schedulable=False), Node("ok", 8)])
    assert shares(index.place(make_job(gpus=1), FF)) == [("ok", 1)]
    assert index.total_gpus == 8


def test_releasing_frees_and_overcommitting_is_refused() -> None:
    index = CapacityIndex(nodes(1, 8))
    placement = index.place(make_job(gpus=8), FF)
    assert placement is not None
    index.allocate(placement)
    assert index.place(make_job(gpus=1), FF) is None
    with pytest.raises(ConfigError, match="free GPUs"):
        index.allocate(placement)
    index.release(placement)
    assert index.free_gpus == 8
    with pytest.raises(ConfigError, match="more free GPUs than it owns"):
        index.release(placement)


def test_a_job_whose_cpus_no_node_has_can_never_fit() -> None:
    index = CapacityIndex(nodes(3, 8, cpus=16))
    assert not index.could_ever_fit(make_job(gpus=8, cpus=24))
    assert index.could_ever_fit(make_job(gpus=8, cpus=16))
    assert index.could_ever_fit(make_job(gpus=16, cpus=32))  # split: 16 CPUs on each node


def test_could_ever_fit_answers_a_new_request_under_a_known_id_afresh() -> None:
    index = CapacityIndex(nodes(2, 8))
    small = make_job("ns/train", gpus=8)
    assert index.could_ever_fit(small) and index.could_ever_fit(small)  # the kept answer
    # the same id re-created larger (a Kubernetes Job deleted and applied again)
    assert not index.could_ever_fit(make_job("ns/train", gpus=64))
    assert not index.could_ever_fit(make_job("ns/train", gpus=16, pods=1))
    assert index.could_ever_fit(make_job("ns/train", gpus=16))


def test_the_most_free_gpus_kept_as_nodes_change_are_those_a_fresh_index_finds() -> None:
    # ``most_free`` is kept as parts are taken and given back (and looked for again when a
    # node that had the most takes some): after every change it must be what an index of
    # the same free GPUs, built afresh, finds — for typed nodes and cordoned ones too.
    shape = [
        Node("a", 8),
        Node("b", 8, gpu_type="h100"),
        Node("c", 4),
        Node("d", 8, schedulable=False),
    ]
    rng = random.Random(7)
    index = CapacityIndex(shape)
    taken: list[tuple[Part, ...]] = []
    for _ in range(400):
        if taken and rng.random() < 0.45:
            index.release(taken.pop(rng.randrange(len(taken))))
        else:
            node = rng.randrange(len(shape))
            free = index.free_on(node)
            if free:
                part = (Part(node, shape[node].name, rng.randint(1, free), 0.0, 0.0),)
                index.allocate(part)
                taken.append(part)
        fresh = CapacityIndex(shape)
        for placement in taken:
            fresh.allocate(placement)
        assert index.most_free() == fresh.most_free()
        assert index.max_free(make_job(gpus=1)) == fresh.max_free(make_job(gpus=1))
        h100 = make_job(gpus=1, gpu_type="h100")
        assert index.max_free(h100) == fresh.max_free(h100)
