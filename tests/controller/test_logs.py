"""Log hygiene under load: bounded lines, library warnings in JSON, one overrun report."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from starburst.controller import logs
from starburst.controller.report import PassReport


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """``logs.configure`` writing into a buffer; the loggers are restored afterwards."""
    names = ("starburst", *logs.LIBRARY_LOGGERS)
    saved = {
        n: (
            logging.getLogger(n).handlers[:],
            logging.getLogger(n).level,
            logging.getLogger(n).propagate,
        )
        for n in names
    }
    buffer = io.StringIO()
    logs.configure("json")
    for name in names:
        for handler in logging.getLogger(name).handlers:
            handler.setStream(buffer)  # type: ignore[attr-defined]
    yield buffer
    for name, (handlers, level, propagate) in saved.items():
        logger = logging.getLogger(name)
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


def lines(buffer: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_a_pass_that_starts_500_jobs_logs_one_short_line(captured: io.StringIO) -> None:
    report = PassReport(at=0.0, admitted=500, started=[f"job-{i:04d}" for i in range(500)])
    logs.log_pass(logging.getLogger("starburst.controller.daemon"), report, 0.5, 2.0)
    (line,) = lines(captured)
    assert line["started"] == 500 and line["admitted"] == 500
    assert line["started_ids"] == [
        "job-0000",
        "job-0001",
        "job-0002",
        "job-0003",
        "job-0004",
        "+495 more",
    ]
    assert len(captured.getvalue()) < 400


def test_an_overrunning_pass_is_reported_once_with_its_duration(captured: io.StringIO) -> None:
    logs.log_pass(logging.getLogger("starburst.controller.daemon"), PassReport(at=0.0), 3.25, 2.0)
    logs.log_pass(logging.getLogger("starburst.controller.daemon"), PassReport(at=0.0), 0.1, 2.0)
    (line,) = lines(captured)  # an idle pass in time logs nothing
    assert line["msg"] == "pass overran its interval" and line["level"] == "warning"
    assert line["seconds"] == 3.25 and line["interval_s"] == 2.0


def test_the_scheduler_library_logs_json_without_its_per_tick_skip_warnings(
    captured: io.StringIO,
) -> None:
    library = logging.getLogger("apscheduler.scheduler")
    for _ in range(50):
        library.warning(
            'Execution of job "pass" skipped: maximum number of running instances reached (2)'
        )
    library.warning("Run time of job %r was missed by %s", "pass", "0:00:03")
    (line,) = lines(captured)
    assert line["logger"] == "apscheduler.scheduler" and "was missed by" in str(line["msg"])
