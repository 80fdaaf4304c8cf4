"""Fixtures for the security tests: real PostgreSQL (see tests/support/postgres.py)."""

from tests.support.postgres import postgres_database, postgres_url

__all__ = ["postgres_database", "postgres_url"]
