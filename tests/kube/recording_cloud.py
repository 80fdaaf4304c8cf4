"""The simulator's cloud, remembering what it was asked: the controller tests' cloud edge.

``RecordingCloud`` launches as ``SimCloud`` does (a launch runs ``runtime`` seconds of the
test's clock, default 0: it ends at the next poll) and keeps every job it launched
(``launched``) and the job id of every launch it was told to cancel (``cancelled``), so a test
can say what the controller did to the cloud, not only what it recorded.
"""

from __future__ import annotations

from typing import Any

from starburst.core.job import Job
from starburst.core.ports import CloudHandle
from starburst.sim.cloud import SimCloud


class RecordingCloud(SimCloud):
    def __init__(self, clock: Any, price: float, runtime: float = 0.0) -> None:
        super().__init__(clock, price)
        self.runtime = runtime
        self.launched: list[Job] = []
        self.cancelled: list[str] = []

    def launch(self, job: Job, reason: str = "", run_for: float | None = None) -> CloudHandle:
        self.launched.append(job)
        stint = run_for if run_for is not None else (self.runtime or None)
        return super().launch(job, reason, stint)

    def cancel(self, handle: CloudHandle) -> None:
        self.cancelled.append(handle.job_id)
        super().cancel(handle)
