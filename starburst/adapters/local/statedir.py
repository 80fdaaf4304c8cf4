"""The state directory: what a spawn leaves on disk so that a later controller can adopt it.

The controller may be SIGKILLed at any moment and restarted, while its jobs (each in its own
session) keep running. Everything a new ``LocalCluster`` or ``EmulatedCloud`` needs to find,
watch, bill and cancel them is therefore on disk, one directory per job (``job_dirname``):

- ``spawn.json`` — the *spawn record*, written BEFORE the process is created: the job, a
  *token* unique to this spawn (also in the process's environment as ``STARBURST_SPAWN``),
  ``spawned_at`` (the backend's clock) and backend data (GPU slots and placement, or the
  emulated quote). Its presence means "a spawn was attempted"; it is never rewritten while a
  process of its token may exist.
- ``pid`` — the wrapper shell's pid, which is also its process group and session id. The
  wrapper writes it itself as its first act (so it exists even if the spawner died right
  after forking); the spawner writes the same number right after creating the process.
- ``output.log`` — a header line, then the command's stdout and stderr, at most the job's
  output cap of them (``outputcap.py``); its newest lines are read from its end
  (``read_tail``).
- ``exit_code`` — the command's exit status, written by the wrapper when the command ends,
  whether or not any controller is alive then (or by the spawner when the wrapper itself was
  killed, e.g. by a cancel).
- ``cancelled`` — written before a cancel signals the group, so a later life knows the end
  was a cancel.
- ``ended_at`` — when the emulated cloud first dated the end (its clock), so every later life
  dates it the same and a launch is billed to the end its cost entries were cut at.

Invariants: every file is written atomically (a temporary file renamed over the name), so a
reader sees either nothing or the whole content, never a torn write; the state directory and
each job's entry are 0700 and every file 0600 (``isolation.py``), whoever the job runs as.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any, BinaryIO

from starburst.core.dependencies import parse_after
from starburst.core.job import Job

SPAWN = "spawn.json"
PID = "pid"
LOG = "output.log"
EXIT_CODE = "exit_code"
CANCELLED = "cancelled"
ENDED = "ended_at"
TAIL_BLOCK = 64 * 1024  # read from a log's end this much at a time


def job_dirname(job_id: str) -> str:
    """A directory name for a job id (ids may hold '/', e.g. ``namespace/name``)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in job_id) or "_"


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so readers never see a partial file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None if the file is missing or not a JSON object."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def read_int(path: Path) -> int | None:
    """The integer in ``path``; None if the file is missing or holds no integer."""
    try:
        return int(path.read_text(encoding="utf-8").strip())
    except (FileNotFoundError, ValueError):
        return None


def read_float(path: Path) -> float | None:
    """The number in ``path``; None if the file is missing or holds no finite number."""
    try:
        value = float(path.read_text(encoding="utf-8").strip())
    except (FileNotFoundError, ValueError):
        return None
    return value if math.isfinite(value) else None


def read_tail(path: Path, lines: int | None = None) -> str:
    """The last ``lines`` lines of the file at ``path`` (None: all of it; missing: ""),
    read from its end: only the blocks those lines are in, whatever the file's size."""
    try:
        log = path.open("rb")
    except FileNotFoundError:
        return ""
    with log:
        if lines is None:
            data = log.read()
        elif lines <= 0:
            data = b""
        else:
            data = _last_blocks(log, lines)
    text = data.decode("utf-8", errors="replace")
    return text if lines is None else "".join(text.splitlines(keepends=True)[-lines:])


def _last_blocks(log: BinaryIO, lines: int) -> bytes:
    """The end of ``log`` that holds at least its last ``lines`` lines (and a newline more,
    so the first of them is whole)."""
    position = log.seek(0, os.SEEK_END)
    blocks: list[bytes] = []
    newlines = 0
    while position > 0 and newlines <= lines:
        size = min(TAIL_BLOCK, position)
        position -= size
        log.seek(position)
        block = log.read(size)
        blocks.append(block)
        newlines += block.count(b"\n")
    return b"".join(reversed(blocks))


def age(path: Path) -> float | None:
    """Seconds since ``path`` was last written (wall clock); None if it does not exist."""
    try:
        return max(0.0, time.time() - path.stat().st_mtime)
    except FileNotFoundError:
        return None


def job_to_json(job: Job) -> dict[str, Any]:
    """The job as a JSON object (for the spawn record)."""
    value = {f.name: getattr(job, f.name) for f in fields(job)}
    value["extra"] = dict(job.extra)
    value["after"] = [str(dependency) for dependency in job.after]  # "ID" or "ID:ok"
    return value


def job_from_json(value: Mapping[str, Any]) -> Job:
    """The job a spawn record holds (fields this version does not know are ignored)."""
    known = {f.name for f in fields(Job)}
    job = {k: v for k, v in value.items() if k in known}
    job["after"] = tuple(parse_after(text) for text in value.get("after") or ())
    return Job(**job)
