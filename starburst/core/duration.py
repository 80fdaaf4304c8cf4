"""Human-readable durations for decision reasons ("waited 12m of a 40m budget")."""

import math


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
