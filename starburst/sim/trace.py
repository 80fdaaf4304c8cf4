"""The project's own trace format: one CSV row per job, times in seconds.

Required columns: ``job_id, submit_time, runtime, gpus, cpus``. Optional columns with a
meaning: ``estimate`` (the runtime the policy sees, if not the true one), ``estimate_low`` and
``estimate_high`` (its p10–p90 band, read by ``compute-expected``), ``memory_mb``,
``gpu_type``, ``user``, ``team``, ``name``, ``deadline``, ``pods`` (the job runs as that many
equal pods, each kept whole on a node), ``after`` (the jobs it waits for, space-separated,
each ``ID`` to wait for its end or ``ID:ok`` for its success: ``core.dependencies``),
``array`` and ``array_limit`` (the array it belongs to, and how many of its elements may run
at once). Any other column is carried through in ``Job.extra``.

Invariants: a trace that loads is valid — every number parses, nothing is negative, GPUs are
whole, job ids are unique, every dependency names a job of the trace and none forms a
cycle. The first problem found is reported as one ``TraceError`` naming
the file and the line, never a traceback.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from pathlib import Path

from starburst.core.dependencies import check_limit, find_cycle, parse_after
from starburst.core.errors import ConfigError
from starburst.core.job import Job
from starburst.sim.trace_errors import TraceError

REQUIRED = ("job_id", "submit_time", "runtime", "gpus", "cpus")
_NUMERIC_OPTIONAL = ("estimate", "memory_mb", "deadline", "pods", "estimate_low", "estimate_high")
_TEXT_OPTIONAL = ("gpu_type", "user", "team", "name")
_GATE_COLUMNS = ("after", "array", "array_limit")
KNOWN = (*REQUIRED, *_NUMERIC_OPTIONAL, *_TEXT_OPTIONAL, *_GATE_COLUMNS)


#: the largest value a column may hold (times and durations: ``MAX_SECONDS``, a century), so
#: that sums over a whole trace stay finite (a runtime of 1e308 once overflowed the run)
MAX_SECONDS = 100 * 365 * 86400.0
LIMITS = {"gpus": 1e6, "cpus": 1e7, "memory_mb": 1e12, "pods": 1e6}


def load_trace(path: str | Path) -> list[Job]:
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            return _parse(str(path), csv.DictReader(fh))
    except FileNotFoundError:
        raise TraceError(path, "no such trace file") from None
    except IsADirectoryError:
        raise TraceError(path, "is a directory, not a trace file") from None
    except UnicodeDecodeError:
        raise TraceError(path, "not a UTF-8 text CSV file") from None
    except csv.Error as exc:
        raise TraceError(path, f"malformed CSV: {exc}") from None


def _parse(name: str, reader: csv.DictReader[str]) -> list[Job]:
    if reader.fieldnames is None:
        raise TraceError(name, f"empty file; expected a header with {', '.join(REQUIRED)}")
    header = [h.strip() for h in reader.fieldnames]
    reader.fieldnames = header
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise TraceError(name, f"missing column(s): {', '.join(missing)}", line=1)
    jobs: list[Job] = []
    seen: set[str] = set()
    for row in reader:
        line = reader.line_num
        if None in row:
            raise TraceError(name, "more fields than the header has", line=line)
        job = _job(name, line, row)
        if job.id in seen:
            raise TraceError(name, f"duplicate job_id {job.id!r}", line=line)
        seen.add(job.id)
        jobs.append(job)
    _check_dependencies(name, jobs, seen)
    return jobs


def _check_dependencies(name: str, jobs: list[Job], ids: set[str]) -> None:
    for job in jobs:
        missing = [d.job_id for d in job.after if d.job_id not in ids]
        if missing:
            raise TraceError(name, f"job {job.id} depends on {missing[0]!r}, not in the trace")
    cycle = find_cycle({j.id: [d.job_id for d in j.after] for j in jobs if j.after})
    if cycle is not None:
        raise TraceError(name, f"dependency cycle: {' → '.join(cycle)}")


def _number(name: str, line: int, row: dict[str, str], column: str) -> float | None:
    raw = (row.get(column) or "").strip()
    if not raw:
        if column in REQUIRED:
            raise TraceError(name, f"{column} is empty", line=line)
        return None
    try:
        value = float(raw)
    except ValueError:
        raise TraceError(name, f"{column} {raw!r} is not a number", line=line) from None
    if not math.isfinite(value) or value < 0:
        raise TraceError(name, f"{column} must be a finite number ≥ 0, got {raw}", line=line)
    limit = LIMITS.get(column, MAX_SECONDS)
    if value > limit:
        raise TraceError(name, f"{column} {raw} is beyond the limit of {limit:g}", line=line)
    return value


def _job(name: str, line: int, row: dict[str, str]) -> Job:
    job_id = (row.get("job_id") or "").strip()
    if not job_id:
        raise TraceError(name, "job_id is empty", line=line)
    nums = {c: _number(name, line, row, c) for c in (*REQUIRED[1:], *_NUMERIC_OPTIONAL)}
    gpus = nums["gpus"] or 0.0
    if gpus != int(gpus):
        raise TraceError(name, f"gpus must be a whole number, got {gpus:g}", line=line)
    pods = nums["pods"]
    if pods is not None and (pods != int(pods) or pods < 1):
        raise TraceError(name, f"pods must be a whole number ≥ 1, got {pods:g}", line=line)
    text = {c: (row.get(c) or "").strip() or None for c in _TEXT_OPTIONAL}
    extra = {k: v for k, v in row.items() if k not in KNOWN and v is not None}
    try:
        after = tuple(parse_after(t) for t in (row.get("after") or "").replace(";", " ").split())
        array, limit = _array(row)
    except ConfigError as exc:
        raise TraceError(name, str(exc), line=line) from None
    if any(d.job_id == job_id for d in after):
        raise TraceError(name, f"job {job_id} depends on itself", line=line)
    return Job(
        id=job_id,
        submit_time=nums["submit_time"] or 0.0,
        gpus=int(gpus),
        cpus=nums["cpus"] or 0.0,
        memory_mb=nums["memory_mb"] or 0.0,
        gpu_type=text["gpu_type"],
        runtime=nums["runtime"],
        estimate=nums["estimate"],
        user=text["user"],
        team=text["team"],
        name=text["name"],
        deadline=nums["deadline"],
        pods=None if pods is None else int(pods),
        extra=extra,
        estimate_low=nums["estimate_low"],
        estimate_high=nums["estimate_high"],
        after=after,
        array=array,
        array_limit=limit,
    )


def _array(row: dict[str, str]) -> tuple[str | None, int | None]:
    array = (row.get("array") or "").strip() or None
    raw = (row.get("array_limit") or "").strip()
    if not raw:
        return array, None
    if array is None:
        raise ConfigError("array_limit needs an array to limit")
    if not raw.isdigit() or len(raw) > 9:
        raise ConfigError(f"array_limit must be a whole number ≥ 1, got {raw!r}")
    return array, check_limit(int(raw))


def _gate_values(job: Job) -> list[str]:
    limit = "" if job.array_limit is None else str(job.array_limit)
    return [" ".join(str(d) for d in job.after), job.array or "", limit]


def write_trace(jobs: Iterable[Job], path: str | Path) -> None:
    """Write jobs in the project's format (the columns any job uses, extras last)."""
    jobs = list(jobs)
    optional = [
        c
        for c in (*_NUMERIC_OPTIONAL, *_TEXT_OPTIONAL)
        if any(getattr(j, c) is not None and getattr(j, c) != 0.0 for j in jobs)
    ]
    extras = sorted({k for j in jobs for k in j.extra})
    gated = any(j.after or j.array is not None for j in jobs)
    gate_columns = list(_GATE_COLUMNS) if gated else []
    with Path(path).open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow([*REQUIRED, *optional, *gate_columns, *extras])
        for j in jobs:
            values = [getattr(j, c) for c in optional]
            writer.writerow(
                [
                    j.id,
                    _fmt(j.submit_time),
                    _fmt(j.runtime),
                    j.gpus,
                    _fmt(j.cpus),
                    *(
                        "" if v is None else _fmt(v) if isinstance(v, float) else str(v)
                        for v in values
                    ),
                    *(_gate_values(j) if gated else []),
                    *(j.extra.get(k, "") for k in extras),
                ]
            )


def _fmt(value: float | None) -> str:
    return "" if value is None else repr(float(value))
