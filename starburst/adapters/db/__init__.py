"""Durable state: SQLAlchemy models, the ``SqlStore``, migrations and the leader lock.

PostgreSQL in deployments, SQLite as the embedded single-machine default. This package is the
only place ORM rows exist; everything it returns is a core value (``Job``, ``JobState``,
``Placement``) or a record from ``starburst.core.records``. Importing it imports SQLAlchemy,
so nothing on the ``import starburst`` or ``starburst simulate`` path may import it.

Entry points: ``SqlStore.open(url)`` / ``SqlStore(create_engine(url))``, ``leader_lock(engine)``,
``migrate.upgrade(url)`` and ``migrate.downgrade(url, revision)``.
"""
