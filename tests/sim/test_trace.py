"""The project's trace CSV: round trip, carried-through columns, and one clear error per fault."""

from dataclasses import replace
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
        (f"{HEADER}\na,0,nan,1,1\n", "line 2: runtime must be a finite number ≥ 0, got nan"),
        (f"{HEADER}\na,0,inf,1,1\n", "line 2: runtime must be a finite number ≥ 0, got inf"),
        (f"{HEADER}\na,0,1e12,1,1\n", "line 2: runtime 1e12 is beyond the limit"),
        (f"{HEADER}\na,0,5,2000000,1\n", "line 2: gpus 2000000 is beyond the limit"),
        (f"{HEADER},pods\na,0,5,4,1,0\n", "line 2: pods must be a whole number ≥ 1"),
        (f"{HEADER}\n\na,0,5,1,1\nb,0,x,1,1\n", "line 4: runtime 'x' is not a number"),
        (f"\n{HEADER}\na,0,5,1,1\n", "line 1: missing column(s)"),
    ],
)
def test_each_fault_names_the_file_and_line(tmp_path: Path, body: str, message: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(TraceError) as caught:
        load_trace(path)
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)


def test_short_rows_blank_cells_and_repeated_columns_read_as_a_dict_of_the_row_would(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        f"{HEADER},estimate,user,project,project\n"
        "a,0,3600,2,8,, bob ,p1,p2\n"
        "b,1,60,1,0\n"
        "\n"
        "c, 2 ,60,1,0,30,,p3\n",
    )
    a, b, c = load_trace(path)
    assert (a.estimate, a.user, a.extra) == (None, "bob", {"project": "p2"})
    assert (b.estimate, b.user, b.extra) == (None, None, {})
    assert (c.submit_time, c.estimate, c.extra) == (2.0, 30.0, {})  # the last "project" is missing


def test_a_missing_file_is_a_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such trace file"):
        load_trace(tmp_path / "nope.csv")


def test_reading_by_column_builds_the_jobs_reading_by_row_builds(tmp_path: Path) -> None:
    # A file of the usual columns is read a column at a time; one more column (carried in
    # ``extra``, which jobs do not compare) sends the same rows through the row-by-row reader
    rows = [
        f"{HEADER},gpu_type,user,team,name,estimate,memory_mb,deadline,pods",
        "a,-0,3600,2,-0,a100,alice,nlp,'=cmd,1800,64,7200,2",
        " b ,1.5,60,0,0.25,, ,,,0,0,0,1",
        "c,1e3,7.5e2,16,4,v100,bob,cv,train,99.5,1024.5,1e5,4",
    ]
    by_column = load_trace(write(tmp_path, "\n".join(rows) + "\n"))
    by_row = load_trace(write(tmp_path, "\n".join(f"{r},x" for r in rows) + "\n"))
    assert [j.extra for j in by_row] == [{"x": "x"}] * 3
    assert [repr(j) for j in by_column] == [repr(replace(j, extra={})) for j in by_row]
    assert by_column[0].submit_time == 0.0 and str(by_column[0].submit_time) == "0.0"
    assert by_column[0].name == "=cmd" and by_column[1].id == "b" and by_column[1].user is None


@pytest.mark.parametrize(
    ("cells", "error"),
    [
        ("b,1,60,1.5,0", "line 3: gpus must be a whole number, got 1.5"),
        ("b,1,60,1,0,", "line 3: more fields than the header has"),
        ("a,1,60,1,0", "line 3: duplicate job_id 'a'"),
        ("b,nan,60,1,0", "line 3: submit_time must be a finite number ≥ 0, got nan"),
        ("b,1,,1,0", "line 3: runtime is empty"),
        # a bad row before a malformed one (a field beyond csv's limit): the row's error first
        ("b,1,60,1.5,0\nd," + "x" * 200_000, "line 3: gpus must be a whole number"),
    ],
)
def test_a_bad_row_is_named_by_its_line_whichever_way_the_file_is_read(
    tmp_path: Path, cells: str, error: str
) -> None:
    path = write(tmp_path, f"{HEADER}\na,0,60,1,0\n{cells}\nc,2,60,1,0\n")
    with pytest.raises(TraceError, match=error):
        load_trace(path)
