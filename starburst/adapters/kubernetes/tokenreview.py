"""Who a Kubernetes bearer token belongs to, as the cluster's API server says (``TokenReview``).

``TokenReviewer.review(token)`` POSTs an ``authentication.k8s.io/v1`` TokenReview and returns
a ``Review``: authenticated or not, the user name and groups, and the server's reason for a
refusal. The API server checks the token with every authenticator it runs (ServiceAccount
tokens, OIDC, static tokens, webhooks), so Starburst never sees a key or a password.

Errors (never the SDK's exceptions):
- ``ReviewForbidden`` (permanent): the identity Starburst runs as may not create
  tokenreviews; it needs ``TOKEN_REVIEW_RULE`` (the Helm chart grants it when
  ``settings.kubernetes_auth`` is true).
- ``ReviewUnavailable`` (transient): the API server could not be reached or failed (5xx,
  429, a timeout); nothing can be said about the token.

Terms: *audiences*: when given, the token must be meant for one of them (TokenReview's
``spec.audiences``); none: the API server's own audiences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from starburst.adapters.kubernetes.retry import status_of
from starburst.core.errors import PermanentError, TransientError

#: the RBAC rule the identity checking tokens needs (the chart renders this very rule)
TOKEN_REVIEW_RULE: dict[str, list[str]] = {
    "apiGroups": ["authentication.k8s.io"],
    "resources": ["tokenreviews"],
    "verbs": ["create"],
}
#: seconds one review may take before the API answers 503
TIMEOUT_S = 10.0


class ReviewForbidden(PermanentError):
    """Starburst's own Kubernetes identity may not create tokenreviews."""


class ReviewUnavailable(TransientError):
    """The API server did not answer the review (unreachable, 5xx, 429, a timeout)."""


@dataclass(frozen=True, slots=True)
class Review:
    """The API server's answer about one token."""

    authenticated: bool
    user: str = ""
    groups: tuple[str, ...] = ()
    #: why a token was not authenticated, in the API server's words (may be empty)
    error: str = ""


class TokenReviewer:
    """TokenReviews through an official ``kubernetes`` ``ApiClient`` (thread-safe: reviews
    run in the API's thread pool). The caller owns the client."""

    def __init__(self, api_client: Any, audiences: Sequence[str] = ()) -> None:
        from kubernetes import client

        self._api = client.AuthenticationV1Api(api_client)
        self._audiences = list(audiences) or None

    def review(self, token: str) -> Review:
        """The API server's verdict on ``token`` (see the module docstring for errors)."""
        from kubernetes import client

        body = client.V1TokenReview(
            api_version="authentication.k8s.io/v1",
            kind="TokenReview",
            spec=client.V1TokenReviewSpec(token=token, audiences=self._audiences),
        )
        try:
            reply = self._api.create_token_review(body, _request_timeout=TIMEOUT_S)
        except Exception as exc:  # the SDK's and urllib3's exceptions stay here
            raise _translate(exc) from None
        status = reply.status
        if status is None or not status.authenticated or status.user is None:
            return Review(False, error=(status.error or "") if status is not None else "")
        return Review(True, user=status.user.username or "", groups=tuple(status.user.groups or ()))


def _translate(exc: BaseException) -> PermanentError | TransientError:
    status = status_of(exc)
    if status in (401, 403):
        return ReviewForbidden(
            "Starburst may not check Kubernetes tokens: the API server refused its "
            f"TokenReview (HTTP {status}); grant the identity Starburst runs as `create` on "
            "`tokenreviews` (authentication.k8s.io), as the Helm chart does when "
            "settings.kubernetes_auth is true"
        )
    if status is not None:
        return ReviewUnavailable(
            f"the Kubernetes API server could not check the token (HTTP {status}); try again"
        )
    return ReviewUnavailable(
        f"cannot reach the Kubernetes API server to check the token ({type(exc).__name__}); "
        "try again"
    )
