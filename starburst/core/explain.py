"""Why a waiting job waits, in one sentence: the summary ``explain`` and ``status`` show.

The wording follows the job's wait budget (``StoredJob.wait_budget``, set at admission):
- *held*: a team rule keeps the job out of the queue; its budget starts when it enters it;
- *no budget yet*: submitted, not yet admitted by a pass;
- *never bursts*: an infinite budget (the cluster-only policy, or a job the cloud cannot run);
- otherwise the time waited of the budget, and when it bursts unless GPUs free up on-prem;
  past its budget a team hold (a budget or a $/h ceiling) may keep it on-prem, with that reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .duration import precise
from .job import cloud_blocker
from .records import StoredJob


def waiting_summary(
    stored: StoredJob, now: float, hold_past_budget: Callable[[], str | None]
) -> tuple[str, float | None]:
    """The sentence for a waiting job and the seconds it has waited (None while held).
    ``hold_past_budget`` names what keeps a job past its budget on-prem (None: nothing); it
    is asked only for such a job of a team."""
    waited = max(0.0, now - stored.queued_at)
    if stored.held is not None:
        return f"held: {stored.held}; its wait budget starts when it enters the queue", None
    if stored.wait_budget is None:
        return f"waiting {precise(waited)}; no wait budget yet (not yet admitted)", waited
    if math.isinf(stored.wait_budget):
        why = cloud_blocker(stored.job) or "cluster-only policy"
        return f"waiting {precise(waited)}; never bursts ({why})", waited
    left = stored.queued_at + stored.wait_budget - now
    if left <= 0 and stored.job.team is not None:
        held = hold_past_budget()
        if held is not None:
            return f"waiting {precise(waited)}, past its budget: {held}", waited
    then = "bursts to the cloud" if left > 0 else "budget spent: bursts on the next pass"
    return (
        f"waiting {precise(waited)} of a {precise(stored.wait_budget)} budget; {then}"
        f"{f' in {precise(left)}' if left > 0 else ''} unless GPUs free up on-prem",
        waited,
    )
