"""Durations: human-readable for decision reasons ("waited 12m of a 40m budget"), and read
from what people type (``90``, ``45s``, ``30m``, ``2h``, ``1h30m``, ``1.5d``)."""

import math
import re

from .errors import ConfigError

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
MAX_DURATION_S = 100 * 365 * 86400.0  # a century: beyond every limit the API accepts
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


def parse_duration(text: str) -> float:
    """Seconds in ``90``, ``45s``, ``30m``, ``2h``, ``1h30m`` or ``1.5d``: finite, not
    negative, at most ``MAX_DURATION_S`` (``ConfigError`` otherwise)."""
    cleaned = text.strip().lower().replace(" ", "")
    try:
        seconds = float(cleaned)
    except ValueError:
        parts = _DURATION.findall(cleaned)
        if not parts or "".join(n + u for n, u in parts) != cleaned:
            raise ConfigError(f"{text!r} is not a duration such as 90s, 30m, 2h or 1h30m") from None
        seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if not math.isfinite(seconds):
        raise ConfigError(f"{text!r} is not a finite duration")
    if seconds < 0:
        raise ConfigError(f"{text!r}: a duration cannot be negative")
    if seconds > MAX_DURATION_S:
        raise ConfigError(f"{text!r} is beyond the longest duration, 100 years")
    return seconds


def human(seconds: float) -> str:
    """A duration in one unit (two for hours), rounded to the nearest of that unit, halves
    up, carrying into the next unit: ``45s``, ``12m``, ``2h05m``, ``1.5d``. 59.6 s is ``1m``,
    not ``60s``; 3599 s is ``1h``; 86399 s is ``1.0d``. For decision reasons and Events,
    where a round number reads best; ``precise`` is for what is left or waited."""
    if math.isinf(seconds):
        return "∞"
    s = max(0.0, seconds)
    if _nearest(s) < 60:
        return f"{_nearest(s)}s"
    minutes = _nearest(s / 60)
    if minutes < 60:
        return f"{minutes}m"
    hours, rest = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{rest:02d}m" if rest else f"{hours}h"
    return f"{_nearest(s / 8640) / 10:.1f}d"


def _nearest(value: float) -> int:
    """``value`` rounded to the nearest whole number, halves up (not to even: 2.5 → 3)."""
    return math.floor(value + 0.5)


def precise(seconds: float) -> str:
    """A duration in its two largest units, cut down (never up): ``45s``, ``1m40s``,
    ``39m30s``, ``2h05m``, ``1d04h``. For what is left or waited, where rounding up would
    claim a budget is spent while it is not ("waited 2m of a 2m budget; bursts in 20s")."""
    if math.isinf(seconds):
        return "∞"
    s = int(max(0.0, seconds))
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d{hours:02d}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes:02d}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{s:02d}s" if s else f"{minutes}m"
    return f"{s}s"
