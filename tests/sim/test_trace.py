"""The project's trace CSV: round trip, carried-through columns, and one clear error per fault."""

from pathlib import Path

import pytest

from starburst.sim.synthetic import Workload, generate
from starburst.sim.trace import load_trace, write_trace
from starburst.sim.trace_errors import TraceError

HEADER = "job_id,submit_time,runtime,gpus,cpus"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text(text)
    return path


def test_round_trip_keeps_every_job(tmp_path: Path) -> None:
    jobs = generate(Workload(50, 16, seed=4, cpus_per_gpu=4))
    write_trace(jobs, tmp_path / "t.csv")
    assert load_trace(tmp_path / "t.csv") == jobs


def test_optional_and_unknown_columns_are_carried_through(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"{HEADER},user,gpu_type,name,estimate,project\n"
        "a,0,3600,2,8,alice,a100,train-bert,1800,nlp\n",
    )
    [job] = load_trace(path)
    assert (job.user, job.gpu_type, job.name, job.estimate) == (
        "alice",
        "a100",
        "train-bert",
        1800.0,
    )
    assert job.extra == {"project": "nlp"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("job_id,submit_time,runtime,gpus\na,0,1,1\n", "line 1: missing column(s): cpus"),
        (f"{HEADER}\na,0,1,1,1\nb,0,abc,1,1\n", "line 3: runtime 'abc' is not a number"),
        (f"{HEADER}\na,0,-5,1,1\n", "line 2: runtime must be a finite number ≥ 0, got -5"),
        (f"{HEADER}\na,0,5,1.5,1\n", "line 2: gpus must be a whole number"),
        (f"{HEADER}\na,0,5,1,1\na,1,5,1,1\n", "line 3: duplicate job_id 'a'"),
        (f"{HEADER}\na,0,,1,1\n", "line 2: runtime is empty"),
        (f"{HEADER}\na,0,5,1,1,extra\n", "line 2: more fields than the header has"),
        ("", "empty file"),
    ],
)
def test_each_fault_names_the_file_and_line(tmp_path: Path, body: str, message: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(TraceError) as caught:
        load_trace(path)
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)


def test_a_missing_file_is_a_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such trace file"):
        load_trace(tmp_path / "nope.csv")
