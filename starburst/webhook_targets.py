"""Which budget-webhook URLs Starburst calls, and how their secrets are kept out of logs.

Read when settings load (``Settings``) and again when an alert is sent
(``starburst.controller.webhook``, which resolves names and posts).

Terms:
- *internal address*: not global — loopback, link-local (cloud metadata services), private,
  shared, reserved, multicast or unspecified; an IPv4-mapped IPv6 address is read as its
  IPv4. A webhook never reaches one unless an admin listed it.
- *allow-list* (``budget_webhook_allow``): host names, as written in the URL, and networks
  such as ``10.0.0.0/8``.
- *masked* URL: scheme, host, port and the first segment of the path; no user-info, no
  query, no deeper path (hooks often carry their secret there).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: host names that always mean this machine, whatever the resolver says
LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


class WebhookRefused(ValueError):
    """A webhook URL Starburst will not call; the message says why and what allows it."""


def masked(url: str) -> str:
    """``url`` fit for a log line: scheme, host, port and the path's first segment."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "?", parts.port
    except ValueError:
        return "<unparsable URL>"
    segments = [s for s in parts.path.split("/") if s]
    path = f"/{segments[0]}" + ("/…" if len(segments) > 1 else "") if segments else ""
    query = "?…" if parts.query else ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    userinfo = "…@" if "@" in parts.netloc else ""
    return f"{parts.scheme}://{userinfo}{netloc}{path}{query}"


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed webhook URL: where to connect and what to ask for."""

    scheme: str
    host: str
    port: int
    path: str

    @classmethod
    def of(cls, url: str) -> Target:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise WebhookRefused(f"budget_webhook {masked(url)}: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise WebhookRefused(
                f"budget_webhook {masked(url)}: must be an http:// or https:// URL with a host"
            )
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        default = 443 if parts.scheme == "https" else 80
        return cls(parts.scheme, parts.hostname.lower(), port or default, path)


def address_of(text: str) -> Address | None:
    """``text`` as an IP address (IPv4-mapped IPv6 as IPv4), None for a host name."""
    try:
        found = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def allowed(host: str, address: Address | None, allow: Sequence[str]) -> bool:
    """Whether the allow-list names ``host`` or a network holding ``address``."""
    for entry in allow:
        if entry.strip().lower() == host:
            return True
        if address is not None:
            try:
                network = ipaddress.ip_network(entry.strip(), strict=False)
            except ValueError:
                continue
            if address in network:
                return True
    return False


def refusal(host: str, address: Address, allow: Sequence[str]) -> str | None:
    """Why ``host`` at ``address`` may not be called, or None when it may."""
    if address.is_global or allowed(host, address, allow):
        return None
    return (
        f"{host} is {address}, an internal address (loopback, link-local or private); "
        "list it in budget_webhook_allow to allow it"
    )


def check_url(url: str, allow: Sequence[str] = ()) -> None:
    """Refuse, when settings load, a URL that is malformed or names a non-global address
    or ``localhost`` directly (names are checked again when resolved)."""
    target = Target.of(url)
    if target.host in LOCAL_NAMES and not allowed(target.host, None, allow):
        raise WebhookRefused(
            f"budget_webhook {masked(url)}: {target.host} is this machine; list it in "
            "budget_webhook_allow to allow it"
        )
    address = address_of(target.host)
    problem = refusal(target.host, address, allow) if address is not None else None
    if problem is not None:
        raise WebhookRefused(f"budget_webhook {masked(url)}: {problem}")
