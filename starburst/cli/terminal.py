"""Text from jobs and users, made safe for a terminal before the CLI prints it.

A job's output and the names users give reach other people's terminals (an admin's
``starburst jobs``, ``status``, ``explain``). A terminal obeys escape sequences in what it
prints: ``ESC]52`` writes the clipboard, ``ESC]8`` makes a link, ``ESC]0`` sets the title,
``ESC[`` moves the cursor and rewrites what was shown, and bidirectional controls (U+202E)
make text read other than it is. ``printable`` shows every such character as a visible escape
(``\\x1b``, ``\\x9b``, ``\\u202e``), so the rest of a sequence is inert text and nothing is
hidden from the reader.

Terms (*control*, *layout*: ``starburst.core.controls``): ``printable`` escapes every
control but tab and newline; with ``keep_cr`` (a job's output) carriage returns stay too,
which progress bars redraw with.

``starburst logs`` prints raw bytes when its output is not a terminal (a file or a pipe gets
what the job wrote) and the printable form on a terminal unless ``--raw``.
"""

from __future__ import annotations

import re

import typer

from starburst.core.controls import CONTROLS_BUT_LAYOUT

_UNSAFE = re.compile(f"[{CONTROLS_BUT_LAYOUT}\\r]")
_UNSAFE_BUT_CR = re.compile(f"[{CONTROLS_BUT_LAYOUT}]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, keep_cr: bool = False) -> str:
    """``text`` with every control but tab and newline (and carriage return with
    ``keep_cr``) shown as an escape."""
    return (_UNSAFE_BUT_CR if keep_cr else _UNSAFE).sub(_shown, text)


def say(text: str, *, err: bool = False, nl: bool = True) -> None:
    """``typer.echo`` of ``printable(text)``: how the CLI prints what others wrote."""
    typer.echo(printable(text), err=err, nl=nl)
