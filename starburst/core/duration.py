"""Human-readable durations for decision reasons ("waited 12m of a 40m budget")."""

import math


def human(seconds: float) -> str:
    if math.isinf(seconds):
        return "∞"
    s = max(0.0, seconds)
    if s < 60:
        return f"{s:.0f}s"
    if s < 3600:
        return f"{s / 60:.0f}m"
    if s < 86400:
        hours, rest = divmod(s, 3600)
        return f"{hours:.0f}h{rest / 60:02.0f}m" if rest >= 60 else f"{hours:.0f}h"
    return f"{s / 86400:.1f}d"


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
