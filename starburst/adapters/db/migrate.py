"""Running the Alembic migrations programmatically (what ``starburst db`` calls).

The migration scripts live in the repository's top-level ``migrations/`` directory. They are
found, in order, from ``$STARBURST_MIGRATIONS_DIR``, from the source checkout this package
was imported from (``pip install -e``), or from the ``migrations`` directory every wheel
carries inside the package (``setup.py`` copies it there). No ``alembic.ini`` is read: the
configuration is built here.

Invariant: ``upgrade`` and ``downgrade`` run in one transaction on PostgreSQL (transactional
DDL), so a failed migration leaves the previous revision intact.
"""

from __future__ import annotations

import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy.engine import Engine

from starburst.core.errors import ConfigError

from .engine import create_engine, redact, translate_errors

ENV_DIR = "STARBURST_MIGRATIONS_DIR"


def migrations_dir() -> Path:
    here = Path(__file__).resolve()
    candidates = [
        Path(os.environ[ENV_DIR]) if os.environ.get(ENV_DIR) else None,
        here.parents[3] / "migrations",  # source checkout: <repo>/starburst/adapters/db
        here.parent / "migrations",
    ]
    for candidate in candidates:
        if candidate is not None and (candidate / "env.py").exists():
            return candidate
    raise ConfigError(
        f"cannot find the Alembic migrations; set {ENV_DIR} to the repository's migrations/"
    )


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["connection_engine"] = engine
    return config


def _run(url_or_engine: str | Engine | None, action: str, revision: str) -> None:
    engine = url_or_engine if isinstance(url_or_engine, Engine) else create_engine(url_or_engine)
    config = alembic_config(engine)
    try:
        with translate_errors(engine), engine.begin() as conn:
            config.attributes["connection"] = conn
            if action == "upgrade":
                command.upgrade(config, revision)
            else:
                command.downgrade(config, revision)
    except CommandError as exc:  # an unknown or unreachable revision: a typo, not a crash
        raise ConfigError(f"cannot {action} to {revision!r}: {exc}") from None
    finally:
        if not isinstance(url_or_engine, Engine):
            engine.dispose()


def upgrade(url_or_engine: str | Engine | None = None, revision: str = "head") -> None:
    """Migrate the database up to ``revision`` (default: the newest)."""
    _run(url_or_engine, "upgrade", revision)


def downgrade(url_or_engine: str | Engine | None = None, revision: str = "-1") -> None:
    """Migrate down to ``revision`` ("base" removes every table Starburst created)."""
    _run(url_or_engine, "downgrade", revision)


def current(url_or_engine: str | Engine | None = None) -> str | None:
    """The database's revision (None for an empty database)."""
    engine = url_or_engine if isinstance(url_or_engine, Engine) else create_engine(url_or_engine)
    try:
        with translate_errors(engine), engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        if not isinstance(url_or_engine, Engine):
            engine.dispose()


def head() -> str | None:
    """The newest revision the migration scripts define."""
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return ScriptDirectory.from_config(config).get_current_head()


def require_schema(url: str) -> None:
    """Refuse to serve a database whose schema is missing or older than this Starburst's,
    with the command that fixes it (instead of "no such table: jobs" on the first query)."""
    found = current(url)
    if found is None:
        raise ConfigError(
            f"the database {redact(url)} has no Starburst schema yet: "
            "run `starburst db upgrade` first"
        )
    try:
        wanted = head()
    except Exception:  # no migration scripts beside this install: only the emptiness check
        return
    if wanted is not None and found != wanted:
        raise ConfigError(
            f"the database {redact(url)} is at schema revision {found}, this "
            f"Starburst needs {wanted}: run `starburst db upgrade`"
        )
