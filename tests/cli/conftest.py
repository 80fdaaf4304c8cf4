"""Fixtures of the CLI tests: the session's throwaway PostgreSQL (tests/support/postgres.py)."""

from tests.support import postgres as _postgres

postgres_url = _postgres.postgres_url
postgres_database = _postgres.postgres_database
