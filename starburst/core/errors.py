"""Errors of the decision core: invalid configuration or job values, said in domain words."""


class StarburstError(Exception):
    """Base of every error Starburst raises on purpose; its message is meant for a person."""


class ConfigError(StarburstError, ValueError):
    """A policy, order, placement or budget setting that cannot work."""


class TransientError(StarburstError):
    """An adapter failure worth retrying with backoff (timeouts, 5xx, lost connections)."""


class ConflictError(TransientError):
    """A write lost a conflict with a concurrent one (a deadlock, a serialization failure)
    and was undone whole: nothing of it was written, and trying again may succeed. The
    backend itself is up: not an outage."""


class PermanentError(StarburstError):
    """An adapter failure that retrying cannot fix; recorded and shown to the user."""
