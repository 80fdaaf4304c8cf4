"""A failed job's cause, as stored in its ``failed`` event's reason and shown to people.

Terms:
- *cause*: one line saying how it ended (``exit code 7``, ``killed by signal 9``,
  ``the job's process disappeared without an exit status``), written by the backend.
- *output tail*: the job's last lines of output (at most ``TAIL_LINES`` lines and
  ``TAIL_CHARS`` characters), appended after ``OUTPUT_MARK`` on lines of their own, so the
  first line of a reason stays a one-line summary (``explain`` tables show only it).
- *exit code*: read back from the cause (``exit code N``), so the number the job exited with
  reaches ``status``, the JSON and ``logs -f`` without another column in the store.

Invariant: ``exit_code_in(with_output(f"exit code {n}", any_text)) == n``.
"""

from __future__ import annotations

import re

TAIL_LINES = 10
TAIL_CHARS = 2000
OUTPUT_MARK = "last output:"
_EXIT = re.compile(r"\bexit code (\d+)\b")


def output_tail(text: str, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str:
    """The last ``lines`` non-empty lines of ``text``, cut to the last ``chars`` characters."""
    kept = [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]
    tail = "\n".join(kept)
    return tail if len(tail) <= chars else "…" + tail[-chars:]


def with_output(cause: str, output: str) -> str:
    """``cause``, then the output tail (if any) after ``OUTPUT_MARK``."""
    tail = output_tail(output)
    return f"{cause}; {OUTPUT_MARK}\n{tail}" if tail else cause


def first_line(reason: str) -> str:
    return reason.split("\n", 1)[0]


def cause_of(reason: str) -> str:
    """The one-line cause of a reason, without the output tail or its mark."""
    return first_line(reason).removesuffix(f"; {OUTPUT_MARK}")


def tail_of(reason: str) -> str:
    """The output tail of a reason ("" if it has none)."""
    return reason.partition("\n")[2]


def exit_code_in(reason: str) -> int | None:
    """The exit code a failure reason names in its first line (None if it names none)."""
    found = _EXIT.search(first_line(reason))
    return int(found.group(1)) if found else None
