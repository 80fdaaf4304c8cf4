"""Issue 38, finding 4: a job's output is capped, and a tail reads only the log's end.

A job writing 200 MB kept all of it, and one ``GET /v1/jobs/ID/logs?tail=1`` read the whole
file into the server (~370 MB of RSS; six at once took it to 2.3 GB). Now the executor keeps
at most ``local_job_output_max_mb`` of a job's output, with a line where it was cut and one
saying how much was dropped, and the newest lines are read from the log's end.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from starburst.adapters.local import LocalCluster
from starburst.controller.job_output import JobLogs
from starburst.core.lifecycle import JobState
from starburst.core.records import StoredJob
from tests.local.lives import job
from tests.security.local_jobs import outside, pool, run

__all__ = ["outside"]

CAP = 64 * 1024
FLOOD = "head -c 5000000 /dev/zero | tr '\\0' x; echo; echo END-OF-OUTPUT"


def test_output_beyond_the_cap_is_dropped_with_a_line_where_it_was_cut(
    outside: Path, tmp_path: Path
) -> None:
    cluster = LocalCluster(
        tmp_path / "state", 1, users=pool(outside / "work"), output_max_bytes=CAP
    )
    end = run(cluster, "flood", FLOOD)
    assert end.succeeded, end.reason  # the job neither blocked nor failed
    log = tmp_path / "state" / "flood" / "output.log"
    text = log.read_text()
    assert log.stat().st_size < CAP + 1024
    kept = text.split("\n", 1)[1]  # after the executor's header line
    assert kept.startswith(
        "x" * CAP + f"\n# starburst: output cut here: the job printed more than {CAP}"
    )
    assert "END-OF-OUTPUT" not in text
    dropped = 5_000_000 + len("\nEND-OF-OUTPUT\n") - CAP
    assert f"# starburst: {dropped} more bytes of output were not kept" in text
    small = run(cluster, "small", "echo one; echo two >&2; echo three")
    assert small.succeeded and cluster.logs("small").endswith("one\ntwo\nthree\n")


def test_the_newest_lines_are_read_from_the_end_of_a_big_log(outside: Path, tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path / "state", 1, users=pool(outside / "work"))
    big = "head -c 30000000 /dev/zero | tr '\\0' y; echo; echo second-last; echo last"
    assert run(cluster, "big", big).succeeded
    stored = StoredJob(job("big", big), JobState.SUCCEEDED, 1, 0.0, ran_on="onprem")
    tracemalloc.start()
    try:
        shown = JobLogs(cluster, None).read(stored, [], tail=2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert shown == "second-last\nlast\n"
    assert peak < 1_000_000, f"reading 2 lines of a 30 MB log took {peak} bytes"
    assert cluster.logs("big", tail=1) == "last\n"


def test_a_process_left_holding_the_output_does_not_hold_up_the_end(
    outside: Path, tmp_path: Path
) -> None:
    """The copier stops at the job's end, not at the end of its output: a background process
    that keeps the output open (killed when the end is seen) cannot keep the job running."""
    cluster = LocalCluster(tmp_path / "state", 1, users=pool(outside / "work"))
    end = run(cluster, "leaves", "sleep 300 & echo started; exit 3")
    assert not end.succeeded and "exit code 3" in end.reason
    assert cluster.logs("leaves").endswith("started\n")
