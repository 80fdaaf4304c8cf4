"""Control characters: what makes a terminal act instead of show, refused in names and
escaped wherever the CLI prints others' text.

Terms:
- *control*: a C0 control (U+0000–U+001F; ESC among them, which starts every escape
  sequence: ``ESC]52`` clipboard writes, ``ESC]8`` links, ``ESC]0`` titles, ``ESC[`` cursor
  moves), DEL, a C1 control (U+0080–U+009F: U+009B is a one-character CSI, U+0085 a line
  break), or a bidirectional control (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069),
  which makes text read other than it is.
- *layout*: tab, newline and carriage return, the C0 controls that text such as a command
  or a job's output keeps.

``CONTROLS`` and ``CONTROLS_BUT_LAYOUT`` are regex class bodies that Python, JSON Schema
(ECMA-262) and pydantic's Rust regexes read the same way.
"""

from __future__ import annotations

_C0_BUT_LAYOUT = r"\x00-\x08\x0b\x0c\x0e-\x1f"
_LAYOUT = r"\x09\x0a\x0d"
_OTHERS = r"\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"

#: every control (names, labels, ids)
CONTROLS = _C0_BUT_LAYOUT + _LAYOUT + _OTHERS
#: every control but tab, newline and carriage return (commands, job output)
CONTROLS_BUT_LAYOUT = _C0_BUT_LAYOUT + _OTHERS
