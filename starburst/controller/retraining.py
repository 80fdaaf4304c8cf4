"""What the retraining child reads: the store's history, fetched in the child itself.

``Controller.retrain`` trains in a niced child process (``predictor.isolated``). Reading
100,000 finished jobs and converting them is a second of interpreter time; done in the
controller it competes with the scheduling pass for the interpreter lock, and pickling them
to the child holds the lock for a fifth of a second in one piece. So the child opens its own
connection to the same database and reads the history there: ``history_reader`` hands it a
picklable reader (this module's ``read_history`` over the database's URL), or ``None`` when
no other process can open the store's database (an in-memory SQLite one), and the parent
reads as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from starburst.adapters.db.engine import in_memory
from starburst.adapters.db.store import SqlStore
from starburst.core.job import Job
from starburst.predictor.store import DEFAULT_LIMIT, completed_jobs


def read_history(url: str, limit: int) -> list[Job]:
    """The most recent ``limit`` finished jobs of the database at ``url``, as training jobs."""
    store = SqlStore.open(url)
    try:
        return completed_jobs(store.models, limit)
    finally:
        store.close()


def history_reader(
    store: SqlStore, limit: int = DEFAULT_LIMIT
) -> Callable[[], Sequence[Job]] | None:
    """A reader of ``store``'s history another process can call, or None if it cannot."""
    url = store.engine.url
    if in_memory(url):
        return None
    return partial(read_history, url.render_as_string(hide_password=False), limit)
