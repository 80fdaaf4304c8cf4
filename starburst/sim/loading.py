"""Load jobs from any supported trace format, chosen by name or guessed from the file.

- ``csv``: the project's own format (``starburst.sim.trace``).
- ``philly``: Microsoft Philly ``cluster_job_log`` JSON.
- ``helios``: SenseTime Helios (Venus) ``cluster_log.csv``.
``auto`` picks philly for ``.json``, helios for a CSV whose header has ``gpu_num``, else csv.
"""

from __future__ import annotations

from pathlib import Path

from starburst.core.errors import ConfigError
from starburst.core.job import Job
from starburst.sim.formats import LoadedTrace, load_helios, load_philly
from starburst.sim.trace import load_trace
from starburst.sim.trace_errors import TraceError

FORMATS = ("auto", "csv", "philly", "helios")


def guess_format(path: Path) -> str:
    if path.suffix.lower() == ".json":
        return "philly"
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            header = fh.readline()
    except FileNotFoundError:
        raise TraceError(path, "no such trace file") from None
    except IsADirectoryError:
        raise TraceError(path, "is a directory, not a trace file") from None
    return "helios" if "gpu_num" in header else "csv"


def load(path: str | Path, fmt: str = "auto") -> LoadedTrace:
    """Jobs from a trace file, with what was skipped (public traces carry unusable rows)."""
    path = Path(path)
    if fmt not in FORMATS:
        raise ConfigError(f"unknown trace format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "auto":
        fmt = guess_format(path)
    if fmt == "csv":
        return LoadedTrace(tuple(load_trace(path)), {}, str(path))
    return load_philly(path) if fmt == "philly" else load_helios(path)


def load_jobs(path: str | Path, fmt: str = "auto") -> list[Job]:
    return list(load(path, fmt).jobs)
