"""Time windows as people write them: one parser for every ``--since``/``--until`` and API
``since``/``until`` (``costs``, ``tune``, ``history export``, ``GET /v1/costs``).

Terms: a *moment* is either a duration back from now (``30d``, ``12h``, ``1h30m``, ``90``
seconds: ``core.duration.parse_duration``), an ISO date (``2026-11-01``, midnight UTC), an
ISO datetime (``2026-11-01T12:00``, UTC when it names no zone; ``Z`` or an offset as given),
or ``now``. A *window* is ``[since, until)``; ``until`` defaults to now.

Invariants: every moment is UTC epoch seconds; a window ends after it starts; bad text is one
``ConfigError`` naming the option and the forms it takes, never a traceback.
"""

from __future__ import annotations

from datetime import UTC, datetime

from .duration import parse_duration
from .errors import ConfigError

FORMS = "a duration back from now (30d, 12h), an ISO date (2026-11-01) or datetime"


def parse_moment(text: str, *, now: float, name: str) -> float:
    """The epoch ``text`` names (see *moment*), read at ``now``."""
    cleaned = text.strip()
    if cleaned.lower() == "now":
        return now
    try:
        return now - parse_duration(cleaned)
    except ConfigError:
        pass  # not a duration: a date or datetime, or neither
    try:
        moment = datetime.fromisoformat(cleaned.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"{name}: {text!r} is not {FORMS} such as 2026-11-01T12:00:00+01:00"
        ) from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC).timestamp()
    except (OverflowError, ValueError, OSError):
        raise ConfigError(f"{name}: {text!r} is out of range") from None


def parse_window(
    since: str | None, until: str | None, *, now: float, default_since: float
) -> tuple[float, float]:
    """``[since, until)`` as epochs: ``since`` defaults to ``default_since``, ``until`` to
    ``now``; a window that does not end after it starts is a ``ConfigError``."""
    start = parse_moment(since, now=now, name="since") if since else default_since
    end = parse_moment(until, now=now, name="until") if until else now
    if end <= start:
        shown = [datetime.fromtimestamp(t, UTC).isoformat() for t in (start, end)]
        raise ConfigError(f"until ({shown[1]}) must be after since ({shown[0]})")
    return start, end
