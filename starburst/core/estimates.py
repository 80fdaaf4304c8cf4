"""Which runtime estimate a waiting budget is computed from.

The runtime predictor gives each job a point estimate (its median, p50) and a p10–p90 band.
A runtime-based waiting policy (``runtime``, ``compute``) may plan with another point of that
distribution: a higher quantile gives a job whose runtime is uncertain a longer budget
rather than bursting it early on a low median; ``mean`` plans with the log-normal mean
(``Job.expected_runtime``). ``starburst tune`` chooses the estimate together with the policy
and the budget (docs/tune.md).

Terms:
- *estimate use*: ``p50`` (the point estimate, the paper's Compute-Wait), ``p70``, ``p80``,
  ``p90`` (higher quantiles) or ``mean``.
- *quantile q ≥ 0.5*: interpolated in log space on the normal scale between the median and
  the p90: exp(ln p50 + (z_q / z_90) × (ln p90 − ln p50)), so ``p90`` is the band's top
  exactly and a skewed band keeps its skew.

Invariants: without a band (no predictor, or a trace with a plain estimate) every use is the
point estimate, so ``p50`` and any other use agree and nothing changes for such jobs. The
coefficient of a budget b is calibrated on the point estimates whichever use is chosen
(``policy.calibrate``), in the simulator and in the controller alike, so a setting replayed
by ``tune`` and the same setting applied live compute the same budgets.
"""

from __future__ import annotations

import math
from enum import StrEnum

from starburst.core.errors import ConfigError
from starburst.core.job import Z90, Job

#: the standard normal's quantiles the choices use (z of p50 is 0)
_Z = {"p70": 0.5244005127080407, "p80": 0.8416212335729143, "p90": Z90}


class EstimateUse(StrEnum):
    P50 = "p50"
    P70 = "p70"
    P80 = "p80"
    P90 = "p90"
    MEAN = "mean"

    def runtime(self, job: Job) -> float:
        """The runtime a budget is computed from for ``job`` under this use."""
        mid = job.believed_runtime
        if self is EstimateUse.P50:
            return mid
        if self is EstimateUse.MEAN:
            return job.expected_runtime
        high = job.estimate_high
        if high is None or job.estimate_low is None or not 0 < mid <= high:
            return mid
        return mid * math.exp(_Z[self.value] / Z90 * math.log(high / mid))


def parse_estimate(name: str) -> EstimateUse:
    try:
        return EstimateUse(name.strip().lower())
    except ValueError:
        known = ", ".join(e.value for e in EstimateUse)
        raise ConfigError(f"unknown estimate {name!r}; choose one of: {known}") from None
