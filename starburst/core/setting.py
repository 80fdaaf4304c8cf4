"""The knobs ``starburst tune`` chooses: a waiting policy, its budget, the runtime estimate the
budget is computed from, and the queue mode.

A *policy setting* is what an admin changes to trade cloud spend against job completion
time without redeploying: the waiting policy, the waiting budget b (or an explicit
coefficient, which wins), the estimate (``core.estimates``: p50, a higher quantile or the
mean), and whether the queue runs out of order. The queue cap, order and
placement stay as deployed. A setting applied at run time overrides the same fields of the
static settings until the next one is applied.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from starburst.core.errors import ConfigError
from starburst.core.estimates import EstimateUse
from starburst.core.policy import ESTIMATE_BASED, PolicyKind


@dataclass(frozen=True, slots=True)
class PolicySetting:
    policy: PolicyKind
    budget: float | None = None
    coefficient: float | None = None
    out_of_order: bool = True
    estimate: EstimateUse = EstimateUse.P50

    def __post_init__(self) -> None:
        for name, value in (("budget", self.budget), ("coefficient", self.coefficient)):
            if value is not None and (not math.isfinite(value) or value < 0):
                raise ConfigError(f"{name} must be a finite number ≥ 0, got {value}")

    def describe(self) -> str:
        mode = "out of order" if self.out_of_order else "in order"
        if self.policy in ESTIMATE_BASED and self.estimate is not EstimateUse.P50:
            mode = f"{self.estimate.value} estimate, {mode}"
        if self.coefficient is not None:
            return f"{self.policy.value} c={self.coefficient:g}, {mode}"
        if self.budget is not None:
            return f"{self.policy.value} b={self.budget:g}, {mode}"
        return f"{self.policy.value}, {mode}"
