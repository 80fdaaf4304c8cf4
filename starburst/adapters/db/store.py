"""``SqlStore``: the durable implementation of the core's Store port (PostgreSQL or SQLite).

One engine, one repository per concept, many short transactions. ``SqlStore`` is a plain
object that builds one ``Database`` (``base.py``: the engine, the clock, the leader name,
the fencing check) and the repositories over it, and hands them out as ``submissions``
(``submissions.SqlSubmissions``: new jobs), ``jobs`` (``jobs.SqlJobs``: reads, the queue and
its change feed), ``lifecycle`` (``transitions.SqlTransitions``: state changes, holds,
estimates and placements), ``ledger`` (``costs.SqlLedger``: the metered cost entries
and their reports, and the cloud launches they point at), ``accounts``
(``accounts.SqlAccounts``: users, tokens, budgets), ``models`` (``learning.SqlModels``:
history, predictions, model versions) and ``tuning`` (``tuning.SqlTuning``). A repository
knows only the ``Database`` and what it is built with, never another concept's repository.

Every public method runs in its own transaction and either commits all its writes or none (a
dropped connection raises ``DatabaseUnavailable`` and leaves nothing half-written).

The schema is created by the Alembic migrations (``starburst db upgrade``);
``create_schema`` exists for tests and throwaway databases only.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from starburst.core.ports import Clock, Store

from .accounts import SqlAccounts
from .base import Database
from .costs import SqlLedger
from .engine import create_engine, translate_errors
from .jobs import SqlJobs
from .learning import SqlModels
from .models import Base
from .submissions import SqlSubmissions
from .transitions import SqlTransitions
from .tuning import SqlTuning


class SqlStore:
    """The store over a SQLAlchemy engine.

    ``SqlStore(engine, clock=..., leader_name="controller")``: ``clock`` supplies "now" for
    writes that do not pass ``at=`` (default: the wall clock); ``leader_name`` is the leader
    lock whose fencing tokens guard writes made with ``fencing_token=``.
    """

    def __init__(
        self, engine: Engine, *, clock: Clock | None = None, leader_name: str = "controller"
    ) -> None:
        self.database = Database(engine, clock=clock, leader_name=leader_name)
        self.submissions = SqlSubmissions(self.database)
        self.jobs = SqlJobs(self.database)
        self.lifecycle = SqlTransitions(self.database)
        self.ledger = SqlLedger(self.database)
        self.accounts = SqlAccounts(self.database)
        self.models = SqlModels(self.database)
        self.tuning = SqlTuning(self.database)

    @classmethod
    def open(
        cls,
        url: str | None = None,
        *,
        clock: Clock | None = None,
        leader_name: str = "controller",
    ) -> SqlStore:
        """Connect to ``url`` (default ``$STARBURST_DATABASE_URL`` or the SQLite file)."""
        return cls(create_engine(url), clock=clock, leader_name=leader_name)

    @property
    def engine(self) -> Engine:
        return self.database.engine

    @property
    def clock(self) -> Clock:
        return self.database.clock

    @property
    def leader_name(self) -> str:
        return self.database.leader_name

    @property
    def is_postgres(self) -> bool:
        return self.database.is_postgres

    def close(self) -> None:
        self.database.engine.dispose()


def create_schema(engine: Engine) -> None:
    """Create every table directly from the models (tests only; deployments migrate)."""
    with translate_errors(engine):
        Base.metadata.create_all(engine)


def _implements_the_core_port(store: SqlStore) -> Store:
    return store  # mypy checks, structurally, that SqlStore is the core's Store
