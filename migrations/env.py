"""Alembic environment for Starburst's schema (``starburst.adapters.db.models``).

The database comes from, in order: a connection handed over in ``config.attributes
["connection"]`` (tests, ``starburst db``), the ``sqlalchemy.url`` option set by
``starburst.adapters.db.migrate``, ``-x url=...`` on the alembic command line, or
``$STARBURST_DATABASE_URL``. SQLite uses batch mode, since it cannot ALTER most things.
"""

from __future__ import annotations

from alembic import context

from starburst.adapters.db.engine import create_engine, default_url
from starburst.adapters.db.models import Base

config = context.config
target_metadata = Base.metadata


def _configure(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        compare_type=True,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    given = config.attributes.get("connection")
    if given is not None:
        _configure(given)
        return
    url = (
        config.get_main_option("sqlalchemy.url")
        or context.get_x_argument(as_dictionary=True).get("url")
        or default_url()
    )
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            _configure(connection)
            connection.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; give a database URL")
run_online()
