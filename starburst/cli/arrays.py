"""Job arrays: ``starburst submit --array 0-99 ...`` submits one job per index.

Terms: an *array spec* is ranges and single indices, comma-separated (``0-99``, ``1,4,7``,
``0-9,20-29``), optionally followed by ``%N`` (Slurm's throttle: at most N elements queued
or running at once, on-prem and cloud together; ``core.dependencies``); each element is a
job named ``<name>-<index>`` (``array-<index>`` without a name) whose environment holds
``STARBURST_ARRAY_INDEX``. With ``--idempotency-key K`` each element is submitted with
``K-<index>``, so re-running a half-failed array submits only what is missing.
"""

from __future__ import annotations

import re

from starburst.core.dependencies import MAX_ARRAY_LIMIT, check_limit
from starburst.core.errors import ConfigError

MAX_ELEMENTS = 10_000
INDEX_VAR = "STARBURST_ARRAY_INDEX"
_PART = re.compile(r"(\d+)(?:-(\d+))?")


def parse(spec: str) -> tuple[list[int], int | None]:
    """The indices of an array spec (in order, without repeats) and its limit, if any."""
    text, sep, limit_text = spec.strip().partition("%")
    limit = None
    if sep:
        raw = limit_text.strip()
        if not raw.isdigit() or len(raw) > len(str(MAX_ARRAY_LIMIT)):
            raise ConfigError(
                f"--array {spec!r}: the limit after % must be a whole number from 1 to "
                f"{MAX_ARRAY_LIMIT}, got {raw!r}"
            )
        try:
            limit = check_limit(int(raw))
        except ConfigError as exc:
            raise ConfigError(f"--array {spec!r}: {exc}") from None
    return indices(text), limit


def indices(spec: str) -> list[int]:
    """The indices of an array spec without a limit, in order, without repeats."""
    text = spec.strip()
    found: list[int] = []
    for part in text.split(","):
        match = _PART.fullmatch(part.strip())
        if match is None:
            raise ConfigError(f"--array {spec!r}: {part!r} is not an index or a range A-B")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise ConfigError(f"--array {spec!r}: the range {part!r} runs backwards")
        if last - first + 1 + len(found) > MAX_ELEMENTS:
            raise ConfigError(f"--array {spec!r}: more than {MAX_ELEMENTS} elements")
        found += range(first, last + 1)
    return list(dict.fromkeys(found))
