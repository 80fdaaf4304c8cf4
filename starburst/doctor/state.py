"""Checks of Starburst's own state: the database, the runtime model, leadership."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from starburst.doctor.checks import MODEL_MAX_AGE_DAYS, Check, failed
from starburst.settings import Settings


def database(settings: Settings) -> list[Check]:
    """Reachable, and at the newest schema. A SQLite file that does not exist is reported,
    never created (opening it would make the file, and its directory, as a side effect)."""
    from starburst.adapters.db import migrate
    from starburst.adapters.db.engine import create_engine, in_memory, normalize_url, redact

    url = redact(settings.database_url)
    try:
        parsed = normalize_url(settings.database_url)
    except Exception as exc:
        return [failed("database", exc, "set database_url to a reachable database")]
    if parsed.get_backend_name() == "sqlite" and not in_memory(parsed):
        path = Path(str(parsed.database)).expanduser()
        if not path.is_file():
            return [
                Check(
                    "database",
                    False,
                    f"{url}: no such SQLite file (nothing created)",
                    "run starburst db upgrade (it creates the file), or fix database_url",
                )
            ]
    try:
        engine = create_engine(settings.database_url)
    except Exception as exc:
        return [failed("database", exc, "set database_url to a reachable database")]
    try:
        revision = migrate.current(engine)
    except Exception as exc:
        return [failed("database", exc, f"start the database at {url} or fix database_url")]
    finally:
        engine.dispose()
    head = migrate.head()
    reach = Check("database", True, f"{url} reachable")
    if revision == head:
        return [reach, Check("database schema", True, f"at head ({head})")]
    found = f"at {revision}" if revision else "no Starburst tables yet"
    return [
        reach,
        Check("database schema", False, f"{found}, head is {head}", "run starburst db upgrade"),
    ]


def runtime_model(settings: Settings, now: float) -> Check:
    path = settings.model_path
    if path is None:
        return Check(
            "runtime model",
            True,
            "none configured (model_path unset): runtimes come "
            "from declarations, the user's history, then the global median",
        )
    from starburst.predictor.artifact import load_artifact

    try:
        artifact = load_artifact(path)
    except Exception as exc:
        return failed("runtime model", exc, "starburst predictor train (or fix model_path)")
    try:
        trained = datetime.fromisoformat(artifact.trained_at.replace("Z", "+00:00"))
        days = (datetime.fromtimestamp(now, UTC) - trained.astimezone(UTC)).days
    except ValueError:
        days = None
    age = f"{days} days old" if days is not None else f"trained {artifact.trained_at}"
    detail = f"{artifact.version}, {age}, {artifact.jobs} jobs"
    if days is not None and days > MODEL_MAX_AGE_DAYS:
        return Check(
            "runtime model",
            False,
            f"{detail}: older than {MODEL_MAX_AGE_DAYS} days",
            "starburst predictor train (the controller retrains every "
            "retrain_interval_s while it runs)",
        )
    return Check("runtime model", True, detail)


def leader(settings: Settings, now: float) -> Check:
    """Who leads, from the fencing terms, and whether the lock is held now (probed without
    taking it: no new term is handed out); under ``leader_election: lease``, from the Lease
    (``starburst.doctor.lease``), the store's lock being never taken then."""
    import sqlalchemy as sa

    from starburst.adapters.db.engine import create_engine
    from starburst.adapters.db.leader import TERMS, lock_key

    name = settings.leader_name
    try:
        engine = create_engine(settings.database_url)
        try:
            with engine.connect() as conn:
                row = conn.execute(sa.select(TERMS).where(TERMS.c.name == name)).mappings().first()
                lease = settings.leader_election == "lease"
                held = None if lease else _held(conn, engine, name, lock_key(name))
        finally:
            engine.dispose()
    except Exception as exc:
        return failed("leader", exc, "fix the database first (see the database lines)")
    if settings.leader_election == "lease":
        from starburst.doctor.lease import lease_leader

        term = None
        if row is not None:
            term = f"term {row['token']} since {row['acquired_at']:%Y-%m-%d %H:%M:%S}"
            term += f" ({row['holder']})"
        return lease_leader(settings, now, term)
    if row is None:  # a fresh install: nothing has failed yet
        return Check(
            "leader",
            True,
            f"no controller has led {name!r} yet",
            "start the controller: starburst server (or starburst controller)",
            warning=True,
        )
    since = row["acquired_at"]
    who = f"{row['holder']} (term {row['token']}, since {since:%Y-%m-%d %H:%M:%S})"
    if held is False:
        return Check(
            "leader",
            False,
            f"last leader {who}; nobody holds the lock now",
            "start the controller: starburst server (or starburst controller)",
        )
    suffix = "" if held else " (lock not probed: in-memory database)"
    return Check("leader", True, f"{who}{suffix}")


def _held(conn: object, engine: object, name: str, key: int) -> bool | None:
    import sqlalchemy as sa

    assert isinstance(conn, sa.Connection) and isinstance(engine, sa.Engine)
    if conn.dialect.name == "postgresql":
        unsigned = key & 0xFFFFFFFFFFFFFFFF
        found = conn.execute(
            sa.text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND classid = :hi AND objid = :lo AND objsubid = 1"
            ),
            {"hi": unsigned >> 32, "lo": unsigned & 0xFFFFFFFF},
        ).scalar_one()
        return bool(found)
    database = engine.url.database
    if not database or database == ":memory:":
        return None
    path = Path(f"{database}.{name}.leader")
    if not path.exists():
        return False
    probe = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        probe.execute("BEGIN EXCLUSIVE")
        probe.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        probe.close()
