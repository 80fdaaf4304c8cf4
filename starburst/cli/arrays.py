"""Job arrays: ``starburst submit --array 0-99 ...`` submits one job per index.

Terms: an *array spec* is ranges and single indices, comma-separated (``0-99``, ``1,4,7``,
``0-9,20-29``), optionally followed by ``%N`` (Slurm's throttle: at most N elements queued
or running at once, on-prem and cloud together; ``core.dependencies``); each element is a
job named ``<name>-<index>`` (``array-<index>`` without a name) whose environment holds
``STARBURST_ARRAY_INDEX``. With ``--idempotency-key K`` each element is submitted with
``K-<index>``, so re-running a half-failed array submits only what is missing.

Every array has an *array id* (``starburst.api.arrays``): the idempotency key, else
``<name>-<8 hex digits>``, printed by ``submit``. ``status`` and ``cancel`` take it where
they take a job (a job id, prefix or name wins over an array id); ``element_ids`` expands it
for any other command that acts on jobs one by one. Each element carries its index to the
server (``array_index``), which starts elements entering the queue together in index order.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from starburst.core.dependencies import MAX_ARRAY_INDEX, MAX_ARRAY_LIMIT, check_limit
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
        if last > MAX_ARRAY_INDEX:
            raise ConfigError(f"--array {spec!r}: an index may be at most {MAX_ARRAY_INDEX}")
        if last - first + 1 + len(found) > MAX_ELEMENTS:
            raise ConfigError(f"--array {spec!r}: more than {MAX_ELEMENTS} elements")
        found += range(first, last + 1)
    return list(dict.fromkeys(found))


def array_path(array_id: str, suffix: str = "") -> str:
    return f"/v1/arrays/{quote(array_id, safe='/')}" + (f"/{suffix}" if suffix else "")


def fetch(server: str, token: str | None, array_id: str) -> dict[str, Any]:
    """The array ``array_id`` names (``GET /v1/arrays/ID``), or exit with one line."""
    from starburst.cli.jobs import call

    found: dict[str, Any] = call(server, token, "GET", array_path(array_id))
    return found


def element_ids(server: str, token: str | None, array_id: str) -> list[str]:
    """The ids of the array's elements, in index order (exit with one line if unknown)."""
    return [e["id"] for e in fetch(server, token, array_id)["elements"]]


def show(array: dict[str, Any]) -> str:
    """An array for people: a header with the count per state, then one line per element."""
    from starburst.cli.jobs import table

    counts = ", ".join(f"{n} {state}" for state, n in sorted(array["states"].items()))
    limit = f", at most {array['limit']} at once" if array["limit"] else ""
    rows = [
        [e["id"], e["name"] or "-", "held" if e.get("held") else e["state"], e["plan"] or "-"]
        for e in array["elements"]
    ]
    head = f"array {array['id']}: {len(rows)} jobs ({counts}){limit}"
    return head + "\n" + table(["JOB", "NAME", "STATE", "NEXT"], rows)
