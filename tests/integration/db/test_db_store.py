"""What only the SQL store shows: how it keeps tokens in the database (the store's
behaviour through its ports is the contract suite, ``tests/contract/test_store_*.py``)."""

from __future__ import annotations

from starburst.core.records import Role


def test_only_a_tokens_hash_is_stored(store, engine):  # type: ignore[no-untyped-def]
    import sqlalchemy as sa

    store.accounts.save_user("fin", team="finance")
    issued = store.accounts.issue_token("fin", Role.FINANCE)
    with engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT token_hash, prefix FROM api_tokens")).one()
    assert issued.secret not in stored.token_hash and len(stored.token_hash) == 64
    assert issued.secret.startswith(stored.prefix) and len(stored.prefix) == 10


def test_a_token_in_steady_use_is_written_at_most_once_a_minute(store, clock, engine):  # type: ignore[no-untyped-def]
    import sqlalchemy as sa

    store.accounts.save_user("ann", team="ml")
    issued = store.accounts.issue_token("ann", Role.USER)

    def last_used() -> object:
        with engine.connect() as conn:
            return conn.execute(sa.text("SELECT last_used_at FROM api_tokens")).scalar_one()

    store.accounts.authenticate(issued.secret)
    first = last_used()
    assert first is not None
    clock.advance(59)
    assert store.accounts.authenticate(issued.secret) is not None and last_used() == first
    clock.advance(2)
    assert store.accounts.authenticate(issued.secret) is not None and last_used() != first
