"""Races between writers on a real PostgreSQL: each writer in its own thread, and rows made
slow by a trigger so the writers' statements interleave where a test needs them to."""

from __future__ import annotations

import threading
from collections.abc import Callable

import sqlalchemy as sa


def slow_rows(conn: sa.Connection, event: str, seconds: float, only: str = "true") -> None:
    """Before each row of ``jobs`` that ``event`` (``INSERT``, ``UPDATE``) writes and the
    plpgsql condition ``only`` holds for (``true``: every row), sleep ``seconds``."""
    conn.exec_driver_sql(
        "CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN IF {only} THEN PERFORM pg_sleep({seconds}); END IF; RETURN NEW; END $$"
    )
    conn.exec_driver_sql(
        f"CREATE TRIGGER slow_row BEFORE {event} ON jobs FOR EACH ROW EXECUTE FUNCTION slow_row()"
    )


def race(*writers: Callable[[], object]) -> list[BaseException | None]:
    """Run each writer in its own thread, all at once, until all end: what each raised
    (None: it returned), in the writers' order."""
    outcomes: list[BaseException | None] = [None] * len(writers)

    def run(i: int) -> None:
        try:
            writers[i]()
        except BaseException as exc:  # handed to the test, which asserts on it
            outcomes[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(writers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes
