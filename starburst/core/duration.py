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
