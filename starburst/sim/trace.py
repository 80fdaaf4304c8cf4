"""The project's own trace format: one CSV row per job, times in seconds.

Required columns: ``job_id, submit_time, runtime, gpus, cpus``. Optional columns with a
meaning: ``estimate`` (the runtime the policy sees, if not the true one), ``estimate_low`` and
``estimate_high`` (its p10–p90 band, read by ``compute-expected``), ``memory_mb``,
``gpu_type``, ``user``, ``team``, ``name``, ``deadline``, ``pods`` (the job runs as that many
equal pods, each kept whole on a node), ``after`` (the jobs it waits for, space-separated,
each ``ID`` to wait for its end or ``ID:ok`` for its success: ``core.dependencies``),
``array`` and ``array_limit`` (the array it belongs to, and how many of its elements may run
at once). Any other column is carried through in ``Job.extra``; ``array_index`` (an
element's index in its array) also sets ``Job.array_index``, which orders elements that
enter the queue at one instant.

Invariants: a trace that loads is valid — every number parses, nothing is negative, GPUs are
whole, job ids are unique, every dependency names a job of the trace and none forms a
cycle. The first problem found is reported as one ``TraceError`` naming
the file and the line, never a traceback.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from starburst.core.columns import from_columns
from starburst.core.dependencies import array_index_in, check_limit, find_cycle, parse_after
from starburst.core.errors import ConfigError
from starburst.core.job import Job
from starburst.sim.trace_errors import TraceError
from starburst.spreadsheet import restore
from starburst.spreadsheet import writer as csv_writer

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
            return _parse(str(path), fh)
    except FileNotFoundError:
        raise TraceError(path, "no such trace file") from None
    except IsADirectoryError:
        raise TraceError(path, "is a directory, not a trace file") from None
    except UnicodeDecodeError:
        raise TraceError(path, "not a UTF-8 text CSV file") from None
    except csv.Error as exc:
        raise TraceError(path, f"malformed CSV: {exc}") from None


class _Columns:
    """Where each column sits in a row (a repeated name: its last position, as a dict of the
    row would keep), so rows are read as lists rather than built into dicts: reading the
    paper's 8,000-job trace is then a small part of a whole ``starburst simulate``."""

    def __init__(self, header: list[str]) -> None:
        self.width = len(header)
        where = {name: i for i, name in enumerate(header)}
        self.index = where
        self.numeric = [(c, where.get(c)) for c in (*REQUIRED[1:], *_NUMERIC_OPTIONAL)]
        present = [(c, i) for c, i in self.numeric if i is not None]
        self.present = [c for c, _ in present]
        self.positions = [i for _, i in present]
        self.limits = [LIMITS.get(c, MAX_SECONDS) for c in self.present]
        self.absent = {c: None for c, i in self.numeric if i is None}
        self.text = [(c, i) for c in _TEXT_OPTIONAL if (i := where.get(c)) is not None]
        self.gates = [where.get(c) for c in _GATE_COLUMNS]
        self.gated = any(i is not None for i in self.gates)
        self.extra = [(k, i) for k, i in where.items() if k not in KNOWN]
        self.by_column = where.keys() <= _BY_COLUMN


#: the columns ``_by_column`` reads (a file with any other column is read row by row)
_BY_COLUMN = frozenset((*REQUIRED, "estimate", "memory_mb", "deadline", "pods", *_TEXT_OPTIONAL))


def _by_column(rows: Sequence[list[str]], c: _Columns) -> list[Job] | None:
    """The jobs of a well-formed trace, read a column at a time (each a few C-speed passes
    over a list instead of a Python step per cell): the same jobs as ``_job`` would build row
    by row, or None when any cell needs that reading — a short or long row, a blank line, an
    empty or invalid number, a fractional GPU count, an empty or repeated job id — so that
    the rows then say what is wrong, and where, as they always did."""
    width = c.width
    if any(len(row) != width for row in rows):
        return None
    cells = [[row[i] for row in rows] for i in range(width)]
    try:
        values = {
            column: list(map(float, cells[i]))
            for column, i in zip(c.present, c.positions, strict=True)
        }
    except ValueError:
        return None
    for column, limit in zip(c.present, c.limits, strict=True):
        found = values[column]  # (min and max pass a NaN over: it is looked for apart)
        if found and not (
            min(found) >= 0.0 and max(found) <= limit and not any(map(math.isnan, found))
        ):
            return None
    gpus, pods = values["gpus"], values.get("pods")
    if not all(map(float.is_integer, gpus)):
        return None
    if pods is not None and not (all(map(float.is_integer, pods)) and all(map((1.0).__le__, pods))):
        return None
    ids = list(map(restore, map(str.strip, cells[c.index["job_id"]])))
    if not all(ids) or len(set(ids)) != len(ids):
        return None
    columns: dict[str, Iterable[object]] = {
        "id": ids,
        # ``abs``: as ``_job``'s ``or 0.0``, a "-0" cell (≥ 0, so valid) reads as 0.0
        "submit_time": map(abs, values["submit_time"]),
        "gpus": map(int, gpus),
        "cpus": map(abs, values["cpus"]),
        "runtime": values["runtime"],
    }
    if "memory_mb" in values:
        columns["memory_mb"] = map(abs, values["memory_mb"])
    for column in ("estimate", "deadline"):
        if column in values:
            columns[column] = values[column]
    if pods is not None:
        columns["pods"] = map(int, pods)
    for column in _TEXT_OPTIONAL:
        i = c.index.get(column)
        if i is not None:
            columns[column] = [restore(v) if (v := cell.strip()) else None for cell in cells[i]]
    return from_columns(Job, len(ids), columns)  # (a column left out: the field's default)


def _parse(name: str, fh: Iterable[str]) -> list[Job]:
    lines = list(fh)  # read once: the rows by column first, by row when that declines
    reader = csv.reader(lines)
    header_row = next(reader, None)
    if header_row is None:
        raise TraceError(name, f"empty file; expected a header with {', '.join(REQUIRED)}")
    columns = _Columns([h.strip() for h in header_row])
    missing = [c for c in REQUIRED if c not in columns.index]
    if missing:
        raise TraceError(name, f"missing column(s): {', '.join(missing)}", line=1)
    if columns.by_column:
        try:
            rows = list(reader)
        except csv.Error:  # malformed further on: the rows before it may have more to say
            rows = None
        jobs = None if rows is None else _by_column(rows, columns)
        if jobs is not None:
            return jobs
        reader = csv.reader(lines)  # something to report, or an empty cell: row by row
        next(reader)
    jobs = []
    seen: set[str] = set()
    for row in reader:
        if not row:
            continue  # a blank line
        line = reader.line_num
        if len(row) > columns.width:
            raise TraceError(name, "more fields than the header has", line=line)
        job = _job(name, line, row, columns)
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


def _number(name: str, line: int, raw: str, column: str) -> float | None:
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


def _numbers(name: str, line: int, row: list[str], c: _Columns) -> dict[str, float | None]:
    """The numeric columns of ``row``, by column (None: empty or absent). Most rows hold a
    valid number in every column the file has: one pass of ``float`` and a range check
    reads those; any other row is read cell by cell by ``_number``, which says what is wrong
    (or that an empty cell is None)."""
    try:
        values = [float(row[i]) for i in c.positions]
    except (ValueError, IndexError):
        values = None
    if values is not None and all(0.0 <= v <= m for v, m in zip(values, c.limits, strict=True)):
        nums: dict[str, float | None] = dict(zip(c.present, values, strict=True))
        nums.update(c.absent)
        return nums
    return {col: _number(name, line, _cell(row, i), col) for col, i in c.numeric}


def _cell(row: list[str], index: int | None) -> str:
    """The stripped cell at ``index`` (as written, if ``write_trace`` neutralised it for
    spreadsheets); "" for a column the file or this short row lacks."""
    return restore(row[index].strip()) if index is not None and index < len(row) else ""


def _job(name: str, line: int, row: list[str], columns: _Columns) -> Job:
    """One row as a job. The numeric columns are the ``Job`` fields of the same name."""
    job_id = _cell(row, columns.index["job_id"])
    if not job_id:
        raise TraceError(name, "job_id is empty", line=line)
    nums = _numbers(name, line, row, columns)
    gpus = nums["gpus"] or 0.0
    if gpus != int(gpus):
        raise TraceError(name, f"gpus must be a whole number, got {gpus:g}", line=line)
    pods = nums["pods"]
    if pods is not None and (pods != int(pods) or pods < 1):
        raise TraceError(name, f"pods must be a whole number ≥ 1, got {pods:g}", line=line)
    fields: dict[str, Any] = nums  # the same dict, completed: no copy per row
    fields["gpus"] = int(gpus)
    fields["pods"] = None if pods is None else int(pods)
    fields["submit_time"] = nums["submit_time"] or 0.0
    fields["cpus"] = nums["cpus"] or 0.0
    fields["memory_mb"] = nums["memory_mb"] or 0.0
    width = len(row)
    for column, i in columns.text:  # only the columns the file has: absent ones stay None
        if i < width and (value := row[i].strip()):
            fields[column] = restore(value)
    if columns.extra:
        fields["extra"] = extra = {k: restore(row[i]) for k, i in columns.extra if i < width}
        fields["array_index"] = array_index_in(extra)
    if columns.gated:
        fields.update(_gates(name, line, row, columns, job_id))
    return Job(id=job_id, **fields)


def _gates(
    name: str, line: int, row: list[str], columns: _Columns, job_id: str
) -> dict[str, object]:
    after_cell, array_cell, limit_cell = (_cell(row, i) for i in columns.gates)
    try:
        after = tuple(parse_after(t) for t in after_cell.replace(";", " ").split())
        array, limit = _array(array_cell, limit_cell)
    except ConfigError as exc:
        raise TraceError(name, str(exc), line=line) from None
    if any(d.job_id == job_id for d in after):
        raise TraceError(name, f"job {job_id} depends on itself", line=line)
    return {"after": after, "array": array, "array_limit": limit}


def _array(array_cell: str, raw: str) -> tuple[str | None, int | None]:
    array = array_cell or None
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
        writer = csv_writer(fh)  # text cells a spreadsheet would run are neutralised
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
