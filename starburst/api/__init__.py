"""Starburst's REST API (FastAPI): researchers' jobs, finance's cost reports, admins' accounts.

Entry point: ``create_app(settings, store, ...)`` in ``starburst.api.app`` builds a new app
each call; nothing (settings, store, registry) is created at import time. One router and one
schema module per resource:

- ``routes/jobs.py``     ``/v1/jobs``: submit (idempotent), list, status, explain, cancel
- ``routes/costs.py``    ``/v1/costs``: cost reports and savings against bursting everything
- ``routes/accounts.py`` ``/v1/users``, ``/v1/teams``, ``/v1/tokens``, ``/v1/whoami``
- ``routes/health.py``   ``/healthz``, ``/readyz``, ``/metrics`` (no authentication)

Importing this package imports FastAPI; only the API server and its tests should.
"""

from starburst.api.app import HealthProbe, create_app

__all__ = ["HealthProbe", "create_app"]
