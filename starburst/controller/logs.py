"""Structured logs: one JSON object per line (or plain text for people at a terminal).

Invariants:
- Every line the daemon writes is one JSON object, the scheduling library's own warnings
  included (``apscheduler`` is routed through the same handler).
- A line stays small whatever the load: lists of job ids are logged as a count and the first
  ``SAMPLE_IDS`` ids (``ids_sample``), never hundreds of ids in one line.
- APScheduler's "maximum number of running instances reached" warnings are dropped: a pass that
  overruns its interval is reported once, by the daemon, with its duration.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starburst.controller.report import PassReport

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}

#: How many ids a log line names before it only counts.
SAMPLE_IDS = 5

#: Loggers of other libraries whose lines join ours (same handler, same format).
LIBRARY_LOGGERS = ("apscheduler",)


def ids_sample(ids: Sequence[str], limit: int = SAMPLE_IDS) -> list[str]:
    """The first ``limit`` ids, and ``"+N more"`` when there are more."""
    if len(ids) <= limit:
        return list(ids)
    return [*ids[:limit], f"+{len(ids) - limit} more"]


def log_pass(log: logging.Logger, report: PassReport, seconds: float, interval_s: float) -> None:
    """One bounded line for a pass that did something (counts, a few ids of each kind), and a
    warning, once, when the pass took longer than its interval."""
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
    if seconds > interval_s:
        log.warning(
            "pass overran its interval",
            extra={"seconds": round(seconds, 3), "interval_s": interval_s},
        )


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        payload.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)


class DropSkippedRuns(logging.Filter):
    """Drops APScheduler's per-tick "skipped: maximum number of running instances" warning;
    the daemon reports an overrunning pass once, with its duration."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "maximum number of running instances reached" not in record.getMessage()


def configure(fmt: str = "json", level: int = logging.INFO) -> None:
    formatter = (
        JsonFormatter()
        if fmt == "json"
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    handler = logging.StreamHandler()
    handler.setFormatter(formatter)
    root = logging.getLogger("starburst")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
    # a handler of their own: a logger's filters do not see its children's records, a
    # handler's do
    library_handler = logging.StreamHandler()
    library_handler.setFormatter(formatter)
    library_handler.addFilter(DropSkippedRuns())
    for name in LIBRARY_LOGGERS:
        library = logging.getLogger(name)
        library.handlers[:] = [library_handler]
        library.setLevel(logging.WARNING)
        library.propagate = False
