"""Kubernetes resource quantities ("500m", "16Gi", "2") as floats, for capacity arithmetic.

Binary suffixes (Ki … Ei) are powers of 1024, decimal ones (n, u, m, k, M, G, T, P, E) powers
of 1000, and ``e<n>`` a decimal exponent. Kept here rather than importing
``kubernetes.utils`` (which imports the whole client) so conversion stays a pure module.
"""

from __future__ import annotations

import re

_FACTORS = {
    "Ki": 1024.0,
    "Mi": 1024.0**2,
    "Gi": 1024.0**3,
    "Ti": 1024.0**4,
    "Pi": 1024.0**5,
    "Ei": 1024.0**6,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "": 1.0,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
}
_SHAPE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$")


def quantity(value: str | int | float | None) -> float:
    """The quantity's value (0 for None); ``ValueError`` for anything else."""
    if value is None:
        return 0.0
    if isinstance(value, int | float):
        return float(value)
    match = _SHAPE.match(value.strip())
    if not match:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    number, suffix = match.groups()
    if suffix[:1] in ("e", "E"):
        return float(number) * 10.0 ** int(suffix[1:])
    return float(number) * _FACTORS[suffix]
