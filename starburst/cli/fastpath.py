"""The fast path of ``starburst simulate``: well-formed command lines run without typer.

typer (with click and pydantic behind it) costs a few hundred milliseconds to import, more
than the simulator's engine needs for the paper's 8,000-job run. ``parse_simulate`` recognises
the command lines people and scripts actually write and returns their ``SimulateArgs``; the
caller then runs ``run_simulate``, the very function the typer command calls.

Invariant: the fast path never decides anything the typer command would decide differently.
It accepts only a strict subset of what typer accepts — each option at most once, as
``--name VALUE`` or ``--name=VALUE``, plain decimal numbers inside the option's range, no
value that starts with ``-``, no ``--help``, exactly one ``TRACE`` — and returns ``None`` for
anything else, so help, usage errors and every unusual spelling are typer's own output.
Errors found while running (a bad policy name, a broken trace) are raised by
``run_simulate`` on either path, so they read the same. ``tests/cli/test_fastpath.py`` checks
that the option table below is the typer command's, and that both paths print the same.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from starburst.cli.simulate_run import DEFAULT, MAX_GPUS_PER_NODE, MAX_NODES, SimulateArgs

_INT = re.compile(r"(0|[1-9][0-9]{0,17})\Z")
_FLOAT = re.compile(r"(0|[1-9][0-9]{0,17})(\.[0-9]{1,17})?\Z")

#: option → (field, kind): kinds are int, float, str, path, or a flag's constant value.
OPTIONS: dict[str, tuple[str, Any]] = {
    "--nodes": ("nodes", (1, MAX_NODES)),
    "--gpus-per-node": ("gpus_per_node", (0, MAX_GPUS_PER_NODE)),
    "--cpus-per-node": ("cpus_per_node", float),
    "--cluster": ("cluster", Path),
    "--policy": ("policy", str),
    "--coefficient": ("coefficient", float),
    "--budget": ("budget", float),
    "--out-of-order": ("out_of_order", True),
    "--in-order": ("out_of_order", False),
    "--queue-cap": ("queue_cap", str),
    "--order": ("order", str),
    "--placement": ("placement", str),
    "--format": ("trace_format", str),
    "--status": ("status", str),
    "--price": ("price", float),
    "--startup-delay": ("startup_delay", float),
    "--estimate-error": ("estimate_error", float),
    "--seed": ("seed", int),
    "--json": ("as_json", True),
    "--per-job": ("per_job", Path),
    "--engine": ("engine", str),
}


def parse_simulate(argv: list[str]) -> SimulateArgs | None:
    """The arguments of ``starburst simulate ARGV``, or None: leave this one to typer."""
    values: dict[str, Any] = {}
    trace: str | None = None
    rest = list(argv)
    while rest:
        token = rest.pop(0)
        if not token.startswith("-"):
            if trace is not None or not token:
                return None
            trace = token
            continue
        name, eq, inline = token.partition("=")
        spec = OPTIONS.get(name)
        if spec is None or spec[0] in values:
            return None  # unknown, --help, or given twice (incl. --in-order after --out-of-order)
        field, kind = spec
        if isinstance(kind, bool):
            if eq:
                return None
            values[field] = kind
            continue
        if not eq:
            if not rest:
                return None
            inline = rest.pop(0)
        value = _convert(inline, kind)
        if value is None:
            return None
        values[field] = value
    if trace is None:
        return None
    return replace(DEFAULT, trace=Path(trace), **values)


def _convert(text: str, kind: Any) -> Any:
    """``text`` as ``kind``, or None when typer might read it otherwise (or refuse it)."""
    if not text or text.startswith("-"):
        return None
    if kind is str:
        return text
    if kind is Path:
        return Path(text)
    if kind is float:
        return float(text) if _FLOAT.match(text) else None
    if not _INT.match(text):
        return None
    number = int(text)
    if isinstance(kind, tuple) and not kind[0] <= number <= kind[1]:
        return None
    return number
