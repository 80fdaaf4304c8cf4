"""HTTP clients for the servers the tests start, sharing the CLI's one TLS context.

A plain ``httpx.Client()`` (and ``httpx.get``) builds its TLS context anew, reading the whole
CA bundle: ~20 ms of CPU per client even for ``http://`` URLs, which added up to ~18 s of the
suite's CPU (every readiness poll paid it). ``client`` and ``get`` take httpx's own arguments.
"""

from __future__ import annotations

from typing import Any

import httpx

from starburst.cli.jobs import tls_context


def client(**kwargs: Any) -> httpx.Client:
    return httpx.Client(verify=tls_context(), **kwargs)


def get(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.get(url, verify=tls_context(), **kwargs)
