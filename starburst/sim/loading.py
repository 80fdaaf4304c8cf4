"""Load jobs from any supported trace format, chosen by name or recognised from the file.

- ``csv``: the project's own format (``starburst.sim.trace``).
- ``philly``: Microsoft Philly ``cluster_job_log`` JSON.
- ``helios``: SenseTime Helios (Venus) ``cluster_log.csv``.

``auto`` looks at the content, not only the name, because the real Philly file is called
``cluster_job_log`` with no extension: a file (or ``.gz``) whose first non-blank character is
``[`` or ``{`` is Philly JSON, a CSV whose header has ``gpu_num`` is Helios, anything else is
the project's CSV (which then reports its own errors).

*Status filter* (``statuses``): keep only jobs whose final status is listed, as the reference
pipelines do (``Pass`` for Philly; ``COMPLETED``/``TIMEOUT`` for Helios; for the project's CSV,
the ``status`` column, else ``state``). A job filtered out is counted in
``LoadedTrace.skipped`` under ``formats.STATUS``; a CSV without such a column keeps nothing
and says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from pathlib import Path

from starburst.core.errors import ConfigError
from starburst.core.job import Job
from starburst.sim.formats import STATUS, LoadedTrace, load_helios, load_philly
from starburst.sim.trace import load_trace
from starburst.sim.trace_errors import TraceError

FORMATS = ("auto", "csv", "philly", "helios")
STATUS_COLUMNS = ("status", "state")
_PEEK = 4096


def _peek(path: Path) -> str:
    """The first few KiB of the file as text (decompressed for ``.gz``)."""
    try:
        if path.suffix.lower() == ".gz":
            import gzip  # (here: a plain trace does not pay for its import)

            with gzip.open(path, "rb") as packed:
                head = packed.read(_PEEK)
        else:
            with path.open("rb") as fh:
                head = fh.read(_PEEK)
    except FileNotFoundError:
        raise TraceError(path, "no such trace file") from None
    except IsADirectoryError:
        raise TraceError(path, "is a directory, not a trace file") from None
    except (OSError, EOFError) as exc:
        raise TraceError(path, f"cannot read: {exc}") from None
    return head.decode("utf-8", errors="replace")


def guess_format(path: Path) -> str:
    """``philly``, ``helios`` or ``csv``, from the file's content (see the module docstring)."""
    head = _peek(path).lstrip("\ufeff \t\r\n")
    if head[:1] in ("[", "{") or (not head and path.suffix.lower() == ".json"):
        return "philly"
    header = head.splitlines()[0] if head else ""
    return "helios" if "gpu_num" in header else "csv"


def parse_statuses(text: str | None) -> frozenset[str] | None:
    """``"Pass,Killed"`` → {"Pass", "Killed"}; ``None`` or blank → no filter."""
    if text is None or not text.strip():
        return None
    return frozenset(s.strip() for s in text.split(",") if s.strip())


def load(
    path: str | Path, fmt: str = "auto", statuses: Collection[str] | None = None
) -> LoadedTrace:
    """Jobs from a trace file, with what was skipped (public traces carry unusable rows)."""
    path = Path(path)
    if fmt not in FORMATS:
        raise ConfigError(f"unknown trace format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "auto":
        fmt = guess_format(path)
    if fmt == "philly":
        return load_philly(path, statuses)
    if fmt == "helios":
        return load_helios(path, statuses)
    jobs = load_trace(path)
    if statuses is None:
        return LoadedTrace(tuple(jobs), {}, str(path))
    return _filter_csv(path, jobs, statuses)


def _filter_csv(path: Path, jobs: list[Job], statuses: Collection[str]) -> LoadedTrace:
    column = next((c for c in STATUS_COLUMNS if any(c in j.extra for j in jobs)), None)
    if column is None and jobs:
        raise ConfigError(
            f"{path}: --status needs a 'status' or 'state' column, and the trace has neither"
        )
    kept = tuple(j for j in jobs if column is not None and j.extra.get(column) in statuses)
    skipped = Counter({STATUS: len(jobs) - len(kept)} if len(kept) < len(jobs) else {})
    return LoadedTrace(kept, dict(skipped), str(path))


def load_jobs(
    path: str | Path, fmt: str = "auto", statuses: Collection[str] | None = None
) -> list[Job]:
    return list(load(path, fmt, statuses).jobs)
