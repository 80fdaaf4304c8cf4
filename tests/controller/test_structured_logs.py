"""Log hygiene under load: bounded lines, library warnings in JSON, one overrun report."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.controller import structured_logs
from starburst.controller.loop.cloudgate import CloudGate
from starburst.controller.loop.report import PassReport
from starburst.controller.loop.scheduling import SchedulingLoop
from starburst.core.capacity import uniform_nodes
from starburst.core.cycle import SchedulerConfig
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.records import JobSpec
from starburst.sim.cloud import SimCloud
from starburst.sim.cluster import SimCluster
from tests.support.clock import ManualClock
from tests.support.databases import upgrade

DAEMON = logging.getLogger("starburst.controller.daemon")
UVICORN_CHILDREN = ("uvicorn.access", "uvicorn.error")


@contextmanager
def restored(names: Sequence[str]) -> Iterator[None]:
    """The loggers ``names`` put back as they were (handlers, level, propagation)."""
    saved = {
        n: (
            logging.getLogger(n).handlers[:],
            logging.getLogger(n).level,
            logging.getLogger(n).propagate,
        )
        for n in names
    }
    try:
        yield
    finally:
        for name, (handlers, level, propagate) in saved.items():
            logger = logging.getLogger(name)
            logger.handlers[:] = handlers
            logger.setLevel(level)
            logger.propagate = propagate


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """``structured_logs.configure`` writing into a buffer; the loggers are restored afterwards."""
    names = ("starburst", *structured_logs.LIBRARY_LOGGERS, *UVICORN_CHILDREN, "")
    with restored(names):
        buffer = io.StringIO()
        structured_logs.configure("json")
        for name in names:
            for handler in logging.getLogger(name).handlers:
                if isinstance(handler, structured_logs._Handler):
                    handler.setStream(buffer)
        try:
            yield buffer
        finally:
            logging.captureWarnings(False)


@pytest.fixture
def uvicorn_configured_first() -> Iterator[None]:
    """uvicorn's own logging set-up applied before ``structured_logs.configure`` (as an in-process
    uvicorn server with its default ``log_config`` leaves it): ``uvicorn.access`` with a
    handler of its own and ``propagate = False``."""
    import logging.config

    from uvicorn.config import LOGGING_CONFIG

    with restored(("uvicorn", *UVICORN_CHILDREN)):
        logging.config.dictConfig(LOGGING_CONFIG)
        assert logging.getLogger("uvicorn.access").propagate is False
        yield


def lines(buffer: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_a_pass_that_starts_500_jobs_logs_one_short_line(captured: io.StringIO) -> None:
    report = PassReport(at=0.0, admitted=500, started=[f"job-{i:04d}" for i in range(500)])
    structured_logs.log_pass(DAEMON, report, 0.5, 2.0, structured_logs.Overruns())
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


def test_a_streak_of_overruns_is_reported_once_with_its_duration_then_a_count(
    captured: io.StringIO,
) -> None:
    overruns = structured_logs.Overruns()
    idle = PassReport(at=0.0)
    for seconds in (3.25, 2.5, 4.0, 2.1):
        structured_logs.log_pass(DAEMON, idle, seconds, 2.0, overruns)
    (first,) = lines(captured)  # the rest of the streak is only counted
    assert first["msg"] == "pass overran its interval" and first["level"] == "warning"
    assert first["seconds"] == 3.25 and first["interval_s"] == 2.0
    structured_logs.log_pass(DAEMON, idle, 0.1, 2.0, overruns)  # in time again: the count
    structured_logs.log_pass(DAEMON, idle, 0.1, 2.0, overruns)  # an idle pass in time logs nothing
    _, summary = lines(captured)
    assert summary["msg"] == "passes overran their interval"
    assert summary["overruns"] == 4 and summary["longest_s"] == 4.0
    structured_logs.log_pass(DAEMON, idle, 3.0, 2.0, overruns)  # a new streak of one: one line
    structured_logs.log_pass(DAEMON, idle, 0.1, 2.0, overruns)
    assert [line["msg"] for line in lines(captured)][2:] == ["pass overran its interval"]


def test_a_streak_that_lasts_logs_its_count_now_and_then(captured: io.StringIO) -> None:
    overruns = structured_logs.Overruns()
    for _ in range(2 * structured_logs.SUMMARY_EVERY + 5):
        overruns.observe(DAEMON, 3.0, 2.0)
    assert [(line["msg"], line.get("overruns")) for line in lines(captured)] == [
        ("pass overran its interval", None),
        ("passes keep overrunning their interval", structured_logs.SUMMARY_EVERY),
        ("passes keep overrunning their interval", 2 * structured_logs.SUMMARY_EVERY),
    ]


def _missed(job: str, created: float) -> logging.LogRecord:
    record = logging.LogRecord(
        "apscheduler.executors.default",
        logging.WARNING,
        __file__,
        1,
        'Run time of job "%s" was missed by %s',
        (f"{job} (trigger: interval[0:00:02], next run at: {created})", dt.timedelta(seconds=3)),
        None,
    )
    record.created = created
    return record


def test_the_scheduler_library_logs_json_once_per_missed_job_then_a_count(
    captured: io.StringIO,
) -> None:
    library = logging.getLogger("apscheduler.scheduler")
    for _ in range(50):
        library.warning(
            'Execution of job "pass" skipped: maximum number of running instances reached (2)'
        )
    executor = logging.getLogger("apscheduler.executors.default")
    t0 = 1_780_000_000.0
    for tick in range(30):  # every 2 s, for a minute: one line
        executor.handle(_missed("Controller.run_pass", t0 + 2 * tick))
    executor.handle(_missed("Controller.recalibrate", t0 + 1))  # another job: its own line
    executor.handle(_missed("Controller.run_pass", t0 + structured_logs.REPEAT_WINDOW_S + 1))
    first, other, again = lines(captured)
    assert first["logger"] == "apscheduler.executors.default" and "was missed by" in str(
        first["msg"]
    )
    assert first["job"] == "Controller.run_pass" and first["late_s"] == 3.0
    assert "repeated" not in first
    assert other["job"] == "Controller.recalibrate"
    assert again["job"] == "Controller.run_pass" and again["repeated"] == 29


@pytest.mark.parametrize("uvicorn_first", [False, True], ids=["fresh", "uvicorn-configured-first"])
def test_uvicorn_access_and_error_lines_are_json_with_fields(
    uvicorn_first: bool, request: pytest.FixtureRequest
) -> None:
    if uvicorn_first:
        request.getfixturevalue("uvicorn_configured_first")
    captured: io.StringIO = request.getfixturevalue("captured")
    access = logging.getLogger("uvicorn.access")
    access.setLevel(logging.INFO)
    try:
        access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "POST", "/v1/jobs", "1.1", 201)
    finally:
        access.setLevel(logging.NOTSET)
    logging.getLogger("uvicorn.error").warning("Invalid HTTP request received.")
    hit, warning = lines(captured)
    assert hit["logger"] == "uvicorn.access" and hit["status"] == 201
    assert hit["method"] == "POST" and hit["path"] == "/v1/jobs"
    assert warning["logger"] == "uvicorn.error" and warning["level"] == "warning"


class Outage:
    """A cloud side that cannot burst (``CloudHealth``)."""

    def degraded(self) -> str | None:
        return "no cloud enabled in SkyPilot"


def test_a_cloud_outage_logs_one_held_line_with_a_count_not_one_per_job(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'outage.db'}"
    upgrade(url)
    t0 = 1_780_000_000.0
    clock = ManualClock(t0)
    store = SqlStore.open(url, clock=clock)
    cluster = SimCluster(uniform_nodes(1, 1), clock, {f"j{i}": 3600.0 for i in range(60)})
    config = SchedulerConfig(WaitPolicy(PolicyKind.CONSTANT, 5.0), out_of_order=True)
    loop = SchedulingLoop(
        store, cluster, SimCloud(clock, 2.5), clock, config, hold=CloudGate(Outage())
    )
    for i in range(60):
        store.submissions.submit(JobSpec(id=f"j{i}", gpus=1), at=t0)
    loop.run_pass()  # admitted, j0 starts
    with caplog.at_level(logging.INFO, logger="starburst.controller"):
        for _ in range(3):  # budgets spent, the cloud still down: held, announced once
            clock.advance(10)
            report = loop.run_pass()
    assert report.burst == [] and len(report.held) == 59
    held = [r for r in caplog.records if r.getMessage().startswith("held on-prem")]
    assert len(held) == 1
    assert "cloud side cannot burst" in held[0].getMessage()
    assert held[0].jobs == 59 and held[0].job_ids[-1] == "+54 more"  # type: ignore[attr-defined]
    store.close()
