"""Fixtures for the security tests: real PostgreSQL (see tests/support/postgres.py) and the
session's PostgreSQL server that demands a password (``served.py``)."""

from tests.security.served import password_server
from tests.support.postgres import postgres_database, postgres_url

__all__ = ["password_server", "postgres_database", "postgres_url"]
