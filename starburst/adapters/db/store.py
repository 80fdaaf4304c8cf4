"""``SqlStore``: the durable implementation of the core's Store port (PostgreSQL or SQLite).

One object, one engine, many short transactions: every public method runs in its own
transaction and either commits all its writes or none (a dropped connection raises
``DatabaseUnavailable`` and leaves nothing half-written). Its parts live in concept modules:
``jobs`` (submission, queue, lifecycle), ``ledger`` (placements, launches), ``costs`` (the
ledger of metered cost entries and its reports),
``accounts`` (users, tokens, budgets) and ``learning`` (history, predictions, models).

The schema is created by the Alembic migrations (``starburst db upgrade``);
``create_schema`` exists for tests and throwaway databases only.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from starburst.core.ports import Accounts, Clock, JobStore, Ledger, ModelRegistry, Store, TuningLog

from .accounts import AccountsStore
from .costs import CostsStore
from .engine import create_engine, translate_errors
from .jobs import JobsStore
from .learning import LearningStore
from .ledger import LedgerStore
from .models import Base
from .transitions import TransitionsStore
from .tuning import TuningRecords


class SqlStore(JobsStore, TransitionsStore, LedgerStore, CostsStore, AccountsStore, LearningStore):
    """The store over a SQLAlchemy engine.

    ``SqlStore(engine, clock=..., leader_name="controller")``: ``clock`` supplies "now" for
    writes that do not pass ``at=`` (default: the wall clock); ``leader_name`` is the leader
    lock whose fencing tokens guard writes made with ``fencing_token=``.
    """

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
    def tuning(self) -> TuningRecords:
        return TuningRecords(self)

    def close(self) -> None:
        self._engine.dispose()


def create_schema(engine: Engine) -> None:
    """Create every table directly from the models (tests only; deployments migrate)."""
    with translate_errors(engine):
        Base.metadata.create_all(engine)


def _implements_the_core_ports(
    store: SqlStore,
) -> tuple[JobStore, Ledger, Accounts, ModelRegistry, TuningLog]:
    whole: Store = store  # mypy checks, structurally, that SqlStore is every store port
    return whole, whole, whole, whole, whole.tuning
