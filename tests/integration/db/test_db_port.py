"""The SQL store implements the core's ``Store`` port (names and parameters, not just duck)."""

import inspect

from starburst.adapters.db.store import SqlStore
from starburst.core.ports import Store


def test_sql_store_has_every_port_method_with_the_same_parameters() -> None:
    for name, member in vars(Store).items():
        if name.startswith("_") or not callable(member):
            continue
        port = list(inspect.signature(member).parameters)
        mine = list(inspect.signature(getattr(SqlStore, name)).parameters)
        assert mine == port, f"SqlStore.{name}{mine} differs from the port's {port}"


def test_a_sql_store_is_a_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from starburst.adapters.db import migrate

    url = f"sqlite:///{tmp_path / 'p.db'}"
    migrate.upgrade(url)
    store = SqlStore.open(url)
    try:
        assert isinstance(store, Store)
    finally:
        store.close()
