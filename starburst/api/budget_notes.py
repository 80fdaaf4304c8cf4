"""How a job's wait budget was computed, for ``explain``: the formula it was admitted with
and the coefficient in force now, with when and why that last changed.

Terms: the *formula* is ``WaitPolicy.formula`` at admission (``2 GPUs × 2h runtime estimate
× coefficient 0.0565 (compute)``), carried by the job's ``queued with a … wait budget: …``
event, so it stays the truth about that job however the coefficient moves later. The
*coefficient note* is what the leading controller recorded about its scheduler
(``controller.tuning``: ``SCHEDULER`` state): the policy, the coefficient, when it took that
value, the value before, and why (a recalibration on the last N finished jobs, an explicit
coefficient, a policy setting). A user who sees 1h59m for one job and 13m33s for the next
reads both the GPUs × runtime of each and the recalibration between them.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from starburst.core.duration import human
from starburst.core.errors import StarburstError
from starburst.core.lifecycle import JobState
from starburst.core.ports import TuningLog
from starburst.core.records import SCHEDULER, JobEvent, StoredJob

_ADMITTED = "queued with a "
_FORMULA = " wait budget: "


class CoefficientNote(BaseModel):
    """The waiting policy's coefficient in force, and its last change."""

    policy: str
    value: float
    changed_at: datetime | None = Field(description="When it took this value.")
    previous: float | None = Field(description="The value before (null: none recorded).")
    why: str | None = Field(description="Why it changed: a recalibration, a setting...")


def computed(stored: StoredJob, events: list[JobEvent]) -> str | None:
    """``13m33s = 2 GPUs × 2h runtime estimate × coefficient 0.0565 (compute)``: the budget
    the job was admitted with and its formula (None before admission, or for a job admitted
    before formulas were recorded)."""
    for event in reversed(events):
        if event.to_state is JobState.QUEUED and event.reason.startswith(_ADMITTED):
            amount, sep, formula = event.reason.removeprefix(_ADMITTED).partition(_FORMULA)
            if not sep:
                return None
            budget = stored.wait_budget
            shown = human(budget) if budget is not None and math.isfinite(budget) else amount
            return f"{shown} = {formula}"
    return None


def coefficient_note(tuning: TuningLog) -> CoefficientNote | None:
    """The coefficient the controller last recorded (None: no controller recorded one)."""
    try:
        recorded: dict[str, Any] | None = tuning.state(SCHEDULER)
    except StarburstError:
        return None
    if not recorded or recorded.get("coefficient") is None:
        return None
    changed = recorded.get("coefficient_changed_at")
    return CoefficientNote(
        policy=str(recorded.get("policy", "")),
        value=float(recorded["coefficient"]),
        changed_at=None if changed is None else datetime.fromtimestamp(float(changed), UTC),
        previous=recorded.get("previous_coefficient"),
        why=recorded.get("coefficient_why"),
    )
