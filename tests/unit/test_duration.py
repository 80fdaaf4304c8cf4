"""``human``: durations rounded to the nearest of their unit and carried into the next one,
so no reason says "60s", "60m" or "23h60m"; checked on the cases that once read so and as a
property over every duration."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from starburst.core.duration import human

_SHAPE = re.compile(r"^(?:(\d+)s|(\d+)m|(\d+)h(?:(\d\d)m)?|(\d+\.\d)d)$")
#: the largest honest error of each shape: half its unit
_HALF = {"s": 0.5, "m": 30.0, "h": 30.0, "d": 4320.0}


def read(text: str) -> tuple[float, str]:
    """The seconds ``human`` wrote, and its shape (s, m, h or d); fails on any other text."""
    found = _SHAPE.match(text)
    assert found, text
    secs, mins, hours, rest, days = found.groups()
    if secs is not None:
        assert int(secs) < 60, text
        return float(secs), "s"
    if mins is not None:
        assert 1 <= int(mins) < 60, text
        return 60.0 * int(mins), "m"
    if hours is not None:
        assert 1 <= int(hours) < 24 and (rest is None or 1 <= int(rest) < 60), text
        return 3600.0 * int(hours) + 60.0 * int(rest or 0), "h"
    assert float(days) >= 1.0, text
    return 86400.0 * float(days), "d"


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0s"),
        (59.4, "59s"),
        (59.6, "1m"),
        (90, "2m"),
        (150, "3m"),  # halves up, not to even
        (119.6, "2m"),
        (3599, "1h"),
        (3570, "1h"),
        (3569, "59m"),
        (5400, "1h30m"),
        (86399, "1.0d"),
        (86369, "23h59m"),
        (129600, "1.5d"),
        (-5, "0s"),
        (math.inf, "∞"),
    ],
)
def test_durations_carry_into_the_next_unit(seconds: float, shown: str) -> None:
    assert human(seconds) == shown


#: any duration, and many near a unit's edge (where carrying matters): k units ± 1 s
_EDGES = st.builds(
    lambda unit, k, offset: unit * k + offset,
    st.sampled_from([60.0, 3600.0, 86400.0]),
    st.integers(1, 30),
    st.floats(-1.0, 1.0),
)
DURATIONS = st.one_of(st.floats(min_value=0, max_value=1e8, allow_nan=False), _EDGES)


@given(DURATIONS)
def test_a_duration_reads_back_within_half_its_unit(seconds: float) -> None:
    value, unit = read(human(seconds))
    assert abs(value - seconds) <= _HALF[unit] + 1e-6


@given(DURATIONS, DURATIONS)
def test_a_longer_duration_never_reads_shorter(a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert read(human(low))[0] <= read(human(high))[0]
