"""Structured logs: one JSON object per line (or plain text for people at a terminal).

Invariants:
- Every line the process writes is one JSON object: the daemon's own, and those of the
  libraries inside it — APScheduler, uvicorn (its error and access lines: ``serve`` gives
  uvicorn no logging config of its own) and Python warnings — through one handler on the
  root logger.
- A line stays small whatever the load: lists of job ids are logged as a count and the first
  ``SAMPLE_IDS`` ids (``ids_sample``), never hundreds of ids in one line.
- A streak of passes longer than their interval (an *overrun*) is reported once, at its first
  pass, with that pass's duration; the rest of the streak is counted (``Overruns``) and the
  count logged when a pass is in time again, or every ``SUMMARY_EVERY`` overruns of a streak
  that lasts. APScheduler's per-tick "maximum number of running instances reached" warnings
  are dropped (an overrunning pass is what they say), and its "was missed by" warnings
  (``LibraryRepeats``) pass once per job and then at most once per ``REPEAT_WINDOW_S``, with
  how late the run was (``late_s``) and how many were left out since (``repeated``).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starburst.controller.loop.report import PassReport

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}

#: How many ids a log line names before it only counts.
SAMPLE_IDS = 5

#: Loggers of other libraries whose lines join ours (through the root logger's handler).
LIBRARY_LOGGERS = ("apscheduler", "uvicorn", "py.warnings")

#: A streak of overruns this long logs its count again (a streak that never ends).
SUMMARY_EVERY = 100

#: A repeated library warning passes at most once per this many seconds (per job).
REPEAT_WINDOW_S = 60.0

_SKIPPED = "maximum number of running instances reached"
_MISSED = "was missed by"


def ids_sample(ids: Sequence[str], limit: int = SAMPLE_IDS) -> list[str]:
    """The first ``limit`` ids, and ``"+N more"`` when there are more."""
    if len(ids) <= limit:
        return list(ids)
    return [*ids[:limit], f"+{len(ids) - limit} more"]


class Overruns:
    """Passes that took longer than their interval, a streak at a time (module docstring)."""

    def __init__(self) -> None:
        self.count = 0  # overruns in the current streak
        self.longest = 0.0  # the longest pass of the streak, seconds

    def observe(self, log: logging.Logger, seconds: float, interval_s: float) -> None:
        if seconds > interval_s:
            self.count += 1
            self.longest = max(self.longest, seconds)
            if self.count == 1:
                log.warning(
                    "pass overran its interval",
                    extra={"seconds": round(seconds, 3), "interval_s": interval_s},
                )
            elif self.count % SUMMARY_EVERY == 0:
                log.warning("passes keep overrunning their interval", extra=self._counts())
            return
        if self.count > 1:
            log.warning("passes overran their interval", extra=self._counts())
        self.count, self.longest = 0, 0.0

    def _counts(self) -> dict[str, object]:
        return {"overruns": self.count, "longest_s": round(self.longest, 3)}


def log_pass(
    log: logging.Logger,
    report: PassReport,
    seconds: float,
    interval_s: float,
    overruns: Overruns,
) -> None:
    """One bounded line for a pass that did something (counts, a few ids of each kind); an
    overrun goes to ``overruns``."""
    if report.admitted or report.started or report.burst or report.finished:
        extra: dict[str, object] = {
            "admitted": report.admitted,
            "queue": report.queue_length,
            "seconds": round(seconds, 4),
        }
        for kind, ids in (
            ("started", report.started),
            ("burst", report.burst),
            ("finished", report.finished),
            ("pulled_back", report.pulled_back),
        ):
            extra[kind] = len(ids)
            if ids:
                extra[f"{kind}_ids"] = ids_sample(ids)
        log.info("pass", extra=extra)
    overruns.observe(log, seconds, interval_s)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.name == "uvicorn.access" and isinstance(record.args, tuple):
            payload.update(_access_fields(record.args))
        payload.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)


def _access_fields(args: tuple[object, ...]) -> dict[str, object]:
    """uvicorn's access line as fields: (client, method, path, HTTP version, status)."""
    if len(args) != 5:
        return {}
    client, method, path, _, status = args
    return {"client": client, "method": method, "path": path, "status": status}


class LibraryRepeats(logging.Filter):
    """Drops APScheduler's skipped-run warnings and thins its missed-run ones (module
    docstring); every other record passes untouched."""

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[str, float] = {}  # job → when its last missed-run line passed
        self._left_out: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("apscheduler"):
            return True
        message = str(record.msg)
        if _SKIPPED in message:
            return False
        if _MISSED not in message or not isinstance(record.args, tuple) or not record.args:
            return True
        job = str(record.args[0]).split(" (", 1)[0]  # "name (trigger: ..., next run at: ...)"
        last = self._last.get(job)
        if last is not None and record.created - last < REPEAT_WINDOW_S:
            self._left_out[job] = self._left_out.get(job, 0) + 1
            return False
        self._last[job] = record.created
        record.job = job
        if len(record.args) > 1 and isinstance(record.args[1], dt.timedelta):
            record.late_s = round(record.args[1].total_seconds(), 3)
        if last is not None:
            record.repeated = self._left_out.pop(job, 0)
        return True


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler ``configure`` installs (told apart from handlers others installed)."""


def configure(fmt: str = "json", level: int = logging.INFO) -> None:
    """Send the daemon's lines (``starburst.*``, at ``level``) and every other library's
    warnings (the root logger) to stderr in one format."""
    formatter = (
        JsonFormatter()
        if fmt == "json"
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    handler = _Handler()
    handler.setFormatter(formatter)
    ours = logging.getLogger("starburst")
    ours.handlers[:] = [handler]
    ours.setLevel(level)
    ours.propagate = False
    # a handler of its own on the root: a logger's filters do not see its children's
    # records, a handler's do
    library_handler = _Handler()
    library_handler.setFormatter(formatter)
    library_handler.addFilter(LibraryRepeats())
    root = logging.getLogger()
    root.handlers[:] = [h for h in root.handlers if not isinstance(h, _Handler)]
    root.addHandler(library_handler)
    logging.captureWarnings(True)
    for name in LIBRARY_LOGGERS:
        library = logging.getLogger(name)
        library.handlers[:] = []
        library.setLevel(logging.WARNING)
        library.propagate = True
        # a child configured before us (uvicorn's own dictConfig gives ``uvicorn.access`` a
        # handler and ``propagate = False``) would bypass the root's handler: its lines
        # would not be JSON, or not appear at all
        for child in _children(name):
            child.handlers[:] = []
            child.setLevel(logging.NOTSET)
            child.propagate = True


def _children(name: str) -> list[logging.Logger]:
    prefix = f"{name}."
    return [
        logger
        for key, logger in list(logging.Logger.manager.loggerDict.items())
        if key.startswith(prefix) and isinstance(logger, logging.Logger)
    ]
