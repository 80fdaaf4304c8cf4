"""The budget webhook: a JSON POST to an admin's URL that cannot be turned against the inside.

The controller runs next to the database, the cloud's metadata service and other internal
services; a webhook URL pointing there (``http://169.254.169.254/...``,
``http://127.0.0.1:5432``) would make it a proxy into them. So (``starburst.webhook_targets``
has the terms):

- a target at an internal address is refused unless allowed in ``budget_webhook_allow``.
  Literal addresses and ``localhost`` are refused when the settings load; names are resolved
  when an alert is sent, and the POST goes to the very address that was checked (no second
  lookup a DNS answer could change);
- redirects are never followed (``http.client`` follows none): a 3xx is a failure;
- the URL is logged masked.

A failure is logged, never raised: an alert is a courtesy.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import ssl
from collections.abc import Callable, Sequence
from typing import Any

from starburst.webhook_targets import (
    LOCAL_NAMES,
    Target,
    WebhookRefused,
    address_of,
    allowed,
    masked,
    refusal,
)

log = logging.getLogger("starburst.controller")

Resolver = Callable[[str, int], list[str]]


def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (the system resolver)."""
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    # each entry: (family, type, proto, canonical name, socket address (address, port, ...))
    return list(dict.fromkeys(str(address[0]) for *_, address in found))


def pinned_address(target: Target, allow: Sequence[str], lookup: Resolver = resolve) -> str:
    """The address to connect to: the first the host resolves to that is allowed."""
    if target.host in LOCAL_NAMES and not allowed(target.host, None, allow):
        raise WebhookRefused(f"{target.host} is this machine; list it in budget_webhook_allow")
    problems = []
    for text in lookup(target.host, target.port):
        address = address_of(text)
        if address is None:
            continue
        problem = refusal(target.host, address, allow)
        if problem is None:
            return text
        problems.append(problem)
    raise WebhookRefused(problems[0] if problems else f"{target.host} has no address")


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, target: Target, address: str, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, target: Target, address: str, timeout: float) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(target.host, target.port, timeout=timeout, context=self._tls)
        self._address = address

    def connect(self) -> None:
        raw = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(raw, server_hostname=self.host)


def post_json(
    url: str,
    body: dict[str, Any],
    *,
    allow: Sequence[str] = (),
    timeout: float = 10.0,
    lookup: Resolver = resolve,
) -> bool:
    """POST ``body`` as JSON to ``url`` (see the module docstring); True when it was
    answered 2xx, False (logged, with the URL masked) otherwise."""
    try:
        target = Target.of(url)
        address = pinned_address(target, allow, lookup)
        kind = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
        connection = kind(target, address, timeout)
        try:
            payload = json.dumps(body).encode()
            headers = {"Content-Type": "application/json", "Host": _host_header(target)}
            connection.request("POST", target.path, body=payload, headers=headers)
            answer = connection.getresponse()
            answer.read()
        finally:
            connection.close()
    except (OSError, ValueError, http.client.HTTPException) as exc:
        log.warning("budget webhook %s: %s", masked(url), _said(exc, url))
        return False
    if 300 <= answer.status < 400:
        log.warning(
            "budget webhook %s: answered %d, a redirect (not followed)", masked(url), answer.status
        )
        return False
    if answer.status >= 400:
        log.warning("budget webhook %s: answered %d", masked(url), answer.status)
        return False
    return True


def _host_header(target: Target) -> str:
    host = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.scheme == "https" else 80
    return host if target.port == default else f"{host}:{target.port}"


def _said(exc: BaseException, url: str) -> str:
    """An error's message without the URL's secrets, should it quote them."""
    text = str(exc) or type(exc).__name__
    return text.replace(url, masked(url))
