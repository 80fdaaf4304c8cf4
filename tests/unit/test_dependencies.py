"""The dependency and array-throttle gate (``starburst.core.dependencies``)."""

from __future__ import annotations

import pytest

from starburst.core.dependencies import (
    MAX_ARRAY_LIMIT,
    MAX_DEPENDENCIES,
    AfterKind,
    Dependency,
    check_limit,
    find_cycle,
    gate,
    is_gated,
    parse_after,
    parse_many,
)
from starburst.core.errors import ConfigError
from starburst.core.lifecycle import JobState
from tests.builders import make_job

OK = AfterKind.OK
ANY = AfterKind.ANY


def after(job_id: str, *deps: Dependency, submit: float = 0.0):  # type: ignore[no-untyped-def]
    return make_job(job_id, submit=submit, after=tuple(deps))


def element(job_id: str, limit: int = 2, submit: float = 0.0):  # type: ignore[no-untyped-def]
    return make_job(job_id, submit=submit, array="arr", array_limit=limit)


def test_parse_after_reads_ok_any_and_the_default() -> None:
    assert parse_after("abc123") == Dependency("abc123", ANY)
    assert parse_after(" abc123:ok ") == Dependency("abc123", OK)
    assert parse_after("train-1:ANY") == Dependency("train-1", ANY)
    assert str(Dependency("x", OK)) == "x:ok"


@pytest.mark.parametrize("text", ["", ":ok", "a b", "abc:maybe", "abc:ok:ok", "a" * 300, "x,y"])
def test_parse_after_refuses_garbage_with_the_value(text: str) -> None:
    with pytest.raises(ConfigError, match="--after"):
        parse_after(text)


def test_parse_many_splits_commas_and_drops_repeats() -> None:
    deps = parse_many(["a,b:ok", "a"])
    assert deps == (Dependency("a"), Dependency("b", OK))
    with pytest.raises(ConfigError, match="at most"):
        parse_many([",".join(f"j{i}" for i in range(MAX_DEPENDENCIES + 1))])


@pytest.mark.parametrize("limit", [0, -1, MAX_ARRAY_LIMIT + 1, 10**30])
def test_an_array_limit_must_be_at_least_one_and_bounded(limit: int) -> None:
    with pytest.raises(ConfigError, match="array limit"):
        check_limit(limit)
    assert check_limit(8) == 8


def test_find_cycle_names_the_loop_and_passes_a_dag() -> None:
    assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) is None
    assert find_cycle({"a": ["a"]}) == ["a", "a"]
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["b"]}) == ["b", "c", "b"]
    chain = {f"j{i}": [f"j{i + 1}"] for i in range(50_000)}  # no recursion limit
    assert find_cycle(chain) is None


def test_only_jobs_with_dependencies_or_a_limit_are_gated() -> None:
    assert not is_gated(make_job("plain"))
    assert not is_gated(make_job("a", array="arr"))  # an array without a limit
    assert is_gated(element("e"))
    assert is_gated(after("b", Dependency("a")))


def test_afterany_waits_for_the_end_whatever_it_was() -> None:
    job = after("b", Dependency("a"))
    still = gate([job], {"a": JobState.RUNNING_CLOUD}, {})
    assert still.held == [(job, "waiting for job a to end")]
    for ending in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED):
        assert gate([job], {"a": ending}, {}).eligible == [job]


def test_afterok_waits_for_success_and_cancels_when_it_can_never_come() -> None:
    job = after("b", Dependency("a", OK))
    assert gate([job], {}, {}).held == [(job, "waiting for job a to succeed")]
    assert gate([job], {"a": JobState.SUCCEEDED}, {}).eligible == [job]
    failed = gate([job], {"a": JobState.FAILED}, {})
    assert failed.eligible == [] and failed.held == []
    [(cancelled, reason)] = failed.cancelled
    assert cancelled is job
    assert reason.startswith("dependency never satisfied: job a failed")


def test_a_cancellation_cascades_to_afterok_and_releases_afterany() -> None:
    b = after("b", Dependency("a", OK))
    c = after("c", Dependency("b", OK))
    d = after("d", Dependency("c"))
    result = gate([d, c, b], {"a": JobState.CANCELLED}, {})
    assert [j.id for j, _ in result.cancelled] == ["b", "c"]
    assert result.eligible == [d]


def test_every_dependency_must_be_met_and_the_reason_counts_the_rest() -> None:
    job = after("z", Dependency("a"), Dependency("b", OK), Dependency("c"))
    result = gate([job], {"a": JobState.SUCCEEDED}, {})
    assert result.held == [(job, "waiting for job b to succeed (and 1 more)")]


def test_the_throttle_lets_in_only_the_free_slots_in_submit_order() -> None:
    elements = [element(f"e{i}", limit=3, submit=float(i)) for i in range(5)]
    result = gate(list(reversed(elements)), {}, {"arr": 1})
    assert result.eligible == elements[:2]
    assert [j for j, _ in result.held] == elements[2:]
    assert "3 of its elements are queued or running, at most 3 at once" in result.held[0][1]
    assert gate(elements, {}, {"arr": 3}).eligible == []


def test_an_element_needs_its_dependencies_and_a_slot() -> None:
    e = make_job("e", array="arr", array_limit=1, after=(Dependency("a"),))
    assert gate([e], {"a": JobState.SUCCEEDED}, {"arr": 1}).eligible == []
    assert gate([e], {}, {}).held[0][1] == "waiting for job a to end"
    assert gate([e], {"a": JobState.SUCCEEDED}, {}).eligible == [e]
