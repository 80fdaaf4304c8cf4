"""How the scheduling pass orders and places work (``core.cycle``, which names it too).

A plain frozen value, kept apart from the pass so that the pass's module can be compiled
(``setup.py``) while the configuration stays an ordinary class: pickled to parallel replays,
copied, built anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from starburst.core.capacity import PlacementStrategy
from starburst.core.errors import ConfigError
from starburst.core.ordering import QueueOrder
from starburst.core.policy import WaitPolicy


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """How the pass orders and places work; the waiting policy sets each job's budget."""

    policy: WaitPolicy
    out_of_order: bool = False
    queue_cap: int | None = None
    order: QueueOrder = QueueOrder.FIFO
    placement: PlacementStrategy = PlacementStrategy.FIRST_FIT

    def __post_init__(self) -> None:
        if self.queue_cap is not None and self.queue_cap < 0:
            raise ConfigError(f"queue cap must be ≥ 0, got {self.queue_cap}")

    def describe(self) -> str:
        mode = "out-of-order" if self.out_of_order else "in-order"
        cap = f", queue cap {self.queue_cap}" if self.queue_cap is not None else ""
        return f"{self.policy.describe()}, {mode}, {self.order.value}, {self.placement.value}{cap}"
