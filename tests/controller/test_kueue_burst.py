"""The Kueue pass on its own (``controller.kueue_burst``), without Kueue: trouble reading
Kueue skips its look and never raises into the controller's pass."""

from __future__ import annotations

from typing import Any

from starburst.adapters.memory.store import MemoryStore
from starburst.controller.kueue_burst import KueueBurst
from starburst.core.errors import TransientError
from starburst.core.policy import PolicyKind, WaitPolicy
from tests.support.clock import ManualClock


class Unreachable:
    """Kueue's API answering 503 to every list."""

    calls = 0

    def workloads(self) -> list[Any]:
        self.calls += 1
        raise TransientError("listing Kueue workloads: HTTP 503")


def test_kueue_unreachable_skips_the_look_without_failing_the_pass() -> None:
    clock = ManualClock(1_000.0)
    store = MemoryStore(clock=clock)
    kueue = Unreachable()
    burst = KueueBurst(
        store.submissions, store.jobs, store.lifecycle, store.ledger, kueue,  # type: ignore[arg-type]
        lambda: WaitPolicy(PolicyKind.COMPUTE, 0.5), lambda: None,
    )  # fmt: skip
    assert burst.run_pass(clock.now(), None) == []
    assert kueue.calls == 1
