"""Starburst's REST API (FastAPI): researchers' jobs, finance's cost reports, admins' accounts.

Entry point: ``create_app(settings, store, ...)`` in ``starburst.api.app`` builds a new app
each call; nothing (settings, store, registry) is created at import time. One router and one
schema module per resource:

- ``routes/jobs.py``     ``/v1/jobs``: submit (idempotent), list, status, explain, cancel
- ``routes/costs.py``    ``/v1/costs``: cost reports and savings against bursting everything
- ``routes/accounts.py`` ``/v1/users``, ``/v1/teams``, ``/v1/tokens``, ``/v1/whoami``
- ``routes/health.py``   ``/healthz``, ``/readyz``, ``/metrics`` (no authentication)

Importing this package imports nothing else: ``create_app`` loads FastAPI when first asked
for, so the processes (``serve``) and a controller's own probes (``probes``) run without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starburst.api.app import HealthProbe, create_app

__all__ = ["HealthProbe", "create_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from starburst.api import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
