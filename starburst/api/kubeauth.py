"""Kubernetes bearer tokens as API credentials (``kubernetes_auth``): check, map, remember.

A request whose bearer token is not a Starburst token (``sb_…``) is taken for a Kubernetes
one when ``kubernetes_auth`` is on: the cluster's API server reviews it (``TokenReview``,
``starburst.adapters.kubernetes.tokenreview``) and the admin's grants map the user and groups
it names to a Starburst caller (``starburst.core.identity``).

Answers:
- the API server does not authenticate the token (invalid, expired, its ServiceAccount
  deleted): 401;
- authenticated but not mapped (no user or group grant applies), or no valid user name: 403
  naming the Kubernetes user and the settings that map it;
- the review cannot be made (the API server unreachable, or Starburst's identity may not
  create tokenreviews): 503 with the reason; the log says it once per request.

Invariants:
- Answers (acceptances and refusals) are remembered for ``ttl`` seconds of the API's clock,
  keyed by the token's SHA-256; the secret itself is never kept. A failed review is never
  remembered. ``ttl`` 0 remembers nothing.
- The cache holds at most ``max_entries`` tokens; the oldest answer goes first.
- Requests with one token that arrive together before its first answer each ask the API
  server (no shared lookup, unlike ``starburst.api.tokens``); later ones take the answer.
- Starburst's own tokens never reach the API server, and a Kubernetes token never reaches
  the database.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from fastapi import HTTPException
from starlette.concurrency import run_in_threadpool

from starburst.adapters.kubernetes.tokenreview import Review
from starburst.core.errors import StarburstError
from starburst.core.identity import IdentityMap, IdentityRefused, map_identity
from starburst.core.records import Principal

log = logging.getLogger("starburst.api")

MAX_ENTRIES = 10_000
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


class TokenReviews(Protocol):
    """Who a Kubernetes token belongs to (``TokenReviewer``; a fake in API tests). Raises a
    ``StarburstError`` when it cannot tell."""

    def review(self, token: str) -> Review: ...


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    detail: str


class KubernetesTokens:
    """Callers of Kubernetes tokens (see the module docstring)."""

    def __init__(
        self,
        reviews: TokenReviews,
        mapping: IdentityMap,
        *,
        ttl: float,
        max_entries: int = MAX_ENTRIES,
    ) -> None:
        self.reviews = reviews
        self.mapping = mapping
        self.ttl = ttl
        self.max_entries = max_entries
        self._answers: OrderedDict[str, tuple[Principal | Refusal, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._answers)

    async def caller(self, token: str, now: float) -> Principal:
        """The caller ``token`` stands for, or ``HTTPException`` (401, 403 or 503)."""
        key = hashlib.sha256(token.encode()).hexdigest()
        hit = self._answers.get(key)
        if hit is not None and 0.0 <= now - hit[1] < self.ttl:
            answer = hit[0]
        else:
            answer = await self._ask(token)
            self._remember(key, answer, now)
        if isinstance(answer, Refusal):
            headers = _CHALLENGE if answer.status == 401 else None
            raise HTTPException(answer.status, answer.detail, headers=headers)
        return answer

    async def _ask(self, token: str) -> Principal | Refusal:
        try:
            review = await run_in_threadpool(self.reviews.review, token)
        except StarburstError as exc:
            log.warning("kubernetes token review failed: %s", exc)
            raise HTTPException(503, str(exc), headers={"Retry-After": "5"}) from None
        if not review.authenticated:
            why = f": {review.error}" if review.error else ""
            return Refusal(401, f"the Kubernetes API server did not accept the token{why}")
        try:
            return map_identity(review.user, review.groups, self.mapping)
        except IdentityRefused as exc:
            return Refusal(403, str(exc))

    def _remember(self, key: str, answer: Principal | Refusal, now: float) -> None:
        if self.ttl <= 0:
            return
        self._answers.pop(key, None)
        while len(self._answers) >= self.max_entries:
            self._answers.popitem(last=False)
        self._answers[key] = (answer, now)
