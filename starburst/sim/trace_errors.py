"""The error a trace loader raises for input it cannot read, naming where the problem is.

Its message always starts with the file, then the place in it — ``line N`` for line-based
files (CSV), ``record N`` (1-based) for record-based ones (a JSON list) — then what is wrong:
"philly.json: record 17: missing 'submitted_time'". Rows that are readable but unusable for
simulation (no GPUs, no runtime) are not errors: loaders skip and count them.
"""

from __future__ import annotations

from pathlib import Path

from starburst.core.errors import StarburstError


class TraceError(StarburstError, ValueError):
    """Unreadable trace input; ``path``, ``line`` and ``record`` say where."""

    def __init__(
        self, path: str | Path, message: str, *, line: int | None = None, record: int | None = None
    ) -> None:
        self.path = Path(path)
        self.line = line
        self.record = record
        where = str(path)
        if line is not None:
            where += f": line {line}"
        if record is not None:
            where += f": record {record}"
        super().__init__(f"{where}: {message}")
