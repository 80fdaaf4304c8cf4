"""Trace loading as the published pipelines do it: format recognised by content (Philly's real
file has no extension), the status filter, and multi-attempt Philly jobs."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from starburst.core.errors import ConfigError
from starburst.sim import formats
from starburst.sim.loading import guess_format, load, parse_statuses
from starburst.sim.trace_errors import TraceError
from tests.builders import run_cli

DATA = Path(__file__).parent / "data"
PHILLY = DATA / "philly_cluster_job_log.json"
HELIOS = DATA / "helios_cluster_log.csv"


def _shared_traces() -> Path:
    """``$STARBURST_TRACES``, else the nearest ``shared/traces`` above the repository."""
    if os.environ.get("STARBURST_TRACES"):
        return Path(os.environ["STARBURST_TRACES"])
    repo = Path(__file__).resolve().parents[2]
    found = (p / "shared" / "traces" for p in repo.parents)
    return next((p for p in found if p.is_dir()), repo.parent / "shared" / "traces")


SHARED = _shared_traces()
REAL_PHILLY = SHARED / "philly-sample" / "cluster_job_log"


def _attempt(start: str | None, end: str | None, gpus: int) -> dict[str, object]:
    return {
        "start_time": start,
        "end_time": end,
        "detail": [{"ip": "m1", "gpus": [f"gpu{i}" for i in range(gpus)]}],
    }


@pytest.fixture
def job_log(tmp_path: Path) -> Path:
    """A Philly ``cluster_job_log`` with its real name: no extension."""
    path = tmp_path / "cluster_job_log"
    path.write_bytes(PHILLY.read_bytes())
    return path


def test_auto_recognises_an_extensionless_philly_log_by_content(job_log: Path) -> None:
    assert guess_format(job_log) == "philly"
    assert load(job_log).jobs == load(PHILLY, "philly").jobs


def test_auto_recognises_gzipped_philly_and_helios(tmp_path: Path) -> None:
    packed = tmp_path / "cluster_job_log.gz"
    packed.write_bytes(gzip.compress(b"\n  " + PHILLY.read_bytes()))
    helios = tmp_path / "cluster_log.csv.gz"
    helios.write_bytes(gzip.compress(HELIOS.read_bytes()))
    assert (guess_format(packed), guess_format(helios), guess_format(HELIOS)) == (
        "philly",
        "helios",
        "helios",
    )
    assert load(packed).jobs == load(PHILLY).jobs


def test_auto_reads_the_projects_csv(tmp_path: Path) -> None:
    path = tmp_path / "trace"
    path.write_text("job_id,submit_time,runtime,gpus,cpus,status\na,0,60,1,0,Pass\n")
    assert guess_format(path) == "csv"
    assert [j.id for j in load(path).jobs] == ["a"]


def test_a_missing_or_directory_path_is_a_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such trace file"):
        load(tmp_path / "nope")
    with pytest.raises(TraceError, match="is a directory"):
        load(tmp_path)


def test_multi_attempt_job_runs_from_first_start_to_last_end_on_the_last_gpus(
    tmp_path: Path,
) -> None:
    record = {
        "jobid": "app_9",
        "user": "u",
        "vc": "v",
        "status": "Pass",
        "submitted_time": "2017-10-07 00:00:00",
        "attempts": [
            _attempt("2017-10-07 01:00:00", "2017-10-07 01:10:00", 8),
            _attempt(None, None, 8),  # a middle attempt's times are not needed
            _attempt("2017-10-07 03:00:00", "2017-10-07 04:00:00", 2),
        ],
    }
    path = tmp_path / "cluster_job_log"
    path.write_text(json.dumps([record]))
    (job,) = load(path).jobs
    assert (job.runtime, job.gpus) == (3 * 3600.0, 2)


def test_last_attempt_without_end_is_running(tmp_path: Path) -> None:
    record = {
        "jobid": "app_9",
        "user": "u",
        "status": "Running",
        "submitted_time": "2017-10-07 00:00:00",
        "attempts": [
            _attempt("2017-10-07 01:00:00", "2017-10-07 01:10:00", 1),
            _attempt("2017-10-07 02:00:00", None, 1),
        ],
    }
    path = tmp_path / "cluster_job_log"
    path.write_text(json.dumps([record]))
    assert load(path).skipped == {formats.RUNNING: 1}


def test_status_filter_through_load(job_log: Path) -> None:
    trace = load(job_log, statuses=parse_statuses("Pass"))
    assert [j.extra["status"] for j in trace.jobs] == ["Pass", "Pass"]
    assert trace.skipped == {formats.STATUS: 5}
    helios = load(HELIOS, statuses={"COMPLETED", "TIMEOUT"})
    assert {j.extra["state"] for j in helios.jobs} <= {"COMPLETED", "TIMEOUT"}
    assert helios.skipped.get(formats.STATUS, 0) > 0


def test_status_filter_on_the_projects_csv(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "job_id,submit_time,runtime,gpus,cpus,status\n"
        "a,0,60,1,0,Pass\nb,5,60,1,0,Failed\nc,9,60,1,0,Pass\n"
    )
    trace = load(path, statuses={"Pass"})
    assert [j.id for j in trace.jobs] == ["a", "c"]
    assert trace.skipped == {formats.STATUS: 1}
    bare = tmp_path / "bare.csv"
    bare.write_text("job_id,submit_time,runtime,gpus,cpus\na,0,60,1,0\n")
    with pytest.raises(ConfigError, match="needs a 'status' or 'state' column"):
        load(bare, statuses={"Pass"})


def test_parse_statuses() -> None:
    assert parse_statuses(" Pass, Killed ,") == {"Pass", "Killed"}
    assert parse_statuses("") is None
    assert parse_statuses(None) is None


def test_cli_simulates_an_extensionless_log_with_a_status_filter(job_log: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run_cli(
        [
            "simulate",
            str(job_log),
            "--nodes",
            "2",
            "--gpus-per-node",
            "8",
            "--status",
            "Pass",
            "--json",
        ],
        capsys,
    )
    assert code == 0, err
    assert json.loads(out)["jobs"] == 2
    assert "status filtered out: 5" in err


@pytest.mark.skipif(not REAL_PHILLY.is_file(), reason="the shared real traces are not here")
def test_the_real_philly_log_loads_by_content_and_matches_its_csv() -> None:
    passed = load(REAL_PHILLY, statuses={"Pass"})
    csv = load(SHARED / "philly-sample" / "philly-sample.csv", statuses={"Pass"})
    assert len(passed.jobs) == len(csv.jobs) > 1000
    by_id = {j.id: j for j in csv.jobs}
    assert all((j.gpus, j.runtime) == (by_id[j.id].gpus, by_id[j.id].runtime) for j in passed.jobs)


def test_a_band_in_the_trace_drives_compute_expected(tmp_path: Path) -> None:
    from starburst.core.policy import PolicyKind, WaitPolicy
    from starburst.sim.trace import load_trace, write_trace

    path = tmp_path / "band.csv"
    path.write_text(
        "job_id,submit_time,runtime,gpus,cpus,estimate,estimate_low,estimate_high\n"
        "a,0,3600,2,0,3600,360,36000\nb,1,3600,2,0,3600,,\n"
    )
    banded, bare = load_trace(path)
    assert (banded.estimate_low, banded.estimate_high) == (360.0, 36000.0)
    policy = WaitPolicy(PolicyKind.COMPUTE_EXPECTED, 0.25)
    assert policy.budget(banded) > 2 * policy.budget(bare) == 2 * 0.25 * 2 * 3600
    again = tmp_path / "again.csv"
    write_trace([banded, bare], again)
    assert load_trace(again) == [banded, bare]
