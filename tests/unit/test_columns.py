"""``from_columns``: the very values ``cls(**row)`` builds, a column at a time; and the
values whose ``__init__`` stores through ``slot_setters``."""

from dataclasses import FrozenInstanceError, dataclass, fields, replace

import pytest

from starburst.core.columns import from_columns
from starburst.core.decisions import Burst, Start
from starburst.core.dependencies import Dependency
from starburst.core.job import Job, QueuedJob
from starburst.core.port_values import RunningJob
from starburst.sim.report import JobOutcome


def rows() -> list[dict[str, object]]:
    every_field = {
        "id": "a",
        "submit_time": 1.5,
        "gpus": 8,
        "cpus": 4.0,
        "memory_mb": 1024.0,
        "gpu_type": "a100",
        "runtime": 3600.0,
        "estimate": 3000.0,
        "user": "ana",
        "team": "vision",
        "name": "train",
        "deadline": 7200.0,
        "pods": 2,
        "extra": {"status": "Pass"},
        "estimate_low": 1000.0,
        "estimate_high": 9000.0,
        "after": (Dependency("b"),),
        "array": "sweep",
        "array_limit": 2,
        "array_index": 3,
    }
    assert set(every_field) == {f.name for f in fields(Job)}  # a new field: add it here
    return [every_field, {"id": "b", "submit_time": 0.0, "gpus": 1}]


def test_columns_give_the_jobs_rows_give() -> None:
    by_row = [Job(**row) for row in rows()]  # type: ignore[arg-type]
    names = [f.name for f in fields(Job)]
    columns = {
        name: [row.get(name, getattr(Job("", 0.0, 0), name)) for row in rows()] for name in names
    }
    by_column = from_columns(Job, 2, columns)
    assert by_column == by_row and repr(by_column) == repr(by_row)
    for built, expected in zip(by_column, by_row, strict=True):
        assert type(built) is Job
        assert {n: getattr(built, n) for n in names} == {n: getattr(expected, n) for n in names}


def test_a_column_left_out_takes_the_default_and_each_job_its_own_extra() -> None:
    jobs = from_columns(Job, 2, {"id": ["a", "b"], "submit_time": [0.0, 1.0], "gpus": [1, 2]})
    assert jobs == [Job("a", 0.0, 1), Job("b", 1.0, 2)]
    assert repr(jobs[0]) == repr(Job("a", 0.0, 1))
    assert jobs[0].extra == {} and jobs[0].extra is not jobs[1].extra


def test_a_field_without_a_default_must_be_given() -> None:
    with pytest.raises(TypeError, match="'gpus'"):
        from_columns(Job, 1, {"id": ["a"], "submit_time": [0.0]})


def test_jobs_stay_frozen_values() -> None:
    job = from_columns(Job, 1, {"id": ["a"], "submit_time": [0.0], "gpus": [1]})[0]
    with pytest.raises(AttributeError):
        job.gpus = 2  # type: ignore[misc]
    assert hash(job) == hash(Job("a", 0.0, 1))


def test_outcomes_too() -> None:
    job = Job("a", 0.0, 1)
    row = {"job": job, "where": "onprem", "start": 1.0, "end": 2.0, "budget": 3.0}
    row |= {"cloud_gpu_seconds": 0.0, "placement": "n0×1", "reason": "fits on n0×1"}
    built = from_columns(JobOutcome, 1, {k: [v] for k, v in row.items()})
    assert built == [JobOutcome(**row)] and repr(built) == repr([JobOutcome(**row)])  # type: ignore[arg-type]


def test_no_rows_need_no_columns_and_unknown_columns_are_refused() -> None:
    assert from_columns(Job, 0, {}) == []
    with pytest.raises(TypeError, match="'gpu'"):
        from_columns(Job, 1, {"id": ["a"], "submit_time": [0.0], "gpus": [1], "gpu": [2]})


def test_a_value_that_checks_itself_at_construction_is_refused() -> None:
    # the slots are stored without calling ``__init__``: a ``__post_init__`` would be skipped
    @dataclass(frozen=True, slots=True)
    class Checked:
        n: int

        def __post_init__(self) -> None:
            assert self.n >= 0

    with pytest.raises(TypeError, match="checks nothing"):
        from_columns(Checked, 1, {"n": [-1]})


def test_values_built_through_slot_setters_are_frozen_and_complete() -> None:
    """QueuedJob, Start, Burst and RunningJob store their fields through ``slot_setters``:
    each field set (a derived one too), the id taken from the job when not given, frozen."""
    job = Job("a", 0.0, 1)
    entry = QueuedJob(job, 5.0, 10.0)
    assert (entry.job, entry.queued_at, entry.budget, entry.deadline) == (job, 5.0, 10.0, 15.0)
    assert QueuedJob(job, 5.0, float("inf")).deadline == float("inf")
    assert replace(entry, budget=20.0).deadline == 25.0
    assert Start(job, (), "fits").job_id == "a" and Start(job, (), "r", "x").job_id == "x"
    assert Burst(job, "spent") == Burst(job, "spent", "a")
    assert RunningJob(job, (), 2.0).started_at == 2.0
    with pytest.raises(FrozenInstanceError):
        entry.budget = 1.0  # type: ignore[misc]
