"""Dependencies and array throttles in the simulator, against the naive reference too."""

from __future__ import annotations

import os
import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from starburst.core.capacity import Node
from starburst.core.cycle import SchedulerConfig
from starburst.core.dependencies import AfterKind, Dependency
from starburst.core.errors import ConfigError
from starburst.core.job import Job
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.sim.engine import simulate
from starburst.sim.reference import reference_simulate
from starburst.sim.synthetic import Workload, generate
from starburst.sim.trace import load_trace, write_trace
from starburst.sim.trace_errors import TraceError
from tests.builders import H, config, make_job, nodes


def by_id(jobs: list[Job], cfg: SchedulerConfig, cluster: list[Node] | None = None):  # type: ignore[no-untyped-def]
    return {o.job.id: o for o in simulate(jobs, cluster or nodes(1, 8), cfg).outcomes}


def test_a_dependent_gets_its_whole_budget_once_its_dependency_ends() -> None:
    # compute-wait: budget = gpus × runtime / 8. b (budget 1 h) waits for a (2 h) while c
    # (3 h) queues behind a. Had b's budget run from its submit, it would burst at 1 h;
    # it enters the queue at 2 h, behind c, and bursts when its fresh hour is spent.
    a = make_job("a", gpus=8, runtime=2 * H)
    b = make_job("b", gpus=8, runtime=H, submit=60.0, after=(Dependency("a"),))
    c = make_job("c", gpus=8, runtime=3 * H, submit=30.0)
    out = by_id([a, b, c], config(PolicyKind.COMPUTE, 1.0 / 8))
    assert (out["a"].where, out["a"].end) == ("onprem", 2 * H)
    assert (out["c"].where, out["c"].start) == ("onprem", 2 * H)
    assert (out["b"].where, out["b"].start, out["b"].budget) == ("cloud", 3 * H, H)


def test_a_dependent_waits_for_a_cloud_run_to_end() -> None:
    a = make_job("a", gpus=16, runtime=H)  # larger than the cluster: bursts at once
    b = make_job("b", gpus=1, runtime=H, after=(Dependency("a", AfterKind.OK),))
    out = by_id([a, b], config(PolicyKind.COMPUTE, 1.0))
    assert out["a"].where == "cloud" and out["a"].end == H
    assert (out["b"].where, out["b"].start) == ("onprem", H)


def test_a_chain_runs_one_after_another() -> None:
    jobs = [make_job("j0", runtime=100.0)] + [
        make_job(f"j{i}", runtime=100.0, after=(Dependency(f"j{i - 1}"),)) for i in range(1, 5)
    ]
    out = by_id(jobs, config(PolicyKind.NO_WAIT))
    assert [out[f"j{i}"].start for i in range(5)] == [0.0, 100.0, 200.0, 300.0, 400.0]


def test_zero_length_cloud_runs_release_their_dependents_in_the_same_instant() -> None:
    a = make_job("a", gpus=16, runtime=0.0)
    b = make_job("b", gpus=16, runtime=0.0, after=(Dependency("a"),))
    c = make_job("c", gpus=1, runtime=10.0, after=(Dependency("b"),))
    out = by_id([a, b, c], config(PolicyKind.NO_WAIT))
    assert [out[j].start for j in "abc"] == [0.0, 0.0, 0.0]


def test_the_array_throttle_caps_on_prem_and_cloud_together() -> None:
    # no-wait on a 2-GPU cluster: without a limit all 10 would run at once (2 on-prem, 8 in
    # the cloud); with %3 never more than three of them run anywhere.
    elements = [
        make_job(f"e{i}", runtime=100.0, submit=float(i), array="sweep", array_limit=3)
        for i in range(10)
    ]
    out = by_id(elements, config(PolicyKind.NO_WAIT), nodes(1, 2))
    events = sorted([(o.start, 1) for o in out.values()] + [(o.end, -1) for o in out.values()])
    running = peak = 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    assert peak == 3
    assert sum(o.where == "cloud" for o in out.values()) > 0  # bursts were throttled too
    unlimited = by_id([replace(e, array_limit=None) for e in elements], config(PolicyKind.NO_WAIT))
    assert max(o.start for o in unlimited.values()) == 9.0  # all started on arrival


def test_throttled_elements_start_in_submit_order_as_slots_free() -> None:
    elements = [make_job(f"e{i}", runtime=100.0, array="a", array_limit=1) for i in range(3)]
    out = by_id(elements, config(PolicyKind.COMPUTE, 1.0))
    assert [out[f"e{i}"].start for i in range(3)] == [0.0, 100.0, 200.0]


def test_bad_dependencies_are_refused_before_the_run() -> None:
    with pytest.raises(ConfigError, match="not in the trace"):
        simulate([make_job("a", after=(Dependency("ghost"),))], nodes(), config())
    loop = [make_job("a", after=(Dependency("b"),)), make_job("b", after=(Dependency("a"),))]
    with pytest.raises(ConfigError, match="cycle: a → b → a"):
        simulate(loop, nodes(), config())


def test_a_trace_carries_dependencies_and_arrays(tmp_path: Path) -> None:
    jobs = [
        make_job("a"),
        make_job("b", after=(Dependency("a", AfterKind.OK),), array="s", array_limit=2),
        make_job("c", after=(Dependency("a"), Dependency("b", AfterKind.OK))),
    ]
    path = tmp_path / "t.csv"
    write_trace(jobs, path)
    assert load_trace(path) == jobs


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("b,0,10,1,0,a:sometimes,,", "unknown condition"),
        ("b,0,10,1,0,ghost,,", "depends on 'ghost', not in the trace"),
        ("b,0,10,1,0,b,,", "depends on itself"),
        ("b,0,10,1,0,,s,0", "between 1 and"),
        ("b,0,10,1,0,,s,-1", "whole number"),
        ("b,0,10,1,0,,s,99999999999999", "whole number"),
        ("b,0,10,1,0,,,3", "needs an array"),
        ("b,0,10,1,0,c,,\nc,0,10,1,0,b,,", "cycle"),
    ],
)
def test_bad_dependency_columns_name_the_line(tmp_path: Path, row: str, message: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "job_id,submit_time,runtime,gpus,cpus,after,array,array_limit\na,0,10,1,0,,,\n" + row + "\n"
    )
    with pytest.raises(TraceError, match=message):
        load_trace(path)


POLICIES = [PolicyKind.COMPUTE, PolicyKind.NO_WAIT, PolicyKind.CONSTANT, PolicyKind.STAR]


def with_dependencies(jobs: list[Job], seed: int) -> list[Job]:
    """Some jobs wait for earlier ones; some form throttled arrays."""
    rng = random.Random(seed)
    out: list[Job] = []
    for i, job in enumerate(jobs):
        deps: tuple[Dependency, ...] = ()
        if i and rng.random() < 0.4:
            picks = rng.sample(out, min(len(out), rng.randint(1, 2)))
            deps = tuple(Dependency(p.id, rng.choice(list(AfterKind))) for p in picks)
        array, limit = None, None
        if rng.random() < 0.5:
            array = f"arr{rng.randint(0, 2)}"
            limit = {"arr0": 1, "arr1": 2, "arr2": 4}[array]
        out.append(replace(job, after=deps, array=array, array_limit=limit))
    return out


@settings(
    max_examples=int(os.environ.get("SB_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 10_000),
    kind=st.sampled_from(POLICIES),
    budget=st.sampled_from([0.0, 0.5, 2.0]),
    out_of_order=st.booleans(),
    cap=st.sampled_from([None, 2]),
)
def test_the_engine_agrees_with_the_reference_on_dependencies(
    seed: int, kind: PolicyKind, budget: float, out_of_order: bool, cap: int | None
) -> None:
    cluster = [Node(f"n{i}", 4) for i in range(2)]
    raw = generate(Workload(50, 8, load=1.3, cv=2.0, mean_runtime=1800, seed=seed))
    jobs = with_dependencies([j for j in raw if j.gpus <= 8], seed)
    policy = WaitPolicy.from_budget(kind, budget, jobs)
    fast = {
        o.job.id: o
        for o in simulate(jobs, cluster, SchedulerConfig(policy, out_of_order, cap)).outcomes
    }
    ref = reference_simulate(jobs, cluster, policy, out_of_order, cap)
    assert fast.keys() == ref.keys()
    for job_id, o in fast.items():
        r = ref[job_id]
        assert (o.where, o.start, o.end) == pytest.approx((r.where, r.start, r.end)), job_id
        assert o.cloud_gpu_seconds == pytest.approx(r.cloud_gpu_seconds), job_id
    for job in jobs:  # and the semantics hold: no job starts before what it waits for ends
        for dep in job.after:
            assert fast[job.id].start >= fast[dep.job_id].end


def test_array_elements_entering_together_start_in_index_order_in_both_simulators(
    tmp_path: Path,
) -> None:
    """Ties on queue and submit time go by array index, not by job id: ``z`` (index 0)
    before ``a`` (index 1) on a 1-GPU cluster, with and without a throttle that lets two in
    together; the reference agrees, and a trace's ``array_index`` column round-trips."""
    for limit in (None, 2):
        jobs = [
            make_job(i, runtime=100.0, array="s", array_limit=limit, array_index=n)
            for i, n in (("c", 3), ("a", 1), ("z", 0), ("b", 2))
        ]
        path = tmp_path / f"trace-{limit}.csv"
        write_trace([replace(j, extra={"array_index": str(j.array_index)}) for j in jobs], path)
        loaded = load_trace(path)
        assert sorted((j.id, j.array_index) for j in loaded) == [
            ("a", 1),
            ("b", 2),
            ("c", 3),
            ("z", 0),
        ]
        out = by_id(loaded, config(PolicyKind.INFINITE), nodes(1, 1))
        assert sorted(out, key=lambda i: out[i].start) == ["z", "a", "b", "c"]
        ref = reference_simulate(loaded, nodes(1, 1), WaitPolicy(PolicyKind.INFINITE))
        assert {i: r.start for i, r in ref.items()} == {i: o.start for i, o in out.items()}
