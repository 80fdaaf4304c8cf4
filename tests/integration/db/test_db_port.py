"""The SQL store implements the core's store ports (names and parameters, not just duck)."""

import inspect

import pytest

from starburst.adapters.db.store import SqlStore
from starburst.core.ports import Accounts, JobStore, Ledger, ModelRegistry, Store

PORTS = (JobStore, Ledger, Accounts, ModelRegistry, Store)


@pytest.mark.parametrize("port", PORTS, ids=lambda p: p.__name__)
def test_sql_store_has_every_port_method_with_the_same_parameters(port: type) -> None:
    for name, member in vars(port).items():
        if name.startswith("_") or not callable(member):
            continue
        wanted = list(inspect.signature(member).parameters)
        mine = list(inspect.signature(getattr(SqlStore, name)).parameters)
        assert mine == wanted, f"SqlStore.{name}{mine} differs from {port.__name__}'s {wanted}"


def test_a_sql_store_is_a_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from starburst.adapters.db import migrate

    url = f"sqlite:///{tmp_path / 'p.db'}"
    migrate.upgrade(url)
    store = SqlStore.open(url)
    try:
        assert isinstance(store, Store)
    finally:
        store.close()
