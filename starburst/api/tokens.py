"""``TokenCache``: who a bearer token is, remembered for a moment so a busy client's every
request is not a database round trip.

A sweep script submitting a thousand jobs a second sends the same token a thousand times a
second; looking it up each time was a checkout, a query and a commit per request. The cache
keeps the answer of a *successful* ``Accounts.authenticate`` for ``ttl`` seconds of the API's
clock, keyed by the token's SHA-256 (the secret itself is never kept).

Invariants:
- Revocation through this API (``DELETE /v1/tokens/{id}``) and any change to users through it
  forget the cache at once: the next request with that token is looked up and refused.
- A change made elsewhere (``starburst admin tokens revoke`` on the database, another API
  replica, an expiry passing) takes effect within ``ttl`` seconds (``DEFAULT_TTL_S``, 1 s).
- Unknown, revoked and expired tokens are never cached: each such request asks the database.
- A lookup that was in flight when the cache was forgotten is not remembered (its answer may
  predate the revocation): ``remember`` takes the ``generation`` read before the lookup.
- The cache holds at most ``max_entries`` tokens; when full it starts again empty.
- Concurrent requests with one token share one lookup (``lookup``): when its answer expires
  under a busy client, the requests in flight wait for the first one's database round trip
  instead of each making its own. A request never takes the answer of a lookup begun
  before the last ``forget``, nor of one that failed (it asks the database itself).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable

from starburst.core.records import Principal

_FAILED = object()  # a shared lookup that raised: each waiter asks for itself

#: how long a token's answer is trusted (seconds of the API clock)
DEFAULT_TTL_S = 1.0
MAX_ENTRIES = 10_000


class TokenCache:
    """Successful token lookups for ``ttl`` seconds (see the module docstring)."""

    def __init__(self, ttl: float = DEFAULT_TTL_S, max_entries: int = MAX_ENTRIES) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._entries: dict[str, tuple[Principal, float]] = {}
        #: lookups in flight: token key → (the answer to come, the generation it was asked at)
        self._flights: dict[str, tuple[asyncio.Future[object], int]] = {}
        #: bumped by ``forget``; read it before asking the database, pass it to ``remember``
        self.generation = 0

    def cached(self, secret: str, now: float) -> Principal | None:
        """The remembered principal of ``secret`` if checked less than ``ttl`` ago, else
        None: then ask the database and ``remember`` its answer."""
        hit = self._entries.get(_key(secret))
        if hit is not None and 0.0 <= now - hit[1] < self.ttl:
            return hit[0]
        return None

    def remember(
        self, secret: str, principal: Principal | None, now: float, generation: int
    ) -> None:
        """Note the database's answer for ``secret``, asked at ``generation`` (a refusal, or
        an answer from before the last ``forget``, is not kept)."""
        key = _key(secret)
        if principal is None or generation != self.generation:
            self._entries.pop(key, None)
            return
        if len(self._entries) >= self.max_entries:
            self._entries.clear()
        self._entries[key] = (principal, now)

    async def lookup(
        self, secret: str, now: float, ask: Callable[[], Awaitable[Principal | None]]
    ) -> Principal | None:
        """``ask`` the database who ``secret`` is and ``remember`` it, or await the answer of
        a lookup of the same token already in flight (see the module docstring)."""
        key = _key(secret)
        flight = self._flights.get(key)
        if flight is not None and flight[1] == self.generation:
            shared = await asyncio.shield(flight[0])
            if shared is not _FAILED:
                return shared  # type: ignore[return-value]
            return await ask()
        generation = self.generation
        answer: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._flights[key] = (answer, generation)
        try:
            principal = await ask()
        except BaseException:
            answer.set_result(_FAILED)
            raise
        else:
            answer.set_result(principal)
        finally:
            if self._flights.get(key, (None, 0))[0] is answer:
                del self._flights[key]
        self.remember(secret, principal, now, generation)
        return principal

    def forget(self) -> None:
        """Drop every remembered token (after a revocation or a change to users)."""
        self.generation += 1
        self._entries.clear()


def _key(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
