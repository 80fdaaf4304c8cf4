"""Which Kubernetes API failures are worth retrying, and how long to wait before the retry.

Terms: a *transient* failure is a 429 (too many requests), a 5xx, a 409 Conflict (someone
changed the object: re-read and decide again) or a lost connection; everything else (400,
403, 404, 422) is *permanent*: retrying the same request cannot succeed. ``Retry-After``
from the server wins over the computed delay.

``Backoff.delay(n)`` is the wait after the n-th consecutive failure: ``min(cap, base ×
factor^(n-1))``, no jitter (one caller per informer; deterministic delays keep tests
reproducible).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starburst.core.errors import PermanentError, StarburstError, TransientError

TRANSIENT_CODES = frozenset({0, 409, 429, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class Backoff:
    base: float = 0.2
    factor: float = 2.0
    cap: float = 10.0

    def delay(self, failures: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(self.cap, retry_after)
        return min(self.cap, self.base * self.factor ** max(0, failures - 1))


def status_of(err: BaseException) -> int | None:
    """The HTTP status of an official-client ``ApiException`` (None for other errors)."""
    status = getattr(err, "status", None)
    return int(status) if isinstance(status, int) else None


def retry_after(err: BaseException) -> float | None:
    headers: Any = getattr(err, "headers", None) or {}
    value = headers.get("Retry-After") if hasattr(headers, "get") else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def is_transient(err: BaseException) -> bool:
    status = status_of(err)
    if status is not None:
        return status in TRANSIENT_CODES
    return isinstance(err, OSError) or type(err).__module__.startswith("urllib3")


def translate(err: BaseException, doing: str) -> StarburstError:
    """The Starburst error for a failed API call (the SDK exception never leaves the adapter)."""
    status = status_of(err)
    what = f"{doing}: HTTP {status}" if status is not None else f"{doing}: {err!r}"
    reason = getattr(err, "reason", None)
    if reason:
        what += f" {reason}"
    return TransientError(what) if is_transient(err) else PermanentError(what)
