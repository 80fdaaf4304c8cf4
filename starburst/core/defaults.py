"""The scheduler's default configuration, in one place.

The controller's settings and the simulator's commands both read these, so ``starburst
simulate`` on a trace decides exactly as ``starburst server`` would on the same jobs unless
told otherwise: Starburst as published (Compute-Wait with waiting budget b = 0.25, out of
order, queue cap 30, FIFO, first-fit). ``PRESETS`` names whole configurations that commands
accept where a policy name goes (``--policy starburst``).
"""

from __future__ import annotations

from dataclasses import dataclass

from starburst.core.capacity import PlacementStrategy
from starburst.core.ordering import QueueOrder
from starburst.core.policy import PolicyKind


@dataclass(frozen=True, slots=True)
class Preset:
    """A named scheduler configuration (the waiting budget is chosen separately)."""

    policy: PolicyKind
    out_of_order: bool
    queue_cap: int | None


POLICY = PolicyKind.COMPUTE
BUDGET = 0.25
OUT_OF_ORDER = True
QUEUE_CAP: int | None = 30
ORDER = QueueOrder.FIFO
PLACEMENT = PlacementStrategy.FIRST_FIT

PRESETS: dict[str, Preset] = {
    "starburst": Preset(PolicyKind.COMPUTE, out_of_order=True, queue_cap=30),
}
