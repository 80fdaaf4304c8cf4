"""Kubernetes resource quantities ("500m", "16Gi", "2", "1e3") as exact decimals.

Terms: a quantity is a signed decimal number followed by a suffix: binary (Ki, Mi, Gi, Ti, Pi,
Ei: powers of 1024), decimal SI (n, u, m, "", k, M, G, T, P, E: powers of 1000) or a decimal
exponent (e3, E-2). Invariant: parsing is exact (``Decimal``); "500m" CPU is 0.5 cores and
"16Gi" is 17179869184 bytes.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SHAPE = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+))((?:[eE][+-]?\d+)|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$"
)


def parse_quantity(text: str | int | float) -> Decimal:
    """The value of a quantity; raises ``ValueError`` for anything that is not one."""
    if isinstance(text, int | float):
        return Decimal(str(text))
    match = _SHAPE.match(text.strip())
    if not match:
        raise ValueError(f"quantities must match the regular expression: {text!r}")
    number, suffix = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
        raise ValueError(f"not a quantity: {text!r}") from None
    if suffix in _BINARY:
        return value * (Decimal(1024) ** _BINARY[suffix])
    if suffix[:1] in ("e", "E"):
        return value.scaleb(int(suffix[1:]))
    return value.scaleb(_DECIMAL[suffix])
