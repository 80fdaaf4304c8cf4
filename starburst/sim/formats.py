"""Loaders for the public GPU-cluster traces the paper evaluates on: Philly and Helios.

- **Philly** (msr-fiddle/philly-traces, ``cluster_job_log``): one JSON list of jobs, each
  ``{"jobid", "user", "vc", "status", "submitted_time": "YYYY-MM-DD HH:MM:SS", "attempts":
  [{"start_time", "end_time", "detail": [{"ip", "gpus": ["gpu0", ...]}]}]}``. Converted as the
  published pipelines do (the Philly analysis notebook, the Starburst artifact): the runtime is
  the last attempt's end − the first attempt's start (so retries and the gaps between them
  count), and the GPUs are the last attempt's (Σ over its ``detail`` machines). A job whose
  first attempt has no start or whose last has no end is skipped; the times of the attempts in
  between are not needed.
- **Helios** (S-Lab-System-Group/HeliosData, e.g. Venus ``cluster_log.csv``): CSV with the
  columns ``job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,
  duration,queue``; ``duration`` is end − start in seconds. The runtime is ``duration``, or
  end − start when it is empty.

Both give ``Job`` values in the project's units: seconds relative to the first kept job's
submit, ordered by (submit time, id); ``team`` is the virtual cluster, ``extra`` keeps the final
status. Timestamps are naive local times as the traces give them (no time-zone shifts).

Two kinds of bad input (see ``trace_errors``): *unreadable* input — not JSON/CSV, a missing key
or column, a malformed timestamp, a non-numeric or negative number — raises ``TraceError``
naming the file and record/line. *Unusable* jobs — no GPUs, no attempts, an attempt without
times, still running when the trace was cut, a status filtered out — are skipped and counted by
reason in ``LoadedTrace.skipped``, because the real traces are full of them.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from starburst.core.job import Job
from starburst.sim.trace_errors import TraceError

# ``gzip`` and ``datetime`` are imported in the functions that use them, for the Philly and
# Helios readers: the project's own CSV, which ``loading`` reads through this module, needs
# neither, and ``starburst simulate`` would pay for their imports on every run.

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"

NO_GPUS = "no GPUs"
NO_ATTEMPTS = "no attempts"
NO_TIMES = "attempt without start or end time"
RUNNING = "still running at the end of the trace"
NO_RUNTIME = "no runtime"
STATUS = "status filtered out"
DUPLICATE = "duplicate job id"

HELIOS_COLUMNS = ("job_id", "gpu_num", "submit_time")


@dataclass(frozen=True, slots=True)
class LoadedTrace:
    """Jobs read from a trace file, and how many records were skipped for each reason."""

    jobs: tuple[Job, ...]
    skipped: Mapping[str, int] = field(default_factory=dict)
    source: str = ""

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def describe(self) -> str:
        """One line for a person: "412 jobs from x.json; skipped 3 (no GPUs: 2, ...)"."""
        text = f"{len(self.jobs)} jobs from {self.source}"
        if self.skipped:
            reasons = ", ".join(f"{r}: {n}" for r, n in sorted(self.skipped.items()))
            text += f"; skipped {self.skipped_total} ({reasons})"
        return text


class _Skip(Exception):
    """A usable-format record that cannot be simulated; ``args[0]`` is the reason."""


def load_philly(path: str | Path, statuses: Collection[str] | None = None) -> LoadedTrace:
    """Read a Philly ``cluster_job_log`` (JSON list; ``.gz`` is decompressed).

    ``statuses`` keeps only jobs whose status is listed (e.g. ``{"Pass"}``); default: all.
    """
    path = Path(path)
    records = _read_json(path)
    jobs: list[Job] = []
    skipped: Counter[str] = Counter()
    for number, record in enumerate(records, start=1):
        try:
            jobs.append(_philly_job(path, number, record, statuses))
        except _Skip as skip:
            skipped[skip.args[0]] += 1
    return _loaded(path, jobs, skipped)


def load_helios(path: str | Path, states: Collection[str] | None = None) -> LoadedTrace:
    """Read a Helios ``cluster_log.csv`` (``.gz`` is decompressed).

    ``states`` keeps only jobs whose final state is listed (e.g. ``{"COMPLETED"}``).
    """
    path = Path(path)
    jobs: list[Job] = []
    skipped: Counter[str] = Counter()
    with _open_text(path) as fh:
        reader = csv.DictReader(fh)
        _check_columns(path, reader.fieldnames)
        for row in _rows(path, reader):
            try:
                jobs.append(_helios_job(path, reader.line_num, row, states))
            except _Skip as skip:
                skipped[skip.args[0]] += 1
    return _loaded(path, jobs, skipped)


# -- Philly ------------------------------------------------------------------------------------
def _read_json(path: Path) -> list[Any]:
    import gzip

    try:
        with _open_text(path) as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise TraceError(path, f"not valid JSON: {exc.msg}", line=exc.lineno) from None
    except (UnicodeDecodeError, EOFError, gzip.BadGzipFile):
        raise TraceError(path, "not a readable text file") from None
    if not isinstance(data, list):
        raise TraceError(path, "expected a JSON list of jobs")
    return data


def _philly_job(path: Path, number: int, record: Any, statuses: Collection[str] | None) -> Job:
    if not isinstance(record, dict):
        raise TraceError(path, "expected a JSON object", record=number)
    job_id = _required(path, number, record, "jobid")
    submit = _timestamp(path, _required(path, number, record, "submitted_time"), record=number)
    status = str(record.get("status") or "")
    if statuses is not None and status not in statuses:
        raise _Skip(STATUS)
    attempts = record.get("attempts") or []
    if not isinstance(attempts, list) or not all(isinstance(a, dict) for a in attempts):
        raise TraceError(path, "'attempts' must be a list of objects", record=number)
    if not attempts:
        raise _Skip(NO_ATTEMPTS)
    gpus_each = [_attempt_gpus(path, number, a) for a in attempts]  # checks every attempt
    runtime = _span_seconds(path, number, attempts[0], attempts[-1])
    gpus = gpus_each[-1]
    if gpus == 0:
        raise _Skip(NO_GPUS)
    vc = record.get("vc")
    return Job(
        id=str(job_id),
        submit_time=submit,
        gpus=gpus,
        runtime=runtime,
        user=_text(record.get("user")),
        team=_text(vc),
        extra={k: str(v) for k, v in (("status", status), ("vc", vc)) if v},
    )


def _required(path: Path, number: int, record: Mapping[str, Any], key: str) -> Any:
    value = record.get(key)
    if value is None or value == "":
        raise TraceError(path, f"missing {key!r}", record=number)
    return value


def _span_seconds(
    path: Path, number: int, first: Mapping[str, Any], last: Mapping[str, Any]
) -> float:
    """First attempt's start → last attempt's end (the reference pipelines' runtime)."""
    start, end = first.get("start_time"), last.get("end_time")
    if last.get("start_time") and not end:
        raise _Skip(RUNNING)
    if not start or not end:
        raise _Skip(NO_TIMES)
    seconds = _timestamp(path, end, record=number) - _timestamp(path, start, record=number)
    if seconds < 0:
        raise TraceError(path, f"attempt ends before it starts ({start} → {end})", record=number)
    return seconds


def _attempt_gpus(path: Path, number: int, attempt: Mapping[str, Any]) -> int:
    detail = attempt.get("detail") or []
    if not isinstance(detail, list) or not all(isinstance(d, dict) for d in detail):
        raise TraceError(path, "an attempt's 'detail' must be a list of objects", record=number)
    gpus = [d.get("gpus") or [] for d in detail]
    if not all(isinstance(g, list) for g in gpus):
        raise TraceError(path, "'gpus' must be a list", record=number)
    return sum(len(g) for g in gpus)


# -- Helios ------------------------------------------------------------------------------------
def _check_columns(path: Path, names: Sequence[str] | None) -> None:
    present = set(names or ())
    for column in HELIOS_COLUMNS:
        if column not in present:
            raise TraceError(path, f"missing column {column!r}", line=1)
    if "duration" not in present and not {"start_time", "end_time"} <= present:
        raise TraceError(path, "needs a 'duration' column or 'start_time' and 'end_time'", line=1)


def _rows(path: Path, reader: csv.DictReader[str]) -> Iterator[dict[str, str]]:
    import gzip

    try:
        for row in reader:
            if None in row or any(v is None for v in row.values()):
                raise TraceError(path, "wrong number of fields", line=reader.line_num)
            yield row
    except (csv.Error, UnicodeDecodeError, EOFError, gzip.BadGzipFile) as exc:
        raise TraceError(path, f"not readable CSV ({exc})", line=reader.line_num) from None


def _helios_job(
    path: Path, line: int, row: Mapping[str, str], states: Collection[str] | None
) -> Job:
    state = row.get("state", "").strip()
    if states is not None and state not in states:
        raise _Skip(STATUS)
    gpus = int(_number(path, line, row, "gpu_num"))
    if gpus == 0:
        raise _Skip(NO_GPUS)
    job_id = row["job_id"].strip()
    if not job_id:
        raise TraceError(path, "empty 'job_id'", line=line)
    vc = row.get("vc", "").strip()
    return Job(
        id=job_id,
        submit_time=_timestamp(path, row["submit_time"], line=line),
        gpus=gpus,
        cpus=_number(path, line, row, "cpu_num") if row.get("cpu_num", "").strip() else 0.0,
        runtime=_helios_runtime(path, line, row),
        user=_text(row.get("user")),
        team=_text(vc),
        extra={
            k: v
            for k, v in (
                ("state", state),
                ("vc", vc),
                ("node_num", row.get("node_num", "").strip()),
            )
            if v
        },
    )


def _helios_runtime(path: Path, line: int, row: Mapping[str, str]) -> float:
    if row.get("duration", "").strip():
        return _number(path, line, row, "duration")
    start, end = row.get("start_time", "").strip(), row.get("end_time", "").strip()
    if not start or not end:
        raise _Skip(NO_RUNTIME)
    seconds = _timestamp(path, end, line=line) - _timestamp(path, start, line=line)
    if seconds < 0:
        raise TraceError(path, f"job ends before it starts ({start} → {end})", line=line)
    return seconds


#: no trace number may exceed this (timestamps in seconds, durations, GPU counts), so sums
#: over a whole trace stay finite
MAX_VALUE = 1e10


def _number(path: Path, line: int, row: Mapping[str, str], column: str) -> float:
    text = row.get(column, "").strip()
    try:
        value = float(text)
    except ValueError:
        raise TraceError(path, f"{column} must be a number, got {text!r}", line=line) from None
    if value < 0 or not math.isfinite(value):
        raise TraceError(path, f"{column} must be a finite number ≥ 0, got {text}", line=line)
    if value > MAX_VALUE:
        raise TraceError(path, f"{column} {text} is beyond the limit of {MAX_VALUE:g}", line=line)
    if column == "gpu_num" and not value.is_integer():
        raise TraceError(path, f"gpu_num must be a whole number, got {text}", line=line)
    return value


# -- shared ------------------------------------------------------------------------------------
def _timestamp(
    path: Path, value: Any, *, line: int | None = None, record: int | None = None
) -> float:
    """Seconds since the epoch of a naive ``YYYY-MM-DD HH:MM:SS`` (as UTC: only differences
    matter, and UTC has no daylight-saving jumps)."""
    from datetime import datetime

    try:
        moment = datetime.strptime(str(value).strip(), TIME_FORMAT)
    except ValueError:
        raise TraceError(
            path, f"bad timestamp {value!r}; expected YYYY-MM-DD HH:MM:SS", line=line, record=record
        ) from None
    return (moment - datetime(1970, 1, 1)).total_seconds()


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _loaded(path: Path, jobs: list[Job], skipped: Counter[str]) -> LoadedTrace:
    """Keep the first job of each id, shift times to the first submit, sort."""
    unique: dict[str, Job] = {}
    for job in jobs:
        if job.id in unique:
            skipped[DUPLICATE] += 1
        else:
            unique[job.id] = job
    first = min((j.submit_time for j in unique.values()), default=0.0)
    shifted = (replace(j, submit_time=j.submit_time - first) for j in unique.values())
    ordered = tuple(sorted(shifted, key=lambda j: (j.submit_time, j.id)))
    return LoadedTrace(ordered, dict(skipped), str(path))


def _open_text(path: Path) -> IO[str]:
    import gzip

    try:
        if path.suffix == ".gz":
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
        return path.open(encoding="utf-8", newline="")
    except OSError as exc:
        raise TraceError(path, f"cannot open: {exc.strerror or exc}") from None
