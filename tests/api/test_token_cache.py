"""Token lookups are remembered for a second of the API's clock, and never past a revocation:
through the API it takes effect on the next request; made elsewhere (the admin CLI on the
database) within ``DEFAULT_TTL_S``. A team change reaches the caller the same way."""

from __future__ import annotations

from starburst.api.tokens import DEFAULT_TTL_S, TokenCache
from starburst.core.records import Principal, Role

ALICE = Principal(token_id=7, user="alice", team="ml", role=Role.USER)


def test_a_remembered_token_is_trusted_for_the_ttl_only() -> None:
    cache = TokenCache(ttl=1.0)
    cache.remember("sb_secret", ALICE, 100.0, cache.generation)
    assert cache.cached("sb_secret", 100.9) == ALICE
    assert cache.cached("sb_secret", 101.0) is None
    assert cache.cached("sb_other", 100.5) is None
    assert cache.cached("sb_secret", 99.0) is None  # a clock that went back trusts nothing


def test_refusals_and_answers_from_before_a_forget_are_not_kept() -> None:
    cache = TokenCache()
    cache.remember("sb_secret", ALICE, 10.0, cache.generation)
    cache.remember("sb_secret", None, 10.1, cache.generation)
    assert cache.cached("sb_secret", 10.2) is None
    asked_at = cache.generation
    cache.forget()  # a revocation lands while that lookup is in flight
    cache.remember("sb_secret", ALICE, 10.3, asked_at)
    assert cache.cached("sb_secret", 10.4) is None


def test_the_cache_is_bounded() -> None:
    cache = TokenCache(max_entries=3)
    for i in range(4):
        cache.remember(f"sb_{i}", ALICE, 0.0, cache.generation)
    assert cache.cached("sb_3", 0.0) == ALICE
    assert sum(cache.cached(f"sb_{i}", 0.0) is not None for i in range(3)) == 0


def test_a_token_revoked_through_the_api_is_refused_at_once(api):  # type: ignore[no-untyped-def]
    issued = api.store.accounts.issue_token("alice", Role.USER)
    alice = api.client(token=issued.secret)
    assert alice.get("/v1/whoami").status_code == 200  # now remembered
    assert api.client("root").delete(f"/v1/tokens/{issued.id}").status_code == 204
    assert alice.get("/v1/whoami").status_code == 401


def test_a_token_revoked_elsewhere_is_refused_within_the_ttl(api):  # type: ignore[no-untyped-def]
    issued = api.store.accounts.issue_token("alice", Role.USER)
    alice = api.client(token=issued.secret)
    assert alice.get("/v1/whoami").status_code == 200
    assert api.store.accounts.revoke_token(issued.id)  # as `starburst admin tokens revoke` does
    assert alice.get("/v1/whoami").status_code == 200  # remembered: still within the TTL
    api.clock.advance(DEFAULT_TTL_S)
    answer = alice.get("/v1/whoami")
    assert answer.status_code == 401 and "revoked" in answer.json()["detail"]
    assert alice.post("/v1/jobs", json={"image": "i", "command": "true"}).status_code == 401


def test_a_team_change_through_the_api_reaches_the_next_request(api):  # type: ignore[no-untyped-def]
    alice = api.client("alice")
    assert alice.get("/v1/whoami").json()["team"] == "ml"
    moved = api.client("root").post("/v1/users", json={"name": "alice", "team": "vision"})
    assert moved.status_code == 201
    assert alice.get("/v1/whoami").json()["team"] == "vision"


def test_concurrent_requests_with_one_token_share_one_lookup() -> None:
    import asyncio

    cache = TokenCache()
    asked: list[str] = []

    async def scenario() -> list[Principal | None]:
        release = asyncio.Event()

        async def ask() -> Principal | None:
            asked.append("db")
            await release.wait()  # the database round trip, while others arrive
            return ALICE

        requests = [asyncio.ensure_future(cache.lookup("sb_secret", 5.0, ask)) for _ in range(32)]
        await asyncio.sleep(0)
        release.set()
        return await asyncio.gather(*requests)

    assert asyncio.run(scenario()) == [ALICE] * 32
    assert asked == ["db"]  # one round trip, not 32
    assert cache.cached("sb_secret", 5.5) == ALICE


def test_a_shared_lookup_that_fails_or_predates_a_forget_is_not_shared() -> None:
    import asyncio

    cache = TokenCache()
    asked: list[int] = []

    async def scenario() -> list[object]:
        release = asyncio.Event()

        async def ask() -> Principal | None:
            asked.append(len(asked))
            if len(asked) == 1:
                await release.wait()
                raise ConnectionError("database down")
            return ALICE

        first = asyncio.ensure_future(cache.lookup("sb_secret", 1.0, ask))
        waiter = asyncio.ensure_future(cache.lookup("sb_secret", 1.0, ask))
        await asyncio.sleep(0)
        release.set()
        results = await asyncio.gather(first, waiter, return_exceptions=True)
        cache.forget()
        release.clear()
        asked.clear()
        stale = asyncio.ensure_future(cache.lookup("sb_secret", 2.0, ask))  # in flight...
        await asyncio.sleep(0)
        cache.forget()  # ... when a revocation lands: later requests ask again
        fresh = await cache.lookup("sb_secret", 2.0, ask)
        release.set()
        await asyncio.gather(stale, return_exceptions=True)
        return [*results, fresh, len(asked)]

    failed, waited, fresh, asks = asyncio.run(scenario())
    assert isinstance(failed, ConnectionError)
    assert waited == ALICE  # the waiter asked for itself instead of sharing the failure
    assert fresh == ALICE and asks == 2
