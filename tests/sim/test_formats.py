"""Philly and Helios loaders against small fixtures in the real formats (tests/sim/data)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from starburst.core.capacity import uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.errors import StarburstError
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.sim import formats
from starburst.sim.engine import simulate
from starburst.sim.formats import load_helios, load_philly
from starburst.sim.trace_errors import TraceError

DATA = Path(__file__).parent / "data"
PHILLY = DATA / "philly_cluster_job_log.json"
HELIOS = DATA / "helios_cluster_log.csv"
HELIOS_HEADER = (
    "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
)
HELIOS_ROW = "7,u1,vc1,2,8,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,,60,0"


def test_philly_jobs_in_project_units() -> None:
    trace = load_philly(PHILLY)
    assert [(j.id[-5:], j.submit_time, j.gpus, j.runtime) for j in trace.jobs] == [
        ("10001", 0.0, 2, 1800.0),  # two machines with one GPU each
        ("14199", 699.0, 8, 74.0 + 7.0 + 193182.0),  # first start → last end, gap included
        ("10006", 3600.0, 1, 3000.0),  # 02:00 → 02:50 (attempts 10 + 30 min, 10 min apart)
    ]
    first = trace.jobs[0]
    assert (first.user, first.team, first.extra["status"]) == ("6c6d4a", "b436b2", "Killed")


def test_philly_skips_are_counted_by_reason() -> None:
    trace = load_philly(PHILLY)
    assert trace.skipped == {
        formats.NO_GPUS: 1,
        formats.NO_ATTEMPTS: 1,
        formats.RUNNING: 1,
        formats.NO_TIMES: 1,
    }
    assert trace.skipped_total == 4
    assert trace.describe().startswith(f"3 jobs from {PHILLY}; skipped 4")


def test_philly_status_filter_and_times_relative_to_the_first_kept_job() -> None:
    trace = load_philly(PHILLY, statuses={"Pass"})
    assert [(j.id[-5:], j.submit_time) for j in trace.jobs] == [("14199", 0.0), ("10006", 2901.0)]
    assert trace.skipped == {formats.STATUS: 5}


def test_gzipped_philly_reads_the_same(tmp_path: Path) -> None:
    packed = tmp_path / "cluster_job_log.gz"
    packed.write_bytes(gzip.compress(PHILLY.read_bytes()))
    assert load_philly(packed).jobs == load_philly(PHILLY).jobs


def _philly(tmp_path: Path, records: object) -> Path:
    path = tmp_path / "philly.json"
    path.write_text(json.dumps(records, indent=1))
    return path


def _record(**overrides: object) -> dict[str, object]:
    record: dict[str, object] = {
        "jobid": "app_1",
        "user": "u",
        "vc": "v",
        "status": "Pass",
        "submitted_time": "2017-10-07 01:00:00",
        "attempts": [
            {
                "start_time": "2017-10-07 01:00:00",
                "end_time": "2017-10-07 02:00:00",
                "detail": [{"ip": "m1", "gpus": ["gpu0"]}],
            }
        ],
    }
    record.update(overrides)
    return record


@pytest.mark.parametrize(
    ("records", "message"),
    [
        (
            [_record(), _record(jobid="app_2", submitted_time=None)],
            r"philly\.json: record 2: missing 'submitted_time'",
        ),
        ([_record(jobid=None)], r"philly\.json: record 1: missing 'jobid'"),
        (
            [_record(submitted_time="07/10/2017 01:00")],
            r"record 1: bad timestamp '07/10/2017 01:00'",
        ),
        ([_record(), "not a job"], r"record 2: expected a JSON object"),
        ([_record(attempts={"start_time": "x"})], r"record 1: 'attempts' must be a list"),
        (
            [
                _record(
                    attempts=[
                        {
                            "start_time": "2017-10-07 02:00:00",
                            "end_time": "2017-10-07 01:00:00",
                            "detail": [],
                        }
                    ]
                )
            ],
            r"record 1: attempt ends before it starts",
        ),
        ({"jobs": []}, r"philly\.json: expected a JSON list of jobs"),
    ],
)
def test_unreadable_philly_names_file_and_record(
    tmp_path: Path, records: object, message: str
) -> None:
    with pytest.raises(TraceError, match=message) as caught:
        load_philly(_philly(tmp_path, records))
    assert caught.value.path.name == "philly.json"
    assert isinstance(caught.value, StarburstError)


def test_broken_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "philly.json"
    path.write_text('[\n  {"jobid": "a",\n  "user" "u"}\n]\n')
    with pytest.raises(TraceError, match=r"philly\.json: line 3: not valid JSON") as caught:
        load_philly(path)
    assert caught.value.line == 3


def test_duplicate_philly_ids_keep_the_first(tmp_path: Path) -> None:
    later = _record(submitted_time="2017-10-07 03:00:00")
    trace = load_philly(_philly(tmp_path, [_record(), later]))
    assert [j.submit_time for j in trace.jobs] == [0.0]
    assert trace.skipped == {formats.DUPLICATE: 1}


def test_helios_jobs_in_project_units() -> None:
    trace = load_helios(HELIOS)
    assert [(j.id, j.submit_time, j.gpus, j.cpus, j.runtime) for j in trace.jobs] == [
        ("1425511", 0.0, 1, 1.0, 36848.0),
        ("1425512", 26.0, 4, 16.0, 249.0),
        ("1425514", 539.0, 16, 64.0, 7200.0),  # empty duration: end − start
    ]
    last = trace.jobs[-1]
    assert (last.user, last.team, dict(last.extra)) == (
        "uXBbc",
        "vcJkd",
        {"state": "COMPLETED", "vc": "vcJkd", "node_num": "2"},
    )
    assert trace.skipped == {formats.NO_GPUS: 1, formats.NO_RUNTIME: 1}


def test_helios_state_filter() -> None:
    trace = load_helios(HELIOS, states={"COMPLETED"})
    assert [j.id for j in trace.jobs] == ["1425511", "1425514"]
    assert trace.skipped == {formats.STATUS: 3}


def _helios(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "cluster_log.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            (HELIOS_HEADER.replace("gpu_num,", ""), HELIOS_ROW.replace(",2,8,", ",8,")),
            r"cluster_log\.csv: line 1: missing column 'gpu_num'",
        ),
        (
            (HELIOS_HEADER, HELIOS_ROW, HELIOS_ROW.replace(",2,8,", ",two,8,")),
            r"cluster_log\.csv: line 3: gpu_num must be a number, got 'two'",
        ),
        (
            (HELIOS_HEADER, HELIOS_ROW.replace(",60,0", ",-5,0")),
            r"line 2: duration must be a finite number ≥ 0",
        ),
        (
            (HELIOS_HEADER, HELIOS_ROW.replace(",2,8,", ",1.5,8,")),
            r"line 2: gpu_num must be a whole",
        ),
        (
            (HELIOS_HEADER, HELIOS_ROW.replace("2020-06-09 18:41:01,", "yesterday,", 1)),
            r"line 2: bad timestamp 'yesterday'",
        ),
        ((HELIOS_HEADER, "7,u1,vc1,2"), r"line 2: wrong number of fields"),
    ],
)
def test_unreadable_helios_names_file_and_line(
    tmp_path: Path, lines: tuple[str, ...], message: str
) -> None:
    with pytest.raises(TraceError, match=message):
        load_helios(_helios(tmp_path, *lines))


def test_a_missing_file_is_a_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot open"):
        load_helios(tmp_path / "nope.csv")


def test_loaded_jobs_run_through_the_simulator() -> None:
    jobs = list(load_helios(HELIOS).jobs) + list(load_philly(PHILLY).jobs)
    policy = WaitPolicy(PolicyKind.CONSTANT, 600.0)
    result = simulate(jobs, uniform_nodes(2, 8), SchedulerConfig(policy))
    assert len(result.outcomes) == len(jobs) == 6
