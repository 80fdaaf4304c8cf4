"""``room`` and ``fits``: the check the group commit makes in the same statement as its write.
Whenever a batch fits its room, ``screen`` (the check made before, on a separate read)
refuses none of it; and the room is not wider than it must be: one more waiting job of any
user or team it names, and it no longer fits."""

from __future__ import annotations

import random

from starburst.core.records import JobSpec
from starburst.core.submit_limits import Backlog, SubmitLimits, fits, room, screen

LIMITS = SubmitLimits(waiting_per_user=4, waiting_per_team=6)


def _batch(rng: random.Random) -> list[tuple[JobSpec, str | None]]:
    return [
        (
            JobSpec(gpus=1, user=rng.choice(["ann", "bo", None]), team=rng.choice(["ml", None])),
            rng.choice([None, None, "k1", "k2"]),
        )
        for _ in range(rng.randint(1, 7))
    ]


def _backlog(rng: random.Random) -> Backlog:
    return Backlog(
        waiting_by_user={u: rng.randint(0, 5) for u in ("ann", "bo") if rng.random() < 0.8},
        waiting_by_team={"ml": rng.randint(0, 7)} if rng.random() < 0.8 else {},
        known_keys={"k1"} if rng.random() < 0.5 else frozenset(),
    )


def test_a_batch_that_fits_its_room_is_never_refused() -> None:
    rng, checked = random.Random(7), 0
    for _ in range(2000):
        batch, backlog = _batch(rng), _backlog(rng)
        need = room(batch, LIMITS)
        if need is not None and fits(backlog, need):
            assert screen(batch, backlog, LIMITS) == [None] * len(batch), (batch, backlog)
            checked += 1
    assert checked > 200  # the draws do reach batches that fit


def test_the_room_is_the_limit_less_the_batch() -> None:
    batch = [(JobSpec(gpus=1, user="ann", team="ml"), None)] * 3
    need = room(batch, LIMITS)
    assert need is not None
    assert dict(need.users) == {"ann": 1} and dict(need.teams) == {"ml": 3}
    assert fits(Backlog(waiting_by_user={"ann": 1}, waiting_by_team={"ml": 3}), need)
    # one job more of the user: the third submission would be refused, and no longer fits
    over = Backlog(waiting_by_user={"ann": 2}, waiting_by_team={"ml": 3})
    assert screen(batch, over, LIMITS)[-1] is not None and not fits(over, need)
    over = Backlog(waiting_by_user={"ann": 1}, waiting_by_team={"ml": 4})
    assert screen(batch, over, LIMITS)[-1] is not None and not fits(over, need)


def test_arrays_a_batch_over_a_limit_and_no_limits() -> None:
    """An array counts every job of its own (the room says nothing of it); a batch alone
    over a limit is screened; a limit of 0 (none) gives no room to check."""
    assert room([(JobSpec(gpus=1, user="ann", array="ann/a"), None)], LIMITS) is None
    assert room([(JobSpec(gpus=1, user="ann"), None)] * 5, LIMITS) is None
    free = room([(JobSpec(gpus=1, user="ann", team="ml"), None)] * 50, SubmitLimits(0, 0))
    assert free is not None and not free.users and not free.teams
    assert fits(Backlog(waiting_by_user={"ann": 10**6}), free)
