"""CSV cells a spreadsheet opens as text, never as a formula: the one writer of every CSV.

Finance opens Starburst's CSVs (cost reports, trace exports, simulation results) in a
spreadsheet, and a spreadsheet runs a cell that begins with ``=``, ``+``, ``-`` or ``@`` (or
a tab or carriage return, which some strip first) as a formula: ``=HYPERLINK(...)`` in a
project name, a user-chosen string, would run on the finance team's machine. ``writer`` wraps
``csv.writer`` so that every row written passes through ``cell``.

Terms:
- *risky*: a text cell whose first character is one of ``= + - @ \\t \\r`` and that is not a
  plain number (see below), or that begins with ``'`` followed by a risky text.
- *neutralised*: a risky cell with one ``'`` put before it (OWASP's advice): a spreadsheet
  shows it as text. ``restore`` takes the ``'`` off again, for readers of our own CSVs
  (``starburst simulate`` reading a ``history export``).

Invariants:
- Numbers stay numbers: an ``int``, ``float`` or ``Decimal`` is written as it is, and so is
  a text cell that is a plain decimal number (``-0.50``, ``+3``, ``1e-3``), which no
  spreadsheet reads as a formula: a refund of ``-0.50`` in an amount column sums as money.
- ``restore(cell(text)) == text`` for every text, so an exported trace reads back unchanged.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from typing import Any, Protocol

#: the first characters that make a spreadsheet read a cell as a formula
FORMULA_START = frozenset("=+-@\t\r")
QUOTE = "'"
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


class _Writes(Protocol):
    def write(self, text: str, /) -> Any: ...


def risky(text: str) -> bool:
    """Whether a spreadsheet could read ``text`` as a formula (see the module terms)."""
    head = text[:1]
    if head in FORMULA_START:
        return not _PLAIN_NUMBER.fullmatch(text)
    return head == QUOTE and risky(text[1:])


def cell(value: object) -> object:
    """``value`` as a CSV cell: a risky text neutralised, anything else unchanged."""
    if isinstance(value, str) and risky(value):
        return QUOTE + value
    return value


def restore(text: str) -> str:
    """The text ``cell`` neutralised (``text`` itself when it was not)."""
    if text.startswith(QUOTE) and risky(text[1:]):
        return text[1:]
    return text


class SafeWriter:
    """``csv.writer`` whose rows pass through ``cell``."""

    def __init__(self, out: _Writes, **options: Any) -> None:
        self._writer = csv.writer(out, **options)

    def writerow(self, row: Iterable[object]) -> Any:
        return self._writer.writerow([cell(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[object]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(out: _Writes, **options: Any) -> SafeWriter:
    """A CSV writer on ``out`` (``csv.writer``'s options) that neutralises risky cells."""
    return SafeWriter(out, **options)
